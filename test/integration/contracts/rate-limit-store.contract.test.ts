/**
 * The RateLimitStore contract: token buckets that give what they have and say how long to
 * wait otherwise (a take per call, one process), and shards of them that hand out stretches of
 * their refill (a lease, a fleet), in memory and in DynamoDB alike. The clock is a number the
 * test moves; no test waits.
 */
import { describe, expect, it } from 'vitest';
import { DynamoRateLimitStore } from '../../../shared/adapters/aws/dynamo-rate-limit-store.js';
import { MemoryRateLimitStore } from '../../../shared/adapters/local/memory-rate-limit-store.js';
import type { Lease, LeaseAnswer, LeaseSpan, RateLimitStore } from '../../../shared/ports/ports.js';
import { awsStack, fresh } from './fixtures.js';

const aws = awsStack('contract-limits');

/** A store on a clock the test sets. */
type Make = (now: () => number) => RateLimitStore;

const adapters: [string, Make][] = [
  ['memory', (now) => new MemoryRateLimitStore(now)],
  [
    'dynamodb',
    (now) =>
      new DynamoRateLimitStore({
        client: aws().clients.doc,
        tableName: aws().res.table,
        now,
        random: () => 0,
      }),
  ],
];

describe.each(adapters)('RateLimitStore contract: %s', { timeout: 60_000 }, (_name, make) => {
  it('gives a full bucket at once, then says how long until the next request fits, and takes nothing meanwhile', async () => {
    let now = 1_000_000;
    const store = make(() => now);
    const key = fresh('vendor:model');
    const limit = { rpm: 60 }; // about a request a second
    const one = { requests: 1, tokens: 0 };
    expect(await store.take(key, limit, one)).toBe(0);

    const wait = await store.take(key, limit, one);
    expect(wait).toBeGreaterThan(900);
    expect(wait).toBeLessThan(1_100);
    // A refused take takes nothing: asked again at the same moment, the same wait.
    expect(await store.take(key, limit, one)).toBe(wait);
    now += wait;
    expect(await store.take(key, limit, one)).toBe(0);
    expect(await store.take(key, limit, one)).toBeGreaterThan(900);
  });

  it('counts tokens against tpm (a call larger than the burst leaves a debt), each key its own bucket', async () => {
    let now = 2_000_000;
    const store = make(() => now);
    const [a, b] = [fresh('vendor:a'), fresh('vendor:b')];
    const limit = { tpm: 6_000 }; // about 100 tokens a second
    expect(await store.take(a, limit, { requests: 1, tokens: 6_000 })).toBe(0);
    const wait = await store.take(a, limit, { requests: 1, tokens: 500 });
    expect(wait).toBeGreaterThan(60_000); // the 6,000 tokens are paid back first
    expect(wait).toBeLessThan(62_000);
    expect(await store.take(b, limit, { requests: 1, tokens: 500 })).toBe(0);
    now += wait;
    expect(await store.take(a, limit, { requests: 1, tokens: 500 })).toBe(0);
  });

  /** 600 RPM: one shard, 9.8 requests a second (0.0098 a ms), a burst of 1. */
  const limit = { rpm: 600 };
  const perMs = 0.0098;
  const ask = (requests: number, shard = 0, waitedMs = 0) => ({
    shard,
    want: { requests, tokens: 0 },
    waitedMs,
  });
  const leased = (answer: LeaseAnswer): Lease => {
    if (!('lease' in answer)) throw new Error(`refused: ${JSON.stringify(answer)}`);
    return answer.lease;
  };
  const units = (span: LeaseSpan) => (span.to - span.from) * span.perMs;

  it('leases the next stretch of a shard: a fresh one from its burst, each after the last, into the future', async () => {
    const now = 3_000_000;
    const store = make(() => now);
    const key = fresh('vendor:lease');
    const first = leased(await store.lease(key, limit, ask(5))).requests!;
    expect(first.perMs).toBeCloseTo(perMs, 9);
    expect(first.from).toBeCloseTo(now - 1 / perMs, 3); // the burst is there already
    expect(units(first)).toBeCloseTo(5, 6);
    const second = leased(await store.lease(key, limit, ask(10))).requests!;
    expect(second.from).toBeCloseTo(first.to, 3);
    expect(units(second)).toBeCloseTo(10, 6);
  });

  it('refuses once handed out 2 s ahead, taking nothing, and says how long until it will not', async () => {
    let now = 4_000_000;
    const store = make(() => now);
    const key = fresh('vendor:ahead');
    leased(await store.lease(key, limit, ask(10)));
    const last = leased(await store.lease(key, limit, ask(15))).requests!; // ends ~2.4 s ahead
    const refused = await store.lease(key, limit, ask(1));
    expect(refused).toMatchObject({ waitMs: Math.ceil(last.to - now - 2_000) });
    expect(await store.lease(key, limit, ask(1))).toEqual(refused);
    now += (refused as { waitMs: number }).waitMs;
    expect(leased(await store.lease(key, limit, ask(1))).requests!.from).toBeCloseTo(last.to, 3);
  });

  it('hands out one stretch of time on every axis; each shard and each key its own bucket', async () => {
    const now = 5_000_000;
    const store = make(() => now);
    const [a, b] = [fresh('vendor:a'), fresh('vendor:b')];
    // 6,000 RPM and 600,000 TPM: two shards (98 requests a second), each 0.049 requests and 4.9 tokens a ms.
    const both = { rpm: 6_000, tpm: 600_000 };
    const lease = leased(
      await store.lease(a, both, { shard: 1, want: { requests: 1, tokens: 4_900 }, waitedMs: 0 }),
    );
    expect(lease.shard).toBe(1);
    // The tokens need 1 s: the requests of that second come with them.
    expect(lease.tokens!.to - lease.tokens!.from).toBeCloseTo(1_000, 3);
    expect(lease.requests!.to - lease.requests!.from).toBeCloseTo(1_000, 3);
    expect(units(lease.requests!)).toBeCloseTo(49, 6);
    // Shard 0 of the same key, and shard 1 of another, are untouched.
    for (const [key, shard] of [
      [a, 0],
      [b, 1],
    ] as const) {
      const fresh = leased(
        await store.lease(key, both, { shard, want: { requests: 1, tokens: 0 }, waitedMs: 0 }),
      );
      expect(fresh.requests!.from).toBeCloseTo(now - 1 / 0.049, 3);
    }
  });

  it('tells a turned-away container how long the lessees had waited, on average', async () => {
    const now = 6_000_000;
    const store = make(() => now);
    const key = fresh('vendor:crowd');
    leased(await store.lease(key, limit, ask(10, 0, 8_000)));
    leased(await store.lease(key, limit, ask(15, 0, 0)));
    // A running average weighing the latest an eighth: 8,000, then 7,000.
    expect(await store.lease(key, limit, ask(1))).toMatchObject({ crowdMs: 7_000 });
  });

  it('holds leases to a limit learned for the key, as it holds takes', async () => {
    const now = 7_000_000;
    const store = make(() => now);
    const key = fresh('vendor:learned');
    await store.learn?.(key, { rpm: 60 }, { rpm: 600 });
    const span = leased(await store.lease(key, limit, ask(1))).requests!;
    expect(span.perMs).toBeCloseTo(0.00098, 9);
  });
});
