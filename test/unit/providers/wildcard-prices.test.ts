/**
 * Wildcard entries of the price table: `llamacpp:*` prices every model of llama-server,
 * `openai-compatible:local/*` every model of the `local` service; an exact entry wins over a
 * wildcard, a narrower wildcard over a wider one, and a budget accepts a model a wildcard
 * prices. Costs are worked out by hand.
 */
import { describe, expect, it } from 'vitest';
import {
  costOf,
  EMBEDDED_PRICES,
  honouredPrices,
  mergePrices,
  priceOf,
  requirePricedBackends,
} from '../../../shared/lib/providers/pricing.js';

const table = mergePrices(EMBEDDED_PRICES, {
  models: {
    'llamacpp:*': { input: 0.1, output: 0.2 },
    'llamacpp:qwen2.5-72b': { input: 0.9, output: 1.8 },
    'openai-compatible:*': { input: 5, output: 5 },
    'openai-compatible:local/*': { input: 0.05, cachedInput: 0.01, output: 0.5 },
  },
});

describe('wildcard prices', () => {
  it('a wildcard prices every model of its vendor', () => {
    // 2,000,000 input × $0.1 + 500,000 output × $0.2, per 1M: 0.2 + 0.1.
    const cost = costOf(table, 'llamacpp:gemma-3-4b', { input: 2_000_000, output: 500_000, cached: 0 });
    expect(cost.priced).toBe(true);
    expect(cost.usd).toBeCloseTo(0.3, 12);
  });

  it('an exact entry wins over the wildcard', () => {
    // 1,000,000 × $0.9 + 1,000,000 × $1.8.
    const cost = costOf(table, 'llamacpp:qwen2.5-72b', { input: 1_000_000, output: 1_000_000, cached: 0 });
    expect(cost.usd).toBeCloseTo(2.7, 12);
  });

  it("a service's wildcard wins over its vendor's, cached input at its own rate", () => {
    // 1,000,000 input of which 400,000 cached: 600,000 × $0.05 + 400,000 × $0.01, plus
    // 200,000 output × $0.5 = 0.03 + 0.004 + 0.1 = 0.134.
    const usage = { input: 1_000_000, output: 200_000, cached: 400_000 };
    expect(costOf(table, 'openai-compatible:local/llama-3', usage).usd).toBeCloseTo(0.134, 12);
    // Another service falls to the vendor's wildcard: 1.2M tokens × $5 = 6.
    expect(costOf(table, 'openai-compatible:lab/llama-3', usage).usd).toBeCloseTo(6, 12);
  });

  it('another vendor is not priced by it', () => {
    expect(priceOf(table, 'vllm:gemma-3-4b')).toBeUndefined();
    expect(costOf(table, 'vllm:gemma-3-4b', { input: 1, output: 1, cached: 0 }).priced).toBe(false);
  });

  it('a simulator named after a wildcard-priced model is priced as it', () => {
    expect(
      costOf(table, 'sim:llamacpp:gemma-3-4b', { input: 1_000_000, output: 0, cached: 0 }).usd,
    ).toBeCloseTo(0.1, 12);
  });

  it('a budget accepts a backend only a wildcard prices', () => {
    const suite = { backends: ['llamacpp:gemma-3-4b'], run: { budgetUsd: 1 } };
    expect(() => requirePricedBackends(suite, table)).not.toThrow();
    expect(() => requirePricedBackends(suite, EMBEDDED_PRICES)).toThrow(/llamacpp:gemma-3-4b has no price/);
    // The suite's own wildcard is enough too.
    expect(() =>
      requirePricedBackends(
        { ...suite, run: { budgetUsd: 1, prices: { models: { 'llamacpp:*': { input: 0, output: 0 } } } } },
        EMBEDDED_PRICES,
      ),
    ).not.toThrow();
  });

  it("under a deployment's prices, a suite cannot undercut a model the deployment's wildcard prices", () => {
    const honoured = honouredPrices(
      table,
      { models: { 'llamacpp:gemma-3-4b': { input: 0, output: 0 }, 'vllm:*': { input: 1, output: 1 } } },
      'add',
      'run.prices',
    );
    expect(honoured.ignored).toEqual(['llamacpp:gemma-3-4b']);
    expect(honoured.prices?.models).toEqual({ 'vllm:*': { input: 1, output: 1 } });
  });
});
