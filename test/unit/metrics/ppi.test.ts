import { describe, expect, it } from 'vitest';
import { ppiMean } from '../../../shared/lib/metrics/ppi.js';
import { mulberry32, normalQuantile } from '../../../shared/lib/metrics/stats.js';

const Z95 = 1.959963984540054; // Φ⁻¹(0.975), as scipy.stats.norm.ppf gives it

// n = 4 labelled rows, N = 6 unlabelled rows; a share of a label (0/1).
const hand = {
  gold: [1, 0, 1, 1],
  judge: [1, 0, 0, 1],
  judgeUnlabelled: [1, 1, 0, 1, 0, 1],
};

describe('ppiMean: a case worked by hand', () => {
  it('power-tunes λ, then gives the estimate, its variance and the z interval', () => {
    // θ₁ (λ = 1) = mean(Ỹ) + mean(Y − Ŷ) = 4/6 + 1/4 = 11/12.
    // λ numerator: population Cov(Y − θ₁, Ŷ − θ₁) = Cov(Y, Ŷ) = mean(YŶ) − mean(Y)·mean(Ŷ)
    //   = 2/4 − (3/4)(1/2) = 1/8.
    // λ denominator: (1 + n/N) · sample variance of the 10 judge values (6 ones of 10)
    //   = (1 + 4/6) · (10 · 0.6 · 0.4 / 9) = (5/3)(4/15) = 4/9.
    // λ = (1/8) / (4/9) = 9/32 = 0.28125 (inside [0, 1], so not clipped).
    // estimate = λ·mean(Ỹ) + mean(Y) − λ·mean(Ŷ) = 3/4 + (9/32)(2/3 − 1/2) = 51/64.
    // Var, imputed term: λ² · Var(Ỹ) / N = (81/1024)(2/9)/6 = 3/1024.
    // Var, rectifier term: Y − λŶ = [23/32, 0, 1, 23/32], mean 39/64, mean of squares
    //   1041/2048, so Var = 1041/2048 − (39/64)² = 561/4096, over n: 561/16384.
    // σ̂² = 48/16384 + 561/16384 = 609/16384; σ̂ = √609 / 128.
    const r = ppiMean(hand);
    expect(r.lambda).toBe(9 / 32);
    expect(r.estimate).toBeCloseTo(51 / 64, 14);
    const se = Math.sqrt(609) / 128;
    expect(r.ci![0]).toBeCloseTo(51 / 64 - Z95 * se, 14);
    expect(r.ci![1]).toBeCloseTo(51 / 64 + Z95 * se, 14);
    // Classical: mean(Y) = 3/4, population variance 3/16, σ = √(3/16 / 4) = √3/8.
    expect(r.classical.estimate).toBe(3 / 4);
    expect(r.classical.ci![0]).toBeCloseTo(3 / 4 - (Z95 * Math.sqrt(3)) / 8, 14);
    expect(r.classical.ci![1]).toBeCloseTo(3 / 4 + (Z95 * Math.sqrt(3)) / 8, 14);
    // Effective labels: n · (classical width / PPI width)² = 4 · (3/64) / (609/16384) = 1024/203.
    expect(r.effectiveLabels).toBeCloseTo(1024 / 203, 12);
    // Judge only, over all ten rows: 2 + 4 ones of 10.
    expect(r.judgeOnly.estimate).toBe(0.6);
    expect(r).toMatchObject({ nLabelled: 4, nUnlabelled: 6, alpha: 0.05 });
  });

  it('equals the reference implementation (ppi_py) to the last digits', () => {
    // ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=0.05) on the same data.
    const r = ppiMean(hand);
    expect(r.ci![0]).toBeCloseTo(0.4190012115950022, 14);
    expect(r.ci![1]).toBeCloseTo(1.1747487884049979, 14);
    expect(r.classical.ci![0]).toBeCloseTo(0.3256553497214356, 14);
  });

  it('λ = 1 is plain PPI: mean(Ỹ) + mean(Y − Ŷ), variance Var(Ỹ)/N + Var(Y − Ŷ)/n', () => {
    // 2/3 + 1/4 = 11/12; (2/9)/6 + (3/16)/4 = 1/27 + 3/64.
    const r = ppiMean({ ...hand, lambda: 1 });
    expect(r.lambda).toBe(1);
    expect(r.estimate).toBeCloseTo(11 / 12, 14);
    const se = Math.sqrt(1 / 27 + 3 / 64);
    expect(r.ci![0]).toBeCloseTo(11 / 12 - Z95 * se, 14);
    expect(r.ci![1]).toBeCloseTo(11 / 12 + Z95 * se, 14);
    // ppi_py, lam=1.
    expect(r.ci![0]).toBeCloseTo(0.3489126399629029, 14);
    expect(r.ci![1]).toBeCloseTo(1.4844206933704305, 14);
  });

  it('λ = 0 is the classical estimate and interval exactly', () => {
    const r = ppiMean({ ...hand, lambda: 0 });
    expect(r.estimate).toBe(r.classical.estimate);
    expect(r.ci).toEqual(r.classical.ci);
    expect(r.effectiveLabels).toBeCloseTo(4, 12);
  });

  it('a fixed λ is used as given, even outside [0, 1]', () => {
    // estimate = 3/4 + λ(2/3 − 1/2) = 3/4 + 2·(1/6).
    expect(ppiMean({ ...hand, lambda: 2 }).estimate).toBeCloseTo(3 / 4 + 1 / 3, 14);
  });

  it('takes its z from alpha', () => {
    const r = ppiMean({ ...hand, alpha: 0.1 });
    const se = Math.sqrt(609) / 128;
    expect(r.ci![1] - r.ci![0]).toBeCloseTo(2 * 1.6448536269514722 * se, 14);
  });
});

describe('ppiMean: λ clipping', () => {
  it('clips a tuned λ above 1 to 1', () => {
    // Y = 2Ŷ: Cov(Y, Ŷ) = 2·Var(Ŷ) = 2.5; the 24 judge values (0..3, six each) have sample
    // variance 30/23; (1 + 4/20) · 30/23 = 36/23; λ = 2.5 · 23/36 = 1.597… → 1.
    const r = ppiMean({
      gold: [0, 2, 4, 6],
      judge: [0, 1, 2, 3],
      judgeUnlabelled: Array.from({ length: 20 }, (_, i) => i % 4),
    });
    expect(r.lambda).toBe(1);
    expect(r.estimate).toBeCloseTo(3, 14);
    // ppi_py's interval on the same data.
    expect(r.ci![0]).toBeCloseTo(1.7997720809111724, 13);
    expect(r.ci![1]).toBeCloseTo(4.200227919088828, 13);
  });

  it('clips a tuned λ below 0 to 0, which is the classical interval', () => {
    // Y = 1 − Ŷ: Cov(Y, Ŷ) = −1/4; the 9 judge values (5 ones) have sample variance 5/18;
    // (1 + 4/5) · 5/18 = 1/2; λ = −1/2 → 0.
    const r = ppiMean({ gold: [1, 0, 1, 0], judge: [0, 1, 0, 1], judgeUnlabelled: [1, 0, 1, 0, 1] });
    expect(r.lambda).toBe(0);
    expect(r.estimate).toBe(0.5);
    expect(r.ci).toEqual(r.classical.ci);
    expect(r.ci![0]).toBeCloseTo(0.010009003864986488, 14);
  });

  it('is 0, not NaN, when the judge gives one value on every row', () => {
    const r = ppiMean({ gold: [1, 0, 1], judge: [1, 1, 1], judgeUnlabelled: [1, 1] });
    expect(r.lambda).toBe(0);
    expect(r.ci).toEqual(r.classical.ci);
  });
});

describe('ppiMean: weights', () => {
  it('weights of 1, or any constant, change nothing', () => {
    const plain = ppiMean(hand);
    expect(ppiMean({ ...hand, weights: [1, 1, 1, 1], weightsUnlabelled: [1, 1, 1, 1, 1, 1] })).toEqual(plain);
    const scaled = ppiMean({ ...hand, weights: [3, 3, 3, 3], weightsUnlabelled: [7, 7, 7, 7, 7, 7] });
    expect(scaled.lambda).toBeCloseTo(plain.lambda!, 14);
    expect(scaled.ci![0]).toBeCloseTo(plain.ci![0], 14);
    expect(scaled.ci![1]).toBeCloseTo(plain.ci![1], 14);
  });

  it('equals ppi_py with w (labelled weights) on a share of a label, alpha 0.1', () => {
    const r = ppiMean({
      gold: [1, 0, 1, 1, 0, 1, 1, 0],
      judge: [1, 0, 1, 0, 0, 1, 1, 1],
      judgeUnlabelled: [1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 1, 1],
      alpha: 0.1,
      weights: [1, 2, 1, 3, 1, 1, 2, 1],
    });
    expect(r.lambda).toBeCloseTo(0.1278276131045241, 14);
    expect(r.estimate).toBeCloseTo(0.687971268850754, 14);
    expect(r.ci![0]).toBeCloseTo(0.3040470937982272, 14);
    expect(r.ci![1]).toBeCloseTo(1.0718954439032808, 14);
    // Classical, weighted: Σ wY / Σ w = 8/12 = 2/3.
    expect(r.classical.estimate).toBeCloseTo(2 / 3, 14);
  });

  it('equals ppi_py with w and w_unlabeled on a numeric gold', () => {
    const r = ppiMean({
      gold: [2.5, 3, 4, 1.5, 5, 3.5],
      judge: [3, 3, 4.5, 2, 4.5, 4],
      judgeUnlabelled: [3, 4, 2.5, 5, 3.5, 4, 2, 4.5, 3],
      weights: [0.5, 1, 1.5, 1, 2, 1],
      weightsUnlabelled: [1, 1, 2, 1, 1, 0.5, 1, 1, 1],
    });
    expect(r.lambda).toBeCloseTo(0.7702599561395013, 14);
    expect(r.estimate).toBeCloseTo(3.3132278738791, 13);
    expect(r.ci![0]).toBeCloseTo(2.430075260854295, 13);
    expect(r.ci![1]).toBeCloseTo(4.196380486903905, 13);
    // The judge-only figure is the plain mean over all 15 rows: (21 + 31.5) / 15.
    expect(r.judgeOnly.estimate).toBeCloseTo(3.5, 14);
  });
});

describe('ppiMean: too few rows, bad input', () => {
  it('is null, never 0 or NaN, with fewer than 2 labelled rows', () => {
    for (const gold of [[], [1]]) {
      const r = ppiMean({ gold, judge: gold, judgeUnlabelled: [1, 0, 1] });
      expect(r).toMatchObject({
        estimate: null,
        ci: null,
        classical: { estimate: null, ci: null },
        lambda: null,
        effectiveLabels: null,
        nLabelled: gold.length,
        nUnlabelled: 3,
      });
      expect(r.judgeOnly.estimate).not.toBeNull();
    }
    expect(ppiMean({ gold: [], judge: [], judgeUnlabelled: [] }).judgeOnly.estimate).toBeNull();
  });

  it('gives the classical figures alone when no row lacks gold', () => {
    const r = ppiMean({ gold: [1, 0, 1, 1], judge: [1, 0, 0, 1], judgeUnlabelled: [] });
    expect(r.estimate).toBeNull();
    expect(r.ci).toBeNull();
    expect(r.lambda).toBeNull();
    expect(r.classical.estimate).toBe(0.75);
    expect(r.judgeOnly.estimate).toBe(0.5);
  });

  it('has no effective labels when an interval has width 0', () => {
    // Every gold and judge value equal: both intervals collapse.
    const r = ppiMean({ gold: [1, 1, 1], judge: [1, 1, 1], judgeUnlabelled: [1, 1] });
    expect(r.estimate).toBe(1);
    expect(r.effectiveLabels).toBeNull();
  });

  it('rejects bad input with a clear error', () => {
    expect(() => ppiMean({ gold: [1, 0], judge: [1], judgeUnlabelled: [] })).toThrow(/as long as each other/);
    expect(() => ppiMean({ gold: [1, Number.NaN], judge: [1, 0], judgeUnlabelled: [] })).toThrow(/gold\[1\]/);
    expect(() => ppiMean({ ...hand, alpha: 1 })).toThrow(/alpha/);
    expect(() => ppiMean({ ...hand, lambda: Number.POSITIVE_INFINITY })).toThrow(/lambda/);
    expect(() => ppiMean({ ...hand, weights: [1, 1, 1] })).toThrow(/3 entries for 4 rows/);
    expect(() => ppiMean({ ...hand, weights: [1, -1, 1, 1] })).toThrow(/weights\[1\]/);
    expect(() => ppiMean({ ...hand, weightsUnlabelled: [0, 0, 0, 0, 0, 0] })).toThrow(/all 0/);
  });
});

/** Standard normal draws (Box–Muller) from a seeded uniform generator. */
function normals(random: () => number, count: number, mean = 0, sd = 1): number[] {
  return Array.from(
    { length: count },
    () => mean + sd * Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random()),
  );
}

describe('ppiMean: the reference implementation’s own tests', () => {
  it('recovers the mean exactly when the judge is off by a constant (λ clips to 1)', () => {
    // ppi_py test_ppi_mean_pointestimate: Y ~ N(0, 1), Ŷ = Y + 2, Ỹ = 2 everywhere → 0.
    const gold = normals(mulberry32(7), 100);
    const r = ppiMean({ gold, judge: gold.map((y) => y + 2), judgeUnlabelled: Array(10_000).fill(2) });
    expect(r.lambda).toBe(1);
    expect(r.estimate).toBeCloseTo(0, 12);
  });

  it('covers the true mean at its level with a useless judge', () => {
    // ppi_py test_ppi_mean_ci, fewer trials: Y ~ N(0, 1), Ŷ and Ỹ ~ N(−2, 1) independent of Y.
    const random = mulberry32(11);
    const trials = 400;
    let covered = 0;
    for (let t = 0; t < trials; t += 1) {
      const r = ppiMean({
        gold: normals(random, 500),
        judge: normals(random, 500, -2),
        judgeUnlabelled: normals(random, 2_000, -2),
        alpha: 0.1,
      });
      if (r.ci![0] <= 0 && r.ci![1] >= 0) covered += 1;
    }
    expect(covered / trials).toBeGreaterThanOrEqual(0.87);
  });
});

describe('normalQuantile', () => {
  it('matches scipy.stats.norm.ppf to about 1e-15', () => {
    const cases: [number, number][] = [
      [0.975, 1.959963984540054],
      [0.95, 1.6448536269514722],
      [0.995, 2.5758293035489004],
      [0.6, 0.2533471031357997],
      [0.5, 0],
      [0.01, -2.3263478740408408],
      [1e-10, -6.361340902404056],
      [1e-300, -37.0470962993612],
    ];
    for (const [p, z] of cases) expect(normalQuantile(p)).toBeCloseTo(z, 13);
  });

  it('rejects p outside (0, 1)', () => {
    expect(() => normalQuantile(0)).toThrow(RangeError);
    expect(() => normalQuantile(1)).toThrow(RangeError);
  });
});
