/**
 * Sweeps and the leaderboard on the run store's table (see dynamo-run-store.ts):
 *
 * | entity            | pk                 | sk                        | attributes                                      | access pattern                                    |
 * |-------------------|--------------------|---------------------------|-------------------------------------------------|---------------------------------------------------|
 * | sweep             | `SWEEP#<sweepId>`  | `META`                    | type, status, record (the SweepRecord as JSON)  | GetItem (consistent); conditional UpdateItem claim |
 * | sweep membership  | `RUN#<runId>`      | `SWEEP#<sweepId>`         | type, sweepId                                   | Query pk = RUN#id AND begins_with(sk, 'SWEEP#')   |
 * | leaderboard entry | `LEADERBOARD`      | `<dataset>#<runId>`       | type, entry (the LeaderboardEntry as JSON)      | Query pk = LEADERBOARD (the whole board)          |
 *
 * A sweep and its memberships are written in one transaction, conditional on the sweep not
 * existing, so a redelivered upload neither duplicates nor half-writes it.
 */
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  paginateQuery,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  LEADERBOARD_PK,
  leaderboardSk,
  META_SK as META,
  runPk,
  SWEEP_PREFIX,
  sweepMemberSk,
  sweepPk,
} from '../../lib/layout/table.js';
import { SweepExistsError, SweepNotFoundError } from '../../model/errors.js';
import type { LeaderboardEntry } from '../../model/report.js';
import { decodeSweep, type SweepRecord, type SweepStatus } from '../../model/sweep-record.js';
import type { Leaderboard, SweepStore } from '../../ports/ports.js';
import { cancelledByCondition, isConditionalCheckFailed } from './dynamo-run-store.js';

interface TableOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
}

export class DynamoSweepStore implements SweepStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor({ client, tableName }: TableOptions) {
    this.client = client;
    this.tableName = tableName;
  }

  async createSweep(sweep: SweepRecord): Promise<void> {
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.tableName,
                Item: {
                  pk: sweepPk(sweep.sweepId),
                  sk: META,
                  type: 'sweep',
                  status: sweep.status,
                  record: JSON.stringify(sweep),
                },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            ...sweep.variants.map(({ runId }) => ({
              Put: {
                TableName: this.tableName,
                Item: {
                  pk: runPk(runId),
                  sk: sweepMemberSk(sweep.sweepId),
                  type: 'sweep-member',
                  sweepId: sweep.sweepId,
                },
              },
            })),
          ],
        }),
      );
    } catch (err) {
      if (cancelledByCondition(err, 0)) throw new SweepExistsError(sweep.sweepId);
      throw err;
    }
  }

  async getSweep(sweepId: string): Promise<SweepRecord | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: sweepPk(sweepId), sk: META },
        ConsistentRead: true,
      }),
    );
    if (!out.Item) return undefined;
    const where = `DynamoDB ${sweepPk(sweepId)}`;
    const record = decodeSweep(JSON.parse(String(out.Item.record)), where);
    return {
      ...record,
      status: out.Item.status as SweepStatus,
      ...(out.Item.finishedAt ? { finishedAt: String(out.Item.finishedAt) } : {}),
    };
  }

  async sweepsOf(runId: string): Promise<string[]> {
    const ids: string[] = [];
    const pages = paginateQuery(
      { client: this.client },
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sweep)',
        ExpressionAttributeValues: { ':pk': runPk(runId), ':sweep': SWEEP_PREFIX },
        ConsistentRead: true,
      },
    );
    for await (const page of pages) for (const item of page.Items ?? []) ids.push(String(item.sweepId));
    return ids;
  }

  async claimSweep(sweepId: string): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: sweepPk(sweepId), sk: META },
          UpdateExpression: 'SET #s = :aggregating',
          ConditionExpression: '#s = :running',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':aggregating': 'aggregating', ':running': 'running' },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionalCheckFailed(err)) return false;
      throw err;
    }
  }

  async setSweepStatus(sweepId: string, status: SweepStatus, finishedAt?: string): Promise<void> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: sweepPk(sweepId), sk: META },
          UpdateExpression: finishedAt ? 'SET #s = :s, finishedAt = :f' : 'SET #s = :s',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':s': status, ...(finishedAt ? { ':f': finishedAt } : {}) },
        }),
      );
    } catch (err) {
      if (isConditionalCheckFailed(err)) throw new SweepNotFoundError(sweepId);
      throw err;
    }
  }
}

/** The run index the leaderboard reads: one item per finished run in the `LEADERBOARD` partition. */
export class DynamoLeaderboard implements Leaderboard {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor({ client, tableName }: TableOptions) {
    this.client = client;
    this.tableName = tableName;
  }

  async record(entry: LeaderboardEntry): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          pk: LEADERBOARD_PK,
          sk: leaderboardSk(entry.dataset, entry.runId),
          type: 'leaderboard',
          entry: JSON.stringify(entry),
        },
      }),
    );
  }

  async entries(): Promise<LeaderboardEntry[]> {
    const entries: LeaderboardEntry[] = [];
    const pages = paginateQuery(
      { client: this.client },
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': LEADERBOARD_PK },
      },
    );
    for await (const page of pages) {
      for (const item of page.Items ?? []) entries.push(JSON.parse(String(item.entry)) as LeaderboardEntry);
    }
    return entries;
  }
}
