/**
 * Length bias of a scorer: whether its scores follow the length of the text they score (a judge
 * that prefers long answers, a metric that rewards short summaries). Spearman's ρ between the
 * output's length in characters and the score, over every scored item and within each gold
 * class (a length effect inside a class is not explained by the gold).
 */

import { dict } from '../../model/dict.js';
import type { ScoreKind, ScoreValue } from '../../model/model.js';
import type { Correlation, LengthBias } from '../../model/report.js';
import { spearman } from './agreement.js';
import type { ScorerMetricOptions } from './scores.js';
import { codeOf, type NumberArray, NumberColumn } from './stats.js';

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

/** {@link LengthRows} saved: its columns and its table of gold classes (codes in order of first appearance). */
export interface LengthRowsState {
  lengths: NumberArray;
  scores: NumberArray;
  golds: NumberArray;
  classes: string[];
}

/** The lengths, scores and gold classes of a scorer's items, gathered one item at a time. */
export class LengthRows {
  private lengths = new NumberColumn();
  private scores = new NumberColumn();
  /** Each item's gold class as an index into `classes`, −1 for none: a code per item, not a string. */
  private golds = new NumberColumn();
  private readonly classes: string[] = [];
  private readonly codes = new Map<string, number>();

  add(length: number, score: number, gold: ScoreValue | undefined): void {
    this.lengths.push(length);
    this.scores.push(score);
    this.golds.push(gold === undefined ? -1 : this.code(String(gold)));
  }

  /**
   * Appends `later`, the items that come after this one's; its gold codes are mapped into this
   * table of classes (new classes after this one's, in `later`'s order, as one pass codes them).
   */
  merge(later: LengthRows): void {
    const codes = later.classes.map((label) => this.code(label));
    const golds = later.golds.values();
    for (let i = 0; i < golds.length; i += 1) this.golds.push(golds[i] === -1 ? -1 : codes[golds[i]!]!);
    this.lengths.merge(later.lengths);
    this.scores.merge(later.scores);
  }

  private code(label: string): number {
    return codeOf(this.classes, this.codes, label);
  }

  toState(): LengthRowsState {
    return {
      lengths: this.lengths.toState(),
      scores: this.scores.toState(),
      golds: this.golds.toState(),
      classes: [...this.classes],
    };
  }

  static fromState(state: LengthRowsState): LengthRows {
    const rows = new LengthRows();
    rows.lengths = NumberColumn.fromState(state.lengths);
    rows.scores = NumberColumn.fromState(state.scores);
    rows.golds = NumberColumn.fromState(state.golds);
    for (const label of state.classes) rows.code(label);
    return rows;
  }

  figures(): LengthBias {
    const lengths = this.lengths.values();
    const scores = this.scores.values();
    const golds = this.golds.values();
    const byGold = dict<Correlation>();
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
