import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DynamoChunkStore } from '../../../shared/adapters/aws/dynamo-chunk-store.js';

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

describe("ingest's id claims, paced", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.parse('2030-01-01T00:00:00Z') });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

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
