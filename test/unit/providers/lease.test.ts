/**
 * A fleet's bucket, piece by piece (see fleet-rate-limit.test.ts for a whole fleet): how many
 * shards a limit gets, what a shard hands out, how a container spends what it holds, the local
 * share it keeps to when the store cannot answer, and one container's limiter leasing.
 */
import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../../shared/adapters/local/memory-rate-limit-store.js';
import { LocalShare } from '../../../shared/lib/providers/rate-limit/fallback.js';
import {
  Holdings,
  LEASE_AHEAD_MS,
  LEASE_GRACE_MS,
  leaseFrom,
  MAX_LAG_MS,
  shardLimit,
  shardsFor,
} from '../../../shared/lib/providers/rate-limit/lease.js';
import { fleetSizeOf, RateLimiters } from '../../../shared/lib/providers/rate-limit/limiters.js';
import { RateLimitSyntaxError } from '../../../shared/lib/providers/rate-limit/spec.js';
import type { Completion, CompletionRequest } from '../../../shared/model/provider.js';
import type { Lease, LeaseSpan, RateLimitStore } from '../../../shared/ports/ports.js';
import { SimClock } from '../../fakes/sim-clock.js';

/** The most of `sent` (times, ascending) within any `windowMs`. */
function mostWithin(sent: readonly number[], windowMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; i < sent.length; i++) {
    while (sent[i]! - sent[j]! >= windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

const granted = (outcome: ReturnType<typeof leaseFrom>) => {
  if ('waitMs' in outcome) throw new Error(`refused for ${outcome.waitMs} ms`);
  return outcome;
};

describe('shards', () => {
  it('about 50 requests (or 50,000 tokens) a second each, at most 32', () => {
    expect(shardsFor({ rpm: 3_000 })).toBe(1); // 49 a second
    expect(shardsFor({ rpm: 30_000, tpm: 30_000_000 })).toBe(10);
    expect(shardsFor({ tpm: 12_000_000 })).toBe(4); // 196,000 tokens a second
    expect(shardsFor({ rpm: 10_000_000 })).toBe(32);
    expect(shardLimit({ rpm: 30_000, tpm: 30_000_000 }, 10)).toEqual({ rpm: 3_000, tpm: 3_000_000 });
  });
});

describe('what a shard hands out', () => {
  // 600 RPM: 9.8 a second (0.0098 a ms), a burst of 1.
  const limit = { rpm: 600 };
  const perMs = 0.0098;
  const want = (requests: number) => ({ requests, tokens: 0 });

  it('the next stretch of its refill: a fresh one from its burst, each after the last, into the future', () => {
    const first = granted(leaseFrom(undefined, limit, want(5), 10_000, 0));
    const span = first.lease.requests!;
    // A fresh shard holds its burst: that much has already arrived.
    expect(span.from).toBeCloseTo(10_000 - 1 / perMs, 6);
    expect((span.to - span.from) * perMs).toBeCloseTo(5, 9);
    expect(first.state.requests).toBeCloseTo(1 - 5, 9);
    const second = granted(leaseFrom(first.state, limit, want(10), 10_000, 0));
    expect(second.lease.requests!.from).toBeCloseTo(span.to, 6);
    expect(second.lease.requests!.to).toBeCloseTo(span.to + 10 / perMs, 6);
  });

  it('nothing once it is handed out LEASE_AHEAD_MS ahead, and how long until it is not', () => {
    let state = granted(leaseFrom(undefined, limit, want(20), 0, 0)).state; // ~1.94 s ahead
    const third = granted(leaseFrom(state, limit, want(10), 0, 0)); // still under 2 s: granted
    state = third.state;
    const ahead = third.lease.requests!.to; // ms past 0 handed out
    expect(ahead).toBeGreaterThan(LEASE_AHEAD_MS);
    expect(leaseFrom(state, limit, want(1), 0, 0)).toEqual({ waitMs: Math.ceil(ahead - LEASE_AHEAD_MS) });
    // The shard refills meanwhile; once under the mark it hands out again, after the last stretch.
    const later = granted(leaseFrom(state, limit, want(1), Math.ceil(ahead - LEASE_AHEAD_MS), 0));
    expect(later.lease.requests!.from).toBeCloseTo(ahead, 6);
  });

  it('the same stretch of time on every axis, as long as the axis that needs it longest', () => {
    // 600 RPM and 60,000 TPM: 0.0098 requests and 0.98 tokens a millisecond.
    const both = { rpm: 600, tpm: 60_000 };
    const { lease, state } = granted(leaseFrom(undefined, both, { requests: 1, tokens: 4_900 }, 0, 0));
    expect(lease.tokens!.to - lease.tokens!.from).toBeCloseTo(5_000, 6);
    expect(lease.requests!.to - lease.requests!.from).toBeCloseTo(5_000, 6);
    // The requests of those 5 s (49) go with them, so the two axes stay in step (bursts: 1, 20).
    expect(state.requests).toBeCloseTo(1 - 49, 6);
    expect(state.tokens).toBeCloseTo(20 - 4_900, 6);
  });
});

describe('what a container holds', () => {
  // 10 requests arriving over a second (0.01 a ms), a burst of 1.
  const span = (from: number, to: number): LeaseSpan => ({ from, to, perMs: 0.01, burst: 1 });
  const one = { requests: 1, tokens: 0 };
  const limit = { rpm: 600 };

  it('sends a call when its request has arrived, and no more than the stretch holds', () => {
    const held = new Holdings();
    held.add({ shard: 0, requests: span(0, 1_000) });
    const sent: number[] = [];
    for (let now = 0; now <= 2_000; now++) {
      const at = held.goAt(one, limit, now);
      if (at !== undefined && at <= now) {
        held.spend(one, limit, now);
        sent.push(now);
      }
    }
    expect(sent).toEqual([100, 200, 300, 400, 500, 600, 700, 800, 900, 1_000]);
    expect(held.goAt(one, limit, 2_000)).toBeUndefined();
  });

  it('loses refill left unused beyond the burst, as a bucket does', () => {
    const held = new Holdings();
    held.add({ shard: 0, requests: span(0, 1_000) });
    // At 600 ms only the burst (and a millisecond) of what arrived is kept: 1.01 + 4 to come.
    expect(held.supply(600).requests).toBeCloseTo(5.01, 9);
    expect(held.goAt(one, limit, 600)).toBeLessThanOrEqual(600);
  });

  it('keeps the refill that arrived while the lease was on its way (a round trip, at most MAX_LAG_MS) and LEASE_GRACE_MS more', () => {
    // A full shard hands one call the stretch that started a burst ago: [900, 1000] at 1,000.
    const lease: Lease = { shard: 0, at: 1_000, requests: span(900, 1_000) };
    const late = new Holdings();
    late.add(lease, 1_030); // 30 ms on its way
    expect(late.goAt(one, limit, 1_030)).toBeLessThanOrEqual(1_030);
    // Counted from the shard's clock (a lease that does not say when it was handed out), it
    // would be gone on arrival…
    const fromShard = new Holdings();
    fromShard.add({ shard: 0, requests: span(900, 1_000) }, 1_030);
    expect(fromShard.goAt(one, limit, 1_030)).toBeUndefined();
    // …and LEASE_GRACE_MS after its arrival it still goes: the container had work of its own.
    expect(late.goAt(one, limit, 1_030 + LEASE_GRACE_MS)).toBeLessThanOrEqual(1_030 + LEASE_GRACE_MS);
    expect(late.goAt(one, limit, 1_030 + LEASE_GRACE_MS + 2)).toBeUndefined();
    // A round trip of up to MAX_LAG_MS keeps it all, a longer one only MAX_LAG_MS of it.
    const slow = new Holdings();
    slow.add(lease, 1_000 + MAX_LAG_MS);
    expect(slow.supply(1_000 + MAX_LAG_MS).requests).toBeCloseTo(1, 9);
    const slower = new Holdings();
    slower.add(lease, 1_000 + MAX_LAG_MS + 200);
    expect(slower.supply(1_000 + MAX_LAG_MS + 200).requests).toBeCloseTo(0, 9);
  });

  it('a call may need units from stretches of two shards: it goes when both have arrived', () => {
    const held = new Holdings();
    const lease = (shard: number, from: number): Lease => ({
      shard,
      tokens: { from, to: from + 200, perMs: 0.01, burst: 1 },
    });
    held.add(lease(0, 0));
    held.add(lease(1, 500));
    const tokens = { requests: 0, tokens: 3 };
    // 2 tokens from shard 0 (by 200 ms) and 1 from shard 1 (by 600 ms).
    expect(held.goAt(tokens, { tpm: 600 }, 0)).toBeCloseTo(600, 9);
    expect(held.endsAt(0)).toBe(700);
  });
});

describe('the local share', () => {
  it("1,000 containers' shares, each starting at a random point, add up to at most the limit in any minute", () => {
    for (const rpm of [3_000, 30_000]) {
      let seed = 7;
      const random = () => {
        seed = (seed * 16_807) % 2_147_483_647;
        return seed / 2_147_483_647;
      };
      const sent: number[] = [];
      for (let container = 0; container < 1_000; container++) {
        const share = new LocalShare(1_000, 0, random());
        for (let now = 0; now < 300_000; ) {
          const wait = share.wait({ rpm }, { requests: 1, tokens: 0 }, now);
          if (wait === 0) sent.push(now);
          else now += wait;
        }
      }
      sent.sort((a, b) => a - b);
      const most = mostWithin(sent, 60_000);
      expect(most).toBeLessThanOrEqual(rpm);
      expect(most).toBeGreaterThanOrEqual(0.95 * rpm);
    }
  });
});

describe('the fleet size', () => {
  it('reads ASSAY_WORKER_MAX_CONCURRENCY, else the most an SQS event source runs, and names a bad value', () => {
    expect(fleetSizeOf({})).toBe(1_000);
    expect(fleetSizeOf({ ASSAY_WORKER_MAX_CONCURRENCY: '50' })).toBe(50);
    expect(() => fleetSizeOf({ ASSAY_WORKER_MAX_CONCURRENCY: 'lots' })).toThrow(RateLimitSyntaxError);
    expect(() => fleetSizeOf({ ASSAY_WORKER_MAX_CONCURRENCY: '0' })).toThrow(/ASSAY_WORKER_MAX_CONCURRENCY/);
  });
});

describe('one container of a fleet (simulated clock)', () => {
  it('leases stretches for the calls it has waiting and sends them at the bucket pace, a lease for many calls', async () => {
    const clock = new SimClock();
    const limiter = new RateLimiters({
      store: new MemoryRateLimitStore(clock.now),
      env: { ASSAY_LIMITS: 'openai:m=600rpm' },
      fleetSize: 10,
      now: clock.now,
      sleep: clock.sleep,
      timers: clock,
      random: () => 0.5,
    }).for('openai:m', undefined, 40);
    const request: CompletionRequest = { model: 'm', prompt: 'hello' };
    const sent: number[] = [];
    const answer = { text: 'ok' } as Completion;
    const lanes = Array.from({ length: 40 }, async () => {
      while (clock.now() < 60_000)
        await limiter.run(request, async () => {
          sent.push(clock.now());
          await clock.sleep(1_000);
          return answer;
        });
    });
    await clock.runUntil(Promise.all(lanes));
    // 9.8 a second after its first lease (half a second in): never more in any second than the
    // limit, and about all of it.
    const most = mostWithin(sent, 1_000);
    expect(most).toBeLessThanOrEqual(10);
    expect(sent.length).toBeGreaterThanOrEqual(Math.floor(0.98 * 10 * 59));
    // Each lease covered the calls waiting (up to a second's worth, 9): alone on the bucket, the
    // container is never turned away.
    const { leases, refused } = limiter.fleet!.counts;
    expect(leases).toBeLessThanOrEqual(Math.ceil(sent.length / 8));
    expect(refused).toBe(0);
  });

  it('a limit one container learned from the vendor holds the leases of another that starts later', async () => {
    const clock = new SimClock();
    const store = new MemoryRateLimitStore(clock.now);
    const container = () =>
      new RateLimiters({
        store,
        env: { ASSAY_LIMITS: 'openai:m=6000rpm' },
        fleetSize: 2,
        now: clock.now,
        sleep: clock.sleep,
        timers: clock,
        random: () => 0.5,
      }).for('openai:m');
    const first = container();
    const request: CompletionRequest = { model: 'm', prompt: 'hello' };
    // The vendor says 600 RPM on its answer.
    await clock.runUntil(
      first.run(
        request,
        async () => ({ text: 'ok', learnedLimits: { requests: { limit: 600 } } }) as Completion,
      ),
    );
    const second = container();
    const sent: number[] = [];
    const lanes = Array.from({ length: 20 }, async () => {
      while (clock.now() < 10_000)
        await second.run(request, async () => {
          sent.push(clock.now());
          return { text: 'ok' } as Completion;
        });
    });
    await clock.runUntil(Promise.all(lanes));
    expect(second.learned).toEqual({ rpm: 600 });
    // 9.8 a second, not 98: never more than 10 in a second (its burst and its refill)…
    const most = mostWithin(sent, 1_000);
    expect(most).toBeLessThanOrEqual(10);
    // …and about all of it from its first lease (at 1 s) to 10 s.
    expect(sent.filter((at) => at < 10_000).length).toBeGreaterThanOrEqual(Math.floor(9.8 * 9));
  });

  it('leases that take a round trip (20 ms each way) still cover the calls: a few calls at a time never stall', async () => {
    // Found by the capacity model: with a call or two waiting, each lease is one call's
    // stretch from a full shard, which started a burst (20 ms at 50 a second) before it was
    // handed out; judged by the shard's clock, it was lost on arrival and the calls leased again forever.
    const clock = new SimClock();
    const memory = new MemoryRateLimitStore(clock.now);
    const store: RateLimitStore = Object.assign(Object.create(memory), {
      lease: async (...args: Parameters<RateLimitStore['lease']>) => {
        await clock.sleep(20);
        const answer = await memory.lease(...args);
        await clock.sleep(20);
        return answer;
      },
    });
    const limiter = new RateLimiters({
      store,
      env: { ASSAY_LIMITS: 'openai:m=3000rpm' },
      fleetSize: 1,
      now: clock.now,
      sleep: clock.sleep,
      timers: clock,
      random: () => 0.5,
    }).for('openai:m');
    const request: CompletionRequest = { model: 'm', prompt: 'hello' };
    const sent: number[] = [];
    // Two lanes, each a 100 ms call: about 20 a second, under the shard's 49.
    const lanes = Array.from({ length: 2 }, async () => {
      for (let call = 0; call < 100; call++)
        await limiter.run(request, async () => {
          sent.push(clock.now());
          await clock.sleep(100);
          return { text: 'ok' } as Completion;
        });
    });
    // Each call waits for its lease (40 ms) at most, about: 200 calls in under 200 × 150 / 2 ms.
    await clock.runUntil(Promise.all(lanes), 15_000);
    expect(sent).toHaveLength(200);
    // And within the bucket: at most its 49 a second plus a burst and a round trip's refill.
    const most = mostWithin(sent, 1_000);
    expect(most).toBeLessThanOrEqual(49 + 1 + 2);
  });

  it('a call given up while it waits for a lease leaves the line, and the calls behind it go on', async () => {
    const clock = new SimClock();
    const limiter = new RateLimiters({
      store: new MemoryRateLimitStore(clock.now),
      env: { ASSAY_LIMITS: 'openai:m=60rpm' },
      fleetSize: 2,
      now: clock.now,
      sleep: clock.sleep,
      timers: clock,
      random: () => 0.5,
    }).for('openai:m');
    const request: CompletionRequest = { model: 'm', prompt: 'hello' };
    const answer = async () => ({ text: 'ok' }) as Completion;
    const stop = new AbortController();
    const calls = [
      limiter.run(request, answer),
      limiter.run(request, answer, stop.signal),
      limiter.run(request, answer),
    ];
    clock.setTimeout(() => stop.abort(new Error('stopped')), 600);
    const settled = await clock.runUntil(Promise.allSettled(calls));
    expect(settled.map((call) => call.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(settled[1]).toMatchObject({ reason: new Error('stopped') });
    // One a second (0.98): the third call took the second's place.
    expect(clock.now()).toBeLessThan(2_600);
  });
});
