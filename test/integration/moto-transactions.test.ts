/**
 * The moto stand-in keeps TransactWriteItems all-or-nothing: a cancelled transaction leaves
 * every item it named as it was (new items absent, updated ones unchanged), and a transaction
 * that succeeds writes all of them. scripts/moto_serial.py backs up only the named items, not
 * whole tables; these check that the rollback is still complete.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Moto, motoClients, startMoto } from './moto.js';

let moto: Moto;
let clients: ReturnType<typeof motoClients>;
const table = `tx-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  moto = await startMoto();
  clients = motoClients(moto.endpoint);
  await clients.dynamo.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
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
  await waitUntilTableExists({ client: clients.dynamo, maxWaitTime: 30 }, { TableName: table });
}, 60_000);

afterAll(async () => {
  await moto?.stop();
});

const get = async (pk: string, sk: string) =>
  (await clients.doc.send(new GetCommand({ TableName: table, Key: { pk, sk }, ConsistentRead: true }))).Item;

/** Puts `pk/new` (absent before), adds 1 to `pk/meta.n`, and checks `pk/guard` exists. */
const transaction = (pk: string) =>
  new TransactWriteCommand({
    TransactItems: [
      {
        Put: {
          TableName: table,
          Item: { pk, sk: 'new', v: 'written' },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      {
        Update: {
          TableName: table,
          Key: { pk, sk: 'meta' },
          UpdateExpression: 'ADD n :one SET tag = :tag',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':one': 1, ':tag': 'updated' },
        },
      },
      {
        ConditionCheck: {
          TableName: table,
          Key: { pk, sk: 'guard' },
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    ],
  });

describe('TransactWriteItems on moto', () => {
  it('a cancelled transaction changes none of the items it named', async () => {
    const pk = `p-${randomUUID()}`;
    await clients.doc.send(
      new PutCommand({ TableName: table, Item: { pk, sk: 'meta', n: 5, tag: 'before' } }),
    );
    await clients.doc.send(new PutCommand({ TableName: table, Item: { pk: 'other', sk: 'x', v: 1 } }));

    // The guard item is missing: the third condition fails after the first two were applied.
    await expect(clients.doc.send(transaction(pk))).rejects.toMatchObject({
      name: 'TransactionCanceledException',
    });

    expect(await get(pk, 'new')).toBeUndefined();
    expect(await get(pk, 'meta')).toEqual({ pk, sk: 'meta', n: 5, tag: 'before' });
    expect(await get('other', 'x')).toEqual({ pk: 'other', sk: 'x', v: 1 });
  });

  it('a transaction that replaces an item and fails puts the old item back', async () => {
    const pk = `p-${randomUUID()}`;
    await clients.doc.send(
      new PutCommand({ TableName: table, Item: { pk, sk: 'meta', n: 1, tag: 'before' } }),
    );
    await clients.doc.send(new PutCommand({ TableName: table, Item: { pk, sk: 'new', v: 'old' } }));
    const replace = new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: table, Item: { pk, sk: 'new', v: 'replaced' } } },
        {
          Update: {
            TableName: table,
            Key: { pk, sk: 'meta' },
            UpdateExpression: 'ADD n :one',
            ExpressionAttributeValues: { ':one': 1 },
          },
        },
        {
          ConditionCheck: {
            TableName: table,
            Key: { pk, sk: 'guard' },
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      ],
    });
    await expect(clients.doc.send(replace)).rejects.toMatchObject({ name: 'TransactionCanceledException' });

    expect(await get(pk, 'new')).toEqual({ pk, sk: 'new', v: 'old' });
    expect(await get(pk, 'meta')).toEqual({ pk, sk: 'meta', n: 1, tag: 'before' });
  });

  it('a transaction whose conditions hold writes every item', async () => {
    const pk = `p-${randomUUID()}`;
    await clients.doc.send(
      new PutCommand({ TableName: table, Item: { pk, sk: 'meta', n: 5, tag: 'before' } }),
    );
    await clients.doc.send(new PutCommand({ TableName: table, Item: { pk, sk: 'guard' } }));

    await clients.doc.send(transaction(pk));

    expect(await get(pk, 'new')).toEqual({ pk, sk: 'new', v: 'written' });
    expect(await get(pk, 'meta')).toEqual({ pk, sk: 'meta', n: 6, tag: 'updated' });
  });

  it('naming one item twice is refused and changes nothing', async () => {
    const pk = `p-${randomUUID()}`;
    await clients.doc.send(new PutCommand({ TableName: table, Item: { pk, sk: 'meta', n: 5 } }));
    const twice = new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: table,
            Key: { pk, sk: 'meta' },
            UpdateExpression: 'ADD n :one',
            ExpressionAttributeValues: { ':one': 1 },
          },
        },
        { Put: { TableName: table, Item: { pk, sk: 'meta', n: 100 } } },
      ],
    });
    await expect(clients.doc.send(twice)).rejects.toThrow();

    expect(await get(pk, 'meta')).toEqual({ pk, sk: 'meta', n: 5 });
  });
});
