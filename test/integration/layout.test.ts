/**
 * The moto stand-in creates the resources the CDK stack declares: the same queues with the same
 * dead-letter queues, redrive counts, visibility timeouts and retention, the same table keys,
 * billing and TTL, and the same upload notifications. Read back from moto, compared with the
 * layout declaration the stack is built from (test/unit/infra/stack.test.ts checks that side).
 */
import { DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { GetBucketNotificationConfigurationCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_VISIBILITY_SECONDS } from '../../cli/cloud/moto.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { UPLOAD_PREFIXES } from '../../shared/lib/layout/bucket.js';
import {
  QUEUE_NAMES,
  QUEUES,
  queueNames,
  SQS_DEFAULT_VISIBILITY_SECONDS,
} from '../../shared/lib/layout/queues.js';
import { TABLE } from '../../shared/lib/layout/table.js';
import {
  createTestResources,
  type Moto,
  motoClients,
  startMoto,
  type TestResourceNames,
  type TestResources,
  uniqueNames,
} from './moto.js';

let moto: Moto;
let clients: AwsClients;
let names: TestResourceNames;
let res: TestResources;

beforeAll(async () => {
  moto = await startMoto();
  clients = motoClients(moto.endpoint);
  names = uniqueNames('layout');
  res = await createTestResources(clients, names, { visibilityTimeouts: 'declared' });
}, 120_000);

afterAll(async () => {
  for (const client of Object.values(clients ?? {})) client.destroy();
  await moto?.stop();
});

async function attributesOf(url: string): Promise<Record<string, string>> {
  const out = await clients.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }),
  );
  return out.Attributes ?? {};
}

describe('moto resources (createCloudResources) match the layout declaration', { timeout: 60_000 }, () => {
  it('names every queue and dead-letter queue by the declared suffixes', async () => {
    expect(queueNames('assay-x').items).toEqual({ queue: 'assay-x-items', deadLetter: 'assay-x-items-dlq' });
    for (const name of QUEUE_NAMES) {
      expect(names.queues[name].queue.endsWith(QUEUES[name].nameSuffix), name).toBe(true);
      expect(names.queues[name].deadLetter.endsWith(QUEUES[name].deadLetter.nameSuffix), name).toBe(true);
      const { QueueUrl } = await clients.sqs.send(
        new GetQueueUrlCommand({ QueueName: names.queues[name].queue }),
      );
      expect(QueueUrl).toBe(res.queues[name].url);
      const dlq = await clients.sqs.send(
        new GetQueueUrlCommand({ QueueName: names.queues[name].deadLetter }),
      );
      expect(dlq.QueueUrl).toBe(res.queues[`${name}Dlq`].url);
    }
  });

  it('gives each queue its declared visibility timeout, FIFO-ness and redrive to its own DLQ', async () => {
    for (const name of QUEUE_NAMES) {
      const declared = QUEUES[name];
      const attributes = await attributesOf(res.queues[name].url);
      expect(Number(attributes.VisibilityTimeout), name).toBe(declared.visibilityTimeoutSeconds);
      expect(attributes.FifoQueue === 'true', name).toBe(declared.fifo);
      expect(JSON.parse(attributes.RedrivePolicy ?? '{}'), name).toEqual({
        deadLetterTargetArn: res.queues[`${name}Dlq`].arn,
        maxReceiveCount: declared.maxReceiveCount,
      });
    }
  });

  it("gives each DLQ its declared retention and visibility (SQS's default where none is declared)", async () => {
    for (const name of QUEUE_NAMES) {
      const declared = QUEUES[name].deadLetter;
      const attributes = await attributesOf(res.queues[`${name}Dlq`].url);
      expect(Number(attributes.MessageRetentionPeriod), name).toBe(declared.retentionDays * 86_400);
      expect(Number(attributes.VisibilityTimeout), name).toBe(
        declared.visibilityTimeoutSeconds ?? SQS_DEFAULT_VISIBILITY_SECONDS,
      );
      expect(attributes.RedrivePolicy, name).toBeUndefined();
    }
  });

  it('creates the table with the declared keys, billing, TTL attribute and no other index', async () => {
    const { Table } = await clients.dynamo.send(new DescribeTableCommand({ TableName: res.table }));
    expect(Table?.KeySchema).toEqual([
      { AttributeName: TABLE.partitionKey.name, KeyType: 'HASH' },
      { AttributeName: TABLE.sortKey.name, KeyType: 'RANGE' },
    ]);
    expect(Table?.AttributeDefinitions).toEqual(
      [TABLE.partitionKey, TABLE.sortKey].map((key) => ({
        AttributeName: key.name,
        AttributeType: key.type,
      })),
    );
    expect(Table?.BillingModeSummary?.BillingMode).toBe(TABLE.billingMode);
    expect(Table?.GlobalSecondaryIndexes ?? []).toEqual(TABLE.globalSecondaryIndexes);
    const ttl = await clients.dynamo.send(new DescribeTimeToLiveCommand({ TableName: res.table }));
    expect(ttl.TimeToLiveDescription).toMatchObject({
      AttributeName: TABLE.timeToLiveAttribute,
      TimeToLiveStatus: 'ENABLED',
    });
  });

  it('sends ObjectCreated under each declared upload prefix to the events queue', async () => {
    const config = await clients.s3.send(
      new GetBucketNotificationConfigurationCommand({ Bucket: res.bucket }),
    );
    expect(
      (config.QueueConfigurations ?? []).map((c) => ({
        queue: c.QueueArn,
        prefixes: c.Filter?.Key?.FilterRules?.map((rule) => rule.Value),
      })),
    ).toEqual(UPLOAD_PREFIXES.map((prefix) => ({ queue: res.queues.events.arn, prefixes: [prefix] })));
  });

  it('gives every queue the short local visibility unless told otherwise, and the redrive count it is given', async () => {
    const local = await createTestResources(clients, uniqueNames('layout-local'), {
      maxReceiveCount: 5,
      visibilityTimeouts: { events: 45, itemsDlq: 20 },
      itemsVisibilityTimeout: 2,
    });
    const [events, items, itemsDlq, aggregate] = await Promise.all(
      [local.queues.events, local.queues.items, local.queues.itemsDlq, local.queues.aggregate].map((q) =>
        attributesOf(q.url),
      ),
    );
    expect(Number(events!.VisibilityTimeout)).toBe(45);
    expect(Number(items!.VisibilityTimeout)).toBe(2);
    expect(Number(itemsDlq!.VisibilityTimeout)).toBe(20);
    expect(Number(aggregate!.VisibilityTimeout)).toBe(LOCAL_VISIBILITY_SECONDS);
    for (const attributes of [events, items, aggregate]) {
      expect(JSON.parse(attributes!.RedrivePolicy!).maxReceiveCount).toBe(5);
    }
  });
});
