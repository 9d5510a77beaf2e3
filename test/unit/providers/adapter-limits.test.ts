/**
 * The vendor adapters read the rate-limit headers of a real HTTP answer (through the official
 * SDKs' raw responses, one request per call) into `learnedLimits`; the cache never keeps them.
 */
import { describe, expect, it } from 'vitest';
import { callModel } from '../../../shared/lib/providers/call.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import type { Completion, LlmProvider } from '../../../shared/model/provider.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';

const fake = useVendorFake();

function provider(id: string): LlmProvider {
  return createProvider(id, { env: fake.env, prices: EMBEDDED_PRICES, timeoutMs: 5_000 });
}

const OPENAI_BODY = JSON.stringify({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 0,
  model: 'gpt-4o-mini',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'ok', refusal: null }, finish_reason: 'stop' },
  ],
  usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
});

const ANTHROPIC_BODY = JSON.stringify({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-3-5-haiku-latest',
  content: [{ type: 'text', text: 'ok' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 10, output_tokens: 2 },
});

describe('rate limits from response headers', () => {
  it('openai: x-ratelimit-* on the answer, in one request', async () => {
    fake.setHandler(() => ({
      rawBody: OPENAI_BODY,
      headers: {
        'x-ratelimit-limit-requests': '5000',
        'x-ratelimit-remaining-requests': '4999',
        'x-ratelimit-reset-requests': '12ms',
        'x-ratelimit-limit-tokens': '4000000',
        'x-ratelimit-remaining-tokens': '3999990',
        'x-ratelimit-reset-tokens': '0s',
      },
    }));
    const completion = await provider('openai:gpt-4o-mini').complete({ model: 'gpt-4o-mini', prompt: 'hi' });
    expect(completion.text).toBe('ok');
    expect(completion.learnedLimits).toEqual({
      requests: { limit: 5000, remaining: 4999, resetMs: 12 },
      tokens: { limit: 4_000_000, remaining: 3_999_990, resetMs: 0 },
    });
    expect(fake.requests).toHaveLength(1);
  });

  it('anthropic: anthropic-ratelimit-* with RFC 3339 resets', async () => {
    const reset = new Date(Date.now() + 60_000).toISOString();
    fake.setHandler(() => ({
      rawBody: ANTHROPIC_BODY,
      headers: {
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '49',
        'anthropic-ratelimit-requests-reset': reset,
      },
    }));
    const completion = await provider('anthropic:claude-3-5-haiku-latest').complete({
      model: 'claude-3-5-haiku-latest',
      prompt: 'hi',
    });
    expect(completion.text).toBe('ok');
    const requests = completion.learnedLimits?.requests;
    expect(requests).toMatchObject({ limit: 50, remaining: 49 });
    // A minute ahead, read a moment later: a little under 60 s.
    expect(requests?.resetMs).toBeGreaterThan(30_000);
    expect(requests?.resetMs).toBeLessThanOrEqual(60_000);
    expect(fake.requests).toHaveLength(1);
  });

  it.each(['openai:gpt-4o-mini', 'anthropic:claude-3-5-haiku-latest', 'gemini:gemini-2.0-flash-lite'])(
    '%s without rate-limit headers: none learned',
    async (id) => {
      const completion = await provider(id).complete({ model: id.slice(id.indexOf(':') + 1), prompt: 'hi' });
      expect(completion.learnedLimits).toBeUndefined();
    },
  );

  it('the cache keeps the answer without what the vendor said of its limits', async () => {
    fake.setHandler(() => ({
      rawBody: OPENAI_BODY,
      headers: { 'x-ratelimit-limit-requests': '5000' },
    }));
    const stored: Completion[] = [];
    const cache = {
      get: async () => undefined,
      put: async (_key: string, completion: Completion) => {
        stored.push(completion);
      },
    };
    const completion = await callModel(
      provider('openai:gpt-4o-mini'),
      { model: 'gpt-4o-mini', prompt: 'hi' },
      { cache },
    );
    expect(completion.learnedLimits).toEqual({ requests: { limit: 5000 } });
    expect(stored).toHaveLength(1);
    expect(JSON.parse(JSON.stringify(stored[0]))).not.toHaveProperty('learnedLimits');
  });
});
