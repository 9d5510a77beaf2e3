/**
 * Spend and reach bounded by the deployment, on moto with the real handlers: `assay cloud stop`
 * ends a run's remaining items as `stopped` (each item still one result, the report written),
 * an upload over the item limit stops its run there, one asking for longer answers than the
 * deployment allows is rejected, and every result's cost adds to its UTC day's spend.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DeleteMessageCommand, type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type CloudFunctions, loadFunctions, uploadFolder } from '../../cli/cloud/local-cloud.js';
import { lambdaContext, sqsRecord } from '../../cli/cloud/poller.js';
import { stopCloudRun } from '../../cli/cloud/stop.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { suiteKey } from '../../shared/lib/layout/bucket.js';
import { RunNotFoundError } from '../../shared/model/errors.js';
import { failedResult, type ItemResult } from '../../shared/model/model.js';
import type { Report } from '../../shared/model/report.js';
import { prepareRun } from '../../shared/use-cases/prepare-run.js';
import { REPO, snapshotEnv, suite } from '../helpers.js';
import {
  quietFunctionEnv,
  resetAllQueues,
  startTestStack,
  stopTestStack,
  type TestResources,
  type TestStack,
} from './moto.js';

const restoreEnv = snapshotEnv();
let stack: TestStack;
let clients: AwsClients;
let res: TestResources;
let functions: CloudFunctions;
let blobs: S3BlobStore;
let runStore: DynamoRunStore;
let root: typeof import('../../functions/root.js');

/** The item limit of this deployment: the 14-row fixture is under it, a 25-row dataset over it. */
const MAX_ITEMS = 20;

beforeAll(async () => {
  stack = await startTestStack('stop');
  ({ clients, res } = stack);
  Object.assign(process.env, quietFunctionEnv(stack), {
    // A stop is seen at once (on AWS a worker looks again every few seconds).
    ASSAY_STOP_CACHE_MS: '0',
    ASSAY_MAX_ITEMS_PER_UPLOAD: String(MAX_ITEMS),
    ASSAY_MAX_OUTPUT_TOKENS: '4096',
    ASSAY_DEFAULT_BUDGET_USD: '100',
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
  await stopTestStack(stack);
  restoreEnv();
});

const context = (name: string) => lambdaContext({ functionName: name });

/** The S3 notification of an upload of `key`, as the events queue delivers it to ingest. */
function uploadEvent(key: string, sequencer: string): SQSEvent {
  const notification = {
    Records: [
      {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        eventTime: '2026-11-27T00:00:00.000Z',
        eventName: 'ObjectCreated:Put',
        s3: {
          bucket: { name: res.bucket, arn: `arn:aws:s3:::${res.bucket}` },
          object: { key, size: 1, eTag: 'etag', sequencer },
        },
      },
    ],
  };
  return {
    Records: [
      sqsRecord(
        { MessageId: `upload-${sequencer}`, ReceiptHandle: 'r', Body: JSON.stringify(notification) },
        res.queues.events.arn,
        'us-east-1',
      ),
    ],
  };
}

/** Receives up to `count` messages of a queue and hands them to `handler` as one batch. */
async function deliver(
  queue: 'items' | 'aggregate',
  handler: CloudFunctions['worker'],
  count: number,
): Promise<number> {
  const messages = await receiveAtMost(res.queues[queue].url, count);
  if (messages.length === 0) return 0;
  const event = { Records: messages.map((m) => sqsRecord(m, res.queues[queue].arn, 'us-east-1')) };
  expect(await handler(event, context(queue))).toEqual({ batchItemFailures: [] });
  return messages.length;
}

/** Receives up to `count` messages (SQS may give fewer a call), deleting them as the poller would after a success. */
async function receiveAtMost(queueUrl: string, count: number): Promise<Message[]> {
  const messages: Message[] = [];
  for (let tries = 0; messages.length < count && tries < 5; tries += 1) {
    const out = await clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: count - messages.length,
        WaitTimeSeconds: 1,
      }),
    );
    for (const m of out.Messages ?? []) {
      messages.push(m);
      await clients.sqs.send(
        new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }),
      );
    }
    if ((out.Messages ?? []).length === 0) break;
  }
  return messages;
}

async function resultsOf(runId: string): Promise<ItemResult[]> {
  const results: ItemResult[] = [];
  for await (const r of runStore.results(runId)) results.push(r);
  return results;
}

async function upload(name: string, csv: Buffer | string, overrides: Record<string, unknown> = {}) {
  await blobs.put(
    suiteKey(name),
    JSON.stringify(suite({ name, dataset: { path: 'gold.csv' }, ...overrides })),
  );
  await blobs.put(`datasets/${name}/gold.csv`, csv);
  expect(await functions.ingest(uploadEvent(`datasets/${name}/gold.csv`, name), context('ingest'))).toEqual({
    batchItemFailures: [],
  });
}

describe('assay cloud stop', { timeout: 90_000 }, () => {
  it('ends the items left as `stopped` without a model call: each item one result, the run reported', async () => {
    await upload(
      'stopper',
      await readFile(join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv')),
    );
    const runId = (await runStore.latestRun('stopper'))!.runId;
    // The deployment's default budget reached the run, whose suite named none.
    expect((await runStore.getRun(runId))?.suite.run.budgetUsd).toBe(100);

    // Some items are scored, then the run is stopped, then the rest are delivered.
    expect(await deliver('items', functions.worker, 4)).toBe(4);
    expect(
      await stopCloudRun({ runId, table: res.table, endpoint: stack.moto.endpoint, reason: 'enough' }),
    ).toEqual({
      status: 'stopped',
      runId,
      runStatus: 'running',
    });
    let delivered = 4;
    for (let n = 1; n > 0; delivered += n) n = await deliver('items', functions.worker, 10);
    expect(delivered).toBe(12);

    const results = await resultsOf(runId);
    expect(results).toHaveLength(14);
    expect(new Set(results.map((r) => r.itemId)).size).toBe(14);
    const stopped = results.filter((r) => r.failure?.kind === 'stopped');
    expect(stopped).toHaveLength(8);
    for (const r of stopped) {
      expect(r.failure?.message).toBe('the run was stopped: enough');
      expect(r.stages).toEqual({});
    }
    expect(results.filter((r) => r.status === 'scored')).toHaveLength(4);

    // The last result asked for aggregation: the report is written, the stopped items in it.
    expect(await deliver('aggregate', functions.aggregate, 1)).toBe(1);
    const report = JSON.parse(
      new TextDecoder().decode(await blobs.get(`reports/stopper/${runId}/report.json`)),
    ) as Report;
    expect(report.counts).toMatchObject({ items: 14, scored: 4, failed: 10 });
    expect(JSON.stringify(report)).toContain('"stopped":8');
    expect((await runStore.getRun(runId))?.status).toBe('done');
    // Its figures cover a part of the dataset: the leaderboard leaves it out.
    const board = await blobs.get('reports/leaderboard.json');
    expect(board === undefined || !new TextDecoder().decode(board).includes(runId)).toBe(true);

    // Stopping a done run changes nothing; an unknown run is an error.
    expect(await stopCloudRun({ runId, table: res.table, endpoint: stack.moto.endpoint })).toEqual({
      status: 'done',
      runId,
    });
    await expect(
      stopCloudRun({ runId: 'nobody-0', table: res.table, endpoint: stack.moto.endpoint }),
    ).rejects.toThrow(RunNotFoundError);
  });
});

describe('deploy limits at upload', { timeout: 90_000 }, () => {
  it('stops a run whose dataset has more rows than maxItemsPerUpload: the first rows only, the reason in the record', async () => {
    const rows = Array.from({ length: 25 }, (_, i) => `${i + 1},I has cat ${i}.,I have a cat ${i}.,TP`);
    await upload('toolarge', ['idx,src,tgt,label', ...rows].join('\n'));
    const run = (await runStore.latestRun('toolarge'))!;
    expect(run.total).toBe(MAX_ITEMS);
    expect(await runStore.stopped(run.runId)).toMatch(
      /more than 20 rows, this deployment's maxItemsPerUpload/,
    );

    let delivered = 0;
    for (let n = 1; n > 0; delivered += n) n = await deliver('items', functions.worker, 10);
    expect(delivered).toBe(MAX_ITEMS);
    const results = await resultsOf(run.runId);
    expect(results).toHaveLength(MAX_ITEMS);
    expect(results.every((r) => r.failure?.kind === 'stopped')).toBe(true);
  });

  it('rejects a suite asking for longer answers than maxOutputTokens, and starts nothing', async () => {
    const errors = vi.spyOn(root.logger, 'error');
    await upload('verbose', 'idx,src,tgt,label\n1,a,b,TP\n', { params: { maxTokens: 8000 } });
    expect(errors.mock.calls.map(([message]) => message)).toEqual(['upload rejected']);
    expect(errors.mock.calls[0]?.[1]).toMatchObject({
      reason: expect.stringMatching(/maxOutputTokens \(4096\)/),
    });
    expect(await runStore.latestRun('verbose')).toBeUndefined();
    errors.mockRestore();
  });
});

describe("the day's spend across runs", { timeout: 60_000 }, () => {
  it("adds every result's cost to its UTC day, whatever the run, read from the shards a while at a time", async () => {
    let now = Date.parse('2026-11-27T23:59:00Z');
    const store = new DynamoRunStore({
      client: clients.doc,
      tableName: res.table,
      now: () => now,
      daySpentCacheMs: 2_000,
    });
    const reader = new DynamoRunStore({ client: clients.doc, tableName: res.table, now: () => now });
    const runIds = ['day-a', 'day-b'];
    for (const runId of runIds) {
      const prepared = await prepareRun({
        suite: suite({ name: runId }),
        prompts: blobs,
        datasetKey: `datasets/${runId}/gold.csv`,
        datasetVersion: 'v',
        reportPrefix: `reports/${runId}/`,
      });
      await store.createRun({ ...prepared, runId });
    }
    const paid = (runId: string, row: number, usd: number): ItemResult => ({
      ...failedResult(
        { runId, itemId: `i${row}`, row, input: {} },
        { kind: 'provider', message: 'x' },
        new Date(now),
      ),
      stages: {
        judge: {
          calls: 1,
          cachedCalls: 0,
          costUsd: usd,
          latencyMs: 1,
          usage: { input: 1, output: 1, cached: 0 },
        },
      },
    });
    expect(await reader.spentToday()).toBe(0);
    await store.recordResult(paid('day-a', 1, 0.25));
    await store.recordResult(paid('day-b', 1, 0.5));
    await store.recordResult(paid('day-b', 2, 0));
    // A redelivery is not counted twice.
    await store.recordResult(paid('day-a', 1, 0.25));
    expect(await store.spentToday()).toBeCloseTo(0.75, 10);
    // Another process reads the shards, which take the process's spend when it flushes (the
    // worker does after each batch): cached, then read again once its cache is old.
    expect(await reader.spentToday()).toBe(0);
    await store.flushSpend();
    expect(await store.spentToday()).toBeCloseTo(0.75, 10);
    now += 1_000;
    expect(await reader.spentToday()).toBe(0);
    now += 1_000;
    expect(await reader.spentToday()).toBeCloseTo(0.75, 10);
    // A new UTC day starts from nothing.
    now = Date.parse('2026-11-28T00:00:01Z');
    expect(await reader.spentToday()).toBe(0);
    await store.recordResult(paid('day-a', 3, 1));
    expect(await store.spentToday()).toBe(1);
  });

  it("stop(): the first reason stays; a run's stop is seen once its cache is old; an unknown run is an error", async () => {
    let now = 1_000_000;
    const prepared = await prepareRun({
      suite: suite({ name: 'stop-cache' }),
      prompts: blobs,
      datasetKey: 'datasets/stop-cache/gold.csv',
      datasetVersion: 'v',
      reportPrefix: 'reports/stop-cache/',
    });
    const writer = new DynamoRunStore({ client: clients.doc, tableName: res.table });
    await writer.createRun({ ...prepared, runId: 'stop-cache-1' });
    const worker = new DynamoRunStore({ client: clients.doc, tableName: res.table, now: () => now });
    expect(await worker.stopped('stop-cache-1')).toBeUndefined();
    await writer.stop('stop-cache-1', 'first');
    await writer.stop('stop-cache-1', 'second');
    expect(await worker.stopped('stop-cache-1')).toBeUndefined();
    now += 5_000;
    expect(await worker.stopped('stop-cache-1')).toBe('first');
    await expect(writer.stop('nobody-1', 'x')).rejects.toThrow(RunNotFoundError);
  });
});
