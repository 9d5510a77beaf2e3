import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  backoffCeilingSeconds,
  queueUrlOf,
  RETRY_BACKOFF,
  RetryBackoffs,
  retryBackoffFromEnv,
  retryDelaySeconds,
  retrySpanSeconds,
} from '../../functions/retry-backoff.js';
import { sqsBatchHandler } from '../../functions/root.js';
import { DEFAULT_MAX_RECEIVE_COUNT, QUEUES } from '../../shared/lib/layout/queues.js';
import { ConfigError, LeaseKeptError } from '../../shared/model/errors.js';

/** A seeded generator (mulberry32): the same draws every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('the retry schedule', () => {
  it('doubles from the base to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 40].map((n) => backoffCeilingSeconds(n))).toEqual([
      2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300,
    ]);
    // A count below one (never sent by SQS) is taken as the first receive.
    expect(backoffCeilingSeconds(0)).toBe(2);
    expect(backoffCeilingSeconds(2000)).toBe(300);
  });

  it('draws each wait between half its ceiling and its ceiling, spread out', () => {
    const random = seeded(7);
    for (let n = 1; n <= 16; n += 1) {
      const ceiling = backoffCeilingSeconds(n);
      const waits = Array.from({ length: 400 }, () => retryDelaySeconds(n, RETRY_BACKOFF, random));
      expect(waits.every(Number.isInteger)).toBe(true);
      expect(Math.min(...waits)).toBeGreaterThanOrEqual(ceiling / 2);
      expect(Math.max(...waits)).toBeLessThanOrEqual(ceiling);
      // Jittered: records failed together come back at different times once there is room to.
      if (ceiling >= 8) expect(new Set(waits).size).toBeGreaterThan(ceiling / 4);
    }
    expect(retryDelaySeconds(3, RETRY_BACKOFF, () => 0)).toBe(4);
    expect(retryDelaySeconds(3, RETRY_BACKOFF, () => 0.999)).toBe(8);
  });

  it('keeps a record retried for a quarter of an hour at least, about half an hour at most, with the default receives', () => {
    expect(QUEUES.items.maxReceiveCount).toBe(DEFAULT_MAX_RECEIVE_COUNT);
    const span = retrySpanSeconds(DEFAULT_MAX_RECEIVE_COUNT);
    expect(span).toEqual({ least: 1005, most: 2010 });
    expect(span.least).toBeGreaterThanOrEqual(15 * 60);
    expect(span.most).toBeLessThanOrEqual(35 * 60);
    // Three receives (the budget before there was a backoff) would not see out a minute.
    expect(retrySpanSeconds(3).most).toBeLessThan(60);
  });

  it('reads a shorter schedule from the environment, and refuses a bad one', () => {
    expect(retryBackoffFromEnv({})).toEqual(RETRY_BACKOFF);
    expect(retryBackoffFromEnv({ ASSAY_RETRY_BASE_SECONDS: '1', ASSAY_RETRY_CAP_SECONDS: '2' })).toEqual({
      baseSeconds: 1,
      capSeconds: 2,
    });
    for (const env of [
      { ASSAY_RETRY_BASE_SECONDS: '0' },
      { ASSAY_RETRY_BASE_SECONDS: '1.5' },
      { ASSAY_RETRY_CAP_SECONDS: 'soon' },
      { ASSAY_RETRY_BASE_SECONDS: '10', ASSAY_RETRY_CAP_SECONDS: '5' },
    ])
      expect(() => retryBackoffFromEnv(env), JSON.stringify(env)).toThrow(ConfigError);
  });

  it('names a queue by its ARN', () => {
    expect(queueUrlOf('arn:aws:sqs:eu-west-1:123456789012:assay-items')).toBe(
      'https://sqs.eu-west-1.amazonaws.com/123456789012/assay-items',
    );
    expect(queueUrlOf('arn:aws-cn:sqs:cn-north-1:123456789012:q')).toBe(
      'https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q',
    );
    expect(() => queueUrlOf('arn:aws:sns:eu-west-1:123456789012:topic')).toThrow(/not an SQS queue ARN/);
  });
});

/** A failed record of `queue`, received `receives` times. */
function record(i: number, receives: number, queue = 'arn:aws:sqs:us-east-1:123456789012:q'): SQSRecord {
  return {
    messageId: `m${i}`,
    receiptHandle: `h${i}`,
    body: '{}',
    attributes: { ApproximateReceiveCount: String(receives) },
    eventSourceARN: queue,
  } as unknown as SQSRecord;
}

/** An SQS client that answers GetQueueAttributes with `visibility` and records the rest. */
function fakeSqs(visibility: number, fail: { attributes?: number; change?: boolean } = {}) {
  const calls: { name: string; input: Record<string, unknown> }[] = [];
  let attributeFailures = fail.attributes ?? 0;
  const sqs = {
    send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      const name = command.constructor.name;
      calls.push({ name, input: command.input });
      if (name === 'GetQueueAttributesCommand') {
        if (attributeFailures > 0) {
          attributeFailures -= 1;
          throw new Error('throttled');
        }
        return { Attributes: { VisibilityTimeout: String(visibility) } };
      }
      if (fail.change) throw new Error('unreachable');
      const entries = command.input.Entries as { Id: string }[];
      return {
        Successful: entries.slice(1).map((e) => ({ Id: e.Id })),
        Failed: [{ Id: entries[0]!.Id, Code: 'ReceiptHandleIsInvalid', SenderFault: true }],
      };
    },
  };
  return { sqs: sqs as unknown as SQSClient, calls };
}

describe('RetryBackoffs', () => {
  it('sets each failed record visible again after its backoff, ten to a request, reading the visibility timeout once', async () => {
    const { sqs, calls } = fakeSqs(1800);
    const errors: unknown[] = [];
    const backoffs = new RetryBackoffs({ sqs, random: () => 0, onError: (error) => errors.push(error) });

    await backoffs.delay(Array.from({ length: 12 }, (_, i) => record(i, (i % 4) + 1)));
    await backoffs.delay([record(20, 9)]);

    expect(calls.filter((c) => c.name === 'GetQueueAttributesCommand')).toHaveLength(1);
    const changes = calls.filter((c) => c.name === 'ChangeMessageVisibilityBatchCommand');
    expect(changes.map((c) => (c.input.Entries as unknown[]).length)).toEqual([10, 2, 1]);
    expect(changes[0]!.input.QueueUrl).toBe('https://sqs.us-east-1.amazonaws.com/123456789012/q');
    const entries = changes.flatMap(
      (c) => c.input.Entries as { ReceiptHandle: string; VisibilityTimeout: number }[],
    );
    expect(entries.slice(0, 4)).toEqual([
      { Id: 'r0', ReceiptHandle: 'h0', VisibilityTimeout: 1 },
      { Id: 'r1', ReceiptHandle: 'h1', VisibilityTimeout: 2 },
      { Id: 'r2', ReceiptHandle: 'h2', VisibilityTimeout: 4 },
      { Id: 'r3', ReceiptHandle: 'h3', VisibilityTimeout: 8 },
    ]);
    expect(entries.at(-1)).toMatchObject({ ReceiptHandle: 'h20', VisibilityTimeout: 150 });
    // An entry SQS refused (its receipt expired) is reported; the record keeps its visibility timeout.
    expect(errors.map(String)).toEqual([
      'Error: ReceiptHandleIsInvalid: ',
      'Error: ReceiptHandleIsInvalid: ',
      'Error: ReceiptHandleIsInvalid: ',
    ]);
  });

  it('never lengthens a wait: a backoff that reaches the visibility timeout is left to it', async () => {
    const { sqs, calls } = fakeSqs(30);
    const backoffs = new RetryBackoffs({ sqs, random: () => 1 });

    await backoffs.delay([record(0, 4), record(1, 5), record(2, 6)]);

    const [change] = calls.filter((c) => c.name === 'ChangeMessageVisibilityBatchCommand');
    expect(change!.input.Entries).toEqual([{ Id: 'r0', ReceiptHandle: 'h0', VisibilityTimeout: 16 }]);
  });

  it('groups records by queue, and gives up quietly when SQS fails (the visibility timeout still brings them back)', async () => {
    const { sqs, calls } = fakeSqs(1800, { attributes: 1, change: true });
    const errors: string[] = [];
    const backoffs = new RetryBackoffs({ sqs, onError: (_error, queueUrl) => errors.push(queueUrl) });
    const other = 'arn:aws:sqs:us-east-1:123456789012:other';

    await expect(backoffs.delay([record(0, 1), record(1, 1, other)])).resolves.toBeUndefined();
    // The failed read is not kept: the next batch reads the visibility timeout again.
    await expect(backoffs.delay([record(2, 1)])).resolves.toBeUndefined();

    expect(errors.sort()).toEqual([
      'https://sqs.us-east-1.amazonaws.com/123456789012/other',
      'https://sqs.us-east-1.amazonaws.com/123456789012/q',
      'https://sqs.us-east-1.amazonaws.com/123456789012/q',
    ]);
    expect(calls.filter((c) => c.name === 'GetQueueAttributesCommand')).toHaveLength(3);
  });

  it('waits out the lease a failed attempt kept, for that record only', async () => {
    const { sqs, calls } = fakeSqs(1800);
    const backoffs = new RetryBackoffs({ sqs, random: () => 0 });

    await backoffs.delay([record(0, 1), record(1, 1), record(2, 1)], new Map([['m1', 960]]));

    const [change] = calls.filter((c) => c.name === 'ChangeMessageVisibilityBatchCommand');
    expect(change!.input.Entries).toEqual([
      { Id: 'r0', ReceiptHandle: 'h0', VisibilityTimeout: 1 },
      { Id: 'r1', ReceiptHandle: 'h1', VisibilityTimeout: 960 },
      { Id: 'r2', ReceiptHandle: 'h2', VisibilityTimeout: 1 },
    ]);
  });
});

describe('an SQS handler', () => {
  it('fails only the records that threw, each given its backoff, one that kept its lease no sooner than the lease', async () => {
    const { sqs, calls } = fakeSqs(1800);
    const handler = sqsBatchHandler(
      async (r) => {
        if (r.messageId === 'm1') throw new Error('a 429');
        if (r.messageId === 'm2') throw new LeaseKeptError(95_500, new Error('killed'));
      },
      { parallel: true, retries: new RetryBackoffs({ sqs, random: () => 0 }) },
    );
    const event = { Records: [0, 1, 2].map((i) => ({ ...record(i, 1), eventSource: 'aws:sqs' })) };

    const response = await handler(event, {} as never);

    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['m1', 'm2']);
    const [change] = calls.filter((c) => c.name === 'ChangeMessageVisibilityBatchCommand');
    expect(change!.input.Entries).toEqual([
      { Id: 'r0', ReceiptHandle: 'h1', VisibilityTimeout: 1 },
      { Id: 'r1', ReceiptHandle: 'h2', VisibilityTimeout: 96 },
    ]);
  });
});
