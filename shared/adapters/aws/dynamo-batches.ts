import { BatchGetCommand, BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableKey } from '../../lib/layout/table.js';
import { mapLimit } from '../../lib/map-limit.js';
import { type Backoff, pauseBeforeRetry, retryThrottled } from './throttle.js';

/** BatchGetItem's and BatchWriteItem's limits. */
const GET_BATCH = 100;
const WRITE_BATCH = 25;

/** Asks again for what a batch left unprocessed at most this many times (DynamoDB's advice: back off). */
const UNPROCESSED_ATTEMPTS = 12;

/**
 * Calls in flight at once by default: keys spread over many partitions (the callers hash them
 * over shards) take eight batches at once well within each partition's limits.
 */
const CONCURRENCY = 8;

type WriteRequest = { PutRequest: { Item: Record<string, unknown> } } | { DeleteRequest: { Key: TableKey } };

/**
 * Many items by key, a hundred a call, `concurrency` calls at once; keys a call leaves
 * unprocessed (a throttled partition) are asked again after a jittered wait. The items come in
 * no particular order.
 */
export async function batchGetAll(
  client: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly TableKey[],
  {
    consistent = true,
    backoff = {},
    concurrency = CONCURRENCY,
    attributes,
  }: {
    consistent?: boolean;
    backoff?: Backoff;
    concurrency?: number;
    /** Only these attributes of each item (default all). */
    attributes?: readonly string[];
  } = {},
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  const projection = attributes && {
    ProjectionExpression: attributes.map((_, i) => `#a${i}`).join(', '),
    ExpressionAttributeNames: Object.fromEntries(attributes.map((name, i) => [`#a${i}`, name])),
  };
  await mapLimit(batchesOf(keys, GET_BATCH), concurrency, async (batch) => {
    let pending: TableKey[] = batch;
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      if (attempt > UNPROCESSED_ATTEMPTS)
        throw new Error(`DynamoDB left ${pending.length} reads unprocessed ${UNPROCESSED_ATTEMPTS} times`);
      const asked = pending;
      const out = await retryThrottled(
        () =>
          client.send(
            new BatchGetCommand({
              RequestItems: { [tableName]: { Keys: asked, ConsistentRead: consistent, ...projection } },
            }),
          ),
        backoff,
      );
      items.push(...(out.Responses?.[tableName] ?? []));
      pending = (out.UnprocessedKeys?.[tableName]?.Keys ?? []) as TableKey[];
      if (pending.length > 0) await pauseBeforeRetry(attempt, backoff);
    }
  });
  return items;
}

/**
 * Puts and deletes, twenty-five a call, `concurrency` calls at once; what a call leaves
 * unprocessed is sent again after a jittered wait.
 */
export async function batchWriteAll(
  client: DynamoDBDocumentClient,
  tableName: string,
  requests: readonly WriteRequest[],
  backoff: Backoff = {},
  concurrency = CONCURRENCY,
): Promise<void> {
  await mapLimit(batchesOf(requests, WRITE_BATCH), concurrency, async (batch) => {
    let pending: WriteRequest[] = batch;
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      if (attempt > UNPROCESSED_ATTEMPTS)
        throw new Error(`DynamoDB left ${pending.length} writes unprocessed ${UNPROCESSED_ATTEMPTS} times`);
      const sent = pending;
      const out = await retryThrottled(
        () => client.send(new BatchWriteCommand({ RequestItems: { [tableName]: sent } })),
        backoff,
      );
      pending = (out.UnprocessedItems?.[tableName] ?? []) as WriteRequest[];
      if (pending.length > 0) await pauseBeforeRetry(attempt, backoff);
    }
  });
}

function batchesOf<T>(all: readonly T[], size: number): T[][] {
  const batches: T[][] = [];
  for (let start = 0; start < all.length; start += size) batches.push(all.slice(start, start + size));
  return batches;
}
