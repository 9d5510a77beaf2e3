/**
 * How well scores agree with gold values: error, correlation, ranking and binary agreement.
 * Pure functions over paired arrays (value i and target i are the same item). A statistic that
 * is undefined on its input (no items, a constant side, a class that never occurs) is `null`,
 * never NaN and never 0. Arrays of different lengths are a programmer error: `RangeError`.
 */

function sameLength(a: ArrayLike<unknown>, b: ArrayLike<unknown>, name: string): void {
  if (a.length !== b.length)
    throw new RangeError(`${name}: arrays differ in length (${a.length} vs ${b.length})`);
}

/**
 * 1-based ranks in input order; tied values share the average of the ranks they span
 * ([10, 20, 20, 30] → [1, 2.5, 2.5, 4]), as scipy's `rankdata(method="average")`.
 */
export function averageRanks(values: ArrayLike<number>): Float64Array {
  // The values sorted (a typed array sorted in place, outside the JavaScript heap: a million
  // items are ranked at once), then each value's rank from where its run of equal values starts
  // and ends in that order.
  const sorted = new Float64Array(values.length);
  sorted.set(values);
  sorted.sort();
  const ranks = new Float64Array(values.length);
  for (let i = 0; i < values.length; i += 1) {
    const v = values[i]!;
    const start = firstAtLeast(sorted, v);
    const end = firstAtLeast(sorted, v, true) - 1;
    ranks[i] = (start + end) / 2 + 1;
  }
  return ranks;
}

/** The first index of `sorted` holding a value ≥ `v` (> `v` when `above`), or its length. */
function firstAtLeast(sorted: Float64Array, v: number, above = false): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (above ? sorted[mid]! <= v : sorted[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Mean of |value − target|; null when empty. */
export function meanAbsoluteError(values: ArrayLike<number>, targets: ArrayLike<number>): number | null {
  sameLength(values, targets, 'meanAbsoluteError');
  if (values.length === 0) return null;
  let total = 0;
  for (let i = 0; i < values.length; i += 1) total += Math.abs(values[i]! - targets[i]!);
  return total / values.length;
}

/** Pearson's r, clamped to [−1, 1]; null when n < 2 or either side is constant. */
export function pearson(xs: ArrayLike<number>, ys: ArrayLike<number>): number | null {
  sameLength(xs, ys, 'pearson');
  const n = xs.length;
  if (n < 2) return null;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i += 1) {
    mx += xs[i]!;
    my += ys[i]!;
  }
  mx /= n;
  my /= n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i += 1) {
    const dx = xs[i]! - mx;
    const dy = ys[i]! - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx === 0 || syy === 0) return null;
  return Math.max(-1, Math.min(1, sxy / Math.sqrt(sxx * syy)));
}

/** Spearman's ρ: Pearson's r of the average ranks (ties handled as scipy's `spearmanr`); null as `pearson`. */
export function spearman(xs: ArrayLike<number>, ys: ArrayLike<number>): number | null {
  sameLength(xs, ys, 'spearman');
  return pearson(averageRanks(xs), averageRanks(ys));
}

/**
 * ROC-AUC: the probability that a random positive scores above a random negative, ties
 * counting one half (the Mann–Whitney U over n₊·n₋), from average ranks in O(n log n). Null
 * when there are no positives or no negatives.
 */
export function rocAuc(scores: ArrayLike<number>, positives: ArrayLike<boolean>): number | null {
  sameLength(scores, positives, 'rocAuc');
  const ranks = averageRanks(scores);
  let nPositive = 0;
  let rankSum = 0;
  for (let i = 0; i < scores.length; i += 1) {
    if (!positives[i]) continue;
    nPositive += 1;
    rankSum += ranks[i]!;
  }
  const nNegative = scores.length - nPositive;
  if (nPositive === 0 || nNegative === 0) return null;
  return (rankSum - (nPositive * (nPositive + 1)) / 2) / (nPositive * nNegative);
}

/**
 * Balanced accuracy: the mean recall of the classes present in `actual` (sklearn's
 * `balanced_accuracy_score`; with one class present it is that class's recall). Null when empty.
 */
export function balancedAccuracy(predicted: ArrayLike<boolean>, actual: ArrayLike<boolean>): number | null {
  sameLength(predicted, actual, 'balancedAccuracy');
  const hits = [0, 0];
  const totals = [0, 0];
  for (let i = 0; i < actual.length; i += 1) {
    const k = actual[i] ? 1 : 0;
    totals[k]! += 1;
    if (predicted[i] === actual[i]) hits[k]! += 1;
  }
  const recalls = [0, 1].filter((k) => totals[k]! > 0).map((k) => hits[k]! / totals[k]!);
  return recalls.length === 0 ? null : recalls.reduce((a, b) => a + b, 0) / recalls.length;
}

/**
 * Cohen's kappa with quadratic weights between scores and gold on a numeric scale (an integer
 * range such as 1–5): 1 − Σ (x − y)² / Σ_{i, j} (x_i − y_j)² / n, the squared misses against
 * those expected if scores and gold were paired at random. On integer values it equals the
 * kappa of the confusion matrix with weights (i − j)² / (k − 1)² (the scale's width cancels
 * out). Null when empty; 1 when every value on both sides is one and the same number (nothing
 * disagrees, and nothing could: Cohen's kappa's own convention there).
 */
export function quadraticWeightedKappa(values: ArrayLike<number>, targets: ArrayLike<number>): number | null {
  sameLength(values, targets, 'quadraticWeightedKappa');
  const n = values.length;
  if (n === 0) return null;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i += 1) {
    mx += values[i]!;
    my += targets[i]!;
  }
  mx /= n;
  my /= n;
  // Σ_{i, j} (x_i − y_j)² / n = Σ (x − x̄)² + Σ (y − ȳ)² + n·(x̄ − ȳ)², summed from centred values.
  let observed = 0;
  let expected = n * (mx - my) ** 2;
  for (let i = 0; i < n; i += 1) {
    const x = values[i]!;
    const y = targets[i]!;
    observed += (x - y) ** 2;
    expected += (x - mx) ** 2 + (y - my) ** 2;
  }
  if (expected <= 0) return 1;
  return Math.max(-1, Math.min(1, 1 - observed / expected));
}
