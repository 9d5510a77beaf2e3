/**
 * The metric table: every figure a scorer reports in report.json `scores.<scorer>.metrics`,
 * declared once — its name for people, its range, which way is better, the score kinds it applies
 * to, where it stands among a kind's headline figures, how its interval is found, the fewest
 * items that interval is given on, how a run aggregated in parts finds it, and how a comparison
 * computes its delta. Everything that lists metrics derives from here: the names report.txt,
 * the terminal and the pages print, the pages' CI bars, the headline figures of summaries and
 * leaderboards, the comparison's deltas (and which take Newcombe's interval), a sweep's ranking
 * direction and the gate's lookups.
 *
 * A family adds a metric of its own with {@link defineMetric} (and computes it through its
 * scorer's `metrics.extra`, see `ExtraMetric` in lib/metrics/scores.ts): no core file changes.
 */
import type { ScoreKind } from './model.js';

/** Where a metric's values lie: [0, 1], [−1, 1], or anywhere. */
export type MetricRange = 'unit' | 'signed' | 'open';

export interface MetricSpec {
  /** For people: report.txt, the terminal, the pages. */
  name: string;
  range: MetricRange;
  /** Which way is better (a sweep's ranking, a page's colouring); `neither` for a plain mean or threshold. */
  better: 'higher' | 'lower' | 'neither';
  /** The score kinds whose scorers report it. */
  kinds: readonly ScoreKind[];
  /** Its place among each kind's headline figures (summaries, leaderboards), lowest first; absent: not a headline figure. */
  headline?: Partial<Record<ScoreKind, number>>;
  /**
   * How its 95% interval is found: `wilson` (a proportion: Wilson's score interval), `bootstrap`
   * (the percentile bootstrap over items), `none` (a point figure: a fitted threshold, a
   * cross-validated figure).
   */
  interval: 'wilson' | 'bootstrap' | 'none';
  /**
   * The fewest items its interval is given on: below, the figure has none and says "too few
   * items for an interval" (the coverage bench, docs/performance.md, finds each). Absent: any n.
   */
  minItemsForInterval?: number;
  /** Why it is null although there are items: where its formula is 0/0 (absent: it never is). */
  undefinedReason?: string;
  /**
   * How a run aggregated in parts (AWS) finds it: `rows` — recomputed from the parts' merged
   * rows (typed columns, label counts, sums), so it is what one pass over every item gives.
   */
  merge: 'rows';
  /**
   * How a comparison of two runs gives its delta over the items both scored: `newcombe` (a
   * difference of proportions: Newcombe's paired interval and McNemar's p), `bootstrap` (the
   * paired bootstrap), `none` (no delta).
   */
  delta: 'newcombe' | 'bootstrap' | 'none';
}

/** Why a correlation is undefined. */
const CONSTANT_SIDE = 'undefined: fewer than two items or a constant side (the formula is 0/0)';

const bootstrapped = { interval: 'bootstrap', merge: 'rows', delta: 'bootstrap' } as const;
const proportion = {
  range: 'unit',
  better: 'higher',
  interval: 'wilson',
  merge: 'rows',
  delta: 'newcombe',
} as const;

/** The figures of every family's scorers. */
const CORE: Readonly<Record<string, MetricSpec>> = {
  accuracy: { name: 'accuracy', ...proportion, kinds: ['label', 'pass'], headline: { label: 0, pass: 1 } },
  macroF1: {
    name: 'macro F1',
    minItemsForInterval: 200,
    range: 'unit',
    better: 'higher',
    kinds: ['label'],
    headline: { label: 1 },
    ...bootstrapped,
  },
  binaryAccuracy: { name: 'binary accuracy', ...proportion, kinds: ['label'] },
  binaryF1: {
    name: 'binary macro F1',
    minItemsForInterval: 1000,
    range: 'unit',
    better: 'higher',
    kinds: ['label'],
    headline: { label: 2 },
    ...bootstrapped,
  },
  positiveF1: {
    name: 'positive-class F1',
    undefinedReason: 'undefined: the positive class never occurs, in gold or in the values',
    minItemsForInterval: 1000,
    range: 'unit',
    better: 'higher',
    kinds: ['label'],
    headline: { label: 3 },
    ...bootstrapped,
  },
  kappa: {
    name: "Cohen's kappa",
    undefinedReason: 'undefined: one label everywhere (chance agreement 1, the formula is 0/0)',
    minItemsForInterval: 200,
    range: 'signed',
    better: 'higher',
    kinds: ['label'],
    headline: { label: 4 },
    ...bootstrapped,
  },
  weightedKappa: {
    name: 'weighted kappa',
    undefinedReason: 'undefined: one value everywhere (no disagreement expected, the formula is 0/0)',
    minItemsForInterval: 200,
    range: 'signed',
    better: 'higher',
    kinds: ['label', 'number'],
    headline: { label: 5, number: 3 },
    ...bootstrapped,
  },
  mean: {
    name: 'mean',
    minItemsForInterval: 50,
    range: 'open',
    better: 'neither',
    kinds: ['number'],
    headline: { number: 0 },
    ...bootstrapped,
  },
  mae: {
    name: 'MAE',
    minItemsForInterval: 20,
    range: 'open',
    better: 'lower',
    kinds: ['number'],
    headline: { number: 1 },
    ...bootstrapped,
  },
  pearson: {
    name: 'Pearson r',
    undefinedReason: CONSTANT_SIDE,
    minItemsForInterval: 20,
    range: 'signed',
    better: 'higher',
    kinds: ['number'],
    ...bootstrapped,
  },
  spearman: {
    name: 'Spearman ρ',
    undefinedReason: CONSTANT_SIDE,
    minItemsForInterval: 10,
    range: 'signed',
    better: 'higher',
    kinds: ['number'],
    headline: { number: 2 },
    ...bootstrapped,
  },
  kendallTau: {
    name: 'Kendall τ-b',
    undefinedReason: CONSTANT_SIDE,
    minItemsForInterval: 10,
    range: 'signed',
    better: 'higher',
    kinds: ['number'],
    ...bootstrapped,
  },
  rocAuc: {
    name: 'ROC-AUC',
    undefinedReason: 'undefined: the gold has one class only (no positive–negative pair)',
    minItemsForInterval: 200,
    range: 'unit',
    better: 'higher',
    kinds: ['number'],
    headline: { number: 4 },
    ...bootstrapped,
  },
  balancedAccuracy: {
    name: 'balanced accuracy',
    minItemsForInterval: 50,
    range: 'unit',
    better: 'higher',
    kinds: ['number', 'pass'],
    headline: { number: 5, pass: 2 },
    ...bootstrapped,
  },
  cvBalancedAccuracy: {
    name: 'CV balanced acc.',
    range: 'unit',
    better: 'higher',
    kinds: ['number'],
    interval: 'none',
    merge: 'rows',
    delta: 'none',
  },
  calibratedThreshold: {
    name: 'fitted threshold',
    range: 'open',
    better: 'neither',
    kinds: ['number'],
    interval: 'none',
    merge: 'rows',
    delta: 'none',
  },
  passRate: { name: 'pass rate', ...proportion, kinds: ['pass'], headline: { pass: 0 } },
  /** Krippendorff's alpha: among annotators, across repeats, of the judge against annotators. */
  alpha: {
    name: "Krippendorff's alpha",
    range: 'signed',
    better: 'higher',
    kinds: [],
    minItemsForInterval: 200,
    ...bootstrapped,
  },
};

const table = new Map<string, MetricSpec>(Object.entries(CORE));

/**
 * Adds a family's own metric to the table (at module load, beside the scorer that computes it).
 * A second definition of a name must be the same: a metric means one thing.
 */
export function defineMetric(key: string, spec: MetricSpec): void {
  const known = table.get(key);
  if (known && JSON.stringify(known) !== JSON.stringify(spec))
    throw new TypeError(`defineMetric: ${key} is already defined differently (${known.name})`);
  if (!/^[a-z][A-Za-z0-9]*$/.test(key)) throw new TypeError(`defineMetric: ${key} is not a camelCase name`);
  table.set(key, Object.freeze({ ...spec }));
}

/** A metric's declaration; undefined for a name no one declared. */
export function metricSpec(key: string): MetricSpec | undefined {
  return table.get(key);
}

/** Every declared metric, core ones first in their declared order. */
export function metrics(): [string, MetricSpec][] {
  return [...table];
}

/**
 * A metric's name for people; an undeclared camelCase key is spelt out (`perClass`: per class).
 * Any other key is shown as it is: a label (`TP`, `FP3`, `Natural`) keeps its case.
 */
export function metricDisplayName(key: string): string {
  const declared = table.get(key)?.name;
  if (declared !== undefined) return declared;
  return /^[a-z][a-z0-9]*[A-Z]/.test(key) ? key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase() : key;
}

/** The headline metrics of a kind, in the order summaries print them. */
export function headlineMetrics(kind: ScoreKind): string[] {
  return [...table]
    .filter(([, spec]) => spec.headline?.[kind] !== undefined)
    .sort(([, a], [, b]) => a.headline![kind]! - b.headline![kind]!)
    .map(([key]) => key);
}

/** The metrics a comparison gives a delta of for a kind, and how. */
export function deltaMethod(key: string): MetricSpec['delta'] {
  return table.get(key)?.delta ?? 'bootstrap';
}
