/**
 * The WorkQueue contract: every item message sent is delivered, intact, whatever its size (an
 * item past the SQS body limit travels by reference and comes back whole) and whatever its
 * text; an empty send delivers nothing. By the local bounded queue and by SQS (read back as the
 * worker reads it) alike. Delivery is at least once, so only what arrives is compared, as a set.
 */
import { describe, expect, it } from 'vitest';
import { S3BlobStore } from '../../../shared/adapters/aws/s3-blob-store.js';
import { decodeItemMessage, SqsWorkQueue } from '../../../shared/adapters/aws/sqs-work-queue.js';
import { LocalWorkQueue } from '../../../shared/adapters/local/local-work-queue.js';
import type { ItemMessage } from '../../../shared/model/model.js';
import type { WorkQueue } from '../../../shared/ports/ports.js';
import { receive, resetQueues } from '../moto.js';
import { awsStack, fresh } from './fixtures.js';

const aws = awsStack('contract-queue');

interface Harness {
  queue: WorkQueue;
  /** What a consumer gets, until `count` arrived or the queue stays empty. */
  drain(count: number): Promise<ItemMessage[]>;
}

const adapters: [string, () => Promise<Harness>][] = [
  [
    'local',
    async () => {
      const queue = new LocalWorkQueue(1_000);
      return {
        queue,
        async drain(count) {
          queue.close();
          const got: ItemMessage[] = [];
          for (let m = await queue.take(); m && got.length <= count; m = await queue.take()) got.push(m);
          return got;
        },
      };
    },
  ],
  [
    'sqs',
    async () => {
      const { clients, res } = aws();
      await resetQueues(clients, [res.queues.items.url]);
      const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
      // A small body limit, so the contract's large item is sent by reference.
      const queue = new SqsWorkQueue({
        client: clients.sqs,
        queueUrl: res.queues.items.url,
        blobs,
        maxBodyBytes: 4_000,
      });
      return {
        queue,
        async drain(count) {
          const received = await receive(clients.sqs, res.queues.items.url, count);
          return Promise.all(received.map((m) => decodeItemMessage(m.Body!, blobs)));
        },
      };
    },
  ],
];

const message = (runId: string, i: number, extra: Record<string, string> = {}): ItemMessage => ({
  runId,
  item: {
    id: `item #${i} / é`,
    row: i + 1,
    input: { src: `sentence ${i}`, tgt: `Sentence ${i}.`, ...extra },
  },
});

const byRow = (a: ItemMessage, b: ItemMessage) => a.item.row - b.item.row;

describe.each(adapters)('WorkQueue contract: %s', { timeout: 60_000 }, (_name, make) => {
  it('delivers every message sent, intact: non-ASCII text, and an item far past the body limit', async () => {
    const { queue, drain } = await make();
    const runId = fresh('run');
    const sent = [
      ...Array.from({ length: 12 }, (_, i) => message(runId, i)),
      message(runId, 12, { src: 'ü'.repeat(20_000), note: '“quoted” \u2028 line' }),
    ];
    await queue.sendItems(sent.slice(0, 5));
    await queue.sendItems(sent.slice(5));
    const got = await drain(sent.length);
    expect(new Set(got.map((m) => m.item.row)).size).toBe(sent.length);
    const once = [...new Map(got.map((m) => [m.item.row, m])).values()];
    expect(once.sort(byRow)).toEqual(sent);
  });

  it('an empty send delivers nothing', async () => {
    const { queue, drain } = await make();
    await queue.sendItems([]);
    expect(await drain(1)).toEqual([]);
  });
});
