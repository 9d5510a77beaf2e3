import { describe, expect, it } from 'vitest';
import { CostTally } from '../../../shared/lib/metrics/cost.js';
import { costSummary } from '../../../shared/lib/metrics/index.js';

describe('costSummary', () => {
  it('reproduces the AQUA modular figure: $0.04375 over 256 items ≈ $1.71 per 10K', () => {
    // 0.04375 / 256 × 10,000 = 1.708984375
    const s = costSummary([{ costUsd: 0.04375, usage: { input: 0, output: 0, cached: 0 } }], 256);
    expect(s.per10kUsd).toBeCloseTo(1.708984375, 12);
    expect(s.per10kUsd!.toFixed(2)).toBe('1.71');
  });

  it('sums cost and tokens overall and per stage, and divides by items (not calls)', () => {
    const s = costSummary(
      [
        { costUsd: 0.001, usage: { input: 100, output: 10, cached: 0 }, stage: 'classify' },
        { costUsd: 0.002, usage: { input: 200, output: 20, cached: 50 }, stage: 'classify' },
        { costUsd: 0.0005, usage: { input: 50, output: 5, cached: 0 }, stage: 'repair' },
        { costUsd: 0.0015, usage: { input: 10, output: 1, cached: 0 }, stage: 'classify', calls: 3 },
        { costUsd: 0, usage: { input: 0, output: 0, cached: 0 } },
      ],
      4,
    );
    // total = 0.001 + 0.002 + 0.0005 + 0.0015 = 0.005; per item = 0.005 / 4 = 0.00125; per 10K = 12.5
    expect(s.totalUsd).toBeCloseTo(0.005, 15);
    expect(s.perItemUsd).toBeCloseTo(0.00125, 15);
    expect(s.per10kUsd).toBeCloseTo(12.5, 10);
    expect(s.tokens).toEqual({ input: 360, output: 36, cached: 50 });
    expect(Object.keys(s.byStage)).toEqual(['classify', 'repair', 'default']);
    expect(s.byStage.classify!.usd).toBeCloseTo(0.0045, 15);
    expect(s.byStage.classify!.calls).toBe(5);
    expect(s.byStage.classify!.tokens).toEqual({ input: 310, output: 31, cached: 50 });
    expect(s.byStage.repair).toEqual({ usd: 0.0005, calls: 1, tokens: { input: 50, output: 5, cached: 0 } });
    expect(s.byStage.default).toEqual({ usd: 0, calls: 1, tokens: { input: 0, output: 0, cached: 0 } });
  });

  it('says n/a (null) per item and per 10K when there are no items (no NaN, Infinity or 0)', () => {
    const s = costSummary([{ costUsd: 0.01, usage: { input: 1, output: 1, cached: 0 } }], 0);
    expect(s.totalUsd).toBe(0.01);
    expect(s.perItemUsd).toBeNull();
    expect(s.per10kUsd).toBeNull();
    expect(costSummary([], 0)).toEqual({
      totalUsd: 0,
      per10kUsd: null,
      perItemUsd: null,
      tokens: { input: 0, output: 0, cached: 0 },
      byStage: {},
      priced: true,
      unpriced: [],
    });
  });

  it('says which models had no price, overall and by stage, through a merge and a saved tally', () => {
    const usage = { input: 1, output: 1, cached: 0 };
    const first = new CostTally();
    first.add({ stage: 'classify', costUsd: 0.01, usage });
    const later = new CostTally();
    later.add({ stage: 'repair', costUsd: 0, usage, unpriced: ['openai:my-finetune'] });
    first.merge(CostTally.fromState(later.toState()));
    const s = CostTally.fromState(first.toState()).summary(2);
    expect(s.priced).toBe(false);
    expect(s.unpriced).toEqual(['openai:my-finetune']);
    expect(s.byStage.classify).not.toHaveProperty('priced');
    expect(s.byStage.repair!.priced).toBe(false);
    // A tally saved before unpriced models were tracked reads as priced.
    const { unpriced: _u, ...old } = new CostTally().toState();
    expect(CostTally.fromState(old).summary(1).priced).toBe(true);
  });
});
