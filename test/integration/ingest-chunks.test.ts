/**
 * Ingest of a dataset too big for one invocation continues in further invocations: with a
 * budget of 4 rows per invocation, the 14-row fixture takes several ingest invocations, each
 * sending itself the rest (a continuation message on the events queue), and every row still
 * ends as exactly one result, with the metrics of a local run of the same data.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CloudFunctions, eventSources, loadFunctions } from '../../cli/cloud/local-cloud.js';
import { type Invocation, QueuePoller } from '../../cli/cloud/poller.js';
import { runLocal } from '../../cli/local-run.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { suiteKey } from '../../shared/lib/layout/bucket.js';
import type { Report } from '../../shared/model/report.js';
import { REPO, snapshotEnv, suiteInput, tempDir } from '../helpers.js';
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
const ROWS_PER_INVOCATION = 4;

const restoreEnv = snapshotEnv();
let moto: Moto;
let clients: AwsClients;
let res: TestResources;
let functions: CloudFunctions;
let poller: QueuePoller;
let blobs: S3BlobStore;
const invocations: Invocation[] = [];

beforeAll(async () => {
  moto = await startMoto();
  clients = motoClients(moto.endpoint);
  res = await createTestResources(clients, uniqueNames('continue'));
  Object.assign(process.env, functionEnv(moto.endpoint, res), {
    ASSAY_INGEST_MAX_ROWS: String(ROWS_PER_INVOCATION),
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
  });
  functions = await loadFunctions();
  poller = new QueuePoller({
    sqs: clients.sqs,
    region: TEST_REGION,
    sources: eventSources(res, functions, { workerBatchSize: 5, workerConcurrency: 2 }),
    onInvocation: (invocation) => invocations.push(invocation),
  });
  blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
}, 120_000);

afterAll(async () => {
  for (const client of Object.values(clients ?? {})) client.destroy();
  await moto?.stop();
  restoreEnv();
});

describe('ingest continuation on moto', { timeout: 90_000 }, () => {
  it('ingests a dataset over several invocations, every row ending as exactly one result', async () => {
    const suite = suiteInput({ name: 'continued' });
    await blobs.put(suiteKey('continued'), JSON.stringify(suite), 'application/json');
    await poller.drain({ only: ['ingest'] });
    const before = invocations.filter((i) => i.functionName === 'ingest').length;
    await blobs.put('datasets/continued/data.csv', await readFile(GOLD_CSV));

    let key: string | undefined;
    await poller.runUntil(
      async () => {
        key = (await blobs.list('reports/continued/')).find((k) => k.endsWith('/report.json'));
        return key !== undefined;
      },
      { timeoutMs: 60_000 },
    );
    const report = JSON.parse(new TextDecoder().decode(await blobs.get(key!))) as Report;

    // 14 rows at 4 per invocation: the upload's invocation and three continuations.
    const ingests = invocations.filter((i) => i.functionName === 'ingest').length - before;
    expect(ingests).toBe(Math.ceil(14 / ROWS_PER_INVOCATION));
    const runStore = new DynamoRunStore({ client: clients.doc, tableName: res.table });
    const ids: string[] = [];
    for await (const result of runStore.results(report.runId)) ids.push(result.itemId);
    expect(ids).toHaveLength(14);
    expect(new Set(ids).size).toBe(14);
    expect(await runStore.counters(report.runId)).toMatchObject({ done: 12, failed: 2, total: 14 });
    expect(await runStore.getRun(report.runId)).toMatchObject({ status: 'done', total: 14, invalidRows: 2 });

    // The same figures as one local run over the whole file.
    const dir = await tempDir('assay-continue-local-');
    await writeFile(join(dir, 'suite.json'), JSON.stringify(suiteInput({ name: 'continued-local' })));
    await writeFile(join(dir, 'data.csv'), await readFile(GOLD_CSV));
    const local = await runLocal({
      suitePath: join(dir, 'suite.json'),
      outDir: join(dir, 'run'),
      cachePath: join(dir, 'cache.jsonl'),
      env: {},
    });
    if (local.outcome.status !== 'written') throw new Error('local run not aggregated');
    expect(report.counts).toEqual(local.outcome.report.counts);
    expect(report.metrics).toEqual(local.outcome.report.metrics);
  });
});
