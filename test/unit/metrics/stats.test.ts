import { describe, expect, it } from 'vitest';
import {
  bootstrapCi,
  DEFAULT_BOOTSTRAP,
  type Indices,
  mcnemar,
  mcnemarPaired,
  mean,
  meanAt,
  meanOrNull,
  meanWithCi,
  mulberry32,
  NumberColumn,
  pairedBootstrap,
  pairedBootstraps,
  percentile,
  sum,
  summarizeLatency,
} from '../../../shared/lib/metrics/index.js';

describe('percentile', () => {
  it('interpolates linearly between closest ranks (numpy "linear")', () => {
    // rank = p/100 · (n − 1)
    expect(percentile([1, 2, 3, 4], 50)).toBe(2.5); // rank 1.5 → 2 + 0.5·(3 − 2)
    expect(percentile([1, 2, 3, 4], 25)).toBe(1.75); // rank 0.75
    expect(percentile([1, 2, 3, 4], 0)).toBe(1);
    expect(percentile([1, 2, 3, 4], 100)).toBe(4);
    const oneToTwenty = Array.from({ length: 20 }, (_, i) => i + 1);
    expect(percentile(oneToTwenty, 95)).toBeCloseTo(19.05, 12); // rank 18.05 → 19 + 0.05
    expect(percentile([10, 20, 30, 40, 50], 90)).toBeCloseTo(46, 12); // rank 3.6 → 40 + 0.6·10
  });

  it('sorts a copy and leaves the input untouched', () => {
    const values = [40, 10, 30, 20];
    expect(percentile(values, 50)).toBe(25);
    expect(values).toEqual([40, 10, 30, 20]);
  });

  it('returns 0 for an empty array and the value for a single one', () => {
    expect(percentile([], 95)).toBe(0);
    expect(percentile([7], 95)).toBe(7);
  });

  it('rejects p outside [0, 100]', () => {
    expect(() => percentile([1], 101)).toThrow(RangeError);
    expect(() => percentile([1], -1)).toThrow(RangeError);
    expect(() => percentile([1], Number.NaN)).toThrow(RangeError);
  });
});

describe('mean, sum and summarizeLatency', () => {
  it('computes the mean, 0 when empty', () => {
    expect(mean([1, 2, 3, 4])).toBe(2.5);
    expect(mean([])).toBe(0);
  });

  it('sums small floats without drift', () => {
    expect(sum(Array.from({ length: 10 }, () => 0.1))).toBe(1);
  });

  it('summarizes latencies as p50 / p95 / mean / max', () => {
    // sorted 100..1000 step 100: p50 rank 4.5 → 550; p95 rank 8.55 → 900 + 0.55·100 = 955
    const ms = [1000, 100, 900, 200, 800, 300, 700, 400, 600, 500];
    const s = summarizeLatency(ms);
    expect(s.p50).toBe(550);
    expect(s.p95).toBeCloseTo(955, 9);
    expect(s.mean).toBe(550);
    expect(s.max).toBe(1000);
    expect(summarizeLatency([])).toEqual({ p50: null, p95: null, mean: null, max: null });
  });
});

describe('meanAt', () => {
  it('is the compensated mean of the values the indices pick, to the last bit', () => {
    // Values of very different sizes: a plain running sum would lose the small ones.
    const values = [1e16, 1, -1e16, 0.1, 0.2, 0.3];
    expect(meanAt(values, [0, 1, 2])).toBe(1 / 3);
    expect(meanAt(values, [3, 4, 5, 5])).toBe(meanOrNull([0.1, 0.2, 0.3, 0.3]));
    const random = mulberry32(7);
    const many = Array.from({ length: 500 }, () => random() * 1000 - 300);
    const indices = Array.from({ length: 2000 }, () => Math.floor(random() * many.length));
    expect(meanAt(many, indices)).toBe(meanOrNull(indices.map((i) => many[i]!)));
  });

  it('is null for no indices', () => {
    expect(meanAt([1, 2], [])).toBeNull();
  });
});

describe('mulberry32', () => {
  it('is deterministic per seed and stays in [0, 1)', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const c = mulberry32(43);
    const seqA = Array.from({ length: 1000 }, () => a());
    const seqB = Array.from({ length: 1000 }, () => b());
    const seqC = Array.from({ length: 1000 }, () => c());
    expect(seqA).toEqual(seqB);
    expect(seqA).not.toEqual(seqC);
    expect(seqA.every((x) => x >= 0 && x < 1)).toBe(true);
    // Roughly uniform: the mean of 1000 draws is within 0.05 of 0.5.
    expect(Math.abs(mean(seqA) - 0.5)).toBeLessThan(0.05);
  });
});

describe('bootstrapCi', () => {
  const values = Array.from({ length: 50 }, (_, i) => (i % 5 === 0 ? 0 : 1)); // mean 0.8
  const meanOf = (indices: Indices) => [...indices].reduce((s, i) => s + values[i]!, 0) / indices.length;

  it('returns the same interval for the same seed and a different one for another seed', () => {
    // Continuous values, so two seeds cannot land on the same order statistics by chance.
    const spread = Array.from({ length: 50 }, (_, i) => ((i * 37) % 101) / 100);
    const meanOfSpread = (indices: Indices) =>
      [...indices].reduce((s, i) => s + spread[i]!, 0) / indices.length;
    const a = bootstrapCi(spread.length, meanOfSpread, { iterations: 500, seed: 3 });
    expect(bootstrapCi(spread.length, meanOfSpread, { iterations: 500, seed: 3 })).toEqual(a);
    expect(bootstrapCi(spread.length, meanOfSpread, { iterations: 500, seed: 4 })).not.toEqual(a);
  });

  it('contains the point estimate and narrows as alpha grows', () => {
    const ci95 = bootstrapCi(values.length, meanOf);
    const ci50 = bootstrapCi(values.length, meanOf, { alpha: 0.5 });
    expect(ci95[0]).toBeLessThanOrEqual(0.8);
    expect(ci95[1]).toBeGreaterThanOrEqual(0.8);
    expect(ci50[1] - ci50[0]).toBeLessThan(ci95[1] - ci95[0]);
  });

  it('collapses to a point for a constant statistic', () => {
    expect(bootstrapCi(5, () => 0.25)).toEqual([0.25, 0.25]);
  });

  it('rejects n = 0, bad iterations/alpha and non-finite statistics', () => {
    expect(() => bootstrapCi(0, () => 1)).toThrow(RangeError);
    expect(() => bootstrapCi(3, () => 1, { iterations: 0 })).toThrow(RangeError);
    expect(() => bootstrapCi(3, () => 1, { alpha: 1 })).toThrow(RangeError);
    expect(() => bootstrapCi(3, () => Number.NaN)).toThrow(RangeError);
  });

  it('meanWithCi reports n, mean and a CI; no CI when empty', () => {
    const m = meanWithCi(values, { seed: 3, iterations: 500 });
    expect(m.n).toBe(50);
    expect(m.mean).toBeCloseTo(0.8, 12);
    expect(m.ci).toEqual(bootstrapCi(values.length, meanOf, { iterations: 500, seed: 3 }));
    expect(meanWithCi([])).toEqual({ n: 0, mean: null, ci: undefined });
  });
});

describe('mcnemar', () => {
  it("matches Agresti's presidential-approval example (chi-square, continuity-corrected)", () => {
    // Agresti, An Introduction to Categorical Data Analysis: b = 150 (approve → disapprove),
    // c = 86 (disapprove → approve). χ² = (|150 − 86| − 1)² / 236 = 63² / 236 = 16.8178;
    // p = P(χ²₁ > 16.8178) = 4.1146e-5 (scipy.stats.chi2.sf).
    const r = mcnemar(150, 86);
    expect(r.method).toBe('chi2');
    expect(r.statistic).toBeCloseTo(3969 / 236, 12);
    expect(r.pValue).toBeCloseTo(4.114562281345944e-5, 9);
    expect(Math.abs(r.pValue / 4.114562281345944e-5 - 1)).toBeLessThan(1e-6);
  });

  it('matches a second chi-square case (b = 121, c = 59)', () => {
    // χ² = 61² / 180 = 20.6722; p = 5.4501e-6 (scipy)
    const r = mcnemar(121, 59);
    expect(r.statistic).toBeCloseTo(3721 / 180, 12);
    expect(Math.abs(r.pValue / 5.450094825427117e-6 - 1)).toBeLessThan(1e-6);
  });

  it('uses the exact binomial test for small b + c', () => {
    // b = 1, c = 9, n = 10: P(X ≤ 1) = (C(10,0) + C(10,1)) / 2¹⁰ = 11/1024; two-sided = 22/1024
    const r = mcnemar(1, 9);
    expect(r.method).toBe('exact');
    expect(r.statistic).toBe(1);
    expect(r.pValue).toBeCloseTo(22 / 1024, 12);
    // b = 5, c = 15, n = 20: 2·P(X ≤ 5) = 0.04138946533203125 (scipy binom)
    expect(mcnemar(15, 5).pValue).toBeCloseTo(0.04138946533203125, 12);
  });

  it('gives p = 1 for balanced or absent discordance', () => {
    expect(mcnemar(0, 0)).toEqual({ b: 0, c: 0, statistic: 0, pValue: 1, method: 'exact' });
    expect(mcnemar(4, 4).pValue).toBe(1);
    expect(mcnemar(40, 40).pValue).toBeLessThanOrEqual(1);
    expect(mcnemar(40, 40).pValue).toBeGreaterThan(0.9);
  });

  it('lets the caller move the exact/chi-square threshold', () => {
    expect(mcnemar(150, 86, { exactBelow: 1000 }).method).toBe('exact');
    expect(mcnemar(150, 86, { exactBelow: 1000 }).pValue).toBeGreaterThan(0);
    expect(mcnemar(1, 9, { exactBelow: 0 }).method).toBe('chi2');
  });

  it('rejects negative or fractional counts', () => {
    expect(() => mcnemar(-1, 2)).toThrow(RangeError);
    expect(() => mcnemar(1.5, 2)).toThrow(RangeError);
  });

  it('counts discordant pairs from per-item correctness', () => {
    const a = [true, true, true, false, false, true];
    const b = [true, false, false, true, false, true];
    // A right & B wrong: items 2, 3 → b = 2; A wrong & B right: item 4 → c = 1
    const r = mcnemarPaired(a, b);
    expect(r.b).toBe(2);
    expect(r.c).toBe(1);
    expect(r.pValue).toBe(1); // 2·P(X ≤ 1 | n = 3) = 2·4/8 → capped at 1
    expect(() => mcnemarPaired([true], [])).toThrow(RangeError);
  });
});

describe('pairedBootstrap', () => {
  const meanOf = (rows: readonly number[]) => rows.reduce((s, v) => s + v, 0) / rows.length;
  const spread = Array.from({ length: 40 }, (_, i) => ((i * 37) % 101) / 100);

  it('gives delta 0, CI [0, 0] and p = 1 for identical sides', () => {
    const d = pairedBootstrap(spread, [...spread], meanOf);
    expect(d.n).toBe(40);
    expect(d.base).toBe(d.candidate);
    expect(d.delta).toBe(0);
    expect(d.ci).toEqual([0, 0]);
    expect(d.pValue).toBe(1);
  });

  it('finds a candidate better on every item: positive delta, CI above 0, small p', () => {
    const candidate = spread.map((v, i) => v + 0.05 + (i % 3) * 0.05); // +0.05..+0.15 on each item
    const d = pairedBootstrap(spread, candidate, meanOf);
    expect(d.delta).toBeCloseTo(meanOf(candidate) - meanOf(spread), 12);
    expect(d.delta).toBeGreaterThan(0);
    expect(d.ci[0]).toBeGreaterThan(0);
    expect(d.ci[1]).toBeGreaterThanOrEqual(d.ci[0]);
    // No resample goes to ≤ 0: p is (0 + 1) / (B + 1) on each side, never 0.
    expect(d.pValue).toBeCloseTo(2 / (DEFAULT_BOOTSTRAP.iterations + 1), 12);
    // The mirror image: the base is the better run.
    const worse = pairedBootstrap(candidate, spread, meanOf);
    expect(worse.delta).toBeCloseTo(-d.delta, 12);
    expect(worse.ci[1]).toBeLessThan(0);
    expect(worse.pValue).toBe(d.pValue);
  });

  it('keeps p near 1 and the CI around 0 when the sides differ by noise', () => {
    const candidate = spread.map((v, i) => v + (i % 2 === 0 ? 0.1 : -0.1)); // delta exactly 0 on average
    const d = pairedBootstrap(spread, candidate, meanOf);
    expect(d.delta).toBeCloseTo(0, 12);
    expect(d.ci[0]).toBeLessThan(0);
    expect(d.ci[1]).toBeGreaterThan(0);
    expect(d.pValue).toBeGreaterThan(0.5);
  });

  it('resamples the same item indices as bootstrapCi (same seed → same interval)', () => {
    const candidate = spread.map((v, i) => (i % 4 === 0 ? v - 0.2 : v + 0.1));
    const options = { iterations: 300, seed: 7 };
    const d = pairedBootstrap(spread, candidate, meanOf, options);
    const pick = (rows: number[], indices: Indices) => Array.from(indices, (i) => rows[i]!);
    expect(d.ci).toEqual(
      bootstrapCi(
        spread.length,
        (indices) => meanOf(pick(candidate, indices)) - meanOf(pick(spread, indices)),
        options,
      ),
    );
  });

  it('is deterministic: same seed, same result; another seed, another interval', () => {
    const candidate = spread.map((v, i) => (i % 4 === 0 ? v - 0.2 : v + 0.1));
    const a = pairedBootstrap(spread, candidate, meanOf, { seed: 3 });
    expect(pairedBootstrap(spread, candidate, meanOf, { seed: 3 })).toEqual(a);
    expect(pairedBootstrap(spread, candidate, meanOf, { seed: 4 }).ci).not.toEqual(a.ci);
  });

  it('computes several statistics on the same resamples', () => {
    const candidate = spread.map((v) => v + 0.1);
    const both = pairedBootstraps(spread, candidate, (rows) => ({
      mean: meanOf(rows),
      max: Math.max(...rows),
    }));
    expect(both.mean).toEqual(pairedBootstrap(spread, candidate, meanOf));
    expect(both.max!.delta).toBeCloseTo(0.1, 12);
  });

  it('rejects sides of different lengths, empty sides, bad options and non-finite statistics', () => {
    expect(() => pairedBootstrap([1, 2], [1], meanOf)).toThrow(RangeError);
    expect(() => pairedBootstrap([], [], meanOf)).toThrow(RangeError);
    expect(() => pairedBootstrap([1], [2], meanOf, { iterations: 0 })).toThrow(RangeError);
    expect(() => pairedBootstrap([1], [2], meanOf, { alpha: 0 })).toThrow(RangeError);
    expect(() => pairedBootstrap([1], [2], () => Number.NaN)).toThrow(RangeError);
  });

  it('leaves out a statistic with no data on a side (null), and skips resamples where it has none', () => {
    const out = pairedBootstraps([1, 2, 3], [2, 3, 4], (rows) => ({
      mean: meanOf(rows),
      none: null,
      // Defined only when the resample holds the first row.
      sometimes: rows.includes(1) || rows.includes(2) ? meanOf(rows) : null,
    }));
    expect(out.none).toBeUndefined();
    expect(out.mean!.delta).toBeCloseTo(1, 12);
    expect(out.sometimes!.ci[0]).toBeCloseTo(1, 12);
    expect(out.sometimes!.ci[1]).toBeCloseTo(1, 12);
  });
});

describe('NumberColumn', () => {
  it('holds every value exactly in the narrowest array that fits them all, widening as values need', () => {
    const column = new NumberColumn();
    const pushed: number[] = [];
    const push = (value: number) => {
      column.push(value);
      pushed.push(value);
    };
    for (let i = 0; i < 3000; i += 1) push(i % 256);
    expect(column.values()).toBeInstanceOf(Uint8Array);
    push(300);
    push(-1);
    expect(column.values()).toBeInstanceOf(Int32Array);
    push(2 ** 31);
    expect(column.values()).toBeInstanceOf(Float64Array);
    const other = new NumberColumn();
    other.push(1);
    other.push(-0);
    other.push(0.25);
    other.push(Number.NaN);
    for (const [col, values] of [
      [column, pushed],
      [other, [1, -0, 0.25, Number.NaN]],
    ] as const) {
      expect(col.length).toBe(values.length);
      const held = Array.from(col.values());
      expect(held.every((v, i) => Object.is(v, values[i]))).toBe(true);
    }
    expect(new NumberColumn().values()).toHaveLength(0);
  });
});
