/**
 * A declared rate limit on the AWS shell (moto_server, the real handlers driven by the local
 * poller, the OpenAI SDK against a fake that enforces the limit with 429 + retry-after): the
 * workers lease the calls from the fleet's bucket in the table, so the run loses nothing and
 * is barely refused, and the bucket's shard counts no more leases than calls.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CloudFunctions,
  eventSources,
  loadFunctions,
  uploadFolder,
} from '../../cli/cloud/local-cloud.js';
import { QueuePoller } from '../../cli/cloud/poller.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { suiteKey } from '../../shared/lib/layout/bucket.js';
import { LIMIT_SK, limitPk, limitShardPk } from '../../shared/lib/layout/table.js';
import type { Report } from '../../shared/model/report.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, snapshotEnv, suiteInput } from '../helpers.js';
import {
  createTestResources,
  functionEnv,
  type Moto,
  motoClients,
  startMoto,
  TEST_REGION,
  type TestResources,
  uniqueNames,
} from './moto.js';

/** 12 usable rows of the AQUA English gold set and 2 that cannot be used. */
const GOLD_CSV = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');
const RPM = 240; // 4 per second, a burst of 4

const restoreEnv = snapshotEnv();
let moto: Moto;
let fake: VendorFake;
let clients: AwsClients;
let res: TestResources;
let functions: CloudFunctions;
let poller: QueuePoller;
let blobs: S3BlobStore;

beforeAll(async () => {
  [moto, fake] = await Promise.all([startMoto(), startVendorFake(undefined, { rpm: RPM })]);
  clients = motoClients(moto.endpoint);
  res = await createTestResources(clients, uniqueNames('fleet-limits'));
  Object.assign(process.env, functionEnv(moto.endpoint, res), {
    OPENAI_API_KEY: 'test',
    OPENAI_BASE_URL: fake.env.OPENAI_BASE_URL,
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
  });
  functions = await loadFunctions();
  poller = new QueuePoller({
    sqs: clients.sqs,
    region: TEST_REGION,
    // Two worker invocations at once, five records each, as two containers would take them.
    sources: eventSources(res, functions, { workerBatchSize: 5, workerConcurrency: 2 }),
  });
  blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
  await uploadFolder(blobs, join(REPO, 'prompts'), 'prompts/');
  await poller.drain({ only: ['ingest'] });
}, 120_000);

afterAll(async () => {
  for (const client of Object.values(clients ?? {})) client.destroy();
  await Promise.all([moto?.stop(), fake?.close()]);
  restoreEnv();
});

describe('a declared rate limit on AWS', { timeout: 90_000 }, () => {
  it('holds every call to the bucket in the table: nothing lost, few 429s', async () => {
    const name = 'fleet-limited';
    const suite = suiteInput({
      name,
      backends: ['openai:gpt-4o-mini'],
      run: { concurrency: 8, cache: false, limits: { 'openai:gpt-4o-mini': { rpm: RPM } } },
    });
    await blobs.put(suiteKey(name), JSON.stringify(suite), 'application/json');
    await poller.drain({ only: ['ingest'] });
    fake.reset();
    await blobs.put(`datasets/${name}/data.csv`, await readFile(GOLD_CSV));

    let key: string | undefined;
    await poller.runUntil(async () => {
      key = (await blobs.list(`reports/${name}/`)).find((k) => k.endsWith('/report.json'));
      return key !== undefined;
    });
    const report = JSON.parse(new TextDecoder().decode(await blobs.get(key!))) as Report;

    expect(report.counts).toMatchObject({ items: 14, scored: 12, failed: 2, invalidRows: 2 });
    expect(fake.requests).toHaveLength(12);
    expect(fake.throttled).toBeLessThanOrEqual(2);
    const item = async (pk: string) =>
      (await clients.doc.send(new GetCommand({ TableName: res.table, Key: { pk, sk: LIMIT_SK } }))).Item;
    // 240 RPM is one shard. Each lease is a write and covers one call or more (the calls the
    // worker had waiting): never more leases than calls (those the vendor refused included).
    const shard = await item(limitShardPk('openai:gpt-4o-mini', 0));
    expect(shard?.version).toBeGreaterThanOrEqual(1);
    expect(shard?.version).toBeLessThanOrEqual(12 + fake.throttled);
    // No call took from the per-call bucket (nothing was learned either: the fake sends no limits).
    expect(await item(limitPk('openai:gpt-4o-mini'))).toBeUndefined();
  });
});
