/**
 * The ingest of a large dataset a chunk at a time, on the run table.
 *
 * | entity        | pk                    | sk              | attributes                       | access pattern                                                 |
 * |---------------|-----------------------|-----------------|----------------------------------|----------------------------------------------------------------|
 * | chunk         | `RUN#<runId>`         | `CHUNK#<chunk>` | `leaseUntil`, `handed`, `done`   | an update conditional on the lease (the claim); progress puts  |
 * | item id claim | `IDS#<runId>#<shard>` | `<itemId>`      | `row`, `ttl`                     | BatchGetItem (consistent) of a chunk's ids, then BatchWriteItem of the new ones |
 *
 * Ids are claimed a chunk at a time and in the dataset's order (a chunk claims its ids before it
 * starts the next), so reading which ids are held and then writing the others needs no
 * condition: nobody else writes an id of this run meanwhile. A hundred ids a read and
 * twenty-five a write, spread over {@link ID_SHARDS} partition keys by the id's hash, so that a
 * chunk of fifty thousand rows claims in a few thousand calls within every partition's limits.
 * Claims expire with the run's cache entries (`ttl`).
 */
import { createHash } from 'node:crypto';
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { chunkSk, ID_SHARDS, idsPk, runPk } from '../../lib/layout/table.js';
import type { ChunkClaim, ChunkStore } from '../../ports/ports.js';
import { batchGetAll, batchWriteAll } from './dynamo-batches.js';
import { isConditionalCheckFailed } from './dynamo-run-store.js';
import { type Backoff, retryThrottled } from './throttle.js';

export interface DynamoChunkStoreOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  /** How long id claims are kept, days. */
  ttlDays: number;
  /** Clock in epoch milliseconds (leases). */
  now?: () => number;
  backoff?: Backoff;
}

/** The id's shard: its hash, so a chunk's ids spread evenly whatever they look like. */
const shardOf = (id: string) => createHash('sha256').update(id).digest().readUInt32BE(0) % ID_SHARDS;

export class DynamoChunkStore implements ChunkStore {
  private readonly now: () => number;

  constructor(private readonly options: DynamoChunkStoreOptions) {
    this.now = options.now ?? Date.now;
  }

  async claimChunk(runId: string, chunk: number, leaseMs: number): Promise<ChunkClaim> {
    const { client, tableName, backoff } = this.options;
    const now = this.now();
    try {
      const out = await retryThrottled(
        () =>
          client.send(
            new UpdateCommand({
              TableName: tableName,
              Key: { pk: runPk(runId), sk: chunkSk(chunk) },
              UpdateExpression: 'SET #lease = :until',
              ConditionExpression:
                'attribute_not_exists(#done) AND (attribute_not_exists(#lease) OR #lease <= :now)',
              ExpressionAttributeNames: { '#lease': 'leaseUntil', '#done': 'done' },
              ExpressionAttributeValues: { ':until': now + leaseMs, ':now': now },
              ReturnValues: 'ALL_NEW',
            }),
          ),
        backoff,
      );
      return { claimed: true, handed: Number(out.Attributes?.handed ?? 0) };
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      return { claimed: false, why: (await this.isDone(runId, chunk)) ? 'done' : 'held' };
    }
  }

  private async isDone(runId: string, chunk: number): Promise<boolean> {
    const { client, tableName, backoff } = this.options;
    const [item] = await batchGetAll(client, tableName, [{ pk: runPk(runId), sk: chunkSk(chunk) }], {
      backoff,
    });
    return item?.done === true;
  }

  async chunkProgress(runId: string, chunk: number, handed: number, done = false): Promise<void> {
    const { client, tableName, backoff } = this.options;
    await retryThrottled(
      () =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { pk: runPk(runId), sk: chunkSk(chunk) },
            UpdateExpression: done ? 'SET #handed = :handed, #done = :yes' : 'SET #handed = :handed',
            ExpressionAttributeNames: { '#handed': 'handed', ...(done ? { '#done': 'done' } : {}) },
            ExpressionAttributeValues: { ':handed': handed, ...(done ? { ':yes': true } : {}) },
          }),
        ),
      backoff,
    );
  }

  async claimIds(runId: string, ids: readonly { id: string; row: number }[]): Promise<Map<string, number>> {
    const { client, tableName, backoff, ttlDays } = this.options;
    const key = (id: string) => ({ pk: idsPk(runId, shardOf(id)), sk: id });
    const held = new Map<string, number>();
    for (const item of await batchGetAll(
      client,
      tableName,
      ids.map(({ id }) => key(id)),
      { backoff },
    ))
      held.set(String(item.sk), Number(item.row));
    const earlier = new Map<string, number>();
    const ttl = Math.floor(this.now() / 1000) + ttlDays * 86_400;
    const fresh = [];
    for (const { id, row } of ids) {
      const first = held.get(id);
      if (first === undefined)
        fresh.push({ PutRequest: { Item: { ...key(id), type: 'idClaim', row, ttl } } });
      else if (first !== row) earlier.set(id, first);
    }
    await batchWriteAll(client, tableName, fresh, backoff);
    return earlier;
  }
}
