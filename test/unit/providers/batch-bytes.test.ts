import { describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../../shared/lib/providers/anthropic.js';
import { ANTHROPIC_BATCH_MAX_BYTES, packBatches } from '../../../shared/lib/providers/batch.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import type { WaitingCall } from '../../../shared/ports/ports.js';
import { submitCalls } from '../../../shared/use-cases/batch-lane.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';

const entry = (id: string, prompt: string) => ({ customId: id, request: { model: '', prompt } });

describe('packBatches', () => {
  it('splits by count alone when the vendor limits no bytes', () => {
    const entries = ['a', 'b', 'c', 'd', 'e'].map((id) => entry(id, id));
    const batches = packBatches(entries, { maxRequests: 2 });
    expect(batches.map((b) => b.map((e) => e.customId))).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    // A caller's smaller count wins; the vendor's limit bounds a larger one.
    expect(packBatches(entries, { maxRequests: 2 }, 1)).toHaveLength(5);
    expect(packBatches(entries, { maxRequests: 2 }, 10)).toHaveLength(3);
  });

  it('splits by bytes, keeps order, and puts an entry too large for any batch alone', () => {
    const sizes: Record<string, number> = { a: 40, b: 40, c: 40, big: 500, d: 10 };
    const api = {
      maxRequests: 100,
      maxBytes: 64 + 100,
      bytesOf: (e: { customId: string }) => sizes[e.customId]!,
    };
    const entries = ['a', 'b', 'c', 'big', 'd'].map((id) => entry(id, id));

    const batches = packBatches(entries, api);

    // 64 bytes of envelope + (40 + 1) + (40 + 1) fits; a third entry would not.
    expect(batches.map((b) => b.map((e) => e.customId))).toEqual([['a', 'b'], ['c'], ['big'], ['d']]);
  });

  it('Anthropic declares the 256 MB limit', () => {
    const provider = createProvider('anthropic:claude-haiku-4-5', {
      env: { ANTHROPIC_API_KEY: 'k' },
      prices: EMBEDDED_PRICES,
    });
    expect(ANTHROPIC_BATCH_MAX_BYTES).toBe(256 * 1024 * 1024);
    expect(provider.batch?.maxBytes).toBe(ANTHROPIC_BATCH_MAX_BYTES);
    expect(provider.batch?.maxRequests).toBe(100_000);
  });
});

describe('Anthropic batches through the lane, with a small byte limit', () => {
  const fake = useVendorFake();

  it('never submits a body over the limit, and every call goes in exactly one batch', async () => {
    const limit = 4_000;
    const provider = new AnthropicProvider({
      id: 'anthropic:claude-haiku-4-5',
      apiKey: fake.env.ANTHROPIC_API_KEY!,
      baseURL: fake.env.ANTHROPIC_BASE_URL,
      prices: EMBEDDED_PRICES,
      batchMaxBytes: limit,
    });
    const calls: WaitingCall[] = Array.from({ length: 20 }, (_, i) => ({
      key: `k${i}`,
      backend: 'anthropic:claude-haiku-4-5',
      customId: `r${i}-judge-k${i}`,
      // Prompts of different lengths, 300 to 900 bytes each.
      request: { model: 'claude-haiku-4-5', prompt: `item ${i} ${'x'.repeat(300 + 30 * i)}`, maxTokens: 50 },
    }));

    const submitted = await submitCalls(calls, {
      providerFor: () => provider,
      label: 'bytes test',
      maxAttempts: 1,
    });

    expect(submitted.refused).toEqual([]);
    expect(submitted.batches.length).toBeGreaterThan(2);
    const bodies = fake.requests.filter((r) => r.path === '/v1/messages/batches');
    expect(bodies).toHaveLength(submitted.batches.length);
    for (const body of bodies) {
      expect(Buffer.byteLength(JSON.stringify(body.body))).toBeLessThanOrEqual(limit);
    }
    const sent = submitted.batches.flatMap((b) => b.calls.map((c) => c.customId));
    expect(sent).toEqual(calls.map((c) => c.customId));
  });
});
