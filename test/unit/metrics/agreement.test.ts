import { describe, expect, it } from 'vitest';
import {
  averageRanks,
  balancedAccuracy,
  meanAbsoluteError,
  pearson,
  rocAuc,
  spearman,
} from '../../../shared/lib/metrics/index.js';

describe('averageRanks', () => {
  it('gives tied values the average of the ranks they span, in input order', () => {
    expect(Array.from(averageRanks([10, 20, 20, 30]))).toEqual([1, 2.5, 2.5, 4]);
    expect(Array.from(averageRanks([3, 1, 2]))).toEqual([3, 1, 2]);
    // Three-way tie on ranks 2, 3, 4 → 3 each.
    expect(Array.from(averageRanks([5, 7, 7, 7, 9]))).toEqual([1, 3, 3, 3, 5]);
  });
});

describe('meanAbsoluteError', () => {
  it('averages |value − target|; n/a when empty', () => {
    // |1−2| + |2−2| + |3−5| = 3, / 3 = 1.
    expect(meanAbsoluteError([1, 2, 3], [2, 2, 5])).toBe(1);
    expect(meanAbsoluteError([], [])).toBeNull();
  });
});

describe('pearson and spearman', () => {
  it('a perfect line is ±1, and a constant side has no correlation (null)', () => {
    expect(pearson([1, 2, 3], [2, 4, 6])).toBeCloseTo(1, 12);
    expect(pearson([1, 2, 3], [6, 4, 2])).toBeCloseTo(-1, 12);
    expect(pearson([1, 1, 1], [1, 2, 3])).toBeNull();
    expect(pearson([1], [1])).toBeNull();
    expect(spearman([2, 2, 2], [1, 2, 3])).toBeNull();
  });

  it('spearman ranks first, so a monotone curve is 1, and ties take average ranks', () => {
    expect(spearman([1, 2, 3, 4], [1, 8, 27, 64])).toBeCloseTo(1, 12);
    // x ranks 1 2.5 2.5 4, y ranks 1 2 3 4: Σdxdy = 4.5, Σdx² = 4.5, Σdy² = 5 → 4.5/√22.5.
    expect(spearman([1, 3, 3, 5], [2, 3, 4, 5])).toBeCloseTo(4.5 / Math.sqrt(22.5), 12);
  });
});

describe('rocAuc', () => {
  it('is the share of positive–negative pairs ordered right (the scikit-learn example: 0.75)', () => {
    // positives 0.35, 0.8; negatives 0.1, 0.4: (0.35>0.1) (0.8>0.1) (0.8>0.4) right, (0.35<0.4) wrong → 3/4.
    expect(rocAuc([0.1, 0.4, 0.35, 0.8], [false, false, true, true])).toBe(0.75);
  });

  it('counts a tie as half a pair', () => {
    // positive 0.5 vs negatives 0.5 (tie: ½) and 0.2 (right: 1) → 1.5 / 2.
    expect(rocAuc([0.5, 0.5, 0.2], [true, false, false])).toBe(0.75);
  });

  it('is n/a without both classes', () => {
    expect(rocAuc([0.1, 0.9], [true, true])).toBeNull();
    expect(rocAuc([], [])).toBeNull();
  });
});

describe('balancedAccuracy', () => {
  it('averages the recall of each class present in the gold', () => {
    // positives (1, 2): 1 of 2 right; negatives (3, 4, 5): 3 of 3 → (0.5 + 1) / 2.
    expect(balancedAccuracy([true, false, false, false, false], [true, true, false, false, false])).toBe(
      0.75,
    );
    // Only one class present: its recall.
    expect(balancedAccuracy([true, false], [true, true])).toBe(0.5);
    expect(balancedAccuracy([], [])).toBeNull();
  });

  it('refuses arrays of different lengths', () => {
    expect(() => balancedAccuracy([true], [])).toThrow(RangeError);
    expect(() => rocAuc([1], [])).toThrow(RangeError);
    expect(() => pearson([1, 2], [1])).toThrow(RangeError);
  });
});
