import { BatchGetCommand, BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableKey } from '../../lib/layout/table.js';
import { type Backoff, pauseBeforeRetry, retryThrottled } from './throttle.js';

/** BatchGetItem's and BatchWriteItem's limits. */
const GET_BATCH = 100;
const WRITE_BATCH = 25;

/** Asks again for what a batch left unprocessed at most this many times (DynamoDB's advice: back off). */
const UNPROCESSED_ATTEMPTS = 12;

type WriteRequest = { PutRequest: { Item: Record<string, unknown> } } | { DeleteRequest: { Key: TableKey } };

/**
 * Many items by key, a hundred a call; keys a call leaves unprocessed (a throttled partition)
 * are asked again after a jittered wait. The items come in no particular order.
 */
export async function batchGetAll(
  client: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly TableKey[],
  { consistent = true, backoff = {} }: { consistent?: boolean; backoff?: Backoff } = {},
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for (let start = 0; start < keys.length; start += GET_BATCH) {
    let pending: TableKey[] = keys.slice(start, start + GET_BATCH);
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      if (attempt > UNPROCESSED_ATTEMPTS)
        throw new Error(`DynamoDB left ${pending.length} reads unprocessed ${UNPROCESSED_ATTEMPTS} times`);
      const asked = pending;
      const out = await retryThrottled(
        () =>
          client.send(
            new BatchGetCommand({
              RequestItems: { [tableName]: { Keys: asked, ConsistentRead: consistent } },
            }),
          ),
        backoff,
      );
      items.push(...(out.Responses?.[tableName] ?? []));
      pending = (out.UnprocessedKeys?.[tableName]?.Keys ?? []) as TableKey[];
      if (pending.length > 0) await pauseBeforeRetry(attempt, backoff);
    }
  }
  return items;
}

/** Puts and deletes, twenty-five a call; what a call leaves unprocessed is sent again after a jittered wait. */
export async function batchWriteAll(
  client: DynamoDBDocumentClient,
  tableName: string,
  requests: readonly WriteRequest[],
  backoff: Backoff = {},
): Promise<void> {
  for (let start = 0; start < requests.length; start += WRITE_BATCH) {
    let pending: WriteRequest[] = requests.slice(start, start + WRITE_BATCH);
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
  }
}
