/**
 * The AWS shell end to end against moto_server: an upload → S3 notification → events queue →
 * ingest → items queue → worker → DynamoDB → aggregate queue → aggregate → report files in S3.
 * The real handlers run in this process, driven by the poller (cli/cloud/poller.ts) the way
 * Lambda's event source mappings drive them. Also: a duplicated item message, a worker that
 * crashes mid-batch, a poison item that ends in the DLQ, and keys with spaces and non-ASCII.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type CloudFunctions,
  eventSources,
  loadFunctions,
  uploadFolder,
} from '../../cli/cloud/local-cloud.js';
import {
  type Invocation,
  lambdaContext,
  QueuePoller,
  type SqsFunctionHandler,
} from '../../cli/cloud/poller.js';
import { runLocal } from '../../cli/local-run.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { suiteKey } from '../../shared/lib/layout/bucket.js';
import type { ItemResult } from '../../shared/model/model.js';
import { simulatedId } from '../../shared/model/provider-ids.js';
import type { Report } from '../../shared/model/report.js';
import { REPORT_FILES } from '../../shared/reports/files.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, snapshotEnv, suiteInput, tempDir } from '../helpers.js';
import {
  createTestResources,
  functionEnv,
  type Moto,
  motoClients,
  resetAllQueues,
  startMoto,
  TEST_REGION,
  type TestResources,
  uniqueNames,
} from './moto.js';

const FIXTURES = join(REPO, 'test', 'fixtures', 'pipeline');
/** 12 rows of the AQUA English gold set (3 per label) and 2 rows that cannot be used. */
const GOLD_CSV = join(FIXTURES, 'gold-12-plus-2-bad.csv');
/** 4 rows; the vendor fake answers 500 to the one whose text holds the marker. */
const POISON_CSV = join(FIXTURES, 'poison.csv');
const POISON_MARKER = 'POISON-PILL';

/**
 * Each test's limit: a guard against a hang, never a measure. The poller waits as long as the
 * pipeline has something to run (cli/cloud/poller.ts), so a loaded machine only makes a test slower.
 */
const HANG_GUARD_MS = 20 * 60_000;

const restoreEnv = snapshotEnv();
let moto: Moto;
let fake: VendorFake;
let clients: AwsClients;
let res: TestResources;
let functions: CloudFunctions;
let poller: QueuePoller;
let blobs: S3BlobStore;
let runStore: DynamoRunStore;
/** What the poller invokes for the items queue; a test may wrap the real worker. */
let worker: SqsFunctionHandler;
const invocations: Invocation[] = [];
/** The local shell's report of the same suite and dataset. */
let local: Report;

/**
 * The modular sub-judges' answers: fine, no meaning change, better, so the cascade says TP. A
 * quality prompt in STRICT mode judges the comma edits (gold rows 1 and 4 of the fixture) as
 * no better (FP3): a prompt change that flips some verdicts.
 */
function subJudgeAnswer(prompt: string): { text: string } | undefined {
  if (prompt.includes('nonsense detector')) return { text: 'SCORE: 0\nREASON: coherent' };
  if (prompt.includes('meaning-change detector')) return { text: 'SEVERITY: 0\nREASONING: same meaning' };
  if (prompt.includes('text quality assessor')) {
    const strictComma = prompt.includes('STRICT MODE') && /breaks, when|a few days ago\. "/.test(prompt);
    return {
      text: strictComma
        ? 'IMPROVEMENT: 0\nREASONING: style only'
        : 'IMPROVEMENT: 2\nREASONING: fixes an error',
    };
  }
  return undefined;
}

function simSuite(name: string, overrides: Parameters<typeof suiteInput>[0] = {}) {
  return suiteInput({ name, ...overrides });
}

beforeAll(async () => {
  [moto, fake] = await Promise.all([
    startMoto(),
    startVendorFake((call) =>
      call.promptText.includes(POISON_MARKER)
        ? { status: 500 }
        : // The sub-judge is told apart by its instructions (the system message), the item by its data.
          subJudgeAnswer(`${call.systemText}\n${call.promptText}`),
    ),
  ]);
  clients = motoClients(moto.endpoint);
  // Short visibility timeout so redelivery takes seconds; a few receives before the DLQ.
  res = await createTestResources(clients, uniqueNames('pipeline'), {
    itemsVisibilityTimeout: 2,
    maxReceiveCount: 3,
  });
  // The functions' composition root reads the environment when first imported.
  Object.assign(process.env, functionEnv(moto.endpoint, res), {
    OPENAI_API_KEY: 'test',
    OPENAI_BASE_URL: fake.env.OPENAI_BASE_URL,
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
  });
  functions = await loadFunctions();
  worker = functions.worker;
  poller = new QueuePoller({
    sqs: clients.sqs,
    region: TEST_REGION,
    sources: eventSources(
      res,
      { ...functions, worker: (event, context) => worker(event, context) },
      { workerBatchSize: 5, workerConcurrency: 2 },
    ),
    onInvocation: (invocation) => invocations.push(invocation),
  });
  blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
  runStore = new DynamoRunStore({ client: clients.doc, tableName: res.table });

  await uploadFolder(blobs, join(REPO, 'prompts'), 'prompts/');
  // The s3:TestEvent and the prompt uploads: nothing to run.
  await poller.drain({ only: ['ingest'] });

  local = await localReport(simSuite('pipeline-local'), await readFile(GOLD_CSV));
}, HANG_GUARD_MS);

/** The local shell's report of a suite (dataset.path `dataFile`) on `data`, with `files` beside it. */
async function localReport(
  suite: Record<string, unknown>,
  data: Uint8Array,
  dataFile = 'data.csv',
  files: Record<string, Uint8Array> = {},
): Promise<Report> {
  const dir = await tempDir('assay-pipeline-local-');
  await writeFile(join(dir, 'suite.json'), JSON.stringify(suite));
  await writeFile(join(dir, dataFile), data);
  for (const [path, body] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), body);
  }
  const { outcome } = await runLocal({
    suitePath: join(dir, 'suite.json'),
    outDir: join(dir, 'run'),
    cachePath: join(dir, 'llm-cache.jsonl'),
    env: {},
  });
  if (outcome.status !== 'written') throw new Error('local run not aggregated');
  return outcome.report;
}

afterEach(async () => {
  worker = functions.worker;
  await resetAllQueues(clients, res);
});

afterAll(async () => {
  for (const client of Object.values(clients ?? {})) client.destroy();
  await Promise.all([moto?.stop(), fake?.close()]);
  restoreEnv();
});

/** Uploads a suite and lets ingest see it (its dataset is not there yet: nothing starts). */
async function uploadSuite(suite: Record<string, unknown>): Promise<void> {
  await blobs.put(suiteKey(String(suite.name)), JSON.stringify(suite), 'application/json');
  await poller.drain({ only: ['ingest'] });
}

/** Drives every queue until the suite's report.json is in the bucket. */
async function reportOf(suiteName: string): Promise<Report> {
  let key: string | undefined;
  await poller.runUntil(async () => {
    key = (await blobs.list(`reports/${suiteName}/`)).find((k) => k.endsWith('/report.json'));
    return key !== undefined;
  });
  return JSON.parse(new TextDecoder().decode(await blobs.get(key!))) as Report;
}

async function resultsOf(runId: string): Promise<ItemResult[]> {
  const results: ItemResult[] = [];
  for await (const result of runStore.results(runId)) results.push(result);
  return results;
}

const recordsSeenBy = (functionName: string) =>
  invocations.filter((i) => i.functionName === functionName).reduce((n, i) => n + i.records, 0);

describe('AWS pipeline on moto', { timeout: HANG_GUARD_MS }, () => {
  it('turns a dataset upload into report files in S3 with the metrics of a local run', async () => {
    await uploadSuite(simSuite('pipeline-main'));

    await blobs.put('datasets/pipeline-main/data.csv', await readFile(GOLD_CSV));
    const report = await reportOf('pipeline-main');

    expect(local.counts).toMatchObject({ items: 14, scored: 12, failed: 2, invalidRows: 2 });
    expect(report.counts).toEqual(local.counts);
    expect(report.metrics).toEqual(local.metrics);
    expect(await blobs.list(`reports/pipeline-main/${report.runId}/`)).toEqual(
      REPORT_FILES.map((file) => `reports/pipeline-main/${report.runId}/${file}`).sort(),
    );
    expect(await runStore.getRun(report.runId)).toMatchObject({
      status: 'done',
      total: 14,
      invalidRows: 2,
      datasetKey: 'datasets/pipeline-main/data.csv',
    });
    expect(await runStore.counters(report.runId)).toMatchObject({ done: 12, failed: 2, total: 14 });
  });

  it('counts an item message delivered twice once', async () => {
    await uploadSuite(simSuite('pipeline-dup'));
    await blobs.put('datasets/pipeline-dup/data.csv', await readFile(GOLD_CSV));
    await poller.drain({ only: ['ingest'] }); // the items wait in their queue
    const { Messages = [] } = await clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: res.queues.items.url,
        MaxNumberOfMessages: 1,
        VisibilityTimeout: 0,
      }),
    );
    expect(Messages).toHaveLength(1);
    await clients.sqs.send(
      new SendMessageCommand({ QueueUrl: res.queues.items.url, MessageBody: Messages[0]!.Body }),
    );
    const before = recordsSeenBy('worker');

    const report = await reportOf('pipeline-dup');

    expect(recordsSeenBy('worker') - before).toBeGreaterThanOrEqual(13); // 12 items + the copy
    expect(report.counts).toEqual(local.counts);
    expect(report.metrics).toEqual(local.metrics);
    expect(await runStore.counters(report.runId)).toMatchObject({ done: 12, failed: 2, total: 14 });
  });

  it('completes the run when a worker crashes mid-batch and the batch is delivered again', async () => {
    await uploadSuite(simSuite('pipeline-crash'));
    let crashed = false;
    worker = async (event, context) => {
      if (!crashed && event.Records.length >= 3) {
        crashed = true;
        // Two records get scored and recorded, then the container dies on the third: no
        // response, so Lambda deletes nothing and the whole batch comes back.
        await functions.worker({ Records: event.Records.slice(0, 2) }, context);
        throw new Error('simulated crash while scoring the third record');
      }
      return functions.worker(event, context);
    };

    await blobs.put('datasets/pipeline-crash/data.csv', await readFile(GOLD_CSV));
    const report = await reportOf('pipeline-crash');

    expect(crashed).toBe(true);
    expect(invocations.some((i) => i.functionName === 'worker' && i.error !== undefined)).toBe(true);
    expect(report.counts).toEqual(local.counts);
    expect(report.metrics).toEqual(local.metrics);
    expect(await runStore.counters(report.runId)).toMatchObject({ done: 12, failed: 2, total: 14 });
  });

  it('records a poison item that exhausted its receives as failed (DLQ) and completes the run', async () => {
    // The dataset first: without its suite, ingest rejects it (logged, not retried).
    await blobs.put('datasets/pipeline-poison/data.csv', await readFile(POISON_CSV));
    await poller.drain({ only: ['ingest'] });
    fake.reset();

    // The suite upload runs it on its dataset.path: datasets/pipeline-poison/data.csv.
    await blobs.put(
      suiteKey('pipeline-poison'),
      JSON.stringify(
        simSuite('pipeline-poison', { backends: ['openai:gpt-4o-mini'], run: { maxAttempts: 1 } }),
      ),
    );
    const report = await reportOf('pipeline-poison');

    expect(report.counts).toMatchObject({ items: 4, scored: 3, failed: 1, invalidRows: 0 });
    const poison = (await resultsOf(report.runId)).find((r) => r.itemId === 'p3');
    expect(poison).toMatchObject({
      status: 'failed',
      failure: {
        kind: 'dead_letter',
        message: expect.stringMatching(/^exhausted its receives on the items queue/),
      },
    });
    // One call per receive (maxAttempts 1), three receives before the DLQ.
    expect(fake.requests.filter((r) => r.promptText.includes(POISON_MARKER)).length).toBeGreaterThanOrEqual(
      3,
    );
    expect(recordsSeenBy('dead-letter')).toBeGreaterThanOrEqual(1);
    expect(await runStore.getRun(report.runId)).toMatchObject({ status: 'done', total: 4 });
  });

  it('ignores the s3:TestEvent', async () => {
    const sample = JSON.parse(await readFile(join(REPO, 'events', 's3-test-event.json'), 'utf8'));
    const body = JSON.parse(sample.Records[0].body);
    sample.Records[0].body = JSON.stringify({ ...body, Bucket: res.bucket });

    const response = await functions.ingest(sample, lambdaContext({ functionName: 'ingest' }));

    expect(response).toEqual({ batchItemFailures: [] });
    expect(await poller.idle()).toBe(true); // no run, no items
  });

  it('decodes an object key with spaces and non-ASCII characters', async () => {
    await uploadSuite(simSuite('pipeline-cafe'));

    await blobs.put('datasets/pipeline-cafe/my café data.csv', await readFile(GOLD_CSV));
    const report = await reportOf('pipeline-cafe');

    expect(await runStore.getRun(report.runId)).toMatchObject({
      status: 'done',
      datasetKey: 'datasets/pipeline-cafe/my café data.csv',
    });
    expect(report.counts).toEqual(local.counts);
    expect(report.metrics).toEqual(local.metrics);
  });
});

/** The example suites of the judge methods, each run on a sample in both shells. */
const METHOD_EXAMPLES = {
  'gec-modular-en': ['pair', 'meaning', 'quality'],
  'gec-agent-ua': ['agent', 'tool:meaning_change', 'tool:reward_quality'],
  'gec-escalation-en': ['small'],
  'gec-ensemble-de': ['vote:sim:gpt-4o-mini', 'vote:sim:claude-haiku-4-5', 'vote:sim:gemini-2.5-flash'],
} as const;

describe('every judge method, from its example suite, on moto and locally', {
  timeout: HANG_GUARD_MS,
}, () => {
  it.each(Object.entries(METHOD_EXAMPLES))('%s', async (example, stages) => {
    const file = JSON.parse(await readFile(join(REPO, 'examples', `${example}.suite.json`), 'utf8'));
    const name = `m-${example}`;
    const suite: Record<string, unknown> = {
      ...file,
      name,
      dataset: { ...file.dataset, path: 'data.csv' },
      // The same models, simulated (their price is projected, so cost figures are not zero).
      backends: file.backends.map((b: string) => `sim:${b.slice(b.indexOf(':') + 1)}`),
      run: { ...file.run, sample: { n: 16, seed: 3 } },
      sim: { latencyMs: 0 },
    };
    const data = await readFile(join(REPO, 'examples', file.dataset.path));

    const localRun = await localReport(suite, data);

    await uploadSuite(suite);
    await blobs.put(`datasets/${name}/data.csv`, data);
    const report = await reportOf(name);

    expect(report.config.method).toBe(file.method);
    expect(report.counts).toMatchObject({ items: 16, scored: 16, failed: 0 });
    expect(report.metrics).toEqual(localRun.metrics);
    const method = report.metrics.method as { accuracyVsCost: { per10kUsd: number }[] };
    expect(method.accuracyVsCost.length).toBeGreaterThan(0);
    expect(method.accuracyVsCost.every((p) => p.per10kUsd > 0)).toBe(true);
    expect(Object.keys(report.cost.byStage)).toEqual(expect.arrayContaining([...stages]));
    const results = await resultsOf(report.runId);
    expect(results.every((r) => r.details !== undefined)).toBe(true);
  });
});

describe('declared judges, from their example suites, on moto and locally', {
  timeout: HANG_GUARD_MS,
}, () => {
  it.each(['reply-tone', 'answer-helpfulness'])('%s', async (example) => {
    const file = JSON.parse(await readFile(join(REPO, 'examples', `${example}.suite.json`), 'utf8'));
    const name = `j-${example}`;
    const dataFile = basename(file.dataset.path);
    const suite: Record<string, unknown> = {
      ...file,
      name,
      dataset: { ...file.dataset, path: dataFile },
      // What --simulate does: the simulator of the same name.
      backends: file.backends.map(simulatedId),
      sim: { latencyMs: 0 },
    };
    const data = await readFile(join(REPO, 'examples', file.dataset.path));
    const prompt = await readFile(join(REPO, 'examples', file.judge.prompt));

    const localRun = await localReport(suite, data, dataFile, { [file.judge.prompt]: prompt });

    // The judge's prompt goes to the bucket's prompts/, as `prompts/…` of the suite names it.
    await blobs.put(file.judge.prompt, prompt);
    await poller.drain({ only: ['ingest'] });
    await uploadSuite(suite);
    await blobs.put(`datasets/${name}/${dataFile}`, data);
    const report = await reportOf(name);

    expect(report).toMatchObject({ task: 'judge', simulated: true, counts: { failed: 0 } });
    expect(report.counts.scored).toBeGreaterThanOrEqual(40);
    expect(report.scores).toEqual(localRun.scores);
    expect(report.metrics).toEqual(localRun.metrics);
  });
});

describe('a budget on AWS', { timeout: HANG_GUARD_MS }, () => {
  it('stops provider calls once the run has spent it: the rest fail as budget, and the run completes', async () => {
    // A simulated gpt-4o is priced as gpt-4o: each call reserves about $0.005 (its prompt and
    // 400 output tokens) and costs about $0.0014, so the budget has room for a few calls only.
    const budgetUsd = 0.01;
    const suite = simSuite('budget-aws', {
      backends: ['sim:gpt-4o'],
      run: { budgetUsd },
      sim: { latencyMs: 0 },
    });
    await uploadSuite(suite);
    await blobs.put('datasets/budget-aws/data.csv', await readFile(GOLD_CSV));
    const report = await reportOf('budget-aws');
    // Items whose calls fitted the budget were judged; the others were not.
    expect(report.counts.items).toBe(14);
    expect(report.counts.scored).toBeGreaterThanOrEqual(1);
    expect(report.counts.byFailure.budget).toBeGreaterThanOrEqual(1);
    expect(report.counts.scored + (report.counts.byFailure.budget ?? 0)).toBe(12);
    expect(report.scores.label!.unscored.budget).toBe(report.counts.byFailure.budget);
    const counters = await runStore.counters(report.runId);
    expect(counters!.spentUsd).toBeCloseTo(report.cost.totalUsd, 12);
    expect(counters!.spentUsd).toBeGreaterThan(0);
    // However many workers ran at once, the run stayed within its budget, and every item's hold
    // was released with its result.
    expect(counters!.spentUsd).toBeLessThanOrEqual(budgetUsd);
    expect(await runStore.reserved(report.runId)).toBeCloseTo(0, 12);
  });
});

describe('a prompt change on AWS', { timeout: HANG_GUARD_MS }, () => {
  const QUALITY = 'prompts/gec/custom/quality-reeval.md';
  const reportsOf = async (suite: string) =>
    (await blobs.list(`reports/${suite}/`)).filter((k) => k.endsWith('/report.json')).sort();
  const readJson = async <T>(key: string) => JSON.parse(new TextDecoder().decode(await blobs.get(key))) as T;

  it('re-runs only the suites that read the prompt, pays only for the changed sub-judge, and compares', async () => {
    const original = await readFile(join(REPO, 'prompts', 'gec', 'modular', 'quality-feedback.md'), 'utf8');
    await blobs.put(QUALITY, original);
    const modular = suiteInput({
      name: 'reeval-modular',
      method: 'modular',
      backends: ['openai:gpt-4o-mini'],
      prompts: { quality: 'gec/custom/quality-reeval.md' },
    });
    const other = suiteInput({ name: 'reeval-baseline', backends: ['openai:gpt-4o-mini'] });
    for (const suite of [modular, other]) {
      await uploadSuite(suite);
      await blobs.put(`datasets/${suite.name}/data.csv`, await readFile(GOLD_CSV));
      await reportOf(suite.name);
    }
    const [first] = await reportsOf('reeval-modular');
    const before = await readJson<Report>(first!);
    expect(before.counts).toMatchObject({ scored: 12, failed: 2 });
    expect(before.comparison).toBeUndefined();

    // The same content again: nothing to re-run.
    fake.reset();
    await blobs.put(QUALITY, original);
    await poller.drain();
    expect(await reportsOf('reeval-modular')).toHaveLength(1);

    // One sub-judge prompt changes.
    await blobs.put(
      QUALITY,
      `${original}\nSTRICT MODE: a change that only adds or moves a comma is not an improvement.\n`,
    );
    let keys: string[] = [];
    await poller.runUntil(async () => {
      keys = await reportsOf('reeval-modular');
      return keys.length === 2;
    });
    const after = await readJson<Report>(keys.find((k) => k !== first)!);

    // The provider saw only the changed sub-judge, once per valid item; the rest were cache hits.
    expect(fake.requests).toHaveLength(12);
    expect(fake.requests.every((r) => r.systemText.includes('STRICT MODE'))).toBe(true);
    expect(after.cost).toMatchObject({ calls: 36, cachedCalls: 24 });
    expect(after.cost.savedUsd).toBeGreaterThan(0);
    expect(after.prompts['gec/custom/quality-reeval.md']).not.toBe(
      before.prompts['gec/custom/quality-reeval.md'],
    );

    // Compared with the previous run: the two comma edits flipped TP → FP3.
    expect(after.comparison).toMatchObject({
      baseRunId: before.runId,
      paired: 12,
      promptChanges: [{ path: 'gec/custom/quality-reeval.md' }],
      scores: { label: { flipped: { broken: 1, fixed: 1, changed: 0 } } },
    });
    const text = new TextDecoder().decode(
      await blobs.get(`reports/reeval-modular/${after.runId}/comparison.txt`),
    );
    expect(text).toMatch(/style only/);
    expect(text).toMatch(/fixes an error/);

    // The suite that does not read the prompt did not run again.
    expect(await reportsOf('reeval-baseline')).toHaveLength(1);
  });
});
