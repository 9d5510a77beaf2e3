/**
 * Prediction-powered inference for a mean: many judge labels and a few gold labels combined into
 * an estimate that is unbiased whatever the judge's bias, with a normal (z) confidence interval
 * that is valid for it. Two estimators, one for each way the gold labels can have been chosen:
 *
 * - the labelled rows are a simple random sample of the rows (`dataset.partialGold`, a gold
 *   file without `p`): PPI++ with power tuning (Angelopoulos, Duchi & Zrnic 2023), below;
 * - some labels were chosen with known, unequal probabilities (a gold file with `p`, from
 *   `assay label`): active statistical inference (Zrnic & Candès 2024), further below.
 *
 * A share of a label is the mean of a 0/1 indicator (1 where the row has the label), so the same
 * functions give a prevalence; a numeric gold (a score) gives its mean.
 *
 * PPI++ (n labelled rows with gold Yᵢ and judge Ŷᵢ; N unlabelled rows with judge Ỹⱼ only;
 * weights wᵢ, w̃ⱼ, each set rescaled to sum to its own count, all 1 when not given):
 *
 *   estimate   θ̂_λ = (1/N) Σ w̃ⱼ·λ·Ỹⱼ + (1/n) Σ wᵢ·(Yᵢ − λ·Ŷᵢ)
 *   variance   σ̂² = Var(w̃·λ·Ỹ) / N + Var(w·(Y − λ·Ŷ)) / n        (Var: population, 1/count)
 *   interval   θ̂_λ ± z₁₋α/₂ · σ̂
 *
 * λ = 0 is the classical estimate (gold only); λ = 1 is plain PPI. Unless λ is given, it is
 * power-tuned (the variance-minimising λ, estimated from the data) and clipped to [0, 1]:
 *
 *   θ₁ = the λ = 1 estimate;  gᵢ = wᵢ(Yᵢ − θ₁),  ĝᵢ = wᵢ(Ŷᵢ − θ₁),  g̃ⱼ = w̃ⱼ(Ỹⱼ − θ₁)
 *   λ̂ = Cov(g, ĝ) / ((1 + n/N) · S²(ĝ ∪ g̃))
 *
 * where Cov is the population covariance over the labelled rows and S² the sample variance
 * (1/(count − 1)) over the labelled and unlabelled judge terms together. These are the formulas
 * of the reference implementation, ppi_py (`ppi_mean_pointestimate`, `ppi_mean_ci`, and its λ
 * for means: `_calc_lam_glm` with an identity Hessian), so the figures here equal its figures.
 * Where ppi_py would give NaN (a judge that gives one value on every row, so the λ denominator
 * is 0), λ is 0 here: such a judge carries no information and the estimate is the classical one.
 * The weights are ppi_py's (`w`, `w_unlabeled`); the product's own rows never carry any here: a
 * label chosen with a known probability goes to the active estimator instead.
 *
 * Active inference (M rows in all, every row's judge value fᵢ; ξᵢ = 1 on the labelled rows, each
 * chosen with probability πᵢ ∈ (0, 1]; F̄ = (1/M) Σ_all fᵢ, the judge's mean over every row):
 *
 *   Zᵢ         = F̄ + λ·(fᵢ − F̄) + (ξᵢ/πᵢ)·((Yᵢ − F̄) − λ·(fᵢ − F̄))       (over all M rows)
 *   estimate   θ̂_λ = (1/M) Σ Zᵢ = F̄ + (1/M) Σ_lab ((Yᵢ − F̄) − λ·(fᵢ − F̄)) / πᵢ
 *   variance   σ̂² = Var(Z) / M                                          (population, 1/M)
 *
 * This is Zrnic & Candès's estimator (1/M) Σ [λfᵢ + (Yᵢ − λfᵢ)·ξᵢ/πᵢ], averaged over every row
 * with inverse-probability weights, with its variance estimate Var(Z)/M, applied to Y and f
 * after taking the judge's overall mean F̄ out of both (and adding it back). F̄ depends on the
 * judge's values alone, which every row has whatever is drawn, so to the draw it is a constant:
 * E[ξᵢ/πᵢ] = 1 keeps the estimate unbiased for the mean over every row. The centring makes it
 * equivariant: adding a constant to every Y and f adds it to the estimate and leaves the
 * interval alone, so the share of a label and the share of its complement get complementary
 * estimates and intervals of the same width (uncentred, the term (1 − λ)·c·ξ/π that a shift by c
 * adds makes the complement's interval wider or narrower). For a draw of a fixed number of rows
 * with equal probabilities, Σ_lab 1/π = M and the two estimates are the same (the variance is
 * then the centred one's, free of the (1 − λ)·F̄ that varies with ξ/π). Unlike the self-normalised
 * (Hájek) form, which divides the rectifier by Σ 1/π and is equivariant too, it needs no
 * linearisation, and in simulations of `assay label`'s own draws its interval covers at its
 * level where the Hájek one falls short (bench/ppi-coverage.ts).
 *
 * λ, unless given, minimises σ̂²(λ) (the paper's power tuning, by the plug-in variance), clipped
 * to [0, 1]: with Aᵢ = (ξᵢ/πᵢ)(Yᵢ − F̄) and Bᵢ = (1 − ξᵢ/πᵢ)(fᵢ − F̄), Z = F̄ + A + λB and
 * λ̂ = −Cov(A, B) / Var(B) (population moments over all M rows; 0 when Var(B) = 0).
 *
 * The classical estimate beside it is the labelled rows alone, design-weighted: the Hájek mean
 * Ȳ_w = Σ Yᵢ/πᵢ / Σ 1/πᵢ, with its linearised variance Σ (Yᵢ − Ȳ_w)²/πᵢ² / (Σ 1/πᵢ)² (both
 * equivariant; under equal probabilities, the plain mean and ppi_py's classical interval).
 *
 * A label that was there before the draw (the dataset's own gold when a gold file adds labels
 * chosen by `assay label` among the rows without) has π = 1. `assay label` draws among the rows
 * without gold only, so its p is the chance of being chosen given the labels that existed: given
 * them, those labels are certain, and the estimator is unbiased for the mean over every row
 * whatever design gave them (the term λfᵢ + (Yᵢ − λfᵢ)·ξᵢ/πᵢ has expectation Yᵢ given them, on
 * every row).
 * The combination r + (1 − r)·p of a first uniform draw at rate r would need p for rows that
 * were never candidates, which no one knows.
 *
 * Beside the estimate: the classical estimate, the labelled rows alone (PPI++: (1/n) Σ wᵢ·Yᵢ ±
 * z·SD(w·Y)/√n, ppi_py's `classical_mean_ci`, population SD, with weights the same weighted as
 * the λ = 0 PPI estimate, so that λ = 0 gives the classical interval exactly; active: the Hájek
 * mean above); the judge-only estimate, the plain mean of the judge over every row, labelled and
 * unlabelled (what a report built on the judge alone would say, biased by the judge's errors,
 * never a substitute for either interval); and the effective number of labels, n · (classical
 * width / PPI width)², the number of gold labels a classical interval would need to be as narrow
 * as the PPI one.
 */
import type { Interval, PpiEstimate, PpiEstimator } from '../../model/report.js';
import { wilson } from './intervals.js';
import { CompensatedSum, type CompensatedSumState, normalQuantile } from './stats.js';

export interface PpiMeanInput {
  /** Y: the gold value of each labelled row (0/1 for a share of a label). */
  gold: readonly number[];
  /** Ŷ: the judge's value on the same labelled rows, in the same order. */
  judge: readonly number[];
  /** Ỹ: the judge's value on the rows without gold. */
  judgeUnlabelled: readonly number[];
  /** Error level: the interval targets coverage 1 − alpha. In (0, 1); default 0.05. */
  alpha?: number;
  /**
   * A fixed λ (any finite number: 0 is classical, 1 plain PPI). Left out, λ is power-tuned
   * from the data and clipped to [0, 1].
   */
  lambda?: number;
  /** Weights of the labelled rows (inverse sampling probabilities); rescaled to sum to n. */
  weights?: readonly number[];
  /** Weights of the unlabelled rows; rescaled to sum to N. */
  weightsUnlabelled?: readonly number[];
}

/**
 * report.json's PPI estimate (see {@link PpiEstimate}) at any level: its interval and the
 * classical one target coverage 1 − alpha.
 */
export interface PpiMeanResult extends PpiEstimate {
  alpha: number;
}

/** The prediction-powered (PPI++) estimate of a mean, with its interval and the figures beside it. */
export function ppiMean(input: PpiMeanInput): PpiMeanResult {
  const { gold, judge, judgeUnlabelled } = input;
  const alpha = input.alpha ?? 0.05;
  validate(input, alpha);
  const n = gold.length;
  const N = judgeUnlabelled.length;
  const rows = n + N;
  const judgeOnly = { estimate: rows === 0 ? null : (sumOf(judge) + sumOf(judgeUnlabelled)) / rows };
  const empty = emptyResult(n, N, alpha, judgeOnly);
  if (n < 2) return empty;

  const w = normalisedWeights(n, input.weights);
  const z = normalQuantile(1 - alpha / 2);
  const classicalPart = ppiParts(gold, judge, judgeUnlabelled, w, undefined, 0);
  const classical = { estimate: classicalPart.estimate, ci: interval(classicalPart, z) };
  if (N === 0) return { ...empty, classical };

  const wU = normalisedWeights(N, input.weightsUnlabelled);
  const lambda = input.lambda ?? tunedLambda(gold, judge, judgeUnlabelled, w, wU);
  const ppi = ppiParts(gold, judge, judgeUnlabelled, w, wU, lambda);
  return estimated(empty, classical, classicalPart.se, ppi, lambda, z);
}

export interface ActiveMeanInput {
  /** Y: the gold value of each labelled row. */
  gold: readonly number[];
  /** f: the judge's value on the same labelled rows, in the same order. */
  judge: readonly number[];
  /** f: the judge's value on the rows without gold. */
  judgeUnlabelled: readonly number[];
  /**
   * π: each labelled row's probability of having been chosen for its label, in (0, 1]; 1 for a
   * label that was there before the draw.
   */
  probabilities: readonly number[];
  /** Error level, in (0, 1); default 0.05. */
  alpha?: number;
  /** A fixed λ; left out, λ minimises the estimated variance, clipped to [0, 1]. */
  lambda?: number;
}

/**
 * The active-inference estimate of a mean (Zrnic & Candès 2024, in its self-normalised form;
 * see the module comment), from the rows themselves: the reference {@link PpiSums} is tested
 * against, and what a simulation calls.
 */
export function activeMean(input: ActiveMeanInput): PpiMeanResult {
  const { gold, judge, judgeUnlabelled, probabilities } = input;
  const alpha = input.alpha ?? 0.05;
  validate({ gold, judge, judgeUnlabelled, lambda: input.lambda }, alpha);
  if (probabilities.length !== gold.length)
    throw new RangeError(
      `activeMean: probabilities has ${probabilities.length} entries for ${gold.length} labelled rows`,
    );
  probabilities.forEach((p, i) => {
    if (!(p > 0 && p <= 1))
      throw new RangeError(`activeMean: probabilities[${i}] must be in (0, 1], got ${p}`);
  });
  const n = gold.length;
  const N = judgeUnlabelled.length;
  const M = n + N;
  const judgeOnly = { estimate: M === 0 ? null : (sumOf(judge) + sumOf(judgeUnlabelled)) / M };
  const empty = emptyResult(n, N, alpha, judgeOnly, 'active');
  if (n < 2) return empty;
  const meanF = judgeOnly.estimate!;
  // Z = F̄ + A + λB over every row; the unlabelled rows have A = 0, B = f − F̄.
  const A = new Float64Array(M);
  const B = new Float64Array(M);
  let scale = 0;
  let inverse = 0;
  let meanYw = 0;
  for (let i = 0; i < n; i += 1) {
    const w = 1 / probabilities[i]!;
    A[i] = w * (gold[i]! - meanF);
    B[i] = (1 - w) * (judge[i]! - meanF);
    scale += (1 + w * w) * judge[i]! * judge[i]!;
    inverse += w;
    meanYw += w * gold[i]!;
  }
  judgeUnlabelled.forEach((f, j) => {
    B[n + j] = f - meanF;
    scale += f * f;
  });
  meanYw /= inverse;
  const mA = meanOf(A);
  const mB = meanOf(B);
  let aa = 0;
  let ab = 0;
  let bb = 0;
  for (let i = 0; i < M; i += 1) {
    aa += (A[i]! - mA) ** 2;
    ab += (A[i]! - mA) * (B[i]! - mB);
    bb += (B[i]! - mB) ** 2;
  }
  // The classical (Hájek) mean's variance: Σ (Yᵢ − Ȳ_w)²/πᵢ² / (Σ 1/πᵢ)².
  let spread = 0;
  for (let i = 0; i < n; i += 1) spread += ((gold[i]! - meanYw) / probabilities[i]!) ** 2;
  const z = normalQuantile(1 - alpha / 2);
  const classicalPart = { estimate: meanYw, se: Math.sqrt(spread) / inverse };
  const classical = { estimate: classicalPart.estimate, ci: interval(classicalPart, z) };
  if (N === 0) return { ...empty, classical };
  // Var(B) is 0 for a judge that gives one value everywhere (up to rounding): λ is then 0.
  const lambda = input.lambda ?? (bb > 1e-12 * scale ? Math.min(1, Math.max(0, -ab / bb)) : 0);
  const ppi = {
    estimate: meanF + mA + lambda * mB,
    se: Math.sqrt(Math.max(0, aa + 2 * lambda * ab + lambda * lambda * bb) / M) / Math.sqrt(M),
  };
  return estimated(empty, classical, classicalPart.se, ppi, lambda, z);
}

/**
 * The sums every PPI figure is a function of, kept as rows come instead of the rows themselves,
 * so that a run tallied in parts merges to the figures of one pass. Weights are kept raw and
 * rescaled when the figures are computed (to sum to n and to N, as {@link ppiMean} rescales
 * them): with a = n / Σw, Σ (a·w)ᵏ·f = aᵏ · Σ wᵏ·f.
 *
 *   labelled rows (gold Y, judge Ŷ, weight w): n, Σw, Σw², ΣwY, ΣwŶ, Σw²Y, Σw²Ŷ, Σw²Y², Σw²Ŷ², Σw²YŶ, ΣŶ,
 *                                               ΣwYŶ, ΣwŶ², ΣŶ²
 *   unlabelled rows (judge Ỹ, weight w̃):        N, Σw̃, Σw̃², Σw̃Ỹ, Σw̃²Ỹ, Σw̃²Ỹ², ΣỸ, ΣỸ²
 *
 * (the plain sums of the judge give the judge-only mean, which is unweighted, and the judge's
 * spread over every row in the active estimator), and how many labelled rows were chosen with a
 * known probability ({@link PpiSums.addChosen}). With none, the figures are PPI++'s; with any,
 * the active estimator's, each labelled row's w read as 1/π (1 for a row added by
 * {@link PpiSums.addLabelled} with its default weight: a label that was there before the draw).
 *
 * Each sum is compensated, so the merged sums equal one pass's to within their last bits (and
 * exactly for 0/1 values and unit weights, whose sums are whole numbers).
 */
export class PpiSums {
  /** Labelled rows, then unlabelled rows (see {@link PpiSumsState} for the order of the sums). */
  private labelled = 0;
  private unlabelled = 0;
  private chosen = 0;
  private readonly l = Array.from({ length: L_SUMS }, () => new CompensatedSum());
  private readonly u = Array.from({ length: U_SUMS }, () => new CompensatedSum());

  get nLabelled(): number {
    return this.labelled;
  }

  get nUnlabelled(): number {
    return this.unlabelled;
  }

  /** Labelled rows chosen with a known probability ({@link addChosen}). */
  get nChosen(): number {
    return this.chosen;
  }

  /**
   * A row with gold `gold`, judged `judge`, carrying weight `weight`: ppi_py's weight of a row of
   * a random sample; once some row is chosen ({@link addChosen}), 1/π (the default 1: certain).
   */
  addLabelled(gold: number, judge: number, weight = 1): void {
    checkRow(gold, judge, weight);
    const w2 = weight * weight;
    const terms = [weight, w2, weight * gold, weight * judge, w2 * gold, w2 * judge];
    terms.push(w2 * gold * gold, w2 * judge * judge, w2 * gold * judge, judge);
    terms.push(weight * gold * judge, weight * judge * judge, judge * judge);
    this.labelled += 1;
    terms.forEach((t, i) => {
      this.l[i]!.add(t);
    });
  }

  /**
   * A row whose gold `gold` was asked for because a draw chose it with probability `p` (a gold
   * file's `p`, from `assay label`): weight 1/p, and the figures become the active estimator's.
   */
  addChosen(gold: number, judge: number, p: number): void {
    checkProbability(p);
    this.addLabelled(gold, judge, 1 / p);
    this.chosen += 1;
  }

  /** A row without gold, judged `judge`. */
  addUnlabelled(judge: number, weight = 1): void {
    checkRow(0, judge, weight);
    const w2 = weight * weight;
    this.unlabelled += 1;
    [weight, w2, weight * judge, w2 * judge, w2 * judge * judge, judge, judge * judge].forEach((t, i) => {
      this.u[i]!.add(t);
    });
  }

  /** Adds `later`'s rows (the sums are the same whichever order rows come in). */
  merge(later: PpiSums): void {
    this.labelled += later.labelled;
    this.unlabelled += later.unlabelled;
    this.chosen += later.chosen;
    this.l.forEach((sum, i) => {
      sum.merge(later.l[i]!);
    });
    this.u.forEach((sum, i) => {
      sum.merge(later.u[i]!);
    });
  }

  toState(): PpiSumsState {
    return {
      labelled: this.labelled,
      unlabelled: this.unlabelled,
      ...(this.chosen > 0 ? { chosen: this.chosen } : {}),
      l: this.l.map((s) => s.toState()),
      u: this.u.map((s) => s.toState()),
    };
  }

  /**
   * The sums saved by {@link toState}. A state saved before the active estimator's sums existed
   * has fewer: the missing ones are 0, which only the active estimator reads, and such a state
   * has no chosen rows.
   */
  static fromState(state: PpiSumsState): PpiSums {
    const sums = new PpiSums();
    sums.labelled = state.labelled;
    sums.unlabelled = state.unlabelled;
    sums.chosen = state.chosen ?? 0;
    state.l.forEach((s, i) => {
      sums.l[i] = CompensatedSum.fromState(s);
    });
    state.u.forEach((s, i) => {
      sums.u[i] = CompensatedSum.fromState(s);
    });
    return sums;
  }

  /** The sums as plain numbers, in the order of the class comment (labelled `l`, unlabelled `u`, counts left out). */
  values(): { l: number[]; u: number[] } {
    return { l: this.l.map((s) => s.value()), u: this.u.map((s) => s.value()) };
  }

  /**
   * The share of labelled rows where the judge's value equals the gold, each weighted by its w
   * (see {@link weightedShare}); for 0/1 values only (a pass scorer): the indicator of agreement
   * is then 1 − Y − Ŷ + 2YŶ, so its sums are sums kept here.
   */
  agreementOfBinary(alpha = 0.05): WeightedShare {
    const [sw, sw2, swy, swf, sw2y, sw2f, , , sw2yf, , swyf] = this.values().l as number[];
    return weightedShare(
      {
        n: this.labelled,
        w: sw!,
        w2: sw2!,
        wA: sw! - swy! - swf! + 2 * swyf!,
        w2A: sw2! - sw2y! - sw2f! + 2 * sw2yf!,
      },
      alpha,
    );
  }
}

/** A design-weighted share: its estimate and interval, and the rows it is over. */
export interface WeightedShare {
  estimate: number | null;
  ci: Interval | null;
  n: number;
}

/**
 * The share of rows with a property A (0/1) over every item, from a sample whose rows carry
 * inverse-probability weights w: the Hájek ratio estimator Â = Σ wA / Σ w, its linearised
 * variance v̂ = Σ w²(A − Â)² / (Σ w)² (which is Â(1 − Â)/n under equal weights), and Wilson's
 * score interval at the design's effective number of rows n* = Â(1 − Â)/v̂ (the effective-size
 * device of Korn & Graubard 1998, with Wilson's interval in place of Clopper–Pearson's; Kish's
 * n* = (Σw)²/Σw² where Â is 0 or 1 and v̂ says nothing). Null with no rows.
 */
export function weightedShare(
  t: { n: number; w: number; w2: number; wA: number; w2A: number },
  alpha = 0.05,
): WeightedShare {
  if (t.n === 0 || !(t.w > 0)) return { estimate: null, ci: null, n: t.n };
  const share = Math.min(1, Math.max(0, t.wA / t.w));
  const spread = Math.max(0, t.w2A * (1 - 2 * share) + share * share * t.w2);
  const variance = spread / (t.w * t.w);
  const kish = (t.w * t.w) / t.w2;
  const effective = variance > 0 && share > 0 && share < 1 ? (share * (1 - share)) / variance : kish;
  return { estimate: share, ci: wilson(share * effective, effective, alpha), n: t.n };
}

/** {@link PpiSums} saved: the counts and each compensated sum, in the order `values()` gives. */
export interface PpiSumsState {
  labelled: number;
  unlabelled: number;
  /** Labelled rows chosen with a known probability (absent: none). */
  chosen?: number;
  l: CompensatedSumState[];
  u: CompensatedSumState[];
}

/** How many sums {@link PpiSums} keeps of the labelled rows, and of the unlabelled ones. */
const L_SUMS = 13;
const U_SUMS = 7;

function checkProbability(p: number): void {
  if (!(p > 0 && p <= 1))
    throw new RangeError(`PpiSums: a probability of being chosen must be in (0, 1], got ${p}`);
}

function checkRow(gold: number, judge: number, weight: number): void {
  if (!Number.isFinite(gold)) throw new RangeError(`PpiSums: gold is not a finite number: ${gold}`);
  if (!Number.isFinite(judge)) throw new RangeError(`PpiSums: judge is not a finite number: ${judge}`);
  if (!(Number.isFinite(weight) && weight > 0))
    throw new RangeError(`PpiSums: a weight must be a finite number > 0, got ${weight}`);
}

/**
 * A variance from a mean of squares and a mean, 0 where the difference is rounding: a judge
 * that gives one value everywhere has variance 0 here as in {@link ppiMean}'s two passes.
 */
function varianceOf(meanOfSquares: number, mean: number): number {
  const v = meanOfSquares - mean * mean;
  return v <= 1e-12 * Math.abs(meanOfSquares) ? 0 : v;
}

/**
 * {@link ppiMean} from the sums of a {@link PpiSums}: the same figures (to within rounding) for the
 * same rows, without the rows. Unlabelled weights are rescaled to sum to N as the labelled ones are.
 */
export function ppiMeanOfSums(
  sums: PpiSums,
  options: { alpha?: number; lambda?: number } = {},
): PpiMeanResult {
  const alpha = options.alpha ?? 0.05;
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`ppiMean: alpha must be in (0, 1), got ${alpha}`);
  if (options.lambda !== undefined && !Number.isFinite(options.lambda))
    throw new RangeError(`ppiMean: lambda must be a finite number, got ${options.lambda}`);
  if (sums.nChosen > 0) return activeOfSums(sums, alpha, options.lambda);
  const n = sums.nLabelled;
  const N = sums.nUnlabelled;
  const {
    l: [sw, sw2, swy, swf, sw2y, sw2f, sw2yy, sw2ff, sw2yf, sf],
    u: [su, su2, suf, su2f, su2ff, sfu],
  } = sums.values() as { l: number[]; u: number[] };
  const rows = n + N;
  // The judge-only figure is the plain mean over every row (weights are about gold's sampling).
  const judgeOnly = { estimate: rows === 0 ? null : (sf! + sfu!) / rows };
  const empty = emptyResult(n, N, alpha, judgeOnly);
  if (n < 2) return empty;
  const a = n / sw!;
  const meanY = (a * swy!) / n;
  const meanF = (a * swf!) / n;
  const z = normalQuantile(1 - alpha / 2);
  /** Estimate and standard error at λ (the unlabelled rows count when λ ≠ 0 and there are some). */
  const at = (lambda: number): { estimate: number; se: number } => {
    const meanR = meanY - lambda * meanF;
    const meanR2 = (a * a * (sw2yy! - 2 * lambda * sw2yf! + lambda * lambda * sw2ff!)) / n;
    let estimate = meanR;
    let variance = varianceOf(meanR2, meanR) / n;
    if (N > 0 && lambda !== 0) {
      const b = N / su!;
      const meanU = (b * suf!) / N;
      estimate += lambda * meanU;
      variance += (lambda * lambda * varianceOf((b * b * su2ff!) / N, meanU)) / N;
    }
    return { estimate, se: Math.sqrt(variance) };
  };
  const classicalPart = at(0);
  const classical = { estimate: classicalPart.estimate, ci: interval(classicalPart, z) };
  if (N === 0) return { ...empty, classical };

  let lambda = options.lambda;
  if (lambda === undefined) {
    const b = N / su!;
    const theta = at(1).estimate;
    const meanGG = (a * a * (sw2yf! - theta * sw2y! - theta * sw2f! + theta * theta * sw2!)) / n;
    const covariance = meanGG - (meanY - theta) * (meanF - theta);
    const total = n * (meanF - theta) + b * suf! - theta * N;
    const squares =
      a * a * (sw2ff! - 2 * theta * sw2f! + theta * theta * sw2!) +
      b * b * (su2ff! - 2 * theta * su2f! + theta * theta * su2!);
    const m = n + N;
    const sampleVariance = (varianceOf(squares / m, total / m) * m) / (m - 1);
    const denominator = (1 + n / N) * sampleVariance;
    lambda = denominator > 0 ? Math.min(1, Math.max(0, covariance / denominator)) : 0;
  }
  const ppi = at(lambda);
  return estimated(empty, classical, classicalPart.se, ppi, lambda, z);
}

/**
 * {@link activeMean} from the sums of a {@link PpiSums}: with d = F̄, every moment of A and B is a
 * polynomial in the sums (w = 1/π as kept):
 *
 *   ΣA = ΣwY − dΣw,  ΣA² = Σw²Y² − 2dΣw²Y + d²Σw²,  ΣB = −(ΣwŶ − dΣw)
 *   ΣB² = Σ_all (f − d)² − 2 Σ w(Ŷ − d)² + Σ w²(Ŷ − d)²,  ΣAB = Σ (w − w²)(Y − d)(Ŷ − d)
 */
function activeOfSums(sums: PpiSums, alpha: number, fixed: number | undefined): PpiMeanResult {
  const n = sums.nLabelled;
  const N = sums.nUnlabelled;
  const M = n + N;
  const {
    l: [sw, sw2, swy, swf, sw2y, sw2f, sw2yy, sw2ff, sw2yf, sf, swyf, swff, sff],
    u: [, , , , , sfu, sfuu],
  } = sums.values() as { l: number[]; u: number[] };
  const judgeOnly = { estimate: M === 0 ? null : (sf! + sfu!) / M };
  const empty = emptyResult(n, N, alpha, judgeOnly, 'active');
  if (n < 2) return empty;
  const d = judgeOnly.estimate!;
  const meanYw = swy! / sw!;
  const z = normalQuantile(1 - alpha / 2);
  const spread = Math.max(0, sw2yy! - 2 * meanYw * sw2y! + meanYw * meanYw * sw2!);
  const classicalPart = { estimate: meanYw, se: Math.sqrt(spread) / sw! };
  const classical = { estimate: classicalPart.estimate, ci: interval(classicalPart, z) };
  if (N === 0) return { ...empty, classical };
  const sA = swy! - d * sw!;
  const sAA = sw2yy! - 2 * d * sw2y! + d * d * sw2!;
  const sB = -(swf! - d * sw!);
  const allFF = sff! + sfuu! - M * d * d;
  const wFF = swff! - 2 * d * swf! + d * d * sw!;
  const w2FF = sw2ff! - 2 * d * sw2f! + d * d * sw2!;
  const sBB = allFF - 2 * wFF + w2FF;
  const wYF = swyf! - d * swy! - d * swf! + d * d * sw!;
  const w2YF = sw2yf! - d * sw2y! - d * sw2f! + d * d * sw2!;
  const sAB = wYF - w2YF;
  const mA = sA / M;
  const mB = sB / M;
  const aa = Math.max(0, sAA - M * mA * mA);
  const ab = sAB - M * mA * mB;
  const bb = Math.max(0, sBB - M * mB * mB);
  // Var(B) is 0 for a judge that gives one value everywhere, up to rounding of the sums' size.
  const scale = sff! + sfuu! + sw2ff!;
  const lambda = fixed ?? (bb > 1e-12 * scale ? Math.min(1, Math.max(0, -ab / bb)) : 0);
  const ppi = {
    estimate: d + mA + lambda * mB,
    se: Math.sqrt(Math.max(0, aa + 2 * lambda * ab + lambda * lambda * bb) / M) / Math.sqrt(M),
  };
  return estimated(empty, classical, classicalPart.se, ppi, lambda, z);
}

/**
 * The share of each label, or of a class of several labels (the mean of a 0/1 indicator), by
 * PPI, tallied as rows come: for the labelled rows a weighted confusion table (each pair of gold
 * and judge label: rows, Σw, Σw²), for the unlabelled rows the same by the judge's label. Every
 * sum {@link PpiSums} keeps for an indicator is a sum of cells (a row has one gold and at most
 * one judge label, so Y² = Y, Ŷ² = Ŷ and YŶ = 1 where both are in the class), so the share of any
 * class is known without the rows. Mergeable like {@link PpiSums}: cells add.
 */
export class PpiLabelShares {
  /** Keyed by `[gold, judge]` as JSON (labels are data: a Map, never an object's keys); judge null: no label. */
  private readonly labelled = new Map<string, Cell>();
  /** Keyed by the judge's label as JSON (null: no label). */
  private readonly unlabelled = new Map<string, Cell>();
  /** Labelled rows chosen with a known probability ({@link addChosen}). */
  private chosen = 0;

  get nLabelled(): number {
    return countOf(this.labelled);
  }

  get nUnlabelled(): number {
    return countOf(this.unlabelled);
  }

  get nChosen(): number {
    return this.chosen;
  }

  /** A row with gold `gold` that the judge labelled `judge` (undefined: the judge gave no label). */
  addLabelled(gold: string, judge: string | undefined, weight = 1): void {
    checkRow(0, 0, weight);
    addToCell(this.labelled, JSON.stringify([gold, judge ?? null]), weight);
  }

  /** A row whose gold a draw asked for with probability `p` (see {@link PpiSums.addChosen}). */
  addChosen(gold: string, judge: string | undefined, p: number): void {
    checkProbability(p);
    this.addLabelled(gold, judge, 1 / p);
    this.chosen += 1;
  }

  /** A row without gold that the judge labelled `judge` (undefined: no label). */
  addUnlabelled(judge: string | undefined, weight = 1): void {
    checkRow(0, 0, weight);
    addToCell(this.unlabelled, JSON.stringify(judge ?? null), weight);
  }

  merge(later: PpiLabelShares): void {
    this.chosen += later.chosen;
    for (const [own, other] of [
      [this.labelled, later.labelled],
      [this.unlabelled, later.unlabelled],
    ] as const)
      for (const [key, cell] of other) {
        const into = own.get(key);
        if (!into) own.set(key, cellFromState(cellState(cell)));
        else {
          into.n += cell.n;
          into.w.merge(cell.w);
          into.w2.merge(cell.w2);
        }
      }
  }

  /** Every label met, as gold or the judge's, in sort order. */
  labelsMet(): string[] {
    const labels = new Set<string>();
    for (const key of this.labelled.keys())
      for (const label of JSON.parse(key) as (string | null)[]) if (label !== null) labels.add(label);
    for (const key of this.unlabelled.keys()) {
      const label = JSON.parse(key) as string | null;
      if (label !== null) labels.add(label);
    }
    return [...labels].sort();
  }

  /** The sums of the indicator "the label is one of `labels`" (one label, or a class of several). */
  sums(labels: readonly string[]): PpiSums {
    const inClass = new Set(labels);
    const l = new Array<number>(L_SUMS).fill(0);
    const u = new Array<number>(U_SUMS).fill(0);
    // Cells in key order, so that the sums are the same however the cells were met.
    for (const key of [...this.labelled.keys()].sort()) {
      const cell = this.labelled.get(key)!;
      const [gold, judge] = JSON.parse(key) as [string, string | null];
      const y = inClass.has(gold) ? 1 : 0;
      const f = judge !== null && inClass.has(judge) ? 1 : 0;
      const w = cell.w.value();
      const w2 = cell.w2.value();
      // Σw, Σw², ΣwY, ΣwŶ, Σw²Y, Σw²Ŷ, Σw²Y², Σw²Ŷ², Σw²YŶ, ΣŶ, ΣwYŶ, ΣwŶ², ΣŶ²
      [
        w,
        w2,
        w * y,
        w * f,
        w2 * y,
        w2 * f,
        w2 * y,
        w2 * f,
        w2 * y * f,
        cell.n * f,
        w * y * f,
        w * f,
        cell.n * f,
      ].forEach((t, i) => {
        l[i]! += t;
      });
    }
    for (const key of [...this.unlabelled.keys()].sort()) {
      const cell = this.unlabelled.get(key)!;
      const judge = JSON.parse(key) as string | null;
      const f = judge !== null && inClass.has(judge) ? 1 : 0;
      const w = cell.w.value();
      const w2 = cell.w2.value();
      // Σw̃, Σw̃², Σw̃Ỹ, Σw̃²Ỹ, Σw̃²Ỹ², ΣỸ, ΣỸ²
      [w, w2, w * f, w2 * f, w2 * f, cell.n * f, cell.n * f].forEach((t, i) => {
        u[i]! += t;
      });
    }
    return PpiSums.fromState({
      labelled: this.nLabelled,
      unlabelled: this.nUnlabelled,
      chosen: this.chosen,
      l: l.map((v) => [v, 0]),
      u: u.map((v) => [v, 0]),
    });
  }

  /**
   * The share of labelled rows the judge labelled as the gold, each weighted by its w (see
   * {@link weightedShare}), over the labelled rows the judge gave a label.
   */
  agreement(alpha = 0.05): WeightedShare {
    const t = { n: 0, w: 0, w2: 0, wA: 0, w2A: 0 };
    for (const key of [...this.labelled.keys()].sort()) {
      const [gold, judge] = JSON.parse(key) as [string, string | null];
      if (judge === null) continue;
      const cell = this.labelled.get(key)!;
      const w = cell.w.value();
      const w2 = cell.w2.value();
      t.n += cell.n;
      t.w += w;
      t.w2 += w2;
      if (gold === judge) {
        t.wA += w;
        t.w2A += w2;
      }
    }
    return weightedShare(t, alpha);
  }

  /** The PPI share of the rows whose label is one of `labels` (see {@link ppiMeanOfSums}). */
  share(labels: readonly string[], options: { alpha?: number; lambda?: number } = {}): PpiMeanResult {
    return ppiMeanOfSums(this.sums(labels), options);
  }

  toState(): PpiLabelSharesState {
    const cells = (map: Map<string, Cell>) =>
      [...map].map(([key, cell]) => [key, cellState(cell)] as [string, CellState]);
    return {
      labelled: cells(this.labelled),
      unlabelled: cells(this.unlabelled),
      ...(this.chosen > 0 ? { chosen: this.chosen } : {}),
    };
  }

  static fromState(state: PpiLabelSharesState): PpiLabelShares {
    const shares = new PpiLabelShares();
    shares.chosen = state.chosen ?? 0;
    for (const [key, cell] of state.labelled) shares.labelled.set(key, cellFromState(cell));
    for (const [key, cell] of state.unlabelled) shares.unlabelled.set(key, cellFromState(cell));
    return shares;
  }
}

/** One cell of {@link PpiLabelShares}: its rows and the sums of their weights and squared weights. */
interface Cell {
  n: number;
  w: CompensatedSum;
  w2: CompensatedSum;
}

type CellState = [n: number, w: CompensatedSumState, w2: CompensatedSumState];

export interface PpiLabelSharesState {
  labelled: [key: string, cell: CellState][];
  unlabelled: [key: string, cell: CellState][];
  /** Labelled rows chosen with a known probability (absent: none). */
  chosen?: number;
}

function addToCell(cells: Map<string, Cell>, key: string, weight: number): void {
  let cell = cells.get(key);
  if (!cell) {
    cell = { n: 0, w: new CompensatedSum(), w2: new CompensatedSum() };
    cells.set(key, cell);
  }
  cell.n += 1;
  cell.w.add(weight);
  cell.w2.add(weight * weight);
}

const cellState = (cell: Cell): CellState => [cell.n, cell.w.toState(), cell.w2.toState()];
const cellFromState = ([n, w, w2]: CellState): Cell => ({
  n,
  w: CompensatedSum.fromState(w),
  w2: CompensatedSum.fromState(w2),
});

function countOf(cells: Map<string, Cell>): number {
  let n = 0;
  for (const cell of cells.values()) n += cell.n;
  return n;
}

/** The PPI estimate and its standard error at a given λ (λ = 0: the classical ones). */
function ppiParts(
  gold: readonly number[],
  judge: readonly number[],
  judgeUnlabelled: readonly number[],
  w: Float64Array,
  wU: Float64Array | undefined,
  lambda: number,
): { estimate: number; se: number } {
  const n = gold.length;
  const rectifier = new Float64Array(n);
  for (let i = 0; i < n; i += 1) rectifier[i] = w[i]! * (gold[i]! - lambda * judge[i]!);
  let estimate = meanOf(rectifier);
  let variance = populationVariance(rectifier) / n;
  if (wU && lambda !== 0) {
    const N = judgeUnlabelled.length;
    const imputed = new Float64Array(N);
    for (let j = 0; j < N; j += 1) imputed[j] = wU[j]! * lambda * judgeUnlabelled[j]!;
    estimate += meanOf(imputed);
    variance += populationVariance(imputed) / N;
  }
  return { estimate, se: Math.sqrt(variance) };
}

/**
 * The power-tuned λ (see the module comment), clipped to [0, 1]; 0 when the judge terms do
 * not vary (the denominator is 0).
 */
function tunedLambda(
  gold: readonly number[],
  judge: readonly number[],
  judgeUnlabelled: readonly number[],
  w: Float64Array,
  wU: Float64Array,
): number {
  const n = gold.length;
  const N = judgeUnlabelled.length;
  const theta1 = ppiParts(gold, judge, judgeUnlabelled, w, wU, 1).estimate;
  const grads = new Float64Array(n);
  const gradsHat = new Float64Array(n + N);
  for (let i = 0; i < n; i += 1) {
    grads[i] = w[i]! * (gold[i]! - theta1);
    gradsHat[i] = w[i]! * (judge[i]! - theta1);
  }
  for (let j = 0; j < N; j += 1) gradsHat[n + j] = wU[j]! * (judgeUnlabelled[j]! - theta1);
  const labelledHat = gradsHat.subarray(0, n);
  const meanG = meanOf(grads);
  const meanGHat = meanOf(labelledHat);
  let covariance = 0;
  for (let i = 0; i < n; i += 1) covariance += (grads[i]! - meanG) * (labelledHat[i]! - meanGHat);
  covariance /= n;
  const sampleVariance = (populationVariance(gradsHat) * (n + N)) / (n + N - 1);
  const denominator = (1 + n / N) * sampleVariance;
  if (!(denominator > 0)) return 0;
  return Math.min(1, Math.max(0, covariance / denominator));
}

/** The result with the PPI estimate at `lambda` beside the classical one (of standard error `classicalSe`). */
function estimated(
  empty: PpiMeanResult,
  classical: { estimate: number; ci: Interval },
  classicalSe: number,
  ppi: { estimate: number; se: number },
  lambda: number,
  z: number,
): PpiMeanResult {
  const ci = interval(ppi, z);
  const worth = classicalSe > 0 && ppi.se > 0;
  return {
    ...empty,
    estimate: ppi.estimate,
    ci,
    classical,
    lambda,
    effectiveLabels: worth ? empty.nLabelled * (width(classical.ci) / width(ci)) ** 2 : null,
  };
}

/** The result before any estimate: only the counts and the judge-only mean are known. */
function emptyResult(
  n: number,
  N: number,
  alpha: number,
  judgeOnly: { estimate: number | null },
  estimator: PpiEstimator = 'ppi++',
): PpiMeanResult {
  return {
    estimator,
    estimate: null,
    ci: null,
    classical: { estimate: null, ci: null },
    judgeOnly,
    nLabelled: n,
    nUnlabelled: N,
    alpha,
    lambda: null,
    effectiveLabels: null,
  };
}

function interval(part: { estimate: number; se: number }, z: number): Interval {
  return [part.estimate - z * part.se, part.estimate + z * part.se];
}

const width = (ci: Interval) => ci[1] - ci[0];

/** Weights rescaled to sum to `count` (all 1 when none are given), as ppi_py rescales them. */
function normalisedWeights(count: number, weights: readonly number[] | undefined): Float64Array {
  const out = new Float64Array(count).fill(1);
  if (!weights) return out;
  const total = sumOf(weights);
  for (let i = 0; i < count; i += 1) out[i] = (weights[i]! / total) * count;
  return out;
}

function validate(input: PpiMeanInput, alpha: number): void {
  const { gold, judge, judgeUnlabelled } = input;
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`ppiMean: alpha must be in (0, 1), got ${alpha}`);
  if (gold.length !== judge.length)
    throw new RangeError(
      `ppiMean: gold and judge describe the same labelled rows, so must be as long as each other (${gold.length} gold, ${judge.length} judge)`,
    );
  for (const [name, values] of [
    ['gold', gold],
    ['judge', judge],
    ['judgeUnlabelled', judgeUnlabelled],
  ] as const)
    values.forEach((v, i) => {
      if (!Number.isFinite(v)) throw new RangeError(`ppiMean: ${name}[${i}] is not a finite number: ${v}`);
    });
  if (input.lambda !== undefined && !Number.isFinite(input.lambda))
    throw new RangeError(`ppiMean: lambda must be a finite number, got ${input.lambda}`);
  for (const [name, weights, count] of [
    ['weights', input.weights, gold.length],
    ['weightsUnlabelled', input.weightsUnlabelled, judgeUnlabelled.length],
  ] as const) {
    if (weights === undefined) continue;
    if (weights.length !== count)
      throw new RangeError(`ppiMean: ${name} has ${weights.length} entries for ${count} rows`);
    weights.forEach((v, i) => {
      if (!(Number.isFinite(v) && v >= 0))
        throw new RangeError(`ppiMean: ${name}[${i}] must be a finite number ≥ 0, got ${v}`);
    });
    if (count > 0 && !(sumOf(weights) > 0))
      throw new RangeError(`ppiMean: ${name} are all 0; at least one row must carry weight`);
  }
}

function sumOf(values: ArrayLike<number>): number {
  let total = 0;
  for (let i = 0; i < values.length; i += 1) total += values[i]!;
  return total;
}

const meanOf = (values: ArrayLike<number>) => sumOf(values) / values.length;

/** Variance with divisor count (numpy's default `std(0)**2`), in two passes. */
function populationVariance(values: ArrayLike<number>): number {
  const m = meanOf(values);
  let total = 0;
  for (let i = 0; i < values.length; i += 1) total += (values[i]! - m) ** 2;
  return total / values.length;
}
