import { describe, expect, it } from 'vitest';
import { costOf, EMBEDDED_PRICES, loadPriceTable } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';

/**
 * Anthropic's usage as the Messages API sends it (the fields of `Usage` in @anthropic-ai/sdk):
 * `input_tokens` excludes cache reads and writes, `cache_creation` splits the writes by lifetime.
 */
function message(usage: Record<string, unknown>) {
  return JSON.stringify({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-haiku-4-5',
    content: [{ type: 'text', text: 'polite', citations: null }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { service_tier: 'standard', ...usage },
  });
}

const fake = useVendorFake();
const ID = 'anthropic:claude-haiku-4-5';
const provider = () => createProvider(ID, { env: fake.env, prices: EMBEDDED_PRICES });

describe('Anthropic cache writes', () => {
  it('are carried by lifetime and priced at 1.25x (5 minutes) and 2x (1 hour) the input price', async () => {
    fake.setHandler(() => ({
      rawBody: message({
        input_tokens: 100,
        cache_read_input_tokens: 2_000,
        cache_creation_input_tokens: 1_500,
        cache_creation: { ephemeral_5m_input_tokens: 1_000, ephemeral_1h_input_tokens: 500 },
        output_tokens: 40,
      }),
    }));

    const completion = await provider().complete({ model: 'claude-haiku-4-5', prompt: 'hi' });

    expect(completion.usage).toEqual({
      input: 3_600,
      cached: 2_000,
      cacheWrite5m: 1_000,
      cacheWrite1h: 500,
      output: 40,
    });
    // Haiku 4.5: $1 input, $0.10 cache read, $1.25 5-minute write, $2 1-hour write, $5 output per 1M.
    // 100 × 1 + 2,000 × 0.1 + 1,000 × 1.25 + 500 × 2 + 40 × 5 = 100 + 200 + 1,250 + 1,000 + 200 = 2,750 per 1M.
    expect(completion.costUsd).toBeCloseTo(0.00275, 12);
  });

  it('without the split, every write is a five-minute one (the API default lifetime)', async () => {
    fake.setHandler(() => ({
      rawBody: message({ input_tokens: 10, cache_creation_input_tokens: 300, output_tokens: 1 }),
    }));

    const completion = await provider().complete({ model: 'claude-haiku-4-5', prompt: 'hi' });

    expect(completion.usage).toEqual({ input: 310, cached: 0, cacheWrite5m: 300, output: 1 });
    expect(completion.costUsd).toBeCloseTo((10 * 1 + 300 * 1.25 + 1 * 5) / 1e6, 12);
  });

  it('the price table gives every Anthropic model write prices at 1.25x and 2x its input price', () => {
    const anthropic = Object.entries(EMBEDDED_PRICES.models).filter(([id]) => id.startsWith('anthropic:'));
    expect(anthropic.length).toBeGreaterThan(0);
    for (const [, price] of anthropic) {
      expect(price.cacheWrite5m).toBeCloseTo(price.input * 1.25, 10);
      expect(price.cacheWrite1h).toBeCloseTo(price.input * 2, 10);
    }
    expect(EMBEDDED_PRICES.notes).toContain("Anthropic's pricing page");
  });

  it('a model without write prices bills writes at its input price, and no part is billed twice', () => {
    const table = loadPriceTable(undefined, {});
    const id = 'openai:gpt-4o-mini';
    // More parts than input (a vendor miscount): capped at the input, nothing billed twice.
    const usd = costOf(table, id, { input: 100, cached: 80, cacheWrite5m: 50, output: 0 }).usd;
    expect(usd).toBeCloseTo((80 * 0.075 + 20 * 0.15) / 1e6, 12);
  });
});

describe('Anthropic temperature', () => {
  it('is sent when the request sets it, and not when it does not', async () => {
    await provider().complete({ model: 'claude-haiku-4-5', prompt: 'hi', temperature: 0.2 });
    await provider().complete({ model: 'claude-haiku-4-5', prompt: 'hi' });

    expect(fake.requests[0]!.body.temperature).toBe(0.2);
    expect(fake.requests[1]!.body).not.toHaveProperty('temperature');
  });

  it('travels in batch requests too', async () => {
    const api = provider().batch!;
    await api.submit([{ customId: 'c1', request: { model: '', prompt: 'hi', temperature: 0 } }], 'test');

    expect(fake.batches[0]!.entries[0]!.call.body.temperature).toBe(0);
  });
});
