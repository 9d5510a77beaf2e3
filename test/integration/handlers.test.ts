/**
 * Each function on its sample payloads (events/*.json), invoked directly, against moto: the
 * samples are real shapes, ingest routes and decodes keys, permanent problems are dropped
 * (logged) instead of retried forever, and worker → dead-letter → aggregate complete a run.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CreateQueueCommand, DeleteQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type CloudFunctions, loadFunctions, uploadFolder } from '../../cli/cloud/local-cloud.js';
import { lambdaContext } from '../../cli/cloud/poller.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { decodeItemMessage } from '../../shared/adapters/aws/sqs-work-queue.js';
import { suiteKey } from '../../shared/lib/layout/bucket.js';
import type { Report } from '../../shared/model/report.js';
import { prepareRun } from '../../shared/use-cases/prepare-run.js';
import { REPO, snapshotEnv, suite } from '../helpers.js';
import {
  createTestResources,
  functionEnv,
  type Moto,
  motoClients,
  resetAllQueues,
  resetQueues,
  startMoto,
  type TestResources,
  uniqueNames,
} from './moto.js';

const restoreEnv = snapshotEnv();
let moto: Moto;
let clients: AwsClients;
let res: TestResources;
let functions: CloudFunctions;
let blobs: S3BlobStore;
let runStore: DynamoRunStore;
let root: typeof import('../../functions/root.js');

/** The run the item, DLQ and aggregate samples belong to. */
const SAMPLE_RUN_ID = 'quickstart-0123456789ab';
const quickstart = suite({ name: 'quickstart', dataset: { path: 'gold.csv' } });

/** A fresh copy of a sample payload (tests mutate it). */
async function sample(name: string): Promise<SQSEvent> {
  return structuredClone(JSON.parse(await readFile(join(REPO, 'events', name), 'utf8')) as SQSEvent);
}

/** Rewrites the JSON body of the sample's first record. */
function withBody(event: SQSEvent, edit: (body: Record<string, unknown>) => unknown): SQSEvent {
  const record = event.Records[0]!;
  record.body = JSON.stringify(edit(JSON.parse(record.body)));
  return event;
}

/** The S3 notification sample, addressed to the test bucket. */
function inTestBucket(body: Record<string, unknown>) {
  const records = body.Records as { s3: { bucket: { name: string; arn: string } } }[];
  for (const r of records) r.s3.bucket = { name: res.bucket, arn: `arn:aws:s3:::${res.bucket}` };
  return body;
}

async function queued(queueUrl: string): Promise<string[]> {
  const out = await clients.sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }),
  );
  return (out.Messages ?? []).map((m) => m.Body ?? '');
}

const context = (functionName: string) => lambdaContext({ functionName });

beforeAll(async () => {
  moto = await startMoto();
  clients = motoClients(moto.endpoint);
  res = await createTestResources(clients, uniqueNames('handlers'));
  Object.assign(process.env, functionEnv(moto.endpoint, res), {
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
  });
  functions = await loadFunctions();
  root = await import('../../functions/root.js');
  blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
  runStore = new DynamoRunStore({ client: clients.doc, tableName: res.table });
  await uploadFolder(blobs, join(REPO, 'prompts'), 'prompts/');
}, 120_000);

afterEach(async () => {
  await resetAllQueues(clients, res);
});

afterAll(async () => {
  for (const client of Object.values(clients ?? {})) client.destroy();
  await moto?.stop();
  restoreEnv();
});

describe('ingest', { timeout: 30_000 }, () => {
  it('ignores the s3:TestEvent sample', async () => {
    const event = withBody(await sample('s3-test-event.json'), (body) => ({ ...body, Bucket: res.bucket }));

    expect(await functions.ingest(event, context('ingest'))).toEqual({ batchItemFailures: [] });
    expect(await queued(res.queues.items.url)).toEqual([]);
  });

  it('starts a run from the S3-via-SQS sample, decoding `caf%C3%A9+gold.csv`, once per upload', async () => {
    await blobs.put(suiteKey('quickstart'), JSON.stringify(quickstart));
    const csv = await readFile(join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv'));
    await blobs.put('datasets/quickstart/café gold.csv', csv);
    const event = withBody(await sample('s3-via-sqs.json'), inTestBucket);

    expect(await functions.ingest(event, context('ingest'))).toEqual({ batchItemFailures: [] });
    const items = await Promise.all(
      (await queued(res.queues.items.url)).map((b) => decodeItemMessage(b, blobs)),
    );
    expect(items.length).toBeGreaterThan(0);
    const run = await runStore.getRun(items[0]!.runId);
    expect(run).toMatchObject({
      status: 'running',
      total: 14,
      invalidRows: 2,
      datasetKey: 'datasets/quickstart/café gold.csv',
      reportPrefix: `reports/quickstart/${run?.runId}/`,
    });

    // The same event again (SQS redelivery): the same run, already started, nothing sent.
    await resetQueues(clients, [res.queues.items.url]);
    const again = withBody(await sample('s3-via-sqs.json'), inTestBucket);
    expect(await functions.ingest(again, context('ingest'))).toEqual({ batchItemFailures: [] });
    expect(await queued(res.queues.items.url)).toEqual([]);
  });

  it('drops what retrying cannot fix: a body that is not S3, a dataset without its suite, an invalid suite', async () => {
    await blobs.put('suites/broken.json', '{"version": 1, "name": "broken"}');
    const notS3 = withBody(await sample('s3-via-sqs.json'), () => ({ hello: 'world' }));
    const orphan = withBody(await sample('s3-via-sqs.json'), (body) => {
      const s3 = (inTestBucket(body).Records as { s3: { object: { key: string } } }[])[0]!.s3;
      s3.object.key = 'datasets/nobody/data.csv';
      return body;
    });
    const invalid = withBody(await sample('s3-via-sqs.json'), (body) => {
      const s3 = (inTestBucket(body).Records as { s3: { object: { key: string } } }[])[0]!.s3;
      s3.object.key = 'suites/broken.json';
      return body;
    });

    const errors = vi.spyOn(root.logger, 'error');
    const metric = vi.spyOn(root.metrics, 'addMetric');

    for (const event of [notS3, orphan, invalid]) {
      expect(await functions.ingest(event, context('ingest'))).toEqual({ batchItemFailures: [] });
    }

    expect(await queued(res.queues.items.url)).toEqual([]);
    expect(errors.mock.calls.map(([message, extra]) => [message, (extra as { key?: string })?.key])).toEqual([
      ['events queue message is not an S3 notification: dropped', undefined],
      ['upload rejected', 'datasets/nobody/data.csv'],
      ['upload rejected', 'suites/broken.json'],
    ]);
    expect(errors.mock.calls[1]?.[1]).toMatchObject({
      reason: expect.stringMatching(/^no suite at suites\/nobody\.json/),
    });
    expect(errors.mock.calls[2]?.[1]).toMatchObject({ reason: expect.stringMatching(/invalid suite/) });
    expect(metric.mock.calls.filter(([name]) => name === 'IngestRejected')).toHaveLength(3);
    errors.mockRestore();
    metric.mockRestore();
  });
});

describe('worker, dead-letter and aggregate on their samples', { timeout: 30_000 }, () => {
  it('scores the item batch, records the DLQ record as failed, and writes the report for the trigger', async () => {
    // The run the samples belong to: 3 items, nothing scored yet.
    const prepared = await prepareRun({
      suite: quickstart,
      prompts: blobs,
      datasetKey: 'datasets/quickstart/gold.csv',
      datasetVersion: 'sample',
      reportPrefix: `reports/quickstart/${SAMPLE_RUN_ID}/`,
    });
    await runStore.createRun({ ...prepared, runId: SAMPLE_RUN_ID });
    await runStore.closePart(SAMPLE_RUN_ID, 0, { rows: [1, 2, 3], invalidRows: 0, last: true });

    expect(await functions.worker(await sample('sqs-item-batch.json'), context('worker'))).toEqual({
      batchItemFailures: [],
    });
    expect(await runStore.counters(SAMPLE_RUN_ID)).toMatchObject({ done: 2, failed: 0, total: 3 });

    expect(await functions.deadLetter(await sample('dlq-record.json'), context('dead-letter'))).toEqual({
      batchItemFailures: [],
    });
    expect(await runStore.counters(SAMPLE_RUN_ID)).toMatchObject({ done: 2, failed: 1, total: 3 });
    const failed = [];
    for await (const r of runStore.results(SAMPLE_RUN_ID)) if (r.status === 'failed') failed.push(r);
    expect(failed).toMatchObject([
      {
        itemId: '2',
        failure: {
          kind: 'dead_letter',
          message: 'exhausted its receives on the items queue (ApproximateReceiveCount 4)',
        },
      },
    ]);
    // The last result completed the run: the dead-letter function asked for aggregation.
    expect(await queued(res.queues.aggregate.url)).toEqual([JSON.stringify({ runId: SAMPLE_RUN_ID })]);

    expect(await functions.aggregate(await sample('aggregate-trigger.json'), context('aggregate'))).toEqual({
      batchItemFailures: [],
    });
    const report = JSON.parse(
      new TextDecoder().decode(await blobs.get(`reports/quickstart/${SAMPLE_RUN_ID}/report.json`)),
    ) as Report;
    expect(report.counts).toMatchObject({ items: 3, scored: 2, failed: 1 });
    expect((await runStore.getRun(SAMPLE_RUN_ID))?.status).toBe('done');

    // A second trigger (they are at least once) is skipped by the claim, not an error.
    expect(await functions.aggregate(await sample('aggregate-trigger.json'), context('aggregate'))).toEqual({
      batchItemFailures: [],
    });
  });

  it('fails only the worker record that is not an item message, so it alone goes to the DLQ', async () => {
    const event = await sample('sqs-item-batch.json');
    event.Records[1]!.body = '{"not":"an item"}';

    const response = await functions.worker(event, context('worker'));

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[1]!.messageId }] });
  });

  it('drops a dead letter without item identity and an invalid trigger instead of retrying them', async () => {
    const deadLetter = await sample('dlq-record.json');
    deadLetter.Records[0]!.body = 'not json';
    const trigger = withBody(await sample('aggregate-trigger.json'), () => ({ run: 'x' }));
    const unknownRun = withBody(await sample('dlq-record.json'), (body) => ({
      ...body,
      runId: 'nobody-000000000000',
    }));

    expect(await functions.deadLetter(deadLetter, context('dead-letter'))).toEqual({ batchItemFailures: [] });
    expect(await functions.deadLetter(unknownRun, context('dead-letter'))).toEqual({ batchItemFailures: [] });
    expect(await functions.aggregate(trigger, context('aggregate'))).toEqual({ batchItemFailures: [] });
  });

  it('rejects an event that is not an SQS batch (a wiring mistake) by throwing', async () => {
    await expect(
      functions.worker({ Records: [{ body: 'x' }] } as unknown as SQSEvent, context('worker')),
    ).rejects.toThrow(/not an SQS event/);
  });
});

describe('AWS errors', { timeout: 30_000 }, () => {
  it('fail the ingest record, so SQS delivers the upload again', async () => {
    await blobs.put(suiteKey('quickstart'), JSON.stringify(quickstart));
    await blobs.put(
      'datasets/quickstart/café gold.csv',
      await readFile(join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv')),
    );
    const event = withBody(await sample('s3-via-sqs.json'), (body) => {
      const s3 = (inTestBucket(body).Records as { s3: { object: { key: string; sequencer: string } } }[])[0]!
        .s3;
      s3.object.sequencer = 'another-upload';
      return body;
    });
    // The items queue is gone: SendMessageBatch fails.
    await clients.sqs.send(new DeleteQueueCommand({ QueueUrl: res.queues.items.url }));
    try {
      // Every record of the batch failed: Powertools throws, Lambda returns them all to the queue.
      await expect(functions.ingest(event, context('ingest'))).rejects.toThrow(/All records failed/);
    } finally {
      await clients.sqs.send(new CreateQueueCommand({ QueueName: res.queues.items.url.split('/').pop() }));
    }
  });
});
