/**
 * Closed-form intervals for proportions, with good coverage at small n where the percentile
 * bootstrap has none (3 of 3 right gives the bootstrap [1, 1]; Wilson gives [0.44, 1]).
 *
 * - {@link wilson}: the Wilson score interval of one proportion (Wilson 1927).
 * - {@link newcombePaired}: the difference of two proportions measured on the same items
 *   (candidate − base), Newcombe's method 10 (Newcombe 1998, "Improved confidence intervals for
 *   the difference between binomial proportions based on paired data", Statistics in Medicine
 *   17:2635–2650): the two Wilson intervals combined with the phi correlation of the pairs.
 *
 * Both are null when there is no item (0/0 has no interval).
 *
 * Where no closed form fits, a figure's interval is the percentile bootstrap, and that interval
 * is too narrow on few items (a resample of 5 items has few distinct values): it is withheld
 * below {@link MIN_ITEMS_FOR_INTERVAL}, a minimum per figure measured by the coverage bench
 * (bench/coverage.ts), and the figure says why ({@link TOO_FEW_FOR_INTERVAL}).
 */
import { metricSpec, metrics } from '../../model/metrics.js';
import type { Interval } from '../../model/report.js';
import { normalQuantile } from './stats.js';

/** The normal quantile of a two-sided interval at level 1 − alpha. */
export function zOf(alpha = 0.05): number {
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must be in (0, 1), got ${alpha}`);
  return alpha === 0.05 ? Z95 : normalQuantile(1 - alpha / 2);
}

const Z95 = 1.959963984540054;

/** The Wilson score interval of `successes` out of `n`; null when n is 0. */
export function wilson(successes: number, n: number, alpha = 0.05): Interval | null {
  if (!(Number.isFinite(successes) && Number.isFinite(n)) || successes < 0 || successes > n)
    throw new RangeError(`wilson: successes must be within 0..n, got ${successes} of ${n}`);
  if (n === 0) return null;
  const z = zOf(alpha);
  const p = successes / n;
  const z2 = z * z;
  const denominator = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denominator;
  const half = (z / denominator) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // Exact ends at 0 and n (the formula gives them up to rounding).
  return [successes === 0 ? 0 : Math.max(0, centre - half), successes === n ? 1 : Math.min(1, centre + half)];
}

/**
 * The interval the product gives a proportion (accuracy, binary accuracy, pass rate): Wilson's
 * score interval with a continuity correction (Newcombe 1998, "Two-sided confidence intervals for
 * the single proportion", Statistics in Medicine 17:857–872, method 4). Plain Wilson dips below
 * 93% exact coverage near the ends of the range at small n (91.4% at n = 10, p = 0.95); with the
 * correction it covers at least 95.4% at every n and true value the coverage bench measures.
 * Null when n is 0.
 */
export function proportionInterval(successes: number, n: number, alpha = 0.05): Interval | null {
  if (!(Number.isFinite(successes) && Number.isFinite(n)) || successes < 0 || successes > n)
    throw new RangeError(`proportionInterval: successes must be within 0..n, got ${successes} of ${n}`);
  if (n === 0) return null;
  const z = zOf(alpha);
  const z2 = z * z;
  const p = successes / n;
  const denominator = 2 * (n + z2);
  const lower =
    successes === 0
      ? 0
      : (2 * n * p + z2 - 1 - z * Math.sqrt(z2 - 2 - 1 / n + 4 * p * (n * (1 - p) + 1))) / denominator;
  const upper =
    successes === n
      ? 1
      : (2 * n * p + z2 + 1 + z * Math.sqrt(z2 + 2 - 1 / n + 4 * p * (n * (1 - p) - 1))) / denominator;
  return [Math.max(0, lower), Math.min(1, upper)];
}

/**
 * The paired 2×2 table of one 0/1 outcome on the same items: `both` (1 on both sides),
 * `baseOnly` (1 on the base side only), `candidateOnly`, `neither`.
 */
export interface PairedCounts {
  both: number;
  baseOnly: number;
  candidateOnly: number;
  neither: number;
}

/**
 * Newcombe's interval (method 10) for candidate rate − base rate over the same items; null when
 * there is no item. With p₁ the candidate's rate, p₂ the base's, [l₁, u₁] and [l₂, u₂] their
 * Wilson intervals and φ the phi coefficient of the table, continuity-corrected as Newcombe
 * recommends (A = both·neither − baseOnly·candidateOnly: (A − n/2)/√margins when A > n/2, 0 when
 * 0 ≤ A ≤ n/2, A/√margins when A < 0; 0 when a margin is empty):
 * L = Δ − √((p₁−l₁)² − 2φ(p₁−l₁)(u₂−p₂) + (u₂−p₂)²),
 * U = Δ + √((u₁−p₁)² − 2φ(u₁−p₁)(p₂−l₂) + (p₂−l₂)²).
 */
export function newcombePaired(counts: PairedCounts, alpha = 0.05): Interval | null {
  const { both: a, baseOnly: b, candidateOnly: c, neither: d } = counts;
  for (const x of [a, b, c, d])
    if (!(Number.isInteger(x) && x >= 0))
      throw new RangeError(`newcombePaired: counts must be whole numbers ≥ 0, got ${JSON.stringify(counts)}`);
  const n = a + b + c + d;
  if (n === 0) return null;
  const p1 = (a + c) / n;
  const p2 = (a + b) / n;
  const [l1, u1] = wilson(a + c, n, alpha)!;
  const [l2, u2] = wilson(a + b, n, alpha)!;
  const phi = correctedPhi(a, b, c, d);
  const delta = p1 - p2;
  const lower =
    delta - Math.sqrt(Math.max(0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2));
  const upper =
    delta + Math.sqrt(Math.max(0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2));
  return [Math.max(-1, lower), Math.min(1, upper)];
}

/** φ of the paired table with Newcombe's correction (see {@link newcombePaired}). */
function correctedPhi(a: number, b: number, c: number, d: number): number {
  const n = a + b + c + d;
  const margins = (a + b) * (c + d) * (a + c) * (b + d);
  if (margins === 0) return 0;
  const cross = a * d - b * c;
  if (cross > n / 2) return (cross - n / 2) / Math.sqrt(margins);
  return cross >= 0 ? 0 : cross / Math.sqrt(margins);
}

/** What a figure whose interval is withheld for its few items says (MetricValue `reason`). */
export const TOO_FEW_FOR_INTERVAL = 'too few items for an interval';

/**
 * The fewest items a figure's percentile-bootstrap interval is given on: below it the figure
 * has no interval and says {@link TOO_FEW_FOR_INTERVAL}. Each is the smallest n of the coverage
 * bench's grid (3, 5, 10, 20, 50, 200, 1000) from which the interval covered at least 93% of the
 * time (nominal 95%; a simulated cell within two Monte Carlo standard errors of it) in every
 * setting it was measured in (docs/performance.md). The percentile bootstrap is poor near the
 * ends of a figure's range (a κ of 0.95 on 50 items: 81%), hence the high minimums of the F1s
 * and kappas. Proportions (Wilson) need no minimum.
 */
export const MIN_ITEMS_FOR_INTERVAL: Readonly<Record<string, number>> = Object.freeze(
  Object.fromEntries(
    metrics().flatMap(([key, spec]) =>
      spec.minItemsForInterval === undefined ? [] : [[key, spec.minItemsForInterval] as const],
    ),
  ),
);

/**
 * Figures beside the metric table's that take another's minimum: the judge's alpha against the
 * annotators is an alpha.
 */
const SAME_AS: Readonly<Record<string, string>> = { judgeAlpha: 'alpha' };

/** The fewest items a figure's interval is given on (the metric table's); undefined: any n. */
function minimumOf(figure: string): number | undefined {
  return metricSpec(SAME_AS[figure] ?? figure)?.minItemsForInterval;
}

/** Whether a bootstrap figure over `n` items gets an interval (see {@link MIN_ITEMS_FOR_INTERVAL}). */
export function bootstrapAllowed(figure: string, n: number): boolean {
  const min = minimumOf(figure);
  return min === undefined || n >= min;
}

/** The reason a bootstrap figure over `n` items has no interval, or undefined when it has one. */
export function withheldReason(figure: string, n: number): string | undefined {
  if (bootstrapAllowed(figure, n)) return undefined;
  return `${TOO_FEW_FOR_INTERVAL} (n ${n} < ${minimumOf(figure)})`;
}
