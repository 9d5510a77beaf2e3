/**
 * The RateLimitStore contract: token buckets that give what they have and say how long to
 * wait otherwise, in memory (one process) and in DynamoDB (a fleet) alike. The clock is a
 * number the test moves; no test waits.
 */
import { describe, expect, it } from 'vitest';
import { DynamoRateLimitStore } from '../../../shared/adapters/aws/dynamo-rate-limit-store.js';
import { MemoryRateLimitStore } from '../../../shared/adapters/local/memory-rate-limit-store.js';
import type { RateLimitStore } from '../../../shared/ports/ports.js';
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
});
