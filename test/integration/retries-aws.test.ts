/**
 * Retries in seconds and dead letters that end what they stop, on moto with the real SQS
 * semantics: a record a handler failed is given its backoff with ChangeMessageVisibilityBatch
 * and delivered again long before its queue's visibility timeout; one that fails every time
 * still moves to the dead-letter queue after `maxReceiveCount` receives; and an ingest chunk
 * task that reaches the events dead-letter queue ends its run `failed`, naming the chunk.
 */
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HandlerEventSource, type Invocation, QueuePoller } from '../../cli/cloud/poller.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { FolderBlobStore } from '../../shared/adapters/local/folder-blob-store.js';
import { prepareRun } from '../../shared/use-cases/prepare-run.js';
import { REPO, snapshotEnv, suite } from '../helpers.js';
import {
  quietFunctionEnv,
  resetAllQueues,
  startTestStack,
  stopTestStack,
  TEST_REGION,
  type TestStack,
} from './moto.js';

const restoreEnv = snapshotEnv();
let stack: TestStack;
let root: typeof import('../../functions/root.js');
let deadLetter: typeof import('../../functions/dead-letter.js');

/** Receives before the dead-letter queue, on every queue of this stack. */
const MAX_RECEIVES = 4;
/** The items queue's visibility timeout: a record back before it was given a backoff. */
const ITEMS_VISIBILITY_SECONDS = 600;
/** Polls of an empty queue a test may make (a hang guard: each waits a quarter of a second). */
const MAX_EMPTY_POLLS = 400;

beforeAll(async () => {
  stack = await startTestStack('retries', {
    maxReceiveCount: MAX_RECEIVES,
    visibilityTimeouts: { items: ITEMS_VISIBILITY_SECONDS },
  });
  // The shortest schedule: each failed record is visible again a second later.
  Object.assign(process.env, quietFunctionEnv(stack), {
    ASSAY_RETRY_BASE_SECONDS: '1',
    ASSAY_RETRY_CAP_SECONDS: '1',
  });
  root = await import('../../functions/root.js');
  deadLetter = await import('../../functions/dead-letter.js');
}, 120_000);

afterAll(async () => {
  if (stack) await resetAllQueues(stack.clients, stack.res);
  await stopTestStack(stack);
  restoreEnv();
});

/** A handler on the items queue, with the dead-letter function's retries (this stack's clients). */
function itemsSource(onRecord: (record: SQSRecord) => Promise<void>): HandlerEventSource {
  const { retries } = root.deadLetterRoot({ clients: stack.clients });
  return {
    functionName: 'flaky',
    queueUrl: stack.res.queues.items.url,
    queueArn: stack.res.queues.items.arn,
    batchSize: 10,
    handler: root.sqsBatchHandler(onRecord, { parallel: true, retries }),
  };
}

/** Polls `source` until `done()`, at most {@link MAX_EMPTY_POLLS} empty receives; the invocations made. */
async function pollUntil(
  poller: QueuePoller,
  functionName: string,
  done: () => boolean | Promise<boolean>,
): Promise<Invocation[]> {
  const invocations: Invocation[] = [];
  let empty = 0;
  while (!(await done())) {
    const invocation = await poller.pollOnce(functionName);
    if (invocation) invocations.push(invocation);
    else {
      empty += 1;
      if (empty > MAX_EMPTY_POLLS)
        throw new Error(`${functionName}: nothing came back after ${empty} empty polls`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  return invocations;
}

describe('retries in seconds', { timeout: 180_000 }, () => {
  it('delivers a record that failed once again long before the visibility timeout', async () => {
    const { clients, res } = stack;
    const { Attributes } = await clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: res.queues.items.url,
        AttributeNames: ['VisibilityTimeout'],
      }),
    );
    expect(Number(Attributes?.VisibilityTimeout)).toBe(ITEMS_VISIBILITY_SECONDS);
    await clients.sqs.send(new SendMessageCommand({ QueueUrl: res.queues.items.url, MessageBody: 'flaky' }));
    await clients.sqs.send(new SendMessageCommand({ QueueUrl: res.queues.items.url, MessageBody: 'fine' }));

    const receives: { body: string; count: string }[] = [];
    const source = itemsSource(async (record) => {
      receives.push({ body: record.body, count: record.attributes.ApproximateReceiveCount });
      // A vendor's 429 on the first try.
      if (record.body === 'flaky' && record.attributes.ApproximateReceiveCount === '1')
        throw new Error('429');
    });
    const poller = new QueuePoller({ sqs: clients.sqs, region: TEST_REGION, sources: [source] });

    await pollUntil(poller, 'flaky', () => receives.some((r) => r.body === 'flaky' && r.count === '2'));

    expect(receives.filter((r) => r.body === 'flaky')).toEqual([
      { body: 'flaky', count: '1' },
      { body: 'flaky', count: '2' },
    ]);
    expect(receives.filter((r) => r.body === 'fine')).toEqual([{ body: 'fine', count: '1' }]);
    expect(await poller.idle()).toBe(true);
  });

  it('still moves a record that fails every time to the dead-letter queue after maxReceiveCount receives', async () => {
    const { clients, res } = stack;
    await clients.sqs.send(new SendMessageCommand({ QueueUrl: res.queues.items.url, MessageBody: 'broken' }));
    const counts: string[] = [];
    const source = itemsSource(async (record) => {
      counts.push(record.attributes.ApproximateReceiveCount);
      throw new Error('always');
    });
    const poller = new QueuePoller({ sqs: clients.sqs, region: TEST_REGION, sources: [source] });
    const dead: string[] = [];

    await pollUntil(poller, 'flaky', async () => {
      const out = await clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: res.queues.itemsDlq.url, MaxNumberOfMessages: 10 }),
      );
      dead.push(...(out.Messages ?? []).map((m) => m.Body ?? ''));
      return dead.length > 0;
    });

    expect(counts).toEqual(['1', '2', '3', '4']);
    expect(dead).toEqual(['broken']);
  });
});

describe('a dead-lettered ingest chunk', { timeout: 120_000 }, () => {
  it('ends its run failed, with the chunk named, through the dead-letter function', async () => {
    const { clients, res } = stack;
    const runStore = new DynamoRunStore({ client: clients.doc, tableName: res.table });
    const run = await prepareRun({
      suite: suite({ backends: ['openai:gpt-4o-mini'] }),
      prompts: new FolderBlobStore(REPO),
      datasetKey: 'datasets/test-suite/big.csv',
      datasetVersion: 'v1',
      reportPrefix: 'reports/{runId}/',
    });
    await runStore.createRun(run);
    // Chunk 0 handed its rows on; chunk 1's task died on the events queue.
    await runStore.closePart(run.runId, 0, { rows: [1, 2, 3], invalidRows: 0, last: false });
    const task = {
      chunk: {
        runId: run.runId,
        key: 'datasets/test-suite/big.csv',
        version: 'v1',
        format: 'csv',
        chunk: 1,
        start: 4096,
        row: 4,
        line: 5,
      },
    };
    await clients.sqs.send(
      new SendMessageCommand({ QueueUrl: res.queues.eventsDlq.url, MessageBody: JSON.stringify(task) }),
    );
    const handler = deadLetter.createDeadLetterHandler(root.deadLetterRoot({ clients }));
    const poller = new QueuePoller({
      sqs: clients.sqs,
      region: TEST_REGION,
      sources: [
        {
          functionName: 'dead-letter',
          queueUrl: res.queues.eventsDlq.url,
          queueArn: res.queues.eventsDlq.arn,
          handler,
        },
      ],
    });
    expect((await runStore.getRun(run.runId))?.status).toBe('ingesting');

    const invocations = await pollUntil(poller, 'dead-letter', () => poller.idle());

    expect(invocations.map((i) => [i.records, i.failed])).toEqual([[1, 0]]);
    const after = await runStore.getRun(run.runId);
    expect(after?.status).toBe('failed');
    expect(after?.finishedAt).toEqual(expect.any(String));
    // A store of its own: this one keeps the run's facts as it read them before the stop.
    const fresh = new DynamoRunStore({ client: clients.doc, tableName: res.table });
    expect(await fresh.stopped(run.runId)).toMatch(
      /^ingest chunk 1 of datasets\/test-suite\/big\.csv exhausted its receives on the events queue \(ApproximateReceiveCount 1\): its rows were not all read, so the run cannot complete and ends failed$/,
    );
    // The watchdog has nothing more to say about it.
    const { watchRuns } = await import('../../shared/use-cases/watch-runs.js');
    const watched = await watchRuns({
      runStore,
      trigger: { trigger: async () => {}, triggerSweep: async () => {} },
      stuckAfterMs: 0,
    });
    expect(watched.retriggered).not.toContain(run.runId);
    expect(watched.stuck.map((s) => s.runId)).not.toContain(run.runId);
  });
});
