/**
 * Length bias of a scorer: whether its scores follow the length of the text they score (a judge
 * that prefers long answers, a metric that rewards short summaries). Spearman's ρ between the
 * output's length in characters and the score, over every scored item and within each gold
 * class (a length effect inside a class is not explained by the gold).
 */
import type { ScoreKind, ScoreValue } from '../../model/model.js';
import type { Correlation, LengthBias } from '../../model/report.js';
import { spearman } from './agreement.js';
import type { ScorerMetricOptions } from './scores.js';
import { NumberColumn } from './stats.js';

/** Gold classes beyond this many (a numeric gold with many distinct values) get no `byGold`. */
const MAX_GOLD_CLASSES = 20;

/**
 * A score as a number for the correlation: a number as itself, a pass as 1 and a fail as 0, a
 * label by its place in the scorer's label order when that order is declared ordinal (from low
 * to high); undefined (the item is left out) otherwise.
 */
export function biasScore(
  kind: ScoreKind,
  value: ScoreValue,
  options: ScorerMetricOptions = {},
): number | undefined {
  switch (kind) {
    case 'number':
      return typeof value === 'number' ? value : undefined;
    case 'pass':
      return value === true ? 1 : 0;
    case 'label': {
      if (!options.ordinal || !options.labelOrder) return undefined;
      const rank = options.labelOrder.indexOf(String(value));
      return rank < 0 ? undefined : rank;
    }
  }
}

/** Whether a scorer's scores can be correlated with length at all. */
export function biasApplies(kind: ScoreKind, options: ScorerMetricOptions = {}): boolean {
  return kind !== 'label' || (options.ordinal === true && options.labelOrder !== undefined);
}

/** The lengths, scores and gold classes of a scorer's items, gathered one item at a time. */
export class LengthRows {
  private readonly lengths = new NumberColumn();
  private readonly scores = new NumberColumn();
  /** Each item's gold class as an index into `classes`, −1 for none: a code per item, not a string. */
  private readonly golds = new NumberColumn();
  private readonly classes: string[] = [];
  private readonly codes = new Map<string, number>();

  add(length: number, score: number, gold: ScoreValue | undefined): void {
    this.lengths.push(length);
    this.scores.push(score);
    if (gold === undefined) {
      this.golds.push(-1);
      return;
    }
    const label = String(gold);
    let code = this.codes.get(label);
    if (code === undefined) {
      code = this.classes.length;
      this.classes.push(label);
      this.codes.set(label, code);
    }
    this.golds.push(code);
  }

  figures(): LengthBias {
    const lengths = this.lengths.values();
    const scores = this.scores.values();
    const golds = this.golds.values();
    const byGold: Record<string, Correlation> = {};
    const classes = [...this.classes].sort();
    if (classes.length <= MAX_GOLD_CLASSES) {
      for (const gold of classes) {
        const code = this.codes.get(gold)!;
        let n = 0;
        for (let i = 0; i < golds.length; i += 1) if (golds[i] === code) n += 1;
        const xs = new Float64Array(n);
        const ys = new Float64Array(n);
        for (let i = 0, k = 0; i < golds.length; i += 1) {
          if (golds[i] !== code) continue;
          xs[k] = lengths[i]!;
          ys[k] = scores[i]!;
          k += 1;
        }
        byGold[gold] = correlation(xs, ys);
      }
    }
    return { ...correlation(lengths, scores), byGold };
  }
}

/** Spearman's ρ with average ranks for ties; null when n < 3 or a side is constant. */
export function correlation(xs: ArrayLike<number>, ys: ArrayLike<number>): Correlation {
  return { spearman: xs.length < 3 ? null : spearman(xs, ys), n: xs.length };
}
