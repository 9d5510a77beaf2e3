/**
 * The human ceiling: how far the people who gave the gold agree with each other, and how far
 * the judge agrees with them. When a dataset gives several annotators' labels per item, a
 * scorer's figures gain Krippendorff's alpha among the annotators, their mean pairwise
 * agreement, and the judge's agreement with them (the judge taken as one more annotator), each
 * with a bootstrap interval over items on the same resamples.
 *
 * Kept as compact columns (a code per annotator's label, a code for the judge's value), so a run
 * tallied in parts merges to exactly what one pass gives.
 */
import type { ScoreKind, ScoreValue } from '../../model/model.js';
import type { HumanAgreement, MetricValue } from '../../model/report.js';
import { pearson } from './agreement.js';
import { withheldReason } from './intervals.js';
import { alphaLevel, alphaStatistic, judgeAlphaStatistic, type RepeatValue } from './reliability.js';
import { binaryTargets, type ScorerMetricOptions } from './scores.js';
import { bootstrapCis, codeOf, type Indices, type NumberArray, NumberColumn } from './stats.js';

/** {@link AnnotationRows} saved: the value table and the columns (see the class). */
export interface AnnotationRowsState {
  kind: ScoreKind;
  annotators: number;
  values: string[];
  slots: NumberArray;
  codes: NumberArray;
  judge: NumberArray;
}

/**
 * One scorer's annotated items, fed in report order: each item's annotators' labels as codes (0
 * for an annotator who left it blank, else 1 + the value's place in `values`, first seen
 * first) one after another, how many annotators the item has, and the code of the judge's value
 * (0 when the item has none). An item no annotator labelled is not kept.
 */
export class AnnotationRows {
  /** The most annotators an item had. */
  private annotators = 0;
  private readonly values: string[] = [];
  /** Each value's place in `values` (its code is one more). */
  private readonly index = new Map<string, number>();
  private slots = new NumberColumn();
  private codes = new NumberColumn();
  private judge = new NumberColumn();

  constructor(readonly kind: ScoreKind) {}

  /** Items kept: those at least one annotator labelled. */
  get items(): number {
    return this.slots.length;
  }

  /**
   * One item: each annotator's label as the scorer's gold target (undefined for a blank, or for
   * a label the scorer cannot read), and the judge's value (undefined when unscored).
   */
  add(labels: readonly (ScoreValue | undefined)[], judge: ScoreValue | undefined): void {
    this.annotators = Math.max(this.annotators, labels.length);
    const codes = labels.map((label) => this.code(label));
    if (codes.every((c) => c === 0)) return;
    this.slots.push(codes.length);
    for (const c of codes) this.codes.push(c);
    this.judge.push(this.code(judge));
  }

  /** 0 for no value, else 1 + the value's place in the table (added when new). */
  private code(value: ScoreValue | undefined): number {
    if (value === undefined) return 0;
    if (typeof value === 'number' && !Number.isFinite(value)) return 0;
    return this.codeOfKey(String(value));
  }

  /**
   * Appends `later`, the items that come after this one's. Its codes are mapped into this
   * table, its new values joining in their order of first appearance: the table and the columns
   * are those one pass over every item would have made.
   */
  merge(later: AnnotationRows): void {
    this.annotators = Math.max(this.annotators, later.annotators);
    const map = [0, ...later.values.map((key) => this.codeOfKey(key))];
    this.slots.merge(later.slots);
    for (const c of later.codes.values()) this.codes.push(map[c]!);
    for (const c of later.judge.values()) this.judge.push(map[c]!);
  }

  /** 1 + the key's place in the table of values (0 is kept for no value). */
  private codeOfKey(key: string): number {
    return 1 + codeOf(this.values, this.index, key);
  }

  toState(): AnnotationRowsState {
    return {
      kind: this.kind,
      annotators: this.annotators,
      values: [...this.values],
      slots: this.slots.toState(),
      codes: this.codes.toState(),
      judge: this.judge.toState(),
    };
  }

  static fromState(state: AnnotationRowsState): AnnotationRows {
    const rows = new AnnotationRows(state.kind);
    rows.annotators = state.annotators;
    for (const key of state.values) rows.codeOfKey(key);
    rows.slots = NumberColumn.fromState(state.slots);
    rows.codes = NumberColumn.fromState(state.codes);
    rows.judge = NumberColumn.fromState(state.judge);
    return rows;
  }

  /** The figures: report.json `scores.<scorer>.humanAgreement`. */
  figures(options: ScorerMetricOptions = {}): HumanAgreement {
    const decode = (code: number): RepeatValue =>
      code === 0 ? null : this.kind === 'number' ? Number(this.values[code - 1]) : this.values[code - 1]!;
    const slots = this.slots.values();
    const codes = this.codes.values();
    const judge = this.judge.values();
    const units: RepeatValue[][] = [];
    for (let i = 0, at = 0; i < slots.length; i += 1) {
      units.push(Array.from(codes.subarray(at, at + slots[i]!), decode));
      at += slots[i]!;
    }
    return humanAgreement(
      this.kind,
      units.map((unit) => unit.map((v) => (v === null ? undefined : v))),
      Array.from(judge, (c) => decode(c) ?? undefined),
      options,
      this.annotators,
    );
  }
}

/**
 * How the judge's value meets an annotator's label (report.json `humanAgreement.judgeVerdict`):
 * `value` as it is (a label, a pass, a number against numeric ratings); `threshold` for a number
 * scorer against 0/1 labels, its verdict being 1 at or above the scorer's threshold and 0 below;
 * `none` for such a scorer without a threshold: it gives no label to set against theirs, only a
 * correlation.
 */
export type JudgeVerdictBasis = 'value' | 'threshold' | 'none';

/**
 * The human ceiling of one scorer over its annotated items (in report order: the intervals
 * resample them). `labels[i]` is item i's annotators' labels in order (undefined where one left
 * it blank), `judge[i]` the scorer's value for it (undefined when unscored, or the row invalid:
 * its labels still count among the annotators).
 *
 * - `alpha`: Krippendorff's alpha among the annotators, blanks missing, at the scorer's level
 *   (ordinal for a declared scale, interval for other numbers, nominal otherwise);
 * - `pairwiseAgreement`: over items with two labels or more, the mean share of the item's
 *   annotator pairs that gave the same label;
 * - `judgeAgreement`: for each annotator, the share of the items with both a judge verdict and
 *   that annotator's label on which the two are equal; their mean over the annotators with any
 *   such item. The verdict is the judge's value, or for a number scorer against 0/1 labels its
 *   value at or above the threshold (see {@link JudgeVerdictBasis});
 * - `judgeAlpha`: Krippendorff's alpha of the judge's verdict against each annotator's label
 *   (alpha over judge–annotator pairs, see `judgeAlphaStatistic`), over the items with both: the
 *   figure set against `alpha`, which is over annotator–annotator pairs;
 * - `judgeCorrelation` (number scorers): for each annotator, Pearson's r between the judge's
 *   value and that annotator's rating over the items with both; their mean.
 *
 * Each is null when nothing is there to compute it on (and alpha when the labels never vary).
 */
export function humanAgreement(
  kind: ScoreKind,
  labels: readonly (readonly (ScoreValue | undefined)[])[],
  judge: readonly (ScoreValue | undefined)[],
  options: ScorerMetricOptions = {},
  annotators = Math.max(0, ...labels.map((l) => l.length)),
): HumanAgreement {
  const { level, scale } = alphaLevel(kind, options);
  // Items no annotator labelled say nothing of the annotators: they are not resampled.
  const kept: number[] = [];
  labels.forEach((l, i) => {
    if (l.some((v) => v !== undefined)) kept.push(i);
  });
  const n = kept.length;
  const key = (v: ScoreValue) => String(v);
  const units: RepeatValue[][] = kept.map((i) => labels[i]!.map((v) => (v === undefined ? null : v)));
  const alpha = alphaStatistic(units, level, scale);

  // A number scorer against 0/1 labels gives a verdict through its threshold, or none.
  const binary = kind === 'number' && binaryTargets(units.flat().map((v) => (v === null ? undefined : v)));
  const basis: JudgeVerdictBasis = !binary ? 'value' : options.threshold === undefined ? 'none' : 'threshold';
  const verdictOf = (value: ScoreValue | undefined): ScoreValue | undefined => {
    if (value === undefined || basis === 'none') return undefined;
    if (basis === 'threshold') return Number(value) >= options.threshold! ? 1 : 0;
    return value;
  };
  const verdicts = kept.map((i) => verdictOf(judge[i]));
  const judgeAlpha = judgeAlphaStatistic(
    units,
    verdicts.map((v) => (v === undefined ? null : v)),
    level,
    scale,
  );

  // Per item: the share of its annotator pairs that agree (NaN below two labels).
  const pairShare = new Float64Array(n);
  // Per item and annotator: 0 nothing to compare, 1 the judge differs, 2 the judge agrees.
  const versus = new Uint8Array(n * annotators);
  let paired = 0;
  let judged = 0;
  let valued = 0;
  kept.forEach((item, i) => {
    const present = labels[item]!.filter((v): v is ScoreValue => v !== undefined);
    const m = present.length;
    if (m >= 2) {
      const counts = new Map<string, number>();
      for (const v of present) counts.set(key(v), (counts.get(key(v)) ?? 0) + 1);
      let same = 0;
      for (const c of counts.values()) same += c * (c - 1);
      pairShare[i] = same / (m * (m - 1));
      paired += 1;
    } else pairShare[i] = Number.NaN;
    if (judge[item] !== undefined) valued += 1;
    const verdict = verdicts[i];
    if (verdict === undefined) return;
    judged += 1;
    labels[item]!.forEach((v, a) => {
      if (v !== undefined) versus[i * annotators + a] = key(v) === key(verdict) ? 2 : 1;
    });
  });

  // Number scorers: per item and annotator the judge's value and the rating (NaN where either is
  // missing), read into one buffer pair per draw.
  let correlation: ((ix: Indices) => number | null) | undefined;
  if (kind === 'number') {
    const xs = new Float64Array(n * annotators).fill(Number.NaN);
    const ys = new Float64Array(n * annotators).fill(Number.NaN);
    kept.forEach((item, i) => {
      const x = judge[item];
      if (x === undefined) return;
      labels[item]!.forEach((y, a) => {
        if (y === undefined) return;
        xs[a * n + i] = Number(x);
        ys[a * n + i] = Number(y);
      });
    });
    const bx = new Float64Array(n);
    const by = new Float64Array(n);
    correlation = (ix) => {
      let sum = 0;
      let count = 0;
      for (let a = 0; a < annotators; a += 1) {
        let m = 0;
        for (const i of ix) {
          const x = xs[a * n + i]!;
          if (Number.isNaN(x)) continue;
          bx[m] = x;
          by[m] = ys[a * n + i]!;
          m += 1;
        }
        const r = pearson(bx.subarray(0, m), by.subarray(0, m));
        if (r === null) continue;
        sum += r;
        count += 1;
      }
      return count === 0 ? null : sum / count;
    };
  }

  const statistics = {
    alpha: (ix: Indices) => alpha(ix),
    pairwiseAgreement: (ix: Indices) => {
      let sum = 0;
      let count = 0;
      for (const i of ix) {
        const share = pairShare[i]!;
        if (Number.isNaN(share)) continue;
        sum += share;
        count += 1;
      }
      return count === 0 ? null : sum / count;
    },
    judgeAgreement: (ix: Indices) => {
      const agree = new Float64Array(annotators);
      const total = new Float64Array(annotators);
      for (const i of ix) {
        for (let a = 0; a < annotators; a += 1) {
          const v = versus[i * annotators + a]!;
          if (v === 0) continue;
          total[a]! += 1;
          if (v === 2) agree[a]! += 1;
        }
      }
      let sum = 0;
      let count = 0;
      for (let a = 0; a < annotators; a += 1) {
        if (total[a] === 0) continue;
        sum += agree[a]! / total[a]!;
        count += 1;
      }
      return count === 0 ? null : sum / count;
    },
    judgeAlpha: (ix: Indices) => judgeAlpha(ix),
    ...(correlation ? { judgeCorrelation: correlation } : {}),
  } as Record<string, (ix: Indices) => number | null>;
  const all = Uint32Array.from(kept.keys());
  const metric = (name: string, over: number): MetricValue => ({
    value: over === 0 ? null : statistics[name]!(all),
    n: over,
  });
  const figures: Record<string, MetricValue> = {
    alpha: metric('alpha', paired),
    pairwiseAgreement: metric('pairwiseAgreement', paired),
    judgeAgreement: metric('judgeAgreement', judged),
    judgeAlpha: metric('judgeAlpha', judged),
    ...(correlation ? { judgeCorrelation: metric('judgeCorrelation', valued) } : {}),
  };
  if (basis === 'none') {
    const reason = 'a number scorer without a threshold gives no label to set against 0/1 labels';
    figures.judgeAgreement!.reason = reason;
    figures.judgeAlpha!.reason = reason;
  }
  if (n > 0 && options.bootstrap !== false) {
    const cis = bootstrapCis(
      n,
      (ix) => Object.fromEntries(Object.entries(statistics).map(([name, f]) => [name, f(ix)])),
      options.bootstrap ?? {},
    );
    for (const name of Object.keys(figures)) {
      const figure = figures[name]!;
      const ci = cis[name];
      const withheld = figure.value === null ? undefined : withheldReason(name, figure.n);
      if (withheld) figure.reason ??= withheld;
      else if (figure.value !== null && ci) figure.ci = ci;
    }
  }
  const { alpha: a, pairwiseAgreement, judgeAgreement, judgeAlpha: ja, judgeCorrelation } = figures;
  return {
    annotators,
    items: n,
    alpha: a!,
    pairwiseAgreement: pairwiseAgreement!,
    judgeAgreement: judgeAgreement!,
    judgeAlpha: ja!,
    ...(judgeCorrelation ? { judgeCorrelation } : {}),
    level,
    judgeVerdict: basis,
    ...(basis === 'threshold' ? { threshold: options.threshold! } : {}),
  };
}
