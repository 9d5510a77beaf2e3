/**
 * Classification metrics for judges (gold label vs predicted label), with the seed project's
 * definitions kept exactly:
 *
 * - Rows whose prediction is the error label (`Error`) are excluded from every quality metric
 *   and counted in `errors`.
 * - `accuracy` is multi-class ("4-class") accuracy.
 * - `macroF1` averages per-class F1 over the UNION of gold and predicted labels: a label that
 *   is only ever predicted counts, with F1 0 (sklearn's `average="macro"` behaviour).
 * - Binary view: gold and predicted labels in `positive` (default TP, TN) → `positive`, every
 *   other label → `negative`. `binary.f1` is the MACRO average of the positive-class F1 and the
 *   negative-class F1 — not the positive-class F1, which is `binary.positive.f1` (the class
 *   named by `binary.positive.label`: its labels joined by `/`).
 * - `kappa` is Cohen's kappa of the multi-class labels against gold.
 * - `weightedKappa` (only with `ordinal`: `labelOrder` is a scale from low to high) is Cohen's
 *   kappa with quadratic weights: each label is its place in `labelOrder`, and a disagreement
 *   costs the square of the distance between the two places, so a near miss costs less than a
 *   far one. κw = 1 − n·Σ_rows (gold − pred)² / Σ_{rows i, j} (gold_i − pred_j)²; the weights'
 *   common scale cancels out. Null when a label is not on the scale.
 *
 * Conventions (chosen so that every value is a finite plain number — JSON has no NaN):
 * - precision of a class never predicted = 0; recall of a class absent from gold = 0;
 *   F1 = 0 when precision + recall = 0 (computed as 2·TP / (2·TP + FP + FN), equal to
 *   2PR/(P+R)).
 * - Macro averages (multi-class and binary) run over the classes present in gold or
 *   predictions; so when every row is positive and every prediction equals gold, binary macro F1 = 1
 *   (the absent negative class is not averaged in as a 0).
 * - Kappa when expected agreement is 1 (one single label in both gold and predictions, as with
 *   one row): null, as the formula is 0/0 there; weighted kappa likewise (its expected
 *   disagreement is 0 only when every row has the same label on both sides). A resample where
 *   it is undefined adds nothing to its interval.
 * - Intervals: accuracy and binary accuracy, proportions of rows, have Wilson's interval
 *   (intervals.ts); macro F1, the binary F1s and the kappas the percentile bootstrap, given only
 *   from `MIN_ITEMS_FOR_INTERVAL` rows on (fewer: no interval, see `withheldReason`).
 * - n = 0 (no rows, or all rows are errors): accuracy, macro F1, kappa, weighted kappa and the
 *   binary figures (the positive class's precision, recall and F1 too) are null (no data is not
 *   a score of 0), empty tables, `ci` undefined. The positive class's figures are null too when
 *   the class never occurs (in gold or predictions), and a resample without it has no F1 of it.
 * - Labels are compared exactly (case-sensitive); trimming/normalising is the caller's job.
 */

import { dict } from '../../model/dict.js';
import type { Interval } from '../../model/report.js';
import { bootstrapAllowed, proportionInterval } from './intervals.js';
import { type BootstrapOptions, codeOf, countsBootstrapCis } from './stats.js';

export interface LabelPair {
  gold: string;
  pred: string;
}

export interface ClassScores {
  precision: number;
  recall: number;
  f1: number;
  /** Number of gold rows with this label. */
  support: number;
}

/** The positive class of the binary view: its name and its own figures (null when n = 0). */
export interface PositiveClassScores {
  /** The positive labels joined by `/` (`helpful`, `TP/TN`). */
  label: string;
  precision: number | null;
  recall: number | null;
  f1: number | null;
  /** Number of gold rows in the class. */
  support: number;
}

export interface BinaryMetrics {
  accuracy: number | null;
  /** Macro average of `positive.f1` and `negative.f1` (over the classes present). */
  f1: number | null;
  positive: PositiveClassScores;
  negative: ClassScores;
}

/**
 * 95% intervals by default: Wilson's for the proportions, the percentile bootstrap for the
 * rest (absent below their minimum number of rows, or when the figure is null).
 */
export interface ClassificationCis {
  accuracy: Interval;
  binaryAccuracy?: Interval;
  macroF1?: Interval;
  binaryF1?: Interval;
  /** The positive class's F1 (`binary.positive.f1`). */
  positiveF1?: Interval;
  kappa?: Interval;
  weightedKappa?: Interval;
}

/** A type alias (not an interface) so it is assignable to `Record<string, unknown>`. */
export type ClassificationMetrics = {
  /** Rows used (error rows excluded). */
  n: number;
  /** Rows whose prediction was the error label; excluded from everything else. */
  errors: number;
  /** Every label of the union of gold and predictions, in report order (see `labelOrder`). */
  labels: string[];
  /** Null when n = 0, as every figure below. */
  accuracy: number | null;
  macroF1: number | null;
  /** One entry per label of the union; support = gold count. */
  perClass: Record<string, ClassScores>;
  /** Undefined when the caller asked for no binary view (`positive: false`). */
  binary: BinaryMetrics | undefined;
  /** Cohen's kappa in [-1, 1]. */
  kappa: number | null;
  /** Quadratic weighted kappa in [-1, 1]; present only with `ordinal`, null when it has no value. */
  weightedKappa?: number | null;
  /** gold label (labels present in gold) → predicted label (every label of the union) → count, zeros included. */
  confusion: Record<string, Record<string, number>>;
  /** Intervals (see {@link ClassificationCis}); undefined when n = 0 or bootstrap is off. */
  ci: ClassificationCis | undefined;
};

export interface ClassificationOptions {
  /** Labels mapped to the binary positive class (default TP, TN); false: no binary view. */
  positive?: readonly string[] | false;
  /** Prediction that marks a failed row (default `Error`). */
  errorLabel?: string;
  /** Bootstrap settings (default 1000 iterations, seed 1, alpha 0.05), or false to skip CIs. */
  bootstrap?: BootstrapOptions | false;
  /**
   * Preferred label order for `labels`, `perClass` and `confusion` (e.g. TP, FP3, FP2, FP1).
   * Only affects order, never which labels count: listed labels that occur come first in this
   * order, the rest follow in code-unit order.
   */
  labelOrder?: readonly string[];
  /** `labelOrder` is a scale from low to high: adds the quadratic weighted kappa. */
  ordinal?: boolean;
}

export const DEFAULT_POSITIVE_LABELS: readonly string[] = Object.freeze(['TP', 'TN']);
export const DEFAULT_ERROR_LABEL = 'Error';

/** {@link LabelPairCounts} saved: each gold label's row of predicted labels and counts, in order of first appearance. */
export type LabelPairCountsState = [gold: string, row: [pred: string, count: number][]][];

/**
 * Label pairs counted rather than listed (gold → predicted → count): the point figures of a
 * million rows from a few entries. Gives the same figures as the pairs it counted, but no
 * bootstrap intervals (those resample rows).
 */
export class LabelPairCounts {
  readonly counts = new Map<string, Map<string, number>>();

  add(gold: string, pred: string, count = 1): void {
    let row = this.counts.get(gold);
    if (!row) {
      row = new Map();
      this.counts.set(gold, row);
    }
    row.set(pred, (row.get(pred) ?? 0) + count);
  }

  /** Appends `later`, the counts of the pairs that come after this one's. */
  merge(later: LabelPairCounts): void {
    for (const [gold, row] of later.counts) for (const [pred, count] of row) this.add(gold, pred, count);
  }

  toState(): LabelPairCountsState {
    return Array.from(this.counts, ([gold, row]) => [gold, [...row]]);
  }

  static fromState(state: LabelPairCountsState): LabelPairCounts {
    const counts = new LabelPairCounts();
    for (const [gold, row] of state) for (const [pred, count] of row) counts.add(gold, pred, count);
    return counts;
  }
}

/** {@link CodedLabelPairs} saved: the table of labels and each pair's two codes into it. */
export interface CodedLabelPairsState {
  labels: string[];
  gold: Int32Array;
  pred: Int32Array;
}

/**
 * Label pairs as codes into one table of labels (two 4-byte columns per row, not an object per
 * row): how a scorer's rows are held for a million items, bootstrap included. Labels are coded
 * in order of first appearance.
 */
export class CodedLabelPairs {
  readonly labels: string[] = [];
  private readonly codes = new Map<string, number>();
  private gold = new Int32Array(1024);
  private pred = new Int32Array(1024);
  length = 0;

  static of(pairs: readonly LabelPair[]): CodedLabelPairs {
    const coded = new CodedLabelPairs();
    for (const p of pairs) coded.add(p.gold, p.pred);
    return coded;
  }

  add(gold: string, pred: string): void {
    this.reserve(this.length + 1);
    this.gold[this.length] = this.code(gold);
    this.pred[this.length] = this.code(pred);
    this.length += 1;
  }

  /**
   * Appends `later`, the pairs that come after this one's. Its codes are mapped into this
   * table; its new labels join in its order of first appearance, so the table and the codes
   * are those one pass over every pair would have made.
   */
  merge(later: CodedLabelPairs): void {
    const codes = later.labels.map((label) => this.code(label));
    const gold = later.goldCodes();
    const pred = later.predCodes();
    this.reserve(this.length + later.length);
    for (let i = 0; i < later.length; i++) {
      this.gold[this.length + i] = codes[gold[i]!]!;
      this.pred[this.length + i] = codes[pred[i]!]!;
    }
    this.length += later.length;
  }

  private reserve(needed: number): void {
    if (needed <= this.gold.length) return;
    let size = Math.max(this.gold.length, 1024);
    while (size < needed) size *= 2;
    const grow = (column: Int32Array) => {
      const grown = new Int32Array(size);
      grown.set(column.subarray(0, this.length));
      return grown;
    };
    this.gold = grow(this.gold);
    this.pred = grow(this.pred);
  }

  private code(label: string): number {
    return codeOf(this.labels, this.codes, label);
  }

  goldCodes(): Int32Array {
    return this.gold.subarray(0, this.length);
  }

  predCodes(): Int32Array {
    return this.pred.subarray(0, this.length);
  }

  toState(): CodedLabelPairsState {
    return { labels: [...this.labels], gold: this.goldCodes().slice(), pred: this.predCodes().slice() };
  }

  static fromState(state: CodedLabelPairsState): CodedLabelPairs {
    const coded = new CodedLabelPairs();
    for (const label of state.labels) coded.code(label);
    coded.reserve(state.gold.length);
    coded.gold.set(state.gold);
    coded.pred.set(state.pred);
    coded.length = state.gold.length;
    return coded;
  }
}

/** Computes the metrics above; see the module documentation for the exact conventions. */
export function classificationMetrics(
  pairs: readonly LabelPair[] | CodedLabelPairs | LabelPairCounts,
  options: ClassificationOptions = {},
): ClassificationMetrics {
  const binaryView = options.positive !== false;
  const positiveLabels = options.positive === false ? [] : (options.positive ?? DEFAULT_POSITIVE_LABELS);
  const positiveSet = new Set(positiveLabels);
  const errorLabel = options.errorLabel ?? DEFAULT_ERROR_LABEL;
  const present = new Set<string>();
  let n = 0;
  let errors = 0;
  const counted = pairs instanceof LabelPairCounts;
  if (counted && options.bootstrap !== false)
    throw new RangeError(
      'classificationMetrics: counted pairs have no rows to resample; pass bootstrap: false',
    );
  const coded = counted
    ? new CodedLabelPairs()
    : pairs instanceof CodedLabelPairs
      ? pairs
      : CodedLabelPairs.of(pairs);
  // Rows whose prediction is not the error label are kept (codes into `coded.labels`).
  const allGold = coded.goldCodes();
  const allPred = coded.predCodes();
  const errorCode = coded.labels.indexOf(errorLabel);
  if (counted) {
    for (const [gold, row] of pairs.counts) {
      for (const [pred, c] of row) {
        if (pred === errorLabel) {
          errors += c;
          continue;
        }
        present.add(gold);
        present.add(pred);
        n += c;
      }
    }
  } else {
    for (let i = 0; i < coded.length; i++) {
      if (allPred[i] === errorCode) continue;
      n += 1;
      present.add(coded.labels[allGold[i]!]!);
      present.add(coded.labels[allPred[i]!]!);
    }
    errors = coded.length - n;
  }

  const labels = orderLabels(present, options.labelOrder);
  const indexOf = new Map(labels.map((label, i) => [label, i]));
  const isPositive = labels.map((label) => positiveSet.has(label));
  const width = labels.length;
  // Each label's place on the ordinal scale; undefined when there is no scale or a label is off it.
  const scale = options.ordinal ? (options.labelOrder ?? []) : undefined;
  const ranks = scale && labels.map((label) => scale.indexOf(label));
  const weighted = ranks?.every((rank) => rank >= 0) === true;

  const counts = new Array<number>(width * width).fill(0);
  if (counted) {
    for (const [g, row] of pairs.counts) {
      for (const [p, c] of row) if (p !== errorLabel) counts[indexOf.get(g)! * width + indexOf.get(p)!]! += c;
    }
  } else {
    const indexOfCode = coded.labels.map((label) => indexOf.get(label) ?? -1);
    for (let i = 0; i < coded.length; i++) {
      if (allPred[i] === errorCode) continue;
      counts[indexOfCode[allGold[i]!]! * width + indexOfCode[allPred[i]!]!]!++;
    }
  }
  const scores = scoreConfusion(counts, width, isPositive, weighted ? ranks : undefined);

  // Keyed by labels, which are data: objects without a prototype (see `dict`).
  const perClass = dict<ClassScores>();
  labels.forEach((label, k) => {
    perClass[label] = scores.perClass[k]!;
  });
  const confusion = dict<Record<string, number>>();
  labels.forEach((goldLabel, g) => {
    if (scores.perClass[g]!.support === 0) return;
    const row = dict<number>();
    labels.forEach((predLabel, p) => {
      row[predLabel] = counts[g * width + p]!;
    });
    confusion[goldLabel] = row;
  });

  let ci: ClassificationCis | undefined;
  if (n > 0 && options.bootstrap !== false) {
    const alpha = options.bootstrap?.alpha;
    const binaryRight = scores.binary.accuracy * n;
    ci = {
      accuracy: proportionInterval(Math.round(scores.accuracy * n), n, alpha)!,
      ...(binaryView ? { binaryAccuracy: proportionInterval(Math.round(binaryRight), n, alpha)! } : {}),
    };
    // The figures whose interval is a bootstrap, from their minimum number of rows on.
    const booted = (['macroF1', 'kappa', 'binaryF1', 'positiveF1', 'weightedKappa'] as const).filter(
      (key) =>
        bootstrapAllowed(key, n) &&
        (key === 'binaryF1' || key === 'positiveF1' ? binaryView : key !== 'weightedKappa' || weighted),
    );
    if (booted.length > 0 && !counted) {
      // Every figure is one of the confusion matrix: each resample is drawn as its matrix, at a
      // cost that does not grow with the rows (a run of millions reduces in a moment).
      const cis = countsBootstrapCis(
        counts,
        (sample) => {
          const s = scoreConfusion(sample, width, isPositive, weighted ? ranks : undefined);
          const all: Record<(typeof booted)[number], number | null> = {
            macroF1: s.macroF1,
            kappa: s.kappa,
            binaryF1: s.binary.f1,
            // A resample without the positive class has no F1 of it: skipped, not a 0.
            positiveF1: s.binary.positivePresent ? s.binary.positive.f1 : null,
            weightedKappa: s.weightedKappa ?? null,
          };
          const stats: Partial<Record<(typeof booted)[number], number | null>> = {};
          for (const key of booted) stats[key] = all[key];
          return stats as Record<(typeof booted)[number], number | null>;
        },
        options.bootstrap,
      );
      Object.assign(ci, cis);
    }
  }

  const empty = n === 0;
  const positive = scores.binary.positive;
  // The positive class's figures say nothing when it never occurs (in gold or predictions).
  const noPositive = empty || !scores.binary.positivePresent;
  const binary: BinaryMetrics = {
    accuracy: empty ? null : scores.binary.accuracy,
    f1: empty ? null : scores.binary.f1,
    positive: {
      label: positiveLabels.join('/'),
      precision: noPositive ? null : positive.precision,
      recall: noPositive ? null : positive.recall,
      f1: noPositive ? null : positive.f1,
      support: positive.support,
    },
    negative: scores.binary.negative,
  };
  return {
    n,
    errors,
    labels,
    accuracy: empty ? null : scores.accuracy,
    macroF1: empty ? null : scores.macroF1,
    perClass,
    binary: binaryView ? binary : undefined,
    kappa: empty ? null : scores.kappa,
    ...(scale ? { weightedKappa: empty || !weighted ? null : (scores.weightedKappa ?? null) } : {}),
    confusion,
    ci,
  };
}

function orderLabels(present: ReadonlySet<string>, preferred: readonly string[] = []): string[] {
  const first = [...new Set(preferred)].filter((label) => present.has(label));
  const listed = new Set(first);
  const rest = [...present]
    .filter((label) => !listed.has(label))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return [...first, ...rest];
}

interface ConfusionScores {
  accuracy: number;
  macroF1: number;
  /** Null where it is 0/0 (one label everywhere). */
  kappa: number | null;
  /** Only when the labels have places on a scale (`ranks`); null where it is 0/0. */
  weightedKappa?: number | null;
  binary: {
    accuracy: number;
    f1: number;
    positive: ClassScores;
    negative: ClassScores;
    /** Whether the positive class occurs at all (in gold or in predictions). */
    positivePresent: boolean;
  };
  perClass: ClassScores[];
}

/**
 * All metrics from a row-major width×width confusion matrix (rows gold, columns predicted).
 * Shared by the point estimate and every bootstrap resample, so both use identical definitions.
 */
function scoreConfusion(
  counts: readonly number[],
  width: number,
  isPositive: readonly boolean[],
  ranks?: readonly number[],
): ConfusionScores {
  const goldTotals = new Array<number>(width).fill(0);
  const predTotals = new Array<number>(width).fill(0);
  let n = 0;
  let agree = 0;
  // Binary 2×2: [gold][pred], index 0 = positive, 1 = negative.
  let pp = 0;
  let pn = 0;
  let np = 0;
  let nn = 0;
  for (let g = 0; g < width; g++) {
    for (let p = 0; p < width; p++) {
      const c = counts[g * width + p]!;
      if (c === 0) continue;
      goldTotals[g]! += c;
      predTotals[p]! += c;
      n += c;
      if (g === p) agree += c;
      if (isPositive[g]) {
        if (isPositive[p]) pp += c;
        else pn += c;
      } else if (isPositive[p]) np += c;
      else nn += c;
    }
  }

  const perClass: ClassScores[] = [];
  let f1Sum = 0;
  let present = 0;
  for (let k = 0; k < width; k++) {
    const scores = classScores(counts[k * width + k]!, predTotals[k]!, goldTotals[k]!);
    perClass.push(scores);
    if (goldTotals[k]! + predTotals[k]! > 0) {
      f1Sum += scores.f1;
      present++;
    }
  }

  const positive = classScores(pp, pp + np, pp + pn);
  const negative = classScores(nn, nn + pn, nn + np);
  // A binary class is present when it occurs in gold or in predictions (pp + pn + np for positive).
  const binaryPresent: ClassScores[] = [];
  if (pp + pn + np > 0) binaryPresent.push(positive);
  if (nn + np + pn > 0) binaryPresent.push(negative);
  const binary = {
    accuracy: n > 0 ? (pp + nn) / n : 0,
    f1: binaryPresent.length > 0 ? binaryPresent.reduce((s, c) => s + c.f1, 0) / binaryPresent.length : 0,
    positive,
    negative,
    positivePresent: pp + pn + np > 0,
  };

  return {
    accuracy: n > 0 ? agree / n : 0,
    macroF1: present > 0 ? f1Sum / present : 0,
    kappa: cohensKappa(n, agree, goldTotals, predTotals),
    ...(ranks ? { weightedKappa: weightedKappa(counts, width, ranks, goldTotals, predTotals) } : {}),
    binary,
    perClass,
  };
}

/**
 * Quadratic weighted kappa from the counts: κw = 1 − n·O / E, with O = Σ count(g, p)·(r_g − r_p)²
 * the disagreement seen and E = Σ gold_g·pred_p·(r_g − r_p)² (n times the disagreement expected
 * by chance from the two sides' label shares). E = 0 only when every row has one and the same
 * label on both sides: then null (0/0), as for unweighted kappa.
 */
function weightedKappa(
  counts: readonly number[],
  width: number,
  ranks: readonly number[],
  goldTotals: readonly number[],
  predTotals: readonly number[],
): number | null {
  let n = 0;
  let observed = 0;
  let expected = 0;
  for (let g = 0; g < width; g++) {
    n += goldTotals[g]!;
    for (let p = 0; p < width; p++) {
      const d = (ranks[g]! - ranks[p]!) ** 2;
      observed += counts[g * width + p]! * d;
      expected += goldTotals[g]! * predTotals[p]! * d;
    }
  }
  if (n === 0 || expected <= 0) return null;
  return Math.max(-1, Math.min(1, 1 - (n * observed) / expected));
}

function classScores(truePositives: number, predicted: number, support: number): ClassScores {
  const precision = predicted > 0 ? truePositives / predicted : 0;
  const recall = support > 0 ? truePositives / support : 0;
  const falses = predicted - truePositives + (support - truePositives);
  const f1 = truePositives > 0 ? (2 * truePositives) / (2 * truePositives + falses) : 0;
  return { precision, recall, f1, support };
}

/**
 * κ = (pₒ − pₑ) / (1 − pₑ) with pₑ = Σₖ (goldₖ/n)(predₖ/n), computed on integer counts as
 * (n·agree − Σₖ goldₖ·predₖ) / (n² − Σₖ goldₖ·predₖ) so the pₑ = 1 test is exact.
 * pₑ = 1 (one single label everywhere, so pₒ = 1 too) → null: 0/0.
 */
function cohensKappa(n: number, agree: number, goldTotals: number[], predTotals: number[]): number | null {
  if (n === 0) return null;
  let chance = 0;
  for (let k = 0; k < goldTotals.length; k++) chance += goldTotals[k]! * predTotals[k]!;
  const denominator = n * n - chance;
  if (denominator <= 0) return null;
  return Math.max(-1, Math.min(1, (n * agree - chance) / denominator));
}
