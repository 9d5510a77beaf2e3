/**
 * Spend bounded by the deployment whatever the suite says, on moto with the real handlers and a
 * stand-in for OpenAI's API: a suite pricing gpt-4o at 0/0 in run.prices is priced at the
 * deployment's prices, so its own budget binds and the day's spend across runs reaches the
 * daily limit; a suite naming a budget above the deployment's maximum, or a model it does not
 * allow, is rejected at upload.
 */

import { join } from 'node:path';
import { DeleteMessageCommand, type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { type CloudFunctions, loadFunctions, uploadFolder } from '../../cli/cloud/local-cloud.js';
import { lambdaContext, sqsRecord } from '../../cli/cloud/poller.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { rejectionKey, suiteKey } from '../../shared/lib/layout/bucket.js';
import { EMBEDDED_PRICES } from '../../shared/lib/providers/pricing.js';
import { type ItemResult, resultCost } from '../../shared/model/model.js';
import type { Report } from '../../shared/model/report.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, snapshotEnv, suiteInput } from '../helpers.js';
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
let workerModule: typeof import('../../functions/worker.js');
let fake: VendorFake;

/** The deployment's most a run may name as its budget. */
const MAX_RUN_BUDGET_USD = 50;
/** What the review found: gpt-4o at 0/0 in the suite's run.prices. */
const FREE_GPT4O = { models: { 'openai:gpt-4o': { input: 0, output: 0 } } };
const ITEMS = 16;
const CSV = [
  'idx,src,tgt,label',
  ...Array.from({ length: ITEMS }, (_, i) => `${i + 1},I has ${i} cat.,I have ${i} cats.,TP`),
].join('\n');

beforeAll(async () => {
  [stack, fake] = await Promise.all([startTestStack('spend'), startVendorFake()]);
  ({ clients, res } = stack);
  Object.assign(process.env, quietFunctionEnv(stack), {
    OPENAI_API_KEY: 'test',
    OPENAI_BASE_URL: fake.env.OPENAI_BASE_URL,
    ASSAY_STOP_CACHE_MS: '0',
    ASSAY_MAX_RUN_BUDGET_USD: String(MAX_RUN_BUDGET_USD),
  });
  functions = await loadFunctions();
  root = await import('../../functions/root.js');
  workerModule = await import('../../functions/worker.js');
  blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
  runStore = new DynamoRunStore({ client: clients.doc, tableName: res.table });
  await uploadFolder(blobs, join(REPO, 'prompts'), 'prompts/');
}, 120_000);

afterEach(async () => {
  await resetAllQueues(clients, res);
});

afterAll(async () => {
  await Promise.all([stopTestStack(stack), fake?.close()]);
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

/** Uploads a gpt-4o suite named `name` and its 16-row dataset, and hands the upload to ingest. */
async function upload(name: string, overrides: Parameters<typeof suiteInput>[0]) {
  const suite = suiteInput({
    name,
    dataset: { path: 'gold.csv' },
    backends: ['openai:gpt-4o'],
    ...overrides,
  });
  await blobs.put(suiteKey(name), JSON.stringify(suite));
  await blobs.put(`datasets/${name}/gold.csv`, CSV);
  expect(await functions.ingest(uploadEvent(`datasets/${name}/gold.csv`, name), context('ingest'))).toEqual({
    batchItemFailures: [],
  });
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

/** Hands the queue's messages to `handler` one at a time (each item sees what the ones before spent); how many. */
async function deliverOneByOne(
  queue: 'items' | 'aggregate',
  handler: CloudFunctions['worker'],
): Promise<number> {
  let delivered = 0;
  for (;;) {
    const [message] = await receiveAtMost(res.queues[queue].url, 1);
    if (!message) return delivered;
    const event = { Records: [sqsRecord(message, res.queues[queue].arn, 'us-east-1')] };
    expect(await handler(event, context(queue))).toEqual({ batchItemFailures: [] });
    delivered += 1;
  }
}

async function resultsOf(runId: string): Promise<ItemResult[]> {
  const results: ItemResult[] = [];
  for await (const r of runStore.results(runId)) results.push(r);
  return results;
}

const text = async (key: string) => new TextDecoder().decode(await blobs.get(key));

describe("a suite's run.prices at 0/0 on AWS", { timeout: 120_000 }, () => {
  it("is priced at the deployment's prices: the run's $0.01 budget stops it after a few items", async () => {
    await upload('zero-priced', { run: { budgetUsd: 0.01, prices: FREE_GPT4O } });
    const run = (await runStore.latestRun('zero-priced'))!;
    // The run record keeps what applies, and says which of the suite's prices did not.
    expect(run.suite.run.prices?.models).toEqual({});
    expect(run.suite.run.prices?.notes).toMatch(
      /this deployment prices openai:gpt-4o itself: the suite's run.prices for it was ignored/,
    );

    expect(await deliverOneByOne('items', functions.worker)).toBe(ITEMS);
    const results = await resultsOf(run.runId);
    expect(results).toHaveLength(ITEMS);
    const scored = results.filter((r) => r.status === 'scored');
    const overBudget = results.filter((r) => r.failure?.kind === 'budget');
    // A call reserves about $0.005 and costs about $0.0016 at gpt-4o's price: a few fit in $0.01.
    expect(scored.length).toBeGreaterThanOrEqual(1);
    expect(scored.length).toBeLessThanOrEqual(4);
    expect(scored.length + overBudget.length).toBe(ITEMS);
    for (const r of overBudget)
      expect(r.failure?.message).toMatch(/the run's budget of \$0.01 has no room left/);
    // Each scored item cost what gpt-4o costs, never $0.
    const gpt4o = EMBEDDED_PRICES.models['openai:gpt-4o']!;
    for (const r of scored) {
      const [stage] = Object.values(r.stages);
      const { input, output } = stage!.usage;
      expect(resultCost(r)).toBeCloseTo((input * gpt4o.input + output * gpt4o.output) / 1e6, 12);
      expect(resultCost(r)).toBeGreaterThan(0);
    }
    expect((await runStore.counters(run.runId))!.spentUsd).toBeLessThanOrEqual(0.01);

    // The report says so too.
    expect(await deliverOneByOne('aggregate', functions.aggregate)).toBeGreaterThanOrEqual(1);
    const report = JSON.parse(await text(`reports/zero-priced/${run.runId}/report.json`)) as Report;
    expect(report.counts.byFailure.budget).toBe(overBudget.length);
    expect(report.cost.totalUsd).toBeGreaterThan(0);
    expect(report.cost.suitePrices).toEqual({ models: [], note: expect.stringMatching(/openai:gpt-4o/) });
    const txt = await text(`reports/zero-priced/${run.runId}/report.txt`);
    expect(txt).toContain("prices: the price table's for every model");
    expect(txt).toMatch(/prices note: this deployment prices openai:gpt-4o itself/);
  });

  it("adds the deployment-priced cost to the day's spend, so the daily limit trips", async () => {
    // The day's spend is kept per UTC day: the test runs at noon of a fixed day (the clock
    // moving on from there), so it cannot straddle midnight whenever it is run. The day is in the
    // future: its shards' ttl must not have passed on moto's own clock, which drops expired items.
    vi.useFakeTimers({ toFake: ['Date'], now: new Date('2099-06-15T12:00:00Z'), shouldAdvanceTime: true });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const daySpent = await new DynamoRunStore({ client: clients.doc, tableName: res.table }).spentToday();
    // Room for about two calls at gpt-4o's price beyond what this day has spent already.
    const limit = daySpent + 0.003;
    const worker = workerModule.createWorkerHandler(
      root.workerRoot({ env: { ...process.env, ASSAY_DAILY_SPEND_LIMIT_USD: String(limit) } }),
    );
    await upload('zero-priced-daily', { run: { prices: FREE_GPT4O } });
    const run = (await runStore.latestRun('zero-priced-daily'))!;
    expect(run.suite.run.budgetUsd).toBe(MAX_RUN_BUDGET_USD);

    expect(await deliverOneByOne('items', worker)).toBe(ITEMS);
    const results = await resultsOf(run.runId);
    const scored = results.filter((r) => r.status === 'scored');
    const overDaily = results.filter((r) =>
      r.failure?.message.includes("the deployment's daily spend limit"),
    );
    expect(scored.length).toBeGreaterThanOrEqual(1);
    expect(scored.length).toBeLessThanOrEqual(3);
    expect(overDaily.length).toBe(ITEMS - scored.length);
    for (const r of overDaily) {
      expect(r.failure?.kind).toBe('budget');
      expect(r.stages).toEqual({});
    }
    expect(
      await new DynamoRunStore({ client: clients.doc, tableName: res.table }).spentToday(),
    ).toBeGreaterThanOrEqual(limit);
  });
});

describe('what a deployment refuses at upload', { timeout: 60_000 }, () => {
  const rejection = async (name: string) => JSON.parse(await text(rejectionKey(name))) as { reason: string };

  it('a budget above maxRunBudgetUsd, with the reason in rejected.json, and starts nothing', async () => {
    await upload('lavish', { run: { budgetUsd: 500 } });
    expect((await rejection('lavish')).reason).toBe(
      "run.budgetUsd $500 is above this deployment's maxRunBudgetUsd ($50): lower it, or deploy with a higher maxRunBudgetUsd",
    );
    expect(await runStore.latestRun('lavish')).toBeUndefined();
  });

  it("a model the deployment does not price, whatever the suite's run.prices, in any variant", async () => {
    await upload('finetuned', {
      backends: ['openai:gpt-4o'],
      run: { prices: { models: { 'openai:my-finetune': { input: 0, output: 0 } } } },
      variants: [{ name: 'plain' }, { name: 'tuned', backends: ['openai:my-finetune'] }],
    });
    expect((await rejection('finetuned')).reason).toMatch(
      /^backend openai:my-finetune \(in finetuned\.tuned\) is not a model this deployment allows \(allowedModels: the models its price table prices\)/,
    );
    expect(await runStore.latestRun('finetuned.plain')).toBeUndefined();
  });
});
