/**
 * The fleet's token buckets in DynamoDB (moto_server): store instances with their own clients,
 * as Lambda containers would be, share one bucket item (a take per call) or one shard (leases).
 * Racing each other they never give out more than the bucket holds, and between them they give
 * out all of it.
 */

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsClients, createDocumentClient } from '../../shared/adapters/aws/clients.js';
import { DynamoRateLimitStore } from '../../shared/adapters/aws/dynamo-rate-limit-store.js';
import type { LeaseSpan } from '../../shared/ports/ports.js';
import {
  createTestResources,
  type Moto,
  motoClients,
  startMoto,
  TEST_CREDENTIALS,
  TEST_REGION,
  type TestResources,
  uniqueNames,
} from './moto.js';

let moto: Moto;
let clients: AwsClients;
let res: TestResources;
let second: DynamoDBClient;

beforeAll(async () => {
  moto = await startMoto();
  clients = motoClients(moto.endpoint);
  res = await createTestResources(clients, uniqueNames('limits'));
  second = new DynamoDBClient({
    endpoint: moto.endpoint,
    region: TEST_REGION,
    credentials: TEST_CREDENTIALS,
  });
}, 120_000);

afterAll(async () => {
  for (const client of Object.values(clients ?? {})) client.destroy();
  second?.destroy();
  await moto?.stop();
});

/** Two workers' stores (each with its own DynamoDB client) on one table and one clock. */
function twoWorkers(
  clock: () => number,
  options: { maxConflicts?: number } = {},
): [DynamoRateLimitStore, DynamoRateLimitStore] {
  return [
    new DynamoRateLimitStore({ client: clients.doc, tableName: res.table, now: clock, ...options }),
    new DynamoRateLimitStore({
      client: createDocumentClient(second),
      tableName: res.table,
      now: clock,
      ...options,
    }),
  ];
}

describe('DynamoRateLimitStore', { timeout: 120_000 }, () => {
  it('two workers sharing one bucket never exceed the budget of a window, and use all of it', async () => {
    // The clock is the test's: it stands still while the workers race, and moves 10 ms between
    // steps, so what the bucket holds at each step is known whatever the machine's load.
    let now = 1_000_000;
    // A lost race is tried again until the bucket answers (a take given, or the bucket short):
    // the crowd's step-back, a wait that says nothing of the bucket, has a test of its own below.
    const [a, b] = twoWorkers(() => now, { maxConflicts: 1_000 });
    // 200 a second: a burst of 4 (2% of a second's worth), refilled at 196 a second.
    const limit = { rpm: 12_000 };
    const one = { requests: 1, tokens: 0 };
    const granted = { a: 0, b: 0 };

    // Each step: both workers take as fast as they can, concurrently, until the bucket says wait.
    const drain = async (store: DynamoRateLimitStore, name: 'a' | 'b') => {
      for (;;) {
        const burst = await Promise.all([
          store.take('openai:m', limit, one),
          store.take('openai:m', limit, one),
        ]);
        for (const wait of burst) if (wait === 0) granted[name] += 1;
        if (burst.some((wait) => wait > 0)) return;
      }
    };
    for (let step = 0; step < 5; step++) {
      if (step > 0) now += 10; // 1.96 more requests
      await Promise.all([drain(a, 'a'), drain(b, 'b')]);
      // What the bucket has held so far: the burst of 4 and 1.96 a step; both workers stopped
      // only when it was short of a whole request. How the racing workers split it is up to the
      // scheduler; between them they took every whole request it held, and not one more (two
      // buckets, or a take that overwrote another's, would give out more).
      const capacity = Math.floor(4 + 1.96 * step);
      expect({ step, total: granted.a + granted.b }).toEqual({ step, total: capacity });
      expect(granted.a).toBeLessThanOrEqual(capacity);
      expect(granted.b).toBeLessThanOrEqual(capacity);
    }
    // 4, then 1.96 (1 taken, 0.96 left), 2.92 (2), 2.88 (2), 2.84 (2): 11 in all.
    expect(granted.a + granted.b).toBe(11);
    // A bucket the other emptied is empty for each of them at the same moment, and 10 ms later
    // either one alone finds what both left (0.84) and the refill (1.96): it takes 2.
    for (const store of [a, b]) expect(await store.take('openai:m', limit, one)).toBeGreaterThan(0);
    now += 10;
    const before = granted.b;
    await drain(b, 'b');
    expect(granted.b - before).toBe(2);
    expect(await a.take('openai:m', limit, one)).toBeGreaterThan(0);
  });

  it('workers racing for leases on one shard get stretches back to back, never overlapping', async () => {
    const now = 11_000_000;
    const [a, b] = twoWorkers(() => now);
    const limit = { rpm: 6_000 }; // two shards of 3,000 RPM: 0.049 requests a ms each
    const ask = { shard: 1, want: { requests: 5, tokens: 0 }, waitedMs: 0 };
    const spans: LeaseSpan[] = [];
    // Until the shard is handed out 2 s ahead: a refusal that says so ends a worker; a lost race
    // (a wait of 1 to 20 ms) does not.
    const handedOutAhead = (waitMs: number) =>
      spans.length > 0 && Math.abs(waitMs - (Math.max(...spans.map((span) => span.to)) - now - 2_000)) < 1.5;
    await Promise.all(
      [a, b, a, b].map(async (store) => {
        for (let tries = 0; tries < 100; tries++) {
          const answer = await store.lease('openai:leased', limit, ask);
          if ('lease' in answer) spans.push(answer.lease.requests!);
          else if (handedOutAhead(answer.waitMs)) return;
        }
      }),
    );
    spans.sort((x, y) => x.from - y.from);
    // From the burst (1 request, 20.4 ms) to just past 2 s ahead: back to back.
    expect(spans[0]!.from).toBeCloseTo(now - 1 / 0.049, 3);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.from).toBeCloseTo(spans[i - 1]!.to, 3);
    expect(spans.at(-1)!.to - now).toBeGreaterThan(2_000);
    expect(spans.length).toBe(Math.ceil((2_000 + 1 / 0.049) / (5 / 0.049)));
    // Each shard is its own item: shard 0 is still full.
    const other = await a.lease('openai:leased', limit, { ...ask, shard: 0 });
    expect('lease' in other && other.lease.requests!.from).toBeCloseTo(now - 1 / 0.049, 3);
  });

  it('under a crowd of takers, a lost race is a short wait, never an error, and the budget holds', async () => {
    const now = 9_000_000;
    const crowd = Array.from(
      { length: 8 },
      (_, i) =>
        new DynamoRateLimitStore({
          client: i % 2 ? clients.doc : createDocumentClient(second),
          tableName: res.table,
          now: () => now,
          maxConflicts: 1,
        }),
    );
    const limit = { rpm: 12_000 }; // a burst of 4
    const waits: number[] = [];
    let granted = 0;
    await Promise.all(
      crowd.map(async (store) => {
        for (;;) {
          const wait = await store.take('openai:crowd', limit, { requests: 1, tokens: 0 });
          if (wait === 0) granted += 1;
          else waits.push(wait);
          if (wait > 0 && granted >= 4) return;
        }
      }),
    );
    expect(granted).toBe(4);
    // Somebody lost a race along the way and was told to wait 1-20 ms.
    expect(waits.some((wait) => wait >= 1 && wait <= 20)).toBe(true);
  });

  it('says how long until a token arrives, without taking anything', async () => {
    let now = 5_000_000;
    const store = new DynamoRateLimitStore({ client: clients.doc, tableName: res.table, now: () => now });
    // 1 request a second (burst 1, refilled at 0.98 a second) and 2,000 tokens a second (burst 40).
    const limit = { rpm: 60, tpm: 120_000 };
    expect(await store.take('anthropic:x', limit, { requests: 1, tokens: 40 })).toBe(0);
    // A request is 1 / 0.98 s away (1,020.4 ms); 20 tokens only 10.2 ms.
    expect(await store.take('anthropic:x', limit, { requests: 1, tokens: 20 })).toBe(1_021);
    now += 600;
    // 0.588 of a request, a full 40 tokens: the request is the shortfall (0.412 / 0.98 s).
    expect(await store.take('anthropic:x', limit, { requests: 1, tokens: 20 })).toBe(421);
    now += 421;
    expect(await store.take('anthropic:x', limit, { requests: 1, tokens: 20 })).toBe(0);
  });

  it('a limit one worker learned holds every worker, and its first report starts the bucket in debt', async () => {
    let now = 7_000_000;
    const [a, b] = twoWorkers(() => now);
    const one = { requests: 1, tokens: 0 };
    // Nothing learned yet: a worker with no limit of its own finds none.
    expect(await b.learned('openai:learned')).toBeUndefined();
    // Worker a heard 600 RPM (burst 1) with 3 calls still counted: 1 − 3 = −2.
    await a.learn('openai:learned', { rpm: 600 }, { rpm: 600 }, { requests: 3, tokens: 0 });
    expect(await b.learned('openai:learned')).toEqual({ rpm: 600 });
    // Worker b declared a looser 6,000 RPM: the learned 600 holds it. 3 requests to refill at
    // 9.8 a second: 306.2 ms.
    expect(await b.take('openai:learned', { rpm: 6_000 }, one)).toBe(307);
    now += 307;
    expect(await b.take('openai:learned', { rpm: 6_000 }, one)).toBe(0);
    // The take kept the learned limit on the item.
    expect(await a.learned('openai:learned')).toEqual({ rpm: 600 });
    // A stricter declared limit still wins over the learned one: 60 RPM refills 0.98 a second
    // (a full bucket after 1.1 s is its burst plus a millisecond's refill: 1.00098).
    now += 1_100;
    expect(await b.take('openai:learned', { rpm: 60 }, one)).toBe(0);
    expect(await b.take('openai:learned', { rpm: 60 }, one)).toBe(1_020);
  });
});
