/**
 * Small statistics toolkit for reports: means, percentiles, latency summaries, a seeded PRNG,
 * percentile-bootstrap confidence intervals and McNemar's test for comparing two runs.
 *
 * Every function is pure and returns plain finite numbers (reports are JSON, which cannot carry
 * NaN): empty inputs give 0, not NaN. Programmer errors (a percentile outside [0, 100], a
 * bootstrap over zero rows, a statistic that returns NaN) throw `RangeError`.
 */
import type { Interval, LatencySummary } from '../../model/report.js';

/** Neumaier-compensated sum: cost totals over thousands of small floats stay exact to the cent. */
export function sum(values: Iterable<number>): number {
  const total = new CompensatedSum();
  for (const v of values) total.add(v);
  return total.value();
}

/** A {@link CompensatedSum} saved: its running total and the compensation carried beside it. */
export type CompensatedSumState = [total: number, compensation: number];

/** {@link sum} one value at a time (a stream of results): the same total, to the last bit. */
export class CompensatedSum {
  private total = 0;
  private compensation = 0;

  add(v: number): void {
    const t = this.total + v;
    this.compensation += Math.abs(this.total) >= Math.abs(v) ? this.total - t + v : v - t + this.total;
    this.total = t;
  }

  /**
   * Appends `later`, the sum of the values that come after this one's. The two totals were
   * rounded apart, so the result equals one sum over every value to within the last bits of the
   * total, not to the last bit.
   */
  merge(later: CompensatedSum): void {
    this.add(later.total);
    this.compensation += later.compensation;
  }

  value(): number {
    return this.total + this.compensation;
  }

  toState(): CompensatedSumState {
    return [this.total, this.compensation];
  }

  static fromState([total, compensation]: CompensatedSumState): CompensatedSum {
    const sum = new CompensatedSum();
    sum.total = total;
    sum.compensation = compensation;
    return sum;
  }
}

/** Arithmetic mean; 0 for an empty array. */
export function mean(values: ArrayLike<number> & Iterable<number>): number {
  return values.length === 0 ? 0 : sum(values) / values.length;
}

/** Arithmetic mean for a figure in a report: null (n/a) for an empty array, never 0. */
export function meanOrNull(values: readonly number[]): number | null {
  return values.length === 0 ? null : sum(values) / values.length;
}

/**
 * {@link meanOrNull} of `values[indices[0]], values[indices[1]], …` without building that array:
 * the same sum in the same order, to the last bit (a bootstrap resample of a million values
 * would otherwise allocate a million-element array per iteration).
 */
export function meanAt(values: ArrayLike<number>, indices: ArrayLike<number>): number | null {
  if (indices.length === 0) return null;
  let total = 0;
  let compensation = 0;
  for (let i = 0; i < indices.length; i++) {
    const v = values[indices[i]!]!;
    const t = total + v;
    compensation += Math.abs(total) >= Math.abs(v) ? total - t + v : v - t + total;
    total = t;
  }
  return (total + compensation) / indices.length;
}

/** `part / whole` for a rate in a report: null (n/a) when the whole is 0. */
export function ratio(part: number, whole: number): number | null {
  return whole === 0 ? null : part / whole;
}

/**
 * The p-th percentile (p in [0, 100]) with linear interpolation between closest ranks — the
 * numpy default (`method="linear"`): rank = p/100 · (n − 1). Does not mutate `values`.
 * Empty → 0.
 */
export function percentile(values: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile: p must be in [0, 100], got ${p}`);
  if (values.length === 0) return 0;
  return percentileOfSorted(
    [...values].sort((a, b) => a - b),
    p,
  );
}

function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (b - a) * (rank - lo);
}

/** p50 / p95 (linear interpolation), mean and max of latencies in ms; all null when empty. */
export function summarizeLatency(ms: ArrayLike<number> & Iterable<number>): LatencySummary {
  if (ms.length === 0) return { p50: null, p95: null, mean: null, max: null };
  // A copy made by the typed array itself: `Float64Array.from` would go through an iterator.
  const sorted = new Float64Array(ms.length);
  sorted.set(ms);
  sorted.sort();
  return {
    p50: percentileOfSorted(sorted, 50),
    p95: percentileOfSorted(sorted, 95),
    mean: mean(sorted),
    max: sorted[sorted.length - 1]!,
  };
}

/**
 * mulberry32: a tiny, fast 32-bit PRNG. Returns a generator of floats in [0, 1). The same seed
 * always gives the same sequence (the seed is taken modulo 2^32), which is what makes bootstrap
 * CIs reproducible across machines and runs; with `skip`, the sequence after its first `skip`
 * draws. Not for cryptography.
 */
export function mulberry32(seed: number, skip = 0): () => number {
  // The state only counts up by a constant: `skip` draws are skipped in one step (a sampler that
  // goes on where another stopped draws what one sampler would have).
  let state = (seed + Math.imul(skip, 0x6d2b79f5)) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface BootstrapOptions {
  /** Number of resamples (default 1000). */
  iterations?: number;
  /** PRNG seed (default 1). Same seed, same data → same interval. */
  seed?: number;
  /** 1 − confidence level (default 0.05 → a 95% interval). */
  alpha?: number;
}

export const DEFAULT_BOOTSTRAP: Readonly<Required<BootstrapOptions>> = Object.freeze({
  iterations: 1000,
  seed: 1,
  alpha: 0.05,
});

/** Row indices a statistic is computed over: a resample's (a typed array), or all of them. */
export type Indices = ArrayLike<number> & Iterable<number>;

/**
 * Percentile-bootstrap intervals for several statistics computed on the SAME resamples (cheaper
 * than one bootstrap per statistic, and the intervals are mutually consistent).
 *
 * Each iteration draws `n` row indices uniformly with replacement from `[0, n)` using
 * `mulberry32(seed)` and calls `statFn(indices)` (the same array, refilled each call: a
 * statistic must not keep it). The interval for
 * each key is the (alpha/2, 1 − alpha/2) percentiles of that key's resampled values, with
 * linear interpolation. A statistic that is undefined on a resample (`null`: a correlation of
 * a constant sample, a class that was not drawn) skips that resample; a key that is null on
 * every resample has no interval.
 *
 * Note: a percentile interval need not contain the point estimate when the statistic's
 * sampling distribution is very skewed (tiny n); it is reported as computed, not widened.
 */
export function bootstrapCis<K extends string>(
  n: number,
  statFn: (indices: Indices) => Record<K, number | null>,
  options: BootstrapOptions = {},
): Partial<Record<K, Interval>> {
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`bootstrap: n must be a positive integer, got ${n}`);
  // One index array for every resample (4 bytes a row, outside the JavaScript heap): a million
  // rows would otherwise make megabytes of garbage per iteration.
  const indices = new Uint32Array(n);
  return percentileIntervals(options, (random) => {
    for (let i = 0; i < n; i++) indices[i] = Math.floor(random() * n);
    return statFn(indices);
  });
}

/**
 * Percentile-bootstrap intervals of statistics that depend on the rows only through a table of
 * counts (a confusion matrix: how many rows fall in each cell), as {@link bootstrapCis} gives
 * them, at a cost that does not grow with the rows. A resample of the n rows with replacement
 * is, as far as its counts go, a multinomial draw of n over the cells with the cells' shares as
 * probabilities; each iteration draws that (one exact binomial a cell, {@link binomial}) and
 * calls `statFn` with the resample's counts (the same array, refilled each call). The intervals
 * have the distribution the rows' bootstrap gives, not its exact values (the draws differ).
 */
export function countsBootstrapCis<K extends string>(
  counts: readonly number[],
  statFn: (sample: readonly number[]) => Record<K, number | null>,
  options: BootstrapOptions = {},
): Partial<Record<K, Interval>> {
  const n = counts.reduce((a, b) => a + b, 0);
  if (!Number.isInteger(n) || n < 1 || counts.some((c) => !Number.isInteger(c) || c < 0))
    throw new RangeError(
      `bootstrap: counts must be whole, not negative and not all 0, got ${counts.join(',')}`,
    );
  const sample = new Array<number>(counts.length).fill(0);
  return percentileIntervals(options, (random) => {
    // Each cell given the rows the cells before it left: Bin(left, its count / what the rest hold).
    let left = n;
    let rest = n;
    for (let c = 0; c < counts.length; c++) {
      const count = counts[c]!;
      const drawn =
        left === 0 || count === 0 ? 0 : count === rest ? left : binomial(left, count / rest, random);
      sample[c] = drawn;
      left -= drawn;
      rest -= count;
    }
    return statFn(sample);
  });
}

/**
 * The resampling both bootstraps share: `iterations` resamples drawn by `resample` from one
 * `mulberry32(seed)`, each statistic's values kept, and each statistic's (alpha/2, 1 − alpha/2)
 * percentiles (linear interpolation). A null skips that resample for that statistic; a
 * statistic null on every resample has no interval.
 */
function percentileIntervals<K extends string>(
  options: BootstrapOptions,
  resample: (random: () => number) => Record<K, number | null>,
): Partial<Record<K, Interval>> {
  const { iterations, seed, alpha } = { ...DEFAULT_BOOTSTRAP, ...options };
  if (!Number.isInteger(iterations) || iterations < 1) {
    throw new RangeError(`bootstrap: iterations must be a positive integer, got ${iterations}`);
  }
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`bootstrap: alpha must be in (0, 1), got ${alpha}`);

  const random = mulberry32(seed);
  const samples = new Map<K, number[]>();
  for (let it = 0; it < iterations; it++) {
    const stats = resample(random);
    for (const key of Object.keys(stats) as K[]) {
      const value = stats[key];
      let list = samples.get(key);
      if (!list) {
        list = [];
        samples.set(key, list);
      }
      if (value === null) continue;
      if (!Number.isFinite(value)) {
        throw new RangeError(`bootstrap: statistic "${key}" returned a non-finite value (${value})`);
      }
      list.push(value);
    }
  }

  const result: Partial<Record<K, Interval>> = {};
  for (const [key, values] of samples) {
    if (values.length === 0) continue;
    values.sort((a, b) => a - b);
    result[key] = [
      percentileOfSorted(values, (alpha / 2) * 100),
      percentileOfSorted(values, (1 - alpha / 2) * 100),
    ];
  }
  return result;
}

/**
 * A draw of Binomial(n, p), exact (up to the uniforms' 2^-32 grain), in time that grows with
 * log n, not n. Few expected successes (n·min(p, 1−p) < 16) are counted by waiting times: the
 * gaps between successes are geometric. Otherwise Knuth's beta recursion (The Art of Computer
 * Programming, vol. 2, 3.4.1 F): of n uniforms, the a-th smallest X (a = 1 + ⌊n/2⌋) is
 * Beta(a, n + 1 − a); if X ≥ p, the successes are among the a − 1 below it, each below p with
 * probability p/X; if not, those a are all successes, and each of the n − a above X is one with
 * probability (p − X)/(1 − X).
 */
export function binomial(n: number, p: number, random: () => number): number {
  if (p > 0.5) return n - binomial(n, 1 - p, random);
  let successes = 0;
  while (n > 0 && p > 0) {
    if (n * p < 16) return successes + waitingTimes(n, p, random);
    const a = 1 + Math.floor(n / 2);
    const b = n + 1 - a;
    const below = gamma(a, random);
    const x = below / (below + gamma(b, random));
    if (x >= p) {
      n = a - 1;
      p /= x;
    } else {
      successes += a;
      n = b - 1;
      p = (p - x) / (1 - x);
    }
    if (p > 0.5) return successes + n - binomial(n, 1 - p, random);
  }
  return successes;
}

/** Binomial(n, p) by counting successes: the trials up to each are geometric (p ≤ 0.5). */
function waitingTimes(n: number, p: number, random: () => number): number {
  const logQ = Math.log1p(-p);
  let trials = 0;
  let successes = 0;
  for (;;) {
    // Geometric on 1, 2, …: ⌈ln U / ln(1 − p)⌉, U in (0, 1].
    trials += Math.max(1, Math.ceil(Math.log(1 - random()) / logQ));
    if (trials > n) return successes;
    successes += 1;
  }
}

/** A Gamma(shape, 1) draw for shape ≥ 1: Marsaglia and Tsang's method (2000). */
function gamma(shape: number, random: () => number): number {
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = standardNormal(random);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - random();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** A standard normal draw (Box–Muller, one of the pair). */
function standardNormal(random: () => number): number {
  const u = 1 - random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** Percentile-bootstrap interval of one statistic; see {@link bootstrapCis}. */
export function bootstrapCi(
  n: number,
  statFn: (indices: Indices) => number,
  options: BootstrapOptions = {},
): Interval {
  return bootstrapCis(n, (indices) => ({ stat: statFn(indices) }), options).stat!;
}

export interface MeanWithCi {
  n: number;
  /** Null when there are no values. */
  mean: number | null;
  /** Percentile-bootstrap interval of the mean; undefined when there are no values. */
  ci: Interval | undefined;
}

/** Mean of per-item scores with a bootstrap CI (graders' "score by question type, with CIs"). */
export function meanWithCi(values: readonly number[], options: BootstrapOptions = {}): MeanWithCi {
  if (values.length === 0) return { n: 0, mean: null, ci: undefined };
  const ci = bootstrapCi(
    values.length,
    (indices) => {
      let total = 0;
      for (const i of indices) total += values[i]!;
      return total / indices.length;
    },
    options,
  );
  return { n: values.length, mean: mean(values), ci };
}

export interface McNemarResult {
  /** Items right in run A and wrong in run B. */
  b: number;
  /** Items wrong in run A and right in run B. */
  c: number;
  /**
   * `exact`: min(b, c) (the binomial count, as statsmodels reports it);
   * `chi2`: (|b − c| − 1)² / (b + c), continuity-corrected, 1 degree of freedom.
   */
  statistic: number;
  /** Two-sided p-value. 1 when b + c = 0 (no discordant pairs: no evidence of a difference). */
  pValue: number;
  method: 'exact' | 'chi2';
}

export interface McNemarOptions {
  /** Use the exact binomial test when b + c is below this (default 25), chi-square otherwise. */
  exactBelow?: number;
}

/**
 * McNemar's test for two runs scored on the same items, from the discordant counts only.
 * Small samples (b + c < `exactBelow`): exact two-sided binomial test, p = min(1, 2·P(X ≤ min(b, c)))
 * with X ~ Binomial(b + c, 1/2). Otherwise the chi-square approximation with Edwards' continuity
 * correction.
 */
export function mcnemar(b: number, c: number, options: McNemarOptions = {}): McNemarResult {
  for (const [name, v] of [
    ['b', b],
    ['c', c],
  ] as const) {
    if (!Number.isInteger(v) || v < 0)
      throw new RangeError(`mcnemar: ${name} must be a non-negative integer, got ${v}`);
  }
  const exactBelow = options.exactBelow ?? 25;
  const total = b + c;
  if (total === 0) return { b, c, statistic: 0, pValue: 1, method: 'exact' };
  if (total < exactBelow) {
    const k = Math.min(b, c);
    return { b, c, statistic: k, pValue: Math.min(1, 2 * binomialCdfHalf(k, total)), method: 'exact' };
  }
  const statistic = (Math.abs(b - c) - 1) ** 2 / total;
  return { b, c, statistic, pValue: chiSquare1Sf(statistic), method: 'chi2' };
}

/**
 * McNemar's test from per-item correctness of two runs over the same items (same order).
 * b counts items A got right and B got wrong; c the reverse.
 */
export function mcnemarPaired(
  correctA: readonly boolean[],
  correctB: readonly boolean[],
  options: McNemarOptions = {},
): McNemarResult {
  if (correctA.length !== correctB.length) {
    throw new RangeError(`mcnemarPaired: runs differ in length (${correctA.length} vs ${correctB.length})`);
  }
  let b = 0;
  let c = 0;
  for (let i = 0; i < correctA.length; i++) {
    if (correctA[i] && !correctB[i]) b++;
    else if (!correctA[i] && correctB[i]) c++;
  }
  return mcnemar(b, c, options);
}

/** P(X ≤ k) for X ~ Binomial(n, 1/2), summed in log space so large n cannot underflow 0.5^n. */
function binomialCdfHalf(k: number, n: number): number {
  let logTerm = -n * Math.LN2; // log P(X = 0)
  let cdf = Math.exp(logTerm);
  for (let i = 1; i <= k; i++) {
    logTerm += Math.log((n - i + 1) / i);
    cdf += Math.exp(logTerm);
  }
  return Math.min(1, cdf);
}

/** Survival function of the chi-square distribution with 1 degree of freedom: erfc(√(x/2)). */
function chiSquare1Sf(x: number): number {
  return x <= 0 ? 1 : erfc(Math.sqrt(x / 2));
}

/** Complementary error function (Numerical Recipes `erfcc`, fractional error < 1.2e-7). */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 +
                            t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/** A statistic of two runs over the same items, candidate − base, with a paired-bootstrap CI and p-value. */
export interface PairedDelta {
  /** Items (pairs) the statistic ran over. */
  n: number;
  base: number;
  candidate: number;
  /** candidate − base. */
  delta: number;
  /** Percentile-bootstrap interval of the delta, unless `interval` names another. */
  ci: Interval;
  /**
   * How `ci` and `pValue` were found: `newcombe` for a difference of proportions (Newcombe's
   * paired interval, McNemar's test); absent: the paired bootstrap.
   */
  interval?: 'newcombe';
  /**
   * A bootstrap delta over fewer pairs than its metric's minimum for an interval (the metric
   * table's `minItemsForInterval`, the same as the single figure's): its `ci` and `pValue` are the
   * bootstrap's but not to be relied on — the reports show this reason in their place, and a gate
   * condition asking `with p` fails on it.
   */
  reason?: string;
  /**
   * Two-sided p-value of the paired bootstrap: the share of resampled deltas on the other side
   * of 0 from the observed delta (0 itself counts as the other side), ×2, capped at 1. 1 when
   * the observed delta is 0. A value of 0 means fewer than 1 in `iterations`.
   */
  pValue: number;
}

/**
 * Paired bootstrap of `statistic(candidate) − statistic(base)` over the same n items (row i of
 * `base` and row i of `candidate` are the same item): each iteration draws n item indices
 * with replacement, exactly as {@link bootstrapCis} does (`mulberry32(seed)`), applies them to
 * both sides, and records the difference. Percentile CI; p-value as in {@link PairedDelta}.
 */
export function pairedBootstrap<T>(
  base: readonly T[],
  candidate: readonly T[],
  statistic: (rows: readonly T[]) => number,
  options: BootstrapOptions = {},
): PairedDelta {
  return pairedBootstraps(base, candidate, (rows) => ({ stat: statistic(rows) }), options).stat!;
}

/**
 * {@link pairedBootstrap} for several statistics computed on the SAME resamples (one call of
 * `statistic` per side per iteration), e.g. every classification metric from one confusion matrix.
 * A statistic that is null on either side (no data) has no delta: its key is left out. A
 * resample on which it is null on either side is skipped for that key.
 */
export function pairedBootstraps<T, K extends string>(
  base: readonly T[],
  candidate: readonly T[],
  statistic: (rows: readonly T[]) => Record<K, number | null>,
  options: BootstrapOptions = {},
): Partial<Record<K, PairedDelta>> {
  if (base.length !== candidate.length) {
    throw new RangeError(`pairedBootstrap: sides differ in length (${base.length} vs ${candidate.length})`);
  }
  return pairedBootstrapsAt(
    base.length,
    (side, indices) => {
      const rows = side === 'base' ? base : candidate;
      // Fresh arrays each time: a statistic may keep the rows it is given.
      return statistic(indices === undefined ? rows : Array.from(indices, (i) => rows[i]!));
    },
    options,
  );
}

/** The side of a pair of runs a paired statistic is computed on. */
export type PairedSide = 'base' | 'candidate';

/**
 * {@link pairedBootstraps} over `n` pairs held by the caller (typed columns rather than an
 * object a row): `statistic(side, indices)` computes one side's statistics on its rows at
 * `indices`, or on every row in order when `indices` is undefined (the point estimate). The
 * resamples are the same draws as `pairedBootstraps` makes, and `indices` is one array refilled
 * for each (a statistic must not keep it): the same rows give the same deltas, to the last bit.
 */
export function pairedBootstrapsAt<K extends string>(
  n: number,
  statistic: (side: PairedSide, indices: Indices | undefined) => Record<K, number | null>,
  options: BootstrapOptions = {},
): Partial<Record<K, PairedDelta>> {
  const { iterations, seed, alpha } = { ...DEFAULT_BOOTSTRAP, ...options };
  if (!Number.isInteger(n) || n < 1) throw new RangeError('pairedBootstrap: needs at least one pair');
  if (!Number.isInteger(iterations) || iterations < 1) {
    throw new RangeError(`pairedBootstrap: iterations must be a positive integer, got ${iterations}`);
  }
  if (!(alpha > 0 && alpha < 1))
    throw new RangeError(`pairedBootstrap: alpha must be in (0, 1), got ${alpha}`);

  const finite = (stats: Record<K, number | null>, where: string) => {
    for (const key of Object.keys(stats) as K[]) {
      const value = stats[key];
      if (value !== null && !Number.isFinite(value)) {
        throw new RangeError(
          `pairedBootstrap: statistic "${key}" returned a non-finite value (${value}) on ${where}`,
        );
      }
    }
    return stats;
  };
  const baseStats = finite(statistic('base', undefined), 'base');
  const candidateStats = finite(statistic('candidate', undefined), 'candidate');
  const keys = (Object.keys(baseStats) as K[]).filter(
    (k) => baseStats[k] !== null && candidateStats[k] !== null && candidateStats[k] !== undefined,
  );

  const random = mulberry32(seed);
  const deltas = new Map<K, number[]>(keys.map((k) => [k, []]));
  // One index array for every resample, both sides drawing the same rows.
  const indices = new Uint32Array(n);
  for (let it = 0; it < iterations; it++) {
    for (let i = 0; i < n; i++) indices[i] = Math.floor(random() * n);
    const b = finite(statistic('base', indices), 'a base resample');
    const c = finite(statistic('candidate', indices), 'a candidate resample');
    for (const key of keys) {
      const bk = b[key];
      const ck = c[key];
      if (bk !== null && ck !== null) deltas.get(key)!.push(ck - bk);
    }
  }

  const result: Partial<Record<K, PairedDelta>> = {};
  for (const key of keys) {
    const values = deltas.get(key)!.sort((a, b) => a - b);
    const baseValue = baseStats[key] as number;
    const candidateValue = candidateStats[key] as number;
    const delta = candidateValue - baseValue;
    let otherSide = values.length;
    if (delta > 0) otherSide = values.filter((d) => d <= 0).length;
    else if (delta < 0) otherSide = values.filter((d) => d >= 0).length;
    result[key] = {
      n,
      base: baseValue,
      candidate: candidateValue,
      delta,
      ci:
        values.length > 0
          ? [percentileOfSorted(values, (alpha / 2) * 100), percentileOfSorted(values, (1 - alpha / 2) * 100)]
          : [delta, delta],
      // Two-sided, the resample itself counted as one on the other side ((k + 1) / (B + 1)):
      // B resamples cannot show a p below 1 / (B + 1), so none is ever 0.
      pValue: values.length > 0 ? Math.min(1, (2 * (otherSide + 1)) / (values.length + 1)) : 1,
    };
  }
  return result;
}

/** A column's values: whole numbers 0–255 in bytes, whole numbers in 4 bytes, or doubles. */
export type NumberArray = Uint8Array | Int32Array | Float64Array;

/** Values a new column has room for before it first grows. */
const INITIAL_CAPACITY = 1024;

/**
 * A growing column of numbers in the narrowest typed array that holds every value so far
 * exactly (outside the JavaScript heap, not an array of boxed values): one byte a value while
 * they are whole numbers from 0 to 255 (a pass, a 0/1 score, a label code), four while they are
 * 32-bit integers (a length), else eight (widened once, by a copy, when a value needs it). What
 * a scorer's rows are kept in for a million items.
 */
export class NumberColumn {
  private data: NumberArray = new Uint8Array(INITIAL_CAPACITY);
  length = 0;

  push(value: number): void {
    if (!fits(this.data, value)) this.data = widened(this.data, value, this.length);
    if (this.length === this.data.length) this.data = resized(this.data, this.length, this.length + 1);
    this.data[this.length++] = value;
  }

  /**
   * Appends `later`, the column of the values that come after this one's: the same values in
   * the same width as one column that was pushed every value.
   */
  merge(later: NumberColumn): void {
    const values = later.values();
    if (values.length === 0) return;
    const needed = this.length + values.length;
    const kind = WIDTHS[Math.max(WIDTHS.indexOf(kindOf(this.data)), WIDTHS.indexOf(kindOf(values)))]!;
    if (kind !== kindOf(this.data) || needed > this.data.length)
      this.data = resized(this.data, this.length, needed, kind);
    this.data.set(values, this.length);
    this.length = needed;
  }

  /** The values so far (a view, valid until the next push). */
  values(): NumberArray {
    return this.data.subarray(0, this.length);
  }

  /** The values as a typed array of their own, in the column's width (a byte a value for 0/1). */
  toState(): NumberArray {
    return this.data.slice(0, this.length);
  }

  static fromState(values: NumberArray): NumberColumn {
    const column = new NumberColumn();
    // A copy: the values may be a view into the bytes the state was read from.
    if (values.length > 0) column.data = values.slice();
    column.length = values.length;
    return column;
  }
}

type NumberArrayKind = Uint8ArrayConstructor | Int32ArrayConstructor | Float64ArrayConstructor;
/** Column widths from the narrowest. */
const WIDTHS: readonly NumberArrayKind[] = [Uint8Array, Int32Array, Float64Array];
const kindOf = (data: NumberArray) => data.constructor as NumberArrayKind;

/** `data`'s first `length` values in an array of `kind` with room for at least `needed` (doubling). */
function resized(data: NumberArray, length: number, needed: number, kind = kindOf(data)): NumberArray {
  let size = Math.max(data.length, INITIAL_CAPACITY);
  while (size < needed) size *= 2;
  const grown = new kind(size);
  grown.set(data.subarray(0, length));
  return grown;
}

const whole = (value: number) => Number.isInteger(value) && !Object.is(value, -0);
const isByte = (value: number) => whole(value) && value >= 0 && value <= 0xff;
const isInt32 = (value: number) => whole(value) && value >= -0x80000000 && value <= 0x7fffffff;

function fits(data: NumberArray, value: number): boolean {
  if (data instanceof Float64Array) return true;
  return data instanceof Uint8Array ? isByte(value) : isInt32(value);
}

/** `data`'s first `length` values in an array wide enough for `value` too. */
function widened(data: NumberArray, value: number, length: number): NumberArray {
  const wider = isInt32(value) ? new Int32Array(data.length) : new Float64Array(data.length);
  wider.set(data.subarray(0, length));
  return wider;
}

/**
 * A value's code in a table of values coded in the order first seen (`values[code]` is the
 * value, `codes` its inverse); a new value is added at the end. How label columns, class tables
 * and slice tables keep strings out of per-item arrays, and merge by mapping codes.
 */
export function codeOf(values: string[], codes: Map<string, number>, value: string): number {
  let code = codes.get(value);
  if (code === undefined) {
    code = values.length;
    values.push(value);
    codes.set(value, code);
  }
  return code;
}

/**
 * The standard normal quantile Φ⁻¹(p), p in (0, 1): Wichura's algorithm AS 241 (PPND16),
 * relative error about 1e-16 (the z of a 95 % interval is 1.959963984540054).
 */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile: p must be in (0, 1), got ${p}`);
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    return (
      (q *
        poly(
          r,
          [
            3.3871328727963665, 133.14166789178438, 1971.5909503065513, 13731.69376550946, 45921.95393154987,
            67265.7709270087, 33430.57558358813, 2509.0809287301227,
          ],
        )) /
      poly(
        r,
        [
          1, 42.31333070160091, 687.1870074920579, 5394.196021424751, 21213.794301586597, 39307.89580009271,
          28729.085735721943, 5226.495278852854,
        ],
      )
    );
  }
  let r = Math.sqrt(-Math.log(q < 0 ? p : 1 - p));
  let value: number;
  if (r <= 5) {
    r -= 1.6;
    value =
      poly(
        r,
        [
          1.4234371107496835, 4.630337846156546, 5.769497221460691, 3.6478483247632045, 1.2704582524523684,
          0.2417807251774506, 0.022723844989269184, 0.0007745450142783414,
        ],
      ) /
      poly(
        r,
        [
          1, 2.053191626637759, 1.6763848301838038, 0.6897673349851, 0.14810397642748008,
          0.015198666563616457, 0.0005475938084995345, 1.0507500716444169e-9,
        ],
      );
  } else {
    r -= 5;
    value =
      poly(
        r,
        [
          6.657904643501103, 5.463784911164114, 1.7848265399172913, 0.29656057182850487, 0.026532189526576124,
          0.0012426609473880784, 0.000027115555687434876, 2.0103343992922881e-7,
        ],
      ) /
      poly(
        r,
        [
          1, 0.599832206555888, 0.1369298809227358, 0.014875361290850615, 0.0007868691311456133,
          0.000018463183175100548, 1.421511758316446e-7, 2.0442631033899397e-15,
        ],
      );
  }
  return q < 0 ? -value : value;
}

/** c₀ + c₁x + c₂x² + …, by Horner's rule. */
function poly(x: number, coefficients: readonly number[]): number {
  let value = 0;
  for (let i = coefficients.length - 1; i >= 0; i -= 1) value = value * x + coefficients[i]!;
  return value;
}
