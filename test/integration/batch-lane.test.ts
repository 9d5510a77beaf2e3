/**
 * The batch lane on AWS, against moto and the vendor fake: the real worker handler records the
 * calls its items wait for and lets their messages go; the real batch-poller handler submits
 * them as an OpenAI batch, polls it, stores the answers and sends the items back to the queue;
 * the worker then scores them. A request that failed inside the batch is made synchronously.
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { QueuePoller } from '../../cli/cloud/poller.js';
import { promptStoreFor } from '../../cli/local-run.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { DynamoBatchStore } from '../../shared/adapters/aws/dynamo-batch-store.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { SqsWorkQueue } from '../../shared/adapters/aws/sqs-work-queue.js';
import { readRows } from '../../shared/lib/datasets/read.js';
import { BATCH_DISCOUNT } from '../../shared/lib/providers/batch.js';
import type { ItemResult } from '../../shared/model/model.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { prepareRun } from '../../shared/use-cases/prepare-run.js';
import { startRun } from '../../shared/use-cases/start-run.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { EXAMPLE_DATA, REPO, snapshotEnv, suiteInput } from '../helpers.js';
import {
  createTestResources,
  functionEnv,
  type Moto,
  motoClients,
  startMoto,
  type TestResources,
  uniqueNames,
} from './moto.js';

const restoreEnv = snapshotEnv();
let moto: Moto;
let clients: AwsClients;
let res: TestResources;
let fake: VendorFake;
let runStore: DynamoRunStore;
let worker: QueuePoller;
let pollBatches: typeof import('../../functions/batch-poller.js').handler;

const ITEMS = 12;

beforeAll(async () => {
  moto = await startMoto();
  clients = motoClients(moto.endpoint);
  res = await createTestResources(clients, uniqueNames('batchlane'));
  fake = await startVendorFake((call) => {
    // Every fourth request fails inside the batch; synchronous calls always answer.
    if (call.batch && call.index % 4 === 0) return { status: 500 };
    return { text: JSON.stringify({ label: call.promptText.length % 2 ? 'TP' : 'FP1', reason: 'fake' }) };
  });
  Object.assign(process.env, functionEnv(moto.endpoint, res), fake.env, {
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
  });
  const workerModule = await import('../../functions/worker.js');
  pollBatches = (await import('../../functions/batch-poller.js')).handler;
  runStore = new DynamoRunStore({ client: clients.doc, tableName: res.table });
  worker = new QueuePoller({
    sqs: clients.sqs,
    region: 'us-east-1',
    sources: [
      {
        functionName: 'worker',
        queueUrl: res.queues.items.url,
        queueArn: res.queues.items.arn,
        handler: workerModule.handler,
      },
    ],
  });
}, 120_000);

afterAll(async () => {
  for (const client of Object.values(clients ?? {})) client.destroy();
  await fake?.close();
  await moto?.stop();
  restoreEnv();
});

async function startBatchRun() {
  const suite = validateSuite(
    suiteInput({
      name: 'batch-lane-aws',
      dataset: { path: 'gold_tp_fp3_fp2_fp1_en.csv', lang: 'en' },
      backends: ['openai:gpt-4o-mini'],
      run: { lane: 'batch', sample: { n: ITEMS, seed: 3 } },
    }),
    'batch-lane-aws.suite.json',
  );
  const run = await prepareRun({
    suite,
    prompts: promptStoreFor(REPO),
    datasetKey: 'datasets/batch-lane-aws/gold.csv',
    datasetVersion: `v-${Date.now()}`,
    reportPrefix: 'reports/batch-lane-aws/',
  });
  const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
  const queue = new SqsWorkQueue({ client: clients.sqs, queueUrl: res.queues.items.url, blobs });
  const trigger = { trigger: async () => {}, triggerSweep: async () => {} };
  const rows = readRows(
    createReadStream(join(EXAMPLE_DATA, 'gold_tp_fp3_fp2_fp1_en.csv')),
    'csv',
    suite.dataset,
  );
  await startRun({ runStore, queue, trigger }, { run, rows, resume: false });
  return run;
}

async function results(runId: string): Promise<ItemResult[]> {
  const out: ItemResult[] = [];
  for await (const result of runStore.results(runId)) out.push(result);
  return out;
}

const syncCalls = () => fake.requests.filter((r) => r.path.endsWith('/chat/completions')).length;

it('waits, batches, collects and wakes the items; failed batch requests end scored synchronously', async () => {
  fake.setBatchOptions({ pollsBeforeDone: 1 });
  const run = await startBatchRun();
  const store = new DynamoBatchStore({ client: clients.doc, tableName: res.table });

  // The worker: every item waits for a batch answer, none is recorded, no model is called.
  await worker.drain();
  expect(await results(run.runId)).toEqual([]);
  expect(syncCalls()).toBe(0);
  const waiting = await store.waitingCalls(run.runId);
  expect(waiting.length).toBeGreaterThan(0);
  expect(waiting.length).toBeLessThanOrEqual(ITEMS);

  // The poller's first pass submits one batch (its first poll says: still running).
  expect(await pollBatches()).toMatchObject({ submitted: 1, closed: 0, woken: 0 });
  expect(fake.batches).toHaveLength(1);
  expect(fake.batches[0]!.entries).toHaveLength(waiting.length);
  expect(await store.waitingCalls(run.runId)).toEqual([]);

  // The second pass collects it and sends every waiting item back.
  const pass = await pollBatches();
  expect(pass).toMatchObject({ submitted: 0, closed: 1, woken: ITEMS });
  expect(await store.openBatches()).toEqual([]);

  await worker.drain();
  const done = await results(run.runId);
  expect(done).toHaveLength(ITEMS);
  expect(done.every((r) => r.status === 'scored')).toBe(true);
  const failedInBatch = fake.batches[0]!.entries.filter((e) => 'status' in e.reply).length;
  expect(failedInBatch).toBeGreaterThan(0);
  // Exactly the requests the batch failed were asked again synchronously.
  expect(syncCalls()).toBe(failedInBatch);

  // Batch answers are billed at the discount, and the saving is kept per stage.
  const spends = done.flatMap((r) => Object.values(r.stages));
  const batchCalls = spends.reduce((n, s) => n + (s.batchCalls ?? 0), 0);
  expect(batchCalls).toBe(fake.batches[0]!.entries.length - failedInBatch);
  const saved = spends.reduce((n, s) => n + (s.batchSavedUsd ?? 0), 0);
  expect(saved).toBeGreaterThan(0);
  const counters = await runStore.counters(run.runId);
  expect(counters).toMatchObject({ done: ITEMS, total: ITEMS });
  expect(BATCH_DISCOUNT).toBe(0.5);

  // Nothing left for the poller to do.
  expect(await pollBatches()).toMatchObject({ submitted: 0, closed: 0, woken: 0 });
}, 120_000);

it('keeps a run marked when a call is recorded while the poller submits its calls', async () => {
  const store = new DynamoBatchStore({ client: clients.doc, tableName: res.table });
  const runId = `race-${Date.now()}`;
  const call = (key: string) => ({
    key,
    backend: 'openai:gpt-4o-mini',
    customId: `r1-x-${key}`,
    request: { model: '', prompt: key },
  });
  const marked = async () => (await store.runsWithWaitingCalls()).find((r) => r.runId === runId);

  expect(await store.wait(runId, 'item-1', call('k1'), 'body-1')).toEqual({ state: 'waiting' });
  const first = await marked();
  expect(first).toBeDefined();
  // The poller has read the mark and the waiting calls; a second call is recorded now.
  expect(await store.waitingCalls(runId)).toHaveLength(1);
  await store.wait(runId, 'item-2', call('k2'), 'body-2');
  await store.clearMark(runId, first!.mark);
  // Still marked: the next pass submits k2.
  const second = await marked();
  expect(second?.mark).not.toBe(first!.mark);
  expect((await store.waitingCalls(runId)).map((c) => c.key).sort()).toEqual(['k1', 'k2']);
  await store.clearMark(runId, second!.mark);
  expect(await marked()).toBeUndefined();

  // A second item waiting for the same call adds a waiter, not a call, and does not mark the run again.
  await store.wait(runId, 'item-3', call('k2'), 'body-3');
  expect(await marked()).toBeUndefined();
  const open = { runId, batchId: 'b1', backend: 'openai:gpt-4o-mini', submittedAt: new Date().toISOString() };
  await store.addBatch(open, ['k1', 'k2']);
  expect(await store.batchCalls(open)).toHaveLength(2);
  const bodies = await store.closeBatch(
    open,
    new Map([
      ['k1', 'sync'],
      ['k2', 'sync'],
    ]),
  );
  expect(bodies.sort()).toEqual(['body-1', 'body-2', 'body-3']);
  expect(await store.callState(runId, 'k2')).toEqual({ state: 'sync' });
}, 60_000);
