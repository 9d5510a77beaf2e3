import { describe, expect, it, vi } from 'vitest';
import { callModel } from '../../../shared/lib/providers/call.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import { parseRetryAfterMs, retryDelayMs, withRetry } from '../../../shared/lib/providers/retry.js';
import { ProviderError } from '../../../shared/model/errors.js';
import { RetriesExhaustedError } from '../../../shared/model/provider-errors.js';
import { fakeClock, requestsSeen } from '../../fakes/fake-clock.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';
import { sequence } from '../../fakes/vendor-fake.js';

/** A sleep that records what it was asked to wait and returns at once. */
function recordingSleep(): { sleep: (ms: number) => Promise<void>; waits: number[] } {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms: number) => {
      waits.push(ms);
    },
  };
}

const transient = (retryAfterMs?: number) =>
  new ProviderError('busy', 'rate_limit', 'openai:gpt-4o-mini', 429, retryAfterMs);

describe('withRetry', () => {
  it('retries retryable errors and returns the first success', async () => {
    const { sleep, waits } = recordingSleep();
    let calls = 0;

    const result = await withRetry(
      async () => {
        calls++;
        if (calls < 3) throw transient();
        return 'ok';
      },
      { maxAttempts: 5, sleep, random: () => 0.5 },
    );

    expect(result).toBe('ok');
    expect(calls).toBe(3);
    expect(waits).toEqual([250, 500]);
  });

  it('waits what the server advised, capped by maxDelayMs', async () => {
    const { sleep, waits } = recordingSleep();
    const errors = [transient(1_000), transient(90_000)];

    await withRetry(
      async () => {
        const next = errors.shift();
        if (next) throw next;
        return 'ok';
      },
      { maxAttempts: 3, sleep, maxDelayMs: 30_000 },
    );

    expect(waits).toEqual([1_000, 30_000]);
  });

  it('backs off exponentially with full jitter under the cap', () => {
    const opts = { baseDelayMs: 500, maxDelayMs: 3_000, random: () => 0.999 };

    const delays = [1, 2, 3, 4, 5].map((attempt) => retryDelayMs(transient(), attempt, opts));

    expect(delays).toEqual([499, 999, 1998, 2997, 2997]);
    expect(retryDelayMs(transient(), 3, { ...opts, random: () => 0 })).toBe(0);
  });

  it('throws a permanent error at once without waiting', async () => {
    const { sleep, waits } = recordingSleep();
    let calls = 0;
    const permanent = new ProviderError('bad', 'bad_request', 'openai:gpt-4o-mini', 400);

    await expect(
      withRetry(
        async () => {
          calls++;
          throw permanent;
        },
        { maxAttempts: 5, sleep },
      ),
    ).rejects.toBe(permanent);
    expect(calls).toBe(1);
    expect(waits).toEqual([]);
  });

  it('does not retry errors that are not ProviderErrors', async () => {
    let calls = 0;
    const bug = new TypeError('undefined is not a function');

    await expect(
      withRetry(
        async () => {
          calls++;
          throw bug;
        },
        { maxAttempts: 5 },
      ),
    ).rejects.toBe(bug);
    expect(calls).toBe(1);
  });

  it('gives up after maxAttempts with RetriesExhaustedError carrying the count and the last error', async () => {
    const { sleep } = recordingSleep();
    let calls = 0;

    const error = await withRetry(
      async () => {
        calls++;
        throw transient();
      },
      { maxAttempts: 3, sleep },
    ).catch((e: unknown) => e);

    expect(calls).toBe(3);
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      attempts: 3,
      kind: 'rate_limit',
      status: 429,
      name: 'RetriesExhaustedError',
    });
    expect((error as RetriesExhaustedError).cause).toBeInstanceOf(ProviderError);
    expect((error as Error).message).toContain('gave up after 3 attempts');
  });

  it('stops waiting when the signal aborts', async () => {
    fakeClock();
    const controller = new AbortController();
    const reason = new Error('stop');
    setTimeout(() => controller.abort(reason), 20);
    let calls = 0;

    const outcome = withRetry(
      async () => {
        calls++;
        throw transient(60_000);
      },
      { maxAttempts: 3, signal: controller.signal, maxDelayMs: 60_000 },
    ).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(20);

    // Aborted 20 ms into a 60 s wait: the reason at once, no second attempt.
    expect(await outcome).toBe(reason);
    expect(calls).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('parseRetryAfterMs', () => {
  const headers = (h: Record<string, string>) => (name: string) => h[name];

  it('reads delta-seconds, HTTP dates and retry-after-ms', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');

    expect(parseRetryAfterMs(headers({ 'retry-after': '3' }), now)).toBe(3_000);
    expect(parseRetryAfterMs(headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now)).toBe(5_000);
    expect(parseRetryAfterMs(headers({ 'retry-after-ms': '150', 'retry-after': '3' }), now)).toBe(150);
    expect(parseRetryAfterMs(headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(parseRetryAfterMs(headers({}), now)).toBeUndefined();
  });
});

describe('retries against the vendor fake (real SDKs)', () => {
  const fake = useVendorFake();

  const ids = ['openai:gpt-4o-mini', 'anthropic:claude-3-5-haiku-latest', 'gemini:gemini-2.0-flash-lite'];

  describe.each(ids)('%s', (id) => {
    const model = id.slice(id.indexOf(':') + 1);
    const make = (timeoutMs = 5_000) =>
      createProvider(id, { env: fake.env, prices: EMBEDDED_PRICES, timeoutMs });

    it('retries a 429 after the retry-after the server gave', async () => {
      fake.setHandler(sequence({ status: 429, headers: { 'retry-after': '1' } }));
      const { sleep, waits } = recordingSleep();

      const completion = await callModel(make(), { model, prompt: 'hi' }, { maxAttempts: 3, sleep });

      expect(completion.text).toBe('{"label":"TP","reason":"fake"}');
      expect(waits).toEqual([1_000]);
      expect(fake.requests).toHaveLength(2);
    });

    it('retries a 500 and then succeeds', async () => {
      fake.setHandler(sequence({ status: 500 }));
      const { sleep } = recordingSleep();

      const completion = await callModel(make(), { model, prompt: 'hi' }, { maxAttempts: 3, sleep });

      expect(completion.finishReason).toBe('stop');
      expect(fake.requests).toHaveLength(2);
    });

    it.each([400, 401])('does not retry a %i (exactly one request)', async (status) => {
      fake.setHandler(() => ({ status }));
      const { sleep, waits } = recordingSleep();

      const error = await callModel(make(), { model, prompt: 'hi' }, { maxAttempts: 5, sleep }).catch(
        (e) => e,
      );

      expect(error).toBeInstanceOf(ProviderError);
      expect(error).not.toBeInstanceOf(RetriesExhaustedError);
      expect(fake.requests).toHaveLength(1);
      expect(waits).toEqual([]);
    });

    it('retries a malformed 200 body', async () => {
      fake.setHandler(sequence({ rawBody: '{"choices": [' }));
      const { sleep } = recordingSleep();

      const completion = await callModel(make(), { model, prompt: 'hi' }, { maxAttempts: 2, sleep });

      expect(completion.text).toContain('TP');
      expect(fake.requests).toHaveLength(2);
    });

    it('retries a timeout', async () => {
      fakeClock();
      // The first request hangs (on the fake clock, so only the client's timeout can end it).
      fake.setHandler(sequence({ hangMs: 60_000 }));
      const { sleep } = recordingSleep();

      const pending = callModel(make(200), { model, prompt: 'hi' }, { maxAttempts: 2, sleep });
      await requestsSeen(fake, 1);
      await vi.advanceTimersByTimeAsync(199);
      expect(fake.requests).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1);
      const completion = await pending;

      expect(completion.finishReason).toBe('stop');
      expect(fake.requests).toHaveLength(2);
    });

    it('caps retries at maxAttempts (counted in requests) and reports the attempts', async () => {
      fake.setHandler(() => ({ status: 503 }));
      const { sleep, waits } = recordingSleep();

      const error = await callModel(make(), { model, prompt: 'hi' }, { maxAttempts: 4, sleep }).catch(
        (e) => e,
      );

      expect(error).toBeInstanceOf(RetriesExhaustedError);
      expect(error).toMatchObject({ attempts: 4, kind: 'server', status: 503 });
      expect(fake.requests).toHaveLength(4);
      expect(waits).toHaveLength(3);
    });
  });
});
