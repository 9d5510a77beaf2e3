/**
 * Slices: the primary scorer's metrics per value of the suite's slice columns, in report.json,
 * report.txt, comparisons and gates. A hand-computed example, the figures of a run tallied in two
 * parts and merged (equal to one pass's), the bound on a column's values, and the paired deltas.
 */
import { describe, expect, it } from 'vitest';
import { judgeFamily } from '../../../shared/families/judge/task.js';
import type { AnyTaskFamily } from '../../../shared/family/types.js';
import {
  evaluateCondition,
  type GateFigures,
  GateSyntaxError,
  parseCondition,
} from '../../../shared/lib/gate.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import type { Report } from '../../../shared/model/report.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { ComparisonTally, compareRuns } from '../../../shared/reports/compare-runs.js';
import { renderComparisonText } from '../../../shared/reports/comparison.js';
import { renderText } from '../../../shared/reports/files.js';
import { buildReport, ReportTally } from '../../../shared/reports/report.js';
import { MAX_SLICE_VALUES } from '../../../shared/reports/slices.js';

const AT = '2026-01-01T00:00:00.000Z';
const family = judgeFamily as AnyTaskFamily;

function runOf(runId: string, slices: string[] = ['subset', 'lang']): RunRecord {
  const suite = validateSuite(
    {
      version: 1,
      name: 'sliced',
      task: 'judge',
      dataset: { path: 'data.csv' },
      judge: { prompt: 'judge.md', labels: ['good', 'bad'] },
      backends: ['sim:judge'],
      slices,
    },
    'slices test',
  );
  return {
    schemaVersion: 2,
    runId,
    suiteName: 'sliced',
    suite,
    prompts: {},
    status: 'done',
    total: 0,
    invalidRows: 0,
    startedAt: AT,
    reportPrefix: runId,
    datasetKey: 'data.csv',
    simulated: false,
  } as RunRecord;
}

/** A scored item: `subset` among the dataset's other columns, `lang` among the inputs (either may be absent). */
function item(
  row: number,
  gold: string,
  label: string,
  subset: string | undefined,
  lang: string | undefined,
  runId = 'r1',
): ItemResult {
  return {
    schemaVersion: 2,
    runId,
    itemId: `i${row}`,
    row,
    status: 'scored',
    input: { text: `text ${row}`, ...(lang !== undefined ? { lang } : {}) },
    ...(subset !== undefined ? { columns: { subset } } : {}),
    gold,
    scores: { label: { kind: 'label', value: label } },
    stages: {},
    simulated: false,
    finishedAt: AT,
  } as ItemResult;
}

/** Eight items; by hand: subset A 3/4 right, B 2/3, none 1/1; lang en 4/4, de 1/3, none 1/1. */
const HAND = [
  item(1, 'good', 'good', 'A', 'en'),
  item(2, 'bad', 'good', 'A', 'de'),
  item(3, 'bad', 'bad', 'A', 'en'),
  item(4, 'good', 'good', 'B', 'de'),
  item(5, 'good', 'bad', 'B', 'de'),
  item(6, 'bad', 'bad', 'B', undefined),
  item(7, 'good', 'good', 'A', 'en'),
  item(8, 'bad', 'bad', undefined, 'en'),
];

const withTotal = (run: RunRecord, n: number): RunRecord => ({ ...run, total: n });

async function reportOf(results: ItemResult[], run = runOf('r1')): Promise<Report> {
  return buildReport(withTotal(run, results.length), results, family, AT);
}

describe('slices in report.json', () => {
  it('gives each value of each column its items and the metrics computed by hand', async () => {
    const report = await reportOf(HAND);
    const slices = report.slices!;
    expect(Object.keys(slices)).toEqual(['subset', 'lang']);
    expect(Object.keys(slices.subset!)).toEqual(['(none)', 'A', 'B']);
    expect(Object.keys(slices.lang!)).toEqual(['(none)', 'de', 'en']);
    const a = slices.subset!.A!;
    expect(a.n).toBe(4);
    expect(a.metrics.accuracy!.value).toBeCloseTo(0.75, 12);
    expect(a.metrics.accuracy!.n).toBe(4);
    // good: P 2/3, R 1, F1 0.8; bad: P 1, R 1/2, F1 2/3.
    expect(a.metrics.macroF1!.value).toBeCloseTo((0.8 + 2 / 3) / 2, 12);
    // observed 0.75, chance (2·3 + 2·1)/16 = 0.5.
    expect(a.metrics.kappa!.value).toBeCloseTo(0.5, 12);
    expect(slices.subset!.B!.n).toBe(3);
    expect(slices.subset!.B!.metrics.accuracy!.value).toBeCloseTo(2 / 3, 12);
    expect(slices.subset!['(none)']!.metrics.accuracy!.value).toBe(1);
    expect(slices.lang!.en!.metrics.accuracy!.value).toBe(1);
    expect(slices.lang!.de!.n).toBe(3);
    expect(slices.lang!.de!.metrics.accuracy!.value).toBeCloseTo(1 / 3, 12);
    expect(slices.lang!['(none)']!.n).toBe(1);
  });

  it('are the whole-run metrics of a run of the slice’s items alone (same functions, same intervals)', async () => {
    const report = await reportOf(HAND);
    const only = await reportOf(HAND.filter((r) => r.columns?.subset === 'A'));
    expect(report.slices!.subset!.A!.metrics).toEqual(only.scores.label!.metrics);
    expect(report.slices!.subset!.A!.metrics.accuracy!.ci).toBeDefined();
  });

  it('are absent without `slices`', async () => {
    expect((await reportOf(HAND, runOf('r1', []))).slices).toBeUndefined();
  });
});

/** A larger run: four subsets, and a column of more distinct values than a column keeps. */
function many(n: number): ItemResult[] {
  let state = 7;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  return Array.from({ length: n }, (_, i) => {
    const gold = next() < 0.5 ? 'good' : 'bad';
    const label = next() < 0.75 ? gold : gold === 'good' ? 'bad' : 'good';
    const r = item(i + 1, gold, label, ['N', 'M', 'Q', 'Z'][Math.floor(next() * 4)], undefined);
    r.input.lang = `v${String(Math.floor(next() * 160)).padStart(3, '0')}`;
    return r;
  });
}

describe('slices tallied in parts', () => {
  it('merged in order equal one pass, wherever the run is cut, with values past the bound', async () => {
    const results = many(400);
    const run = withTotal(runOf('r1'), results.length);
    const whole = await buildReport(run, results, family, AT);
    expect(Object.keys(whole.slices!.lang!)).toHaveLength(MAX_SLICE_VALUES + 1);
    expect(whole.slices!.lang!['(other)']!.n).toBeGreaterThan(0);
    expect(whole.slices!.lang!['(other)']!.note).toMatch(/past the first 100 values/);
    const kept = Object.entries(whole.slices!.lang!).filter(([v]) => v !== '(other)');
    expect(kept.reduce((sum, [, s]) => sum + s.n, 0) + whole.slices!.lang!['(other)']!.n).toBe(400);
    for (const cut of [0, 1, 137, 250, 399, 400]) {
      const first = new ReportTally(run, family);
      const second = new ReportTally(run, family);
      for (const r of results.slice(0, cut)) first.add(r);
      for (const r of results.slice(cut)) second.add(r);
      const merged = ReportTally.fromBytes(run, family, first.toBytes());
      merged.merge(ReportTally.fromBytes(run, family, second.toBytes()));
      const report = await merged.report(AT);
      expect({ cut, slices: report.slices }).toEqual({ cut, slices: whole.slices });
      expect(JSON.stringify(report)).toBe(JSON.stringify(whole));
    }
  });
});

describe('slices in report.txt', () => {
  it('has a Slices section: a table per column with n and the headline metrics with CIs', async () => {
    const text = renderText(await reportOf(HAND));
    expect(text).toContain(
      "Slices (label, per value of each column; 95% CI: Wilson's, continuity-corrected, for a proportion; the bootstrap for the rest)",
    );
    const section = text.slice(text.indexOf('Slices ('));
    expect(section).toMatch(/\n {2}subset\n/);
    expect(section).toMatch(/\n {4}value\s+items\s+scored\s+accuracy/);
    expect(section).toMatch(/\n {4}A\s+4\s+4\s+0\.750 \[/);
    expect(section).toMatch(/\n {4}\(none\)\s+1\s+1\s+1\.000/);
    expect(section).toMatch(/\n {2}lang\n[\s\S]*\n {4}de\s+3\s+3\s+0\.333/);
  });
});

/** The candidate: items 2 and 5 fixed (lang de), item 3 broken (lang en). */
function candidate(): ItemResult[] {
  const fixed = new Map([
    [2, 'bad'],
    [5, 'good'],
    [3, 'good'],
  ]);
  return HAND.map((r) => {
    const label = fixed.get(r.row) ?? (r.scores.label as { value: string }).value;
    return { ...r, runId: 'r2', scores: { label: { kind: 'label', value: label } } } as ItemResult;
  });
}

describe('slices in comparisons', () => {
  const compared = () =>
    compareRuns(
      { run: withTotal(runOf('r1'), 8), results: HAND },
      { run: withTotal(runOf('r2'), 8), results: candidate() },
    );

  it('gives each slice value the paired deltas over its items', () => {
    const c = compared();
    const slices = c.scores.label!.slices!;
    expect(Object.keys(slices)).toEqual(['subset', 'lang']);
    // de: base 1/3 right, candidate 3/3; en: base 4/4, candidate 3/4.
    expect(slices.lang!.de!.n).toBe(3);
    expect(slices.lang!.de!.deltas.accuracy!.delta).toBeCloseTo(2 / 3, 12);
    expect(slices.lang!.en!.deltas.accuracy!.delta).toBeCloseTo(-0.25, 12);
    // A: items 1, 2, 3, 7: base 3/4, candidate 3/4 (2 fixed, 3 broken).
    expect(slices.subset!.A!.deltas.accuracy!.delta).toBeCloseTo(0, 12);
    expect(c.scores.label!.deltas.accuracy!.delta).toBeCloseTo(1 / 8, 12);
  });

  it('is the whole-run delta of the slice’s items compared alone', () => {
    const de = (r: ItemResult) => r.input.lang === 'de';
    const alone = compareRuns(
      { run: withTotal(runOf('r1'), 3), results: HAND.filter(de) },
      { run: withTotal(runOf('r2'), 3), results: candidate().filter(de) },
    );
    expect(compared().scores.label!.slices!.lang!.de!.deltas).toEqual(alone.scores.label!.deltas);
  });

  it('tallied in two parts and merged, gives one pass’s slice deltas', () => {
    const baseResults = many(300);
    const candResults = baseResults.map((r, i) =>
      i % 7 === 0
        ? ({
            ...r,
            runId: 'r2',
            scores: { label: { kind: 'label', value: r.gold === 'good' ? 'bad' : 'good' } },
          } as ItemResult)
        : { ...r, runId: 'r2' },
    );
    const [base, cand] = [withTotal(runOf('r1'), 300), withTotal(runOf('r2'), 300)];
    const whole = compareRuns({ run: base, results: baseResults }, { run: cand, results: candResults });
    expect(Object.keys(whole.scores.label!.slices!.lang!)).toHaveLength(MAX_SLICE_VALUES + 1);
    const tallyOf = (from: number, to: number) => {
      const tally = new ComparisonTally(base, cand);
      for (let i = from; i < to; i++) {
        tally.read('base', baseResults[i]!);
        tally.read('candidate', candResults[i]!);
        tally.add(baseResults[i], candResults[i]);
      }
      return ComparisonTally.fromBytes(base, cand, tally.toBytes());
    };
    for (const cut of [0, 113, 300]) {
      const merged = tallyOf(0, cut);
      merged.merge(tallyOf(cut, 300));
      expect(JSON.stringify(merged.comparison().scores)).toBe(JSON.stringify(whole.scores));
    }
  });

  it('compares only the columns both runs slice by', () => {
    const c = compareRuns(
      { run: withTotal(runOf('r1', ['lang']), 8), results: HAND },
      { run: withTotal(runOf('r2'), 8), results: candidate() },
    );
    expect(Object.keys(c.scores.label!.slices!)).toEqual(['lang']);
  });

  it('shows the headline delta per value in comparison.txt', () => {
    const text = renderComparisonText(compared());
    expect(text).toContain('slices by lang (accuracy, paired on the items of each value)');
    expect(text).toMatch(/\n {2}de\s+0\.333\s+1\.000\s+\+0\.667/);
  });
});

describe('gates on slices', () => {
  it('parses a slice after the metric', () => {
    expect(parseCondition('accuracy[subset=Natural] >= 0.8').metric).toEqual({
      kind: 'named',
      name: 'accuracy',
      slice: { column: 'subset', value: 'Natural' },
    });
    expect(parseCondition('delta accuracy[lang=de] >= -0.02')).toMatchObject({
      delta: true,
      metric: { kind: 'named', name: 'accuracy', slice: { column: 'lang', value: 'de' } },
      rhs: { kind: 'number', value: -0.02 },
    });
    expect(parseCondition('label.kappa[ lang = pt BR ] > 0').metric).toEqual({
      kind: 'named',
      name: 'label.kappa',
      slice: { column: 'lang', value: 'pt BR' },
    });
    expect(parseCondition('accuracy[lang=] >= 0.5').metric).toMatchObject({ slice: { value: '(none)' } });
  });

  it('rejects a malformed slice in the gate’s own words', () => {
    expect(() => parseCondition('accuracy[lang] >= 0.8')).toThrow(GateSyntaxError);
    expect(() => parseCondition('accuracy[lang] >= 0.8')).toThrow(/\[<column>=<value>\]/);
    expect(() => parseCondition('accuracy[=de] >= 0.8')).toThrow(GateSyntaxError);
    expect(() => parseCondition('delta accuracy[lang=de] > noise')).toThrow(/a slice has none/);
    expect(() => parseCondition('p95 latency[lang=de] <= 100')).toThrow(GateSyntaxError);
  });

  it('evaluates on the slice’s figures and its paired delta; a value the run lacks fails, saying why', async () => {
    const base = await reportOf(HAND);
    const cand = await reportOf(candidate(), runOf('r2'));
    const figures = (report: Report): GateFigures => ({ report, items: [] });
    const pairing = compareRuns(
      { run: withTotal(runOf('r1'), 8), results: HAND },
      { run: withTotal(runOf('r2'), 8), results: candidate() },
    ).scores;
    const check = (text: string) =>
      evaluateCondition(parseCondition(text), figures(cand), figures(base), pairing);

    expect(check('accuracy[lang=de] >= 0.9')).toMatchObject({ passed: true, value: 1 });
    expect(check('accuracy[lang=en] >= 0.8')).toMatchObject({ passed: false, value: 0.75 });
    expect(check('accuracy[lang=en] >= 0.8').reason).toContain('accuracy[lang=en] 0.75 fails');
    expect(check('accuracy[subset=A] >= baseline')).toMatchObject({ passed: true });
    const up = check('delta accuracy[lang=de] >= -0.02');
    expect(up.passed).toBe(true);
    expect(up.value).toBeCloseTo(2 / 3, 12);
    expect(check('delta accuracy[lang=en] >= -0.02')).toMatchObject({ passed: false, value: -0.25 });
    expect(check('label.accuracy[lang=(none)] >= 1')).toMatchObject({ passed: true });

    const missing = check('accuracy[subset=Natural] >= 0.8');
    expect(missing.passed).toBe(false);
    expect(missing.reason).toMatch(/no items where subset = Natural \(its values: \(none\), A, B\)/);
    const unsliced = check('accuracy[split=dev] >= 0.8');
    expect(unsliced.passed).toBe(false);
    expect(unsliced.reason).toMatch(/not sliced by split \(its slices: subset, lang\)/);
    expect(check('delta accuracy[subset=Natural] >= 0').passed).toBe(false);
  });
});
