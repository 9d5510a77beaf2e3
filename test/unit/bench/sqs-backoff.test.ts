/**
 * The capacity model's SQS stand-in under the functions' retry backoff: a failed record given
 * its backoff with ChangeMessageVisibilityBatch comes back after it, in simulated time, not after
 * the queue's visibility timeout; a stale receipt is refused per entry, as SQS does.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import { SimAws } from '../../../bench/cloud/clients.js';
import { SimWorld } from '../../../bench/cloud/world.js';
import { type CloudResources, createCloudResources, uniqueNames } from '../../../cli/cloud/moto.js';
import { sqsRecord } from '../../../cli/cloud/poller.js';
import { RetryBackoffs } from '../../../functions/retry-backoff.js';
import type { AwsClients } from '../../../shared/adapters/aws/clients.js';

const world = new SimWorld();
const aws = new SimAws(world);
let clients: AwsClients;
let res: CloudResources;

const sim =
  <T>(body: () => Promise<T>) =>
  () =>
    world.run(body);

beforeAll(
  sim(async () => {
    clients = aws.clients();
    res = await createCloudResources(clients, uniqueNames('backoff'), { visibilityTimeouts: { items: 600 } });
  }),
);

describe('the SQS stand-in under the retry backoff', () => {
  it(
    'delivers a failed record again after its backoff, long before the visibility timeout',
    sim(async () => {
      const { url, arn } = res.queues.items;
      await clients.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'retry me' }));
      const receive = () =>
        clients.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            WaitTimeSeconds: 20,
            MessageSystemAttributeNames: ['All'],
          }),
        );
      const first = (await receive()).Messages ?? [];
      expect(first).toHaveLength(1);
      const failedAt = Date.now();
      const record = sqsRecord(first[0]!, arn, 'us-east-1');
      // Its third receive failed: at the floor of its backoff, it is visible again 4 s later.
      record.attributes.ApproximateReceiveCount = '3';
      const errors: unknown[] = [];
      await new RetryBackoffs({ sqs: clients.sqs, random: () => 0, onError: (e) => errors.push(e) }).delay([
        record,
      ]);
      expect(errors).toEqual([]);

      // Nothing before the backoff runs out: a long poll of 20 s gets it at 4 s.
      const second = (await receive()).Messages ?? [];
      const waited = Date.now() - failedAt;
      expect(second.map((m) => [m.Body, m.Attributes?.ApproximateReceiveCount])).toEqual([['retry me', '2']]);
      expect(waited).toBeGreaterThanOrEqual(4_000);
      expect(waited).toBeLessThan(5_000);

      // The first receive's handle is stale now: SQS refuses that entry, and the batch goes on.
      const out = await clients.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: url,
          Entries: [
            { Id: 'old', ReceiptHandle: first[0]!.ReceiptHandle!, VisibilityTimeout: 1 },
            { Id: 'now', ReceiptHandle: second[0]!.ReceiptHandle!, VisibilityTimeout: 1 },
          ],
        }),
      );
      expect(out.Successful?.map((e) => e.Id)).toEqual(['now']);
      expect(out.Failed?.map((e) => [e.Id, e.SenderFault])).toEqual([['old', true]]);
    }),
  );
});
