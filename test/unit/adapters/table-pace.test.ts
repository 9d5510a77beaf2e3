import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DynamoChunkStore } from '../../../shared/adapters/aws/dynamo-chunk-store.js';
import { DynamoRunStore } from '../../../shared/adapters/aws/dynamo-run-store.js';
import { RESULT_SLOTS, resultSk } from '../../../shared/lib/layout/table.js';

/**
 * A chunk store over a client that accepts every claim, on vitest's fake clock (its waits are
 * the global setTimeout's): when each claim was sent.
 */
function pacedStore(claimsPerSecond?: number) {
  const t0 = Date.now();
  const sentAt: number[] = [];
  const client = {
    send: async () => {
      sentAt.push(Date.now());
      return {};
    },
  } as unknown as DynamoDBDocumentClient;
  const store = new DynamoChunkStore({
    client,
    tableName: 't',
    ttlDays: 1,
    ...(claimsPerSecond === undefined ? {} : { claimsPerSecond }),
  });
  return { store, sentAt, elapsed: () => Date.now() - t0 };
}

/** Runs `work` to its end on the fake clock. */
async function settled<T>(work: Promise<T>): Promise<T> {
  let done = false;
  const out = work.finally(() => {
    done = true;
  });
  while (!done) await vi.advanceTimersToNextTimerAsync();
  return out;
}

const ids = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ id: `id${from + i}`, row: from + i }));

/** The most claims sent in any window of `ms` that starts at a send. */
const mostWithin = (sentAt: number[], ms: number) =>
  Math.max(...sentAt.map((t) => sentAt.filter((u) => u >= t && u < t + ms).length));

beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse('2030-01-01T00:00:00Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("ingest's id claims, paced", () => {
  it('sends at most claimsPerSecond claims in any second, across calls, and takes the time that needs', async () => {
    const { store, sentAt, elapsed } = pacedStore(100);
    await settled(store.claimIds('run', 0, ids(250)));
    await settled(store.claimIds('run', 1, ids(150, 250)));
    expect(sentAt).toHaveLength(400);
    expect(mostWithin(sentAt, 1000)).toBe(100);
    // The 400th claim is due 3.99 s after the first: the second call went on where the first left off.
    expect(elapsed()).toBe(3_990);
  });

  it('waits for nothing when unpaced', async () => {
    const { store, sentAt, elapsed } = pacedStore();
    await settled(store.claimIds('run', 0, ids(250)));
    expect(sentAt).toHaveLength(250);
    expect(elapsed()).toBe(0);
  });
});

/**
 * A run store over a client whose run record is of the current layout and whose every result
 * slot holds `perSlot` results, each costing `unitsPerItem` read units: when each
 * Query was sent, and the units each took.
 */
function resultStore(resultReadUnitsPerSecond: number, perSlot: number, unitsPerItem: number) {
  const t0 = Date.now();
  const queries: { at: number; units: number }[] = [];
  // A real document client (the paginator insists), whose sends are answered here.
  const client = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
  Object.assign(client, {
    send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      if (command.constructor.name === 'GetCommand') return { Item: { pk: 'RUN#r', sk: 'META' } };
      const start = Number((command.input.ExclusiveStartKey as { at?: number } | undefined)?.at ?? 0);
      const limit = Number(command.input.Limit);
      const items = Array.from({ length: Math.min(limit, perSlot - start) }, (_, i) => ({
        sk: resultSk(
          start + i,
          `${String((command.input.ExpressionAttributeValues as { ':pk': string })[':pk'])}-${start + i}`,
        ),
      }));
      const more = start + items.length < perSlot;
      const taken = unitsPerItem * items.length;
      queries.push({ at: Date.now() - t0, units: taken });
      const units = command.input.ReturnConsumedCapacity === 'TOTAL' ? taken : undefined;
      return {
        Items: items,
        ...(more ? { LastEvaluatedKey: { at: start + items.length } } : {}),
        ...(units === undefined ? {} : { ConsumedCapacity: { CapacityUnits: units } }),
      };
    },
  });
  const store = new DynamoRunStore({ client, tableName: 't', pageSize: 10, resultReadUnitsPerSecond });
  return { store, queries, elapsed: () => Date.now() - t0 };
}

describe("the aggregation's reads of results, paced", () => {
  it('take at most resultReadUnitsPerSecond units in any second, by what each page consumed', async () => {
    // 64 slots × 25 results (pages of 10, 10 and 5), 4 units each: 6,400 units at 1,000 a second.
    const { store, queries, elapsed } = resultStore(1_000, 25, 4);
    const ids = await settled(store.resultIds('r', 0));

    expect(ids.size).toBe(RESULT_SLOTS * 25);
    expect(queries).toHaveLength(RESULT_SLOTS * 3);
    const total = queries.reduce((n, q) => n + q.units, 0);
    const within = (from: number) =>
      Math.max(
        ...queries
          .filter((q) => q.at >= from)
          .map((q) =>
            queries.filter((r) => r.at >= q.at && r.at < q.at + 1000).reduce((n, r) => n + r.units, 0),
          ),
      );
    // The first pages are booked as 1 KB results (a unit each 4) before any is known; once one
    // is, each is booked as the last one read took, and settled when read: a second may take a
    // little more than the pace (pages of 10 and of 5 results in flight at once), never a burst.
    expect(within(1_000)).toBeLessThanOrEqual(1.25 * 1_000);
    // In all, about the pace: the reads end no sooner than their units allow, and not much later
    // (a page booked at more than it took gives back only time not yet passed).
    expect(elapsed()).toBeGreaterThanOrEqual(total - 1_000);
    expect(elapsed()).toBeLessThanOrEqual(1.25 * total);
  });

  it('wait for nothing when unpaced', async () => {
    const { store, queries, elapsed } = resultStore(0, 25, 4);
    await settled(store.resultIds('r', 0));
    expect(queries).toHaveLength(RESULT_SLOTS * 3);
    expect(elapsed()).toBe(0);
  });
});
