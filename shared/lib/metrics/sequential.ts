/**
 * Anytime-valid confidence sequences for a mean, and the settling of a gate's conditions on
 * them: what lets a sequential gate stop scoring a variant as soon as its verdict is certain at
 * the gate's error level, whenever that happens, without paying for looking after every item.
 *
 * A confidence sequence (CS) at level α is a sequence of intervals [loₙ, hiₙ] that contain the
 * mean μ at every n at once with probability at least 1 − α: P(∃n: μ ∉ [loₙ, hiₙ]) ≤ α. A
 * fixed-n interval checked after every item would miss far more often than α; a CS may be
 * looked at after each item and stopped at any time, on any rule, and the interval at the
 * stopping time still covers μ with probability ≥ 1 − α.
 *
 * ## The method: empirical Bernstein with polynomial stitching
 *
 * Howard, Ramdas, McAuliffe & Sekhon (2021), "Time-uniform, nonparametric, nonasymptotic
 * confidence sequences", Annals of Statistics 49(2): the empirical-Bernstein CS (their
 * Theorem 4) with the polynomial stitched boundary (their equation (10)). Observations are
 * rescaled to yᵢ ∈ [0, 1] from their range [a, b].
 *
 *   prediction  ŷᵢ = (1/2 + y₁ + … + yᵢ₋₁) / i                 (uses only the items before i)
 *   variance    Vₙ = Σᵢ₌₁ⁿ (yᵢ − ŷᵢ)²                           (the CS's "intrinsic time")
 *
 * Theorem 4: for observations in [0, 1] with conditional means μᵢ = E[yᵢ | y₁ … yᵢ₋₁], and any
 * prediction ŷᵢ in [0, 1] made before seeing yᵢ, Sₙ = Σ (yᵢ − μᵢ) is sub-exponential with
 * variance process Vₙ and scale c = 1: exp(λSₙ − ψ(λ)Vₙ) is a supermartingale for each
 * λ ∈ [0, 1), ψ(λ) = −log(1 − λ) − λ (from Fan, Grama & Liu's inequality
 * exp(λξ − ψ(λ)ξ²) ≤ 1 + λξ for ξ ≥ −1). The same holds for −Sₙ. Being sub-exponential it is
 * sub-gamma with the same scale, which is what the stitched boundary needs.
 *
 * Equation (10), the polynomial stitched boundary, for intrinsic time v, crossing probability
 * α′, scale c, and parameters η > 1, s > 1, m > 0 (m: the intrinsic time from which the
 * boundary is tight; below m it is held at its value at m):
 *
 *   ℓ(v)   = s · log log(η · max(v, m) / m) + log(ζ(s) / (log η)ˢ) + log(1 / α′)
 *   k₁     = (η^¼ + η^−¼) / √2,   k₂ = (√η + 1) / 2
 *   B(v)   = √(k₁² · max(v, m) · ℓ(v) + (k₂ · c · ℓ(v))²) + k₂ · c · ℓ(v)
 *
 * with P(∃n: Sₙ ≥ B(Vₙ)) ≤ α′. Here η = 2 and s = 1.4 (the defaults of the authors' own
 * implementation, the confseq library's `poly_stitching_bound`, whose test value
 * B(v = 100; α′ = 0.05, m = 10, c = 3) = 64.48755 the unit tests check), c = 1, and α′ = α/2 on
 * each side, so the two-sided CS misses with probability at most α. B grows like
 * √(v · log log v): the half-width B/n shrinks like σ·√(log log n / n), which is slower than
 * a fixed-n interval's σ/√n only by the slowly growing factor, and adapts to the observed
 * variance (a 0.95 accuracy gives a CS about half as wide as a 0.5 one).
 *
 * ## Items drawn from a finite dataset
 *
 * A gate judges a variant on its figure over the dataset's N items, scored in a random order:
 * a sample drawn without replacement from a finite population whose mean μ is the figure a
 * full run would report. The conditional mean of the i-th item is then the mean of the items
 * not yet drawn, μᵢ = (Nμ − yₛ₍ᵢ₋₁₎) / (N − i + 1) with yₛ₍ᵢ₋₁₎ = y₁ + … + yᵢ₋₁ (the idea of
 * Waudby-Smith & Ramdas (2020), "Confidence sequences for sampling without replacement"). Σμᵢ
 * is linear in μ, so the same boundary |Σyᵢ − Σμᵢ| ≤ B(Vₙ) gives
 *
 *   Aₙ = Σᵢ₌₁ⁿ 1 / (N − i + 1),   Qₙ = Σᵢ₌₁ⁿ yₛ₍ᵢ₋₁₎ / (N − i + 1)
 *   μ ∈ [(Sₙ + Qₙ − B) / (N·Aₙ),  (Sₙ + Qₙ + B) / (N·Aₙ)]        (Sₙ = y₁ + … + yₙ)
 *
 * which is narrower than the i.i.d. interval (Sₙ ± B)/n and, once every item is scored
 * (n = N), is the exact mean: the CS then is the single point μ. Without a population size the
 * items are taken as independent draws with a common mean (an infinite population) and the CS
 * is (Sₙ ± B)/n, centred on the running mean.
 *
 * That centre, (Sₙ + Qₙ)/(N·Aₙ), weighs early items a little more than later ones; in a random
 * order it stays near the running mean, and where an order far from random puts the running
 * mean outside the interval, the interval is widened to include it (a wider interval covers
 * whatever the narrower one covers, so the CS stays valid and always contains the running mean).
 * Every interval is clipped to the observation range, which contains μ.
 *
 * ## Gates
 *
 * {@link settle} reads a gate's conditions off confidence sequences: a condition `mean ≥ t` is
 * met once lo ≥ t and failed once hi < t; `variant ≥ baseline + margin` is the same on the CS of
 * the paired per-item difference (variant − baseline on the same item, in [−1, 1] for 0/1
 * scores). The gate promotes when every condition is met and rejects as soon as one has failed
 * (a gate promotes only when all its conditions pass, so one failure settles it).
 *
 * Each side of a two-sided CS at level α misses with probability at most α/2, and a wrong
 * verdict needs a particular side to miss: a wrong promotion, the lower side of the one
 * condition the variant truly fails; a wrong rejection, the upper side of any of the k
 * conditions it truly meets. Built at {@link gateSequenceAlpha}(α, k) = 2α/k each, the
 * sequences keep P(wrong verdict) ≤ α (at most α/k for a wrong promotion, α for a wrong
 * rejection), whenever the gate stops.
 */

export interface ConfidenceSequenceOptions {
  /** The CS misses the mean at some n with probability at most alpha. In (0, 1). */
  alpha: number;
  /**
   * The range every observation lies in: [0, 1] (the default) for 0/1 scores and accuracies,
   * [−1, 1] for the per-item difference of two 0/1 scores.
   */
  range?: readonly [low: number, high: number];
  /**
   * N, the number of items in the dataset when items are drawn from it without replacement
   * (each at most once): the CS is then for the dataset's mean, and exact at n = N. Left out,
   * the observations are taken as independent draws with a common mean.
   */
  population?: number;
  /**
   * m, the intrinsic time (the variance sum V on the [0, 1] scale) from which the stitched
   * boundary is tight; before it, the boundary is held at B(m). Default
   * {@link DEFAULT_MIN_INTRINSIC_TIME}.
   */
  minIntrinsicTime?: number;
}

/** The CS after n observations; the figures are null when there are none (n = 0). */
export interface SequenceFigures {
  n: number;
  /** The running mean of the observations. */
  mean: number | null;
  lo: number | null;
  hi: number | null;
}

/** η, the ratio between the stitched boundary's epochs of intrinsic time. */
export const STITCHING_ETA = 2;
/** s, how the crossing probability is shared among the epochs (the k-th gets ∝ 1/kˢ). */
export const STITCHING_S = 1.4;
/** ζ(1.4), Riemann's zeta at s (the confseq library's boost::math::zeta(1.4) to binary64). */
const ZETA_S = 3.105547277977581;
/**
 * m: at an accuracy near 0.8 each 0/1 item adds about 0.16 to V, so V reaches 20 after about
 * 125 items. A gate is rarely settled sooner at the margins that matter (a few points), and a
 * larger m narrows the boundary over the few hundred to few thousand items after it, where
 * gates are settled. bench/sequential-gates.ts compares m from 1 to 50: 20 and 50 score about
 * as many items over its four variants (2,495 and 2,482 of 8,000), 20 stopping the clear cases
 * sooner and 50 the close ones; 1 and 5 score more.
 */
export const DEFAULT_MIN_INTRINSIC_TIME = 20;

const K1 = (STITCHING_ETA ** 0.25 + STITCHING_ETA ** -0.25) / Math.SQRT2;
const K2 = (Math.sqrt(STITCHING_ETA) + 1) / 2;
const LOG_ZETA_TERM = Math.log(ZETA_S / Math.log(STITCHING_ETA) ** STITCHING_S);

/**
 * B(v): the polynomial stitched boundary of Howard et al. (2021), equation (10), with η = 2 and
 * s = 1.4: a process sub-gamma with variance process V and scale `scale` crosses B(Vₙ) at some n
 * with probability at most `alpha` (one-sided).
 */
export function stitchedBoundary(
  v: number,
  alpha: number,
  {
    minIntrinsicTime = DEFAULT_MIN_INTRINSIC_TIME,
    scale = 1,
  }: { minIntrinsicTime?: number; scale?: number } = {},
): number {
  checkAlpha(alpha);
  if (!(minIntrinsicTime > 0 && Number.isFinite(minIntrinsicTime)))
    throw new RangeError(
      `the boundary's minimum intrinsic time must be a positive number, got ${minIntrinsicTime}`,
    );
  if (!(scale >= 0 && Number.isFinite(scale)))
    throw new RangeError(`the boundary's scale must be a finite number ≥ 0, got ${scale}`);
  if (!(v >= 0)) throw new RangeError(`intrinsic time is a variance sum, ≥ 0; got ${v}`);
  const u = Math.max(v, minIntrinsicTime);
  const ell =
    STITCHING_S * Math.log(Math.log((STITCHING_ETA * u) / minIntrinsicTime)) +
    LOG_ZETA_TERM +
    Math.log(1 / alpha);
  const linear = K2 * scale * ell;
  return Math.sqrt(K1 * K1 * u * ell + linear * linear) + linear;
}

/**
 * The level to build each condition's CS at so that a gate of `conditions` conditions gives a
 * wrong verdict with probability at most `alpha` (see the module's comment): 2α/k.
 */
export function gateSequenceAlpha(alpha: number, conditions: number): number {
  checkAlpha(alpha);
  if (!(Number.isInteger(conditions) && conditions >= 1))
    throw new RangeError(`a gate has at least one condition, got ${conditions}`);
  const each = (2 * alpha) / conditions;
  if (each >= 1)
    throw new RangeError(
      `a gate level of ${alpha} over ${conditions} condition(s) leaves no room for error control (2α/k ≥ 1); use alpha < ${conditions / 2}`,
    );
  return each;
}

/**
 * An anytime-valid CS for the mean of bounded observations, fed one observation at a time
 * (empirical Bernstein with polynomial stitching; see the module's comment). O(1) per update.
 */
export class MeanConfidenceSequence {
  readonly alpha: number;
  readonly range: readonly [number, number];
  readonly population: number | undefined;
  readonly minIntrinsicTime: number;
  private n = 0;
  /** On the [0, 1] scale: Σy, the variance sum V, and the without-replacement sums A and Q. */
  private sum = 0;
  private variance = 0;
  private weights = 0;
  private weightedSums = 0;
  private figures: SequenceFigures = { n: 0, mean: null, lo: null, hi: null };

  constructor({
    alpha,
    range = [0, 1],
    population,
    minIntrinsicTime = DEFAULT_MIN_INTRINSIC_TIME,
  }: ConfidenceSequenceOptions) {
    checkAlpha(alpha);
    const [low, high] = range;
    if (!(Number.isFinite(low) && Number.isFinite(high) && low < high))
      throw new RangeError(
        `the observations' range must be two finite numbers, low < high; got [${low}, ${high}]`,
      );
    if (population !== undefined && !(Number.isInteger(population) && population >= 1))
      throw new RangeError(`the population is a number of items, a whole number ≥ 1; got ${population}`);
    if (!(minIntrinsicTime > 0 && Number.isFinite(minIntrinsicTime)))
      throw new RangeError(`the minimum intrinsic time must be a positive number, got ${minIntrinsicTime}`);
    this.alpha = alpha;
    this.range = [low, high];
    this.population = population;
    this.minIntrinsicTime = minIntrinsicTime;
  }

  /** Adds one observation (in the range); the CS after it. */
  update(x: number): SequenceFigures {
    const [low, high] = this.range;
    if (!(Number.isFinite(x) && x >= low && x <= high))
      throw new RangeError(`an observation must be a number in [${low}, ${high}], got ${x}`);
    const N = this.population;
    if (N !== undefined && this.n >= N)
      throw new RangeError(
        `all ${N} items of the population have been observed; an item is drawn at most once`,
      );
    const y = (x - low) / (high - low);
    const i = this.n + 1;
    const predicted = (0.5 + this.sum) / i;
    this.variance += (y - predicted) ** 2;
    if (N !== undefined) {
      this.weights += 1 / (N - i + 1);
      this.weightedSums += this.sum / (N - i + 1);
    }
    this.sum += y;
    this.n = i;
    this.figures = this.compute();
    return this.figures;
  }

  /** The CS after the observations so far. */
  current(): SequenceFigures {
    return this.figures;
  }

  private compute(): SequenceFigures {
    const { n, sum } = this;
    const [low, high] = this.range;
    const back = (y: number) => low + (high - low) * Math.min(1, Math.max(0, y));
    const mean = back(sum / n);
    const N = this.population;
    if (N !== undefined && n === N) return { n, mean, lo: mean, hi: mean };
    const radius = stitchedBoundary(this.variance, this.alpha / 2, {
      minIntrinsicTime: this.minIntrinsicTime,
    });
    const [centre, scale] = N === undefined ? [sum, n] : [sum + this.weightedSums, N * this.weights];
    const lo = back((centre - radius) / scale);
    const hi = back((centre + radius) / scale);
    // Without replacement the centre is a weighted mean, not the running one; the interval is
    // widened to take the running mean in where an order far from random leaves it out.
    return { n, mean, lo: Math.min(lo, mean), hi: Math.max(hi, mean) };
  }
}

/** What a condition compares: the CS's side on the threshold. `==` cannot be settled by a CS. */
export type SequentialOp = '>=' | '>' | '<=' | '<';

/**
 * A condition of a gate, on the CS of the figure it names:
 * - `threshold`: the mean (an accuracy, a pass rate) `op` `value`, e.g. accuracy ≥ 0.8;
 * - `baseline`: the variant `op` the baseline + `margin`, read on the CS of the paired per-item
 *   difference (variant − baseline), e.g. ≥ baseline − 0.02 is `op: '>='`, `margin: −0.02`.
 */
export type SequentialCondition =
  | { kind: 'threshold'; label?: string; figures: SequenceFigures; op: SequentialOp; value: number }
  | { kind: 'baseline'; label?: string; figures: SequenceFigures; op: SequentialOp; margin: number };

export type ConditionState = 'met' | 'failed' | 'undecided';

export interface Settlement {
  verdict: 'promote' | 'reject' | 'undecided';
  conditions: { label: string; state: ConditionState }[];
}

/** Whether the interval [lo, hi] lies wholly where `x op against` holds (met), wholly outside it (failed), or across. */
export function conditionState(
  { lo, hi }: Pick<SequenceFigures, 'lo' | 'hi'>,
  op: SequentialOp,
  against: number,
): ConditionState {
  if (!Number.isFinite(against))
    throw new RangeError(`a condition compares with a finite number, got ${against}`);
  if (lo === null || hi === null) return 'undecided';
  switch (op) {
    case '>=':
      return lo >= against ? 'met' : hi < against ? 'failed' : 'undecided';
    case '>':
      return lo > against ? 'met' : hi <= against ? 'failed' : 'undecided';
    case '<=':
      return hi <= against ? 'met' : lo > against ? 'failed' : 'undecided';
    case '<':
      return hi < against ? 'met' : lo >= against ? 'failed' : 'undecided';
    default:
      throw new RangeError(
        `a sequential gate settles >, >=, < and <= only; ${JSON.stringify(op)} cannot be settled by an interval`,
      );
  }
}

/**
 * The gate's verdict so far: `promote` once every condition is met, `reject` as soon as one has
 * failed, `undecided` otherwise (and always with no conditions or a condition with no data).
 */
export function settle(conditions: readonly SequentialCondition[]): Settlement {
  if (conditions.length === 0) throw new RangeError('a gate to settle needs at least one condition');
  const states = conditions.map((c, i) => {
    const against = c.kind === 'threshold' ? c.value : c.margin;
    const label =
      c.label ??
      (c.kind === 'threshold'
        ? `mean ${c.op} ${c.value}`
        : `variant ${c.op} baseline ${c.margin < 0 ? '−' : '+'} ${Math.abs(c.margin)}`);
    if (c.kind !== 'threshold' && c.kind !== 'baseline')
      throw new RangeError(
        `condition ${i + 1}: a condition is a threshold or a comparison with the baseline`,
      );
    return { label, state: conditionState(c.figures, c.op, against) };
  });
  const verdict = states.some((s) => s.state === 'failed')
    ? 'reject'
    : states.every((s) => s.state === 'met')
      ? 'promote'
      : 'undecided';
  return { verdict, conditions: states };
}

function checkAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must be in (0, 1), got ${alpha}`);
}
