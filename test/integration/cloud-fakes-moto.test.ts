/**
 * The capacity model's simulated DynamoDB (bench/cloud/dynamo.ts) against moto: the same
 * sequence of commands, through the same SDK, gives the same outputs and the same error classes
 * from both. moto stands for DynamoDB here; where moto is known to differ from DynamoDB the
 * sequence avoids the case (a query page ending exactly at its limit: DynamoDB, and the
 * stand-in, still hand back a LastEvaluatedKey).
 */
import {
  CreateTableCommand,
  type DynamoDBClient,
  DynamoDBServiceException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimAws } from '../../bench/cloud/clients.js';
import { SimWorld } from '../../bench/cloud/world.js';
import { TABLE } from '../../shared/lib/layout/table.js';
import { type Moto, motoClients, startMoto, uniqueNames } from './moto.js';

type Outcome = { ok: unknown } | { error: string; name: string; reasons?: (string | undefined)[] };

/**
 * What a command gave: its output without the request metadata (and without the empty
 * `ItemCollectionMetrics` moto adds to a transaction's answer, which DynamoDB sends only when
 * asked), or its error's class and name.
 */
async function outcome(send: () => Promise<Record<string, unknown>>): Promise<Outcome> {
  try {
    const {
      $metadata: _metadata,
      ConsumedCapacity: _capacity,
      ItemCollectionMetrics: metrics,
      ...rest
    } = await send();
    return {
      ok: metrics && Object.keys(metrics).length > 0 ? { ...rest, ItemCollectionMetrics: metrics } : rest,
    };
  } catch (err) {
    if (!(err instanceof DynamoDBServiceException)) throw err;
    return {
      error: err.constructor.name,
      name: err.name,
      ...(err instanceof TransactionCanceledException
        ? { reasons: err.CancellationReasons?.map((r) => r.Code) }
        : {}),
    };
  }
}

/** The sequence both are given, on a fresh table. */
async function sequence(
  dynamo: DynamoDBClient,
  doc: DynamoDBDocumentClient,
  table: string,
): Promise<Outcome[]> {
  await dynamo.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: TABLE.billingMode,
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
    }),
  );
  const TableName = table;
  const out: Outcome[] = [];
  const step = async (send: () => Promise<Record<string, unknown>>) => out.push(await outcome(send));

  // A conditional create, then the same create again: the condition fails.
  const meta = { pk: 'RUN#1', sk: 'META', status: 'running', done: 0, failed: 0, spent: 0 };
  await step(() =>
    doc.send(new PutCommand({ TableName, Item: meta, ConditionExpression: 'attribute_not_exists(pk)' })),
  );
  await step(() =>
    doc.send(new PutCommand({ TableName, Item: meta, ConditionExpression: 'attribute_not_exists(pk)' })),
  );
  await step(() =>
    doc.send(
      new PutCommand({
        TableName,
        Item: meta,
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValues: 'ALL_OLD',
      }),
    ),
  );

  // Updates with ADD and SET, each kind of ReturnValues; a condition on a status.
  const Key = { pk: 'RUN#1', sk: 'META' };
  await step(() =>
    doc.send(
      new UpdateCommand({
        TableName,
        Key,
        UpdateExpression: 'ADD done :one, spent :cost',
        ExpressionAttributeValues: { ':one': 1, ':cost': 0.25 },
        ReturnValues: 'UPDATED_NEW',
      }),
    ),
  );
  await step(() =>
    doc.send(
      new UpdateCommand({
        TableName,
        Key,
        UpdateExpression: 'SET #s = :agg',
        ConditionExpression: '#s IN (:running, :ingesting)',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: {
          ':agg': 'aggregating',
          ':running': 'running',
          ':ingesting': 'ingesting',
        },
        ReturnValues: 'ALL_OLD',
      }),
    ),
  );
  await step(() =>
    doc.send(
      new UpdateCommand({
        TableName,
        Key,
        UpdateExpression: 'SET #s = :agg',
        ConditionExpression: '#s IN (:running, :ingesting)',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: {
          ':agg': 'aggregating',
          ':running': 'running',
          ':ingesting': 'ingesting',
        },
      }),
    ),
  );
  await step(() =>
    doc.send(
      new UpdateCommand({
        TableName,
        Key,
        UpdateExpression: 'SET failed = failed + :one REMOVE spent',
        ExpressionAttributeValues: { ':one': 1 },
        ReturnValues: 'ALL_NEW',
      }),
    ),
  );
  await step(() =>
    doc.send(new GetCommand({ TableName, Key, ConsistentRead: true, ProjectionExpression: 'done, failed' })),
  );

  // A result put with the counter update in one transaction, the second time cancelled on the put.
  const transaction = () =>
    doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName,
              Item: { pk: 'RUN#1', sk: 'RESULT#a', status: 'scored' },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Update: {
              TableName,
              Key,
              UpdateExpression: 'ADD done :one',
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeValues: { ':one': 1 },
            },
          },
        ],
      }),
    );
  await step(transaction);
  await step(transaction);
  await step(() =>
    doc.send(new GetCommand({ TableName, Key, ConsistentRead: true, ProjectionExpression: 'done' })),
  );

  // A paginated query (two items a page over five, so the last page is short), newest first.
  for (const id of ['b', 'c', 'd', 'e'])
    await doc.send(
      new PutCommand({
        TableName,
        Item: { pk: 'RUN#1', sk: `RESULT#${id}`, status: id === 'c' ? 'failed' : 'scored' },
      }),
    );
  let start: Record<string, unknown> | undefined;
  do {
    const page = await outcome(() =>
      doc.send(
        new QueryCommand({
          TableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :r)',
          ExpressionAttributeValues: { ':pk': 'RUN#1', ':r': 'RESULT#' },
          Limit: 2,
          ScanIndexForward: false,
          ExclusiveStartKey: start,
          ConsistentRead: true,
        }),
      ),
    );
    out.push(page);
    start =
      'ok' in page ? (page.ok as { LastEvaluatedKey?: Record<string, unknown> }).LastEvaluatedKey : undefined;
  } while (start);
  await step(() =>
    doc.send(
      new QueryCommand({
        TableName,
        KeyConditionExpression: 'pk = :pk AND sk > :after',
        FilterExpression: '#s = :failed',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':pk': 'RUN#1', ':after': 'RESULT#a', ':failed': 'failed' },
        ProjectionExpression: 'sk',
      }),
    ),
  );

  // What both refuse.
  await step(() =>
    doc.send(
      new UpdateCommand({
        TableName,
        Key,
        UpdateExpression: 'SET status = :s',
        ExpressionAttributeValues: { ':s': 'x' },
      }),
    ),
  );
  await step(() =>
    doc.send(
      new UpdateCommand({
        TableName,
        Key,
        UpdateExpression: 'SET a = :a',
        ExpressionAttributeValues: { ':a': 1, ':unused': 2 },
      }),
    ),
  );
  await step(() => doc.send(new GetCommand({ TableName: `${table}-missing`, Key })));
  return out;
}

describe('the simulated DynamoDB and moto, given the same commands', { timeout: 120_000 }, () => {
  let moto: Moto;
  beforeAll(async () => {
    moto = await startMoto();
  }, 120_000);
  afterAll(async () => {
    await moto?.stop();
  });

  it('give the same outputs and the same error classes', async () => {
    const table = uniqueNames('differential').table;
    const real = motoClients(moto.endpoint);
    const fromMoto = await sequence(real.dynamo, real.doc, table);

    const world = new SimWorld();
    const aws = new SimAws(world);
    const fromSim = await world.run(async () => {
      const clients = aws.clients();
      return sequence(clients.dynamo, clients.doc, table);
    });

    expect(fromSim).toEqual(fromMoto);
    // The sequence reached what it meant to compare.
    expect(fromSim.filter((o) => 'error' in o).map((o) => (o as { name: string }).name)).toEqual([
      'ConditionalCheckFailedException',
      'ConditionalCheckFailedException',
      'ConditionalCheckFailedException',
      'TransactionCanceledException',
      'ValidationException',
      'ValidationException',
      'ResourceNotFoundException',
    ]);
    for (const client of Object.values(real)) client.destroy();
  });
});
