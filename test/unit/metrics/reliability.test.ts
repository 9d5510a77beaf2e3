import { describe, expect, it } from 'vitest';
import {
  combineRepeats,
  flipRate,
  krippendorffAlpha,
  noiseFloor,
  type RepeatValue,
  withinItemSd,
} from '../../../shared/lib/metrics/reliability.js';

// Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011): four observers, twelve
// units, missing values. Rows are observers; here each unit is a column.
const _ = null;
const OBSERVERS: RepeatValue[][] = [
  [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
  [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
  [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
  [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
];
const UNITS = OBSERVERS[0]!.map((_v, u) => OBSERVERS.map((row) => row[u]!));

describe('Krippendorff alpha', () => {
  it('gives the textbook nominal value (0.743) with missing values', () => {
    const alpha = krippendorffAlpha(UNITS, 'nominal', false);
    expect(alpha.value).toBeCloseTo(0.743, 3);
    // Unit 12 has one value: it cannot be paired.
    expect(alpha.n).toBe(11);
  });

  it('gives the textbook interval value (0.849) on the same data', () => {
    expect(krippendorffAlpha(UNITS, 'interval', false).value).toBeCloseTo(0.849, 3);
  });

  it('nominal alpha on labels equals the same data as numbers', () => {
    const labels = UNITS.map((u) => u.map((v) => (v === null ? null : `c${v}`)));
    expect(krippendorffAlpha(labels, 'nominal', false).value).toBeCloseTo(0.743, 3);
  });

  it('interval alpha computed by hand', () => {
    // Units (1,2), (3,3), (5,4): n = 6, values 1,2,3,3,5,4 (Σ = 18, Σ² = 64).
    // Observed Σ_u Σ_{i≠j} δ²/(m−1): (2·1) + 0 + (2·1) = 4.
    // Expected Σ_{i≠j} (v_i − v_j)² = 2·6·64 − 2·18² = 768 − 648 = 120.
    // α = 1 − (n − 1)·4 / 120 = 1 − 20/120 = 5/6.
    expect(
      krippendorffAlpha(
        [
          [1, 2],
          [3, 3],
          [5, 4],
        ],
        'interval',
        false,
      ).value,
    ).toBeCloseTo(5 / 6, 12);
  });

  it('is null without variation or without pairable values, and 1 for perfect agreement', () => {
    expect(
      krippendorffAlpha(
        [
          ['a', 'a'],
          ['a', 'a'],
        ],
        'nominal',
      ).value,
    ).toBeNull();
    expect(
      krippendorffAlpha(
        [
          ['a', null],
          [null, 'b'],
        ],
        'nominal',
      ).value,
    ).toBeNull();
    expect(
      krippendorffAlpha(
        [
          ['a', 'a'],
          ['b', 'b'],
        ],
        'nominal',
        false,
      ).value,
    ).toBe(1);
  });

  it('has a seeded bootstrap interval around the value', () => {
    const a = krippendorffAlpha(UNITS, 'nominal', { seed: 3 });
    const b = krippendorffAlpha(UNITS, 'nominal', { seed: 3 });
    expect(a.ci).toEqual(b.ci);
    expect(a.ci![0]).toBeLessThanOrEqual(a.value!);
    expect(a.ci![1]).toBeGreaterThanOrEqual(0.5);
    expect(a.ci![1]).toBeLessThanOrEqual(1);
  });
});

describe('flip rate, within-item SD, noise floor, majority', () => {
  it('flip rate counts items whose repeats disagree, among items with two values', () => {
    const units: RepeatValue[][] = [
      ['a', 'a', 'a'],
      ['a', 'b', 'a'],
      ['b', null, 'b'],
      ['a', null, null], // one value: not counted
    ];
    expect(flipRate(units)).toEqual({ value: 1 / 3, n: 3 });
    expect(flipRate([['a', null]])).toEqual({ value: null, n: 0 });
  });

  it('pools the within-item variance by degrees of freedom', () => {
    // (1, 3): squares 2, df 1; (2, 2, 5): mean 3, squares 1+1+4 = 6, df 2 → √(8/3).
    expect(
      withinItemSd([
        [1, 3],
        [2, 2, 5],
        [7, null],
      ]),
    ).toBeCloseTo(Math.sqrt(8 / 3), 12);
    expect(withinItemSd([[1, null]])).toBeNull();
  });

  it('noise floor is the sample SD of the metric across single-repeat runs', () => {
    // Accuracy 0.8, 0.7, 0.9 → mean 0.8, squares 0.02, /2 → SD 0.1.
    expect(noiseFloor([0.8, 0.7, 0.9])).toBeCloseTo(0.1, 12);
    expect(noiseFloor([0.8, null])).toBeNull();
  });

  it('takes the majority, the mean, and resolves a tie to the earliest repeat', () => {
    expect(combineRepeats('label', ['b', 'a', 'a'])).toEqual({ value: 'a', tie: false });
    expect(combineRepeats('label', ['c', 'b', 'a', 'a', 'b'])).toEqual({ value: 'b', tie: true });
    expect(combineRepeats('pass', [true, false])).toEqual({ value: true, tie: true });
    expect(combineRepeats('pass', [null, false, true])).toEqual({ value: false, tie: true });
    expect(combineRepeats('number', [1, null, 4])).toEqual({ value: 2.5, tie: false });
    expect(combineRepeats('label', [null, null])).toBeUndefined();
  });
});
