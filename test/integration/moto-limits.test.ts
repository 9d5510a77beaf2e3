/**
 * The moto stand-in (scripts/moto_serial.py) enforces DynamoDB's limits per partition key value
 * (1,000 write and 3,000 read units a second by default, lowered here per table) with DynamoDB's
 * own errors, refuses what DynamoDB refuses for its size, and reports what it enforced. The
 * client makes one attempt per request, so the SDK's retries never hide a refusal.
 *
 * Items are sized so each request's units are known: a write takes one unit per KB, a strongly
 * consistent read one per 4 KB. Where a check depends on a bucket still being short, the
 * request needs at least 400 ms more refill than it has, so a slow machine does not pass it.
 */
import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DYNAMODB_PARTITION_LIMITS,
  type PartitionLimits,
  partitionStats,
  setPartitionLimits,
} from '../../cli/cloud/moto.js';
import { createDocumentClient } from '../../shared/adapters/aws/clients.js';
import { TABLE } from '../../shared/lib/layout/table.js';
import {
  createTestResources,
  type Moto,
  motoClients,
  startMoto,
  TEST_CREDENTIALS,
  TEST_REGION,
  uniqueNames,
} from './moto.js';

let moto: Moto;
let dynamo: DynamoDBClient;
let doc: DynamoDBDocumentClient;
let table: string;
let tableArn: string;

beforeAll(async () => {
  moto = await startMoto();
  const resources = await createTestResources(motoClients(moto.endpoint), uniqueNames('limits'));
  table = resources.table;
  dynamo = new DynamoDBClient({
    endpoint: moto.endpoint,
    region: TEST_REGION,
    credentials: TEST_CREDENTIALS,
    maxAttempts: 1,
  });
  doc = createDocumentClient(dynamo);
  tableArn = (await dynamo.send(new DescribeTableCommand({ TableName: table }))).Table!.TableArn!;
}, 60_000);

afterAll(async () => {
  await moto?.stop();
});

/** A partition key no other test uses, so its buckets start full. */
const key = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

/** A body that makes the item a little over `kb` KB with its keys: `kb + 1` write units. */
const body = (kb: number) => 'x'.repeat(kb * 1024 + 200);

const limit = (limits: Partial<PartitionLimits>, name = table) =>
  setPartitionLimits(moto.endpoint, { table: name, ...limits });

const put = (pk: string, sk: string, text: string, name = table) =>
  doc.send(new PutCommand({ TableName: name, Item: { pk, sk, body: text } }));

const get = (pk: string, sk: string, name = table) =>
  doc.send(new GetCommand({ TableName: name, Key: { pk, sk }, ConsistentRead: true }));

const stored = async (pk: string, sk: string) => (await get(pk, sk)).Item;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The error `request` is refused with; fails the test when it succeeds. */
async function refusal(request: Promise<unknown>): Promise<unknown> {
  try {
    await request;
  } catch (err) {
    return err;
  }
  throw new Error('the request was expected to be refused');
}

/** Checks that `err` is DynamoDB's refusal of a hot partition key, for reads or writes. */
function expectThrottled(err: unknown, kind: 'Read' | 'Write'): void {
  expect(err).toBeInstanceOf(ProvisionedThroughputExceededException);
  expect((err as ProvisionedThroughputExceededException).ThrottlingReasons).toEqual([
    { reason: `Table${kind}KeyRangeThroughputExceeded`, resource: tableArn },
  ]);
}

describe('DynamoDB partition limits on moto', () => {
  it('lets a few hundred writes to one partition key through under DynamoDB’s own limits', async () => {
    // The table has no limits of its own yet: DynamoDB's apply.
    const pk = key('busy');

    // 300 writes of 3 units each: 900 units, within the 1,000 a partition key holds.
    for (let round = 0; round < 15; round++) {
      await Promise.all(Array.from({ length: 20 }, (_, i) => put(pk, `${round}-${i}`, body(2))));
    }

    const stats = await partitionStats(moto.endpoint, table);
    expect(stats.limits).toEqual(DYNAMODB_PARTITION_LIMITS);
    expect(stats.hotKeys.find((hot) => hot.partitionKey === pk && hot.kind === 'write')).toMatchObject({
      consumedUnits: 900,
      throttledRequests: 0,
    });
  });

  it('refuses writes over a lowered limit on the hot key only, and accepts them again a second later', async () => {
    await limit({
      writeUnitsPerSecond: 10,
      readUnitsPerSecond: DYNAMODB_PARTITION_LIMITS.readUnitsPerSecond,
    });
    const hot = key('hot');
    const cold = key('cold');

    // 12 writes of 3 units (36) at once, where the bucket holds 10.
    const started = Date.now();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => put(hot, `item-${i}`, body(2))),
    );
    const seconds = (Date.now() - started) / 1000;
    const written = outcomes.filter((outcome) => outcome.status === 'fulfilled').length;
    // At the same moment: the cold key takes a write, the hot one (short of 3) not one of 7.
    const [coldWrite, hotWrite] = await Promise.allSettled([
      put(cold, 'a', body(2)),
      put(hot, 'at-once', body(6)),
    ]);

    expect(written).toBeGreaterThanOrEqual(3);
    expect(written * 3).toBeLessThanOrEqual(10 + seconds * 10);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expectThrottled(outcome.reason, 'Write');
    }
    expect(coldWrite.status).toBe('fulfilled');
    expect(hotWrite.status).toBe('rejected');
    expectThrottled((hotWrite as PromiseRejectedResult).reason, 'Write');
    for (const [i, outcome] of outcomes.entries()) {
      const item = await stored(hot, `item-${i}`);
      if (outcome.status === 'fulfilled') expect(item).toMatchObject({ pk: hot, sk: `item-${i}` });
      else expect(item).toBeUndefined();
    }
    expect(await stored(hot, 'at-once')).toBeUndefined();

    await sleep(1100);
    await put(hot, 'later', body(4));
    expect(await stored(hot, 'later')).toMatchObject({ pk: hot, sk: 'later' });
  });

  it('refuses GetItem and Query over a lowered read limit, counting what a Query read before its filter', async () => {
    await limit({
      writeUnitsPerSecond: DYNAMODB_PARTITION_LIMITS.writeUnitsPerSecond,
      readUnitsPerSecond: 5,
    });
    const hot = key('read-hot');
    // Each item is 2 read units read consistently; a Query of both, 4.
    await put(hot, 'a', body(6));
    await put(hot, 'b', body(6));
    const query = (filtered: boolean) =>
      doc.send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: filtered ? { ':pk': hot, ':none': 'none' } : { ':pk': hot },
          ...(filtered ? { FilterExpression: 'body = :none' } : {}),
          ConsistentRead: true,
        }),
      );

    let reads = 0;
    let refused: unknown;
    while (refused === undefined && reads < 10) {
      try {
        await get(hot, 'a');
        reads++;
      } catch (err) {
        refused = err;
      }
    }
    // The bucket is short of 2: a Query of 4 is refused.
    const queryRefused = await refusal(query(false));

    expect(reads).toBeGreaterThanOrEqual(2);
    expect(reads).toBeLessThan(10);
    expectThrottled(refused, 'Read');
    expectThrottled(queryRefused, 'Read');

    await sleep(1100);
    // A full bucket (5) pays for a filtered Query that returns nothing (4: both items read), then
    // is short for another.
    const filtered = await query(true);
    const again = await refusal(query(false));

    expect(filtered.Count).toBe(0);
    expectThrottled(again, 'Read');
    await sleep(1100);
    expect((await query(false)).Items?.map((item) => item.sk)).toEqual(['a', 'b']);
  });

  it('cancels a transaction that writes to a throttled key, with ThrottlingError at that action, and writes nothing', async () => {
    await limit({
      writeUnitsPerSecond: 10,
      readUnitsPerSecond: DYNAMODB_PARTITION_LIMITS.readUnitsPerSecond,
    });
    const hot = key('tx-hot');
    const cold = key('tx-cold');
    await put(hot, 'filler', body(9)); // 10 units: the whole bucket
    const transaction = new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: table, Item: { pk: cold, sk: 'a', body: 'small' } } },
        // A transaction writes at 2 units per KB: 6 on the hot key.
        { Put: { TableName: table, Item: { pk: hot, sk: 'b', body: body(2) } } },
      ],
    });

    const err = await refusal(doc.send(transaction));

    expect(err).toBeInstanceOf(TransactionCanceledException);
    expect((err as TransactionCanceledException).CancellationReasons?.map((reason) => reason.Code)).toEqual([
      'None',
      'ThrottlingError',
    ]);
    expect(await stored(cold, 'a')).toBeUndefined();
    expect(await stored(hot, 'b')).toBeUndefined();

    await sleep(1100);
    await doc.send(transaction);
    expect(await stored(cold, 'a')).toMatchObject({ sk: 'a' });
    expect(await stored(hot, 'b')).toMatchObject({ sk: 'b' });
  });

  it('leaves the batch writes a hot key cannot take unprocessed, and refuses a batch it can take none of', async () => {
    await limit({
      writeUnitsPerSecond: 10,
      readUnitsPerSecond: DYNAMODB_PARTITION_LIMITS.readUnitsPerSecond,
    });
    const hot = key('batch-hot');
    const cold = key('batch-cold');
    // 5 units each: the bucket takes two.
    const items = [0, 1, 2].map((i) => ({ pk: hot, sk: `i${i}`, body: body(4) }));

    const out = await doc.send(
      new BatchWriteCommand({
        RequestItems: {
          [table]: [
            ...items.map((Item) => ({ PutRequest: { Item } })),
            { PutRequest: { Item: { pk: cold, sk: 'c', body: 'small' } } },
          ],
        },
      }),
    );
    const retry = await refusal(
      doc.send(new BatchWriteCommand({ RequestItems: { [table]: [{ PutRequest: { Item: items[2]! } }] } })),
    );

    expect(out.UnprocessedItems).toEqual({ [table]: [{ PutRequest: { Item: items[2] } }] });
    expectThrottled(retry, 'Write');
    expect(await stored(hot, 'i0')).toMatchObject({ sk: 'i0' });
    expect(await stored(hot, 'i1')).toMatchObject({ sk: 'i1' });
    expect(await stored(hot, 'i2')).toBeUndefined();
    expect(await stored(cold, 'c')).toMatchObject({ sk: 'c' });
  });

  it('leaves the batch reads a hot key cannot take unprocessed, and refuses a batch it can take none of', async () => {
    await limit({
      writeUnitsPerSecond: DYNAMODB_PARTITION_LIMITS.writeUnitsPerSecond,
      readUnitsPerSecond: 4,
    });
    const hot = key('bget-hot');
    // 3 read units each, read consistently: a full bucket (4) takes one.
    for (const sk of ['a', 'b', 'c']) await put(hot, sk, body(10));
    const keys = ['a', 'b', 'c'].map((sk) => ({ pk: hot, sk }));

    const out = await doc.send(
      new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }),
    );
    const retry = await refusal(
      doc.send(
        new BatchGetCommand({ RequestItems: { [table]: { Keys: keys.slice(1), ConsistentRead: true } } }),
      ),
    );

    expect(out.Responses?.[table]?.map((item) => item.sk)).toEqual(['a']);
    expect(out.UnprocessedKeys).toEqual({ [table]: { Keys: keys.slice(1), ConsistentRead: true } });
    expectThrottled(retry, 'Read');
  });

  it('refuses an item over 400 KB and requests over DynamoDB’s counts with ValidationException', async () => {
    await limit(DYNAMODB_PARTITION_LIMITS);
    const pk = key('sizes');
    const validation = async (request: Promise<unknown>, message: RegExp) => {
      const err = await refusal(request);
      expect(err).toMatchObject({ name: 'ValidationException', message: expect.stringMatching(message) });
    };

    await validation(
      put(pk, 'big', 'x'.repeat(401 * 1024)),
      /Item size has exceeded the maximum allowed size/,
    );
    await validation(
      doc.send(
        new TransactWriteCommand({
          TransactItems: Array.from({ length: 101 }, (_, i) => ({
            Put: { TableName: table, Item: { pk, sk: `t${i}` } },
          })),
        }),
      ),
      /less than or equal to 100/,
    );
    await validation(
      doc.send(
        new BatchWriteCommand({
          RequestItems: {
            [table]: Array.from({ length: 26 }, (_, i) => ({ PutRequest: { Item: { pk, sk: `w${i}` } } })),
          },
        }),
      ),
      /less than or equal to 25/,
    );
    await validation(
      doc.send(
        new BatchGetCommand({
          RequestItems: { [table]: { Keys: Array.from({ length: 101 }, (_, i) => ({ pk, sk: `g${i}` })) } },
        }),
      ),
      /less than or equal to 100/,
    );

    expect(await stored(pk, 'big')).toBeUndefined();
    expect(await stored(pk, 't0')).toBeUndefined();
    expect(await stored(pk, 'w0')).toBeUndefined();
  });

  it('reports the requests it refused and the hot keys with their peak units per second', async () => {
    // A table of its own, so the counts are this test's only.
    const name = key('limits-stats');
    await dynamo.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: TABLE.billingMode,
        AttributeDefinitions: [TABLE.partitionKey, TABLE.sortKey].map((k) => ({
          AttributeName: k.name,
          AttributeType: k.type,
        })),
        KeySchema: [
          { AttributeName: TABLE.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: TABLE.sortKey.name, KeyType: 'RANGE' },
        ],
      }),
    );
    await waitUntilTableExists({ client: dynamo, maxWaitTime: 30 }, { TableName: name });
    await limit({ writeUnitsPerSecond: 10, readUnitsPerSecond: 4 }, name);
    const hot = key('stats-hot');
    const cold = key('stats-cold');

    await put(hot, 'filler', body(9), name); // 10 write units: the whole bucket
    await refusal(put(hot, 'more', body(4), name)); // 5 more
    await get(hot, 'filler', name); // 3 read units of 4
    await refusal(get(hot, 'filler', name)); // 3 more
    await put(cold, 'a', 'small', name);

    const stats = await partitionStats(moto.endpoint, name);
    expect(stats).toEqual({
      table: name,
      limits: { writeUnitsPerSecond: 10, readUnitsPerSecond: 4 },
      throttledRequests: {
        total: 2,
        read: 1,
        write: 1,
        byOperation: { PutItem: { write: 1 }, GetItem: { read: 1 } },
      },
      hotKeys: [
        { partitionKey: hot, kind: 'write', peakUnitsPerSecond: 10, consumedUnits: 10, throttledRequests: 1 },
        { partitionKey: hot, kind: 'read', peakUnitsPerSecond: 3, consumedUnits: 3, throttledRequests: 1 },
        { partitionKey: cold, kind: 'write', peakUnitsPerSecond: 1, consumedUnits: 1, throttledRequests: 0 },
      ],
      // What was served, refusals left out: two puts (10 and 1 units) and one read (3).
      served: {
        PutItem: { requests: 2, read: 0, write: 11 },
        GetItem: { requests: 1, read: 3, write: 0 },
      },
    });
    await expect(setPartitionLimits(moto.endpoint, { table: name, writeUnitsPerSecond: -1 })).rejects.toThrow(
      /positive number/,
    );
  });
});
