import { describe, expect, it } from 'vitest';
import {
  combineRepeats,
  flipRate,
  krippendorffAlpha,
  noiseFloor,
  RepeatRows,
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

  it('gives the textbook ordinal value (0.815) on the same data', () => {
    expect(krippendorffAlpha(UNITS, 'ordinal', false).value).toBeCloseTo(0.815, 3);
  });

  it('ordinal alpha computed by hand, on a scale of labels', () => {
    // Units (bad, ok), (ok, ok), (good, ok) on the scale bad < ok < good: n = 6, counts bad 1,
    // ok 4, good 1 → mid-ranks bad 1, ok 1 + (4 + 1)/2 = 3.5, good 5 + 1 = 6.
    // δ² (Krippendorff: (Σ_{g from c to k} n_g − (n_c + n_k)/2)²): bad–ok (5 − 2.5)² = 6.25 =
    // ok–good, bad–good (6 − 1)² = 25: the squared differences of the mid-ranks.
    // Observed Σ_u Σ_{i≠j} δ²/(m−1): 2·6.25 + 0 + 2·6.25 = 25.
    // Expected Σ_{c≠k} n_c·n_k·δ²: 2·(1·4·6.25 + 4·1·6.25 + 1·1·25) = 150.
    // α = 1 − (n − 1)·25 / 150 = 1 − 125/150 = 1/6 (nominal would give 1 − 5·4/18 = −1/9).
    const units = [
      ['bad', 'ok'],
      ['ok', 'ok'],
      ['good', 'ok'],
    ];
    const scale = ['bad', 'ok', 'good'];
    expect(krippendorffAlpha(units, 'ordinal', false, scale).value).toBeCloseTo(1 / 6, 12);
    expect(krippendorffAlpha(units, 'nominal', false).value).toBeCloseTo(-1 / 9, 12);
    // On the scale ok < bad < good the misses are of other sizes: bad–ok and bad–good are
    // neighbours now. Mid-ranks ok 2.5, bad 5, good 6: observed 2·6.25 + 2·12.25 = 37,
    // expected 2·(4·1·6.25 + 4·1·12.25 + 1·1·1) = 150 → α = 1 − 5·37/150 = −7/30.
    expect(krippendorffAlpha(units, 'ordinal', false, ['ok', 'bad', 'good']).value).toBeCloseTo(-7 / 30, 12);
  });

  it('a scorer declared a scale gets ordinal alpha across its repeats; others keep theirs', () => {
    // The by-hand units above, each item judged twice.
    const fill = (rows: RepeatRows) => {
      for (const [target, values] of [
        ['ok', ['bad', 'ok']],
        ['ok', ['ok', 'ok']],
        ['ok', ['good', 'ok']],
      ] as const)
        rows.add({ value: values[0], target }, values);
      return rows;
    };
    const scale = { labelOrder: ['bad', 'ok', 'good'], bootstrap: false as const };
    const ordinal = fill(new RepeatRows('label', 2)).figures({ ...scale, ordinal: true }).alpha;
    expect(ordinal.level).toBe('ordinal');
    expect(ordinal.value).toBeCloseTo(1 / 6, 12);
    expect(fill(new RepeatRows('label', 2)).figures(scale).alpha.level).toBe('nominal');
    const numbers = new RepeatRows('number', 2);
    numbers.add({ value: 1, target: 2 }, [1, 2]);
    numbers.add({ value: 2, target: 2 }, [2, 2]);
    numbers.add({ value: 3, target: 2 }, [3, 2]);
    // Numbers 1 < 2 < 3 stand where bad < ok < good stood: the same 1/6.
    expect(numbers.figures({ ordinal: true, bootstrap: false }).alpha).toMatchObject({ level: 'ordinal' });
    expect(numbers.figures({ ordinal: true, bootstrap: false }).alpha.value).toBeCloseTo(1 / 6, 12);
    expect(numbers.figures({ bootstrap: false }).alpha.level).toBe('interval');
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

  it('has a seeded bootstrap interval around the value from 200 units on; none, and why, below', () => {
    const few = krippendorffAlpha(UNITS, 'nominal', { seed: 3 });
    expect(few.ci).toBeUndefined();
    expect(few.reason).toBe(`too few items for an interval (n ${few.n} < 200)`);
    const many = Array.from({ length: Math.ceil(400 / UNITS.length) }, () => UNITS).flat();
    const a = krippendorffAlpha(many, 'nominal', { seed: 3 });
    const b = krippendorffAlpha(many, 'nominal', { seed: 3 });
    expect(a.reason).toBeUndefined();
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
