/**
 * The human ceiling, right: the annotators' alpha over every item with two ratings whatever the
 * gold rule (a tie is an invalid row for the judge, not for the annotators), the gold of several
 * ratings as their mode, mean or median, a number scorer set against 0/1 labels through its
 * threshold, the sentence comparing judge and annotators only on one yardstick, and a blank gold
 * without `partialGold` an invalid row. Through the row parser and the score tally a run uses.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore, LayeredBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { goldOf } from '../../../shared/family/dataset-row.js';
import { readRows } from '../../../shared/lib/datasets/read.js';
import { humanCeilingSentence } from '../../../shared/lib/format.js';
import { AnnotationRows, humanAgreement, mulberry32 } from '../../../shared/lib/metrics/index.js';
import { judgeAlphaStatistic, krippendorffAlpha } from '../../../shared/lib/metrics/reliability.js';
import type { Item, ItemResult, RunRecord } from '../../../shared/model/model.js';
import { taskFor } from '../../../shared/registry/registry.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { humanAgreementLines } from '../../../shared/reports/files.js';
import { scoreFigures } from '../../../shared/reports/report.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { invalidResult, type ParsedRow, rowParser } from '../../../shared/use-cases/start-run.js';
import { chunksOf, REPO, tempDir } from '../../helpers.js';

const _ = undefined;

/** A judge run of `suite` (with a prompt `j.md` reading {question}) and its row parser. */
async function runOf(suite: Record<string, unknown>): Promise<RunRecord> {
  const dir = await tempDir('assay-ceiling-');
  await mkdir(join(dir, 'prompts'), { recursive: true });
  await writeFile(join(dir, 'prompts', 'j.md'), '<question>\n{question}\n</question>\n');
  return prepareRun({
    suite: validateSuite({ version: 1, name: 'ceiling', backends: ['sim:x'], ...suite }, 'test suite'),
    prompts: new LayeredBlobStore([new FolderBlobStore(dir), new FolderBlobStore(REPO)]),
    datasetKey: 'data',
    datasetVersion: 'v1',
    reportPrefix: 'reports/{runId}/',
  });
}

/** JSONL rows through ingest's row parser, each with its row number. */
async function parsed(run: RunRecord, rows: Record<string, unknown>[]): Promise<[number, ParsedRow][]> {
  const parse = rowParser(run);
  const out: [number, ParsedRow][] = [];
  const text = `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
  for await (const raw of readRows(chunksOf(text), 'jsonl', { maxFieldChars: 20_000 }))
    out.push([raw.row, parse(raw)]);
  return out;
}

/** A parsed row as the run records it: an item scored `value` by `scorer`, or an invalid row. */
function resultOf(
  run: RunRecord,
  [row, parsedRow]: [number, ParsedRow],
  scorer: string,
  value: (item: Item) => string | number,
): ItemResult {
  if ('error' in parsedRow)
    return invalidResult(
      run.runId,
      {
        row,
        reason: parsedRow.error,
        ...(parsedRow.input ? { input: parsedRow.input } : {}),
        ...(parsedRow.annotations ? { annotations: parsedRow.annotations } : {}),
      },
      new Date(0),
    );
  const { item } = parsedRow;
  const v = value(item);
  return {
    schemaVersion: 2,
    runId: run.runId,
    itemId: item.id,
    row: item.row,
    status: 'scored',
    input: item.input,
    ...(item.gold !== undefined ? { gold: item.gold } : {}),
    ...(item.annotations ? { annotations: item.annotations } : {}),
    scores: { [scorer]: { kind: typeof v === 'number' ? 'number' : 'label', value: v } },
    stages: {},
    simulated: true,
    finishedAt: new Date(0).toISOString(),
  } as ItemResult;
}

const itemOf = (row: [number, ParsedRow] | undefined): Item => {
  if (!row || !('item' in row[1])) throw new Error(`not an item: ${JSON.stringify(row)}`);
  return row[1].item;
};
const errorOf = (row: [number, ParsedRow] | undefined) =>
  row && 'error' in row[1] ? row[1].error : undefined;

// Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011): four observers, twelve
// units, missing values. Nominal alpha 0.743. Unit 6 (1, 2, 3, 4) is a four-way tie, so with the
// default `goldTie: "invalid"` its row is invalid for the judge; unit 12 has one value.
const OBSERVERS: (number | undefined)[][] = [
  [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
  [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
  [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
  [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
];

describe("the annotators' agreement counts every item with two ratings, whatever the gold rule", () => {
  it("Krippendorff's 4 × 12 example through the row parser and the score tally: nominal alpha 0.743", async () => {
    const run = await runOf({
      task: 'judge',
      dataset: { path: 'd.jsonl', columns: { gold: ['A', 'B', 'C', 'D'] } },
      judge: { prompt: 'j.md', labels: ['1', '2', '3', '4', '5'] },
    });
    const rows = await parsed(
      run,
      OBSERVERS[0]!.map((_v, u) => ({
        id: `u${u + 1}`,
        question: `unit ${u + 1}`,
        ...Object.fromEntries(['A', 'B', 'C', 'D'].map((c, o) => [c, String(OBSERVERS[o]![u] ?? '')])),
      })),
    );
    // Unit 6 ties four ways: an invalid row, its four ratings kept with it.
    expect(errorOf(rows[5])).toMatch(/^the annotators tie/);
    expect(rows[5]![1]).toMatchObject({ annotations: ['1', '2', '3', '4'] });
    const results = rows.map((row) => resultOf(run, row, 'label', () => '1'));
    expect(results[5]).toMatchObject({ status: 'failed', annotations: ['1', '2', '3', '4'] });
    const { scores } = scoreFigures(taskFor(run.suite), run.suite, results);
    const h = scores.label!.humanAgreement!;
    expect(h.level).toBe('nominal');
    expect(h.alpha.value).toBeCloseTo(0.743, 3);
    // Units 1–11 have two ratings or more (unit 12 one): all of them, the tie included.
    expect(h).toMatchObject({ annotators: 4, items: 12, alpha: { n: 11 }, pairwiseAgreement: { n: 11 } });
    // Pairwise, by hand: units 2 (2 2 3 2) and 8 (1 1 2 1) agree on 6 of 12 ordered pairs, unit 6
    // on none, the other eight on all: (8 + 0.5 + 0.5 + 0) / 11.
    expect(h.pairwiseAgreement.value).toBeCloseTo(9 / 11, 12);
    // The judge's metrics leave the invalid row out: 11 items scored, 11 with gold.
    expect(scores.label!.n).toBe(11);
    expect(h.judgeAgreement.n).toBe(11);
  });
});

describe('the gold of several ratings: mode, mean or median (dataset.goldAggregate)', () => {
  it('by hand: [3, 5, 5] has mean 4.333…, [3, 1, 2] mean 2 and median 2, and ties under mode', () => {
    expect(goldOf(['3', '5', '5'], 'mean', 'invalid')).toEqual({ value: String(13 / 3) });
    expect(Number(goldOf(['3', '5', '5'], 'mean', 'invalid').value)).toBeCloseTo(4.333333, 6);
    expect(goldOf(['3', '1', '2'], 'mean', 'invalid')).toEqual({ value: '2' });
    expect(goldOf(['3', '1', '2'], 'median', 'invalid')).toEqual({ value: '2' });
    expect(goldOf(['3', '1', '2'], 'mode', 'invalid').error).toMatch(/annotators tie/);
    expect(goldOf(['3', '5', '5'], 'mode', 'invalid')).toEqual({ value: '5' });
    // An even number of ratings: the mean of the two middle ones; a blank is no vote.
    expect(goldOf(['4', '1', '3', '2'], 'median', 'invalid')).toEqual({ value: '2.5' });
    expect(goldOf(['4', '', '5'], 'mean', 'invalid')).toEqual({ value: '4.5' });
    expect(goldOf(['', ' '], 'mean', 'invalid')).toEqual({ value: '' });
    expect(goldOf(['4', 'good'], 'median', 'invalid').error).toMatch(
      /rating "good" is not a number \(dataset\.goldAggregate "median" needs numbers/,
    );
  });

  it('a judge with a range averages its ratings by default (SummEval-style experts); labels keep the mode', async () => {
    const rated = [
      { question: 'a', e1: 3, e2: 5, e3: 5 },
      { question: 'b', e1: 3, e2: 1, e3: 2 },
    ];
    const summeval = (goldAggregate?: string) =>
      runOf({
        task: 'judge',
        dataset: {
          path: 'd.jsonl',
          columns: { gold: ['e1', 'e2', 'e3'] },
          ...(goldAggregate ? { goldAggregate } : {}),
        },
        judge: { prompt: 'j.md', range: [1, 5] },
      });
    const byDefault = await parsed(await summeval(), rated);
    expect(Number(itemOf(byDefault[0]).gold)).toBeCloseTo(13 / 3, 12);
    expect(itemOf(byDefault[1]).gold).toBe('2');
    expect(itemOf(byDefault[0]).annotations).toEqual(['3', '5', '5']);
    const mean = await parsed(await summeval('mean'), rated);
    expect(Number(itemOf(mean[0]).gold)).toBeCloseTo(4.333, 3);
    const median = await parsed(await summeval('median'), rated);
    expect(itemOf(median[0]).gold).toBe('5');
    expect(itemOf(median[1]).gold).toBe('2');
    const mode = await parsed(await summeval('mode'), rated);
    expect(itemOf(mode[0]).gold).toBe('5');
    expect(errorOf(mode[1])).toMatch(/annotators tie/);

    // The scorer reads the mean as its target: the judge's 4 misses 4.333… by 1/3.
    const run = await summeval();
    const results = byDefault.map((row) => resultOf(run, row, 'score', () => 4));
    const { scores } = scoreFigures(taskFor(run.suite), run.suite, results);
    // MAE by hand: |4 − 13/3| = 1/3 and |4 − 2| = 2, mean 7/6.
    expect(scores.score!.metrics.mae!.value).toBeCloseTo(7 / 6, 12);

    const labelled = await runOf({
      task: 'judge',
      dataset: { path: 'd.jsonl', columns: { gold: ['w1', 'w2', 'w3'] } },
      judge: { prompt: 'j.md', labels: ['1', '2', '3'] },
    });
    const [two, tie] = await parsed(labelled, [
      { question: 'a', w1: '1', w2: '2', w3: '2' },
      { question: 'b', w1: '3', w2: '1', w3: '2' },
    ]);
    expect(itemOf(two).gold).toBe('2');
    expect(errorOf(tie)).toMatch(/annotators tie/);
  });

  it('the suite schema documents it and refuses another rule', () => {
    const check = (goldAggregate: unknown) => () =>
      validateSuite(
        {
          version: 1,
          name: 'x',
          backends: ['sim:x'],
          task: 'judge',
          dataset: { path: 'd.jsonl', columns: { gold: ['a', 'b'] }, goldAggregate },
          judge: { prompt: 'j.md', range: [1, 5] },
        },
        'test suite',
      );
    expect(check('median')).not.toThrow();
    expect(check('max')).toThrow(/goldAggregate/);
  });
});

describe("the judge's alpha against the annotators, by hand", () => {
  // Five items, three annotators, and the judge (the human-ceiling example of annotators.test.ts):
  //   a a a | a     a a b | a     b b b | b     a b _ | b     b b a | a
  it('nominal: alpha over the judge–annotator pairs', () => {
    const units = [
      ['a', 'a', 'a'],
      ['a', 'a', 'b'],
      ['b', 'b', 'b'],
      ['a', 'b', null],
      ['b', 'b', 'a'],
    ];
    const judge = ['a', 'a', 'b', 'b', 'a'];
    // 14 judge–annotator pairs, each a unit of two values; the judge differs in 0 + 1 + 0 + 1 + 2
    // = 4 of them. Pooled: the annotators' 7 a and 7 b, the judge's value once per pair (a 3 + 3
    // + 3, b 3 + 2): a 16, b 12, n 28. Ordered pairs in units that differ: 2 · 4 = 8; expected
    // 28² − 16² − 12² = 384. α = 1 − (n − 1) · 8 / 384 = 1 − 27 · 8 / 384 = 7 / 16.
    const statistic = judgeAlphaStatistic(units, judge, 'nominal');
    expect(statistic([0, 1, 2, 3, 4])).toBeCloseTo(7 / 16, 12);
    const h = humanAgreement(
      'label',
      units.map((u) => u.map((v) => v ?? undefined)),
      judge,
      { bootstrap: false },
    );
    expect(h.judgeAlpha).toEqual({ value: expect.closeTo(7 / 16, 12), n: 5 });
    // Alpha among the annotators is 10 / 49 (annotators.test.ts): the judge is above it.
    expect(h.alpha.value).toBeCloseTo(10 / 49, 12);
    expect(humanCeilingSentence(h)).toBe(
      "the judge agrees with the annotators more than they agree with each other (Krippendorff's alpha 0.438 vs 0.204)",
    );
  });

  it('interval and ordinal: units (1, 3) and (2, 2), the judge 2 on both, then 2 and 1.5', () => {
    const units = [
      [1, 3],
      [2, 2],
    ];
    // Interval: pairs (2, 1), (2, 3), (2, 2), (2, 2), Σδ² = 2, so 2 · 2 = 4 over the ordered
    // pairs. Pooled 1, 3, 2, 2 and the judge's 2 four times: n 8, Σv 16, Σv² 34, expected
    // 2 · 8 · 34 − 2 · 16² = 32. α = 1 − 7 · 4 / 32 = 1 / 8.
    expect(judgeAlphaStatistic(units, [2, 2], 'interval')([0, 1])).toBeCloseTo(1 / 8, 12);
    // Ordinal, the judge 2 twice: counts 1:1, 2:6, 3:1, mid-ranks 1, 4.5, 8. Pairs (2, 1) and
    // (2, 3) 3.5² each: observed 2 · 24.5 = 49. Σr 36, Σr² 1 + 64 + 6 · 20.25 = 186.5,
    // expected 2 · 8 · 186.5 − 2 · 36² = 392. α = 1 − 7 · 49 / 392 = 1 / 8.
    expect(judgeAlphaStatistic(units, [2, 2], 'ordinal')([0, 1])).toBeCloseTo(1 / 8, 12);
    // The judge 2 then 1.5 (a value no annotator gave: a category of its own): counts 1:1,
    // 1.5:2, 2:4, 3:1, mid-ranks 1, 2.5, 5.5, 8. Pairs (2, 1) 4.5², (2, 3) 2.5², (1.5, 2) 3² twice:
    // Σδ² 44.5, observed 89. Σr 36, Σr² 1 + 12.5 + 121 + 64 = 198.5, expected 16 · 198.5 − 2592
    // = 584. α = 1 − 7 · 89 / 584 = −39 / 584.
    expect(judgeAlphaStatistic(units, [2, 1.5], 'ordinal')([0, 1])).toBeCloseTo(-39 / 584, 12);
    // It is alpha of the judge–annotator pairs taken as units of two values: the same as the
    // repeats' alpha over such units, at every level, on seeded random data.
    const random = mulberry32(3);
    const draw = () => 1 + Math.floor(random() * 4);
    const many = Array.from({ length: 40 }, () => [draw(), random() < 0.3 ? null : draw(), draw()]);
    const verdicts = many.map(() => (random() < 0.1 ? null : draw()));
    const pairs = many.flatMap((unit, i) =>
      verdicts[i] === null ? [] : unit.filter((v) => v !== null).map((v) => [verdicts[i]!, v]),
    );
    for (const level of ['nominal', 'interval', 'ordinal'] as const)
      expect(judgeAlphaStatistic(many, verdicts, level)(many.keys())).toBeCloseTo(
        krippendorffAlpha(pairs, level, false).value!,
        12,
      );
    // Nothing to pair the judge with, or no variation: null.
    expect(judgeAlphaStatistic(units, [null, null], 'interval')([0, 1])).toBeNull();
    expect(judgeAlphaStatistic([[2, 2]], [2], 'interval')([0])).toBeNull();
  });
});

describe('a number scorer against 0/1 annotators', () => {
  it('goes through its threshold: the verdict is value ≥ threshold', () => {
    const labels = [
      [0, 0],
      [1, 1],
      [1, 0],
      [0, 0],
    ];
    // Values 0.2, 0.7, 0.9, 0.6 at threshold 0.5: verdicts 0, 1, 1, 1.
    const h = humanAgreement('number', labels, [0.2, 0.7, 0.9, 0.6], { threshold: 0.5, bootstrap: false });
    expect(h).toMatchObject({ judgeVerdict: 'threshold', threshold: 0.5, level: 'interval' });
    // Annotator 1 (0 1 1 0): agrees on items 1, 2, 3 → 3/4; annotator 2 (0 1 0 0): items 1, 2 → 2/4.
    expect(h.judgeAgreement.value).toBeCloseTo((3 / 4 + 2 / 4) / 2, 12);
    // Compared by equality, the fractions would agree with no label at all.
    expect(
      humanAgreement(
        'label',
        labels.map((l) => l.map(String)),
        ['0.2', '0.7', '0.9', '0.6'],
      ).judgeAgreement.value,
    ).toBe(0);
    // Alpha of the verdicts against the labels: 8 pairs, 0 + 0 + 1 + 2 = 3 differ (observed 6).
    // Pooled: the labels' three 1s and five 0s, the verdicts twice each (six 1s, two 0s): nine 1s,
    // seven 0s, n 16, expected 16² − 9² − 7² = 126. α = 1 − 15 · 6 / 126 = 2 / 7.
    expect(h.judgeAlpha!.value).toBeCloseTo(2 / 7, 12);
  });

  it('without a threshold it gives no verdict: no agreement, no sentence comparing, its correlation', () => {
    const h = humanAgreement(
      'number',
      [
        [0, 1],
        [1, 1],
        [0, 0],
      ],
      [0.2, 0.9, 0.1],
      { bootstrap: false },
    );
    expect(h.judgeVerdict).toBe('none');
    expect(h.judgeAgreement).toMatchObject({
      value: null,
      reason: expect.stringMatching(/no threshold|without a threshold/),
    });
    expect(h.judgeAlpha!.value).toBeNull();
    // Pearson r of the judge (0.2, 0.9, 0.1; mean 0.4) with annotator 1 (0, 1, 0) and 2 (1, 1, 0):
    // Σdx² = 0.04 + 0.25 + 0.09 = 0.38, Σdy² = 2/3 for both; Σdxdy = 0.5 and 0.3.
    const sd = Math.sqrt(0.38 * (2 / 3));
    expect(h.judgeCorrelation!.value).toBeCloseTo((0.5 / sd + 0.3 / sd) / 2, 12);
    const [, sentence] = humanAgreementLines(h, '');
    expect(sentence).toMatch(/^the judge is not compared with the annotators/);
    expect(sentence).not.toMatch(/more than|less than|as much as/);
  });

  it('the issue’s case: a coverage-like scorer at 0 on 97% of items does not agree "more than the annotators do"', () => {
    // 300 items, three annotators, mostly 0 (not faithful): 262 items all 0, 30 where one
    // annotator alone says 1 (ten each), 8 all 1. Coverage is 0 on 291 items (97%) and 0.2 on
    // the 8 all-1 items and on one of the lone-1 items.
    const labels: number[][] = [];
    for (let i = 0; i < 262; i += 1) labels.push([0, 0, 0]);
    for (let i = 0; i < 30; i += 1) labels.push([0, 1, 2].map((a) => (a === i % 3 ? 1 : 0)));
    for (let i = 0; i < 8; i += 1) labels.push([1, 1, 1]);
    const coverage = labels.map((_l, i) => (i >= 292 || i === 262 ? 0.2 : 0));
    expect(coverage.filter((c) => c === 0).length / 300).toBe(0.97);
    const h = humanAgreement('number', labels, coverage, { threshold: 0.5 });
    // Pairwise agreement: (262 + 30 · 1/3 + 8) / 300 = 0.9333.
    expect(h.pairwiseAgreement.value).toBeCloseTo(280 / 300, 12);
    // Through the threshold the scorer says 0 everywhere: raw agreement = each annotator's share
    // of 0s, (300 − 18) / 300 = 0.94, above the annotators' own; equality would give about as much.
    expect(h.judgeAgreement.value).toBeCloseTo(282 / 300, 12);
    // Alpha of the judge–annotator pairs: the constant 0 differs from the 54 annotator 1s of the
    // 900 pairs (observed 2 · 54); pooled, 54 ones among n 1,800 values, expected 2 · 54 · 1,746.
    // α = 1 − 1,799 · 108 / (2 · 54 · 1,746) = 1 − 1,799 / 1,746, just below 0.
    expect(h.judgeAlpha!.value).toBeCloseTo(1 - 1799 / 1746, 12);
    expect(h.alpha.value).toBeGreaterThan(0);
    // The score tally keeps them as codes and gives the same figures.
    const rows = new AnnotationRows('number');
    labels.forEach((l, i) => {
      rows.add(l, coverage[i]);
    });
    expect(rows.figures({ threshold: 0.5 })).toEqual(h);
    const [line, sentence] = humanAgreementLines(h, '');
    expect(line).toMatch(/judge alpha -0\.\d+/);
    expect(line).toMatch(/judge correlation \(Pearson r\)/);
    expect(line).toMatch(/the judge's value ≥ 0\.5 as 1, else 0, against 0\/1 labels/);
    expect(sentence).toMatch(
      /^the judge agrees with the annotators less than they agree with each other \(Krippendorff's alpha -0\.\d+ vs 0\.\d+\)$/,
    );
  });
});

describe('a blank gold without partialGold is an invalid row with its reason', () => {
  const judge = (dataset: Record<string, unknown> = {}) =>
    runOf({
      task: 'judge',
      dataset: { path: 'd.jsonl', ...dataset },
      judge: { prompt: 'j.md', labels: ['yes', 'no'] },
    });

  it('a blank cell in the gold column the suite names, or the family reads by default', async () => {
    const named = await parsed(await judge({ columns: { gold: 'g' } }), [
      { question: 'a', g: 'yes' },
      { question: 'b', g: '' },
      { question: 'c', g: '  ' },
    ]);
    expect(itemOf(named[0]).gold).toBe('yes');
    for (const row of [named[1], named[2]])
      expect(errorOf(row)).toBe(
        'the gold (column "g") is blank: a row without gold is invalid unless dataset.partialGold says some rows have none by design',
      );
    const byDefault = await parsed(await judge(), [
      { question: 'a', label: 'no' },
      { question: 'b', label: '' },
    ]);
    expect(itemOf(byDefault[0]).gold).toBe('no');
    expect(errorOf(byDefault[1])).toMatch(/^the gold \(column "label"\) is blank/);
    // Several annotators who all left it blank.
    const several = await parsed(await judge({ columns: { gold: ['w1', 'w2'] } }), [
      { question: 'a', w1: '', w2: '' },
    ]);
    expect(errorOf(several[0])).toMatch(/^the gold \(every annotator\) is blank/);
  });

  it('with partialGold a blank gold is an item without gold; a dataset without a gold column is one too', async () => {
    const partial = await parsed(await judge({ columns: { gold: 'g' }, partialGold: true }), [
      { question: 'b', g: '' },
    ]);
    expect(itemOf(partial[0]).gold).toBeUndefined();
    const none = await parsed(await judge(), [{ question: 'a' }]);
    expect(itemOf(none[0]).gold).toBeUndefined();
  });

  it("the metrics' n is the screen's: the blank row counts as invalid, not as an item", async () => {
    const run = await judge({ columns: { gold: 'g' } });
    const rows = await parsed(run, [
      { question: 'a', g: 'yes' },
      { question: 'b', g: 'no' },
      { question: 'c', g: '' },
    ]);
    const results = rows.map((row) => resultOf(run, row, 'label', () => 'yes'));
    expect(results.filter((r) => r.status === 'failed')).toHaveLength(1);
    const { scores } = scoreFigures(taskFor(run.suite), run.suite, results);
    expect(scores.label!.n).toBe(2);
    expect(scores.label!.metrics.accuracy!.n).toBe(2);
  });
});
