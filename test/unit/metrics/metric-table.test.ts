/**
 * The metric table: each metric declared once, and what derives from it — the headline lists,
 * names, which proportions take Wilson's interval, which deltas take Newcombe's — and a family's
 * own metric (the judge family's `withinOne`) reaching the run's report and a comparison of two
 * runs with no change to core.
 */
import { describe, expect, it } from 'vitest';
import { numberStatistics, proportionInterval, scorerFigures } from '../../../shared/lib/metrics/index.js';
import {
  defineMetric,
  deltaMethod,
  headlineMetrics,
  metricDisplayName,
  metricSpec,
} from '../../../shared/model/metrics.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import { taskFor } from '../../../shared/registry/registry.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { compareRuns } from '../../../shared/reports/compare-runs.js';

describe('the metric table', () => {
  it('gives each kind its headline figures in the order summaries print them', () => {
    expect(headlineMetrics('label')).toEqual([
      'accuracy',
      'macroF1',
      'binaryF1',
      'positiveF1',
      'kappa',
      'weightedKappa',
    ]);
    expect(headlineMetrics('number')).toEqual([
      'mean',
      'mae',
      'spearman',
      'weightedKappa',
      'rocAuc',
      'balancedAccuracy',
    ]);
    expect(headlineMetrics('pass')).toEqual(['passRate', 'accuracy', 'balancedAccuracy']);
  });

  it('names, ranges and the methods of intervals and deltas come from one declaration', () => {
    expect(metricDisplayName('kendallTau')).toBe('Kendall τ-b');
    expect(metricDisplayName('someNewFigure')).toBe('some new figure');
    // A label as a key keeps its case (a distribution's, a per-class table's).
    for (const label of ['TP', 'FP3', 'Natural', 'yes', 'A']) expect(metricDisplayName(label)).toBe(label);
    expect(metricSpec('mae')).toMatchObject({ better: 'lower', range: 'open', interval: 'bootstrap' });
    for (const proportion of ['accuracy', 'binaryAccuracy', 'passRate']) {
      expect(metricSpec(proportion)).toMatchObject({ interval: 'wilson', range: 'unit' });
      expect(deltaMethod(proportion)).toBe('newcombe');
    }
    expect(deltaMethod('calibratedThreshold')).toBe('none');
    expect(metricSpec('kappa')?.minItemsForInterval).toBe(200);
  });

  it('refuses a second, different meaning of a name, and a name that is not camelCase', () => {
    const spec = metricSpec('mae')!;
    expect(() => defineMetric('mae', { ...spec, better: 'higher' })).toThrow(/already defined differently/);
    expect(() => defineMetric('mae', spec)).not.toThrow();
    expect(() => defineMetric('Not-a-name', spec)).toThrow(/camelCase/);
  });
});

describe("a scorer's own metric", () => {
  defineMetric('exactShare', {
    name: 'exact share',
    range: 'unit',
    better: 'higher',
    kinds: ['number'],
    interval: 'wilson',
    merge: 'rows',
    delta: 'bootstrap',
  });
  const exact = {
    value: (v: ArrayLike<number>, t: ArrayLike<number>) =>
      Array.from(v).filter((x, i) => x === t[i]).length / v.length,
  };

  it('is computed beside the kind’s figures, named, with the interval the table declares', () => {
    // Values 1 2 3 4 5 against gold 1 2 3 5 4: 3 of 5 exact.
    const rows = [1, 2, 3, 4, 5].map((value, i) => ({ value, target: [1, 2, 3, 5, 4][i]! }));
    const { summary } = scorerFigures('number', rows, { extra: { exactShare: exact } });
    expect(summary.metrics.exactShare).toEqual({
      value: 0.6,
      n: 5,
      ci: proportionInterval(3, 5)!,
      name: 'exact share',
    });
  });

  it('must be declared in the table first', () => {
    expect(() => numberStatistics({ extra: { undeclaredFigure: exact } }, false)).toThrow(/defineMetric/);
  });
});

describe("the judge family's withinOne, through the family", () => {
  const suite = validateSuite(
    {
      version: 1,
      name: 'ratings',
      task: 'judge',
      dataset: { path: 'ratings.jsonl' },
      judge: { prompt: 'rate.md', range: [1, 5] },
      backends: ['sim:x'],
    },
    'test',
  );
  const run = (runId: string, scores: number[]): { run: RunRecord; results: ItemResult[] } => ({
    run: {
      schemaVersion: 2,
      runId,
      suiteName: 'ratings',
      suite,
      prompts: {},
      status: 'done',
      total: scores.length,
      invalidRows: 0,
      startedAt: '2025-01-01T00:00:00.000Z',
      reportPrefix: '',
      datasetKey: 'ratings.jsonl',
      simulated: false,
    },
    results: scores.map((score, i) => ({
      schemaVersion: 2,
      runId,
      itemId: `r${i}`,
      row: i + 1,
      status: 'scored',
      gold: String([1, 2, 3, 4, 5, 3][i]),
      input: {},
      scores: { score: { kind: 'number', value: score } },
      stages: {},
      simulated: false,
      finishedAt: '2025-01-01T00:00:30.000Z',
    })),
  });

  it('is in the scorer’s figures and in a comparison’s deltas', () => {
    const scorer = taskFor(suite).scorers(suite).score!;
    // gold 1 2 3 4 5 3; base 1 4 3 5 2 3: off by 0 2 0 1 3 0, within one on 4 of 6.
    const rows = [1, 4, 3, 5, 2, 3].map((value, i) => ({ value, target: [1, 2, 3, 4, 5, 3][i]! }));
    const { summary } = scorerFigures('number', rows, scorer.metrics);
    expect(summary.metrics.withinOne).toMatchObject({ value: 4 / 6, n: 6, name: 'within ±1' });
    // The candidate is within one everywhere: 6 of 6.
    const c = compareRuns(run('a', [1, 4, 3, 5, 2, 3]), run('b', [2, 2, 3, 4, 4, 3]));
    const delta = c.scores.score!.deltas.withinOne!;
    expect(delta).toMatchObject({ n: 6, base: 4 / 6, candidate: 1 });
    expect(delta.delta).toBeCloseTo(1 / 3, 12);
  });
});
