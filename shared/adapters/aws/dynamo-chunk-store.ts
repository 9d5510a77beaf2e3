/**
 * The ingest of a large dataset in chunks, on the run table.
 *
 * | entity        | pk                    | sk                  | attributes                                   | access pattern |
 * |---------------|-----------------------|---------------------|----------------------------------------------|----------------|
 * | chunk         | `RUN#<runId>`         | `CHUNK#<chunk>`     | `leaseUntil`, `handed`, `done`, `claimed`, `ended`, `task` | an update conditional on the lease (the claim); progress and marks are updates; the chunks before one are read with a consistent query |
 * | duplicate     | `RUN#<runId>`         | `DUP#<chunk>#<row>` | `id`, `ttl`                                  | batch puts; a consistent query of a chunk's |
 * | item id claim | `IDS#<runId>#<shard>` | `<itemId>`          | `row`, `chunk`, `ttl`                        | a put conditional on the row (the lowest wins), one per id |
 *
 * Chunks claim their ids at the same time, in any order: each id's claim is a put that succeeds
 * when nobody holds the id or a higher row does (`attribute_not_exists(sk) OR #row > :row`),
 * with the old item returned either way (on success, the row it took the id from; on failure,
 * the row that holds it), so both sides learn the outcome in one write of one unit, with no
 * read. Claims spread over {@link ID_SHARDS} partition keys by the id's hash, so that chunks
 * read in parallel claim within every partition's limits. Claims and duplicates expire with the
 * run's cache entries (`ttl`).
 */
import { createHash } from 'node:crypto';
import { type DynamoDBDocumentClient, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  chunkDuplicatePrefix,
  chunkDuplicateSk,
  chunkSk,
  ID_SHARDS,
  idsPk,
  runPk,
} from '../../lib/layout/table.js';
import { mapLimit } from '../../lib/map-limit.js';
import type { ChunkClaim, ChunkStore, IdClaims } from '../../ports/ports.js';
import { batchGetAll, batchWriteAll } from './dynamo-batches.js';
import { isConditionalCheckFailed } from './dynamo-run-store.js';
import { type Backoff, globalSleep, Pace, retryThrottled } from './throttle.js';

export interface DynamoChunkStoreOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  /** How long id claims are kept, days. */
  ttlDays: number;
  /** Clock in epoch milliseconds (leases, the claims' pace). */
  now?: () => number;
  /** Throttled calls' retries; its `sleep` also waits out the claims' pace. */
  backoff?: Backoff;
  /**
   * The most item ids this store claims a second ({@link DynamoChunkStore.claimIds}), each claim
   * a write unit: ingest's share of the table beside the workers. Unset or 0: unpaced.
   */
  claimsPerSecond?: number;
}

/** The id's shard: its hash, so a chunk's ids spread evenly whatever they look like. */
const shardOf = (id: string) => createHash('sha256').update(id).digest().readUInt32BE(0) % ID_SHARDS;

export class DynamoChunkStore implements ChunkStore {
  private readonly now: () => number;
  /** The claims' pace, one unit a claim, across this store's calls (a process claiming chunk after chunk keeps it). */
  private readonly claims: Pace;

  constructor(private readonly options: DynamoChunkStoreOptions) {
    this.now = options.now ?? Date.now;
    this.claims = new Pace(options.claimsPerSecond ?? 0, this.now, options.backoff?.sleep ?? globalSleep);
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
    await this.update(
      runId,
      chunk,
      done ? 'SET #handed = :handed, #done = :yes' : 'SET #handed = :handed',
      { '#handed': 'handed', ...(done ? { '#done': 'done' } : {}) },
      { ':handed': handed, ...(done ? { ':yes': true } : {}) },
    );
  }

  async releaseChunk(runId: string, chunk: number): Promise<void> {
    await this.update(runId, chunk, 'REMOVE #lease', { '#lease': 'leaseUntil' });
  }

  private async update(
    runId: string,
    chunk: number,
    expression: string,
    names: Record<string, string>,
    values?: Record<string, unknown>,
  ): Promise<void> {
    const { client, tableName, backoff } = this.options;
    await retryThrottled(
      () =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { pk: runPk(runId), sk: chunkSk(chunk) },
            UpdateExpression: expression,
            ExpressionAttributeNames: names,
            ...(values ? { ExpressionAttributeValues: values } : {}),
          }),
        ),
      backoff,
    );
  }

  private readonly ttl = () => Math.floor(this.now() / 1000) + this.options.ttlDays * 86_400;

  async claimIds(
    runId: string,
    chunk: number,
    ids: readonly { id: string; row: number }[],
  ): Promise<IdClaims> {
    const { client, tableName, backoff } = this.options;
    const ttl = this.ttl();
    const out: IdClaims = { earlier: new Map(), displaced: [] };
    await mapLimit(ids, CLAIMS_IN_FLIGHT, async ({ id, row }) => {
      await this.claims.take(1);
      const key = { pk: idsPk(runId, shardOf(id)), sk: id };
      try {
        const put = await retryThrottled(
          () =>
            client.send(
              new PutCommand({
                TableName: tableName,
                Item: { ...key, type: 'idClaim', row, chunk, ttl },
                ConditionExpression: 'attribute_not_exists(sk) OR #row > :row',
                ExpressionAttributeNames: { '#row': 'row' },
                ExpressionAttributeValues: { ':row': row },
                ReturnValues: 'ALL_OLD',
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              }),
            ),
          backoff,
        );
        const old = put.Attributes;
        if (old) out.displaced.push({ id, row: Number(old.row), chunk: Number(old.chunk) });
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
        const holder = heldRow((error as { Item?: Record<string, unknown> }).Item);
        if (holder === undefined)
          throw new Error(`the claim of item id ${JSON.stringify(id)} failed without its holder`, {
            cause: error,
          });
        if (holder < row) out.earlier.set(id, holder);
      }
    });
    return out;
  }

  async noteDuplicates(
    runId: string,
    chunk: number,
    rows: readonly { id: string; row: number }[],
  ): Promise<void> {
    const { client, tableName, backoff } = this.options;
    const ttl = this.ttl();
    await batchWriteAll(
      client,
      tableName,
      rows.map(({ id, row }) => ({
        PutRequest: {
          Item: { pk: runPk(runId), sk: chunkDuplicateSk(chunk, row), type: 'chunkDuplicate', id, ttl },
        },
      })),
      backoff,
    );
  }

  async duplicatesIn(runId: string, chunk: number): Promise<{ id: string; row: number }[]> {
    const prefix = chunkDuplicatePrefix(chunk);
    const items = await this.query(runId, 'pk = :pk AND begins_with(sk, :prefix)', { ':prefix': prefix });
    return items.map((item) => ({ id: String(item.id), row: Number(String(item.sk).slice(prefix.length)) }));
  }

  private async query(runId: string, condition: string, values: Record<string, unknown>) {
    const { client, tableName, backoff } = this.options;
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await retryThrottled(
        () =>
          client.send(
            new QueryCommand({
              TableName: tableName,
              KeyConditionExpression: condition,
              ExpressionAttributeValues: { ':pk': runPk(runId), ...values },
              ConsistentRead: true,
              ...(start ? { ExclusiveStartKey: start } : {}),
            }),
          ),
        backoff,
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  }

  async holders(runId: string, ids: readonly string[]): Promise<Map<string, number>> {
    const { client, tableName, backoff } = this.options;
    const out = new Map<string, number>();
    for (const item of await batchGetAll(
      client,
      tableName,
      ids.map((id) => ({ pk: idsPk(runId, shardOf(id)), sk: id })),
      { backoff },
    ))
      out.set(String(item.sk), Number(item.row));
    return out;
  }

  async idsClaimed(runId: string, chunk: number, mark: { ended: boolean; task: string }): Promise<void> {
    await this.update(
      runId,
      chunk,
      'SET #claimed = :yes, #ended = :ended, #task = :task',
      { '#claimed': 'claimed', '#ended': 'ended', '#task': 'task' },
      { ':yes': true, ':ended': mark.ended, ':task': mark.task },
    );
  }

  async claimedBefore(runId: string, chunk: number): Promise<{ claimed: boolean; ended: boolean }> {
    if (chunk === 0) return { claimed: true, ended: false };
    const items = await this.query(runId, 'pk = :pk AND sk BETWEEN :first AND :last', {
      ':first': chunkSk(0),
      ':last': chunkSk(chunk - 1),
    });
    const marked = items.filter((item) => item.claimed === true);
    return { claimed: marked.length === chunk, ended: marked.some((item) => item.ended === true) };
  }

  async waitingTask(runId: string, chunk: number): Promise<string | undefined> {
    const { client, tableName, backoff } = this.options;
    const [item] = await batchGetAll(client, tableName, [{ pk: runPk(runId), sk: chunkSk(chunk) }], {
      backoff,
    });
    return item?.claimed === true && item.done !== true ? String(item.task) : undefined;
  }
}

/** Claims a chunk's invocation has in flight: a chunk of fifty thousand ids claims in seconds. */
const CLAIMS_IN_FLIGHT = 32;

/** The row of a claim's item returned with a failed condition (plain, or as DynamoDB wrote it). */
function heldRow(item: Record<string, unknown> | undefined): number | undefined {
  const row = item?.row as { N?: string } | number | undefined;
  if (row === undefined) return undefined;
  return typeof row === 'object' ? Number(row.N) : Number(row);
}
