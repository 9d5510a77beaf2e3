/**
 * An in-memory DynamoDB that speaks its wire protocol (JSON 1.0, `x-amz-target:
 * DynamoDB_20120810.<Op>`) behind the SDK's request handler, counts the capacity every request
 * consumes as an on-demand table bills it, and refuses what DynamoDB would refuse: a partition
 * key past its per-second limit (ProvisionedThroughputExceededException with its throttling
 * reason), a write to an item a transaction in flight holds (TransactionConflict), items over
 * 400 KB, too many actions or keys, malformed or unused expression placeholders, reserved words.
 *
 * Operations: CreateTable, DescribeTable, DeleteTable, ListTables, UpdateTimeToLive,
 * DescribeTimeToLive, GetItem, PutItem, UpdateItem, DeleteItem, Query, BatchGetItem,
 * BatchWriteItem, TransactWriteItems, TransactGetItems. Scan, indexes, streams, PartiQL and the
 * legacy parameters (`Expected`, `AttributeUpdates`, `KeyConditions`…) are not modelled and are
 * refused as such. TTL is recorded but items never expire. A transaction's idempotency token is
 * ignored (a response is never lost here, so the SDK never resends a transaction that ran).
 *
 * Timing: a request waits its simulated latency, then runs at once (atomically) and answers.
 * A TransactWriteItems or TransactGetItems holds its items for the last part of its (longer)
 * latency (`transactionHoldFraction`, from its prepare to its commit) and runs at its end: in
 * that window any other write to those items gets a TransactionConflictException, and another
 * transaction reaching them is cancelled with `TransactionConflict` for them.
 *
 * Capacity: writes 1 unit per KB of the larger of the item before and after (conditional
 * failures included), deletes by the deleted item; reads 1 unit per 4 KB strongly consistent,
 * half eventually; a Query by the total size of the items it read, rounded up to 4 KB; batches
 * per item; transactions twice (a ConditionCheck as a transactional write; a cancelled
 * transaction is charged as if it had run, a throttled one not at all).
 */
import {
  CapacityMeter,
  type CapacityReport,
  type Demand,
  type PartitionLimits,
  type RequestUnitPrices,
  readUnits,
  type TableLimits,
  writeUnits,
} from './dynamo-capacity.js';
import {
  applyUpdate,
  type Condition,
  evaluate,
  type KeyRange,
  keyRange,
  type Parsed,
  type Placeholders,
  parseCondition,
  parseProjection,
  parseUpdate,
  placeholders,
  project,
  type ResolvedPath,
  resolvePath,
} from './dynamo-expressions.js';
import {
  type AttributeValue,
  checkItem,
  compareBinary,
  compareNumbers,
  compareUtf8,
  DynamoError,
  type Item,
  itemSize,
  typeOf,
  validation,
} from './dynamo-values.js';
import {
  type Clock,
  jsonResponse,
  Latency,
  type LatencyOptions,
  type ServiceResponse,
  type SimRequest,
  type SimService,
} from './http.js';
import { SortedKeys } from './sorted-keys.js';

export { DynamoError } from './dynamo-values.js';

const MAX_ITEM_BYTES = 400 * 1024;
const MAX_PAGE_BYTES = 1024 * 1024;
const MAX_TRANSACTION_ACTIONS = 100;
const MAX_TRANSACTION_BYTES = 4 * 1024 * 1024;
const MAX_BATCH_WRITES = 25;
const MAX_BATCH_KEYS = 100;
const MAX_BATCH_GET_BYTES = 16 * 1024 * 1024;
const ACCOUNT = '123456789012';

export interface SimDynamoOptions {
  region?: string;
  /** Latency of every request but transactions. Default 5 ms + up to 2 ms. */
  latency?: LatencyOptions;
  /** Latency of a transaction (its items are held that long). Default 12 ms + up to 4 ms. */
  transactionLatency?: LatencyOptions;
  /**
   * The share of a transaction's latency during which it holds its items (from its prepare to
   * its commit; the rest is the way there). Default 0.8.
   */
  transactionHoldFraction?: number;
  /** Per-partition-key limits. Default 1,000 WRU/s and 3,000 RRU/s. */
  limits?: PartitionLimits;
  /** Each table's warm throughput and quota. Default a new on-demand table's, and the default quota. */
  tableLimits?: TableLimits;
  prices?: RequestUnitPrices;
  /** Seed of the latency draws. Default 1. */
  seed?: number;
}

/** One stored item and its size (DynamoDB's rules). */
interface Stored {
  item: Item;
  size: number;
}

interface KeyAttribute {
  name: string;
  type: 'S' | 'N' | 'B';
}

interface Table {
  name: string;
  arn: string;
  hash: KeyAttribute;
  range: KeyAttribute | undefined;
  /** By partition key value: the items by sort key value. */
  partitions: Map<string, SortedKeys<Stored>>;
  items: number;
  bytes: number;
  createdAt: number;
  billingMode: string;
  ttlAttribute: string | undefined;
  compare: (a: string, b: string) => number;
}

/** An item's place: its table, partition key value and sort key value (as strings). */
interface ItemKey {
  table: Table;
  pk: string;
  sk: string;
  key: Item;
}

export interface DynamoTableReport {
  items: number;
  bytes: number;
  partitions: number;
}

export interface DynamoReport extends CapacityReport {
  conditionalCheckFailures: number;
  transactionConflicts: number;
  transactionsCancelled: number;
  validationErrors: number;
  /** Keys and writes a batch handed back unprocessed because their partition was over its limit. */
  unprocessedItems: number;
  tables: Record<string, DynamoTableReport>;
}

/** What {@link SimDynamo.snapshot} gives: the tables and their items at one moment. */
export interface DynamoSnapshot {
  readonly tables: readonly Table[];
}

function copyTable(table: Table): Table {
  return {
    ...table,
    partitions: new Map([...table.partitions].map(([pk, items]) => [pk, items.clone()])),
  };
}

export class SimDynamo implements SimService {
  private readonly tables = new Map<string, Table>();
  /** Items held by a transaction in flight: item id → transaction id. */
  private readonly locks = new Map<string, number>();
  private transactionSeq = 0;
  private readonly latency: Latency;
  private readonly transactionLatency: Latency;
  private readonly holdFraction: number;
  readonly meter: CapacityMeter;
  readonly region: string;
  private conditionalCheckFailures = 0;
  private transactionConflicts = 0;
  private transactionsCancelled = 0;
  private validationErrors = 0;
  private unprocessedItems = 0;

  constructor(
    private readonly clock: Clock,
    options: SimDynamoOptions = {},
  ) {
    const seed = options.seed ?? 1;
    this.region = options.region ?? 'us-east-1';
    this.latency = new Latency(options.latency?.baseMs ?? 5, options.latency?.jitterMs ?? 2, seed);
    this.transactionLatency = new Latency(
      options.transactionLatency?.baseMs ?? 12,
      options.transactionLatency?.jitterMs ?? 4,
      seed + 1,
    );
    this.holdFraction = Math.min(1, Math.max(0, options.transactionHoldFraction ?? 0.8));
    this.meter = new CapacityMeter(() => clock.now(), options.limits, options.prices, options.tableLimits);
  }

  /** Creates a table directly (what CreateTable does), e.g. before a model starts. */
  createTable(
    name: string,
    hash: KeyAttribute = { name: 'pk', type: 'S' },
    range: KeyAttribute | undefined = { name: 'sk', type: 'S' },
  ): void {
    if (this.tables.has(name))
      throw new DynamoError('ResourceInUseException', `Table already exists: ${name}`);
    const compare = (type: KeyAttribute['type']) =>
      type === 'N' ? compareNumbers : type === 'B' ? compareBinary : compareUtf8;
    this.tables.set(name, {
      name,
      arn: `arn:aws:dynamodb:${this.region}:${ACCOUNT}:table/${name}`,
      hash,
      range,
      partitions: new Map(),
      items: 0,
      bytes: 0,
      createdAt: this.clock.now(),
      billingMode: 'PAY_PER_REQUEST',
      ttlAttribute: undefined,
      compare: compare(range?.type ?? 'S'),
    });
  }

  /** Its tables' bytes now (read at every switch by the heap probe). */
  heldBytes(): number {
    let held = 0;
    for (const table of this.tables.values()) held += table.bytes;
    return held;
  }

  report(topN = 5): DynamoReport {
    return {
      ...this.meter.report(topN),
      conditionalCheckFailures: this.conditionalCheckFailures,
      transactionConflicts: this.transactionConflicts,
      transactionsCancelled: this.transactionsCancelled,
      validationErrors: this.validationErrors,
      unprocessedItems: this.unprocessedItems,
      tables: Object.fromEntries(
        [...this.tables.values()].map((t) => [
          t.name,
          { items: t.items, bytes: t.bytes, partitions: t.partitions.size },
        ]),
      ),
    };
  }

  /**
   * The tables as they are now, for another SimDynamo to {@link restore} (the capacity model
   * replays an invocation alone on the state it started from). Items are never changed in
   * place, so the copy shares them and costs a map entry per item. Transactions in flight are
   * not in it.
   */
  snapshot(): DynamoSnapshot {
    return { tables: [...this.tables.values()].map(copyTable) };
  }

  /** Replaces every table by those of `snapshot` (its capacity counts start from zero). */
  restore(snapshot: DynamoSnapshot): void {
    this.tables.clear();
    for (const table of snapshot.tables) this.tables.set(table.name, copyTable(table));
  }

  /** How many items each partition key of a table holds now. */
  partitionSizes(tableName: string): Map<string, number> {
    const table = this.tables.get(tableName);
    return new Map([...(table?.partitions ?? [])].map(([pk, items]) => [pk, items.size]));
  }

  /** Items of `tableName` whose partition key starts with `pkPrefix` and sort key with `skPrefix`. */
  countItems(tableName: string, pkPrefix: string, skPrefix: string): number {
    let count = 0;
    for (const [pk, items] of this.tables.get(tableName)?.partitions ?? [])
      if (pk.startsWith(pkPrefix))
        for (const sk of items.entries.keys()) if (sk.startsWith(skPrefix)) count += 1;
    return count;
  }

  /** A stored item, as DynamoDB JSON (for tests and reports). */
  peek(tableName: string, key: Item): Item | undefined {
    const table = this.tables.get(tableName);
    if (!table) return undefined;
    const { pk, sk } = this.itemKey(table, key, 'key');
    return table.partitions.get(pk)?.get(sk)?.item;
  }

  async serve(request: SimRequest): Promise<ServiceResponse> {
    const target = request.headers['x-amz-target'] ?? '';
    const operation = target.startsWith('DynamoDB_20120810.')
      ? target.slice('DynamoDB_20120810.'.length)
      : target;
    this.meter.request(operation);
    let input: Record<string, unknown>;
    try {
      input =
        request.body.length > 0 ? (JSON.parse(request.body.toString('utf8')) as Record<string, unknown>) : {};
    } catch {
      return this.error(
        new DynamoError('SerializationException', 'Start of structure or map found where not expected'),
      );
    }
    try {
      return jsonResponse(200, await this.dispatch(operation, input));
    } catch (err) {
      if (err instanceof DynamoError) {
        if (err.code === 'ProvisionedThroughputExceededException') this.meter.refuse(operation);
        if (err.code === 'ValidationException') this.validationErrors += 1;
        return this.error(err);
      }
      throw err;
    }
  }

  private error(err: DynamoError): ServiceResponse {
    const namespace =
      err.code === 'ValidationException'
        ? 'com.amazon.coral.validate'
        : err.code === 'UnknownOperationException'
          ? 'com.amazon.coral.service'
          : 'com.amazonaws.dynamodb.v20120810';
    const messageField = err.code === 'TransactionCanceledException' ? 'Message' : 'message';
    return jsonResponse(err.status, {
      __type: `${namespace}#${err.code}`,
      [messageField]: err.message,
      ...err.extra,
    });
  }

  private async dispatch(operation: string, input: Record<string, unknown>): Promise<unknown> {
    switch (operation) {
      case 'TransactWriteItems':
        return this.transactWrite(input);
      case 'TransactGetItems':
        return this.transactGet(input);
    }
    await this.clock.sleep(this.latency.draw());
    switch (operation) {
      case 'GetItem':
        return this.getItem(input);
      case 'PutItem':
        return this.putItem(input);
      case 'UpdateItem':
        return this.updateItem(input);
      case 'DeleteItem':
        return this.deleteItem(input);
      case 'Query':
        return this.query(input);
      case 'BatchGetItem':
        return this.batchGet(input);
      case 'BatchWriteItem':
        return this.batchWrite(input);
      case 'CreateTable':
        return this.createTableOp(input);
      case 'DescribeTable':
        return { Table: this.describe(this.table(input.TableName)) };
      case 'DeleteTable': {
        const table = this.table(input.TableName);
        this.tables.delete(table.name);
        return { TableDescription: { ...this.describe(table), TableStatus: 'DELETING' } };
      }
      case 'ListTables':
        return { TableNames: [...this.tables.keys()].sort() };
      case 'UpdateTimeToLive': {
        const table = this.table(input.TableName);
        const spec = input.TimeToLiveSpecification as { AttributeName: string; Enabled: boolean };
        table.ttlAttribute = spec.Enabled ? spec.AttributeName : undefined;
        return { TimeToLiveSpecification: spec };
      }
      case 'DescribeTimeToLive': {
        const table = this.table(input.TableName);
        return {
          TimeToLiveDescription: table.ttlAttribute
            ? { TimeToLiveStatus: 'ENABLED', AttributeName: table.ttlAttribute }
            : { TimeToLiveStatus: 'DISABLED' },
        };
      }
      default:
        throw new DynamoError(
          'UnknownOperationException',
          `${operation || 'this operation'} is not modelled by the simulated DynamoDB`,
        );
    }
  }

  // --- Tables ----------------------------------------------------------------------------------

  private createTableOp(input: Record<string, unknown>): unknown {
    const name = String(input.TableName ?? '');
    if (!/^[A-Za-z0-9_.-]{3,255}$/.test(name))
      throw validation(`TableName must be 3 to 255 characters of [a-zA-Z0-9_.-]: ${name}`);
    const schema = (input.KeySchema ?? []) as { AttributeName: string; KeyType: string }[];
    const definitions = (input.AttributeDefinitions ?? []) as {
      AttributeName: string;
      AttributeType: 'S' | 'N' | 'B';
    }[];
    const typeOfKey = (n: string) => {
      const def = definitions.find((d) => d.AttributeName === n);
      if (!def)
        throw validation(
          'One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions',
        );
      return def.AttributeType;
    };
    const hash = schema.find((k) => k.KeyType === 'HASH');
    const range = schema.find((k) => k.KeyType === 'RANGE');
    if (!hash)
      throw validation(
        "1 validation error detected: Value null at 'keySchema' failed to satisfy constraint: Member must not be null",
      );
    if (input.GlobalSecondaryIndexes || input.LocalSecondaryIndexes)
      throw validation('secondary indexes are not modelled by the simulated DynamoDB');
    this.createTable(
      name,
      { name: hash.AttributeName, type: typeOfKey(hash.AttributeName) },
      range ? { name: range.AttributeName, type: typeOfKey(range.AttributeName) } : undefined,
    );
    const table = this.table(name);
    table.billingMode = String(input.BillingMode ?? 'PROVISIONED');
    return { TableDescription: { ...this.describe(table), TableStatus: 'ACTIVE' } };
  }

  private describe(table: Table): Record<string, unknown> {
    const keys = [table.hash, ...(table.range ? [table.range] : [])];
    return {
      TableName: table.name,
      TableArn: table.arn,
      TableId: table.arn,
      TableStatus: 'ACTIVE',
      CreationDateTime: table.createdAt / 1000,
      ItemCount: table.items,
      TableSizeBytes: table.bytes,
      KeySchema: [
        { AttributeName: table.hash.name, KeyType: 'HASH' },
        ...(table.range ? [{ AttributeName: table.range.name, KeyType: 'RANGE' }] : []),
      ],
      AttributeDefinitions: keys.map((k) => ({ AttributeName: k.name, AttributeType: k.type })),
      BillingModeSummary: { BillingMode: table.billingMode },
      ProvisionedThroughput: { ReadCapacityUnits: 0, WriteCapacityUnits: 0, NumberOfDecreasesToday: 0 },
    };
  }

  private table(name: unknown): Table {
    const table = this.tables.get(String(name));
    if (!table) throw new DynamoError('ResourceNotFoundException', 'Requested resource not found');
    return table;
  }

  /** The item's place from a key or a whole item, checked against the table's key schema. */
  private itemKey(table: Table, given: Item, as: 'key' | 'item'): ItemKey {
    const attributes = [table.hash, ...(table.range ? [table.range] : [])];
    if (as === 'key' && Object.keys(given).length !== attributes.length) {
      throw validation('The provided key element does not match the schema');
    }
    const values: string[] = [];
    const key: Item = {};
    for (const attribute of attributes) {
      const value = given[attribute.name];
      if (value === undefined) {
        throw validation(
          as === 'key'
            ? 'The provided key element does not match the schema'
            : `One or more parameter values were invalid: Missing the key ${attribute.name} in the item`,
        );
      }
      const type = typeOf(value);
      if (type !== attribute.type) {
        throw validation(
          `One or more parameter values were invalid: Type mismatch for key ${attribute.name} expected: ${attribute.type} actual: ${type}`,
        );
      }
      const text = value[attribute.type]!;
      if (text === '') {
        throw validation(
          `One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty ${attribute.type === 'S' ? 'string' : 'binary'} value. Key: ${attribute.name}`,
        );
      }
      const limit = attribute === table.hash ? 2048 : 1024;
      if (Buffer.byteLength(text) > limit) {
        throw validation(
          `One or more parameter values were invalid: Size of ${attribute === table.hash ? 'hashkey' : 'rangekey'} has exceeded the maximum size limit of ${limit} bytes`,
        );
      }
      values.push(text);
      key[attribute.name] = value;
    }
    return { table, pk: values[0]!, sk: values[1] ?? '', key };
  }

  private lookup(where: ItemKey): Stored | undefined {
    return where.table.partitions.get(where.pk)?.get(where.sk);
  }

  private store(where: ItemKey, item: Item | undefined, size = 0): void {
    const { table } = where;
    let partition = table.partitions.get(where.pk);
    if (item === undefined) {
      const before = partition?.delete(where.sk);
      if (before) {
        table.items -= 1;
        table.bytes -= before.size;
        if (partition!.size === 0) table.partitions.delete(where.pk);
      }
      return;
    }
    if (!partition) {
      partition = new SortedKeys<Stored>(table.compare);
      table.partitions.set(where.pk, partition);
    }
    const before = partition.set(where.sk, { item, size });
    table.items += before ? 0 : 1;
    table.bytes += size - (before?.size ?? 0);
  }

  private lockId(where: ItemKey): string {
    return `${where.table.name}\u0000${where.pk}\u0000${where.sk}`;
  }

  /** Refuses a single write to an item a transaction in flight holds. */
  private checkNotLocked(where: ItemKey): void {
    if (this.locks.has(this.lockId(where))) {
      this.transactionConflicts += 1;
      throw new DynamoError('TransactionConflictException', 'Transaction is ongoing for the item');
    }
  }

  private throttle(table: Table, kind: 'read' | 'write'): DynamoError {
    return new DynamoError(
      'ProvisionedThroughputExceededException',
      'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.',
      {
        ThrottlingReasons: [
          {
            reason:
              kind === 'write'
                ? 'TableWriteKeyRangeThroughputExceeded'
                : 'TableReadKeyRangeThroughputExceeded',
            resource: table.arn,
          },
        ],
      },
    );
  }

  /** Refuses the request when one of its demands takes a partition past its limit. */
  private admit(demands: Demand[], table: Table): void {
    const over = this.meter.over(demands);
    if (over.size > 0) {
      this.meter.decline(demands);
      throw this.throttle(table, demands[[...over][0]!]!.kind);
    }
  }

  // --- Single-item operations ------------------------------------------------------------------

  private getItem(input: Record<string, unknown>): unknown {
    const table = this.table(input.TableName);
    const where = this.itemKey(table, checkItem(input.Key, 'Key'), 'key');
    const projection =
      input.ProjectionExpression === undefined
        ? undefined
        : parseProjection(String(input.ProjectionExpression));
    const ctx = placeholders(projection ? [projection] : [], input.ExpressionAttributeNames, undefined);
    const consistent = input.ConsistentRead === true;
    const stored = this.lookup(where);
    const demands: Demand[] = [
      { table: table.name, pk: where.pk, kind: 'read', units: readUnits(stored?.size ?? 0, consistent) },
    ];
    this.admit(demands, table);
    this.meter.charge('GetItem', demands);
    const item =
      stored &&
      (projection
        ? project(
            stored.item,
            projection.tree.map((p) => resolvePath(p, ctx)),
          )
        : stored.item);
    return { ...(item ? { Item: item } : {}), ...consumed(input, table, demands) };
  }

  private putItem(input: Record<string, unknown>): unknown {
    const table = this.table(input.TableName);
    const item = checkItem(input.Item);
    const where = this.itemKey(table, item, 'item');
    const size = checkSize(item);
    const condition = optionalCondition(input.ConditionExpression);
    const ctx = placeholders(
      condition ? [condition] : [],
      input.ExpressionAttributeNames,
      input.ExpressionAttributeValues,
    );
    const returnValues = returnValuesOf(input.ReturnValues, ['NONE', 'ALL_OLD']);
    const before = this.lookup(where);
    this.checkNotLocked(where);
    const demands: Demand[] = [
      {
        table: table.name,
        pk: where.pk,
        kind: 'write',
        units: writeUnits(Math.max(size, before?.size ?? 0)),
      },
    ];
    this.admit(demands, table);
    this.meter.charge('PutItem', demands);
    if (condition && !evaluate(condition.tree, before?.item ?? {}, ctx))
      throw this.conditionFailed(input, before);
    this.store(where, item, size);
    return {
      ...(returnValues === 'ALL_OLD' && before ? { Attributes: before.item } : {}),
      ...consumed(input, table, demands),
    };
  }

  private updateItem(input: Record<string, unknown>): unknown {
    if (input.AttributeUpdates !== undefined || input.Expected !== undefined) {
      throw validation(
        'the legacy AttributeUpdates and Expected parameters are not modelled by the simulated DynamoDB',
      );
    }
    const table = this.table(input.TableName);
    const where = this.itemKey(table, checkItem(input.Key, 'Key'), 'key');
    const update =
      input.UpdateExpression === undefined ? undefined : parseUpdate(String(input.UpdateExpression));
    const condition = optionalCondition(input.ConditionExpression);
    const ctx = placeholders(
      present(update, condition),
      input.ExpressionAttributeNames,
      input.ExpressionAttributeValues,
    );
    const returnValues = returnValuesOf(input.ReturnValues, [
      'NONE',
      'ALL_OLD',
      'UPDATED_OLD',
      'ALL_NEW',
      'UPDATED_NEW',
    ]);
    const before = this.lookup(where);
    this.checkNotLocked(where);
    let after: { item: Item; touched: ResolvedPath[] } | undefined;
    let invalid: unknown;
    try {
      after = update
        ? applyUpdate(update, before?.item ?? where.key, ctx, keyNames(table))
        : { item: before?.item ?? where.key, touched: [] };
    } catch (err) {
      invalid = err;
    }
    const afterSize = after ? itemSize(after.item) : 0;
    const demands: Demand[] = [
      {
        table: table.name,
        pk: where.pk,
        kind: 'write',
        units: writeUnits(Math.max(afterSize, before?.size ?? 0)),
      },
    ];
    this.admit(demands, table);
    this.meter.charge('UpdateItem', demands);
    if (condition && !evaluate(condition.tree, before?.item ?? {}, ctx))
      throw this.conditionFailed(input, before);
    if (invalid !== undefined || !after) throw invalid;
    if (afterSize > MAX_ITEM_BYTES)
      throw validation('Item size to update has exceeded the maximum allowed size');
    this.store(where, after.item, afterSize);
    // UPDATED_OLD and UPDATED_NEW give only what the update named, nested paths included.
    const pick = (item: Item | undefined) => {
      const picked = item && project(item, after!.touched);
      return picked && Object.keys(picked).length > 0 ? picked : undefined;
    };
    const attributes =
      returnValues === 'ALL_NEW'
        ? after.item
        : returnValues === 'ALL_OLD'
          ? before?.item
          : returnValues === 'UPDATED_NEW'
            ? pick(after.item)
            : returnValues === 'UPDATED_OLD'
              ? pick(before?.item)
              : undefined;
    return { ...(attributes ? { Attributes: attributes } : {}), ...consumed(input, table, demands) };
  }

  private deleteItem(input: Record<string, unknown>): unknown {
    const table = this.table(input.TableName);
    const where = this.itemKey(table, checkItem(input.Key, 'Key'), 'key');
    const condition = optionalCondition(input.ConditionExpression);
    const ctx = placeholders(
      condition ? [condition] : [],
      input.ExpressionAttributeNames,
      input.ExpressionAttributeValues,
    );
    const returnValues = returnValuesOf(input.ReturnValues, ['NONE', 'ALL_OLD']);
    const before = this.lookup(where);
    this.checkNotLocked(where);
    const demands: Demand[] = [
      { table: table.name, pk: where.pk, kind: 'write', units: writeUnits(before?.size ?? 0) },
    ];
    this.admit(demands, table);
    this.meter.charge('DeleteItem', demands);
    if (condition && !evaluate(condition.tree, before?.item ?? {}, ctx))
      throw this.conditionFailed(input, before);
    this.store(where, undefined);
    return {
      ...(returnValues === 'ALL_OLD' && before ? { Attributes: before.item } : {}),
      ...consumed(input, table, demands),
    };
  }

  private conditionFailed(input: Record<string, unknown>, before: Stored | undefined): DynamoError {
    this.conditionalCheckFailures += 1;
    const withItem = input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && before;
    return new DynamoError(
      'ConditionalCheckFailedException',
      'The conditional request failed',
      withItem ? { Item: before.item } : {},
    );
  }

  // --- Query -----------------------------------------------------------------------------------

  private query(input: Record<string, unknown>): unknown {
    for (const legacy of ['KeyConditions', 'QueryFilter', 'AttributesToGet', 'ConditionalOperator']) {
      if (input[legacy] !== undefined)
        throw validation(`the legacy ${legacy} parameter is not modelled by the simulated DynamoDB`);
    }
    if (input.IndexName !== undefined) throw validation('indexes are not modelled by the simulated DynamoDB');
    const table = this.table(input.TableName);
    if (input.KeyConditionExpression === undefined)
      throw validation(
        'Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.',
      );
    const keyCondition = parseCondition(String(input.KeyConditionExpression), 'KeyCondition');
    const filter = optionalCondition(input.FilterExpression, 'Filter');
    const projection =
      input.ProjectionExpression === undefined
        ? undefined
        : parseProjection(String(input.ProjectionExpression));
    const ctx = placeholders(
      present(keyCondition, filter, projection),
      input.ExpressionAttributeNames,
      input.ExpressionAttributeValues,
    );
    const range = keyRange(keyCondition, ctx, table.hash.name, table.range?.name);
    if (filter) {
      const keys = keyNames(table);
      if (mentions(filter.tree, ctx).some((name) => keys.includes(name))) {
        throw validation(
          `Filter Expression can only contain non-primary key attributes: Primary key attribute: ${keys.find((k) => mentions(filter.tree, ctx).includes(k))}`,
        );
      }
    }
    const select = String(input.Select ?? (projection ? 'SPECIFIC_ATTRIBUTES' : 'ALL_ATTRIBUTES'));
    if (!['ALL_ATTRIBUTES', 'SPECIFIC_ATTRIBUTES', 'COUNT'].includes(select))
      throw validation(`Select ${select} is not valid for a table query`);
    if (select === 'COUNT' && projection)
      throw validation('Cannot specify the ProjectionExpression when choosing to get only the COUNT');
    const limit = input.Limit === undefined ? Number.POSITIVE_INFINITY : Number(input.Limit);
    if (!(limit >= 1))
      throw validation(
        "1 validation error detected: Value at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1",
      );
    const forward = input.ScanIndexForward !== false;
    const consistent = input.ConsistentRead === true;
    const pkValue = range.partition[table.hash.type];
    if (pkValue === undefined)
      throw validation(
        'One or more parameter values were invalid: Condition parameter type does not match schema type',
      );
    const partition = table.partitions.get(pkValue);
    const keys = partition ? partition.ordered() : [];
    let [lo, hi] = this.sortRange(table, keys, range);
    if (input.ExclusiveStartKey !== undefined) {
      const start = this.itemKey(table, checkItem(input.ExclusiveStartKey, 'ExclusiveStartKey'), 'key');
      if (start.pk !== pkValue)
        throw validation(
          'The provided starting key is invalid: The provided key element does not match the schema',
        );
      if (forward) lo = Math.max(lo, upperBound(keys, start.sk, table.compare));
      else hi = Math.min(hi, lowerBound(keys, start.sk, table.compare));
    }
    const paths = projection?.tree.map((p) => resolvePath(p, ctx));
    const items: Item[] = [];
    let scanned = 0;
    let count = 0;
    let bytes = 0;
    let last: string | undefined;
    const total = Math.max(0, hi - lo);
    for (let n = 0; n < total && scanned < limit && bytes < MAX_PAGE_BYTES; n++) {
      const sk = keys[forward ? lo + n : hi - 1 - n]!;
      const stored = partition!.get(sk)!;
      scanned += 1;
      bytes += stored.size;
      last = sk;
      if (filter && !evaluate(filter.tree, stored.item, ctx)) continue;
      count += 1;
      if (select !== 'COUNT') items.push(paths ? project(stored.item, paths) : stored.item);
    }
    // DynamoDB hands back where it stopped whenever the limit or the 1 MB page stopped it, even
    // when nothing is left: the caller learns the end from an empty page.
    const stoppedEarly = last !== undefined && (scanned >= limit || bytes >= MAX_PAGE_BYTES);
    const demands: Demand[] = [
      { table: table.name, pk: pkValue, kind: 'read', units: readUnits(bytes, consistent) },
    ];
    this.admit(demands, table);
    this.meter.charge('Query', demands);
    const lastKey = stoppedEarly && last !== undefined ? this.keyItem(table, pkValue, last) : undefined;
    return {
      ...(select === 'COUNT' ? {} : { Items: items }),
      Count: count,
      ScannedCount: scanned,
      ...(lastKey ? { LastEvaluatedKey: lastKey } : {}),
      ...consumed(input, table, demands),
    };
  }

  /** The index range [lo, hi) of the sort keys a key condition selects. */
  private sortRange(table: Table, keys: readonly string[], range: KeyRange): [number, number] {
    const sort = range.sort;
    if (!sort || !table.range) return [0, keys.length];
    const type = table.range.type;
    const sortValue = (v: AttributeValue) => {
      const text = v[type];
      if (text === undefined)
        throw validation(
          'One or more parameter values were invalid: Condition parameter type does not match schema type',
        );
      return text;
    };
    const cmp = table.compare;
    switch (sort.op) {
      case '=':
        return [lowerBound(keys, sortValue(sort.value), cmp), upperBound(keys, sortValue(sort.value), cmp)];
      case '<':
        return [0, lowerBound(keys, sortValue(sort.value), cmp)];
      case '<=':
        return [0, upperBound(keys, sortValue(sort.value), cmp)];
      case '>':
        return [upperBound(keys, sortValue(sort.value), cmp), keys.length];
      case '>=':
        return [lowerBound(keys, sortValue(sort.value), cmp), keys.length];
      case 'between':
        return [lowerBound(keys, sortValue(sort.low), cmp), upperBound(keys, sortValue(sort.high), cmp)];
      case 'begins_with': {
        if (type === 'N')
          throw validation(
            'Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N',
          );
        const prefix = sortValue(sort.value);
        const lo = lowerBound(keys, prefix, cmp);
        const starts = (k: string) =>
          type === 'B'
            ? Buffer.from(k, 'base64')
                .subarray(0, Buffer.byteLength(prefix, 'base64'))
                .equals(Buffer.from(prefix, 'base64'))
            : k.startsWith(prefix);
        let a = lo;
        let b = keys.length;
        while (a < b) {
          const mid = (a + b) >> 1;
          if (starts(keys[mid]!)) a = mid + 1;
          else b = mid;
        }
        return [lo, a];
      }
    }
  }

  private keyItem(table: Table, pk: string, sk: string): Item {
    return {
      [table.hash.name]: { [table.hash.type]: pk },
      ...(table.range ? { [table.range.name]: { [table.range.type]: sk } } : {}),
    };
  }

  // --- Batches ---------------------------------------------------------------------------------

  private batchGet(input: Record<string, unknown>): unknown {
    const requests = (input.RequestItems ?? {}) as Record<string, Record<string, unknown>>;
    const entries = Object.entries(requests);
    if (entries.length === 0)
      throw validation(
        "1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1",
      );
    const plans = entries.map(([name, request]) => {
      const table = this.table(name);
      const projection =
        request.ProjectionExpression === undefined
          ? undefined
          : parseProjection(String(request.ProjectionExpression));
      const ctx = placeholders(projection ? [projection] : [], request.ExpressionAttributeNames, undefined);
      const keys = ((request.Keys ?? []) as unknown[]).map((k) =>
        this.itemKey(table, checkItem(k, 'Key'), 'key'),
      );
      const ids = new Set(keys.map((k) => `${k.pk}\u0000${k.sk}`));
      if (ids.size !== keys.length) throw validation('Provided list of item keys contains duplicates');
      return { table, request, projection, ctx, keys, consistent: request.ConsistentRead === true };
    });
    const total = plans.reduce((n, p) => n + p.keys.length, 0);
    if (total > MAX_BATCH_KEYS) throw validation(`Too many items requested for the BatchGetItem call`);
    if (total === 0)
      throw validation(
        "1 validation error detected: Value at 'requestItems.keys' failed to satisfy constraint: Member must have length greater than or equal to 1",
      );

    const responses: Record<string, Item[]> = {};
    const unprocessed: Record<string, Record<string, unknown>> = {};
    const charged: Demand[] = [];
    let bytes = 0;
    let throttled = 0;
    for (const plan of plans) {
      const { table, ctx, projection, consistent } = plan;
      const paths = projection?.tree.map((p) => resolvePath(p, ctx));
      for (const where of plan.keys) {
        const stored = this.lookup(where);
        const demand: Demand = {
          table: table.name,
          pk: where.pk,
          kind: 'read',
          units: readUnits(stored?.size ?? 0, consistent),
        };
        if (
          bytes >= MAX_BATCH_GET_BYTES ||
          this.meter.over([...charged.filter((d) => d.pk === where.pk && d.table === table.name), demand])
            .size > 0
        ) {
          if (bytes < MAX_BATCH_GET_BYTES) {
            throttled += 1;
            this.meter.decline([demand]);
          }
          unprocessed[table.name] ??= { ...plan.request, Keys: [] };
          (unprocessed[table.name]!.Keys as Item[]).push(where.key);
          continue;
        }
        charged.push(demand);
        if (!stored) continue;
        bytes += stored.size;
        responses[table.name] ??= [];
        responses[table.name]!.push(paths ? project(stored.item, paths) : stored.item);
      }
    }
    if (throttled === total) throw this.throttle(plans[0]!.table, 'read');
    this.unprocessedItems += throttled;
    this.meter.charge('BatchGetItem', charged);
    for (const plan of plans) responses[plan.table.name] ??= [];
    return { Responses: responses, UnprocessedKeys: unprocessed, ...consumedMany(input, charged) };
  }

  private batchWrite(input: Record<string, unknown>): unknown {
    const requests = (input.RequestItems ?? {}) as Record<
      string,
      { PutRequest?: { Item: unknown }; DeleteRequest?: { Key: unknown } }[]
    >;
    const writes: { table: Table; where: ItemKey; item: Item | undefined; size: number; raw: unknown }[] = [];
    for (const [name, list] of Object.entries(requests)) {
      const table = this.table(name);
      for (const raw of list) {
        if (raw.PutRequest) {
          const item = checkItem(raw.PutRequest.Item);
          writes.push({ table, where: this.itemKey(table, item, 'item'), item, size: checkSize(item), raw });
        } else if (raw.DeleteRequest) {
          writes.push({
            table,
            where: this.itemKey(table, checkItem(raw.DeleteRequest.Key, 'Key'), 'key'),
            item: undefined,
            size: 0,
            raw,
          });
        } else {
          throw validation(
            'Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes',
          );
        }
      }
    }
    if (writes.length === 0)
      throw validation(
        "1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1",
      );
    if (writes.length > MAX_BATCH_WRITES) {
      throw validation(
        "1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]",
      );
    }
    const ids = new Set(writes.map((w) => this.lockId(w.where)));
    if (ids.size !== writes.length) throw validation('Provided list of item keys contains duplicates');

    const unprocessed: Record<string, unknown[]> = {};
    const charged: Demand[] = [];
    let throttled = 0;
    for (const write of writes) {
      const before = this.lookup(write.where);
      const demand: Demand = {
        table: write.table.name,
        pk: write.where.pk,
        kind: 'write',
        units: writeUnits(Math.max(write.size, before?.size ?? 0)),
      };
      const locked = this.locks.has(this.lockId(write.where));
      const over =
        !locked &&
        this.meter.over([...charged.filter((d) => d.pk === demand.pk && d.table === demand.table), demand])
          .size > 0;
      if (locked || over) {
        if (over) {
          throttled += 1;
          this.meter.decline([demand]);
        }
        if (locked) this.transactionConflicts += 1;
        unprocessed[write.table.name] ??= [];
        unprocessed[write.table.name]!.push(write.raw);
        continue;
      }
      charged.push(demand);
      this.store(write.where, write.item, write.size);
    }
    if (throttled === writes.length) throw this.throttle(writes[0]!.table, 'write');
    this.unprocessedItems += throttled;
    this.meter.charge('BatchWriteItem', charged);
    return { UnprocessedItems: unprocessed, ...consumedMany(input, charged) };
  }

  // --- Transactions ----------------------------------------------------------------------------

  private async transactWrite(input: Record<string, unknown>): Promise<unknown> {
    const actions = (input.TransactItems ?? []) as Record<string, Record<string, unknown>>[];
    if (actions.length === 0)
      throw validation(
        "1 validation error detected: Value null at 'transactItems' failed to satisfy constraint: Member must not be null",
      );
    if (actions.length > MAX_TRANSACTION_ACTIONS) {
      throw validation(
        `1 validation error detected: Value '[${actions.length} items]' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to ${MAX_TRANSACTION_ACTIONS}`,
      );
    }
    const plans = actions.map((action) => this.planAction(action));
    const ids = plans.map((p) => this.lockId(p.where));
    if (new Set(ids).size !== ids.length)
      throw validation('Transaction request cannot include multiple operations on one item');
    const bytes = plans.reduce((n, p) => n + p.size, 0);
    if (bytes > MAX_TRANSACTION_BYTES)
      throw validation('Transaction size has exceeded the maximum allowed size of 4 MB');

    const id = ++this.transactionSeq;
    const latency = this.transactionLatency.draw();
    await this.clock.sleep(latency * (1 - this.holdFraction));
    const conflicting = ids.map((lockId) => this.locks.has(lockId));
    const conflict = conflicting.some(Boolean);
    if (!conflict) for (const lockId of ids) this.locks.set(lockId, id);
    try {
      await this.clock.sleep(latency * this.holdFraction);
    } finally {
      if (!conflict) for (const lockId of ids) if (this.locks.get(lockId) === id) this.locks.delete(lockId);
    }
    if (conflict) {
      this.transactionConflicts += 1;
      throw this.cancelled(
        conflicting.map((c) =>
          c
            ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }
            : { Code: 'None' },
        ),
      );
    }

    const outcomes = plans.map((plan) => this.evaluateAction(plan));
    const demands: Demand[] = outcomes.map((o, i) => ({
      table: plans[i]!.where.table.name,
      pk: plans[i]!.where.pk,
      kind: 'write',
      units: 2 * writeUnits(o.units),
    }));
    const over = this.meter.over(demands);
    if (over.size > 0) {
      this.meter.refuse('TransactWriteItems');
      this.meter.decline(demands);
      throw this.cancelled(
        demands.map((_, i) =>
          over.has(i)
            ? {
                Code: 'ThrottlingError',
                Message:
                  'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html.',
              }
            : { Code: 'None' },
        ),
        false,
      );
    }
    this.meter.charge('TransactWriteItems', demands);
    const failed = outcomes.map((o) => o.failure);
    const invalid = failed.find(
      (f): f is DynamoError => f instanceof DynamoError && f.code === 'ValidationException',
    );
    if (invalid) {
      throw this.cancelled(
        failed.map((f) =>
          f instanceof DynamoError && f.code === 'ValidationException'
            ? { Code: 'ValidationError', Message: f.message }
            : { Code: 'None' },
        ),
      );
    }
    if (failed.some((f) => f !== undefined)) {
      this.conditionalCheckFailures += failed.filter(Boolean).length;
      throw this.cancelled(
        failed.map((f, i) =>
          f
            ? {
                Code: 'ConditionalCheckFailed',
                Message: 'The conditional request failed',
                ...(plans[i]!.returnOnFailure && outcomes[i]!.before
                  ? { Item: outcomes[i]!.before!.item }
                  : {}),
              }
            : { Code: 'None' },
        ),
      );
    }
    for (const [i, plan] of plans.entries()) {
      const after = outcomes[i]!.after;
      if (plan.kind !== 'ConditionCheck') this.store(plan.where, after?.item, after?.size ?? 0);
    }
    return consumedMany(input, demands);
  }

  private cancelled(reasons: Record<string, unknown>[], count = true): DynamoError {
    if (count) this.transactionsCancelled += 1;
    return new DynamoError(
      'TransactionCanceledException',
      `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
      { CancellationReasons: reasons },
    );
  }

  /** Checks one action of a TransactWriteItems before it waits its turn. */
  private planAction(action: Record<string, Record<string, unknown>>) {
    const kinds = ['Put', 'Update', 'Delete', 'ConditionCheck'] as const;
    const kind = kinds.find((k) => action[k] !== undefined);
    if (!kind || Object.keys(action).length !== 1)
      throw validation('TransactItems can only contain one of Check, Put, Update or Delete');
    const body = action[kind]!;
    const table = this.table(body.TableName);
    const item = kind === 'Put' ? checkItem(body.Item) : undefined;
    const where = item
      ? this.itemKey(table, item, 'item')
      : this.itemKey(table, checkItem(body.Key, 'Key'), 'key');
    const size = item ? checkSize(item) : 0;
    const update = kind === 'Update' ? parseUpdate(String(body.UpdateExpression)) : undefined;
    if (kind === 'ConditionCheck' && body.ConditionExpression === undefined)
      throw validation('The ConditionCheck must have a ConditionExpression');
    const condition = optionalCondition(body.ConditionExpression);
    const ctx = placeholders(
      present(update, condition),
      body.ExpressionAttributeNames,
      body.ExpressionAttributeValues,
    );
    return {
      kind,
      where,
      item,
      size,
      update,
      condition,
      ctx,
      returnOnFailure: body.ReturnValuesOnConditionCheckFailure === 'ALL_OLD',
    };
  }

  /** What one action would do now: its condition's verdict, the item after it, its size for capacity. */
  private evaluateAction(plan: ReturnType<SimDynamo['planAction']>): {
    failure: DynamoError | true | undefined;
    before: Stored | undefined;
    after: Stored | undefined;
    units: number;
  } {
    const before = this.lookup(plan.where);
    const holds = !plan.condition || evaluate(plan.condition.tree, before?.item ?? {}, plan.ctx);
    let after: Stored | undefined;
    let failure: DynamoError | true | undefined = holds ? undefined : true;
    if (plan.kind === 'Put') after = { item: plan.item!, size: plan.size };
    if (plan.kind === 'Update' && holds) {
      try {
        const updated = applyUpdate(
          plan.update!,
          before?.item ?? plan.where.key,
          plan.ctx,
          keyNames(plan.where.table),
        );
        const size = itemSize(updated.item);
        if (size > MAX_ITEM_BYTES)
          throw validation('Item size to update has exceeded the maximum allowed size');
        after = { item: updated.item, size };
      } catch (err) {
        if (!(err instanceof DynamoError)) throw err;
        failure = err;
      }
    }
    if (plan.kind === 'ConditionCheck') after = before;
    return { failure, before, after, units: Math.max(before?.size ?? 0, after?.size ?? 0) };
  }

  private async transactGet(input: Record<string, unknown>): Promise<unknown> {
    const entries = (input.TransactItems ?? []) as { Get?: Record<string, unknown> }[];
    if (entries.length === 0 || entries.length > MAX_TRANSACTION_ACTIONS) {
      throw validation(
        `1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to ${MAX_TRANSACTION_ACTIONS}`,
      );
    }
    const plans = entries.map((entry) => {
      if (!entry.Get) throw validation('TransactGetItems entries must each be a Get');
      const table = this.table(entry.Get.TableName);
      const where = this.itemKey(table, checkItem(entry.Get.Key, 'Key'), 'key');
      const projection =
        entry.Get.ProjectionExpression === undefined
          ? undefined
          : parseProjection(String(entry.Get.ProjectionExpression));
      const ctx = placeholders(projection ? [projection] : [], entry.Get.ExpressionAttributeNames, undefined);
      return { where, projection, ctx };
    });
    const ids = plans.map((p) => this.lockId(p.where));
    if (new Set(ids).size !== ids.length)
      throw validation('Transaction request cannot include multiple operations on one item');
    const latency = this.transactionLatency.draw();
    await this.clock.sleep(latency * (1 - this.holdFraction));
    const conflicting = ids.map((id) => this.locks.has(id));
    await this.clock.sleep(latency * this.holdFraction);
    if (conflicting.some(Boolean)) {
      this.transactionConflicts += 1;
      throw this.cancelled(
        conflicting.map((c) =>
          c
            ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }
            : { Code: 'None' },
        ),
      );
    }
    const stored = plans.map((p) => this.lookup(p.where));
    const demands: Demand[] = plans.map((p, i) => ({
      table: p.where.table.name,
      pk: p.where.pk,
      kind: 'read',
      units: 2 * readUnits(stored[i]?.size ?? 0, true),
    }));
    const over = this.meter.over(demands);
    if (over.size > 0) {
      this.meter.refuse('TransactGetItems');
      this.meter.decline(demands);
      throw this.cancelled(
        demands.map((_, i) =>
          over.has(i)
            ? {
                Code: 'ThrottlingError',
                Message: 'Throughput exceeds the current capacity of your table or index.',
              }
            : { Code: 'None' },
        ),
        false,
      );
    }
    this.meter.charge('TransactGetItems', demands);
    return {
      Responses: plans.map((p, i) => {
        const item = stored[i]?.item;
        if (!item) return {};
        return {
          Item: p.projection
            ? project(
                item,
                p.projection.tree.map((path) => resolvePath(path, p.ctx)),
              )
            : item,
        };
      }),
      ...consumedMany(input, demands),
    };
  }
}

/** The expressions a request carries. */
function present(...expressions: (Parsed<unknown> | undefined)[]): Parsed<unknown>[] {
  return expressions.filter((e): e is Parsed<unknown> => e !== undefined);
}

function optionalCondition(
  text: unknown,
  kind: 'Condition' | 'Filter' = 'Condition',
): Parsed<Condition> | undefined {
  return text === undefined ? undefined : parseCondition(String(text), kind);
}

function checkSize(item: Item): number {
  const size = itemSize(item);
  if (size > MAX_ITEM_BYTES) throw validation('Item size has exceeded the maximum allowed size');
  return size;
}

function keyNames(table: Table): string[] {
  return [table.hash.name, ...(table.range ? [table.range.name] : [])];
}

function returnValuesOf(value: unknown, allowed: string[]): string {
  const text = value === undefined ? 'NONE' : String(value);
  if (!allowed.includes(text)) throw validation('Return values set to invalid value');
  return text;
}

/** The top-level attribute names a condition reads. */
function mentions(condition: Condition, ctx: Placeholders): string[] {
  const names: string[] = [];
  const visitOperand = (operand: unknown) => {
    const o = operand as { kind: string; path?: unknown };
    if (o.kind === 'path') names.push(String(resolvePath(o as never, ctx)[0]));
    if (o.kind === 'size') visitOperand(o.path);
  };
  const visit = (c: Condition): void => {
    switch (c.kind) {
      case 'and':
      case 'or':
        visit(c.left);
        visit(c.right);
        return;
      case 'not':
        visit(c.operand);
        return;
      case 'compare':
        visitOperand(c.left);
        visitOperand(c.right);
        return;
      case 'between':
        [c.operand, c.low, c.high].forEach(visitOperand);
        return;
      case 'in':
        [c.operand, ...c.list].forEach(visitOperand);
        return;
      case 'function':
        c.args.forEach(visitOperand);
    }
  };
  visit(condition);
  return names;
}

function lowerBound(
  keys: readonly string[],
  value: string,
  compare: (a: string, b: string) => number,
): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compare(keys[mid]!, value) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function upperBound(
  keys: readonly string[],
  value: string,
  compare: (a: string, b: string) => number,
): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compare(keys[mid]!, value) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function consumed(input: Record<string, unknown>, table: Table, demands: Demand[]): Record<string, unknown> {
  if (input.ReturnConsumedCapacity !== 'TOTAL' && input.ReturnConsumedCapacity !== 'INDEXES') return {};
  const units = demands.reduce((n, d) => n + d.units, 0);
  const kind = demands[0]?.kind === 'write' ? 'WriteCapacityUnits' : 'ReadCapacityUnits';
  return {
    ConsumedCapacity: {
      TableName: table.name,
      CapacityUnits: units,
      [kind]: units,
      ...(input.ReturnConsumedCapacity === 'INDEXES'
        ? { Table: { CapacityUnits: units, [kind]: units } }
        : {}),
    },
  };
}

function consumedMany(input: Record<string, unknown>, demands: Demand[]): Record<string, unknown> {
  if (input.ReturnConsumedCapacity !== 'TOTAL' && input.ReturnConsumedCapacity !== 'INDEXES') return {};
  const byTable = new Map<string, { read: number; write: number }>();
  for (const d of demands) {
    const entry = byTable.get(d.table) ?? { read: 0, write: 0 };
    entry[d.kind] += d.units;
    byTable.set(d.table, entry);
  }
  return {
    ConsumedCapacity: [...byTable].map(([TableName, { read, write }]) => ({
      TableName,
      CapacityUnits: read + write,
      ...(read > 0 ? { ReadCapacityUnits: read } : {}),
      ...(write > 0 ? { WriteCapacityUnits: write } : {}),
    })),
  };
}
