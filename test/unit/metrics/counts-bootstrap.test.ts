/**
 * The bootstrap of a table of counts (a confusion matrix) drawn as multinomial counts, one exact
 * binomial a cell: the binomial's moments in each of its regimes (waiting times, Knuth's beta
 * recursion, the flip above p = 0.5) and its exact small distribution, and the counts bootstrap's
 * intervals against the rows' bootstrap of the same data (the same distribution, other draws).
 */
import { describe, expect, it } from 'vitest';
import { binomial, bootstrapCis, countsBootstrapCis, mulberry32 } from '../../../shared/lib/metrics/index.js';

/** Mean and variance of `draws` draws of Binomial(n, p). */
function moments(n: number, p: number, draws: number, seed: number): { mean: number; variance: number } {
  const random = mulberry32(seed);
  let total = 0;
  let squares = 0;
  for (let i = 0; i < draws; i++) {
    const x = binomial(n, p, random);
    expect(Number.isInteger(x) && x >= 0 && x <= n).toBe(true);
    total += x;
    squares += x * x;
  }
  const mean = total / draws;
  return { mean, variance: squares / draws - mean * mean };
}

describe('binomial', () => {
  it.each([
    // n·p < 16: waiting times.
    [10, 0.3],
    [1_000, 0.004],
    // the beta recursion, large and huge n, and the flip above 0.5.
    [200, 0.25],
    [10_000_000, 0.37],
    [5_000, 0.93],
    [3, 0.999],
  ])('Binomial(%d, %d) has mean np and variance np(1 − p)', (n, p) => {
    const draws = 20_000;
    const { mean, variance } = moments(n, p, draws, 11);
    const expectedVariance = n * p * (1 - p);
    // Within 4 standard errors of the mean; the variance within 6% (its standard error is ~1%).
    expect(Math.abs(mean - n * p)).toBeLessThan(4 * Math.sqrt(expectedVariance / draws));
    expect(Math.abs(variance / expectedVariance - 1)).toBeLessThan(0.06);
  });

  it('gives Binomial(3, 1/2) its 1/8, 3/8, 3/8, 1/8', () => {
    const random = mulberry32(5);
    const seen = [0, 0, 0, 0];
    const draws = 80_000;
    for (let i = 0; i < draws; i++) seen[binomial(3, 0.5, random)]! += 1;
    const expected = [1 / 8, 3 / 8, 3 / 8, 1 / 8];
    seen.forEach((count, k) => {
      const q = expected[k]!;
      expect(Math.abs(count / draws - q)).toBeLessThan(4 * Math.sqrt((q * (1 - q)) / draws));
    });
  });

  it('is 0 and n at p = 0 and p = 1, and 0 with no trials', () => {
    const random = mulberry32(1);
    expect(binomial(50, 0, random)).toBe(0);
    expect(binomial(50, 1, random)).toBe(50);
    expect(binomial(0, 0.4, random)).toBe(0);
  });
});

describe('countsBootstrapCis', () => {
  it('gives the intervals the rows’ bootstrap gives, a resample always holding n', () => {
    // A 2×2 confusion of 400 rows: TP 150, FN 50, FP 30, TN 170.
    const counts = [150, 50, 30, 170];
    const rows: number[] = counts.flatMap((c, cell) => Array<number>(c).fill(cell));
    const kappa = (cells: readonly number[]) => {
      const n = cells[0]! + cells[1]! + cells[2]! + cells[3]!;
      const observed = (cells[0]! + cells[3]!) / n;
      const expected =
        ((cells[0]! + cells[1]!) * (cells[0]! + cells[2]!) +
          (cells[2]! + cells[3]!) * (cells[1]! + cells[3]!)) /
        (n * n);
      return (observed - expected) / (1 - expected);
    };
    const iterations = 8_000;
    const sizes = new Set<number>();
    const byCounts = countsBootstrapCis(
      counts,
      (sample) => {
        sizes.add(sample.reduce((a, b) => a + b, 0));
        return { kappa: kappa(sample), precision: sample[0]! / (sample[0]! + sample[2]!) };
      },
      { iterations, seed: 3 },
    );
    const cells = [0, 0, 0, 0];
    const byRows = bootstrapCis(
      rows.length,
      (indices) => {
        cells.fill(0);
        for (const i of indices) cells[rows[i]!]! += 1;
        return { kappa: kappa(cells), precision: cells[0]! / (cells[0]! + cells[2]!) };
      },
      { iterations, seed: 3 },
    );
    expect([...sizes]).toEqual([400]);
    // κ = 0.6 here, its interval about ±0.08: the two bootstraps' ends within Monte Carlo error.
    for (const key of ['kappa', 'precision'] as const)
      for (const end of [0, 1])
        expect(Math.abs(byCounts[key]![end]! - byRows[key]![end]!)).toBeLessThan(0.01);
    expect(byCounts.kappa![0]).toBeLessThan(0.6);
    expect(byCounts.kappa![1]).toBeGreaterThan(0.6);
  });

  it('resamples nothing from an empty cell and everything from a lone one', () => {
    const seen: number[][] = [];
    countsBootstrapCis(
      [0, 12, 0],
      (sample) => {
        seen.push([...sample]);
        return { share: sample[1]! / 12 };
      },
      { iterations: 5 },
    );
    expect(seen).toEqual(Array(5).fill([0, 12, 0]));
  });

  it('refuses counts that are not whole or hold no row', () => {
    expect(() => countsBootstrapCis([0, 0], () => ({ x: 1 }))).toThrow(RangeError);
    expect(() => countsBootstrapCis([1.5, 2], () => ({ x: 1 }))).toThrow(RangeError);
    expect(() => countsBootstrapCis([-1, 2], () => ({ x: 1 }))).toThrow(RangeError);
  });
});
