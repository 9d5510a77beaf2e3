/**
 * What a comparison tallied in columns needs of the statistics: a paired bootstrap over rows the
 * caller holds (typed columns, read by index) that draws the same resamples, and gives the same
 * deltas to the last bit, as the bootstrap over an array of rows per side; and repeat rows kept
 * for the noise floor alone, without each item's repeat values.
 */
import { describe, expect, it } from 'vitest';
import {
  type Indices,
  mulberry32,
  pairedBootstraps,
  pairedBootstrapsAt,
  RepeatRows,
  type RepeatValue,
  type ScoreRow,
} from '../../../shared/lib/metrics/index.js';

describe('pairedBootstrapsAt', () => {
  const random = mulberry32(5);
  const n = 300;
  const base = Float64Array.from({ length: n }, () => random());
  const candidate = base.map((v, i) => (i % 3 === 0 ? v + 0.1 : v - 0.02));

  it('gives what the bootstrap over rows gives, to the last bit', () => {
    const mean = (values: ArrayLike<number>) => {
      let total = 0;
      for (let i = 0; i < values.length; i++) total += values[i]!;
      return total / values.length;
    };
    const overRows = pairedBootstraps(Array.from(base), Array.from(candidate), (rows) => ({
      mean: mean(rows),
      // Undefined on a resample without the first row, and never defined at all.
      first: rows.includes(base[0]!) || rows.includes(candidate[0]!) ? mean(rows) : null,
      none: null,
    }));
    const all = Uint32Array.from({ length: n }, (_, i) => i);
    const overColumns = pairedBootstrapsAt(n, (side, indices: Indices | undefined) => {
      const values = side === 'base' ? base : candidate;
      const ix = indices ?? all;
      let hasFirst = false;
      for (const i of ix) if (i === 0) hasFirst = true;
      return { mean: plainMean(values, ix), first: hasFirst ? plainMean(values, ix) : null, none: null };
    });
    expect(overColumns).toStrictEqual(overRows);
    expect(overColumns.none).toBeUndefined();
  });

  it('rejects no pairs and bad options as the bootstrap over rows does', () => {
    const stat = () => ({ x: 1 });
    expect(() => pairedBootstrapsAt(0, stat)).toThrow(/needs at least one pair/);
    expect(() => pairedBootstrapsAt(3, stat, { iterations: 0 })).toThrow(RangeError);
    expect(() => pairedBootstrapsAt(3, () => ({ x: Number.NaN }))).toThrow(/non-finite/);
  });
});

/** The plain running mean of `values` at `indices`, as the rows' statistic above computes it. */
function plainMean(values: ArrayLike<number>, indices: Indices): number {
  let total = 0;
  let count = 0;
  for (const i of indices) {
    total += values[i]!;
    count += 1;
  }
  return total / count;
}

describe('RepeatRows without units', () => {
  const items: [ScoreRow, RepeatValue[] | undefined, boolean][] = [
    [{ value: 3, target: 4 }, [3, 2, 4], false],
    [{ value: 5 }, [5, 5, null], false],
    [{ unscored: 'provider' }, undefined, false],
    [{ value: 1.5, target: 2 }, [1, 2, 1.5], false],
    [{ value: 4, target: 4 }, [4, 4, 3], true],
  ];
  const fed = (units: boolean, slice = items) => {
    const rows = new RepeatRows('number', 3, { units });
    for (const [row, values, tie] of slice) rows.add(row, values, tie);
    return rows;
  };

  it('has the noise floors of the rows with units, and no more', () => {
    const whole = fed(true);
    const noise = fed(false);
    expect(noise.noiseFloors()).toStrictEqual({
      noiseFloor: whole.figures().noiseFloor,
      perRepeat: whole.figures().perRepeat,
    });
    expect(noise.toState().units).toEqual([]);
    expect(() => noise.figures()).toThrow(/noise floors only/);
  });

  it('saves, loads and merges as itself', () => {
    for (let cut = 0; cut <= items.length; cut++) {
      const first = RepeatRows.fromState(fed(false, items.slice(0, cut)).toState());
      first.merge(RepeatRows.fromState(fed(false, items.slice(cut)).toState()));
      expect(first.toState()).toStrictEqual(fed(false).toState());
      expect(first.noiseFloors()).toStrictEqual(fed(true).noiseFloors());
    }
  });
});
