import { describe, expect, it } from 'vitest';
import { biasScore, correlation, LengthRows } from '../../../shared/lib/metrics/index.js';

describe('length bias', () => {
  it("is Spearman's ρ of length against score with average ranks for ties (hand-computed)", () => {
    const rows = new LengthRows();
    const items: [length: number, score: number, gold: string][] = [
      [10, 1, 'a'],
      [20, 2, 'a'],
      [20, 3, 'b'],
      [30, 3, 'b'],
      [40, 5, 'a'],
    ];
    for (const [length, score, gold] of items) rows.add(length, score, gold);
    // Length ranks 1, 2.5, 2.5, 4, 5; score ranks 1, 2, 3.5, 3.5, 5; both mean 3.
    // Σ dx·dy = 4 + 0.5 − 0.25 + 0.5 + 4 = 8.75; Σ dx² = Σ dy² = 9.5 → ρ = 8.75 / 9.5.
    const bias = rows.figures();
    expect(bias.spearman).toBeCloseTo(8.75 / 9.5, 12);
    expect(bias.n).toBe(5);
    // Within a: lengths 10, 20, 40 and scores 1, 2, 5 rise together; b has two items only.
    expect(bias.byGold.a).toEqual({ spearman: 1, n: 3 });
    expect(bias.byGold.b).toEqual({ spearman: null, n: 2 });
  });

  it('is null when a side is constant or there are fewer than 3 items', () => {
    expect(correlation([1, 2, 3], [4, 4, 4])).toEqual({ spearman: null, n: 3 });
    expect(correlation([1, 2], [1, 2])).toEqual({ spearman: null, n: 2 });
    expect(new LengthRows().figures()).toEqual({ spearman: null, n: 0, byGold: {} });
  });

  it('reads numbers as themselves, passes as 1/0, labels by their order only when it is ordinal', () => {
    expect(biasScore('number', 0.25)).toBe(0.25);
    expect(biasScore('pass', true)).toBe(1);
    expect(biasScore('pass', false)).toBe(0);
    expect(biasScore('label', 'good', { labelOrder: ['bad', 'ok', 'good'] })).toBeUndefined();
    expect(biasScore('label', 'good', { labelOrder: ['bad', 'ok', 'good'], ordinal: true })).toBe(2);
  });
});
