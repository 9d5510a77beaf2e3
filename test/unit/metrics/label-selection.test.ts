import { describe, expect, it } from 'vitest';
import {
  inclusionProbabilities,
  sampleForLabels,
  systematicPoints,
} from '../../../shared/lib/metrics/label-selection.js';

const sum = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0);

describe('inclusion probabilities', () => {
  it('mixes the uncertainty shares with a uniform floor (by hand)', () => {
    // Σu = 4; q = 0.8·(0, 1/4, 3/4) + 0.2/3 = (1/15, 4/15, 10/15); n = 1: π = q.
    const p = inclusionProbabilities([0, 1, 3], 1, 0.2);
    expect(p[0]).toBeCloseTo(1 / 15, 12);
    expect(p[1]).toBeCloseTo(4 / 15, 12);
    expect(p[2]).toBeCloseTo(10 / 15, 12);
    expect(sum(p)).toBeCloseTo(1, 12);
  });

  it('caps at 1 and spreads the rest of the budget over the others (by hand)', () => {
    // n = 2: 2q = (2/15, 8/15, 20/15): item 2 is capped; c = 1 / (1/15 + 4/15) = 3.
    const p = inclusionProbabilities([0, 1, 3], 2, 0.2);
    expect(p[2]).toBe(1);
    expect(p[0]).toBeCloseTo(3 / 15, 12);
    expect(p[1]).toBeCloseTo(12 / 15, 12);
    expect(sum(p)).toBeCloseTo(2, 12);
  });

  it('keeps every probability at or above n·floor/N, and sums to n', () => {
    const u = [0, 0, 0, 0, 0, 0, 0, 0.1, 5, 9, 20, 0.3];
    for (const n of [1, 3, 6, 11]) {
      const p = inclusionProbabilities(u, n, 0.1);
      expect(sum(p)).toBeCloseTo(n, 9);
      for (const pi of p) {
        expect(pi).toBeGreaterThanOrEqual(Math.min(1, (n * 0.1) / u.length) - 1e-12);
        expect(pi).toBeLessThanOrEqual(1);
      }
    }
  });

  it('is uniform when no item is less sure than another, and all ones when the budget covers every item', () => {
    expect(inclusionProbabilities([0, 0, 0, 0], 2)).toEqual([0.5, 0.5, 0.5, 0.5]);
    expect(inclusionProbabilities([2, 2], 1)).toEqual([0.5, 0.5]);
    expect(inclusionProbabilities([1, 0, 3], 3)).toEqual([1, 1, 1]);
    expect(inclusionProbabilities([1, 0, 3], 10)).toEqual([1, 1, 1]);
    expect(inclusionProbabilities([], 5)).toEqual([]);
  });

  it('refuses a budget, floor or uncertainty that means nothing', () => {
    expect(() => inclusionProbabilities([1], 0)).toThrow(/positive integer/);
    expect(() => inclusionProbabilities([1], 1.5)).toThrow(/positive integer/);
    expect(() => inclusionProbabilities([1], 1, 0)).toThrow(/floor/);
    expect(() => inclusionProbabilities([1], 1, 1.2)).toThrow(/floor/);
    expect(() => inclusionProbabilities([Number.NaN], 1)).toThrow(/uncertainty/);
    expect(() => inclusionProbabilities([-1], 1)).toThrow(/uncertainty/);
  });
});

describe('systematic sampling', () => {
  it('chooses the items whose intervals hold the points u, u + 1, … (by hand)', () => {
    // Intervals in order 0, 1, 2: [0, 0.5), [0.5, 1), [1, 2).
    expect(systematicPoints([0.5, 0.5, 1], [0, 1, 2], 0.25)).toEqual([0, 2]);
    expect(systematicPoints([0.5, 0.5, 1], [0, 1, 2], 0.75)).toEqual([1, 2]);
    // Order 2, 0, 1: [0, 1), [1, 1.5), [1.5, 2).
    expect(systematicPoints([0.5, 0.5, 1], [2, 0, 1], 0.25)).toEqual([2, 0]);
    expect(systematicPoints([0.5, 0.5, 1], [2, 0, 1], 0.6)).toEqual([2, 1]);
  });

  it('gives each item exactly its probability over the starts, in any order', () => {
    const p = [0.15, 0.35, 1, 0.5, 0.25, 0.75];
    const grid = 2000;
    for (const order of [
      [0, 1, 2, 3, 4, 5],
      [5, 3, 1, 0, 2, 4],
    ]) {
      const hits = p.map(() => 0);
      for (let j = 0; j < grid; j += 1) {
        const chosen = systematicPoints(p, order, (j + 0.5) / grid);
        expect(chosen).toHaveLength(3);
        expect(new Set(chosen).size).toBe(3);
        for (const i of chosen) hits[i]! += 1;
      }
      // The interval ends are multiples of 0.05, so the grid's share is the exact probability.
      for (const [i, h] of hits.entries()) expect(h / grid).toBeCloseTo(p[i]!, 12);
    }
  });

  it('draws n distinct items, the same for the same seed, each about as often as its probability', () => {
    const u = [0, 0.2, 0.2, 1, 3, 0, 0.5, 0.9];
    const a = sampleForLabels(u, 3, 7);
    expect(a.chosen).toHaveLength(3);
    expect(new Set(a.chosen).size).toBe(3);
    expect(sampleForLabels(u, 3, 7)).toEqual(a);
    const hits = u.map(() => 0);
    const draws = 4000;
    for (let seed = 1; seed <= draws; seed += 1)
      for (const i of sampleForLabels(u, 3, seed).chosen) hits[i]! += 1;
    for (const [i, p] of a.probabilities.entries()) expect(Math.abs(hits[i]! / draws - p)).toBeLessThan(0.03);
    // The floor: the items the judge was sure of are still chosen now and then.
    expect(hits[0]).toBeGreaterThan(0);
    expect(hits[5]).toBeGreaterThan(0);
  });
});
