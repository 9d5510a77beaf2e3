import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { cacheKey, callModel, canonicalJson } from '../../../shared/lib/providers/call.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import type { Completion, CompletionRequest } from '../../../shared/model/provider.js';
import type { LlmCache } from '../../../shared/ports/ports.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';
import { startVendorFake } from '../../fakes/vendor-fake.js';

const request: CompletionRequest = { model: 'gpt-4o-mini', system: 's', prompt: 'p', temperature: 0 };
const openai = (env: Record<string, string>) =>
  createProvider('openai:gpt-4o-mini', { env: { OPENAI_API_KEY: 'k', ...env }, prices: EMBEDDED_PRICES });

class MemoryCache implements LlmCache {
  readonly entries = new Map<string, Completion>();
  async get(key: string) {
    return this.entries.get(key);
  }
  async put(key: string, value: Completion) {
    this.entries.set(key, value);
  }
}

describe('the cache key names the endpoint', () => {
  it('two providers differing only by base URL get different keys', () => {
    const local = openai({ OPENAI_BASE_URL: 'http://localhost:8000/v1' });
    const other = openai({ OPENAI_BASE_URL: 'http://localhost:9000/v1' });
    const standard = openai({});

    expect(local.endpoint).toBe('http://localhost:8000/v1');
    expect(standard.endpoint).toBeUndefined();
    expect(cacheKey(local, request)).not.toBe(cacheKey(standard, request));
    expect(cacheKey(local, request)).not.toBe(cacheKey(other, request));
  });

  it('the default endpoint keeps the key it had before endpoints were keyed, however it is written', () => {
    // The key's material as it was: no endpoint member.
    const before = createHash('sha256')
      .update(
        canonicalJson({
          v: 'assay.llm-cache.v1',
          provider: 'openai:gpt-4o-mini',
          model: 'gpt-4o-mini',
          system: 's',
          prompt: 'p',
          temperature: 0,
        }),
      )
      .digest('hex');
    expect(cacheKey(openai({}), request)).toBe(before);
    expect(cacheKey(openai({ OPENAI_BASE_URL: 'https://api.openai.com/v1/' }), request)).toBe(before);
    expect(cacheKey(openai({ OPENAI_BASE_URL: 'HTTPS://API.OPENAI.COM/v1' }), request)).toBe(before);
  });

  it('Anthropic and Gemini base URL overrides are keyed too', () => {
    const env = { ANTHROPIC_API_KEY: 'k', GEMINI_API_KEY: 'k' };
    const make = (id: string, extra: Record<string, string> = {}) =>
      createProvider(id, { env: { ...env, ...extra }, prices: EMBEDDED_PRICES });
    for (const [id, variable] of [
      ['anthropic:claude-haiku-4-5', 'ANTHROPIC_BASE_URL'],
      ['gemini:gemini-2.5-flash', 'GEMINI_BASE_URL'],
    ] as const) {
      const r = { ...request, model: id.slice(id.indexOf(':') + 1) };
      expect(make(id).endpoint).toBeUndefined();
      expect(cacheKey(make(id, { [variable]: 'http://127.0.0.1:1' }), r)).not.toBe(cacheKey(make(id), r));
    }
  });
});

describe('an answer cached from a local endpoint is not served for another', () => {
  const fake = useVendorFake();

  it('a second server answering as openai: is called, not answered from the first one’s cache entry', async () => {
    const otherFake = await startVendorFake();
    try {
      const cache = new MemoryCache();
      const first = openai({ OPENAI_BASE_URL: `${fake.url}/v1` });
      const second = openai({ OPENAI_BASE_URL: `${otherFake.url}/v1` });

      const a = await callModel(first, request, { cache });
      const again = await callModel(first, request, { cache });
      const b = await callModel(second, request, { cache });

      expect([a.cached, again.cached, b.cached]).toEqual([false, true, false]);
      expect(fake.requests).toHaveLength(1);
      expect(otherFake.requests).toHaveLength(1);
    } finally {
      await otherFake.close();
    }
  });
});
