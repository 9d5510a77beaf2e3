/**
 * The simulated DynamoDB counts capacity as an on-demand table bills it, holds each partition
 * key to DynamoDB's per-second limits, models transaction conflicts, and refuses what DynamoDB
 * refuses — through the official SDK, so its typed exceptions are what the product sees.
 */
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  DynamoDBServiceException,
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { SimAws } from '../../../bench/cloud/clients.js';
import {
  CapacityMeter,
  type Demand,
  TABLE_SCALING_MS,
  type TableLimits,
} from '../../../bench/cloud/dynamo-capacity.js';
import { SimWorld } from '../../../bench/cloud/world.js';
import type { AwsClients } from '../../../shared/adapters/aws/clients.js';

const TABLE = 'capacity';

/** A fresh world and account with one table; `body` runs in simulated time. */
async function simulate<T>(
  body: (clients: AwsClients, aws: SimAws, world: SimWorld) => Promise<T>,
  maxAttempts = 1,
): Promise<T> {
  const world = new SimWorld();
  const aws = new SimAws(world, {
    dynamo: { latency: { baseMs: 5, jitterMs: 0 }, transactionLatency: { baseMs: 12, jitterMs: 0 } },
  });
  aws.dynamo.createTable(TABLE);
  return world.run(async () => body(aws.clients({ maxAttempts }), aws, world));
}

/** An item of about `bytes` bytes (DynamoDB's size: names plus values). */
const itemOf = (pk: string, sk: string, bytes: number) => ({
  pk,
  sk,
  body: 'x'.repeat(bytes - 'pkskbody'.length - pk.length - sk.length),
});

const error = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('capacity as DynamoDB bills an on-demand table', () => {
  it('a put of a 1.5 KB item costs 2 WRU, in a transaction 4; reading it costs 1 RRU strongly consistent, 0.5 eventually', () =>
    simulate(async ({ doc }, aws) => {
      const put = await doc.send(
        new PutCommand({ TableName: TABLE, Item: itemOf('A', '1', 1536), ReturnConsumedCapacity: 'TOTAL' }),
      );
      expect(put.ConsumedCapacity?.CapacityUnits).toBe(2);
      const transaction = await doc.send(
        new TransactWriteCommand({
          TransactItems: [{ Put: { TableName: TABLE, Item: itemOf('A', '2', 1536) } }],
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      expect(transaction.ConsumedCapacity?.[0]?.CapacityUnits).toBe(4);
      const strong = await doc.send(
        new GetCommand({
          TableName: TABLE,
          Key: { pk: 'A', sk: '1' },
          ConsistentRead: true,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      const eventual = await doc.send(
        new GetCommand({ TableName: TABLE, Key: { pk: 'A', sk: '1' }, ReturnConsumedCapacity: 'TOTAL' }),
      );
      expect(strong.ConsumedCapacity?.CapacityUnits).toBe(1);
      expect(eventual.ConsumedCapacity?.CapacityUnits).toBe(0.5);

      const report = aws.report().dynamo;
      expect(report.writeRequestUnits).toBe(6);
      expect(report.readRequestUnits).toBe(1.5);
      expect(report.billed).toMatchObject({ writeRequestUnits: 6, readRequestUnits: 2 });
      expect(report.byOperation.TransactWriteItems?.writeUnits).toBe(4);
    }));

  it('an update costs the larger of the item before and after; a failed condition still costs', () =>
    simulate(async ({ doc }, aws) => {
      await doc.send(new PutCommand({ TableName: TABLE, Item: itemOf('B', '1', 3000) }));
      const shrink = await doc.send(
        new UpdateCommand({
          TableName: TABLE,
          Key: { pk: 'B', sk: '1' },
          UpdateExpression: 'SET body = :small',
          ExpressionAttributeValues: { ':small': 'x' },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      expect(shrink.ConsumedCapacity?.CapacityUnits).toBe(3);
      const before = aws.report().dynamo.writeRequestUnits;
      await error(
        doc.send(
          new PutCommand({
            TableName: TABLE,
            Item: { pk: 'B', sk: '1' },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        ),
      );
      expect(aws.report().dynamo.writeRequestUnits - before).toBe(1);
      expect(aws.report().dynamo.conditionalCheckFailures).toBe(1);
    }));

  it('a query costs the size of what it read rounded up to 4 KB, and pages at 1 MB', () =>
    simulate(async ({ doc }) => {
      for (let i = 0; i < 300; i++)
        await doc.send(
          new PutCommand({ TableName: TABLE, Item: itemOf('Q', `item#${String(i).padStart(3, '0')}`, 4000) }),
        );
      const all = await doc.send(
        new QueryCommand({
          TableName: TABLE,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': 'Q' },
          ConsistentRead: true,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      // 1 MB of 4,000-byte items is 263 items (the page stops once it reaches 1 MB).
      expect(all.Count).toBe(263);
      expect(all.LastEvaluatedKey).toEqual({ pk: 'Q', sk: 'item#262' });
      expect(all.ConsumedCapacity?.CapacityUnits).toBe(Math.ceil((263 * 4000) / 4096));
      const few = await doc.send(
        new QueryCommand({
          TableName: TABLE,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
          ExpressionAttributeValues: { ':pk': 'Q', ':p': 'item#00' },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      expect(few.Count).toBe(10);
      expect(few.ConsumedCapacity?.CapacityUnits).toBe(Math.ceil((10 * 4000) / 4096) / 2);
    }));
});

describe('per-partition limits', () => {
  it('1,200 one-KB writes to one key within a second are partly refused; spread over two keys, none is', async () => {
    const burst = (keys: string[]) =>
      simulate(async ({ doc }, aws) => {
        const outcomes = await Promise.all(
          Array.from({ length: 1200 }, (_, i) =>
            error(
              doc.send(
                new PutCommand({ TableName: TABLE, Item: itemOf(keys[i % keys.length]!, `s${i}`, 1000) }),
              ),
            ),
          ),
        );
        return { refused: outcomes.filter((e) => e !== undefined), report: aws.report().dynamo };
      });

    const hot = await burst(['HOT']);
    expect(hot.refused.length).toBe(200);
    expect(hot.refused.every((e) => e instanceof ProvisionedThroughputExceededException)).toBe(true);
    expect((hot.refused[0] as ProvisionedThroughputExceededException).ThrottlingReasons).toEqual([
      {
        reason: 'TableWriteKeyRangeThroughputExceeded',
        resource: expect.stringMatching(/:table\/capacity$/),
      },
    ]);
    expect(hot.report.throttledRequests).toBe(200);
    expect(hot.report.hottest.write).toMatchObject({ table: TABLE, pk: 'HOT', peakUnitsPerSecond: 1000 });

    const spread = await burst(['ONE', 'TWO']);
    expect(spread.refused).toEqual([]);
    expect(spread.report.hottest.write?.peakUnitsPerSecond).toBe(600);
  });

  it('the SDK retries a throttled write (backing off in simulated time) until the partition has room', () =>
    simulate(async ({ doc }, aws, world) => {
      const put = (i: number) =>
        doc.send(new PutCommand({ TableName: TABLE, Item: itemOf('HOT', `s${i}`, 1000) }));
      await Promise.all(Array.from({ length: 1000 }, (_, i) => put(i)));
      const full = world.now();
      // Past the partition's limit: each is refused, retried after the SDK's throttling
      // backoff, and written once the second has slid by. (Too many at once would drain the
      // client's retry quota, as it does on AWS, and fail.)
      await Promise.all(Array.from({ length: 20 }, (_, i) => put(1000 + i)));
      const report = aws.report().dynamo;
      expect(report.throttledRequests).toBeGreaterThanOrEqual(20);
      expect(report.byOperation.PutItem?.requests).toBe(1020 + report.throttledRequests);
      expect(report.tables[TABLE]?.items).toBe(1020);
      expect(world.now() - full).toBeGreaterThan(500);
    }, 10));

  it('a transaction on a hot partition is cancelled with ThrottlingError for that entry', () =>
    simulate(async ({ doc }) => {
      await Promise.all(
        Array.from({ length: 999 }, (_, i) =>
          doc.send(new PutCommand({ TableName: TABLE, Item: itemOf('HOT', `s${i}`, 1000) })),
        ),
      );
      const cancelled = await error(
        doc.send(
          new TransactWriteCommand({
            TransactItems: [
              { Put: { TableName: TABLE, Item: { pk: 'COLD', sk: '1' } } },
              { Put: { TableName: TABLE, Item: { pk: 'HOT', sk: 'last' } } },
            ],
          }),
        ),
      );
      expect(cancelled).toBeInstanceOf(TransactionCanceledException);
      expect((cancelled as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual([
        'None',
        'ThrottlingError',
      ]);
    }));

  it('a batch hands back what its hot partition cannot take as unprocessed', () =>
    simulate(async ({ doc }, aws) => {
      await Promise.all(
        Array.from({ length: 995 }, (_, i) =>
          doc.send(new PutCommand({ TableName: TABLE, Item: itemOf('HOT', `s${i}`, 1000) })),
        ),
      );
      const out = await doc.send(
        new BatchWriteCommand({
          RequestItems: {
            [TABLE]: Array.from({ length: 10 }, (_, i) => ({
              PutRequest: { Item: itemOf('HOT', `b${i}`, 1000) },
            })),
          },
        }),
      );
      expect(out.UnprocessedItems?.[TABLE]).toHaveLength(5);
      expect(aws.report().dynamo.unprocessedItems).toBe(5);
    }));
});

describe('transaction conflicts', () => {
  it('a write to an item a transaction in flight holds is refused; so is a second transaction on it', () =>
    simulate(async ({ doc }, aws) => {
      const transaction = (value: string) =>
        doc.send(
          new TransactWriteCommand({
            TransactItems: [
              { Put: { TableName: TABLE, Item: { pk: 'T', sk: '1', value } } },
              { Put: { TableName: TABLE, Item: { pk: 'T', sk: '2', value } } },
            ],
          }),
        );
      const first = transaction('first');
      // Both reach the items while the first holds them (from its prepare at 2.4 ms to its
      // commit at 12 ms: the put runs at 5 ms, the second transaction prepares at 2.4 ms, after the first).
      const put = error(
        doc.send(new PutCommand({ TableName: TABLE, Item: { pk: 'T', sk: '1', value: 'put' } })),
      );
      const second = error(transaction('second'));
      await first;
      expect(await put).toBeInstanceOf(TransactionConflictException);
      const cancelled = (await second) as TransactionCanceledException;
      expect(cancelled).toBeInstanceOf(TransactionCanceledException);
      expect(cancelled.CancellationReasons?.map((r) => r.Code)).toEqual([
        'TransactionConflict',
        'TransactionConflict',
      ]);
      expect(
        (await doc.send(new GetCommand({ TableName: TABLE, Key: { pk: 'T', sk: '1' } }))).Item?.value,
      ).toBe('first');
      expect(aws.report().dynamo.transactionConflicts).toBe(2);
    }));

  it('a cancelled transaction writes nothing and names the failed condition', () =>
    simulate(async ({ doc }) => {
      await doc.send(new PutCommand({ TableName: TABLE, Item: { pk: 'C', sk: 'meta', done: 0 } }));
      const transaction = () =>
        doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: TABLE,
                  Item: { pk: 'C', sk: 'result' },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
              {
                Update: {
                  TableName: TABLE,
                  Key: { pk: 'C', sk: 'meta' },
                  UpdateExpression: 'ADD done :one',
                  ConditionExpression: 'attribute_exists(pk)',
                  ExpressionAttributeValues: { ':one': 1 },
                },
              },
            ],
          }),
        );
      await transaction();
      const again = (await error(transaction())) as TransactionCanceledException;
      expect(again.CancellationReasons?.map((r) => r.Code)).toEqual(['ConditionalCheckFailed', 'None']);
      expect(
        (await doc.send(new GetCommand({ TableName: TABLE, Key: { pk: 'C', sk: 'meta' } }))).Item?.done,
      ).toBe(1);
    }));
});

describe('what DynamoDB refuses', () => {
  const validation = async (promise: Promise<unknown>, message: RegExp) => {
    const e = await error(promise);
    expect(e).toBeInstanceOf(DynamoDBServiceException);
    expect((e as Error).name).toBe('ValidationException');
    expect((e as Error).message).toMatch(message);
  };

  it('items over 400 KB, 26 writes in a batch, 101 keys in a batch get, 101 actions in a transaction', () =>
    simulate(async ({ doc, dynamo }) => {
      await validation(
        doc.send(new PutCommand({ TableName: TABLE, Item: itemOf('V', '1', 410 * 1024) })),
        /maximum allowed size/,
      );
      await validation(
        dynamo.send(
          new BatchWriteItemCommand({
            RequestItems: {
              [TABLE]: Array.from({ length: 26 }, (_, i) => ({
                PutRequest: { Item: { pk: { S: 'V' }, sk: { S: `${i}` } } },
              })),
            },
          }),
        ),
        /less than or equal to 25/,
      );
      await validation(
        dynamo.send(
          new BatchGetItemCommand({
            RequestItems: {
              [TABLE]: {
                Keys: Array.from({ length: 101 }, (_, i) => ({ pk: { S: 'V' }, sk: { S: `${i}` } })),
              },
            },
          }),
        ),
        /Too many items/,
      );
      await validation(
        doc.send(
          new TransactWriteCommand({
            TransactItems: Array.from({ length: 101 }, (_, i) => ({
              Put: { TableName: TABLE, Item: { pk: 'V', sk: `${i}` } },
            })),
          }),
        ),
        /less than or equal to 100/,
      );
    }));

  it('reserved words unaliased, placeholders unused or undefined, key attributes in an update', () =>
    simulate(async ({ doc }) => {
      const Key = { pk: 'E', sk: '1' };
      await validation(
        doc.send(
          new UpdateCommand({
            TableName: TABLE,
            Key,
            UpdateExpression: 'SET status = :s',
            ExpressionAttributeValues: { ':s': 'x' },
          }),
        ),
        /reserved keyword; reserved keyword: status/,
      );
      await validation(
        doc.send(
          new UpdateCommand({
            TableName: TABLE,
            Key,
            UpdateExpression: 'SET a = :a',
            ExpressionAttributeValues: { ':a': 1, ':b': 2 },
          }),
        ),
        /unused in expressions: keys: \{:b\}/,
      );
      await validation(
        doc.send(new UpdateCommand({ TableName: TABLE, Key, UpdateExpression: 'SET a = :missing' })),
        /attribute value: :missing/,
      );
      await validation(
        doc.send(
          new UpdateCommand({
            TableName: TABLE,
            Key,
            UpdateExpression: 'SET sk = :s',
            ExpressionAttributeValues: { ':s': '2' },
          }),
        ),
        /part of the key/,
      );
    }));
});

describe('expressions', () => {
  it('SET with if_not_exists and arithmetic, ADD, REMOVE and ReturnValues as DynamoDB applies them', () =>
    simulate(async ({ doc }) => {
      const Key = { pk: 'U', sk: '1' };
      const first = await doc.send(
        new UpdateCommand({
          TableName: TABLE,
          Key,
          UpdateExpression: 'SET n = if_not_exists(n, :zero) + :two, tags = :tags ADD spent :cost',
          ExpressionAttributeValues: { ':zero': 0, ':two': 2, ':tags': ['a'], ':cost': 0.1 },
          ReturnValues: 'ALL_NEW',
        }),
      );
      expect(first.Attributes).toEqual({ pk: 'U', sk: '1', n: 2, tags: ['a'], spent: 0.1 });
      const second = await doc.send(
        new UpdateCommand({
          TableName: TABLE,
          Key,
          UpdateExpression: 'ADD spent :cost REMOVE tags SET n = n - :one',
          ExpressionAttributeValues: { ':cost': 0.2, ':one': 1 },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      // Exact decimal arithmetic, as DynamoDB's numbers (0.1 + 0.2 is 0.3, not 0.30000000000000004).
      expect(second.Attributes).toEqual({ spent: 0.3, n: 1 });
      const old = await doc.send(
        new UpdateCommand({
          TableName: TABLE,
          Key,
          UpdateExpression: 'SET n = :ten',
          ExpressionAttributeValues: { ':ten': 10 },
          ReturnValues: 'UPDATED_OLD',
        }),
      );
      expect(old.Attributes).toEqual({ n: 1 });
    }));

  it('queries with key ranges, order, limit and start key, filters, projections and counts', () =>
    simulate(async ({ doc }) => {
      for (const [sk, kind] of [
        ['a#1', 'x'],
        ['a#2', 'y'],
        ['a#3', 'x'],
        ['b#1', 'x'],
        ['c#1', 'y'],
      ]) {
        await doc.send(new PutCommand({ TableName: TABLE, Item: { pk: 'K', sk, kind, extra: 'e' } }));
      }
      const q = (input: Record<string, unknown>) =>
        doc.send(
          new QueryCommand({
            TableName: TABLE,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': 'K' },
            ...input,
          }),
        );
      const backwards = await q({ ScanIndexForward: false, Limit: 2 });
      expect(backwards.Items?.map((i) => i.sk)).toEqual(['c#1', 'b#1']);
      const rest = await q({ ScanIndexForward: false, ExclusiveStartKey: backwards.LastEvaluatedKey });
      expect(rest.Items?.map((i) => i.sk)).toEqual(['a#3', 'a#2', 'a#1']);
      expect(rest.LastEvaluatedKey).toBeUndefined();
      const between = await doc.send(
        new QueryCommand({
          TableName: TABLE,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
          ExpressionAttributeValues: { ':pk': 'K', ':lo': 'a#2', ':hi': 'b#1' },
          ProjectionExpression: 'sk',
        }),
      );
      expect(between.Items).toEqual([{ sk: 'a#2' }, { sk: 'a#3' }, { sk: 'b#1' }]);
      const filtered = await doc.send(
        new QueryCommand({
          TableName: TABLE,
          KeyConditionExpression: 'pk = :pk',
          FilterExpression: 'kind = :x',
          ExpressionAttributeValues: { ':pk': 'K', ':x': 'x' },
          Select: 'COUNT',
        }),
      );
      expect(filtered).toMatchObject({ Count: 3, ScannedCount: 5 });
      expect(filtered.Items).toBeUndefined();
    }));
});

describe('the table’s own limits (on demand)', () => {
  const meterAt = (tableLimits: TableLimits) => {
    const clock = { ms: 0 };
    return { clock, meter: new CapacityMeter(() => clock.ms, {}, {}, tableLimits) };
  };
  const write = (pk: string, units: number): Demand => ({ table: TABLE, pk, kind: 'write', units });

  it('refuses what takes the table past its warm throughput, on any key, and counts it as offered', () => {
    const { meter } = meterAt({ warmWriteUnitsPerSecond: 100 });
    for (let i = 0; i < 100; i++) meter.charge('PutItem', [write(`K${i}`, 1)]);
    const refused = meter.over([write('FRESH', 1)]);
    expect(refused).toEqual(new Set([0]));
    meter.decline([write('FRESH', 1)]);
    const table = meter.tableReport()[TABLE]!;
    expect(table).toMatchObject({
      peakWriteUnitsPerSecond: 100,
      peakOfferedWriteUnitsPerSecond: 101,
      refused: 1,
    });
    const fresh = meter.loads().find((l) => l.pk === 'FRESH')!;
    expect(fresh).toMatchObject({ offered: { peakWriteUnitsPerSecond: 1 }, refused: 1 });
    expect(fresh.write).toBeUndefined();
  });

  it('serves twice the peak it took half an hour before, never above its quota', () => {
    const { clock, meter } = meterAt({ warmWriteUnitsPerSecond: 100, writeQuotaPerSecond: 150 });
    meter.charge('PutItem', [write('A', 100)]);
    expect(meter.tableCapacity(TABLE, 'write')).toBe(100);
    clock.ms = TABLE_SCALING_MS - 1;
    expect(meter.tableCapacity(TABLE, 'write')).toBe(100);
    clock.ms = TABLE_SCALING_MS;
    expect(meter.tableCapacity(TABLE, 'write')).toBe(150);
    expect(meterAt({}).meter.tableCapacity(TABLE, 'read')).toBe(12_000);
  });
});
