/**
 * Data as its authors publish it, run with no conversion: the SummEdits example reads the
 * project's own JSON array (numeric labels, lists, every field), recodes the labels, keeps the
 * columns the suite does not name and slices by them; its figures are checked against a
 * computation of this test's own from labeled.csv (gold and verdict per row), not against the
 * product's metric code. The GSM8K example reads test.jsonl's worked solutions, plain and
 * gzipped, and takes each key after `####` as GSM8K's own evaluation does; the LLMBar example
 * reads its JSON array and recodes its `1`/`2` gold to the pairwise judge's A/B; the QAGS example
 * reads three crowd workers' answers from nested arrays, and its human-agreement figures are
 * worked out by hand.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { assayCli, REPO, tempDir } from '../helpers.js';

interface Published {
  id: string;
  label: number;
  split: string;
  edit_types: string[];
}

/** Runs `suite` on the simulator through the CLI into `out`: its report.json and labeled.csv's rows. */
async function runSuite(
  suite: string,
  dir: string,
  out: string,
): Promise<{ report: Report; rows: Record<string, string>[] }> {
  await assayCli(['run', suite, '--simulate', '--out', out, '--no-progress'], dir);
  const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as Report;
  const rows = parse(await readFile(join(out, 'labeled.csv'), 'utf8'), {
    columns: true,
    bom: true,
  }) as Record<string, string>[];
  return { report, rows };
}

/** An example suite's path. */
const example = (name: string) => join(REPO, 'examples', name);

describe('a published JSON array with recoded labels and slices', { timeout: 180_000 }, () => {
  it('runs the SummEdits example as published, its figures equal to a hand count', async () => {
    const dir = await tempDir('assay-published-');
    const out = join(dir, 'out');
    const { report, rows } = await runSuite(example('summedits-judge.suite.json'), dir, out);
    const published = JSON.parse(
      await readFile(join(REPO, 'examples', 'data', 'summedits-samsum-160.json'), 'utf8'),
    ) as Published[];

    expect(report.counts).toMatchObject({ items: 160, scored: 160, invalidRows: 0 });
    expect(rows).toHaveLength(160);
    // Recoded: 1 → consistent, 0 → inconsistent, row by row.
    const byId = new Map(published.map((p) => [p.id, p]));
    for (const row of rows) {
      const source = byId.get(row.idx!)!;
      expect(row.gold).toBe(source.label === 1 ? 'consistent' : 'inconsistent');
      // The columns the suite does not name travel with the row, as read.
      expect(row['column:split']).toBe(source.split);
      expect(JSON.parse(row['column:edit_types']!)).toEqual(source.edit_types);
    }

    // The whole run and each split, counted here from gold and verdict.
    const figures = (subset: Record<string, string>[]) => {
      const agree = subset.filter((r) => r.gold === r.label).length;
      const tp = subset.filter((r) => r.gold === 'inconsistent' && r.label === 'inconsistent').length;
      const predicted = subset.filter((r) => r.label === 'inconsistent').length;
      const actual = subset.filter((r) => r.gold === 'inconsistent').length;
      return { accuracy: agree / subset.length, positiveF1: (2 * tp) / (predicted + actual) };
    };
    const all = figures(rows);
    expect(report.scores.label!.metrics.accuracy!.value).toBeCloseTo(all.accuracy, 12);
    expect(report.scores.label!.metrics.positiveF1!.value).toBeCloseTo(all.positiveF1, 12);
    for (const split of ['evaluation', 'test']) {
      const subset = rows.filter((r) => r['column:split'] === split);
      const slice = report.slices!.split![split]!;
      expect(slice.n).toBe(80);
      expect(slice.metrics.accuracy!.value).toBeCloseTo(figures(subset).accuracy, 12);
      expect(slice.metrics.positiveF1!.value).toBeCloseTo(figures(subset).positiveF1, 12);
    }
    expect(await readFile(join(out, 'report.txt'), 'utf8')).toMatch(
      /Slices[\s\S]*split[\s\S]*evaluation\s+80/,
    );
  });

  it("runs GSM8K's test.jsonl as published, the key taken after ####, gzipped or not", async () => {
    const dir = await tempDir('assay-gsm8k-');
    const published = (await readFile(join(REPO, 'examples', 'data', 'gsm8k-test-20.jsonl'), 'utf8'))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { answer: string });
    // The key as GSM8K's own evaluation reads it: the text after the last "#### ", commas removed.
    const keys = published.map((p) => p.answer.split('#### ').at(-1)!.replaceAll(',', '').trim());
    const suite = JSON.parse(await readFile(example('gsm8k.suite.json'), 'utf8'));
    const gzipped = join(dir, 'gsm8k.suite.json');
    await writeFile(
      join(dir, 'test.jsonl.gz'),
      gzipSync(await readFile(join(REPO, 'examples', 'data', 'gsm8k-test-20.jsonl'))),
    );
    await writeFile(
      gzipped,
      JSON.stringify({ ...suite, $schema: undefined, dataset: { ...suite.dataset, path: 'test.jsonl.gz' } }),
    );
    for (const [path, out] of [
      [example('gsm8k.suite.json'), join(dir, 'plain')],
      [gzipped, join(dir, 'gzipped')],
    ] as const) {
      const { report, rows } = await runSuite(path, dir, out);
      expect(report.counts).toMatchObject({ items: 20, invalidRows: 0 });
      expect(rows.map((r) => r.gold)).toEqual(keys);
    }
  });

  it("runs LLMBar's JSON array as published, its 1/2 gold recoded to the pairwise judge's A/B", async () => {
    const dir = await tempDir('assay-llmbar-');
    const { report, rows } = await runSuite(example('llmbar-natural.suite.json'), dir, join(dir, 'out'));
    const published = JSON.parse(
      await readFile(join(REPO, 'examples', 'data', 'llmbar-natural-6.json'), 'utf8'),
    ) as { output_1: string; label: number }[];
    expect(report.counts).toMatchObject({ items: 6, invalidRows: 0 });
    expect(rows.map((r) => r.output_1)).toEqual(published.map((p) => p.output_1));
    expect(rows.map((r) => r.gold)).toEqual(published.map((p) => (p.label === 1 ? 'A' : 'B')));
  });

  it("runs QAGS' nested JSONL with three annotators as published: their majority as gold, the human ceiling by hand", async () => {
    const dir = await tempDir('assay-qags-');
    const out = join(dir, 'out');
    const { report, rows } = await runSuite(example('qags-xsum.suite.json'), dir, out);
    expect(report.counts).toMatchObject({ items: 3, invalidRows: 0 });
    // The workers answered [yes, yes, no], [no, no, yes], [no, no, no]: majorities yes, no, no.
    expect(rows.map((r) => r.gold)).toEqual(['yes', 'no', 'no']);
    const judge = rows.map((r) => r.label);
    const workers = [
      ['yes', 'yes', 'no'],
      ['no', 'no', 'yes'],
      ['no', 'no', 'no'],
    ];
    // labeled.csv has each worker's label beside the majority.
    expect(rows.map((r) => JSON.parse(r.annotators!))).toEqual(workers);
    // Pairwise agreement: 1/3, 1/3 and 3/3 of each item's pairs agree, 5/9 in all. Alpha, nominal:
    // 9 values (3 yes, 6 no); coincidences yes-no 2 + no-yes 2 over 9, expected 2·3·6 / (9·8) = 1/2,
    // so alpha = 1 − (4/9) / (1/2) = 1/9. The judge against each worker: the share of items agreeing.
    const judgeAgreement =
      [0, 1, 2]
        .map((w) => workers.filter((item, i) => item[w] === judge[i]).length / 3)
        .reduce((a, b) => a + b) / 3;
    const human = report.scores.label!.humanAgreement!;
    expect(human.annotators).toBe(3);
    expect(human.pairwiseAgreement.value).toBeCloseTo(5 / 9, 12);
    expect(human.alpha.value).toBeCloseTo(1 / 9, 12);
    expect(human.judgeAgreement.value).toBeCloseTo(judgeAgreement, 12);
    expect(await readFile(join(out, 'report.txt'), 'utf8')).toMatch(
      /human agreement \(3 annotators, 3 items\)/,
    );
  });
});
