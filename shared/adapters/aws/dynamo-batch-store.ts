/**
 * The batch lane's state on the run store's table (see dynamo-run-store.ts):
 *
 * | entity          | pk                  | sk                          | attributes                                                     | access pattern                                             |
 * |-----------------|---------------------|-----------------------------|----------------------------------------------------------------|------------------------------------------------------------|
 * | call            | `BATCHRUN#<runId>`  | `CALL#<key>`                | state, backend, customId, request (JSON), batchId?, completion (JSON)?, ttl | GetItem (consistent); Query begins_with(sk, 'CALL#') + filter |
 * | waiting item    | `BATCHRUN#<runId>`  | `WAIT#<key>#<itemId>`       | body (the item's queue message), ttl                           | Query begins_with(sk, 'WAIT#<key>#') when the call closes  |
 * | run has waiters | `BATCHLANE`         | `WAITING#<runId>`           | mark (new with each recorded call), ttl                        | Query pk = BATCHLANE, begins_with(sk, 'WAITING#'); conditional Delete on mark |
 * | open batch      | `BATCHLANE`         | `OPEN#<runId>#<batchId>`    | runId, batchId, backend, submittedAt, ttl                      | Query pk = BATCHLANE, begins_with(sk, 'OPEN#')             |
 *
 * Every item expires after `ttlDays` (the vendors keep batch results about as long).
 * Orderings that keep wake-ups from being lost: a worker writes its wait, then the call, then
 * the run's mark (a new value each time), then reads the call; the poller clears a run's mark
 * only after submitting its waiting calls and only if the mark is still the one it read, and
 * writes a call's outcome before it reads who waits for it.
 */
import { randomUUID } from 'node:crypto';
import {
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  paginateQuery,
  type QueryCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  BATCH_CALL_PREFIX,
  BATCH_OPEN_PREFIX,
  BATCH_WAITING_PREFIX,
  batchWaitingSk,
  batchWaitSk,
  batchCallSk as callSk,
  BATCH_LANE_PK as LANE_PK,
  batchOpenSk as openSk,
  batchRunPk as runPk,
  batchWaitPrefix as waitPrefix,
} from '../../lib/layout/table.js';
import type { Completion } from '../../model/provider.js';
import type { BatchCallState, BatchStore, OpenBatch, WaitingCall } from '../../ports/ports.js';
import { isConditionalCheckFailed } from './dynamo-run-store.js';

export interface DynamoBatchStoreOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  /** Default 30. */
  ttlDays?: number;
  now?: () => number;
}

export class DynamoBatchStore implements BatchStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly ttlSeconds: number;
  private readonly now: () => number;

  constructor({ client, tableName, ttlDays = 30, now = Date.now }: DynamoBatchStoreOptions) {
    this.client = client;
    this.tableName = tableName;
    this.ttlSeconds = Math.round(ttlDays * 86_400);
    this.now = now;
  }

  private ttl(): number {
    return Math.floor(this.now() / 1000) + this.ttlSeconds;
  }

  async wait(runId: string, itemId: string, call: WaitingCall, body: string): Promise<BatchCallState> {
    await this.put({ pk: runPk(runId), sk: batchWaitSk(call.key, itemId), type: 'batch-wait', body });
    try {
      await this.put(
        {
          pk: runPk(runId),
          sk: callSk(call.key),
          type: 'batch-call',
          state: 'waiting',
          backend: call.backend,
          customId: call.customId,
          request: JSON.stringify(call.request),
        },
        'attribute_not_exists(pk)',
      );
      await this.put({
        pk: LANE_PK,
        sk: batchWaitingSk(runId),
        type: 'batch-waiting',
        runId,
        mark: randomUUID(),
      });
    } catch (error) {
      // Another item waits for the same call already: it is recorded (and its run marked).
      if (!isConditionalCheckFailed(error)) throw error;
    }
    const state = await this.callState(runId, call.key);
    if (!state)
      throw new Error(`batch lane: call ${call.key} of run ${runId} vanished after it was recorded`);
    return state;
  }

  async callState(runId: string, key: string): Promise<BatchCallState | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: runPk(runId), sk: callSk(key) },
        ConsistentRead: true,
      }),
    );
    return out.Item ? stateOf(out.Item) : undefined;
  }

  async runsWithWaitingCalls(): Promise<{ runId: string; mark: string }[]> {
    const marks = await this.query({ pk: LANE_PK, prefix: BATCH_WAITING_PREFIX });
    return marks.map((m) => ({ runId: String(m.runId), mark: String(m.mark) }));
  }

  async clearMark(runId: string, mark: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: LANE_PK, sk: batchWaitingSk(runId) },
          ConditionExpression: 'mark = :mark',
          ExpressionAttributeValues: { ':mark': mark },
        }),
      );
    } catch (error) {
      // Marked again by a call recorded meanwhile: the next pass submits it.
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }

  async waitingCalls(runId: string): Promise<WaitingCall[]> {
    const items = await this.query({
      pk: runPk(runId),
      prefix: BATCH_CALL_PREFIX,
      filter: { state: 'waiting' },
    });
    return items.map(callOf);
  }

  async addBatch(batch: OpenBatch, keys: readonly string[]): Promise<void> {
    // The batch first: a crash before every call is moved leaves calls `waiting`, asked again
    // in another batch (paid twice, lost never).
    await this.put({ pk: LANE_PK, sk: openSk(batch), type: 'batch-open', ...batch });
    for (const key of keys) {
      try {
        await this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: runPk(batch.runId), sk: callSk(key) },
            UpdateExpression: 'SET #state = :submitted, batchId = :batchId',
            ConditionExpression: '#state = :waiting',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: {
              ':submitted': 'submitted',
              ':waiting': 'waiting',
              ':batchId': batch.batchId,
            },
          }),
        );
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
    }
  }

  async openBatches(): Promise<OpenBatch[]> {
    const items = await this.query({ pk: LANE_PK, prefix: BATCH_OPEN_PREFIX });
    return items.map((i) => ({
      runId: String(i.runId),
      batchId: String(i.batchId),
      backend: String(i.backend),
      submittedAt: String(i.submittedAt),
    }));
  }

  async batchCalls(batch: OpenBatch): Promise<WaitingCall[]> {
    const items = await this.query({
      pk: runPk(batch.runId),
      prefix: BATCH_CALL_PREFIX,
      filter: { batchId: batch.batchId },
    });
    return items.map(callOf);
  }

  async closeBatch(batch: OpenBatch, outcomes: ReadonlyMap<string, Completion | 'sync'>): Promise<string[]> {
    for (const [key, outcome] of outcomes) {
      try {
        await this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: runPk(batch.runId), sk: callSk(key) },
            UpdateExpression:
              outcome === 'sync' ? 'SET #state = :state' : 'SET #state = :state, completion = :completion',
            // Only a recorded call: an update alone would create a call item with no request.
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues:
              outcome === 'sync'
                ? { ':state': 'sync' }
                : { ':state': 'answered', ':completion': JSON.stringify(outcome) },
          }),
        );
      } catch (error) {
        // A call never recorded (or expired): nobody waits for it, there is nothing to store.
        if (!isConditionalCheckFailed(error)) throw error;
      }
    }
    const bodies = new Set<string>();
    for (const key of outcomes.keys()) {
      const waits = await this.query({ pk: runPk(batch.runId), prefix: waitPrefix(key) });
      for (const wait of waits) bodies.add(String(wait.body));
      await this.delete(waits.map((w) => ({ pk: String(w.pk), sk: String(w.sk) })));
    }
    await this.delete([{ pk: LANE_PK, sk: openSk(batch) }]);
    return [...bodies];
  }

  private async put(item: Record<string, unknown>, condition?: string): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...item, ttl: this.ttl() },
        ...(condition ? { ConditionExpression: condition } : {}),
      }),
    );
  }

  private async query(q: {
    pk: string;
    prefix: string;
    filter?: Record<string, string>;
  }): Promise<Record<string, unknown>[]> {
    const filters = Object.entries(q.filter ?? {});
    const input: QueryCommandInput = {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: {
        ':pk': q.pk,
        ':prefix': q.prefix,
        ...Object.fromEntries(filters.map(([, value], i) => [`:f${i}`, value])),
      },
      ConsistentRead: true,
      ...(filters.length > 0
        ? {
            FilterExpression: filters.map((_, i) => `#f${i} = :f${i}`).join(' AND '),
            ExpressionAttributeNames: Object.fromEntries(filters.map(([name], i) => [`#f${i}`, name])),
          }
        : {}),
    };
    const items: Record<string, unknown>[] = [];
    for await (const page of paginateQuery({ client: this.client }, input)) items.push(...(page.Items ?? []));
    return items;
  }

  private async delete(keys: { pk: string; sk: string }[]): Promise<void> {
    for (let at = 0; at < keys.length; at += 25) {
      let pending = keys.slice(at, at + 25).map((Key) => ({ DeleteRequest: { Key } }));
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt >= 5) throw new Error(`batch lane: DynamoDB left ${pending.length} deletes unprocessed`);
        const out = await this.client.send(
          new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } }),
        );
        pending = (out.UnprocessedItems?.[this.tableName] ?? []) as typeof pending;
      }
    }
  }
}

function callOf(item: Record<string, unknown>): WaitingCall {
  return {
    key: String(item.sk).slice(BATCH_CALL_PREFIX.length),
    backend: String(item.backend),
    customId: String(item.customId),
    request: JSON.parse(String(item.request)),
  };
}

function stateOf(item: Record<string, unknown>): BatchCallState {
  switch (item.state) {
    case 'answered':
      return { state: 'answered', completion: JSON.parse(String(item.completion)) as Completion };
    case 'sync':
      return { state: 'sync' };
    case 'submitted':
      return { state: 'submitted', batchId: String(item.batchId) };
    default:
      return { state: 'waiting' };
  }
}
