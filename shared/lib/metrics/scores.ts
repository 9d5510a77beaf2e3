/**
 * Metrics by score kind, the same for every task family: a scorer's values (and the gold
 * targets they are compared with) in, its figures out. Unscored items are skipped and counted
 * by kind. A metric with no data is `null`, never 0; every metric carries the n it ran over.
 *
 * - label: the AQUA classification metrics against gold (accuracy, macro F1, Cohen's kappa;
 *   when the scorer names its positive labels, binary accuracy, the binary macro F1 and the F1
 *   of the positive class; the quadratic weighted kappa when its labels are an ordinal scale)
 *   with CIs, the per-class table and confusion matrix; the distribution of values with or
 *   without gold.
 * - number: the mean with a bootstrap CI; against a numeric gold MAE, Pearson, Spearman and
 *   Kendall's τ-b (and the quadratic weighted kappa when the values are an integer scale);
 *   against a binary gold (every target 0 or 1, a human "consistent / not" label) ROC-AUC,
 *   balanced accuracy at the scorer's threshold, and the calibrated figures (the threshold that
 *   maximises balanced accuracy on all the data; the balanced accuracy a threshold chosen that
 *   way reaches under 5-fold cross-validation).
 * - pass: the pass rate with a CI; against a pass/fail gold, accuracy and balanced accuracy.
 *
 * Intervals: a proportion of items (accuracy, binary accuracy, pass rate) has Wilson's interval;
 * every other figure the percentile bootstrap, withheld below its minimum number of items
 * (intervals.ts). A figure that is null although there are items (its formula is 0/0) or has
 * no interval for its few items says why in its `reason`.
 *
 * When some items have gold and others not by design (`ppi`), the prediction-powered estimate
 * of what gold would say over every item (ppi.ts): for a label scorer the share of each label
 * and of its positive class, for a number scorer the mean, for a pass scorer the share passing.
 */

import { dict, own } from '../../model/dict.js';
import { metricDisplayName, metricSpec } from '../../model/metrics.js';
import type { FailureKind, ScoreKind, ScoreValue } from '../../model/model.js';
import type {
  Interval,
  MetricValue,
  PpiDesign,
  PpiEstimate,
  PpiFigures,
  ScorerSummary,
} from '../../model/report.js';
import {
  balancedAccuracy,
  kendallTauB,
  meanAbsoluteError,
  pearson,
  quadraticWeightedKappa,
  rocAuc,
  spearman,
} from './agreement.js';
import { calibration } from './calibration.js';
import {
  type ClassificationMetrics,
  CodedLabelPairs,
  type CodedLabelPairsState,
  classificationMetrics,
} from './classification.js';
import { proportionInterval, withheldReason } from './intervals.js';
import {
  PpiLabelShares,
  type PpiLabelSharesState,
  type PpiMeanResult,
  PpiSums,
  type PpiSumsState,
  ppiMeanOfSums,
  type WeightedShare,
} from './ppi.js';
import { type BootstrapOptions, bootstrapCis, type NumberArray, NumberColumn, sum } from './stats.js';

export interface ScorerMetricOptions {
  /** Label scorers: labels mapped to the binary positive class; none: no binary view. */
  positive?: readonly string[];
  /** Label scorers: preferred label order in tables. */
  labelOrder?: readonly string[];
  /**
   * The values are an ordinal scale: for label scorers `labelOrder` runs from low to high (scores
   * correlate with length by that order); for number scorers the numbers are points of an
   * integer scale. Adds the quadratic weighted kappa against gold; alpha across repeats uses
   * the ordinal distance.
   */
  ordinal?: boolean;
  /** Number scorers: a value at or above it passes (balanced accuracy against a binary gold). */
  threshold?: number;
  /** false: no intervals (the single-repeat runs a noise floor is computed over). */
  bootstrap?: BootstrapOptions | false;
  /**
   * Some items have no gold by design (`dataset.partialGold`, `dataset.goldFile`): add the
   * prediction-powered estimates (`ppi`) when there are items without gold.
   */
  ppi?: boolean;
  /**
   * Number and pass scorers: figures of the scorer's own beyond the kind's, each computed from the
   * items with gold (the scorer's values and their targets; a pass is 1 or 0), named by a metric
   * the family declared in the metric table (`defineMetric`, shared/model/metrics.ts). They take
   * the table's interval (bootstrap, from its minimum number of items) in the run's report, and
   * its delta in comparisons: a family adds a metric without a change to core.
   */
  extra?: Readonly<Record<string, ExtraMetric>>;
}

/** A scorer's own figure (see `ScorerMetricOptions.extra`). */
export interface ExtraMetric {
  /** The figure over the items with gold; null where it is undefined. */
  value(values: ArrayLike<number>, targets: ArrayLike<number>): number | null;
}

/** One item as a scorer's metrics see it. */
export interface ScoreRow {
  /** The scored value; undefined when unscored. */
  value?: ScoreValue;
  /** The gold target, typed for the kind; undefined when the item has none. */
  target?: ScoreValue;
  /** Why there is no value. */
  unscored?: FailureKind;
  /**
   * An item with gold chosen for labelling with a known probability p (the goldFile's `p`): 1/p.
   * Its label then weighs 1/p and the prediction-powered estimates are the active estimator's
   * (ppi.ts), the labels without a weight counting as certain (there before the draw). Absent
   * on every item: the labels are a random sample (PPI++).
   */
  weight?: number;
}

export interface ScorerFigures {
  summary: ScorerSummary;
  /**
   * The same figures as plain values, `{ n, <metric>: value, ci: { <metric>: [lo, hi] } }`, for
   * report.json `metrics` when this is the primary scorer. Label scorers give the AQUA shape
   * (`accuracy`, `macroF1`, `perClass`, `binary`, `kappa`, `confusion`, `ci`…).
   */
  flat: Record<string, unknown>;
}

/** Figures of one scorer over the run's items (in report order, so resamples are reproducible). */
export function scorerFigures(
  kind: ScoreKind,
  rows: readonly ScoreRow[] | LabelRows | ValueRows,
  options: ScorerMetricOptions = {},
): ScorerFigures {
  if (rows instanceof LabelRows) return labelFigures(rows, options);
  if (rows instanceof ValueRows) return valueFigures(rows, options);
  const held = kind === 'label' ? new LabelRows() : new ValueRows(kind);
  for (const row of rows) held.add(row);
  return held instanceof LabelRows ? labelFigures(held, options) : valueFigures(held, options);
}

type Base = Pick<ScorerSummary, 'kind' | 'n' | 'unscored'>;

/** Adds `later`'s counts to `into`, keys new to `into` after its own in `later`'s order. */
export function addCounts<K extends string>(
  into: Partial<Record<K, number>>,
  later: Partial<Record<K, number>>,
): void {
  for (const [key, n] of Object.entries(later) as [K, number][])
    into[key] = (Object.hasOwn(into, key) ? (into[key] ?? 0) : 0) + n;
}

/** {@link ValueRows} saved: its counts and typed columns (see the class). */
export interface ValueRowsState {
  kind: 'number' | 'pass';
  unscored: Partial<Record<FailureKind, number>>;
  values: NumberArray;
  paired?: { targets: NumberArray; has: NumberArray };
  ppi?: PpiSumsState;
}

/**
 * A number or pass scorer's rows as they come, without keeping a row object each: the
 * unscored counts, and each scored item's value in a typed column (a pass is 1 or 0) and, from
 * the first item with a gold target of the kind's type on, each item's target (NaN for none)
 * and whether it has one. A scorer without gold keeps its values alone: a byte an item for
 * passes and whole-number scores up to 255, eight for fractions.
 */
export class ValueRows {
  readonly unscored: Partial<Record<FailureKind, number>> = {};
  private values = new NumberColumn();
  /**
   * Once an item has a target: every item's target and 1 where the item has one (the items
   * before it filled with NaN and 0), so both columns run beside `values`.
   */
  private paired: { targets: NumberColumn; has: NumberColumn } | undefined;
  /** The sums of the prediction-powered mean: scored items with gold, and scored items without. */
  ppi = new PpiSums();

  constructor(readonly kind: 'number' | 'pass') {}

  get n(): number {
    return this.values.length;
  }

  add(row: ScoreRow): void {
    if (row.unscored) this.unscored[row.unscored] = (this.unscored[row.unscored] ?? 0) + 1;
    if (row.value === undefined) return;
    const number = this.kind === 'number';
    const value = number ? (row.value as number) : row.value === true ? 1 : 0;
    this.values.push(value);
    this.addPpi(row, value);
    const paired = typeof row.target === (number ? 'number' : 'boolean');
    if (paired && !this.paired) this.paired = unpaired(this.values.length - 1);
    if (!this.paired) return;
    this.paired.targets.push(
      !paired ? Number.NaN : number ? (row.target as number) : row.target === true ? 1 : 0,
    );
    this.paired.has.push(paired ? 1 : 0);
  }

  /**
   * A scored item into the PPI sums: with a target of the kind's type labelled (chosen, when it
   * carries a weight 1/p), without one unlabelled.
   */
  private addPpi(row: ScoreRow, value: number): void {
    const number = this.kind === 'number';
    if (row.target === undefined) this.ppi.addUnlabelled(value);
    else if (typeof row.target === (number ? 'number' : 'boolean')) {
      const gold = number ? (row.target as number) : row.target ? 1 : 0;
      if (row.weight === undefined) this.ppi.addLabelled(gold, value);
      else this.ppi.addChosen(gold, value, Math.min(1, 1 / row.weight));
    }
  }

  /**
   * Appends `later`, the rows that come after this one's. Whichever side's items are the first
   * with a target, the columns are those one pass over both would have made.
   */
  merge(later: ValueRows): void {
    addCounts(this.unscored, later.unscored);
    if (later.paired) {
      this.paired ??= unpaired(this.values.length);
      this.paired.targets.merge(later.paired.targets);
      this.paired.has.merge(later.paired.has);
    } else if (this.paired) {
      for (let i = 0; i < later.n; i += 1) {
        this.paired.targets.push(Number.NaN);
        this.paired.has.push(0);
      }
    }
    this.values.merge(later.values);
    this.ppi.merge(later.ppi);
  }

  toState(): ValueRowsState {
    return {
      kind: this.kind,
      unscored: { ...this.unscored },
      values: this.values.toState(),
      ...(this.paired
        ? { paired: { targets: this.paired.targets.toState(), has: this.paired.has.toState() } }
        : {}),
      ppi: this.ppi.toState(),
    };
  }

  static fromState(state: ValueRowsState): ValueRows {
    const rows = new ValueRows(state.kind);
    Object.assign(rows.unscored, state.unscored);
    rows.values = NumberColumn.fromState(state.values);
    if (state.paired)
      rows.paired = {
        targets: NumberColumn.fromState(state.paired.targets),
        has: NumberColumn.fromState(state.paired.has),
      };
    if (state.ppi) rows.ppi = PpiSums.fromState(state.ppi);
    return rows;
  }

  /** Every scored value in order (a view), and the values and targets of the items with a target. */
  columns(): { values: NumberArray; paired: { values: Float64Array; targets: Float64Array } } {
    const values = this.values.values();
    if (!this.paired)
      return { values, paired: { values: new Float64Array(0), targets: new Float64Array(0) } };
    const targets = this.paired.targets.values();
    const has = this.paired.has.values();
    let n = 0;
    for (let i = 0; i < has.length; i += 1) n += has[i]!;
    const paired = { values: new Float64Array(n), targets: new Float64Array(n) };
    for (let i = 0, k = 0; i < values.length; i += 1) {
      if (has[i] !== 1) continue;
      paired.values[k] = values[i]!;
      paired.targets[k] = targets[i]!;
      k += 1;
    }
    return { values, paired };
  }
}

/** The paired columns of `n` items without a target. */
function unpaired(n: number): { targets: NumberColumn; has: NumberColumn } {
  const paired = { targets: new NumberColumn(), has: new NumberColumn() };
  for (let i = 0; i < n; i += 1) {
    paired.targets.push(Number.NaN);
    paired.has.push(0);
  }
  return paired;
}

function valueFigures(rows: ValueRows, options: ScorerMetricOptions): ScorerFigures {
  const base: Base = { kind: rows.kind, n: rows.n, unscored: rows.unscored };
  const { values, paired } = rows.columns();
  const figures =
    rows.kind === 'number'
      ? numberFigures(values, paired, base, options)
      : passFigures(values, paired, base, options);
  if (options.ppi && rows.ppi.nUnlabelled > 0) {
    const { ppi } = rows;
    figures.summary.ppi = {
      quantity: rows.kind === 'number' ? 'mean' : 'share passing',
      ...ppiEstimate(ppiMeanOfSums(ppi)),
      ...designOf(ppi.nLabelled, ppi.nChosen, rows.kind === 'pass' ? ppi.agreementOfBinary() : undefined),
    };
  }
  return figures;
}

/**
 * `ppi.design` when some labels were chosen with known probabilities (see {@link PpiDesign}):
 * their count, the others', and the design-weighted accuracy when the scorer has one.
 */
function designOf(
  labelled: number,
  chosen: number,
  accuracy: WeightedShare | undefined,
): { design?: PpiDesign } {
  if (chosen === 0) return {};
  return {
    design: {
      sample: 'non-random',
      chosen,
      certain: labelled - chosen,
      ...(accuracy ? { accuracy: { estimate: accuracy.estimate, ci: accuracy.ci, n: accuracy.n } } : {}),
    },
  };
}

/** One PPI result as report.json gives it (the interval level is the report's, 95%). */
function ppiEstimate(r: PpiMeanResult): PpiEstimate {
  return {
    estimator: r.estimator,
    estimate: r.estimate,
    ci: r.ci,
    classical: r.classical,
    judgeOnly: r.judgeOnly,
    nLabelled: r.nLabelled,
    nUnlabelled: r.nUnlabelled,
    lambda: r.lambda,
    effectiveLabels: r.effectiveLabels,
  };
}

/**
 * A label scorer's PPI figures: the share of each label met (declared order first), and at the
 * top the share of the positive class (its labels joined by `/`), else of the first label.
 */
function labelPpi(shares: PpiLabelShares, options: ScorerMetricOptions): PpiFigures | undefined {
  const met = shares.labelsMet();
  const order = [...(options.labelOrder ?? []), ...met.filter((l) => !options.labelOrder?.includes(l))];
  if (order.length === 0) return undefined;
  const byLabel = dict(order.map((label) => [label, ppiEstimate(shares.share([label]))] as const));
  const positive = options.positive?.length ? options.positive : [order[0]!];
  return {
    quantity: `share of ${positive.join('/')}`,
    ...(positive.length === 1 ? byLabel[positive[0]!]! : ppiEstimate(shares.share(positive))),
    byLabel,
    ...designOf(shares.nLabelled, shares.nChosen, shares.agreement()),
  };
}

/** {@link LabelRows} saved. */
export interface LabelRowsState {
  n: number;
  unscored: Partial<Record<FailureKind, number>>;
  distribution: Record<string, number>;
  withGold: CodedLabelPairsState;
  ppi?: PpiLabelSharesState;
}

/**
 * A label scorer's rows as they come, without keeping a row object each: the unscored counts,
 * the distribution of values, and the pairs against gold (unscored = `Error`; invalid rows and
 * items without gold left out) as label codes for the classification metrics and their bootstrap.
 */
export class LabelRows {
  n = 0;
  readonly unscored: Partial<Record<FailureKind, number>> = {};
  /** Keyed by the values, which are data (see `dict`). */
  readonly distribution: Record<string, number> = dict();
  withGold = new CodedLabelPairs();
  /**
   * The prediction-powered shares of the labels: every item but invalid rows, with gold or
   * without; an item the judge gave no label counts as judged none of the labels.
   */
  ppi = new PpiLabelShares();

  add(row: ScoreRow): void {
    if (row.unscored) this.unscored[row.unscored] = (this.unscored[row.unscored] ?? 0) + 1;
    if (row.value !== undefined) {
      this.n += 1;
      const value = String(row.value);
      this.distribution[value] = (own(this.distribution, value) ?? 0) + 1;
    }
    if (row.target !== undefined && row.unscored !== 'invalid_row')
      this.withGold.add(String(row.target), row.value === undefined ? 'Error' : String(row.value));
    if (row.unscored !== 'invalid_row') {
      const judged = row.value === undefined ? undefined : String(row.value);
      if (row.target === undefined) this.ppi.addUnlabelled(judged);
      else if (row.weight === undefined) this.ppi.addLabelled(String(row.target), judged);
      else this.ppi.addChosen(String(row.target), judged, Math.min(1, 1 / row.weight));
    }
  }

  /** Appends `later`, the rows that come after this one's (counts and tables in one pass's order). */
  merge(later: LabelRows): void {
    this.n += later.n;
    addCounts(this.unscored, later.unscored);
    addCounts(this.distribution, later.distribution);
    this.withGold.merge(later.withGold);
    this.ppi.merge(later.ppi);
  }

  toState(): LabelRowsState {
    return {
      n: this.n,
      unscored: { ...this.unscored },
      distribution: dict(Object.entries(this.distribution)),
      withGold: this.withGold.toState(),
      ppi: this.ppi.toState(),
    };
  }

  static fromState(state: LabelRowsState): LabelRows {
    const rows = new LabelRows();
    rows.n = state.n;
    Object.assign(rows.unscored, state.unscored);
    Object.assign(rows.distribution, state.distribution);
    rows.withGold = CodedLabelPairs.fromState(state.withGold);
    if (state.ppi) rows.ppi = PpiLabelShares.fromState(state.ppi);
    return rows;
  }
}

/** A label, number or pass scorer's rows loaded from their state. */
export function rowsFromState(state: LabelRowsState | ValueRowsState): LabelRows | ValueRows {
  return 'kind' in state ? ValueRows.fromState(state) : LabelRows.fromState(state);
}

/** Appends `later` to `rows`: the rows of the same scorer for the items that come after. */
export function mergeRows(rows: LabelRows | ValueRows, later: LabelRows | ValueRows): void {
  if (rows instanceof LabelRows && later instanceof LabelRows) rows.merge(later);
  else if (rows instanceof ValueRows && later instanceof ValueRows && rows.kind === later.kind)
    rows.merge(later);
  else throw new TypeError('mergeRows: the rows of two different kinds of scorer');
}

/** Label figures: the classification metrics over items with gold (unscored = `Error`, excluded inside). */
function labelFigures(rows: LabelRows, options: ScorerMetricOptions): ScorerFigures {
  const figures = labelMetricFigures(rows, options);
  const ppi = options.ppi && rows.ppi.nUnlabelled > 0 ? labelPpi(rows.ppi, options) : undefined;
  if (ppi) figures.summary.ppi = ppi;
  return figures;
}

function labelMetricFigures(rows: LabelRows, options: ScorerMetricOptions): ScorerFigures {
  const { distribution } = rows;
  const base: Base = { kind: 'label', n: rows.n, unscored: rows.unscored };
  if (rows.withGold.length === 0) {
    return {
      summary: { ...base, metrics: {}, tables: { distribution } },
      flat: { n: base.n, distribution },
    };
  }
  const m: ClassificationMetrics = classificationMetrics(rows.withGold, {
    positive: options.positive ?? false,
    labelOrder: options.labelOrder,
    ordinal: options.ordinal,
    bootstrap: options.bootstrap,
  });
  const withCi = options.bootstrap !== false;
  const metric = (key: string, value: number | null, ci?: Interval): MetricValue =>
    withReason(key, { value, n: m.n, ...(ci ? { ci } : {}) }, withCi);
  const metrics: Record<string, MetricValue> = {
    accuracy: metric('accuracy', m.accuracy, m.ci?.accuracy),
    macroF1: metric('macroF1', m.macroF1, m.ci?.macroF1),
    kappa: metric('kappa', m.kappa, m.ci?.kappa),
  };
  if (m.weightedKappa !== undefined)
    metrics.weightedKappa = metric('weightedKappa', m.weightedKappa, m.ci?.weightedKappa);
  if (m.binary) {
    metrics.binaryAccuracy = metric('binaryAccuracy', m.binary.accuracy, m.ci?.binaryAccuracy);
    metrics.binaryF1 = metric('binaryF1', m.binary.f1, m.ci?.binaryF1);
    const positive = m.binary.positive;
    metrics.positiveF1 = {
      ...metric('positiveF1', positive.f1, positive.f1 === null ? undefined : m.ci?.positiveF1),
      name: `F1 of ${positive.label}`,
    };
  }
  return {
    summary: { ...base, metrics, tables: { perClass: m.perClass, confusion: m.confusion, distribution } },
    flat: { ...m },
  };
}

/**
 * `m` with its `reason`: why it is null although there are items, or, when intervals were
 * asked for (`withCi`), why a figure with a value has none for its few items.
 */
function withReason(key: string, m: MetricValue, withCi: boolean): MetricValue {
  if (m.n === 0 || m.reason) return m;
  const reason =
    m.value === null
      ? metricSpec(key)?.undefinedReason
      : withCi && !m.ci
        ? withheldReason(key, m.n)
        : undefined;
  return reason ? { ...m, reason } : m;
}

/** Per-item columns a figure is computed from, all of one length. */
type Columns = Record<string, ArrayLike<number>>;
/** A figure of the columns: of every item, or of a resample's (typed arrays refilled each resample). */
type Statistic<C extends Columns> = (columns: { [K in keyof C]: Float64Array | C[K] }) => number | null;

/**
 * Every statistic on the items' `columns`, and on the same resamples their intervals (those not
 * withheld for the items' number: see intervals.ts). Each resample is copied once into one typed
 * array a column, which every statistic reads (a resample of a million items allocates nothing).
 * A statistic the metric table declares a proportion (`interval: 'wilson'`) is a share of the
 * items: its interval is Wilson's (continuity-corrected), not a resample's.
 */
function withCis<C extends Columns>(
  columns: C,
  statistics: Record<string, Statistic<C>>,
  options: ScorerMetricOptions,
): Record<string, MetricValue> {
  const proportions = Object.keys(statistics).filter((name) => metricSpec(name)?.interval === 'wilson');
  const names = Object.keys(columns) as (keyof C & string)[];
  const n = columns[names[0]!]!.length;
  const out: Record<string, MetricValue> = {};
  for (const [name, stat] of Object.entries(statistics)) out[name] = { value: stat(columns), n };
  const bootstrap = options.bootstrap;
  const withCi = n > 0 && bootstrap !== false;
  if (withCi) {
    const alpha = bootstrap?.alpha;
    for (const name of proportions) {
      const value = out[name]?.value;
      const ci =
        value === null || value === undefined ? null : proportionInterval(Math.round(value * n), n, alpha);
      if (ci) out[name]!.ci = ci;
    }
    const booted = Object.entries(statistics).filter(
      ([name]) => !proportions.includes(name) && out[name]!.value !== null && !withheldReason(name, n),
    );
    if (booted.length > 0) {
      const resampled = Object.fromEntries(names.map((name) => [name, new Float64Array(n)])) as {
        [K in keyof C]: Float64Array;
      };
      const cis = bootstrapCis(
        n,
        (indices) => {
          for (const name of names) {
            const from = columns[name]!;
            const to = resampled[name];
            for (let i = 0; i < n; i += 1) to[i] = from[indices[i]!]!;
          }
          return Object.fromEntries(booted.map(([name, stat]) => [name, stat(resampled)]));
        },
        bootstrap,
      );
      for (const [name, ci] of Object.entries(cis)) if (ci) out[name]!.ci = ci;
    }
  }
  for (const name of Object.keys(out)) out[name] = withReason(name, out[name]!, withCi);
  return out;
}

/** The mean of a column (compensated sum), null when empty. */
const meanOf = (values: ArrayLike<number> & Iterable<number>): number | null =>
  values.length === 0 ? null : sum(values) / values.length;

/** Number figures: the mean; against numeric gold MAE/Pearson/Spearman/Kendall, against binary gold ROC-AUC. */
function numberFigures(
  values: NumberArray,
  paired: { values: Float64Array; targets: Float64Array },
  base: Base,
  options: ScorerMetricOptions,
): ScorerFigures {
  const metrics: Record<string, MetricValue> = withCis(
    { values },
    { mean: (c) => meanOf(c.values) },
    options,
  );
  const { values: v, targets: t } = paired;
  if (binaryTargets(t)) {
    const threshold = options.threshold;
    // With a threshold, 1 where the value is at or above it (the scorer's verdict): a column
    // resampled beside the others; without one, no column to copy on every resample.
    const statistics = numberStatistics(options, true);
    const figures =
      threshold === undefined
        ? withCis({ v, t }, statistics, options)
        : withCis({ v, t, above: v.map((x) => (x >= threshold ? 1 : 0)) }, statistics, options);
    Object.assign(metrics, named(figures, options));
    const positive = Array.from(t, (x) => x === 1);
    const calibrated = calibration(Array.from(v), positive);
    metrics.cvBalancedAccuracy = { value: calibrated.cvBalancedAccuracy, n: v.length };
    metrics.calibratedThreshold = { value: calibrated.calibratedThreshold, n: v.length };
  } else if (v.length > 0) {
    Object.assign(metrics, named(withCis({ v, t }, numberStatistics(options, false), options), options));
  }
  return { summary: { ...base, metrics }, flat: flatten(base.n, metrics) };
}

/** The columns a number or pass scorer's figures against gold are computed from, an item each. */
export interface GoldColumns {
  /** The scorer's values (a pass: 1 or 0). */
  v: GoldColumn;
  /** Their gold targets. */
  t: GoldColumn;
  /** Number scorers: 1 where the value is at or above the threshold (the scorer's verdict). */
  above?: GoldColumn;
  /** Pass scorers: 1 where the pass equals its gold. */
  right?: GoldColumn;
}

type GoldColumn = ArrayLike<number> & Iterable<number>;

type GoldStatistic = (columns: GoldColumns) => number | null;

/**
 * A number scorer's figures against gold, by name: against a binary gold (`binary`: every target
 * 0 or 1) ROC-AUC and, with a threshold, the balanced accuracy of its verdicts; against another
 * numeric gold MAE, Pearson, Spearman, Kendall's τ-b and the scorer's own (`extra`); the
 * quadratic weighted kappa of an ordinal scale. The run's report and a comparison of two runs
 * compute them with these same functions.
 */
export function numberStatistics(
  options: ScorerMetricOptions,
  binary: boolean,
): Record<string, GoldStatistic> {
  const weighted: Record<string, GoldStatistic> = options.ordinal
    ? { weightedKappa: (c) => quadraticWeightedKappa(c.v, c.t) }
    : {};
  const againstGold: Record<string, GoldStatistic> = binary
    ? {
        rocAuc: (c) => rocAuc(c.v, c.t),
        ...weighted,
        ...(options.threshold === undefined
          ? {}
          : { balancedAccuracy: (c) => balancedAccuracy(c.above!, c.t) }),
      }
    : {
        mae: (c) => meanAbsoluteError(c.v, c.t),
        pearson: (c) => pearson(c.v, c.t),
        spearman: (c) => spearman(c.v, c.t),
        kendallTau: (c) => kendallTauB(c.v, c.t),
        ...weighted,
      };
  // The scorer's own figures are of its values against a numeric gold, not a 0/1 label.
  return binary ? againstGold : { ...againstGold, ...extraStatistics(options) };
}

/** A pass scorer's figures against a pass/fail gold, by name (see {@link numberStatistics}). */
export function passStatistics(options: ScorerMetricOptions): Record<string, GoldStatistic> {
  return {
    accuracy: (c) => meanOf(c.right!),
    balancedAccuracy: (c) => balancedAccuracy(c.v, c.t),
    ...extraStatistics(options),
  };
}

/** The scorer's own figures as statistics of the columns; each must be in the metric table. */
function extraStatistics(options: ScorerMetricOptions): Record<string, GoldStatistic> {
  const out: Record<string, GoldStatistic> = {};
  for (const [name, metric] of Object.entries(options.extra ?? {})) {
    if (!metricSpec(name))
      throw new TypeError(
        `the scorer's own metric ${name} is not in the metric table: declare it with defineMetric`,
      );
    out[name] = (c) => metric.value(c.v, c.t);
  }
  return out;
}

/** The scorer's own figures carry their name, for readers without the family (report.html). */
function named(
  metrics: Record<string, MetricValue>,
  options: ScorerMetricOptions,
): Record<string, MetricValue> {
  for (const name of Object.keys(options.extra ?? {}))
    if (metrics[name]) metrics[name] = { ...metrics[name]!, name: metricDisplayName(name) };
  return metrics;
}

/** Pass figures: the pass rate; against a pass/fail gold, accuracy and balanced accuracy. */
function passFigures(
  passes: NumberArray,
  paired: { values: Float64Array; targets: Float64Array },
  base: Base,
  options: ScorerMetricOptions,
): ScorerFigures {
  const metrics: Record<string, MetricValue> = withCis(
    { passes },
    { passRate: (c) => meanOf(c.passes) },
    options,
  );
  if (paired.values.length > 0) {
    const { values: v, targets: t } = paired;
    const right = Float64Array.from(v, (x, i) => Number(x === t[i]));
    Object.assign(metrics, named(withCis({ right, v, t }, passStatistics(options), options), options));
  }
  return { summary: { ...base, metrics }, flat: flatten(base.n, metrics) };
}

function flatten(n: number, metrics: Record<string, MetricValue>): Record<string, unknown> {
  const flat: Record<string, unknown> = { n };
  const ci: Record<string, Interval> = {};
  for (const [name, m] of Object.entries(metrics)) {
    flat[name] = m.value;
    if (m.ci) ci[name] = m.ci;
  }
  if (Object.keys(ci).length > 0) flat.ci = ci;
  return flat;
}

/**
 * Whether a number scorer's gold values are a binary human label: every numeric target is 0
 * or 1 (decided over the whole run, never item by item: a rating of 1 is not a "no").
 */
export function binaryTargets(targets: ArrayLike<ScoreValue | undefined>): boolean {
  let numeric = 0;
  for (let i = 0; i < targets.length; i += 1) {
    const t = targets[i];
    if (typeof t !== 'number') continue;
    if (t !== 0 && t !== 1) return false;
    numeric += 1;
  }
  return numeric > 0;
}

/**
 * Whether one scored value is right: a label equal to its gold; a pass equal to its gold (else
 * a pass); a number equal to its numeric gold — or, when the run's gold is a binary label
 * (`binary`, see {@link binaryTargets}), on the gold's side of the threshold — or at or above
 * the threshold without gold. Undefined when nothing says.
 */
export function verdictOf(
  kind: ScoreKind,
  value: ScoreValue,
  target: ScoreValue | undefined,
  options: ScorerMetricOptions = {},
  binary = false,
): boolean | undefined {
  switch (kind) {
    case 'label':
      return target === undefined ? undefined : value === target;
    case 'pass':
      return typeof target === 'boolean' ? value === target : value === true;
    case 'number': {
      const { threshold } = options;
      if (typeof target === 'number') {
        if (binary && threshold !== undefined) return Number(value) >= threshold === (target === 1);
        return value === target;
      }
      return threshold === undefined ? undefined : Number(value) >= threshold;
    }
  }
}
