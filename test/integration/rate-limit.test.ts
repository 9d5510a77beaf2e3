/**
 * The fleet's token bucket in DynamoDB (moto_server): two limiter instances with their own
 * clients, as two Lambda containers would be, share one bucket item. Racing each other they
 * never give out more than the bucket holds, and between them they give out all of it.
 */

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsClients, createDocumentClient } from '../../shared/adapters/aws/clients.js';
import { DynamoRateLimitStore } from '../../shared/adapters/aws/dynamo-rate-limit-store.js';
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
function twoWorkers(clock: () => number): [DynamoRateLimitStore, DynamoRateLimitStore] {
  return [
    new DynamoRateLimitStore({ client: clients.doc, tableName: res.table, now: clock }),
    new DynamoRateLimitStore({ client: createDocumentClient(second), tableName: res.table, now: clock }),
  ];
}

describe('DynamoRateLimitStore', { timeout: 120_000 }, () => {
  it('two workers sharing one bucket never exceed the budget of a window, and use all of it', async () => {
    let now = 1_000_000;
    const [a, b] = twoWorkers(() => now);
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
    const perStep: number[] = [];
    for (let step = 0; step < 5; step++) {
      const before = granted.a + granted.b;
      await Promise.all([drain(a, 'a'), drain(b, 'b')]);
      perStep.push(granted.a + granted.b - before);
      now += 10; // 1.96 more requests
    }
    // The burst of 4; then 1.96 (1 taken, 0.96 left); 2.92 (2 taken); 2.88 (2); 2.84 (2).
    expect(perStep).toEqual([4, 1, 2, 2, 2]);
    expect(granted.a + granted.b).toBe(11);
    expect(granted.a).toBeGreaterThan(0);
    expect(granted.b).toBeGreaterThan(0);
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
