/**
 * What a budget needs of the price table: the most a call may cost before it is sent, a suite's
 * own prices merged over the table, and a refusal of backends without a price.
 */
import { describe, expect, it } from 'vitest';
import {
  costOf,
  EMBEDDED_PRICES,
  maxCostOf,
  PriceTableError,
  requirePricedBackends,
  UNBOUNDED_OUTPUT_TOKENS,
  withPriceOverride,
} from '../../../shared/lib/providers/pricing.js';
import { ConfigError } from '../../../shared/model/errors.js';

const MINI = EMBEDDED_PRICES.models['openai:gpt-4o-mini']!;

describe('maxCostOf', () => {
  it('prices the projected input (a token per four characters, plus framing) and the most output', () => {
    const projected = maxCostOf(EMBEDDED_PRICES, 'openai:gpt-4o-mini', {
      system: 'x'.repeat(400),
      prompt: 'y'.repeat(801),
      maxTokens: 300,
    });
    // 100 + 201 tokens of text, 4 of framing per message.
    expect(projected.tokens).toEqual({ input: 309, output: 300 });
    expect(projected.priced).toBe(true);
    expect(projected.usd).toBeCloseTo((309 * MINI.input + 300 * MINI.output) / 1e6, 15);
  });

  it('is never less than what the same call costs when its answer uses every output token', () => {
    const request = { prompt: 'Korrigiere: Er gehen nach Hause.', maxTokens: 400 };
    const projected = maxCostOf(EMBEDDED_PRICES, 'openai:gpt-4o-mini', request);
    const actual = costOf(EMBEDDED_PRICES, 'openai:gpt-4o-mini', { input: 12, output: 400, cached: 0 });
    expect(projected.usd).toBeGreaterThanOrEqual(actual.usd);
  });

  it('reserves a generous output for a request with no maxTokens, and says when a model has no price', () => {
    expect(maxCostOf(EMBEDDED_PRICES, 'openai:gpt-4o-mini', { prompt: '' }).tokens.output).toBe(
      UNBOUNDED_OUTPUT_TOKENS,
    );
    expect(maxCostOf(EMBEDDED_PRICES, 'openai:my-finetune', { prompt: 'hi', maxTokens: 5 })).toMatchObject({
      usd: 0,
      priced: false,
    });
  });
});

describe('withPriceOverride', () => {
  it("merges a suite's prices over the table, model by model", () => {
    const merged = withPriceOverride(
      EMBEDDED_PRICES,
      { models: { 'openai:my-finetune': { input: 1, output: 2 }, 'openai:gpt-4o-mini': { output: 9 } } },
      'run.prices',
    );
    expect(merged.models['openai:my-finetune']).toEqual({ input: 1, output: 2 });
    expect(merged.models['openai:gpt-4o-mini']).toEqual({ ...MINI, output: 9 });
    expect(withPriceOverride(EMBEDDED_PRICES, undefined, 'run.prices')).toBe(EMBEDDED_PRICES);
  });

  it('refuses a table of the wrong shape, naming where it came from', () => {
    expect(() =>
      withPriceOverride(EMBEDDED_PRICES, { models: { 'openai:x': { input: 1, outptu: 2 } } }, 'the suite'),
    ).toThrow(/the suite is not a price table/);
    expect(() =>
      withPriceOverride(EMBEDDED_PRICES, { models: { 'openai:x': { input: 1 } } }, 'the suite'),
    ).toThrow(PriceTableError);
  });
});

describe('requirePricedBackends', () => {
  const budgeted = (backends: string[], prices?: unknown) => ({ backends, run: { budgetUsd: 1, prices } });

  it('refuses a budgeted run with a backend the table has no price for, saying how to add one', () => {
    let error: unknown;
    try {
      requirePricedBackends(budgeted(['openai:gpt-4o-mini', 'openai:my-finetune-unpriced']), EMBEDDED_PRICES);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('openai:my-finetune-unpriced');
    expect(message).not.toContain('gpt-4o-mini,');
    expect(message).toContain('run.prices');
    expect(message).toContain('--prices FILE');
  });

  it('passes once the suite prices it, a simulator, or a run without a budget', () => {
    const prices = { models: { 'openai:my-finetune-unpriced': { input: 1, output: 2 } } };
    expect(() =>
      requirePricedBackends(budgeted(['openai:my-finetune-unpriced'], prices), EMBEDDED_PRICES),
    ).not.toThrow();
    expect(() => requirePricedBackends(budgeted(['sim:gold', 'sim:gpt-4o']), EMBEDDED_PRICES)).not.toThrow();
    expect(() =>
      requirePricedBackends({ backends: ['openai:my-finetune-unpriced'], run: {} }, EMBEDDED_PRICES),
    ).not.toThrow();
  });
});
