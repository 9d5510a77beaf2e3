/**
 * Inputs a run must not score as they are, run as a user runs them (the simulator stands in
 * for every model): a given output far over the field limit, and bytes that are not UTF-8.
 * Each makes its row invalid, with its row number and reason; the other rows are scored.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runLocal } from '../../cli/local-run.js';
import type { ItemResult } from '../../shared/model/model.js';
import type { Completion } from '../../shared/model/provider.js';
import { tempDir } from '../helpers.js';

async function run(suite: Record<string, unknown>, dataset: { name: string; bytes: Buffer }) {
  const dir = await tempDir('assay-inputs-');
  await writeFile(join(dir, dataset.name), dataset.bytes);
  const suitePath = join(dir, 'inputs.suite.json');
  await writeFile(
    suitePath,
    JSON.stringify({ version: 1, name: 'inputs', dataset: { path: dataset.name }, ...suite }),
  );
  const calls: Completion[] = [];
  const { outDir, outcome } = await runLocal({
    suitePath,
    simulate: true,
    outDir: join(dir, 'run'),
    cachePath: join(dir, 'cache.jsonl'),
    onEvent: (event) => {
      if (event.type === 'call') calls.push(event.completion);
    },
  });
  const lines = (await readFile(join(outDir, 'results.jsonl'), 'utf8')).split('\n').filter(Boolean);
  const results = lines.map((line) => JSON.parse(line) as ItemResult).filter((r) => r.itemId !== undefined);
  const report = outcome.status === 'written' ? outcome.report : undefined;
  return { calls, lines, results, report };
}

const jsonl = (rows: Record<string, unknown>[]) =>
  Buffer.from(`${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
const HUGE = 'The meeting moved to Friday. '.repeat(180_000); // about 5 MB

describe('inputs a run refuses', { timeout: 120_000 }, () => {
  it('a 5 MB given summary: an invalid row, sent to no judge or NLI model, not copied into results', async () => {
    const doc = 'Ann: the meeting is on Friday. Bob: fine, I will come.';
    const { calls, lines, results, report } = await run(
      {
        task: 'summarization',
        dataset: { path: 'given.jsonl', columns: { document: 'doc', output: 'summary', gold: 'label' } },
        summarization: { against: 'document', nli: 'llm', embedder: 'sim:embed' },
        backends: ['sim:gpt-4o-mini'],
      },
      {
        name: 'given.jsonl',
        bytes: jsonl([
          { id: 'a', doc, summary: 'The meeting is on Friday.', label: 1 },
          { id: 'b', doc, summary: HUGE, label: 0 },
          { id: 'c', doc, summary: 'Bob will not come.', label: 0 },
        ]),
      },
    );
    const invalid = results.filter((r) => r.failure?.kind === 'invalid_row');
    expect(invalid).toEqual([
      expect.objectContaining({
        row: 2,
        failure: expect.objectContaining({
          message: `row 2: line 2: field "summary" has ${HUGE.length} characters, more than dataset.maxFieldChars (20000)`,
        }),
      }),
    ]);
    expect(report?.counts).toMatchObject({ items: 3, scored: 2, failed: 1 });
    expect(calls.length).toBeGreaterThan(0);
    expect(Math.max(...calls.map((c) => c.usage.input))).toBeLessThan(2_000);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(20_000);
  });

  it('a 5 MB given QA answer: an invalid row, never graded', async () => {
    const { calls, results, report } = await run(
      {
        task: 'qa',
        dataset: { path: 'answers.jsonl', columns: { output: 'given' } },
        qa: { type: 'explanation' },
        backends: ['sim:claude-haiku-4-5'],
      },
      {
        name: 'answers.jsonl',
        bytes: jsonl([
          { id: 1, question: 'Why is the sky blue?', answer: 'Rayleigh scattering', given: 'Scattering.' },
          { id: 2, question: 'Why is snow white?', answer: 'Scattering by ice', given: HUGE },
        ]),
      },
    );
    expect(results.find((r) => r.row === 2)).toMatchObject({
      status: 'failed',
      failure: { kind: 'invalid_row', message: expect.stringContaining('field "given" has') },
    });
    expect(report?.counts).toMatchObject({ items: 2, failed: 1 });
    expect(calls.every((c) => c.usage.input < 2_000)).toBe(true);
  });

  it('bytes that are not UTF-8: the row is invalid with its byte offset; dataset.encoding reads them', async () => {
    const rows = [
      Buffer.from('idx,src,tgt,label\n'),
      Buffer.from('1,She go home.,She goes home.,TP\n'),
      Buffer.concat([
        Buffer.from('2,The caf'),
        Buffer.from([0xe9]),
        Buffer.from(' is closed.,The cafe is closed.,TP\n'),
      ]),
    ];
    const suite = {
      task: 'gec',
      dataset: { path: 'gold.csv' },
      judge: 'feedback',
      method: 'baseline',
      backends: ['sim:gold'],
    };
    const utf8 = await run(suite, { name: 'gold.csv', bytes: Buffer.concat(rows) });
    expect(utf8.results.find((r) => r.row === 2)).toMatchObject({
      failure: {
        kind: 'invalid_row',
        message: expect.stringContaining('row 2: line 3: not valid UTF-8 at byte 60'),
      },
    });
    expect(utf8.report?.counts).toMatchObject({ items: 2, scored: 1, failed: 1 });

    const latin = await run(
      { ...suite, dataset: { ...suite.dataset, encoding: 'windows-1252' } },
      { name: 'gold.csv', bytes: Buffer.concat(rows) },
    );
    expect(latin.report?.counts).toMatchObject({ items: 2, scored: 2, failed: 0 });
    expect(latin.results.find((r) => r.row === 2)?.input).toMatchObject({ src: 'The café is closed.' });
  });
});
