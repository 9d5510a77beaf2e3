/**
 * The AWS shell's side of the secret-echo check (test/e2e/secret-echo.test.ts is the local
 * one): the provider key comes from Secrets Manager as the functions load it
 * (shared/adapters/aws/env.ts), the functions run in their containers on moto as `assay cloud`
 * runs them, and the vendor's fake answers every call with a 401 whose body echoes the request's
 * `Authorization` header and the key itself. Afterwards no DynamoDB item, no S3 object and no
 * line the functions printed holds the key. Ingest reads no secret (it checks the key names the
 * deployment declares, ASSAY_PROVIDER_KEYS); a provider secret that is plain text, not JSON, is
 * refused by the worker that reads it, without its value ever reaching a log line.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { paginateScan } from '@aws-sdk/client-dynamodb';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerEventSources, uploadFolder } from '../../cli/cloud/local-cloud.js';
import { type Invocation, QueuePoller } from '../../cli/cloud/poller.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { datasetUploadKey, suiteKey } from '../../shared/lib/layout/bucket.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, suiteInput } from '../helpers.js';
import {
  functionEnv,
  startTestStack,
  stopTestStack,
  TEST_REGION,
  type TestResources,
  type TestStack,
  uniqueNames,
} from './moto.js';

/** Not shaped like any vendor's key: only the remembered secret, not a pattern, can catch it. */
const KEY = 'tenant-SECRET123-from-secrets-manager';
/** A provider secret stored as plain text rather than a JSON object of keys. */
const PLAIN = 'plain-SECRET456-not-json';
const GOLD = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');

let stack: TestStack;
let clients: AwsClients;
let res: TestResources;
let blobs: S3BlobStore;
let fake: VendorFake;

/** Every chunk written to this process's stdout and stderr: where the containers' logs arrive. */
const printed: string[] = [];
const writes = { stdout: process.stdout.write, stderr: process.stderr.write };

function capture(): void {
  for (const name of ['stdout', 'stderr'] as const) {
    const stream = process[name];
    const original = writes[name];
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      printed.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      return (original as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
    }) as typeof stream.write;
  }
}

function release(): void {
  process.stdout.write = writes.stdout;
  process.stderr.write = writes.stderr;
}

async function createSecret(name: string, value: string): Promise<string> {
  const out = await clients.secrets.send(new CreateSecretCommand({ Name: name, SecretString: value }));
  return out.ARN!;
}

/** The functions' environment as the stack sets it, with the provider secret named by ARN and no key in it. */
function functionsEnv(secretArn: string): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of Object.keys(env)) if (name.endsWith('_API_KEY')) delete env[name];
  return {
    ...env,
    ...functionEnv(stack.moto.endpoint, res),
    OPENAI_BASE_URL: fake.env.OPENAI_BASE_URL,
    PROVIDER_SECRET_ARN: secretArn,
    // The deployment declares the key its secret holds: ingest checks the name, never the value.
    ASSAY_PROVIDER_KEYS: 'OPENAI_API_KEY',
    // Every line the functions can print: debug logs and the metrics.
    POWERTOOLS_LOG_LEVEL: 'DEBUG',
    POWERTOOLS_METRICS_DISABLED: 'false',
    POWERTOOLS_DEV: '',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

function pollerFor(env: Record<string, string | undefined>, invocations: Invocation[]): QueuePoller {
  return new QueuePoller({
    sqs: clients.sqs,
    region: TEST_REGION,
    sources: containerEventSources(res, env, { workerBatchSize: 10, workerConcurrency: 2 }),
    onInvocation: (invocation) => invocations.push(invocation),
  });
}

/** Uploads the suite `name`: the edit judge on OpenAI over its `gold.csv`. */
async function putSuite(name: string): Promise<void> {
  const suite = suiteInput({
    name,
    judge: 'edit',
    dataset: { path: 'gold.csv' },
    backends: ['openai:gpt-4o-mini'],
  });
  await blobs.put(suiteKey(name), JSON.stringify(suite), 'application/json');
}

/** Every DynamoDB item of the table, as text. */
async function tableText(): Promise<string[]> {
  const items: string[] = [];
  for await (const page of paginateScan({ client: clients.dynamo }, { TableName: res.table })) {
    for (const item of page.Items ?? []) items.push(JSON.stringify(item, inflated));
  }
  return items;
}

/** A binary attribute as the text it holds: a result's JSON is stored deflated. */
function inflated(_key: string, value: unknown): unknown {
  if (!(value instanceof Uint8Array)) return value;
  try {
    return inflateRawSync(value).toString('utf8');
  } catch {
    return Buffer.from(value).toString('utf8');
  }
}

/** Every object of the bucket, by key, as text. */
async function bucketText(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of await blobs.list('')) out.set(key, Buffer.from((await blobs.get(key))!).toString('utf8'));
  return out;
}

beforeAll(async () => {
  stack = await startTestStack('secret-echo');
  ({ clients, res } = stack);
  blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
  fake = await startVendorFake(() => {
    const authorization = String(fake.requests.at(-1)?.headers.authorization ?? '');
    return {
      status: 401,
      body: {
        error: {
          message: `Incorrect API key provided: ${authorization.replace(/^Bearer /, '')}. Request headers: {"authorization": "${authorization}"}`,
          type: 'invalid_request_error',
          code: 'invalid_api_key',
        },
      },
    };
  });
  await uploadFolder(blobs, join(REPO, 'prompts'), 'prompts/');
}, 120_000);

afterAll(async () => {
  release();
  await fake?.close();
  await stopTestStack(stack);
});

describe('a key from Secrets Manager echoed in a provider error body, on the AWS shell', {
  timeout: 180_000,
}, () => {
  it('is in no DynamoDB item, no S3 object and no line the functions printed', async () => {
    const arn = await createSecret(uniqueNames('keys').bucket, JSON.stringify({ OPENAI_API_KEY: KEY }));
    const invocations: Invocation[] = [];
    const poller = pollerFor(functionsEnv(arn), invocations);
    const name = 'secret-echo';
    capture();
    try {
      await putSuite(name);
      await blobs.put(datasetUploadKey(name, 'gold.csv'), await readFile(GOLD));
      await poller.runUntil(async () =>
        (await blobs.list(`reports/${name}/`)).some((key) => key.endsWith('/report.json')),
      );
      await poller.drain();
    } finally {
      await poller.close();
      release();
    }

    // The key reached the vendor, from the secret: the run made its calls with it.
    expect(fake.requests.length).toBeGreaterThan(0);
    expect(fake.requests.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(invocations.some((i) => i.functionName === 'worker')).toBe(true);

    const logs = printed.join('');
    // The functions did print (their Powertools JSON lines came through), and not the key.
    expect(logs).toMatch(/"service":"assay-worker"/);
    expect(logs).not.toContain('SECRET123');

    const items = await tableText();
    expect(items.length).toBeGreaterThan(0);
    expect(items.filter((item) => item.includes('SECRET123'))).toEqual([]);

    const objects = await bucketText();
    const report = [...objects.keys()].find(
      (key) => key.startsWith(`reports/${name}/`) && key.endsWith('/report.json'),
    );
    expect(report).toBeDefined();
    expect([...objects].filter(([, text]) => text.includes('SECRET123')).map(([key]) => key)).toEqual([]);
    // The failures are recorded, with the key replaced where the vendor echoed it.
    const results = items.filter((item) => item.includes('"failureKind"'));
    expect(results.length).toBeGreaterThan(0);
    expect(results.some((item) => item.includes('[redacted]'))).toBe(true);
  });

  it('a plain-text secret: ingest, which never reads it, queues the items; the worker refuses it, and the value is in no log line', async () => {
    const arn = await createSecret(uniqueNames('plain').bucket, PLAIN);
    const invocations: Invocation[] = [];
    const poller = pollerFor(functionsEnv(arn), invocations);
    const name = 'plain-secret';
    printed.length = 0;
    capture();
    try {
      await blobs.put(datasetUploadKey(name, 'gold.csv'), await readFile(GOLD));
      await poller.drain({ only: ['ingest'] });
      await putSuite(name);
      await poller.drain({ only: ['ingest'] });
      await poller.runUntil(() => invocations.some((i) => i.functionName === 'worker' && i.failed > 0));
    } finally {
      await poller.close();
      release();
    }

    const logs = printed.join('');
    // The dataset came before its suite (that upload alone is rejected: no suite yet); the suite's started the run.
    expect(logs).toContain('"message":"run started"');
    expect(logs).not.toMatch(/"service":"assay-ingest"[^\n]*is not JSON/);
    expect(logs).toMatch(/"service":"assay-worker"[^\n]*is not JSON/);
    expect(logs).not.toContain('SECRET456');
    expect(invocations.filter((i) => i.functionName === 'ingest').every((i) => i.failed === 0)).toBe(true);
    expect((await tableText()).filter((item) => item.includes('SECRET456'))).toEqual([]);
  });
});
