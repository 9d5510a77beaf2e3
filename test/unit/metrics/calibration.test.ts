import { describe, expect, it } from 'vitest';
import {
  bestThreshold,
  calibration,
  cvBalancedAccuracy,
  scorerFigures,
  stratifiedFolds,
} from '../../../shared/lib/metrics/index.js';

// Ten items scored 1..10; positives at 3, 6, 7, 9, 10.
const values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const positive = [false, false, true, false, false, true, true, false, true, true];

describe('bestThreshold', () => {
  it('sweeps the midpoints between distinct scores and keeps the best balanced accuracy', () => {
    // At 5.5: positives 6, 7, 9, 10 of 5 above (0.8), negatives 1, 2, 4, 5 of 5 below (0.8).
    // Every other candidate is lower: 1 → 0.5, 1.5 → 0.6, 2.5 → 0.7, 3.5 → 0.6, 4.5 → 0.7,
    // 6.5 → 0.7, 7.5 → 0.6, 8.5 → 0.7, 9.5 → 0.6.
    expect(bestThreshold(values, positive)).toEqual({ threshold: 5.5, balancedAccuracy: 0.8 });
  });

  it('breaks ties toward the lowest threshold, whatever the input order', () => {
    // 1.5 and 3.5 both reach 0.75.
    expect(bestThreshold([1, 2, 3, 4], [false, true, false, true])!.threshold).toBe(1.5);
    expect(bestThreshold([4, 3, 2, 1], [true, false, true, false])!.threshold).toBe(1.5);
  });

  it('moves tied scores together: a threshold never splits equal values', () => {
    // Candidates 1 (0.5) and 1.5: the three 1s fall below together, the 2 stays above →
    // positives 1 of 2 right, negatives 2 of 2.
    expect(bestThreshold([1, 1, 1, 2], [false, false, true, true])).toEqual({
      threshold: 1.5,
      balancedAccuracy: 0.75,
    });
  });

  it('is null when a class is missing', () => {
    expect(bestThreshold([1, 2, 3], [true, true, true])).toBeNull();
    expect(bestThreshold([], [])).toBeNull();
  });
});

describe('cvBalancedAccuracy', () => {
  it('pools the held-out predictions of thresholds chosen on the other folds (hand-computed, k = 2)', () => {
    // Fold 0: 1 2 3 4 5 6 7 8 9 10 → 0 1 0 1 0 1 0 1 0 1.
    const folds = values.map((_, i) => i % 2);
    // Trained on fold 1 (2−, 4−, 6+, 8−, 10+): best threshold 5 (recalls 1 and 2/3).
    //   Fold 0 at ≥ 5: 1− right, 3+ wrong, 5− wrong, 7+ right, 9+ right.
    // Trained on fold 0 (1−, 3+, 5−, 7+, 9+): best threshold 6 (recalls 2/3 and 1).
    //   Fold 1 at ≥ 6: 2− right, 4− right, 6+ right, 8− wrong, 10+ right.
    // Pooled: positives 4 of 5 right, negatives 3 of 5 → (0.8 + 0.6) / 2.
    expect(cvBalancedAccuracy(values, positive, folds, 2)).toBeCloseTo(0.7, 12);
  });

  it('is null with fewer items than folds, or when a training part lacks a class', () => {
    expect(cvBalancedAccuracy([1, 2], [true, false], [0, 1], 5)).toBeNull();
    // The only positive is alone in fold 0: training on fold 1 sees no positive.
    expect(cvBalancedAccuracy([1, 2, 3, 4], [true, false, false, false], [0, 1, 0, 1], 2)).toBeNull();
  });
});

describe('stratifiedFolds', () => {
  it('deals each class evenly over the folds, the same every time', () => {
    const folds = stratifiedFolds(positive, 5);
    expect(stratifiedFolds(positive, 5)).toEqual(folds);
    for (let fold = 0; fold < 5; fold += 1) {
      expect(folds.filter((f, i) => f === fold && positive[i]).length).toBe(1);
      expect(folds.filter((f, i) => f === fold && !positive[i]).length).toBe(1);
    }
  });
});

describe('calibration', () => {
  it('gives the threshold chosen on all the data and the 5-fold figure', () => {
    const c = calibration(values, positive);
    expect(c.calibratedThreshold).toBe(5.5);
    expect(c.cvBalancedAccuracy).toBe(cvBalancedAccuracy(values, positive, stratifiedFolds(positive, 5), 5));
    expect(c.cvBalancedAccuracy).not.toBeNull();
  });

  it('is null with fewer items than folds or a missing class', () => {
    expect(calibration([1, 2, 3, 4], [true, false, true, false])).toEqual({
      calibratedThreshold: null,
      cvBalancedAccuracy: null,
    });
    expect(
      calibration(
        values,
        values.map(() => true),
      ),
    ).toEqual({
      calibratedThreshold: null,
      cvBalancedAccuracy: null,
    });
  });
});

describe('number scorer metrics against a binary gold', () => {
  it('report the calibrated figures beside balanced accuracy at the declared threshold', () => {
    const rows = values.map((value, i) => ({ value: value / 10, target: positive[i] ? 1 : 0 }));
    // A declared threshold above every score: everything fails, balanced accuracy 0.5.
    const { summary, flat } = scorerFigures('number', rows, { threshold: 2, bootstrap: { iterations: 50 } });
    expect(summary.metrics.balancedAccuracy!.value).toBe(0.5);
    expect(summary.metrics.calibratedThreshold).toEqual({ value: 0.55, n: 10 });
    expect(summary.metrics.cvBalancedAccuracy!.n).toBe(10);
    expect(summary.metrics.cvBalancedAccuracy!.value).toBe(
      calibration(
        rows.map((r) => r.value),
        positive,
      ).cvBalancedAccuracy,
    );
    expect(flat.calibratedThreshold).toBe(0.55);
  });

  it('are null when the gold has one class', () => {
    const rows = values.map((value) => ({ value, target: 1 }));
    const { summary } = scorerFigures('number', rows, { threshold: 5, bootstrap: { iterations: 50 } });
    expect(summary.metrics.calibratedThreshold).toEqual({ value: null, n: 10 });
    expect(summary.metrics.cvBalancedAccuracy).toEqual({ value: null, n: 10 });
  });
});
