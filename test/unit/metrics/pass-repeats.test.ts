import { describe, expect, it } from 'vitest';
import { passRepeats, RepeatRows, type RepeatValue } from '../../../shared/lib/metrics/reliability.js';

const P = true;
const F = false;

describe('pass^k and pass@k over repeats', () => {
  // Four items, three repeats each; item 4 lost a repeat to an error (null).
  const units: RepeatValue[][] = [
    [P, P, P],
    [P, F, P],
    [F, F, F],
    [P, null, P],
  ];

  it('averages each item’s share of passes, and its chance that k draws all / any pass', () => {
    const out = passRepeats(units, 3, false);
    // Shares 1, 2/3, 0, 2/2 → 2.667 / 4.
    expect(out.passRate).toEqual({ value: (1 + 2 / 3 + 0 + 1) / 4, n: 4 });
    // pass^3 = C(c,3)/C(3,3): 1, 0, 0 over the three items with three values; item 4 is short.
    expect(out.passAllK).toEqual({ value: 1 / 3, n: 3 });
    // pass@3 = 1 − C(3−c,3)/C(3,3): 1, 1, 0.
    expect(out.passAnyK).toEqual({ value: 2 / 3, n: 3 });
    expect(out.short).toBe(1);
  });

  it('with k below the repeats, takes the hypergeometric chance of C(c,k)/C(n,k)', () => {
    // Four repeats, three passes: pass^2 = C(3,2)/C(4,2) = 3/6; pass@2 = 1 − C(1,2)/C(4,2) = 1.
    const out = passRepeats([[P, P, F, P]], 2, false);
    expect(out.passAllK.value).toBeCloseTo(0.5, 12);
    expect(out.passAnyK.value).toBe(1);
    // Two passes of four: pass^2 = 1/6; pass@2 = 1 − C(2,2)/C(4,2) = 5/6.
    const half = passRepeats([[P, F, F, P]], 2, false);
    expect(half.passAllK.value).toBeCloseTo(1 / 6, 12);
    expect(half.passAnyK.value).toBeCloseTo(5 / 6, 12);
  });

  it('is null, not 0, with no item to average', () => {
    const out = passRepeats([[null, null]], 2, false);
    expect(out.passRate).toEqual({ value: null, n: 0 });
    expect(out.passAllK).toEqual({ value: null, n: 0 });
    expect(out.passAnyK).toEqual({ value: null, n: 0 });
  });

  it('gives a bootstrap interval over items that holds the value', () => {
    const { passRate, passAllK } = passRepeats(units, 3);
    expect(passRate.ci).toBeDefined();
    expect(passRate.ci![0]).toBeLessThanOrEqual(passRate.value!);
    expect(passRate.ci![1]).toBeGreaterThanOrEqual(passRate.value!);
    expect(passAllK.ci![0]).toBe(0);
    expect(passAllK.ci![1]).toBe(1);
  });

  it('is part of a pass scorer’s reliability, and of no other kind’s', () => {
    const rows = new RepeatRows('pass', 3);
    for (const unit of units) rows.add({ value: true }, unit);
    expect(rows.figures({ bootstrap: false }).passes).toMatchObject({
      k: 3,
      passAllK: { value: 1 / 3, n: 3 },
      short: 1,
    });
    const labels = new RepeatRows('label', 2);
    labels.add({ value: 'a' }, ['a', 'b']);
    expect(labels.figures({ bootstrap: false }).passes).toBeUndefined();
  });
});
