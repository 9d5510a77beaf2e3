/**
 * The bare `openai` SDK as a user's own script would call it, as a process of its own (plain
 * JavaScript: node starts it without a TypeScript loader, as it starts the built `assay`): reads
 * the dataset, and sends one chat completion per row with a fixed-size pool of promises. The
 * requests are the ones Assay sends: `--template` is the body of one (the first row's), whose
 * source and target text are replaced by each row's.
 *
 *   node bench/parts/sdk-pool.mjs --url http://127.0.0.1:PORT/v1 --dataset rows.csv --template body.json --concurrency C
 *
 * Prints one JSON line: `{ items, failed, cpuMsPerItem }`.
 */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parse } from 'csv-parse';
import OpenAI from 'openai';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    dataset: { type: 'string' },
    template: { type: 'string' },
    concurrency: { type: 'string' },
  },
});
const concurrency = Number(values.concurrency);

const rows = [];
for await (const row of createReadStream(values.dataset).pipe(parse({ columns: true }))) rows.push(row);

const template = JSON.parse(await readFile(values.template, 'utf8'));
const first = rows[0];
// Longest first, so that a source inside its target is never replaced inside the target.
const swaps = [
  ['src', first.src],
  ['tgt', first.tgt],
].sort((a, b) => b[1].length - a[1].length);
const pattern = new RegExp(
  swaps.map(([, text]) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'),
  'g',
);
const bodyOf = (row) => ({
  ...template,
  messages: template.messages.map((m) => ({
    ...m,
    content: m.content.replace(pattern, (found) => (found === first.src ? row.src : row.tgt)),
  })),
});

const client = new OpenAI({ apiKey: 'unused', baseURL: values.url, maxRetries: 0 });
let next = 0;
let failed = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < rows.length) {
      const row = rows[next++];
      try {
        const answer = await client.chat.completions.create(bodyOf(row));
        if (!answer.choices[0]?.message.content) failed += 1;
      } catch {
        failed += 1;
      }
    }
  }),
);
const cpu = process.cpuUsage();
process.stdout.write(
  `${JSON.stringify({ items: rows.length, failed, cpuMsPerItem: +((cpu.user + cpu.system) / 1000 / rows.length).toFixed(3) })}\n`,
);
