/**
 * The local runner at scale, in a process of its own so that its peak RSS is its own:
 * `--mode run` runs a GEC suite (simulator, zero latency) over a generated dataset of `--rows`
 * rows into `--out`; `--mode report` rebuilds the report of that run folder from its results
 * (what aggregating a million results costs on its own); `--mode replicate` writes a run folder
 * of `--rows` results by repeating the results of the run folder `--from` (new item ids and
 * rows), which is how the bench gets a million results without scoring a million rows twice.
 *
 *   tsx bench/parts/local-scale.ts --mode run|report|replicate --rows N --dir TMP --out RUN_FOLDER [--from RUN_FOLDER]
 *
 * Prints one JSON line: `{ rows, ms, rowsPerSecond, maxRssMb, scored, failed }`.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { runLocal } from '../../cli/local-run.js';
import { FolderBlobStore } from '../../shared/adapters/local/folder-blob-store.js';
import { jsonLines } from '../../shared/adapters/local/jsonl.js';
import { LocalRunStore } from '../../shared/adapters/local/local-run-store.js';
import type { ItemResult, RunRecord } from '../../shared/model/model.js';
import type { Report } from '../../shared/model/report.js';
import { whyNotWritten, writeRunReport } from '../../shared/use-cases/aggregate-run.js';
import { gecSuite, goldCsv } from './data.js';

const { values } = parseArgs({
  options: {
    mode: { type: 'string' },
    rows: { type: 'string' },
    dir: { type: 'string' },
    out: { type: 'string' },
    from: { type: 'string' },
  },
});
const rows = Number(values.rows);
const dir = values.dir!;
const out = values.out!;

async function run(): Promise<Report> {
  const data = await goldCsv(dir, rows);
  const suitePath = await gecSuite(
    dir,
    `scale-${rows}`,
    data,
    ['sim:gold'],
    { concurrency: 32 },
    {
      sim: { noise: 0.2, latencyMs: 0, seed: 1 },
    },
  );
  const started = performance.now();
  const { outcome } = await runLocal({
    suitePath,
    outDir: out,
    fresh: true,
    cachePath: join(dir, 'cache.jsonl'),
  });
  if (outcome.status !== 'written') throw new Error(`the run was not aggregated: ${whyNotWritten(outcome)}`);
  timed = performance.now() - started;
  return outcome.report;
}

async function report(): Promise<Report> {
  const { runId } = JSON.parse(await readFile(join(out, 'run.json'), 'utf8')) as { runId: string };
  const started = performance.now();
  const written = await writeRunReport(
    { runStore: new LocalRunStore(out), reports: new FolderBlobStore(join(dirname(out), 'reports-again')) },
    runId,
  );
  timed = performance.now() - started;
  return written.report;
}

async function replicate(): Promise<void> {
  const from = values.from!;
  const source: ItemResult[] = [];
  for await (const { value } of jsonLines<ItemResult>(join(from, 'results.jsonl'))) {
    source.push(value);
    if (source.length >= 10_000) break;
  }
  await mkdir(out, { recursive: true });
  const runRecord = JSON.parse(await readFile(join(from, 'run.json'), 'utf8')) as RunRecord;
  await writeFile(join(out, 'run.json'), JSON.stringify({ ...runRecord, total: rows, status: 'running' }));
  const log = createWriteStream(join(out, 'results.jsonl'));
  const started = performance.now();
  for (let i = 0; i < rows; i += 1) {
    const line = `${JSON.stringify({ ...source[i % source.length]!, itemId: String(i), row: i + 1 })}\n`;
    if (!log.write(line)) await once(log, 'drain');
  }
  log.end();
  await once(log, 'finish');
  timed = performance.now() - started;
}

let timed = 0;
if (values.mode === 'replicate') {
  await replicate();
  process.stdout.write(`${JSON.stringify({ rows, ms: Math.round(timed) })}\n`);
  process.exit(0);
}
const result = values.mode === 'report' ? await report() : await run();
process.stdout.write(
  `${JSON.stringify({
    rows,
    ms: Math.round(timed),
    rowsPerSecond: Math.round(rows / (timed / 1000)),
    maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    scored: result.counts.scored,
    failed: result.counts.failed,
  })}\n`,
);
