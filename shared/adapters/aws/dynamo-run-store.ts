/**
 * The run store on ONE DynamoDB table (`pk` S, `sk` S, TTL attribute `ttl`; the LLM cache
 * shares it, see dynamo-llm-cache.ts).
 *
 * | entity      | pk                 | sk                            | attributes                                                                                                                          | access pattern                                                              |
 * |-------------|--------------------|-------------------------------|-------------------------------------------------------------------------------------------------------------------------------------|-----------------------------------------------------------------------------|
 * | run         | `RUN#<runId>`      | `META`                        | type, schemaVersion, runId, suiteName, suite (JSON), prompts (JSON), status, total?, invalidRows, startedAt, finishedAt?, reportPrefix, datasetKey, simulated, done, failed, spentUsd | GetItem (consistent) for getRun/counters; UpdateItem for counters, total, status, claim |
 * | result      | `RUN#<runId>`      | `RESULT#<itemId>`             | type, runId, itemId, status, failureKind?, costUsd, finishedAt, result (the ItemResult as JSON)                                     | Query pk = RUN#id AND begins_with(sk, 'RESULT#') for results / resultIds   |
 * | suite index | `SUITE#<suiteName>`| `RUN#<startedAt>#<runId>`     | type, runId, startedAt                                                                                                              | Query pk = SUITE#name AND sk < the run's sk, newest first, for previousRun; newest first, limit 1, for latestRun |
 * | cache entry | `CACHE#<key>`      | `CACHE`                       | value (Completion as JSON), ttl                                                                                                     | GetItem / PutItem (dynamo-llm-cache.ts)                                     |
 *
 * `suite` and `prompts` are JSON strings, not maps: they are only ever read back whole, and a
 * string round-trips exactly (no number conversion, no empty-string or undefined rules). Both
 * the run record and each result are checked by the codec (model/codec.ts) when read back.
 * `startedAt` is ISO-8601 UTC, so the suite index sorts by time as a string.
 */
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  paginateQuery,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { IdSet } from '../../lib/id-index.js';
import {
  META_SK as META,
  RESULT_PREFIX,
  resultSk,
  runPk,
  SUITE_RUN_PREFIX,
  suitePk,
  suiteRunSk,
  type TableKey,
} from '../../lib/layout/table.js';
import { decodeResult, decodeRun } from '../../model/codec.js';
import { RunExistsError, RunNotFoundError } from '../../model/errors.js';
import {
  type ItemResult,
  type RunCounters,
  type RunRecord,
  type RunStatus,
  resultCost,
} from '../../model/model.js';
import type { SuiteCheck } from '../../model/suite-base.js';
import type { RecordOutcome, RunHistory, RunStore } from '../../ports/ports.js';

export interface DynamoRunStoreOptions {
  /** A document client built with `marshallOptions.removeUndefinedValues: true` (see clients.ts). */
  client: DynamoDBDocumentClient;
  tableName: string;
  /** Query page size for `results`/`resultIds`; DynamoDB's 1 MB page when unset. */
  pageSize?: number;
  /** How a stored run's suite is checked (the full validator, from the composition root). */
  checkSuite?: SuiteCheck;
}

/**
 * A run's item: the RunRecord's fields (`suite` and `prompts` as JSON, `schemaVersion` absent on
 * runs written before it existed) plus the run's counters (`spentUsd` absent on older runs).
 */
type MetaItem = TableKey &
  Omit<RunRecord, 'schemaVersion' | 'suite' | 'prompts'> &
  Omit<RunCounters, 'total' | 'spentUsd'> & {
    type: 'run';
    schemaVersion?: number;
    suite: string;
    prompts: string;
    spentUsd?: number;
  };

export class DynamoRunStore implements RunStore, RunHistory {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly pageSize: number | undefined;

  private readonly checkSuite: SuiteCheck | undefined;

  constructor({ client, tableName, pageSize, checkSuite }: DynamoRunStoreOptions) {
    this.checkSuite = checkSuite;
    this.client = client;
    this.tableName = tableName;
    this.pageSize = pageSize;
  }

  async createRun(run: RunRecord): Promise<void> {
    const meta: MetaItem = {
      pk: runPk(run.runId),
      sk: META,
      type: 'run',
      schemaVersion: run.schemaVersion,
      runId: run.runId,
      suiteName: run.suiteName,
      suite: JSON.stringify(run.suite),
      prompts: JSON.stringify(run.prompts),
      status: run.status,
      total: run.total,
      invalidRows: run.invalidRows,
      startedAt: run.startedAt,
      finishedAt: run.finishedAt,
      reportPrefix: run.reportPrefix,
      datasetKey: run.datasetKey,
      datasetVersion: run.datasetVersion,
      simulated: run.simulated,
      done: 0,
      failed: 0,
      spentUsd: 0,
    };
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: { TableName: this.tableName, Item: meta, ConditionExpression: 'attribute_not_exists(pk)' },
            },
            {
              Put: {
                TableName: this.tableName,
                Item: {
                  pk: suitePk(run.suiteName),
                  sk: suiteRunSk(run.startedAt, run.runId),
                  type: 'suiteRun',
                  runId: run.runId,
                  startedAt: run.startedAt,
                },
              },
            },
          ],
        }),
      );
    } catch (err) {
      if (cancelledByCondition(err, 0)) throw new RunExistsError(run.runId);
      throw err;
    }
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const meta = await this.getMeta(runId);
    return meta && toRunRecord(meta, this.checkSuite);
  }

  /** The run's counters (consistent read); undefined when the run does not exist. */
  async counters(runId: string): Promise<RunCounters | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: runPk(runId), sk: META },
        ConsistentRead: true,
        ProjectionExpression: '#done, #failed, #total, #spent',
        ExpressionAttributeNames: {
          '#done': 'done',
          '#failed': 'failed',
          '#total': 'total',
          '#spent': 'spentUsd',
        },
      }),
    );
    return out.Item && toCounters(out.Item);
  }

  async setTotal(runId: string, total: number, invalidRows: number): Promise<RunCounters> {
    const names = { '#total': 'total', '#invalid': 'invalidRows' };
    const values = { ':total': total, ':invalid': invalidRows };
    // First try the normal path: ingest finished, the run starts running.
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: runPk(runId), sk: META },
          UpdateExpression: 'SET #total = :total, #invalid = :invalid, #s = :running',
          ConditionExpression: '#s = :ingesting',
          ExpressionAttributeNames: { ...names, '#s': 'status' },
          ExpressionAttributeValues: { ...values, ':running': 'running', ':ingesting': 'ingesting' },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toCounters(out.Attributes ?? {});
    } catch (err) {
      if (!isConditionalCheckFailed(err)) throw err;
    }
    // A redelivered ingest (or one racing a fast worker): set the numbers, leave the status be.
    try {
      const out = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: runPk(runId), sk: META },
          UpdateExpression: 'SET #total = :total, #invalid = :invalid',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toCounters(out.Attributes ?? {});
    } catch (err) {
      if (isConditionalCheckFailed(err)) throw new RunNotFoundError(runId);
      throw err;
    }
  }

  async recordResult(result: ItemResult): Promise<RecordOutcome> {
    let recorded = true;
    try {
      await this.writeResult(result, { condition: 'attribute_not_exists(pk)' });
    } catch (err) {
      if (cancelledByCondition(err, 1)) throw new RunNotFoundError(result.runId);
      if (!cancelledByCondition(err, 0)) throw err;
      recorded = await this.replaceBudgetResult(result);
    }
    const counters = await this.counters(result.runId);
    if (!counters) throw new RunNotFoundError(result.runId);
    return { recorded, counters };
  }

  /**
   * The result put and the counter update in ONE transaction. `replacing`: the result this one
   * replaces (a `budget` failure), whose counter and spend are taken back in the same step.
   */
  private async writeResult(
    result: ItemResult,
    { condition, replacing }: { condition: string; replacing?: ItemResult },
  ): Promise<void> {
    const counter = result.status === 'failed' ? 'failed' : 'done';
    const cost = resultCost(result);
    const add = replacing
      ? {
          expression: 'ADD #counter :one, #failed :minusOne, #spent :cost',
          cost: cost - resultCost(replacing),
        }
      : { expression: 'ADD #counter :one, #spent :cost', cost };
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: this.tableName,
              Item: {
                pk: runPk(result.runId),
                sk: resultSk(result.itemId),
                type: 'result',
                runId: result.runId,
                itemId: result.itemId,
                status: result.status,
                failureKind: result.failure?.kind,
                costUsd: cost,
                finishedAt: result.finishedAt,
                result: JSON.stringify(result),
              },
              ConditionExpression: condition,
              ...(replacing ? { ExpressionAttributeValues: { ':budget': 'budget' } } : {}),
            },
          },
          {
            Update: {
              TableName: this.tableName,
              Key: { pk: runPk(result.runId), sk: META },
              UpdateExpression: add.expression,
              // Never conjure a META item (without suite, status...) out of a stray result.
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeNames: {
                '#counter': counter,
                '#spent': 'spentUsd',
                ...(replacing ? { '#failed': 'failed' } : {}),
              },
              ExpressionAttributeValues: {
                ':one': 1,
                ':cost': add.cost,
                ...(replacing ? { ':minusOne': -1 } : {}),
              },
            },
          },
        ],
      }),
    );
  }

  /**
   * The item already has a result: a redelivery (nothing to do) unless that result is a
   * `budget` failure, which a resumed run replaces. The condition on the put makes the
   * replacement happen once however many deliveries race.
   */
  private async replaceBudgetResult(result: ItemResult): Promise<boolean> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: runPk(result.runId), sk: resultSk(result.itemId) },
        ConsistentRead: true,
      }),
    );
    if (out.Item?.failureKind !== 'budget') return false;
    const earlier = decodeResult(
      JSON.parse(String(out.Item.result)),
      `result ${result.itemId} of run ${result.runId}`,
    );
    try {
      await this.writeResult(result, { condition: 'failureKind = :budget', replacing: earlier });
      return true;
    } catch (err) {
      if (cancelledByCondition(err, 0)) return false;
      throw err;
    }
  }

  async resultIds(runId: string): Promise<IdSet> {
    await this.requireRun(runId);
    const ids = new IdSet();
    for await (const item of this.queryResults(runId, {
      ProjectionExpression: 'sk, failureKind',
    })) {
      if (item.failureKind !== 'budget') ids.add(String(item.sk).slice(RESULT_PREFIX.length));
    }
    return ids;
  }

  /** Streams the run's results page by page (never all pages in memory). */
  async *results(runId: string): AsyncIterable<ItemResult> {
    await this.requireRun(runId);
    for await (const item of this.queryResults(runId, {
      ProjectionExpression: 'sk, #result',
      ExpressionAttributeNames: { '#result': 'result' },
    })) {
      yield decodeResult(JSON.parse(String(item.result)), `${String(item.sk)} of run ${runId}`);
    }
  }

  async claimAggregation(runId: string): Promise<boolean> {
    const meta = await this.getMeta(runId);
    if (!meta || meta.total === undefined || meta.done + meta.failed < meta.total) return false;
    if (meta.status !== 'running' && meta.status !== 'ingesting') return false;
    // Counters only grow and the total is final once set, so completeness read above still
    // holds; the condition only has to make the status transition happen once.
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: runPk(runId), sk: META },
          UpdateExpression: 'SET #s = :aggregating',
          ConditionExpression: '#s IN (:running, :ingesting)',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: {
            ':aggregating': 'aggregating',
            ':running': 'running',
            ':ingesting': 'ingesting',
          },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionalCheckFailed(err)) return false;
      throw err;
    }
  }

  async setStatus(runId: string, status: RunStatus, finishedAt?: string): Promise<void> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: runPk(runId), sk: META },
          UpdateExpression: finishedAt === undefined ? 'SET #s = :s' : 'SET #s = :s, #f = :f',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: {
            '#s': 'status',
            ...(finishedAt === undefined ? {} : { '#f': 'finishedAt' }),
          },
          ExpressionAttributeValues: {
            ':s': status,
            ...(finishedAt === undefined ? {} : { ':f': finishedAt }),
          },
        }),
      );
    } catch (err) {
      if (isConditionalCheckFailed(err)) throw new RunNotFoundError(runId);
      throw err;
    }
  }

  /**
   * The latest run of `suiteName` that started before `beforeRunId` and finished (`done`): the
   * one a report compares against. Throws {@link RunNotFoundError} if `beforeRunId` is unknown.
   */
  async previousRun(suiteName: string, beforeRunId: string): Promise<RunRecord | undefined> {
    const current = await this.getMeta(beforeRunId);
    if (!current) throw new RunNotFoundError(beforeRunId);
    const pages = paginateQuery(
      { client: this.client, pageSize: 10 },
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND sk < :before',
        ExpressionAttributeValues: {
          ':pk': suitePk(suiteName),
          ':before': suiteRunSk(current.startedAt, beforeRunId),
        },
        ScanIndexForward: false,
      },
    );
    for await (const page of pages) {
      for (const entry of page.Items ?? []) {
        const run = await this.getMeta(String(entry.runId));
        if (run?.status === 'done') return toRunRecord(run, this.checkSuite);
      }
    }
    return undefined;
  }

  /** The newest run of `suiteName`, whatever its status (one Query on the suite index). */
  async latestRun(suiteName: string): Promise<RunRecord | undefined> {
    const out = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :run)',
        ExpressionAttributeValues: { ':pk': suitePk(suiteName), ':run': SUITE_RUN_PREFIX },
        ScanIndexForward: false,
        Limit: 1,
      }),
    );
    const entry = out.Items?.[0];
    return entry ? this.getRun(String(entry.runId)) : undefined;
  }

  /** Throws {@link RunNotFoundError} when the run has no record (its results are not an empty set). */
  private async requireRun(runId: string): Promise<void> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: runPk(runId), sk: META },
        ConsistentRead: true,
        ProjectionExpression: 'pk',
      }),
    );
    if (!out.Item) throw new RunNotFoundError(runId);
  }

  private async getMeta(runId: string): Promise<MetaItem | undefined> {
    const out = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: runPk(runId), sk: META },
        ConsistentRead: true,
      }),
    );
    return out.Item as MetaItem | undefined;
  }

  private async *queryResults(
    runId: string,
    projection: Pick<QueryCommandInput, 'ProjectionExpression' | 'ExpressionAttributeNames'>,
  ): AsyncGenerator<Record<string, unknown>> {
    const pages = paginateQuery(
      { client: this.client, ...(this.pageSize === undefined ? {} : { pageSize: this.pageSize }) },
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': runPk(runId), ':prefix': RESULT_PREFIX },
        ConsistentRead: true,
        ...projection,
      },
    );
    for await (const page of pages) yield* page.Items ?? [];
  }
}

function toRunRecord(meta: MetaItem, checkSuite: SuiteCheck | undefined): RunRecord {
  const run = {
    schemaVersion: meta.schemaVersion,
    runId: meta.runId,
    suiteName: meta.suiteName,
    suite: JSON.parse(meta.suite),
    prompts: JSON.parse(meta.prompts),
    status: meta.status,
    invalidRows: meta.invalidRows,
    startedAt: meta.startedAt,
    reportPrefix: meta.reportPrefix,
    datasetKey: meta.datasetKey,
    simulated: meta.simulated,
  };
  return decodeRun(
    {
      ...run,
      ...(meta.total !== undefined ? { total: meta.total } : {}),
      ...(meta.finishedAt !== undefined ? { finishedAt: meta.finishedAt } : {}),
      ...(meta.datasetVersion !== undefined ? { datasetVersion: meta.datasetVersion } : {}),
    },
    `run ${meta.runId} (DynamoDB ${runPk(meta.runId)})`,
    checkSuite,
  );
}

function toCounters(item: Record<string, unknown>): RunCounters {
  const counters: RunCounters = {
    done: Number(item.done ?? 0),
    failed: Number(item.failed ?? 0),
    spentUsd: Number(item.spentUsd ?? 0),
  };
  if (item.total !== undefined) counters.total = Number(item.total);
  return counters;
}

/**
 * True when a TransactWriteItems was cancelled because the condition of entry `index` failed.
 * By the SDK's typed exception: the SDK packages resolve to one copy (CommonJS `main`, no
 * `exports` map), in Node and in the bundles alike.
 */
export function cancelledByCondition(err: unknown, index: number): boolean {
  return (
    err instanceof TransactionCanceledException &&
    err.CancellationReasons?.[index]?.Code === 'ConditionalCheckFailed'
  );
}

/** True when a single write's condition failed (a lost conditional create or claim). */
export function isConditionalCheckFailed(err: unknown): err is ConditionalCheckFailedException {
  return err instanceof ConditionalCheckFailedException;
}
