import { describe, expect, it } from 'vitest';
import { itemUncertainty } from '../../../shared/lib/metrics/label-uncertainty.js';
import type { ItemResult, Score } from '../../../shared/model/model.js';

function result(score: Score, extra: Partial<ItemResult> = {}): ItemResult {
  return {
    schemaVersion: 2,
    runId: 'r',
    itemId: 'i',
    row: 1,
    status: 'scored',
    input: { text: 'x' },
    scores: { label: score, score },
    stages: {},
    simulated: true,
    finishedAt: '2026-01-01T00:00:00.000Z',
    ...extra,
  };
}

describe('how unsure the judge was about an item', () => {
  it('reads repeats as the share that gave the verdict: u = √(1 − a)', () => {
    const r = result({ kind: 'label', value: 'a', repeats: ['a', 'a', 'b'] });
    expect(itemUncertainty(r, { name: 'label' })).toEqual({
      value: expect.closeTo(Math.sqrt(1 / 3), 12),
      signal: 'repeats',
    });
    const sure = result({ kind: 'label', value: 'a', repeats: ['a', 'a', 'a'] });
    expect(itemUncertainty(sure, { name: 'label' })).toEqual({ value: 0, signal: 'repeats' });
    // A repeat that gave nothing does not count; one value alone is no evidence.
    const one = result({ kind: 'label', value: 'a', repeats: ['a', null] });
    expect(itemUncertainty(one, { name: 'label' })).toBeUndefined();
  });

  it("reads several judges' votes by their weights", () => {
    const r = result(
      { kind: 'label', value: 'TP' },
      {
        details: {
          votes: [
            { backend: 'x', label: 'TP', weight: 1 },
            { backend: 'y', label: 'FP1', weight: 1 },
            { backend: 'z', label: 'TP', weight: 1.5 },
          ],
        },
      },
    );
    // Agreement 2.5 / 3.5.
    expect(itemUncertainty(r, { name: 'label' })!.value).toBeCloseTo(Math.sqrt(1 / 3.5), 12);
    expect(itemUncertainty(r, { name: 'label' })!.signal).toBe('judges');
  });

  it('reads a stated confidence, as a share or a percentage', () => {
    const share = result(
      { kind: 'label', value: 'a' },
      { output: { label: 'a', fields: { confidence: 0.9 } } },
    );
    expect(itemUncertainty(share, { name: 'label' })!.value).toBeCloseTo(Math.sqrt(0.1), 12);
    const percent = result(
      { kind: 'label', value: 'a' },
      { output: { label: 'a', fields: { probability: 90 } } },
    );
    expect(itemUncertainty(percent, { name: 'label' })).toEqual({
      value: itemUncertainty(share, { name: 'label' })!.value,
      signal: 'confidence',
    });
  });

  it('reads a score near its pass threshold as unsure', () => {
    const scorer = { name: 'score', range: [1, 5] as const, threshold: 3 };
    // p = 1/2 + (4 − 3)/4 = 0.75: u = √0.25.
    expect(itemUncertainty(result({ kind: 'number', value: 4 }), scorer)).toEqual({
      value: 0.5,
      signal: 'threshold',
    });
    expect(itemUncertainty(result({ kind: 'number', value: 3 }), scorer)!.value).toBeCloseTo(
      Math.sqrt(0.5),
      12,
    );
    expect(itemUncertainty(result({ kind: 'number', value: 5 }), scorer)!.value).toBe(0);
  });

  it("reads a number's repeats by their spread over the range, or by the pass share with a threshold", () => {
    const r = result({ kind: 'number', value: 2, repeats: [1, 2, 3] });
    // SD of 1, 2, 3 is √(2/3); the range is 4 wide.
    expect(itemUncertainty(r, { name: 'score', range: [1, 5] })!.value).toBeCloseTo(Math.sqrt(2 / 3) / 4, 12);
    // Threshold 2: verdict 2 passes, as do 2 and 3 of the repeats: a = 2/3. The score itself
    // gives p = 1/2, u = √(1/2), larger, and wins.
    const both = itemUncertainty(r, { name: 'score', range: [1, 5], threshold: 2 });
    expect(both).toEqual({ value: Math.sqrt(0.5), signal: 'threshold' });
  });

  it('takes the least sure reading, and gives nothing without evidence or verdict', () => {
    const r = result(
      { kind: 'label', value: 'a', repeats: ['a', 'a', 'a', 'b'] },
      { output: { label: 'a', fields: { confidence: 0.5 } } },
    );
    expect(itemUncertainty(r, { name: 'label' })).toEqual({ value: Math.sqrt(0.5), signal: 'confidence' });
    expect(itemUncertainty(result({ kind: 'label', value: 'a' }), { name: 'label' })).toBeUndefined();
    const unscored = result({ kind: 'label', unscored: { kind: 'parse', message: 'no' } });
    expect(itemUncertainty(unscored, { name: 'label' })).toBeUndefined();
  });
});
