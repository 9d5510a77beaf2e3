import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../../shared/adapters/local/memory-rate-limit-store.js';
import { Aimd } from '../../../shared/lib/providers/rate-limit/aimd.js';
import { estimateCallTokens } from '../../../shared/lib/providers/rate-limit/bucket.js';
import { FALLBACK_AFTER_MS } from '../../../shared/lib/providers/rate-limit/fallback.js';
import { ModelLimiter } from '../../../shared/lib/providers/rate-limit/limiter.js';
import { RateLimiters } from '../../../shared/lib/providers/rate-limit/limiters.js';
import {
  parseLimitSpec,
  RateLimitSyntaxError,
  suiteLimitsById,
} from '../../../shared/lib/providers/rate-limit/spec.js';
import { ProviderError } from '../../../shared/model/errors.js';
import type { CompletionRequest } from '../../../shared/model/provider.js';

const request: CompletionRequest = { model: 'gpt-4o-mini', prompt: 'x'.repeat(40), maxTokens: 100 };

describe('token bucket (fake clock)', () => {
  // A bucket refills at 98% of the limit and holds 2% of a second's worth as its burst (at
  // least 1), so no second ever sees more than the limit.
  it('600 RPM: a burst of 1, then one request per 1/(0.98 · 10 per second) = 102.0 ms', () => {
    let now = 0;
    const store = new MemoryRateLimitStore(() => now);
    const limit = { rpm: 600 };
    const one = { requests: 1, tokens: 0 };
    expect([store.takeNow('m', limit, one), store.takeNow('m', limit, one)]).toEqual([0, 103]);
    now = 50; // 0.49 of a request refilled: 0.51 missing → 52.0 ms
    expect(store.takeNow('m', limit, one)).toBe(53);
    now = 103;
    expect(store.takeNow('m', limit, one)).toBe(0);
    // 1.0094 was there (the cap is the burst plus a millisecond's refill, 1.0098): 0.9906 missing.
    expect(store.takeNow('m', limit, one)).toBe(102);
    now = 10_000; // refills to the cap, never past it: 1.0098, then 0.9902 missing
    expect([store.takeNow('m', limit, one), store.takeNow('m', limit, one)]).toEqual([0, 102]);
  });

  it('never lets more than the limit through in any sliding second (3,000 RPM: 50)', () => {
    let now = 0;
    const store = new MemoryRateLimitStore(() => now);
    const limit = { rpm: 3_000 };
    const granted: number[] = [];
    // A greedy caller: takes whenever it may, for ten seconds.
    while (now < 10_000) {
      const wait = store.takeNow('m', limit, { requests: 1, tokens: 0 });
      if (wait === 0) granted.push(now);
      else now += wait;
    }
    let most = 0;
    for (let i = 0, j = 0; i < granted.length; i++) {
      while (granted[i]! - granted[j]! >= 1_000) j++;
      most = Math.max(most, i - j + 1);
    }
    expect(most).toBeLessThanOrEqual(50);
    // …and paces at 98% of it: 1 at once, then 49 a second.
    expect(granted.length).toBeGreaterThanOrEqual(Math.floor(1 + 49 * 9.9));
  });

  it('holds tokens per minute too, and lets a call bigger than the burst through a full bucket into debt', () => {
    let now = 0;
    const store = new MemoryRateLimitStore(() => now);
    const limit = { tpm: 60_000 }; // 1,000 tokens a second: refill 0.98 a ms, burst 20
    expect(store.takeNow('m', limit, { requests: 1, tokens: 15 })).toBe(0);
    // 5 left: 10 missing → 10.2 ms.
    expect(store.takeNow('m', limit, { requests: 1, tokens: 15 })).toBe(11);
    now = 11;
    expect(store.takeNow('m', limit, { requests: 1, tokens: 15 })).toBe(0);
    // 0.78 left; a 5,000-token call needs a full bucket (19.22 missing → 19.6 ms), then leaves debt.
    expect(store.takeNow('m', limit, { requests: 1, tokens: 5_000 })).toBe(20);
    now = 31;
    expect(store.takeNow('m', limit, { requests: 1, tokens: 5_000 })).toBe(0);
    now = 1_031; // −4,980 + 980 = −4,000: 4,001 missing for one token → 4,082.7 ms
    expect(store.takeNow('m', limit, { requests: 1, tokens: 1 })).toBe(4_083);
  });

  it('keeps models apart', () => {
    const store = new MemoryRateLimitStore(() => 0);
    const limit = { rpm: 60 };
    expect(store.takeNow('a', limit, { requests: 1, tokens: 0 })).toBe(0);
    expect(store.takeNow('b', limit, { requests: 1, tokens: 0 })).toBe(0);
    expect(store.takeNow('a', limit, { requests: 1, tokens: 0 })).toBe(1_021); // 1 / 0.98 per second
  });
});

describe('AIMD', () => {
  it('halves the calls in flight on a 429, once per cut, and recovers by one per window of successes', () => {
    const aimd = new Aimd(64);
    aimd.throttled(aimd.epoch, 32);
    expect(aimd.allowed).toBe(16);
    // Calls admitted before that cut report the same congestion: no second cut.
    aimd.throttled(0, 31);
    expect(aimd.allowed).toBe(16);
    aimd.throttled(aimd.epoch, 16);
    expect(aimd.allowed).toBe(8);
    // +1/limit per success: about one more slot per `limit` successes (8 → 9 takes 9 of them).
    const succeed = (n: number) => {
      for (let i = 0; i < n; i++) aimd.succeeded();
    };
    succeed(8);
    expect(aimd.allowed).toBe(8);
    succeed(1);
    expect(aimd.allowed).toBe(9);
    succeed(512 - 9);
    expect(aimd.allowed).toBe(33);
    succeed(2015 - 512);
    expect(aimd.allowed).toBe(64);
    succeed(100);
    expect(aimd.limit).toBe(64);
    for (let i = 0; i < 20; i++) aimd.throttled(aimd.epoch, 1);
    expect(aimd.allowed).toBe(1);
  });
});

describe('ModelLimiter', () => {
  const deferred = () => {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    return { promise, resolve };
  };

  it('cuts the calls in flight on a 429 and makes every caller wait out its retry-after', async () => {
    const { limiter, sleeps } = limiterOnFakeClock();
    const gates = Array.from({ length: 8 }, deferred);
    let started = 0;
    const calls = gates.map((gate, i) =>
      limiter.run(request, async () => {
        started += 1;
        await gate.promise;
        if (i === 0) throw new ProviderError('slow down', 'rate_limit', 'openai:m', 429, 2_000);
        return i;
      }),
    );
    await Promise.resolve();
    expect(limiter.active).toBe(8);
    gates[0]!.resolve();
    await expect(calls[0]).rejects.toThrow('slow down');
    expect(limiter.aimd.allowed).toBe(4);
    expect(limiter.throttles).toBe(1);
    // A new call waits until four of the seven left have finished.
    const late = limiter.run(request, async () => 'late');
    for (const gate of gates.slice(1, 4)) gate.resolve();
    await Promise.all(calls.slice(1, 4));
    expect(limiter.active).toBe(4);
    gates[4]!.resolve();
    await calls[4];
    await expect(late).resolves.toBe('late');
    // It was held by the retry-after the 429 gave.
    expect(sleeps).toEqual([2_000]);
    for (const gate of gates.slice(5)) gate.resolve();
    await Promise.all(calls.slice(5));
    expect(started).toBe(8);
    expect(limiter.active).toBe(0);
  });

  it('takes a lone 429 among answered calls for noise: only the refused call waits', async () => {
    const { limiter, sleeps } = limiterOnFakeClock();
    for (let i = 0; i < 30; i++) await limiter.run(request, async () => i);
    const refuse = () =>
      limiter.run(request, async () => {
        throw new ProviderError('slow down', 'rate_limit', 'openai:m', 429, 2_000);
      });
    await expect(refuse()).rejects.toThrow('slow down');
    // 1 in 31: the window stays, nobody else waits.
    expect(limiter.aimd.allowed).toBe(8);
    await limiter.run(request, async () => 'next');
    expect(sleeps).toEqual([]);
    // A run of them (over a tenth of the latest answers) is the model over its limit.
    for (let i = 0; i < 3; i++) await expect(refuse()).rejects.toThrow();
    expect(limiter.throttleShare).toBeCloseTo(4 / 35, 6);
    expect(limiter.aimd.allowed).toBe(1);
    await limiter.run(request, async () => 'after');
    expect(sleeps).toEqual([2_000]);
  });

  it('takes a call refused three times for the model over its limit, however rare 429s are', async () => {
    const { limiter, sleeps } = limiterOnFakeClock();
    for (let i = 0; i < 30; i++) await limiter.run(request, async () => i);
    const refuse = (attemptNo: number) =>
      limiter.run(
        request,
        async () => {
          throw new ProviderError('slow down', 'rate_limit', 'openai:m', 429, 2_000);
        },
        undefined,
        attemptNo,
      );
    // A first attempt and its retry refused among 30 answers: noise.
    await expect(refuse(1)).rejects.toThrow('slow down');
    await expect(refuse(2)).rejects.toThrow('slow down');
    expect(limiter.aimd.allowed).toBe(8);
    expect(sleeps).toEqual([]);
    // Its second retry refused too (3 in 33 still): left alone it would be refused until it gives up.
    await expect(refuse(3)).rejects.toThrow('slow down');
    expect(limiter.aimd.allowed).toBe(1);
    await limiter.run(request, async () => 'after');
    expect(sleeps).toEqual([2_000]);
  });

  it('keeps the window at or above an eighth of the caller concurrency', () => {
    const limiters = new RateLimiters({ store: new MemoryRateLimitStore() });
    const limiter = limiters.for('openai:m', undefined, 64);
    for (let i = 0; i < 20; i++) limiter.aimd.throttled(limiter.aimd.epoch, 64);
    expect(limiter.aimd.allowed).toBe(8);
    expect(limiters.for('openai:m', undefined, 4).aimd.allowed).toBe(8);
    limiter.aimd.limit = 0;
    expect(limiter.aimd.allowed).toBe(1);
    expect(Aimd.floorFor(1)).toBe(1);
  });

  it('paces calls with a declared limit through the bucket', async () => {
    let now = 0;
    const sleeps: number[] = [];
    const limiter = new ModelLimiter(
      'openai:m',
      { rpm: 120 },
      {
        store: new MemoryRateLimitStore(() => now),
        now: () => now,
        sleep: async (ms) => {
          sleeps.push(ms);
          now += ms;
        },
      },
    );
    const times: number[] = [];
    for (let i = 0; i < 5; i++) await limiter.run(request, async () => times.push(now));
    // 2 per second: refill 1.96 per second (one every 510.2 ms), burst 1; the fraction a
    // whole-millisecond wait leaves over carries to the next call.
    expect(times).toEqual([0, 511, 1_021, 1_531, 2_041]);
    expect(sleeps).toEqual([511, 510, 510, 510]);
  });
});

describe('a bucket that cannot be reached', () => {
  it('holds calls while it fails, then keeps to the share of the limit, says so once, and goes back when it answers', async () => {
    let now = 0;
    let down = true;
    const bucket = new MemoryRateLimitStore(() => now);
    const failing = <T>(answer: () => Promise<T>) =>
      down ? Promise.reject(new Error('table throttled')) : answer();
    const said: string[] = [];
    const limiter = new ModelLimiter(
      'openai:m',
      { rpm: 60 },
      {
        store: {
          take: (key, limit, need) => failing(() => bucket.take(key, limit, need)),
          lease: (key, limit, ask) => failing(() => bucket.lease(key, limit, ask)),
        },
        now: () => now,
        sleep: async (ms) => {
          now += ms;
        },
        random: () => 0.5,
        onStoreFallback: ({ key, share, error }) =>
          said.push(`${key} falls back to ${JSON.stringify(share)}: ${(error as Error).message}`),
        onStoreRecovered: ({ calls }) => said.push(`back on the bucket after ${calls} calls`),
      },
    );
    const sent: number[] = [];
    for (let i = 0; i < 5; i++) await limiter.run(request, async () => sent.push(now));
    // Nothing goes while every try fails (250, 500, 1,000, 2,000 ms apart): then the whole
    // limit (one process), paced with no burst, one call per 1/0.98 s.
    expect(sent[0]).toBeGreaterThanOrEqual(FALLBACK_AFTER_MS);
    for (let i = 1; i < sent.length; i++) expect(sent[i]! - sent[i - 1]!).toBeGreaterThanOrEqual(1_020);
    expect(said).toEqual(['openai:m falls back to {"rpm":60}: table throttled']);
    // The store answers again: the next try (at the next 10 s moment) ends the episode.
    down = false;
    now = 20_000;
    await limiter.run(request, async () => sent.push(now));
    expect(said).toEqual([
      'openai:m falls back to {"rpm":60}: table throttled',
      'back on the bucket after 5 calls',
    ]);
    expect(limiter.fallback.share).toBeUndefined();
  });
});

describe('declared limits', () => {
  it('reads ASSAY_LIMITS, resolving aliases, and names what is wrong', () => {
    expect(parseLimitSpec('openai:gpt-4o-mini=3000rpm,2000000tpm; claude-haiku-4.5=50RPM')).toEqual({
      'openai:gpt-4o-mini': { rpm: 3000, tpm: 2_000_000 },
      'anthropic:claude-haiku-4-5': { rpm: 50 },
    });
    expect(parseLimitSpec('ollama:llama3.1:8b=10rpm')).toEqual({ 'ollama:llama3.1:8b': { rpm: 10 } });
    expect(() => parseLimitSpec('openai:gpt-4o-mini=3000')).toThrow(
      /ASSAY_LIMITS: "openai:gpt-4o-mini=3000" has "3000", which is not a positive <n>rpm or <n>tpm/,
    );
    expect(() => parseLimitSpec('gpt-4o-mini')).toThrow(RateLimitSyntaxError);
    expect(() => parseLimitSpec('nosuchvendor:x=5rpm')).toThrow(/names no known backend/);
  });

  it('applies the stricter of the suite and the environment, axis by axis', () => {
    const limiters = new RateLimiters({
      store: new MemoryRateLimitStore(),
      env: { ASSAY_LIMITS: 'openai:gpt-4o-mini=3000rpm' },
    });
    const suite = suiteLimitsById({ limits: { 'gpt-4o-mini': { rpm: 5000, tpm: 100_000 } } });
    expect(limiters.for('openai:gpt-4o-mini', suite).limit).toEqual({ rpm: 3000, tpm: 100_000 });
    expect(limiters.for('openai:gpt-4o', suite).limit).toBeUndefined();
    // One limiter per model, whoever asks.
    expect(limiters.for('openai:gpt-4o-mini')).toBe(limiters.for('openai:gpt-4o-mini', suite));
  });

  it('estimates a call as a quarter of its characters plus maxTokens', () => {
    expect(
      estimateCallTokens({ ...request, system: 'y'.repeat(8), history: [{ role: 'user', content: 'zz' }] }),
    ).toBe(13 + 100);
  });
});

/** A limiter of 8 calls on a fake clock whose sleeps are recorded and pass at once. */
function limiterOnFakeClock(): { limiter: ModelLimiter; sleeps: number[] } {
  let now = 0;
  const sleeps: number[] = [];
  const limiter = new ModelLimiter('openai:m', undefined, {
    store: new MemoryRateLimitStore(() => now),
    maxConcurrency: 8,
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
    },
  });
  return { limiter, sleeps };
}
