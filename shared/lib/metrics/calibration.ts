/**
 * Calibrated thresholds for a number scorer against a binary gold: the threshold that best
 * separates the classes (by balanced accuracy) on all the data, and an honest estimate of the
 * balanced accuracy such a chosen threshold reaches on items it was not chosen on (k-fold
 * cross-validation). A scorer can rank items well (high ROC-AUC) and still sit on the wrong
 * side of its declared threshold; these two figures tell the two apart.
 */
import { balancedAccuracy } from './agreement.js';
import { mulberry32 } from './stats.js';

/** Folds of the cross-validation unless told otherwise. */
export const DEFAULT_FOLDS = 5;
/** Seed of the fold assignment: fixed, so the figure is the same in every run and shell. */
const FOLD_SEED = 1;

/**
 * The threshold (a value at or above it predicts positive) that maximises balanced accuracy
 * over `values` against `positive`, and that accuracy; null when a class is missing.
 *
 * Candidates: the lowest distinct value (everything predicted positive) and the midpoint
 * between each pair of neighbouring distinct values (sorted ascending). Predicting nothing
 * positive scores exactly 0.5 as everything positive does, so the upper extreme never wins and
 * is left out. Ties (two candidates with the same balanced accuracy) go to the lowest
 * threshold, the first met in the ascending sweep, so the choice never depends on input order.
 */
export function bestThreshold(
  values: readonly number[],
  positive: readonly boolean[],
): { threshold: number; balancedAccuracy: number } | null {
  if (values.length !== positive.length) throw new Error('bestThreshold: values and labels differ in length');
  const nPos = positive.filter(Boolean).length;
  const nNeg = positive.length - nPos;
  if (nPos === 0 || nNeg === 0) return null;
  const order = values.map((_, i) => i).sort((a, b) => values[a]! - values[b]!);
  // Threshold at the lowest value: every positive right, every negative wrong.
  let truePos = nPos;
  let trueNeg = 0;
  let best = { threshold: values[order[0]!]!, balancedAccuracy: 0.5 };
  let i = 0;
  while (i < order.length) {
    const value = values[order[i]!]!;
    // Every item at this value moves below the next candidate threshold.
    while (i < order.length && values[order[i]!] === value) {
      if (positive[order[i]!]) truePos -= 1;
      else trueNeg += 1;
      i += 1;
    }
    if (i === order.length) break;
    const score = (truePos / nPos + trueNeg / nNeg) / 2;
    if (score > best.balancedAccuracy) {
      best = { threshold: (value + values[order[i]!]!) / 2, balancedAccuracy: score };
    }
  }
  return best;
}

/**
 * Each item's fold (0..k-1), stratified: positives and negatives are each shuffled with a
 * fixed seed and dealt round-robin (positives first, negatives carrying on where they
 * stopped), so every fold holds its share of each class and the same items always get the
 * same folds. Items are known by their position in report order (by dataset row).
 */
export function stratifiedFolds(positive: readonly boolean[], k: number, seed = FOLD_SEED): number[] {
  const random = mulberry32(seed);
  const folds = new Array<number>(positive.length);
  let next = 0;
  for (const side of [true, false]) {
    const members = positive.flatMap((p, i) => (p === side ? [i] : []));
    // Fisher–Yates.
    for (let j = members.length - 1; j > 0; j -= 1) {
      const r = Math.floor(random() * (j + 1));
      [members[j], members[r]] = [members[r]!, members[j]!];
    }
    for (const index of members) {
      folds[index] = next % k;
      next += 1;
    }
  }
  return folds;
}

/**
 * Cross-validated balanced accuracy: for each fold, the threshold {@link bestThreshold}
 * chooses on the other folds predicts the fold's items; the balanced accuracy of all those
 * held-out predictions pooled. Null when there are fewer items than folds, a class is missing,
 * or some fold's training part lacks a class (a class with a single item).
 */
export function cvBalancedAccuracy(
  values: readonly number[],
  positive: readonly boolean[],
  folds: readonly number[],
  k: number,
): number | null {
  if (values.length < k || k < 2) return null;
  const predicted = new Array<boolean>(values.length);
  for (let fold = 0; fold < k; fold += 1) {
    const train = values.flatMap((_, i) => (folds[i] === fold ? [] : [i]));
    const chosen = bestThreshold(
      train.map((i) => values[i]!),
      train.map((i) => positive[i]!),
    );
    if (!chosen) return null;
    for (let i = 0; i < values.length; i += 1)
      if (folds[i] === fold) predicted[i] = values[i]! >= chosen.threshold;
  }
  return balancedAccuracy(predicted, positive);
}

/**
 * The calibrated figures of a number scorer against a binary gold: the threshold chosen on all
 * the data, and the k-fold cross-validated balanced accuracy (k = {@link DEFAULT_FOLDS}); both
 * null when a class is missing or there are fewer items than folds.
 */
export function calibration(
  values: readonly number[],
  positive: readonly boolean[],
  k = DEFAULT_FOLDS,
): { calibratedThreshold: number | null; cvBalancedAccuracy: number | null } {
  const all = values.length < k ? null : bestThreshold(values, positive);
  return {
    calibratedThreshold: all?.threshold ?? null,
    cvBalancedAccuracy: all ? cvBalancedAccuracy(values, positive, stratifiedFolds(positive, k), k) : null,
  };
}
