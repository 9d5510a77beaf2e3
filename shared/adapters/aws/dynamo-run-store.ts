/**
 * The run store on ONE DynamoDB table (`pk` S, `sk` S, TTL attribute `ttl`; other adapters
 * share it, see shared/lib/layout/table.ts), laid out so that nothing a worker writes for an
 * item is written for every item: a run scored thousands of items a second spreads its writes
 * over many partition keys, and its record is written a handful of times.
 *
 * | entity       | pk                              | sk                 | attributes                                                                                               | written                                   |
 * |--------------|---------------------------------|--------------------|----------------------------------------------------------------------------------------------------------|-------------------------------------------|
 * | run          | `RUN#<runId>`                   | `META`             | the RunRecord's small fields, `budgeted`, `parts`, `partsClosed`, `partsDone`, `rowsClosed`, `invalidClosed`, `leaseUntil`, `statusSince` | at create, as parts close and complete, on status changes |
 * | definition   | `RUN#<runId>`                   | `SPEC`             | `suite`, `prompts` (JSON): read once per process                                                         | at create                                 |
 * | part         | `RUN#<runId>`                   | `PART#<part>`      | `closed`, `rows`, `invalidRows`, `counters`, `countersDone`, `done`                                            | when the part closes, once per counter that completes, when it completes |
 * | result       | `RESULTS#<runId>#<part>#<slot>` | `R#<row>#<itemId>` | `status`, `failureKind`, `costUsd`, `finishedAt`, `result` (the ItemResult as deflated JSON, binary) or `resultRef` (its S3 key) | one conditional put per item              |
 * | block counter | `RESULTS#<runId>#<part>#<slot>` | `COUNT#<block>`   | `rows` (the rows counted, a number set of their places in the block), `done`, `failed`, `spentUsd`, `expected` (set when the part closes), `complete` | once per batch of results it counts (rows of one block recorded together), each row once: rows join `rows` on the condition none is there yet |
 * | spend shard  | `SPEND#<runId>#<shard>`         | `SPEND`            | `spentUsd`: only for a run with a budget                                                                 | once per worker batch: what the batch's results spent |
 * | budget ledger | `SPEND#<runId>#budget`         | `SPEND`            | `grantedUsd`: what processes leased of the run's budget (only for a run with a budget; see dynamo-budget-ledger.ts) | a conditional ADD per lease (a block of many calls), kept within the budget |
 * | day's spend  | `DAYSPEND#<yyyy-mm-dd>#<shard>` | `SPEND`            | `spentUsd`, `ttl`: every run's results of that UTC day (8 shards)                                        | once per worker batch that spent money    |
 * | active run   | `ACTIVE`                        | `RUN#<runId>`      | `runId`, `startedAt`                                                                                     | at create; deleted when the run is done   |
 * | suite index  | `SUITE#<suiteName>`             | `RUN#<startedAt>#<runId>` | `runId`, `startedAt`                                                                              | at create                                 |
 *
 * A result is a conditional put of its own item, then counted in its block's counter by adding
 * its row to the counter's set of rows on the condition that it is not there: both idempotent,
 * so a redelivery never counts twice and a delivery that died between the two is made good by
 * the next, with no transaction (results of one slot never conflict). Items spread by row over
 * {@link RESULT_SLOTS} slots per part; they are counted in blocks of
 * `COUNT_BLOCK_ROWS` (128) consecutive rows, a counter per block, so that a counter stays under
 * 1 KB and its write costs one unit, and so that a worker's batch (items sent together, mostly
 * of consecutive rows) counts its results in a write per block it touches
 * ({@link DynamoRunStore.recordResults}), not one per result. Completion is counted upward,
 * each step once: a counter is complete when it holds as
 * many rows as ingest said when closing its part; the part, when all its counters are; the
 * run, when its last part is known and all its parts are. Only those steps (one per counter, in
 * small transactions) touch the part's and the run's items. Throttled calls and transaction
 * conflicts are retried here, with jitter (see throttle.ts).
 *
 * What results spent is also summed where it is cheap to read: per budgeted run over
 * {@link SPEND_SHARDS} spend shards (a refused call's message reads them), and per UTC day over
 * {@link DAY_SPEND_SHARDS} day shards (the deployment's daily limit). A process adds to these
 * sums once per batch, not per result ({@link DynamoRunStore.flushSpend}): one write per run and
 * per day a batch spent on, to a shard that turns with each flush. Until then its own reads
 * count what it has not flushed, so it never sees less than it recorded; other processes see it
 * after the flush. A process that dies between recording and flushing leaves its unflushed
 * spend out of these sums (never counted twice: a redelivered result is not counted again); the
 * counters, which the report reads, and the budget's ledger, which bounds what a run spends,
 * have it.
 *
 * A result's JSON is stored deflated (a binary `result`), about half its size: a put costs a
 * unit per KB, and reading it back a unit per 4 KB. A result whose item would still pass
 * DynamoDB's 400 KB (measured as DynamoDB does: attribute names and values) travels by S3
 * reference, as an item message too large for SQS does: its JSON is written to
 * `results/<runId>/…` in the bucket (bucket.ts, `resultBodyKey`) and its item holds
 * `resultRef`, the key, in place of `result`; `results()` reads the body back. What a result may
 * hold at all is bounded before any store sees it (model/result-size.ts), the same in every
 * shell. Items written as JSON text (before results were deflated) are read as they are.
 *
 * `suite` and `prompts` are JSON strings, not maps: they are only ever read back whole, and a
 * string round-trips exactly. Run records and results are checked by the codec
 * (model/codec.ts) when read back. `startedAt` is ISO-8601 UTC, so the suite index sorts by
 * time as a string.
 */

import { createHash, randomInt } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  paginateQuery,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { IdSet } from '../../lib/id-index.js';
import { resultBodyKey } from '../../lib/layout/bucket.js';
import {
  ACTIVE_PK,
  activeSk,
  COUNT_PREFIX,
  countBlockOf,
  countPlaceOf,
  countSk,
  countSlotOf,
  DAY_SPEND_SHARDS,
  daySpendPk,
  itemIdOfResultSk,
  KEY_PREFIXES,
  META_SK as META,
  PART_PREFIX,
  partSk,
  RESULT_PREFIX,
  RESULT_SLOTS,
  resultPk,
  resultSk,
  runPk,
  SPEC_SK,
  SPEND_SHARDS,
  SPEND_SK,
  SUITE_RUN_PREFIX,
  slotOf,
  spendPk,
  suitePk,
  suiteRunSk,
  type TableKey,
} from '../../lib/layout/table.js';
import { decodeResult, decodeRun, StoredDataError } from '../../model/codec.js';
import { RunExistsError, RunNotFoundError } from '../../model/errors.js';
import {
  type ItemResult,
  type RunCounters,
  type RunRecord,
  type RunStatus,
  resultCost,
} from '../../model/model.js';
import { DYNAMO_ITEM_BYTES } from '../../model/result-size.js';
import type { SuiteCheck } from '../../model/suite-base.js';
import type {
  ActiveRun,
  BlobStore,
  BudgetHolder,
  PartClosing,
  RecordOutcome,
  RunHistory,
  RunStore,
} from '../../ports/ports.js';
import { batchGetAll } from './dynamo-batches.js';
import { DynamoBudgetLedger } from './dynamo-budget-ledger.js';
import { type Backoff, globalSleep, Pace, retryThrottled } from './throttle.js';

export interface DynamoRunStoreOptions {
  /** A document client built with `marshallOptions.removeUndefinedValues: true` (see clients.ts). */
  client: DynamoDBDocumentClient;
  tableName: string;
  /** Items per Query page of a slot when results are read; default 200. */
  pageSize?: number;
  /** How a stored run's suite is checked (the full validator, from the composition root). */
  checkSuite?: SuiteCheck;
  /**
   * The bucket results too large for a DynamoDB item go to (by reference, see above). A store
   * without one refuses such a result with an error saying so.
   */
  blobs?: BlobStore;
  /** Clock in epoch milliseconds (leases, the spend cache, `statusSince`). */
  now?: () => number;
  /** How throttled calls are retried (tests shorten the waits). */
  backoff?: Backoff;
  /** How long a run's spend, once read, is used before it is read again, ms; default 1,000. */
  spentCacheMs?: number;
  /** How long the day's spend across runs, once read, is used before it is read again, ms; default 2,000. */
  daySpentCacheMs?: number;
  /**
   * How long a run found not stopped is taken as running before its record is read again, ms;
   * default 5,000 (a stopped run is known for good). Tests set 0.
   */
  stopCacheMs?: number;
  /**
   * Days after which a run's results and counters expire (the table's `ttl`, epoch seconds,
   * written on each): their storage is paid for that long. 0 or unset: kept.
   */
  resultTtlDays?: number;
  /**
   * The most read units a second this store's reads of results take (the aggregation's share
   * of the table, so that the parts tallied at once leave it to the runs still scoring); its
   * waits are `backoff.sleep`'s. Unset or 0: unpaced.
   */
  resultReadUnitsPerSecond?: number;
}

/**
 * Tries of a call while DynamoDB throttles it: jittered waits of at most 3 s each, about half a
 * minute in all on average and at most 70 s, far inside the functions' timeouts, so that a hot
 * moment on a key (a slot's, as a part completes) delays a paid answer's record instead of
 * handing its message back to the queue.
 */
const THROTTLED_ATTEMPTS = 30;

/** The small, often-read part of a run's record (its suite and prompts are in {@link SpecItem}). */
type MetaItem = TableKey &
  Omit<RunRecord, 'schemaVersion' | 'suite' | 'prompts' | 'total' | 'invalidRows'> & {
    type: 'run';
    schemaVersion?: number;
    /** The run has a budget: its results also add their cost to a spend shard. */
    budgeted?: boolean;
    /** How many parts the run has, once ingest has met the dataset's end. */
    parts?: number;
    partsClosed?: number;
    partsDone?: number;
    /** Rows (and invalid rows among them) of the parts closed so far. */
    rowsClosed?: number;
    invalidClosed?: number;
    /** The aggregation's lease (epoch ms). */
    leaseUntil?: number;
    /** Why the run was stopped, and when (epoch ms): its items without a result end as `stopped`. */
    stopReason?: string;
    stoppedAt?: number;
    /** When the run entered its status (epoch ms): the watchdog's measure of a stuck run. */
    statusSince?: number;
    /** Written by Assay versions that kept the run whole on this item. */
    suite?: string;
    prompts?: string;
    total?: number;
    invalidRows?: number;
  };

interface SpecItem {
  suite: string;
  prompts: string;
}

interface CountItem {
  /** The rows counted (each once), by their place in the counter's block (`countPlaceOf`). */
  rows?: Set<number>;
  done?: number;
  failed?: number;
  spentUsd?: number;
  expected?: number;
  complete?: boolean;
}

/** A result written, to be counted. */
interface Written {
  result: ItemResult;
  cost: number;
  facts: RunFacts;
  /** False when the item had a result already (a redelivery). */
  recorded: boolean;
}

interface PartItem {
  closed?: boolean;
  /** How many counters count results of the part (the part is done when they all are complete). */
  counters?: number;
  rows?: number;
  invalidRows?: number;
  countersDone?: number;
  done?: boolean;
}

/** Of a run, what recording a result needs: that it exists, and whether it has a budget. */
interface RunFacts {
  budgeted: boolean;
  /** Why the run was stopped, when it was when the record was read. */
  stopReason?: string;
}

/** Calls a store makes at once while it closes a part or reads a part's slots. */
const FAN_OUT = 16;

export class DynamoRunStore implements RunStore, RunHistory {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly pageSize: number;
  private readonly checkSuite: SuiteCheck | undefined;
  private readonly blobs: BlobStore | undefined;
  private readonly now: () => number;
  private readonly backoff: Backoff;
  private readonly spentCacheMs: number;
  /** Runs this process has seen exist, with their facts: read once (runs never lose their record). */
  private readonly facts = new Map<string, Promise<RunFacts>>();
  /**
   * Each run's spend as last read, when, and what results this process recorded since (added
   * at once, so that this process never sees less than it recorded itself).
   */
  private readonly spentCache = new Map<string, { at: number; read: Promise<number>; since: number }>();
  private readonly daySpentCacheMs: number;
  /** The day's spend as last read (of which UTC day, when), and what this process recorded that day since. */
  private daySpent: { day: string; at: number; read: Promise<number>; since: number } | undefined;
  private readonly stopCacheMs: number;
  private readonly resultTtlDays: number;
  /** Each run's stop as last read: a reason is kept for good, a run found running for `stopCacheMs`. */
  private readonly stopCache = new Map<string, { at: number; read: Promise<string | undefined> }>();
  /** Budgeted runs' money this process leased (see dynamo-budget-ledger.ts). */
  private readonly ledger: DynamoBudgetLedger;
  /** What this process's results spent and {@link flushSpend} has not added to the shards yet: by budgeted run, and by UTC day. */
  private readonly unflushedRuns = new Map<string, number>();
  private readonly unflushedDays = new Map<string, number>();
  /**
   * The reads of results' pace, and the units a page is taken to cost before it is read (what
   * the last page took; at first, a page of 1 KB results read strongly consistent, a unit each
   * 4 KB): what it really took is settled once it is read.
   */
  private readonly resultReads: Pace;
  private pageUnits: number;
  /** The shard the next flush adds to (each flush takes the next, from a place of its own per process). */
  private flushShard = randomInt(SPEND_SHARDS * DAY_SPEND_SHARDS);

  constructor({
    client,
    tableName,
    pageSize = 200,
    checkSuite,
    blobs,
    now = Date.now,
    backoff = {},
    spentCacheMs = 1_000,
    daySpentCacheMs = 2_000,
    stopCacheMs = 5_000,
    resultTtlDays = 0,
    resultReadUnitsPerSecond = 0,
  }: DynamoRunStoreOptions) {
    this.resultReads = new Pace(resultReadUnitsPerSecond, now, backoff.sleep ?? globalSleep);
    this.pageUnits = pageSize / 4;
    this.resultTtlDays = resultTtlDays;
    this.client = client;
    this.tableName = tableName;
    this.pageSize = pageSize;
    this.checkSuite = checkSuite;
    this.blobs = blobs;
    this.now = now;
    this.backoff = { ...backoff, attempts: backoff.attempts ?? THROTTLED_ATTEMPTS };
    this.spentCacheMs = spentCacheMs;
    this.daySpentCacheMs = daySpentCacheMs;
    this.stopCacheMs = stopCacheMs;
    this.ledger = new DynamoBudgetLedger({ tableName, send: (command) => this.send(command) });
  }

  /** Sends a document-client command, retrying it while it is throttled. */
  private send<T = unknown>(command: object): Promise<T> {
    const client = this.client as unknown as { send(command: object): Promise<T> };
    return retryThrottled(() => client.send(command), this.backoff);
  }

  async createRun(run: RunRecord): Promise<void> {
    const now = this.now();
    const meta: MetaItem = {
      pk: runPk(run.runId),
      sk: META,
      type: 'run',
      schemaVersion: run.schemaVersion,
      runId: run.runId,
      suiteName: run.suiteName,
      status: run.status,
      startedAt: run.startedAt,
      finishedAt: run.finishedAt,
      reportPrefix: run.reportPrefix,
      datasetKey: run.datasetKey,
      datasetVersion: run.datasetVersion,
      simulated: run.simulated,
      budgeted: run.suite.run?.budgetUsd !== undefined,
      partsClosed: 0,
      partsDone: 0,
      rowsClosed: 0,
      invalidClosed: 0,
      statusSince: now,
    };
    const table = this.tableName;
    try {
      await this.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: table, Item: meta, ConditionExpression: 'attribute_not_exists(pk)' } },
            {
              Put: {
                TableName: table,
                Item: {
                  pk: runPk(run.runId),
                  sk: SPEC_SK,
                  type: 'runSpec',
                  suite: JSON.stringify(run.suite),
                  prompts: JSON.stringify(run.prompts),
                },
              },
            },
            {
              Put: {
                TableName: table,
                Item: {
                  pk: suitePk(run.suiteName),
                  sk: suiteRunSk(run.startedAt, run.runId),
                  type: 'suiteRun',
                  runId: run.runId,
                  startedAt: run.startedAt,
                },
              },
            },
            {
              Put: {
                TableName: table,
                Item: {
                  pk: ACTIVE_PK,
                  sk: activeSk(run.runId),
                  type: 'activeRun',
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
    return meta && (await this.toRunRecord(meta));
  }

  /**
   * Every counter of the run summed (a query of each slot's counters), and the total once every
   * part is closed; undefined when the run does not exist.
   */
  async counters(runId: string): Promise<RunCounters | undefined> {
    const meta = await this.getMeta(runId);
    if (!meta) return undefined;
    if (meta.suite !== undefined) return legacyCounters(meta);
    const counters: RunCounters = { done: 0, failed: 0, spentUsd: 0 };
    const slots = (await this.partsOf(runId, meta)).flatMap((part) =>
      Array.from({ length: RESULT_SLOTS }, (_, slot) => resultPk(runId, part, slot)),
    );
    await inParallel(slots, FAN_OUT, async (pk) => {
      // The counts, not the rows counted.
      for await (const item of this.query(pk, COUNT_PREFIX, 'done, failed, spentUsd')) {
        const count = item as CountItem;
        counters.done += count.done ?? 0;
        counters.failed += count.failed ?? 0;
        counters.spentUsd += count.spentUsd ?? 0;
      }
    });
    const total = totalOf(meta);
    if (total !== undefined) counters.total = total;
    return counters;
  }

  async spent(runId: string): Promise<number> {
    let cached = this.spentCache.get(runId);
    if (!cached || this.now() - cached.at >= this.spentCacheMs) {
      const read = this.readSpent(runId);
      // What this process has not flushed is not in the shards yet.
      const entry = { at: this.now(), read, since: this.unflushedRuns.get(runId) ?? 0 };
      this.spentCache.set(runId, entry);
      read.catch(() => {
        if (this.spentCache.get(runId) === entry) this.spentCache.delete(runId);
      });
      cached = entry;
    }
    return (await cached.read) + cached.since;
  }

  private async readSpent(runId: string): Promise<number> {
    const { budgeted } = await this.runFacts(runId);
    if (!budgeted) return (await this.counters(runId))?.spentUsd ?? 0;
    const keys = Array.from({ length: SPEND_SHARDS }, (_, shard) => ({
      pk: spendPk(runId, shard),
      sk: SPEND_SK,
    }));
    let total = 0;
    for (const item of await this.batchGet(keys, false)) total += Number(item.spentUsd ?? 0);
    return total;
  }

  /**
   * Taken from the block of the budget this process leased, leasing another (a conditional ADD
   * on the run's ledger, kept within the budget) when it has no room: see dynamo-budget-ledger.ts.
   */
  async reserve(runId: string, holder: BudgetHolder, usd: number, budgetUsd: number): Promise<boolean> {
    await this.runFacts(runId);
    return this.ledger.reserve(runId, holder.itemId, usd, budgetUsd);
  }

  async settleReservation(
    runId: string,
    holder: BudgetHolder,
    reservedUsd: number,
    actualUsd: number,
  ): Promise<void> {
    await this.runFacts(runId);
    await this.ledger.settle(runId, holder.itemId, reservedUsd, actualUsd);
  }

  /** What this process's items hold: a process knows only its own reservations. */
  async reserved(runId: string): Promise<number> {
    await this.runFacts(runId);
    return this.ledger.reserved(runId);
  }

  /** The `ttl` a result and its counter are written with (see `resultTtlDays`): none when kept. */
  private expiry(): { ttl?: number } {
    const days = this.resultTtlDays;
    return days > 0 ? { ttl: Math.floor(this.now() / 1000) + days * 86_400 } : {};
  }

  async recordResult(result: ItemResult): Promise<RecordOutcome> {
    return (await this.recordResults([result]))[0]!;
  }

  /**
   * Each result written as {@link recordResult} writes it, then counted: results whose rows share
   * a counter in one write for them all, on the condition that none of their rows is counted
   * yet; when one is (a redelivery), each is counted on its own. A run that is complete now says
   * so on its first result only.
   */
  async recordResults(results: readonly ItemResult[]): Promise<RecordOutcome[]> {
    const written = await Promise.all(results.map((result) => this.write(result)));
    // By counter, each row once in a write (a message delivered twice in one batch is two).
    const groups: Written[][] = [];
    const open = new Map<string, { group: Written[]; rows: Set<number> }>();
    for (const entry of written) {
      const { pk, sk } = counterKey(entry.result.runId, entry.result.part ?? 0, entry.result.row);
      const key = `${pk}\n${sk}`;
      let at = open.get(key);
      if (!at || at.rows.has(entry.result.row)) {
        at = { group: [], rows: new Set() };
        groups.push(at.group);
        open.set(key, at);
      }
      at.group.push(entry);
      at.rows.add(entry.result.row);
    }
    const complete = new Set<Written>();
    await Promise.all(
      groups.map(async (group) => {
        const first = group[0]!.result;
        const count = await this.count(group);
        if (await this.settle(first.runId, first.part ?? 0, first.row, count)) complete.add(group[0]!);
      }),
    );
    const told = new Set<string>();
    return written.map((entry) => {
      const { runId } = entry.result;
      // What the items held in this process is spent now (their lease already paid for it).
      if (entry.facts.budgeted) this.ledger.release(runId, entry.result.itemId);
      const completes = complete.has(entry) && !told.has(runId);
      if (completes) told.add(runId);
      return { recorded: entry.recorded, complete: completes };
    });
  }

  /** A result's item written once (a `budget` failure replaced), not counted yet. */
  private async write(result: ItemResult): Promise<Written> {
    const facts = await this.runFacts(result.runId);
    const cost = resultCost(result);
    const json = JSON.stringify(result);
    const inline = { ...resultItem(result, cost, deflateRawSync(json)), ...this.expiry() };
    const large = dynamoItemBytes(inline) > DYNAMO_ITEM_BYTES;
    // A redelivery of an item whose large result is in writes no second body.
    if (large && (await this.hasFinalResult(result))) return { result, cost, facts, recorded: false };
    const item = large ? await this.byReference(result, inline, json) : inline;
    try {
      await this.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return { result, cost, facts, recorded: true };
    } catch (err) {
      if (!isConditionalCheckFailed(err)) throw err;
      return { result, cost, facts, recorded: await this.replaceBudgetResult(result, item, cost, facts) };
    }
  }

  /**
   * The item of a result too large for DynamoDB: its JSON written to the bucket under a key
   * named by its digest (so a body is never replaced), and the item holding the key.
   */
  private async byReference(
    result: ItemResult,
    inline: Record<string, unknown>,
    json: string,
  ): Promise<Record<string, unknown>> {
    const { result: deflated, ...item } = inline;
    const bytes = (deflated as Uint8Array).byteLength;
    if (!this.blobs)
      throw new Error(
        `result ${result.itemId} of run ${result.runId} is ${Math.ceil(bytes / 1024)} KB deflated, more than a DynamoDB item holds, and this run store was built without a bucket to keep it in: pass \`blobs\` to DynamoRunStore`,
      );
    const digest = createHash('sha256').update(json).digest('hex').slice(0, 16);
    const ref = resultBodyKey(result.runId, result.itemId, digest);
    await this.blobs.put(ref, json, 'application/json');
    return { ...item, resultRef: ref };
  }

  /** The item has a result a new one does not replace (any but a `budget` failure). */
  private async hasFinalResult(result: ItemResult): Promise<boolean> {
    const out = await this.send<{ Item?: Record<string, unknown> }>(
      new GetCommand({
        TableName: this.tableName,
        Key: {
          pk: resultPk(result.runId, result.part ?? 0, slotOf(result.row)),
          sk: resultSk(result.row, result.itemId),
        },
        ProjectionExpression: 'failureKind, sk',
        ConsistentRead: true,
      }),
    );
    return out.Item !== undefined && out.Item.failureKind !== 'budget';
  }

  /**
   * A result item read back: its `result` JSON, or the body its `resultRef` names in the
   * bucket, checked by the codec and that it is the result the item is of.
   */
  private async decodeItem(item: Record<string, unknown>, where: string): Promise<ItemResult> {
    if (item.resultRef === undefined) {
      const body =
        item.result instanceof Uint8Array ? inflateRawSync(item.result).toString() : String(item.result);
      return decodeResult(JSON.parse(body), where);
    }
    const ref = String(item.resultRef);
    if (!this.blobs)
      throw new Error(
        `${where} is kept in the bucket at ${ref}, and this run store was built without one: pass \`blobs\` to DynamoRunStore`,
      );
    const bytes = await this.blobs.get(ref);
    if (bytes === undefined)
      throw new StoredDataError(
        `${where}: its result is kept at ${ref} in the bucket, and that object is missing`,
      );
    const result = decodeResult(JSON.parse(new TextDecoder().decode(bytes)), `${where} (${ref})`);
    if (String(item.sk) !== resultSk(result.row, result.itemId))
      throw new StoredDataError(
        `${where}: the result kept at ${ref} is of item ${result.itemId} (row ${result.row}), not this one`,
      );
    return result;
  }

  /**
   * Counts results of one counter's block, each once: their rows join the counter's set of rows,
   * with the done/failed counts and the money, on the condition that none of the rows is in the
   * set yet. A redelivered result (its put already done, by this delivery or one that died
   * before counting) is counted if it was not, never twice: when the condition fails, each
   * result is counted on its own. No transaction, so results of one slot never conflict.
   * Returns the counter as it is now.
   */
  private async count(group: readonly Written[]): Promise<CountItem> {
    const first = group[0]!.result;
    const key = counterKey(first.runId, first.part ?? 0, first.row);
    const { ttl } = this.expiry();
    const failed = group.filter((entry) => entry.result.status === 'failed').length;
    // The counts this write adds to (one it would add 0 to is left out, as a single result does).
    const tallies = Object.entries({ done: group.length - failed, failed }).filter(([, n]) => n > 0);
    const places = group.map((entry) => countPlaceOf(entry.result.row));
    try {
      const out = await this.send<{ Attributes?: Record<string, unknown> }>(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: `ADD #r :rows, ${tallies.map(([name]) => `#${name} :${name}, `).join('')}#spent :cost${ttl ? ' SET #ttl = :ttl' : ''}`,
          // DynamoDB takes a condition of at most 4 KB: a whole block's rows, written tersely, fit.
          ConditionExpression: places.map((_, i) => `NOT contains(#r,:p${i})`).join(' AND '),
          ExpressionAttributeNames: {
            '#r': 'rows',
            ...Object.fromEntries(tallies.map(([name]) => [`#${name}`, name])),
            '#spent': 'spentUsd',
            ...(ttl ? { '#ttl': 'ttl' } : {}),
          },
          ExpressionAttributeValues: {
            ':rows': new Set(places),
            ...Object.fromEntries(places.map((place, i) => [`:p${i}`, place])),
            ...Object.fromEntries(tallies.map(([name, n]) => [`:${name}`, n])),
            ':cost': group.reduce((sum, entry) => sum + entry.cost, 0),
            ...(ttl ? { ':ttl': ttl } : {}),
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      for (const entry of group) this.addSpend(entry.result, entry.cost, entry.facts);
      return out.Attributes as CountItem;
    } catch (err) {
      if (!isConditionalCheckFailed(err)) throw err;
      if (group.length > 1) {
        // Some row was counted before: each on its own, the counter as the last left it.
        let count: CountItem | undefined;
        for (const entry of group) count = await this.count([entry]);
        return count!;
      }
      // Counted before: the counter as it is.
      const out = await this.send<{ Item?: Record<string, unknown> }>(
        new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }),
      );
      return out.Item as CountItem;
    }
  }

  /**
   * What a counted result spent joins what this process has to flush: to its run's spend shards
   * (a run with a budget) and to its UTC day's. This process's views of both take it at once.
   */
  private addSpend(result: ItemResult, cost: number, facts: RunFacts): void {
    if (cost === 0) return;
    if (facts.budgeted) {
      this.unflushedRuns.set(result.runId, (this.unflushedRuns.get(result.runId) ?? 0) + cost);
      const cached = this.spentCache.get(result.runId);
      if (cached) cached.since += cost;
    }
    const day = utcDay(this.now());
    this.unflushedDays.set(day, (this.unflushedDays.get(day) ?? 0) + cost);
    if (this.daySpent?.day === day) this.daySpent.since += cost;
  }

  /**
   * Adds what this process's results spent since the last flush to the shards: one write per
   * budgeted run and one per UTC day (a day's shards expire a month after it), each to the
   * shard this flush takes. A write that fails keeps its amount for the next flush, and the
   * first failure is thrown once the others are done. The worker flushes after each batch.
   */
  async flushSpend(): Promise<void> {
    const runs = [...this.unflushedRuns];
    const days = [...this.unflushedDays];
    if (runs.length === 0 && days.length === 0) return;
    this.unflushedRuns.clear();
    this.unflushedDays.clear();
    const shard = this.flushShard++;
    const keep = (pending: Map<string, number>, key: string, usd: number) => (err: unknown) => {
      pending.set(key, (pending.get(key) ?? 0) + usd);
      throw err;
    };
    const writes = [
      ...runs.map(([runId, usd]) =>
        this.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: spendPk(runId, shard % SPEND_SHARDS), sk: SPEND_SK },
            UpdateExpression: 'ADD #spent :usd',
            ExpressionAttributeNames: { '#spent': 'spentUsd' },
            ExpressionAttributeValues: { ':usd': usd },
          }),
        ).catch(keep(this.unflushedRuns, runId, usd)),
      ),
      ...days.map(([day, usd]) =>
        this.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: daySpendPk(day, shard % DAY_SPEND_SHARDS), sk: SPEND_SK },
            UpdateExpression: 'ADD #spent :usd SET #ttl = if_not_exists(#ttl, :ttl)',
            ExpressionAttributeNames: { '#spent': 'spentUsd', '#ttl': 'ttl' },
            ExpressionAttributeValues: {
              ':usd': usd,
              ':ttl': Math.floor(Date.parse(`${day}T00:00:00Z`) / 1000) + DAY_SPEND_TTL_SECONDS,
            },
          }),
        ).catch(keep(this.unflushedDays, day, usd)),
      ),
    ];
    const failed = (await Promise.allSettled(writes)).find((w) => w.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** The UTC day's spend across runs: its shards read at most every `daySpentCacheMs`, plus what this process recorded since. */
  async spentToday(): Promise<number> {
    const now = this.now();
    const day = utcDay(now);
    let cached = this.daySpent;
    if (!cached || cached.day !== day || now - cached.at >= this.daySpentCacheMs) {
      const keys = Array.from({ length: DAY_SPEND_SHARDS }, (_, shard) => ({
        pk: daySpendPk(day, shard),
        sk: SPEND_SK,
      }));
      const read = this.batchGet(keys, false).then((items) =>
        items.reduce((total, item) => total + Number(item.spentUsd ?? 0), 0),
      );
      // What this process has not flushed is not in the shards yet.
      const entry = { day, at: now, read, since: this.unflushedDays.get(day) ?? 0 };
      this.daySpent = entry;
      read.catch(() => {
        if (this.daySpent === entry) this.daySpent = undefined;
      });
      cached = entry;
    }
    return (await cached.read) + cached.since;
  }

  async stop(runId: string, reason: string): Promise<void> {
    try {
      await this.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: runPk(runId), sk: META },
          // The first stop's reason and time stay.
          UpdateExpression: 'SET #reason = if_not_exists(#reason, :reason), #at = if_not_exists(#at, :at)',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#reason': 'stopReason', '#at': 'stoppedAt' },
          ExpressionAttributeValues: { ':reason': reason, ':at': this.now() },
        }),
      );
    } catch (err) {
      if (isConditionalCheckFailed(err)) throw new RunNotFoundError(runId);
      throw err;
    }
    this.stopCache.set(runId, { at: this.now(), read: Promise.resolve(reason) });
  }

  async stopped(runId: string): Promise<string | undefined> {
    const cached = this.stopCache.get(runId);
    if (cached && this.now() - cached.at < this.stopCacheMs) return cached.read;
    if (cached && (await cached.read) !== undefined) return cached.read;
    // Every message of a batch asks at once: the first past the wait starts the next look, and
    // the others take it (else each would read the record again, a burst on the run's one key).
    const current = this.stopCache.get(runId);
    if (current && current !== cached) return current.read;
    // The first look in this process takes the record the run's facts are read from (once per
    // process, and needed to record a result anyway): a thousand cold containers then add no
    // read of RUN# at their start. Later looks read the record again.
    const read = cached
      ? this.send<{ Item?: Record<string, unknown> }>(
          new GetCommand({
            TableName: this.tableName,
            Key: { pk: runPk(runId), sk: META },
            ProjectionExpression: 'stopReason',
          }),
        ).then((out) => (out.Item?.stopReason === undefined ? undefined : String(out.Item.stopReason)))
      : this.runFacts(runId).then(
          (facts) => facts.stopReason,
          (error: unknown) => {
            if (error instanceof RunNotFoundError) return undefined;
            throw error;
          },
        );
    const entry = { at: this.now(), read };
    this.stopCache.set(runId, entry);
    read.catch(() => {
      if (this.stopCache.get(runId) === entry) this.stopCache.delete(runId);
    });
    return read;
  }

  /**
   * The item already has a result: a redelivery (nothing to do) unless that result is a
   * `budget` failure, which a resumed run replaces. The condition on the put makes the
   * replacement happen once however many deliveries race; the counter then moves the item from
   * failed to done and its spend by the difference (were that step lost with its process, only
   * those two figures would be off: the row is counted once either way).
   */
  private async replaceBudgetResult(
    result: ItemResult,
    item: Record<string, unknown>,
    cost: number,
    facts: RunFacts,
  ): Promise<boolean> {
    const key = {
      pk: resultPk(result.runId, result.part ?? 0, slotOf(result.row)),
      sk: resultSk(result.row, result.itemId),
    };
    const out = await this.send<{ Item?: Record<string, unknown> }>(
      new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }),
    );
    if (out.Item?.failureKind !== 'budget') return false;
    const earlier = await this.decodeItem(out.Item, `result ${result.itemId} of run ${result.runId}`);
    try {
      await this.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'failureKind = :budget',
          ExpressionAttributeValues: { ':budget': 'budget' },
        }),
      );
    } catch (err) {
      if (isConditionalCheckFailed(err)) return false;
      throw err;
    }
    const delta = cost - resultCost(earlier);
    await this.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: counterKey(result.runId, result.part ?? 0, result.row),
        UpdateExpression: `ADD #failed :minusOne, #spent :delta${result.status === 'failed' ? ', #failed :one' : ', #done :one'}`,
        ExpressionAttributeNames: { '#failed': 'failed', '#done': 'done', '#spent': 'spentUsd' },
        ExpressionAttributeValues: { ':minusOne': -1, ':one': 1, ':delta': delta },
      }),
    );
    this.addSpend(result, delta, facts);
    return true;
  }

  /**
   * Counts completion one step up from the counter of a row's block, as far as it goes: a
   * counter that reached what its part expects is marked complete and counted in its part; a
   * part with every counter complete (and closed) is marked done and counted in the run; true when the
   * run has all its parts done. Each mark is conditional, so each step is counted once however
   * many callers race; a step already taken is looked past, so that a caller that died between
   * two steps is made good by the next one to pass (a redelivery, another result, the closing).
   */
  private async settle(
    runId: string,
    part: number,
    row: number,
    count: CountItem | undefined,
  ): Promise<boolean> {
    if (count?.expected === undefined) return false;
    if (!count.complete) {
      if (counted(count) < count.expected) return false;
      await this.mark(
        counterKey(runId, part, row),
        'complete',
        { pk: runPk(runId), sk: partSk(part) },
        'countersDone',
      );
    }
    return this.settlePart(runId, part);
  }

  /** The part's step (see {@link settle}), then whether the run is complete. */
  private async settlePart(runId: string, part: number): Promise<boolean> {
    const out = await this.send<{ Item?: Record<string, unknown> }>(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: runPk(runId), sk: partSk(part) },
        ConsistentRead: true,
      }),
    );
    const item = out.Item as PartItem | undefined;
    if (!item?.done) {
      if (!item?.closed || item.counters === undefined || (item.countersDone ?? 0) < item.counters)
        return false;
      await this.mark(
        { pk: runPk(runId), sk: partSk(part) },
        'done',
        { pk: runPk(runId), sk: META },
        'partsDone',
      );
    }
    const meta = await this.getMeta(runId);
    return meta !== undefined && isComplete(meta);
  }

  /** Sets `flag` on `item` unless it is set, and in the same step adds 1 to `counter` on `parent`. */
  private async mark(item: TableKey, flag: string, parent: TableKey, counter: string): Promise<void> {
    try {
      await this.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: item,
                UpdateExpression: 'SET #flag = :yes',
                ConditionExpression: 'attribute_not_exists(#flag)',
                ExpressionAttributeNames: { '#flag': flag },
                ExpressionAttributeValues: { ':yes': true },
              },
            },
            {
              Update: {
                TableName: this.tableName,
                Key: parent,
                UpdateExpression: 'ADD #counter :one',
                ExpressionAttributeNames: { '#counter': counter },
                ExpressionAttributeValues: { ':one': 1 },
              },
            },
          ],
        }),
      );
    } catch (err) {
      // Someone else took this step: it is counted once.
      if (!cancelledByCondition(err, 0)) throw err;
    }
  }

  async closePart(runId: string, part: number, closing: PartClosing): Promise<{ complete: boolean }> {
    // How many results each counter will hold, by a row of its block (the counters of rows
    // the part does not have are never written).
    const expected = new Map<number, { row: number; rows: number }>();
    for (let i = 0; i < closing.rows.length; i += 1) {
      const row = closing.rows[i]!;
      const key = countBlockOf(row);
      const counter = expected.get(key);
      if (counter) counter.rows += 1;
      else expected.set(key, { row, rows: 1 });
    }
    const counters = [...expected.values()];
    const partKey = { pk: runPk(runId), sk: partSk(part) };
    try {
      // The part is counted in the run once: its own mark says it is closed, in the same step.
      await this.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: partKey,
                UpdateExpression:
                  'SET #closed = :yes, #rows = :rows, #invalid = :invalid, #counters = :counters',
                ConditionExpression: 'attribute_not_exists(#closed)',
                ExpressionAttributeNames: {
                  '#closed': 'closed',
                  '#rows': 'rows',
                  '#invalid': 'invalidRows',
                  '#counters': 'counters',
                },
                ExpressionAttributeValues: {
                  ':yes': true,
                  ':rows': closing.rows.length,
                  ':invalid': closing.invalidRows,
                  ':counters': counters.length,
                },
              },
            },
            {
              Update: {
                TableName: this.tableName,
                Key: { pk: runPk(runId), sk: META },
                UpdateExpression: `ADD #closed :one, #rows :rows, #invalid :invalid${closing.last ? ' SET #parts = :parts' : ''}`,
                ConditionExpression: 'attribute_exists(pk)',
                ExpressionAttributeNames: {
                  '#closed': 'partsClosed',
                  '#rows': 'rowsClosed',
                  '#invalid': 'invalidClosed',
                  ...(closing.last ? { '#parts': 'parts' } : {}),
                },
                ExpressionAttributeValues: {
                  ':one': 1,
                  ':rows': closing.rows.length,
                  ':invalid': closing.invalidRows,
                  ...(closing.last ? { ':parts': part + 1 } : {}),
                },
              },
            },
          ],
        }),
      );
    } catch (err) {
      if (cancelledByCondition(err, 1)) throw new RunNotFoundError(runId);
      // Closed before (a closing done again): what follows is idempotent.
      if (!cancelledByCondition(err, 0)) throw err;
    }
    // Each counter learns how many results it will hold; one whose results are all in is settled.
    await inParallel(counters, FAN_OUT, async ({ row, rows }) => {
      const key = counterKey(runId, part, row);
      const out = await this.send<{ Attributes?: Record<string, unknown> }>(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET #expected = :expected',
          ExpressionAttributeNames: { '#expected': 'expected' },
          ExpressionAttributeValues: { ':expected': rows },
          ReturnValues: 'ALL_NEW',
        }),
      );
      const count = out.Attributes as CountItem;
      if (!count.complete && counted(count) >= rows)
        await this.mark(key, 'complete', partKey, 'countersDone');
    });
    const complete = await this.settlePart(runId, part);
    await this.startRunning(runId);
    return { complete };
  }

  /** A run whose parts are all closed leaves `ingesting` for `running`. */
  private async startRunning(runId: string): Promise<void> {
    const meta = await this.getMeta(runId);
    if (meta?.status !== 'ingesting' || meta.parts === undefined || (meta.partsClosed ?? 0) < meta.parts)
      return;
    try {
      await this.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: runPk(runId), sk: META },
          UpdateExpression: 'SET #s = :running, #since = :now',
          ConditionExpression: '#s = :ingesting',
          ExpressionAttributeNames: { '#s': 'status', '#since': 'statusSince' },
          ExpressionAttributeValues: { ':running': 'running', ':ingesting': 'ingesting', ':now': this.now() },
        }),
      );
    } catch (err) {
      if (!isConditionalCheckFailed(err)) throw err;
    }
  }

  async resultIds(runId: string, part?: number): Promise<IdSet> {
    const meta = await this.requireMeta(runId);
    const ids = new IdSet();
    const add = (item: Record<string, unknown>, id: string) => {
      if (item.failureKind !== 'budget') ids.add(id);
    };
    if (meta.suite !== undefined) {
      for await (const item of this.query(runPk(runId), LEGACY_RESULT_PREFIX, 'sk, failureKind'))
        add(item, String(item.sk).slice(LEGACY_RESULT_PREFIX.length));
      return ids;
    }
    const parts = part === undefined ? await this.partsOf(runId, meta) : [part];
    for (const p of parts) {
      await inParallel(new Array<number>(RESULT_SLOTS).fill(0), FAN_OUT, async (_, slot) => {
        for await (const item of this.query(resultPk(runId, p, slot), RESULT_PREFIX, 'sk, failureKind', true))
          add(item, itemIdOfResultSk(String(item.sk)));
      });
    }
    return ids;
  }

  /**
   * Streams the results page by page, in report order: part by part, each part's slots read
   * at once and merged by row (each slot's results come sorted by row).
   */
  async *results(runId: string, part?: number): AsyncIterable<ItemResult> {
    const meta = await this.requireMeta(runId);
    const decode = (item: Record<string, unknown>) =>
      this.decodeItem(item, `${String(item.sk)} of run ${runId}`);
    if (meta.suite !== undefined) {
      for await (const item of this.query(runPk(runId), LEGACY_RESULT_PREFIX, 'sk, #result'))
        yield await decode(item);
      return;
    }
    const parts = part === undefined ? await this.partsOf(runId, meta) : [part];
    for (const p of parts) {
      const slots = Array.from({ length: RESULT_SLOTS }, (_, slot) =>
        this.query(resultPk(runId, p, slot), RESULT_PREFIX, 'sk, #result, resultRef', true),
      );
      for await (const item of mergeByRow(slots)) yield await decode(item);
    }
  }

  async claimAggregation(runId: string, leaseMs: number): Promise<boolean> {
    const meta = await this.getMeta(runId);
    if (!meta || meta.suite !== undefined || !isComplete(meta)) return false;
    const now = this.now();
    const open = meta.status === 'running' || meta.status === 'ingesting';
    const lapsed = meta.status === 'aggregating' && (meta.leaseUntil ?? 0) <= now;
    if (!open && !lapsed) return false;
    try {
      await this.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: runPk(runId), sk: META },
          UpdateExpression: 'SET #s = :aggregating, #lease = :until, #since = :now',
          // Taken from where it was seen: by exactly one caller.
          ConditionExpression: open
            ? '#s IN (:running, :ingesting)'
            : '#s = :aggregating AND (attribute_not_exists(#lease) OR #lease = :seen)',
          ExpressionAttributeNames: { '#s': 'status', '#lease': 'leaseUntil', '#since': 'statusSince' },
          ExpressionAttributeValues: {
            ':aggregating': 'aggregating',
            ':until': now + leaseMs,
            ':now': now,
            ...(open
              ? { ':running': 'running', ':ingesting': 'ingesting' }
              : { ':seen': meta.leaseUntil ?? 0 }),
          },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionalCheckFailed(err)) return false;
      throw err;
    }
  }

  async holdAggregation(runId: string, leaseMs: number): Promise<boolean> {
    const now = this.now();
    try {
      await this.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: runPk(runId), sk: META },
          UpdateExpression: 'SET #lease = :until, #since = :now',
          ConditionExpression: '#s = :aggregating',
          ExpressionAttributeNames: { '#s': 'status', '#lease': 'leaseUntil', '#since': 'statusSince' },
          ExpressionAttributeValues: { ':aggregating': 'aggregating', ':until': now + leaseMs, ':now': now },
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
      await this.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: runPk(runId), sk: META },
          UpdateExpression: `SET #s = :s, #since = :now${finishedAt === undefined ? '' : ', #f = :f'}`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: {
            '#s': 'status',
            '#since': 'statusSince',
            ...(finishedAt === undefined ? {} : { '#f': 'finishedAt' }),
          },
          ExpressionAttributeValues: {
            ':s': status,
            ':now': this.now(),
            ...(finishedAt === undefined ? {} : { ':f': finishedAt }),
          },
        }),
      );
    } catch (err) {
      if (isConditionalCheckFailed(err)) throw new RunNotFoundError(runId);
      throw err;
    }
    if (status === 'done')
      await this.send(
        new DeleteCommand({ TableName: this.tableName, Key: { pk: ACTIVE_PK, sk: activeSk(runId) } }),
      );
  }

  async partCount(runId: string): Promise<number> {
    const meta = await this.requireMeta(runId);
    return meta.suite !== undefined ? 1 : (await this.partsOf(runId, meta)).length;
  }

  /**
   * The runs in the `ACTIVE` partition (written with each run, deleted when it is done), each
   * with its record's status, lease and completeness and its progress: results counted (every
   * slot counter summed: a batch read per hundred slots) and rows handed on.
   */
  async activeRuns(): Promise<ActiveRun[]> {
    const active: ActiveRun[] = [];
    for await (const entry of this.query(
      ACTIVE_PK,
      KEY_PREFIXES.activeRun,
      'runId, watchedProgress, watchedSince',
    )) {
      const runId = String(entry.runId);
      const meta = await this.getMeta(runId);
      if (!meta || meta.status === 'done') continue;
      const counters = await this.counters(runId);
      active.push({
        runId,
        status: meta.status,
        statusSince: meta.statusSince ?? Date.parse(meta.startedAt),
        ...(meta.status === 'aggregating' && meta.leaseUntil !== undefined
          ? { leaseUntil: meta.leaseUntil }
          : {}),
        complete: isComplete(meta),
        progress: (counters?.done ?? 0) + (counters?.failed ?? 0) + (meta.rowsClosed ?? 0),
        ...(entry.watchedProgress === undefined
          ? {}
          : { watched: { progress: Number(entry.watchedProgress), since: Number(entry.watchedSince) } }),
      });
    }
    return active;
  }

  async noteProgress(runId: string, progress: number, since: number): Promise<void> {
    await this.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: ACTIVE_PK, sk: activeSk(runId) },
        UpdateExpression: 'SET #progress = :progress, #since = :since',
        // A run done meanwhile has left the partition: its entry is not brought back.
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#progress': 'watchedProgress', '#since': 'watchedSince' },
        ExpressionAttributeValues: { ':progress': progress, ':since': since },
      }),
    ).catch((err: unknown) => {
      if (!isConditionalCheckFailed(err)) throw err;
    });
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
        if (run?.status === 'done') return this.toRunRecord(run);
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

  /** Of a run this process records results for: that it exists (read once), and whether it has a budget. */
  private runFacts(runId: string): Promise<RunFacts> {
    let facts = this.facts.get(runId);
    if (!facts) {
      facts = this.requireMeta(runId).then(factsOf);
      this.facts.set(runId, facts);
      facts.catch(() => this.facts.delete(runId));
    }
    return facts;
  }

  /** The run's record, or {@link RunNotFoundError} (its results are not an empty set). */
  private async requireMeta(runId: string): Promise<MetaItem> {
    const meta = await this.getMeta(runId);
    if (!meta) throw new RunNotFoundError(runId);
    return meta;
  }

  private async getMeta(runId: string): Promise<MetaItem | undefined> {
    const out = await this.send<{ Item?: Record<string, unknown> }>(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: runPk(runId), sk: META },
        ConsistentRead: true,
      }),
    );
    const meta = out.Item as MetaItem | undefined;
    // A run's facts never change once it is created: any read of its record gives them.
    if (meta && !this.facts.has(runId)) this.facts.set(runId, Promise.resolve(factsOf(meta)));
    return meta;
  }

  /** The parts whose results may exist: every part once their number is known, else those begun so far. */
  private async partsOf(runId: string, meta: MetaItem): Promise<number[]> {
    let count = meta.parts;
    if (count === undefined) {
      count = 1;
      for await (const item of this.query(runPk(runId), PART_PREFIX, 'sk'))
        count = Math.max(count, Number(String(item.sk).slice(PART_PREFIX.length)) + 1);
    }
    return Array.from({ length: count }, (_, part) => part);
  }

  private async toRunRecord(meta: MetaItem): Promise<RunRecord> {
    let spec: SpecItem;
    if (meta.suite !== undefined && meta.prompts !== undefined)
      spec = { suite: meta.suite, prompts: meta.prompts };
    else {
      // Written once, with the record, and never changed: a read that finds it has it as it is,
      // so the cheaper read (half the units of a large item, read by every cold container)
      // serves, and only one that does not find it yet reads again, consistently.
      const read = (consistent: boolean) =>
        this.send<{ Item?: Record<string, unknown> }>(
          new GetCommand({
            TableName: this.tableName,
            Key: { pk: runPk(meta.runId), sk: SPEC_SK },
            ConsistentRead: consistent,
          }),
        );
      const item = (await read(false)).Item ?? (await read(true)).Item;
      spec = { suite: String(item?.suite ?? 'null'), prompts: String(item?.prompts ?? 'null') };
    }
    const total = meta.suite !== undefined ? meta.total : totalOf(meta);
    const run = {
      schemaVersion: meta.schemaVersion,
      runId: meta.runId,
      suiteName: meta.suiteName,
      suite: JSON.parse(spec.suite),
      prompts: JSON.parse(spec.prompts),
      status: meta.status,
      invalidRows: meta.suite !== undefined ? (meta.invalidRows ?? 0) : (meta.invalidClosed ?? 0),
      startedAt: meta.startedAt,
      reportPrefix: meta.reportPrefix,
      datasetKey: meta.datasetKey,
      simulated: meta.simulated,
      ...(total !== undefined ? { total } : {}),
      ...(meta.finishedAt !== undefined ? { finishedAt: meta.finishedAt } : {}),
      ...(meta.datasetVersion !== undefined ? { datasetVersion: meta.datasetVersion } : {}),
    };
    return decodeRun(run, `run ${meta.runId} (DynamoDB ${runPk(meta.runId)})`, this.checkSuite);
  }

  private batchGet(keys: TableKey[], consistent = true): Promise<Record<string, unknown>[]> {
    return batchGetAll(this.client, this.tableName, keys, { consistent, backoff: this.backoff });
  }

  /**
   * One partition's items under a sort-key prefix, page by page, with the given projection;
   * `paced`: each page waits its turn at the results' read pace (see `resultReadUnitsPerSecond`).
   */
  private async *query(
    pk: string,
    prefix: string,
    projection: string,
    paced = false,
  ): AsyncGenerator<Record<string, unknown>> {
    const pace = paced && this.resultReads.paced ? this.resultReads : undefined;
    const pages = paginateQuery(
      { client: this.client, pageSize: this.pageSize },
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
        ProjectionExpression: projection,
        ...(projection.includes('#result') ? { ExpressionAttributeNames: { '#result': 'result' } } : {}),
        ConsistentRead: true,
        ...(pace ? { ReturnConsumedCapacity: 'TOTAL' as const } : {}),
      },
    )[Symbol.asyncIterator]();
    for (;;) {
      const booked = this.pageUnits;
      await pace?.take(booked);
      const page = await pages.next();
      if (page.done) return;
      const units = page.value.ConsumedCapacity?.CapacityUnits;
      if (pace && units !== undefined) {
        pace.charge(units - booked);
        this.pageUnits = units;
      }
      yield* page.value.Items ?? [];
    }
  }
}

/** The rows a counter has counted. */
const counted = (count: CountItem) => count.rows?.size ?? 0;

/** The counter of a row's block, in its block's slot's partition. */
const counterKey = (runId: string, part: number, row: number): TableKey => ({
  pk: resultPk(runId, part, countSlotOf(countBlockOf(row))),
  sk: countSk(countBlockOf(row)),
});

/** A day's spend shards outlive it by a month (then DynamoDB's TTL removes them). */
const DAY_SPEND_TTL_SECONDS = 32 * 24 * 3600;

/** The UTC date of epoch ms `ms`, `yyyy-mm-dd`. */
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function factsOf(meta: MetaItem): RunFacts {
  return {
    budgeted: meta.budgeted === true,
    ...(meta.stopReason === undefined ? {} : { stopReason: String(meta.stopReason) }),
  };
}

/** A result as its item stores it: the result whole (its JSON deflated), and what queries project. */
function resultItem(result: ItemResult, cost: number, deflated: Uint8Array): Record<string, unknown> {
  return {
    pk: resultPk(result.runId, result.part ?? 0, slotOf(result.row)),
    sk: resultSk(result.row, result.itemId),
    type: 'result',
    runId: result.runId,
    itemId: result.itemId,
    status: result.status,
    failureKind: result.failure?.kind,
    costUsd: cost,
    finishedAt: result.finishedAt,
    result: deflated,
  };
}

/**
 * An item's size as DynamoDB counts it toward its 400 KB: each attribute's name and value in
 * UTF-8 bytes; a number as its digits and one byte more (DynamoDB takes at most that); a
 * boolean or null, 1; a set, list or map, 3 bytes and 1 per element over what they hold. A
 * little over DynamoDB's own count, never under it.
 */
export function dynamoItemBytes(item: Record<string, unknown>): number {
  let total = 0;
  for (const [name, value] of Object.entries(item))
    if (value !== undefined) total += Buffer.byteLength(name) + valueBytes(value);
  return total;
}

function valueBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number' || typeof value === 'bigint') return String(value).length + 1;
  if (typeof value === 'boolean' || value === null) return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Set || Array.isArray(value))
    return [...value].reduce((sum: number, v) => sum + 1 + valueBytes(v), 3);
  if (typeof value === 'object')
    return 3 + dynamoItemBytes(value as Record<string, unknown>) + Object.keys(value as object).length;
  return 0;
}

/** Where results were kept before runs were split into parts (read, never written). */
const LEGACY_RESULT_PREFIX = 'RESULT#';

/** True when the run's last part is known and every part has all its results. */
function isComplete(meta: MetaItem): boolean {
  return meta.parts !== undefined && (meta.partsDone ?? 0) >= meta.parts;
}

/** The run's rows, once every part is closed (ingest has handed on the whole dataset). */
function totalOf(meta: MetaItem): number | undefined {
  return meta.parts !== undefined && (meta.partsClosed ?? 0) >= meta.parts
    ? (meta.rowsClosed ?? 0)
    : undefined;
}

/** The counters of a run written whole on its record (before runs came in parts). */
function legacyCounters(meta: MetaItem & { done?: number; failed?: number; spentUsd?: number }): RunCounters {
  return {
    done: Number(meta.done ?? 0),
    failed: Number(meta.failed ?? 0),
    spentUsd: Number(meta.spentUsd ?? 0),
    ...(meta.total !== undefined ? { total: Number(meta.total) } : {}),
  };
}

/** Runs `work` on each value, at most `limit` at a time. */
async function inParallel<T>(
  values: readonly T[],
  limit: number,
  work: (value: T, index: number) => Promise<void>,
) {
  let next = 0;
  const lane = async () => {
    while (next < values.length) {
      const index = next++;
      await work(values[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, values.length) }, lane));
}

/**
 * Slots' result streams merged into one in row order: each stream is sorted by its sort key
 * (`R#<row>#<itemId>`), and two results of one row are always in the same slot, so comparing
 * the rows of the streams' heads orders them (a binary heap of the heads).
 */
async function* mergeByRow(
  streams: AsyncIterable<Record<string, unknown>>[],
): AsyncGenerator<Record<string, unknown>> {
  type Head = { row: number; item: Record<string, unknown>; it: AsyncIterator<Record<string, unknown>> };
  const rowOf = (item: Record<string, unknown>) =>
    Number(String(item.sk).slice(RESULT_PREFIX.length, RESULT_PREFIX.length + 12));
  const heap: Head[] = [];
  const less = (a: Head, b: Head) => a.row < b.row;
  const push = (head: Head) => {
    heap.push(head);
    for (let i = heap.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!less(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  };
  const pop = (): Head => {
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  };
  const firsts = await Promise.all(
    streams.map(async (stream) => {
      const it = stream[Symbol.asyncIterator]();
      const next = await it.next();
      return next.done ? undefined : { row: rowOf(next.value), item: next.value, it };
    }),
  );
  for (const head of firsts) if (head) push(head);
  while (heap.length > 0) {
    const head = pop();
    yield head.item;
    const next = await head.it.next();
    if (!next.done) push({ row: rowOf(next.value), item: next.value, it: head.it });
  }
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
