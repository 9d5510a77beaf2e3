/**
 * Limits learned from vendor response headers: the parsing of OpenAI's and Anthropic's
 * rate-limit headers, and the model limiter pacing by what it learned, on a simulated clock
 * (nothing here reads the wall clock).
 */
import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../../shared/adapters/local/memory-rate-limit-store.js';
import { callModel } from '../../../shared/lib/providers/call.js';
import {
  anthropicLearnedLimits,
  exhaustedWaitMs,
  learnedLimitsFromHeaders,
  learnedRateLimit,
  openAiLearnedLimits,
  parseResetDuration,
} from '../../../shared/lib/providers/rate-limit/learned-limits.js';
import { ModelLimiter } from '../../../shared/lib/providers/rate-limit/limiter.js';
import { RateLimiters } from '../../../shared/lib/providers/rate-limit/limiters.js';
import { ProviderError } from '../../../shared/model/errors.js';
import type {
  Completion,
  CompletionRequest,
  LearnedLimits,
  LlmProvider,
} from '../../../shared/model/provider.js';
import { SimClock } from '../../fakes/sim-clock.js';

const headers =
  (values: Record<string, string>) =>
  (name: string): string | undefined =>
    values[name];

describe('reset durations as OpenAI writes them', () => {
  it.each([
    ['6m0s', 360_000],
    ['1m30.5s', 90_500],
    ['1s', 1_000],
    ['250ms', 250],
    ['20ms', 20],
    ['1h2m3s', 3_723_000],
    ['0.5s', 500],
    ['1.5', 1_500],
    ['900us', 0.9],
  ])('%s is %d ms', (text, ms) => {
    expect(parseResetDuration(text)).toBeCloseTo(ms, 6);
  });

  it.each(['', 'soon', '1x', '-1s', 's', '1m 30s', '1e3ms', '2025-01-01T00:00:00Z'])('ignores %j', (text) => {
    expect(parseResetDuration(text)).toBeUndefined();
  });

  it('ignores a missing header', () => {
    expect(parseResetDuration(undefined)).toBeUndefined();
    expect(parseResetDuration(null)).toBeUndefined();
  });
});

describe('OpenAI rate-limit headers', () => {
  it('reads both axes: limit, remaining and reset', () => {
    const learned = openAiLearnedLimits(
      headers({
        'x-ratelimit-limit-requests': '3000',
        'x-ratelimit-remaining-requests': '2968',
        'x-ratelimit-reset-requests': '640ms',
        'x-ratelimit-limit-tokens': '250000',
        'x-ratelimit-remaining-tokens': '249588',
        'x-ratelimit-reset-tokens': '98ms',
      }),
    );
    expect(learned).toEqual({
      requests: { limit: 3000, remaining: 2968, resetMs: 640 },
      tokens: { limit: 250_000, remaining: 249_588, resetMs: 98 },
    });
    expect(learnedRateLimit(learned)).toEqual({ rpm: 3000, tpm: 250_000 });
  });

  it('is undefined without headers (a server that does not meter)', () => {
    expect(openAiLearnedLimits(headers({}))).toBeUndefined();
    expect(learnedLimitsFromHeaders(headers({ 'content-type': 'application/json' }))).toBeUndefined();
  });

  it('drops garbage: an axis needs a positive numeric limit; a bad remaining or reset is left out', () => {
    expect(
      openAiLearnedLimits(
        headers({
          'x-ratelimit-limit-requests': 'lots',
          'x-ratelimit-remaining-requests': '10',
          'x-ratelimit-limit-tokens': '1000',
          'x-ratelimit-remaining-tokens': '-5',
          'x-ratelimit-reset-tokens': 'tomorrow',
        }),
      ),
    ).toEqual({ tokens: { limit: 1000 } });
    expect(openAiLearnedLimits(headers({ 'x-ratelimit-limit-requests': '0' }))).toBeUndefined();
    // A remaining above the limit says nothing more than "full".
    expect(
      openAiLearnedLimits(
        headers({ 'x-ratelimit-limit-requests': '60', 'x-ratelimit-remaining-requests': '99' }),
      ),
    ).toEqual({ requests: { limit: 60, remaining: 60 } });
  });

  it('reads a limit whose reset is far longer than a minute allows as the longer window it is', () => {
    // 10,000 a day, 100 used, 14.4 min to refill them: 6.94 a minute, not 10,000.
    const learned = openAiLearnedLimits(
      headers({
        'x-ratelimit-limit-requests': '10000',
        'x-ratelimit-remaining-requests': '9900',
        'x-ratelimit-reset-requests': '14m24s',
      }),
    );
    expect(learnedRateLimit(learned)!.rpm).toBeCloseTo(10_000 / 1_440, 6);
    // The same with a minute's pace of reset (32 used, 640 ms): a per-minute limit.
    expect(
      learnedRateLimit(
        openAiLearnedLimits(
          headers({
            'x-ratelimit-limit-requests': '3000',
            'x-ratelimit-remaining-requests': '2968',
            'x-ratelimit-reset-requests': '1s',
          }),
        ),
      ),
    ).toEqual({ rpm: 3000 });
  });
});

describe('Anthropic rate-limit headers', () => {
  const now = Date.parse('2026-11-24T02:00:00Z');

  it('reads requests and tokens, resets as RFC 3339 times against the clock', () => {
    const learned = anthropicLearnedLimits(
      headers({
        'anthropic-ratelimit-requests-limit': '4000',
        'anthropic-ratelimit-requests-remaining': '3999',
        'anthropic-ratelimit-requests-reset': '2026-11-24T02:00:00.015Z',
        'anthropic-ratelimit-tokens-limit': '400000',
        'anthropic-ratelimit-tokens-remaining': '399000',
        'anthropic-ratelimit-tokens-reset': '2026-11-24T02:00:01+00:00',
        'anthropic-ratelimit-input-tokens-limit': '300000',
      }),
      now,
    );
    expect(learned).toEqual({
      requests: { limit: 4000, remaining: 3999, resetMs: 15 },
      tokens: { limit: 400_000, remaining: 399_000, resetMs: 1_000 },
    });
  });

  it('falls back to the input-token limit; a reset in the past is 0; a garbage reset is left out', () => {
    expect(
      anthropicLearnedLimits(
        headers({
          'anthropic-ratelimit-requests-limit': '50',
          'anthropic-ratelimit-requests-reset': 'not a time',
          'anthropic-ratelimit-input-tokens-limit': '40000',
          'anthropic-ratelimit-input-tokens-remaining': '39000',
          'anthropic-ratelimit-input-tokens-reset': '2026-11-24T01:59:59Z',
        }),
        now,
      ),
    ).toEqual({
      requests: { limit: 50 },
      tokens: { limit: 40_000, remaining: 39_000, resetMs: 0 },
    });
  });

  it('is read by the vendor-neutral reader too, and absent headers give nothing', () => {
    expect(learnedLimitsFromHeaders(headers({ 'anthropic-ratelimit-requests-limit': '50' }), now)).toEqual({
      requests: { limit: 50 },
    });
    expect(anthropicLearnedLimits(headers({}), now)).toBeUndefined();
  });
});

describe('an axis with nothing left', () => {
  it('holds calls for the time one unit takes to refill', () => {
    expect(exhaustedWaitMs({ requests: { limit: 3000, remaining: 0, resetMs: 60_000 } })).toBe(20);
    expect(exhaustedWaitMs({ requests: { limit: 3000, remaining: 5, resetMs: 60_000 } })).toBe(0);
    expect(exhaustedWaitMs({ requests: { limit: 3000, remaining: 0 } })).toBe(0);
  });
});

const request: CompletionRequest = { model: 'm', prompt: 'x'.repeat(40) };

function answer(learnedLimits?: LearnedLimits): Completion {
  return {
    text: 'ok',
    finishReason: 'stop',
    usage: { input: 10, output: 2, cached: 0 },
    costUsd: 0,
    latencyMs: 0,
    cached: false,
    simulated: false,
    providerId: 'openai:m',
    ...(learnedLimits ? { learnedLimits } : {}),
  };
}

describe('the limiter and learned limits (fake clock)', () => {
  function limiterAt(declared?: { rpm?: number; tpm?: number }) {
    let now = 0;
    const sleeps: number[] = [];
    const store = new MemoryRateLimitStore(() => now);
    const options = {
      store,
      now: () => now,
      sleep: async (ms: number) => {
        sleeps.push(ms);
        now += ms;
      },
    };
    return {
      limiter: new ModelLimiter('openai:m', declared, options),
      store,
      sleeps,
      options,
      at: (ms: number) => {
        now = ms;
      },
    };
  }

  it('paces by a learned limit once an answer reported one, starting in debt by what the vendor counts', async () => {
    const { limiter, sleeps } = limiterAt();
    // Unknown limit: no waiting.
    await limiter.run(request, async () => answer());
    expect(sleeps).toEqual([]);
    // 120 RPM reported, 3 used: a burst of 1, less 3 → −2 → 3 requests to refill at 1.96/s.
    await limiter.run(request, async () =>
      answer({ requests: { limit: 120, remaining: 117, resetMs: 1_500 } }),
    );
    expect(limiter.learned).toEqual({ rpm: 120 });
    await limiter.run(request, async () => answer());
    expect(sleeps).toEqual([1_531]);
    await limiter.run(request, async () => answer());
    expect(sleeps).toEqual([1_531, 510]);
  });

  it('counts its own calls of the last second as debt when they outnumber what the vendor reports', async () => {
    const { limiter, sleeps } = limiterAt();
    for (let i = 0; i < 5; i++) await limiter.run(request, async () => answer());
    await limiter.run(request, async () => answer({ requests: { limit: 120 } }));
    await limiter.run(request, async () => answer());
    // 6 calls went out unmetered in this (simulated) instant: 1 − 6 = −5 → 6 to refill.
    expect(sleeps).toEqual([Math.ceil(6 / (1.96 / 1000))]);
  });

  it('the smaller of declared and learned wins, per axis', async () => {
    const { limiter, sleeps } = limiterAt({ rpm: 60 });
    await limiter.run(request, async () =>
      answer({ requests: { limit: 600 }, tokens: { limit: 1_000_000 } }),
    );
    expect(limiter.effectiveLimit).toEqual({ rpm: 60, tpm: 1_000_000 });
    await limiter.run(request, async () => answer());
    // Declared 60 RPM is stricter: one per 1,020.4 ms.
    expect(sleeps).toEqual([1_021]);
    const lower = limiterAt({ rpm: 600 });
    await lower.limiter.run(request, async () => answer({ requests: { limit: 60 } }));
    expect(lower.limiter.effectiveLimit).toEqual({ rpm: 60 });
  });

  it('holds every call when the vendor says nothing is left, for one unit of its refill', async () => {
    const { limiter, sleeps } = limiterAt();
    await limiter.run(request, async () =>
      answer({ requests: { limit: 3000, remaining: 0, resetMs: 60_000 } }),
    );
    sleeps.length = 0;
    await limiter.run(request, async () => answer());
    // The pause (20 ms), then the bucket itself (3,000 RPM learned, in debt by 3,000).
    expect(sleeps[0]).toBe(20);
  });

  it('a fresh limiter starts from the limit the store learned (another worker, an earlier run)', async () => {
    const first = limiterAt();
    await first.limiter.run(request, async () => answer({ requests: { limit: 60 } }));
    expect(await first.store.learned('openai:m')).toEqual({ rpm: 60 });
    const fresh = new ModelLimiter('openai:m', undefined, first.options);
    await fresh.run(request, async () => answer());
    expect(fresh.learned).toEqual({ rpm: 60 });
    // The shared bucket: the first limiter's call took its burst, so the fresh one waits.
    expect(first.sleeps.length).toBeGreaterThan(0);
  });
});

/**
 * A vendor as OpenAI meters it: a 3,000 RPM limit enforced by the sliding second (at most 50
 * accepted in any second; over it, 429 with retry-after), answers after 200 ms, and on every
 * answer OpenAI's headers: the minute's limit, and a bucket of that size refilled at 50 a
 * second (remaining, and the time until it is full again).
 */
function meteredVendor(clock: SimClock, sendHeaders: boolean) {
  const rpm = 3_000;
  const perSecond = rpm / 60;
  const accepted: number[] = [];
  let used = 0;
  let usedAt = 0;
  const stats = { requests: 0, refused: 0, firstAt: -1, lastAt: 0, answered: 0 };
  const provider: LlmProvider = {
    id: 'openai:m',
    simulated: false,
    complete(): Promise<Completion> {
      const now = clock.now();
      stats.requests += 1;
      if (stats.firstAt < 0) stats.firstAt = now;
      while (accepted.length > 0 && accepted[0]! <= now - 1_000) accepted.shift();
      return new Promise((resolve, reject) => {
        if (accepted.length >= perSecond) {
          stats.refused += 1;
          const retryAfterMs = Math.max(1, Math.ceil((accepted[0]! + 1_000 - now) / 1_000)) * 1_000;
          clock.setTimeout(
            () => reject(new ProviderError('rate limit', 'rate_limit', 'openai:m', 429, retryAfterMs)),
            5,
          );
          return;
        }
        accepted.push(now);
        used = Math.max(0, used - ((now - usedAt) * perSecond) / 1_000) + 1;
        usedAt = now;
        const learned: LearnedLimits = {
          requests: {
            limit: rpm,
            remaining: Math.floor(rpm - used),
            resetMs: Math.ceil((used / perSecond) * 1_000),
          },
        };
        clock.setTimeout(() => {
          stats.answered += 1;
          stats.lastAt = clock.now();
          resolve(answer(sendHeaders ? learned : undefined));
        }, 200);
      });
    },
  };
  return { provider, stats, perSecond };
}

async function undeclaredRun(sendHeaders: boolean) {
  const clock = new SimClock();
  const limiters = new RateLimiters({
    store: new MemoryRateLimitStore(clock.now),
    now: clock.now,
    sleep: clock.sleep,
    timers: clock,
  });
  const concurrency = 32;
  const items = 1_500;
  const limiter = limiters.for('openai:m', undefined, concurrency);
  const vendor = meteredVendor(clock, sendHeaders);
  let next = 0;
  let failed = 0;
  const lane = async () => {
    while (next < items) {
      next += 1;
      try {
        await callModel(vendor.provider, request, {
          limiter,
          maxAttempts: 8,
          sleep: clock.sleep,
          random: () => 0.5,
        });
      } catch {
        failed += 1;
      }
    }
  };
  await clock.runUntil(Promise.all(Array.from({ length: concurrency }, lane)), 3_600_000);
  const { stats } = vendor;
  const perSecond = stats.answered / ((stats.lastAt - stats.firstAt) / 1_000);
  return { share: perSecond / vendor.perSecond, refused: stats.refused / stats.requests, failed };
}

describe('an undeclared 3,000 RPM limit, 1,500 items at C = 32 (simulated clock)', () => {
  it('with the vendor headers: at least 0.9 of the limit, at most 2% of requests refused', async () => {
    const out = await undeclaredRun(true);
    expect(out.failed).toBe(0);
    expect(out.share).toBeGreaterThanOrEqual(0.9);
    expect(out.share).toBeLessThanOrEqual(1);
    expect(out.refused).toBeLessThanOrEqual(0.02);
  });

  it('without them the window only has the 429s to go by: well short of that', async () => {
    const out = await undeclaredRun(false);
    expect(out.failed).toBe(0);
    expect(out.share < 0.9 || out.refused > 0.02).toBe(true);
  });
});
