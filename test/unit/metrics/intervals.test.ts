import { describe, expect, it } from 'vitest';
import {
  MIN_ITEMS_FOR_INTERVAL,
  newcombePaired,
  proportionInterval,
  TOO_FEW_FOR_INTERVAL,
  wilson,
  withheldReason,
  zOf,
} from '../../../shared/lib/metrics/intervals.js';

describe('wilson: the score interval of one proportion', () => {
  // Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison of
  // seven methods", Statistics in Medicine 17:857–872, Table II, method 3 (score, no continuity
  // correction), to 4 decimals; the full digits from scipy's
  // binomtest(k, n).proportion_ci(method="wilson").
  it.each([
    [81, 263, 0.2552885198782742, 0.36620957698280004], // 0.2553, 0.3662
    [15, 148, 0.06238639953073629, 0.16048724172330803], // 0.0624, 0.1605
    [0, 20, 0, 0.16112515805281935], // 0, 0.1611
    [1, 29, 0.006113214292762667, 0.17175521879320282], // 0.0061, 0.1718
  ])('%i of %i: Newcombe’s published limits', (k, n, lo, hi) => {
    const [l, u] = wilson(k, n)!;
    expect(l).toBeCloseTo(lo, 12);
    expect(u).toBeCloseTo(hi, 12);
  });

  it('3 of 3 right is not [1, 1]: Wilson gives [0.4385, 1]', () => {
    // By hand: z² = 3.8415, centre (1 + z²/6)/(1 + z²/3) = 1.6402/2.2805 = 0.7193, half-width
    // (z/2.2805)·√(0 + z²/36) = 0.8594 · 0.3267 = 0.2808: [0.4385, 1] (scipy: 0.43850296824495).
    const [lo, hi] = wilson(3, 3)!;
    expect(lo).toBeCloseTo(0.4385029682449546, 12);
    expect(hi).toBe(1);
  });

  it('is null on no item, and refuses counts outside 0..n', () => {
    expect(wilson(0, 0)).toBeNull();
    expect(() => wilson(4, 3)).toThrow(RangeError);
    expect(() => wilson(-1, 3)).toThrow(RangeError);
  });

  it('uses the normal quantile of the level asked for', () => {
    expect(zOf()).toBeCloseTo(1.959963984540054, 12);
    expect(zOf(0.1)).toBeCloseTo(1.6448536269514722, 6);
    const [lo90] = wilson(5, 10, 0.1)!;
    const [lo95] = wilson(5, 10)!;
    expect(lo90).toBeGreaterThan(lo95);
    // scipy: binomtest(5, 10).proportion_ci(method="wilson") → [0.23659309, 0.76340691].
    expect(lo95).toBeCloseTo(0.236593090512564, 12);
  });
});

describe('proportionInterval: Wilson with a continuity correction, the interval a proportion gets', () => {
  it("R's prop.test(340, 400) (its default continuity correction): [0.8103309, 0.8827749]", () => {
    // As printed in R's documentation thread on prop.test's references (Wilson 1927, Newcombe 1998).
    const [lo, hi] = proportionInterval(340, 400)!;
    expect(lo).toBeCloseTo(0.8103309, 7);
    expect(hi).toBeCloseTo(0.8827749, 7);
  });

  it('Newcombe (1998), single proportion, method 4: 0/20 → [0, 0.2005], 1/29 → [0.0018, 0.1963]', () => {
    expect(proportionInterval(0, 20)![0]).toBe(0);
    expect(proportionInterval(0, 20)![1]).toBeCloseTo(0.2005, 4);
    const [lo, hi] = proportionInterval(1, 29)!;
    expect(lo).toBeCloseTo(0.0018, 4);
    expect(hi).toBeCloseTo(0.1963, 4);
  });

  it('is wider than plain Wilson, exact at 0 and n, and null on no item', () => {
    const [wl, wh] = wilson(7, 10)!;
    const [cl, ch] = proportionInterval(7, 10)!;
    expect(cl).toBeLessThan(wl);
    expect(ch).toBeGreaterThan(wh);
    expect(proportionInterval(3, 3)![1]).toBe(1);
    expect(proportionInterval(0, 0)).toBeNull();
    expect(() => proportionInterval(4, 3)).toThrow(RangeError);
  });
});

describe('newcombePaired: the difference of two proportions on the same items (method 10)', () => {
  it('Newcombe (1998), paired, Table II example (a): 36, 12, 2, 0 gives 0.0569 to 0.3404', () => {
    // Newcombe's table: a = 36 both positive, b = 12 first only, c = 2 second only, d = 0
    // neither; the difference (b − c)/n = 0.2. The first is the candidate here.
    const [lo, hi] = newcombePaired({ both: 36, candidateOnly: 12, baseOnly: 2, neither: 0 })!;
    expect(lo).toBeCloseTo(0.0569, 4);
    expect(hi).toBeCloseTo(0.3404, 4);
  });

  it('Fagerland, Lydersen & Laake (2017), the Cavo et al. table 59, 6, 16, 80: −0.1186 to −0.0046', () => {
    // "Statistical Analysis of Contingency Tables", chapter 8 (the paired 2×2 table), Newcombe
    // square-and-add: estimate −0.0621 (95% CI −0.1186 to −0.0046). The row variable is the
    // first of the pair (the candidate): 59 + 6 of 161 against 59 + 16.
    const counts = { both: 59, candidateOnly: 6, baseOnly: 16, neither: 80 };
    const [lo, hi] = newcombePaired(counts)!;
    expect(lo).toBeCloseTo(-0.1186, 4);
    expect(hi).toBeCloseTo(-0.0046, 4);
    // Continuity-corrected φ: without the correction the limits would be −0.1174 and −0.0059.
  });

  it('changes sign when the sides swap, and contains 0 when nothing differs', () => {
    const counts = { both: 10, candidateOnly: 5, baseOnly: 2, neither: 3 };
    const [lo, hi] = newcombePaired(counts)!;
    const [sLo, sHi] = newcombePaired({ ...counts, candidateOnly: 2, baseOnly: 5 })!;
    expect(sLo).toBeCloseTo(-hi, 12);
    expect(sHi).toBeCloseTo(-lo, 12);
    const [zLo, zHi] = newcombePaired({ both: 7, candidateOnly: 0, baseOnly: 0, neither: 3 })!;
    expect(zLo).toBeLessThan(0);
    expect(zHi).toBeGreaterThan(0);
  });

  it('is null on no item and refuses counts that are not whole numbers', () => {
    expect(newcombePaired({ both: 0, candidateOnly: 0, baseOnly: 0, neither: 0 })).toBeNull();
    expect(() => newcombePaired({ both: 1.5, candidateOnly: 0, baseOnly: 0, neither: 0 })).toThrow(
      RangeError,
    );
  });
});

describe('withheld intervals', () => {
  it('are said why, from one minimum per bootstrap figure', () => {
    const min = MIN_ITEMS_FOR_INTERVAL.kappa!;
    expect(withheldReason('kappa', min)).toBeUndefined();
    expect(withheldReason('kappa', min - 1)).toBe(`${TOO_FEW_FOR_INTERVAL} (n ${min - 1} < ${min})`);
    // Proportions have Wilson's interval at any n.
    expect(withheldReason('accuracy', 1)).toBeUndefined();
  });
});
