/**
 * Which unlabelled items to send to a person for a gold label, so that the prediction-powered
 * estimate (see ppi.ts) narrows the most for the labels spent, and stays unbiased.
 *
 * Active statistical inference (Zrnic & Candès, 2024): label an item with probability πᵢ that
 * grows with how unsure the judge is about it, and weight each label by 1/πᵢ. The variance of
 * the weighted rectifier Σ (Yᵢ − Ŷᵢ)/πᵢ is smallest when πᵢ ∝ √E[(Yᵢ − Ŷᵢ)² | what is known]:
 * the expected error of the judge's verdict on that item. Each item's uncertainty uᵢ stands for
 * that root expected error (see label-uncertainty.ts for how it is read from a run).
 *
 * Probabilities. With N candidates, a label budget n and a floor share τ ∈ (0, 1]:
 *
 *   qᵢ = (1 − τ) · uᵢ / Σu + τ / N          (qᵢ = 1/N for every item when Σu = 0)
 *   πᵢ = min(1, c · qᵢ), with c the one constant making Σπ = n
 *
 * c is found by capping: start with c = n, fix every item with c·qᵢ ≥ 1 at πᵢ = 1, set
 * c = (n − #fixed) / Σ_{free} q, and repeat until no free item reaches 1. c never decreases
 * (an item is fixed only when its share was already above 1/c), so every πᵢ ≥ min(1, n·τ/N):
 * the uniform floor keeps every item's probability above 0, which the 1/π weights need to stay
 * unbiased (an item that could never be chosen would be missing from the estimate). With
 * n ≥ N every item is chosen (π = 1).
 *
 * Sampling. Randomized systematic sampling with probabilities proportional to size: the items
 * are put in a random order, laid end to end on [0, n) as intervals of length πᵢ, one uniform
 * start u ∈ [0, 1) is drawn, and the items whose interval holds one of the points u, u + 1, …,
 * u + n − 1 are chosen. The points are 1 apart and every interval is at most 1 long, so an item
 * is hit at most once and exactly with probability πᵢ (the share of starts landing in its
 * interval): exactly n items are chosen, without replacement, each with its first-order
 * inclusion probability exactly πᵢ whatever the order. (Pairs of items can have probability 0 of
 * being chosen together; the 1/π-weighted mean needs only the first-order probabilities.)
 */
import { mulberry32 } from './stats.js';

/** The floor share τ when none is given: a fifth of the budget is spread uniformly. */
export const DEFAULT_FLOOR = 0.2;

/**
 * Each candidate's probability of being chosen for a label (see the module comment): they sum
 * to min(n, N), each is in (0, 1], and each is at least min(1, n·floor/N).
 */
export function inclusionProbabilities(
  uncertainty: readonly number[],
  n: number,
  floor = DEFAULT_FLOOR,
): number[] {
  if (!Number.isInteger(n) || n < 1) throw new Error(`the label budget must be a positive integer, not ${n}`);
  if (!(floor > 0 && floor <= 1)) throw new Error(`the floor share must be in (0, 1], not ${floor}`);
  for (const u of uncertainty) {
    if (!(Number.isFinite(u) && u >= 0))
      throw new Error(`an uncertainty must be a finite number ≥ 0, not ${u}`);
  }
  const N = uncertainty.length;
  if (N === 0) return [];
  if (n >= N) return uncertainty.map(() => 1);
  const total = uncertainty.reduce((s, u) => s + u, 0);
  const q = uncertainty.map((u) => (total > 0 ? (1 - floor) * (u / total) + floor / N : 1 / N));
  const fixed = new Array<boolean>(N).fill(false);
  let nFixed = 0;
  let c = n;
  for (;;) {
    let grew = false;
    for (let i = 0; i < N; i += 1) {
      if (!fixed[i] && c * q[i]! >= 1) {
        fixed[i] = true;
        nFixed += 1;
        grew = true;
      }
    }
    if (!grew) break;
    let free = 0;
    for (let i = 0; i < N; i += 1) if (!fixed[i]) free += q[i]!;
    // Every item fixed: the budget is at least the number of items (handled above), so some
    // item always stays free here; guard anyway against rounding.
    if (free <= 0) break;
    c = (n - nFixed) / free;
  }
  return q.map((qi, i) => (fixed[i] ? 1 : Math.min(1, c * qi)));
}

/**
 * The items (their indices into `probabilities`) that the points u, u + 1, … hit when the items
 * are laid end to end in `order` (see the module comment). `start` is u ∈ [0, 1).
 */
export function systematicPoints(
  probabilities: readonly number[],
  order: readonly number[],
  start: number,
): number[] {
  if (!(start >= 0 && start < 1)) throw new Error(`the start must be in [0, 1), not ${start}`);
  const total = probabilities.reduce((s, p) => s + p, 0);
  // The sum is a whole number up to rounding: that many points.
  const points = Math.round(total);
  const chosen: number[] = [];
  let k = 0;
  let end = 0;
  for (const i of order) {
    const begin = end;
    end += probabilities[i]!;
    // The last interval ends at the rounded total, so rounding cannot drop the last point.
    const stop = i === order[order.length - 1] ? points : end;
    if (k < points && start + k >= begin && start + k < stop) {
      chosen.push(i);
      k += 1;
    }
  }
  return chosen;
}

export interface LabelSample {
  /** The chosen items' indices, in the order they were laid out (a random order). */
  chosen: number[];
  /** Every candidate's inclusion probability (the chosen ones' go into the exported CSV as `p`). */
  probabilities: number[];
}

/**
 * Chooses min(n, N) of the N candidates without replacement, each with its inclusion
 * probability (see {@link inclusionProbabilities}), by randomized systematic sampling with the
 * seeded generator: the same uncertainties, budget, floor and seed choose the same items.
 */
export function sampleForLabels(
  uncertainty: readonly number[],
  n: number,
  seed: number,
  floor = DEFAULT_FLOOR,
): LabelSample {
  const probabilities = inclusionProbabilities(uncertainty, n, floor);
  const random = mulberry32(seed);
  const order = probabilities.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return { chosen: systematicPoints(probabilities, order, random()), probabilities };
}
