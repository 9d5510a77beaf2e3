/**
 * On AWS a suite reads only its own `datasets/<name>/` (and the folders the deployment shares)
 * and `prompts/<path>` keys: through the S3 notification, the events queue and the ingest
 * function on moto, a suite naming another suite's dataset, and one naming a prompt with `..`,
 * are each rejected once, with the reason in the log line, and nothing is retried into the DLQ.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventSources, loadFunctions, uploadFolder } from '../../cli/cloud/local-cloud.js';
import { type Invocation, QueuePoller } from '../../cli/cloud/poller.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { rejectionKey, suiteKey } from '../../shared/lib/layout/bucket.js';
import { REPO, snapshotEnv, suiteInput } from '../helpers.js';
import {
  quietFunctionEnv,
  resetAllQueues,
  startTestStack,
  stopTestStack,
  TEST_REGION,
  type TestResources,
  type TestStack,
} from './moto.js';

const restoreEnv = snapshotEnv();
let stack: TestStack;
let clients: AwsClients;
let res: TestResources;
let poller: QueuePoller;
let blobs: S3BlobStore;
let root: typeof import('../../functions/root.js');
const invocations: Invocation[] = [];
const GOLD = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');

async function waiting(queueUrl: string): Promise<number> {
  const out = await clients.sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }),
  );
  return out.Messages?.length ?? 0;
}

beforeAll(async () => {
  // A record the handler failed would be back in a second and in the DLQ after its second receive.
  stack = await startTestStack('suite-paths', { maxReceiveCount: 2, visibilityTimeouts: { events: 1 } });
  ({ clients, res } = stack);
  for (const name of Object.keys(process.env)) if (name.endsWith('_API_KEY')) delete process.env[name];
  delete process.env.ASSAY_DATASET_PREFIXES;
  Object.assign(process.env, quietFunctionEnv(stack));
  const functions = await loadFunctions();
  root = await import('../../functions/root.js');
  poller = new QueuePoller({
    sqs: clients.sqs,
    region: TEST_REGION,
    sources: eventSources(res, functions),
    onInvocation: (invocation) => invocations.push(invocation),
  });
  blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
  await uploadFolder(blobs, join(REPO, 'prompts'), 'prompts/');
  // Another suite's data, already in the bucket (its upload finds no suite: rejected, not read).
  await blobs.put('datasets/victim/secret.csv', await readFile(GOLD));
  await poller.drain({ only: ['ingest'] });
}, 120_000);

afterEach(async () => {
  vi.restoreAllMocks();
  await resetAllQueues(clients, res);
});

afterAll(async () => {
  await poller?.close();
  await stopTestStack(stack);
  restoreEnv();
});

/** Uploads a suite, lets ingest take its notification, and says what ingest logged as errors. */
async function uploadSuite(suite: Record<string, unknown>) {
  const errors = vi.spyOn(root.logger, 'error');
  const metric = vi.spyOn(root.metrics, 'addMetric');
  invocations.length = 0;
  await blobs.put(suiteKey(String(suite.name)), JSON.stringify(suite), 'application/json');
  await poller.drain({ only: ['ingest'] });
  return {
    errors: errors.mock.calls.map(([message, extra]) => ({ message, ...(extra as object) })),
    rejected: metric.mock.calls.filter(([name]) => name === 'IngestRejected').length,
  };
}

async function expectNothingRetriedOrQueued() {
  // Every ingest invocation took its record off the queue: none failed, none threw.
  expect(invocations.filter((i) => i.functionName === 'ingest')).toHaveLength(1);
  expect(invocations.every((i) => i.failed === 0 && i.error === undefined)).toBe(true);
  expect(await waiting(res.queues.events.url)).toBe(0);
  expect(await waiting(res.queues.eventsDlq.url)).toBe(0);
  expect(await waiting(res.queues.items.url)).toBe(0);
}

describe('ingest on moto: what a suite may read', { timeout: 60_000 }, () => {
  it("rejects a suite naming another suite's dataset, once, saying what it may read", async () => {
    const { errors, rejected } = await uploadSuite(
      suiteInput({ name: 'thief', dataset: { path: 'datasets/victim/secret.csv' } }),
    );

    expect(errors).toEqual([
      {
        message: 'upload rejected',
        key: 'suites/thief.json',
        suite: 'thief',
        reason:
          "dataset datasets/victim/secret.csv is outside the suite's datasets: suite thief reads a dataset under datasets/thief/",
      },
    ]);
    expect(rejected).toBe(1);
    // The reason is kept where the suite's reports go, for whoever looks for the run.
    const record = JSON.parse(new TextDecoder().decode(await blobs.get(rejectionKey('thief'))));
    expect(record).toMatchObject({
      key: 'suites/thief.json',
      reason: expect.stringContaining('outside the suite'),
    });
    await expectNothingRetriedOrQueued();
  });

  it('rejects a suite whose prompt path has `..`, once, before anything is read', async () => {
    await blobs.put('datasets/climber/gold.csv', await readFile(GOLD));
    await poller.drain({ only: ['ingest'] });
    const { errors, rejected } = await uploadSuite(
      suiteInput({
        name: 'climber',
        dataset: { path: 'gold.csv' },
        prompts: { classify: '../../../../etc/hostname' },
      }),
    );

    expect(errors).toEqual([
      {
        message: 'upload rejected',
        key: 'suites/climber.json',
        suite: 'climber',
        reason:
          'prompt path "../../../../etc/hostname" has a `..` segment: a prompt is read from prompts/<path> in the bucket, a path inside it',
      },
    ]);
    expect(rejected).toBe(1);
    await expectNothingRetriedOrQueued();
  });

  it('runs a suite on its own folder, so the rejections above are about the paths alone', async () => {
    const { errors } = await uploadSuite(suiteInput({ name: 'owner', dataset: { path: 'gold.csv' } }));
    expect(errors).toEqual([]);
    await blobs.put('datasets/owner/gold.csv', await readFile(GOLD));
    invocations.length = 0;
    await poller.drain({ only: ['ingest'] });
    expect(await waiting(res.queues.items.url)).toBeGreaterThan(0);
  });
});
