/**
 * How well scores agree with gold values: error, correlation (Pearson, Spearman, Kendall's τ-b),
 * ranking and binary agreement.
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
 * when there are no positives or no negatives. `positives`: booleans, or 1 and 0.
 */
export function rocAuc(scores: ArrayLike<number>, positives: ArrayLike<boolean | number>): number | null {
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
 * Both sides booleans, or both 1 and 0.
 */
export function balancedAccuracy<T extends boolean | number>(
  predicted: ArrayLike<T>,
  actual: ArrayLike<T>,
): number | null {
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
 * out). Null when empty, and when every value on both sides is one and the same number: the
 * expected disagreement is 0 and the formula 0/0 (nothing disagrees, but nothing could).
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
  if (expected <= 0) return null;
  return Math.max(-1, Math.min(1, 1 - observed / expected));
}

/**
 * Kendall's τ-b, ties on either side corrected for: (concordant − discordant pairs) /
 * √((n₀ − n₁)(n₀ − n₂)), with n₀ = n(n − 1)/2 pairs, n₁ the pairs tied on x and n₂ those tied
 * on y (scipy's `kendalltau`, `variant="b"`). In O(n log n) by Knight (1966), "A computer method
 * for calculating Kendall's tau with ungrouped data" (JASA 61:436–439): sort by x (then y), count
 * the ties on x and on both; then merge-sort y counting the swaps a stable sort makes, which are
 * the discordant pairs; concordant − discordant = n₀ − n₁ − n₂ + n₃ − 2·swaps, with n₃ the
 * pairs tied on both. Null when n < 2 or either side is constant (the formula is 0/0).
 */
export function kendallTauB(xs: ArrayLike<number>, ys: ArrayLike<number>): number | null {
  sameLength(xs, ys, 'kendallTauB');
  const n = xs.length;
  if (n < 2) return null;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i += 1) order[i] = i;
  order.sort((a, b) => xs[a]! - xs[b]! || ys[a]! - ys[b]!);
  let y = new Float64Array(n);
  for (let i = 0; i < n; i += 1) y[i] = ys[order[i]!]!;
  // Ties on x (n₁) and on x and y together (n₃), from runs in the sorted order.
  let tiedX = 0;
  let tiedBoth = 0;
  for (let i = 0, runX = 1, runBoth = 1; i < n; i += 1) {
    const last = i === n - 1;
    const sameX = !last && xs[order[i + 1]!] === xs[order[i]!];
    const sameBoth = sameX && y[i + 1] === y[i];
    if (sameBoth) runBoth += 1;
    else {
      tiedBoth += (runBoth * (runBoth - 1)) / 2;
      runBoth = 1;
    }
    if (sameX) runX += 1;
    else {
      tiedX += (runX * (runX - 1)) / 2;
      runX = 1;
    }
  }
  // Bottom-up merge sort of y; an element taken from the right half passes every element left
  // in the left half, each a discordant pair (equal values are taken from the left: no swap).
  let swaps = 0;
  let buffer = new Float64Array(n);
  for (let width = 1; width < n; width *= 2) {
    for (let start = 0; start < n; start += 2 * width) {
      const mid = Math.min(start + width, n);
      const end = Math.min(start + 2 * width, n);
      let i = start;
      let j = mid;
      let k = start;
      while (i < mid && j < end) {
        if (y[i]! <= y[j]!) buffer[k++] = y[i++]!;
        else {
          swaps += mid - i;
          buffer[k++] = y[j++]!;
        }
      }
      while (i < mid) buffer[k++] = y[i++]!;
      while (j < end) buffer[k++] = y[j++]!;
    }
    [y, buffer] = [buffer, y];
  }
  // Ties on y (n₂), from runs in y sorted.
  let tiedY = 0;
  for (let i = 0, run = 1; i < n; i += 1) {
    if (i < n - 1 && y[i + 1] === y[i]) run += 1;
    else {
      tiedY += (run * (run - 1)) / 2;
      run = 1;
    }
  }
  const pairs = (n * (n - 1)) / 2;
  const denominator = (pairs - tiedX) * (pairs - tiedY);
  if (denominator <= 0) return null;
  const difference = pairs - tiedX - tiedY + tiedBoth - 2 * swaps;
  return Math.max(-1, Math.min(1, difference / Math.sqrt(denominator)));
}
