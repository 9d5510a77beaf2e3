import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { cacheKey, callModel, canonicalJson } from '../../../shared/lib/providers/call.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import { SimProvider } from '../../../shared/lib/providers/sim.js';
import type { Completion, CompletionRequest } from '../../../shared/model/provider.js';
import type { LlmCache } from '../../../shared/ports/ports.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';

class MemoryCache implements LlmCache {
  readonly entries = new Map<string, Completion>();
  async get(key: string) {
    return this.entries.get(key);
  }
  async put(key: string, completion: Completion) {
    this.entries.set(key, completion);
  }
}

const fake = useVendorFake();

const openai = () => createProvider('openai:gpt-4o-mini', { env: fake.env, prices: EMBEDDED_PRICES });
const request: CompletionRequest = {
  model: 'gpt-4o-mini',
  system: 'judge',
  prompt: 'src/tgt',
  temperature: 0,
};

describe('callModel cache', () => {
  it('answers a second identical call from the cache without a request, free', async () => {
    const cache = new MemoryCache();
    const provider = openai();

    const first = await callModel(provider, request, { cache, maxAttempts: 2 });
    // The lookup takes 3 ms on a fake clock: a hit reports the lookup's time, not the answer's.
    vi.useFakeTimers({ toFake: ['performance'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const slowCache: LlmCache = {
      get: async (key) => {
        vi.advanceTimersByTime(3);
        return cache.get(key);
      },
      put: (key, completion) => cache.put(key, completion),
    };
    const second = await callModel(provider, { ...request }, { cache: slowCache, maxAttempts: 2 });

    expect(fake.requests).toHaveLength(1);
    expect(first.cached).toBe(false);
    expect(first.costUsd).toBeGreaterThan(0);
    expect(second).toMatchObject({ cached: true, costUsd: 0, text: first.text, usage: first.usage });
    expect(second.latencyMs).toBe(3);
  });

  it("reports what a hit saved; a hit on the payer's own answer keeps its cost instead", async () => {
    const cache = new MemoryCache();
    const provider = openai();

    const paid = await callModel(provider, request, { cache, payer: 'run-1/item-7' });
    const resumed = await callModel(provider, request, { cache, payer: 'run-1/item-7' });
    const other = await callModel(provider, request, { cache, payer: 'run-2/item-7' });

    expect(fake.requests).toHaveLength(1);
    expect(resumed).toMatchObject({ cached: true, costUsd: paid.costUsd });
    expect(resumed.savedUsd).toBeUndefined();
    expect(other).toMatchObject({ cached: true, costUsd: 0, savedUsd: paid.costUsd });
  });

  it('calls again when anything that shapes the answer changes', async () => {
    const cache = new MemoryCache();
    const provider = openai();

    await callModel(provider, request, { cache });
    await callModel(provider, { ...request, prompt: 'other' }, { cache });
    await callModel(provider, { ...request, temperature: 0.7 }, { cache });
    await callModel(provider, { ...request, maxTokens: 10 }, { cache });

    expect(fake.requests).toHaveLength(4);
  });

  it('keeps a truncated answer or a refusal for its payer: a resumed item finds it and counts it once', async () => {
    for (const finish of ['length', 'refusal'] as const) {
      fake.reset();
      fake.setHandler(() => ({ text: '{"la', finish }));
      const cache = new MemoryCache();

      const paid = await callModel(openai(), request, { cache, payer: 'run-1/item-3' });
      // The process dies here (the repair call was out); the item is solved again.
      const resumed = await callModel(openai(), request, { cache, payer: 'run-1/item-3' });

      expect(fake.requests).toHaveLength(1);
      expect(paid).toMatchObject({ cached: false, finishReason: finish });
      expect(paid.costUsd).toBeGreaterThan(0);
      expect(resumed).toMatchObject({
        cached: true,
        costUsd: paid.costUsd,
        finishReason: finish,
        text: '{"la',
      });
      expect(resumed.savedUsd).toBeUndefined();

      // Nobody else is handed a cut-short answer: another item asks the model itself.
      const other = await callModel(openai(), request, { cache, payer: 'run-1/item-4' });
      expect(other).toMatchObject({ cached: false });
      expect(fake.requests).toHaveLength(2);
    }
  });

  it('stores nothing cut short without a payer (nobody could claim it)', async () => {
    fake.setHandler(() => ({ text: '{"la', finish: 'length' }));
    const cache = new MemoryCache();

    await callModel(openai(), request, { cache });
    await callModel(openai(), request, { cache });

    expect(cache.entries.size).toBe(0);
    expect(fake.requests).toHaveLength(2);
  });

  it("reuse 'own' shares nothing, but the payer still finds what it paid for", async () => {
    const cache = new MemoryCache();
    const provider = openai();

    const paid = await callModel(provider, request, { cache, payer: 'run-1/a', reuse: 'own' });
    const resumed = await callModel(provider, request, { cache, payer: 'run-1/a', reuse: 'own' });
    const other = await callModel(provider, request, { cache, payer: 'run-1/b', reuse: 'own' });
    // A suite that does share answers does not see the unshared one either.
    const sharing = await callModel(provider, request, { cache, payer: 'run-2/a' });

    expect(fake.requests).toHaveLength(3);
    expect(resumed).toMatchObject({ cached: true, costUsd: paid.costUsd });
    expect(other.cached).toBe(false);
    expect(sharing.cached).toBe(false);
  });

  it('reports the latency a simulated answer drew, every time, with or without a cache', async () => {
    const cache = new MemoryCache();
    const sim = new SimProvider('gold', { latencyMs: 40 }, { sleep: async () => {} });
    const ask = { model: 'gold', prompt: 'x', simulation: { family: 'gec' } };

    const drawn = (await sim.complete(ask)).latencyMs;
    const first = await callModel(sim, ask, { cache });
    const second = await callModel(sim, ask, { cache });

    expect(drawn).toBeGreaterThanOrEqual(20);
    expect([first.latencyMs, second.latencyMs]).toEqual([drawn, drawn]);
  });

  it('never caches simulated providers', async () => {
    const cache = new MemoryCache();
    const sim = new SimProvider('gold', { latencyMs: 0 });

    await callModel(sim, { model: 'gold', prompt: 'x', simulation: { family: 'gec' } }, { cache });

    expect(cache.entries.size).toBe(0);
  });

  it('still answers when the cache fails, and reports the failure', async () => {
    const failures: string[] = [];
    const broken: LlmCache = {
      get: async () => {
        throw new Error('dynamo throttled');
      },
      put: async () => {
        throw new Error('dynamo throttled');
      },
    };

    const completion = await callModel(openai(), request, {
      cache: broken,
      onCacheError: (_e, op) => failures.push(op),
    });

    expect(completion.text).toContain('TP');
    expect(failures).toEqual(['get', 'put']);
  });
});

describe('cacheKey', () => {
  it('is a stable sha256 that ignores key order in the schema', () => {
    const provider = openai();
    const a = cacheKey(provider, {
      ...request,
      jsonSchema: { name: 's', schema: { type: 'object', required: [] } },
    });
    const b = cacheKey(provider, {
      ...request,
      jsonSchema: { schema: { required: [], type: 'object' }, name: 's' },
    });

    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(a).toBe(b);
    expect(cacheKey(provider, { ...request, system: 'other' })).not.toBe(a);
  });

  it('differs between providers serving the same request', () => {
    const other = createProvider('openrouter:gpt-4o-mini', {
      env: { OPENROUTER_API_KEY: 'k' },
      prices: EMBEDDED_PRICES,
    });

    expect(cacheKey(openai(), request)).not.toBe(cacheKey(other, request));
  });

  it('canonicalJson sorts keys at every depth and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[{"y":2,"z":1}]},"b":1}',
    );
  });
});
