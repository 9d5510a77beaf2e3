/**
 * The whole AWS pipeline on this machine: moto_server stands in for S3, SQS and DynamoDB, the
 * real Lambda handlers run in containers (worker threads held to each function's declared
 * timeout, memory and /tmp, see containers.ts), driven by a poller that behaves like Lambda's
 * event source mappings. Nothing here is a second implementation: it is the AWS shell with
 * AWS swapped for moto.
 */
import { createReadStream } from 'node:fs';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { DynamoBatchStore } from '../../shared/adapters/aws/dynamo-batch-store.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { FolderBlobStore } from '../../shared/adapters/local/folder-blob-store.js';
import {
  DATASETS_PREFIX,
  datasetKeyOf,
  datasetUploadKey,
  PROMPT_PREFIX,
  rejectionKey,
  routeKey,
  suiteKey,
  suiteReportsPrefix,
} from '../../shared/lib/layout/bucket.js';
import {
  FUNCTION_MEMORY_MB,
  FUNCTION_TIMEOUT_SECONDS,
  FUNCTION_TMP_MB,
  type FunctionName,
  QUEUES,
  queueNames,
} from '../../shared/lib/layout/queues.js';
import { loadPriceTable } from '../../shared/lib/providers/pricing.js';
import { ProviderPool } from '../../shared/lib/providers/registry.js';
import { ServiceError } from '../../shared/model/errors.js';
import type { Report } from '../../shared/model/report.js';
import { isSweep } from '../../shared/model/variants.js';
import type { BlobStore } from '../../shared/ports/ports.js';
import { simulateSuite } from '../../shared/registry/registry.js';
import { parseSuite, type Suite, validateSuite } from '../../shared/registry/suite.js';
import type { SweepReport } from '../../shared/sweeps/sweep.js';
import { writeRunReport } from '../../shared/use-cases/aggregate-run.js';
import type { RejectedUpload } from '../../shared/use-cases/ingest-object.js';
import { DATASET_FILE, expectFile, PACKAGE_ROOT, SUITE_FILE } from '../local-run.js';
import { type ContainerConfig, type ContainerOutcome, Containers, type KillReason } from './containers.js';
import {
  type CloudResources,
  createCloudResources,
  functionEnv,
  MOTO_REGION,
  motoClients,
  type PartitionStats,
  partitionStats,
  type ResourceNames,
  startMoto,
} from './moto.js';
import {
  type ContainerEventSource,
  type HandlerEventSource,
  type Invocation,
  PollStalledError,
  QueuePoller,
  type SqsFunctionHandler,
} from './poller.js';

/** The functions of the stack, as imported from functions/ into this process. */
export interface CloudFunctions {
  ingest: SqsFunctionHandler;
  worker: SqsFunctionHandler;
  deadLetter: SqsFunctionHandler;
  aggregate: SqsFunctionHandler;
  /** The scheduled batch poller (one pass of the batch lane per call). */
  batchPoller: () => Promise<BatchPollerPass>;
}

/** What one pass of the batch poller did. */
export interface BatchPollerPass {
  submitted: number;
  refused: number;
  closed: number;
  woken: number;
}

/**
 * Imports the handlers into this process (for in-process event sources: the integration
 * tests). Their composition root reads the environment when first imported, so set it
 * ({@link functionEnv}) before the first call; later calls return the same modules.
 */
export async function loadFunctions(): Promise<CloudFunctions> {
  const [ingest, worker, deadLetter, aggregate, batchPoller] = await Promise.all([
    import('../../functions/ingest.js'),
    import('../../functions/worker.js'),
    import('../../functions/dead-letter.js'),
    import('../../functions/aggregate.js'),
    import('../../functions/batch-poller.js'),
  ]);
  return {
    ingest: ingest.handler,
    worker: worker.handler,
    deadLetter: deadLetter.handler,
    aggregate: aggregate.handler,
    batchPoller: batchPoller.handler,
  };
}

interface MappingOptions {
  /** Records per worker invocation; default the layout's. */
  workerBatchSize?: number;
  /** Worker invocations (and containers) at once; default 4. */
  workerConcurrency?: number;
}

/** The stack's event source mappings (batch sizes from the layout, as the stack's), on moto's queues. */
function mappings(
  { queues }: CloudResources,
  { workerBatchSize = QUEUES.items.consumer.batchSize, workerConcurrency = 4 }: MappingOptions,
) {
  return [
    {
      name: 'ingest',
      functionName: 'ingest',
      queue: queues.events,
      batchSize: QUEUES.events.consumer.batchSize,
    },
    {
      name: 'worker',
      functionName: 'worker',
      queue: queues.items,
      batchSize: workerBatchSize,
      concurrency: workerConcurrency,
    },
    {
      name: 'deadLetter',
      functionName: 'dead-letter',
      queue: queues.itemsDlq,
      batchSize: QUEUES.items.deadLetter.consumer!.batchSize,
    },
    {
      name: 'deadLetter',
      functionName: 'dead-letter',
      queue: queues.eventsDlq,
      batchSize: QUEUES.events.deadLetter.consumer!.batchSize,
    },
    {
      name: 'aggregate',
      functionName: 'aggregate',
      queue: queues.aggregate,
      batchSize: QUEUES.aggregate.consumer.batchSize,
    },
  ] satisfies {
    name: FunctionName;
    functionName: string;
    queue: { url: string; arn: string };
    batchSize: number;
    concurrency?: number;
  }[];
}

/** The stack's event source mappings to handlers imported into this process ({@link loadFunctions}). */
export function eventSources(
  resources: CloudResources,
  functions: CloudFunctions,
  options: MappingOptions = {},
): HandlerEventSource[] {
  return mappings(resources, options).map(({ name, functionName, queue, ...mapping }) => ({
    functionName,
    queueUrl: queue.url,
    queueArn: queue.arn,
    handler: functions[name],
    ...mapping,
    // The stack's ingest timeout: ingest pauses a minute before it (ASSAY_INGEST_RESERVE_MS).
    ...(name === 'ingest' ? { timeoutMs: FUNCTION_TIMEOUT_SECONDS.ingest * 1000 } : {}),
  }));
}

/**
 * The stack's event source mappings to its functions in containers, each held to its declared
 * timeout, memory and /tmp, with `env` as its environment.
 */
export function containerEventSources(
  resources: CloudResources,
  env: Readonly<Record<string, string | undefined>>,
  options: MappingOptions = {},
): ContainerEventSource[] {
  return mappings(resources, options).map(({ name, functionName, queue, ...mapping }) => ({
    functionName,
    queueUrl: queue.url,
    queueArn: queue.arn,
    container: functionContainer(name, functionName, env),
    ...mapping,
  }));
}

/**
 * A function of the stack in its containers: the layout's memory, /tmp and timeout, `env`, and
 * the service name its logs and metrics carry (`assay-<name>`, as the stack sets it).
 */
export function functionContainer(
  name: FunctionName,
  functionName: string,
  env: Readonly<Record<string, string | undefined>>,
): ContainerConfig {
  return {
    module: name,
    memoryMb: FUNCTION_MEMORY_MB[name],
    tmpMb: FUNCTION_TMP_MB[name],
    timeoutMs: FUNCTION_TIMEOUT_SECONDS[name] * 1000,
    env: { ...env, POWERTOOLS_SERVICE_NAME: `assay-${functionName}` },
  };
}

/** Uploads every file under `dir` (if it exists) to `prefix` + its relative path; returns the keys. */
export async function uploadFolder(blobs: BlobStore, dir: string, prefix: string): Promise<string[]> {
  const folder = new FolderBlobStore(dir);
  const keys = await folder.list('');
  for (const key of keys) await blobs.put(prefix + key, (await folder.get(key))!);
  return keys.map((key) => prefix + key);
}

export interface LocalCloudOptions {
  suitePath: string;
  /** The dataset file to drop; default the suite's `dataset.path` (relative to the suite file). */
  datasetPath?: string;
  /** Replace the suite's backends before uploading it (e.g. the quickstart's detected one). */
  backends?: string[];
  /** Replace every backend by the simulator of the same name before uploading the suite. */
  simulate?: boolean;
  /** Where the report files are downloaded; default `runs/cloud/<runId>`. */
  outDir?: string;
  /**
   * Give up once the pipeline has made no progress (no message handled, no vendor batch moved)
   * for this long, ms; default {@link DEFAULT_STALL_TIMEOUT_MS}. A run that keeps going is
   * waited for however long it takes.
   */
  stallTimeoutMs?: number;
  /** Show the functions' own Powertools logs (INFO) and EMF metrics; default warnings only. */
  verbose?: boolean;
  /** Progress lines. */
  onLog?: (line: string) => void;
}

export interface LocalCloudResult {
  /** The run, or for a sweep the sweep id. */
  runId: string;
  bucket: string;
  /** `reports/<suite>/<runId>/` */
  reportPrefix: string;
  /** `s3://<bucket>/reports/<suite>/<runId>/` (in moto, gone once it stops) */
  reportUri: string;
  outDir: string;
  /** Downloaded files, absolute paths. */
  files: string[];
  /** The run's report; absent for a sweep. */
  report?: Report;
  /** A sweep's report (its variant runs' reports stay in the bucket under reports/<suite>.<variant>/). */
  sweep?: SweepReport;
  /**
   * What the table served over the whole session, by operation: requests and their read and
   * write units as DynamoDB counts them (the moto stand-in's accounting, from its first request).
   */
  tableServed?: PartitionStats['served'];
}

const NAMES: ResourceNames = {
  bucket: 'assay-local',
  table: 'assay-local',
  queues: queueNames('assay-local'),
};

/** How long the local cloud waits without progress before it gives up: 10 minutes. */
export const DEFAULT_STALL_TIMEOUT_MS = 600_000;

/**
 * The local cloud gave up: nothing progressed for the stall timeout. What the run had was
 * written to `outDir` (a partial report of the items with results), when there was a run.
 */
export class CloudStalledError extends ServiceError {
  override readonly name = 'CloudStalledError';
  constructor(
    message: string,
    readonly outDir: string | undefined,
    readonly files: string[],
  ) {
    super(message);
  }
}

/**
 * Runs a suite through the AWS pipeline against moto: start moto_server, create the stack's
 * resources, upload the prompts and the suite, then drop the dataset; the S3 notification
 * starts ingest, and the poller drives the events, items, items-DLQ and aggregate queues until
 * the report lands in the bucket. Downloads the report files, then stops the containers and moto.
 * The functions' module state lives in their containers and this process's environment is
 * left as it was, so a process may run the local cloud more than once.
 */
export async function runLocalCloud(options: LocalCloudOptions): Promise<LocalCloudResult> {
  const log = options.onLog ?? (() => {});
  const suitePath = resolve(options.suitePath);
  await expectFile(suitePath, SUITE_FILE, options.suitePath);
  const { suite, text: suiteText } = await readSuite(suitePath, options.backends, options.simulate);
  // As `assay run` does: a backend without its key fails now, not once per item.
  new ProviderPool({ prices: loadPriceTable(undefined, process.env) }).require(suite.backends, suite.sim);
  const datasetPath = resolve(dirname(suitePath), options.datasetPath ?? suite.dataset.path);
  const datasetKey =
    (options.datasetPath === undefined ? datasetKeyOf(suite) : undefined) ??
    datasetUploadKey(suite.name, basename(datasetPath));
  await expectFile(
    datasetPath,
    options.datasetPath === undefined
      ? `${DATASET_FILE} as dataset.path of suite ${suite.name}`
      : DATASET_FILE,
    `dataset ${options.datasetPath ?? datasetPath}`,
  );
  // The dataset goes to the bucket streamed, as an upload would: the file is never held whole.
  const datasetBytes = (await stat(datasetPath)).size;
  const uploadDataset = (blobs: S3BlobStore) => blobs.putStream(datasetKey, createReadStream(datasetPath));

  log('starting moto_server (S3, SQS, DynamoDB)…');
  const moto = await startMoto();
  const onSigint = () => {
    void moto.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSigint);
  const clients = motoClients(moto.endpoint);
  const containers = new Containers();
  try {
    log(`moto_server on ${moto.endpoint}; creating the stack's bucket, queues and table`);
    log(
      `  (to stop a run meanwhile: assay cloud stop <runId> --endpoint ${moto.endpoint} --table ${NAMES.table})`,
    );
    const resources = await createCloudResources(clients, NAMES, {
      // As Lambda requires of a mapping, an item stays hidden for as long as a worker may run
      // on it: on a loaded machine a batch can outlast a shorter timeout, and a second worker
      // would score the items again, paying for them twice. The other queues have one consumer
      // invocation at a time and keep moto's local default.
      visibilityTimeouts: { items: FUNCTION_TIMEOUT_SECONDS.worker },
    });
    // The functions' environment: this shell's (provider keys and endpoints), the stack's
    // variables pointing at moto, and their log settings. The AWS SDK's warning about an old
    // Node is this process's to give, once, not each container's again.
    const env = {
      ...process.env,
      POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? (options.verbose ? 'INFO' : 'WARN'),
      POWERTOOLS_METRICS_DISABLED:
        process.env.POWERTOOLS_METRICS_DISABLED ?? (options.verbose ? 'false' : 'true'),
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      ...sharedDatasetEnv(suite.name, datasetKey, log),
      ...functionEnv(moto.endpoint, resources),
    };
    const blobs = new S3BlobStore({ client: clients.s3, bucket: resources.bucket });
    let reportDue = false;
    const poller = new QueuePoller({
      sqs: clients.sqs,
      region: MOTO_REGION,
      sources: containerEventSources(resources, env),
      containers,
      onInvocation: (invocation) => {
        // Only the aggregate function writes reports: the bucket is listed after it ran.
        if (invocation.functionName === 'aggregate') reportDue = true;
        log(describeInvocation(invocation));
      },
    });

    const prompts = await uploadFolder(blobs, join(PACKAGE_ROOT, 'prompts'), PROMPT_PREFIX);
    // The suite's own prompts/ override the shipped ones, as in `assay run`.
    prompts.push(...(await uploadFolder(blobs, join(dirname(suitePath), 'prompts'), PROMPT_PREFIX)));
    if (datasetUploadStartsRun(suite.name, datasetKey)) {
      await blobs.put(suiteKey(suite.name), suiteText, 'application/json');
      log(`uploaded ${prompts.length} prompt files and ${suiteKey(suite.name)}`);
      await poller.drain({ only: ['ingest'] });
      await uploadDataset(blobs);
      log(`uploaded ${datasetKey} (${datasetBytes} bytes): the S3 notification starts the run`);
    } else {
      // A dataset key outside datasets/<name>/ (a shared `datasets/…` key) starts no run of this
      // suite when it lands: it goes first, and the suite's own upload starts the run on it.
      await uploadDataset(blobs);
      log(`uploaded ${prompts.length} prompt files and ${datasetKey} (${datasetBytes} bytes)`);
      await poller.drain({ only: ['ingest'] });
      await blobs.put(suiteKey(suite.name), suiteText, 'application/json');
      log(`uploaded ${suiteKey(suite.name)}: the S3 notification starts the run on ${datasetKey}`);
    }
    const reportPrefix = suiteReportsPrefix(suite.name);
    // A sweep's report lands once every variant run is done.
    const sweep = isSweep(suite);
    const reportFile = sweep ? 'sweep.json' : 'report.json';
    const findReport = async () =>
      (await blobs.list(reportPrefix)).find((key) => key.endsWith(`/${reportFile}`));
    // The batch lane's schedule (an EventBridge rule on AWS): a poller pass whenever the queues
    // are idle, at most every run.batchPollSeconds while batches are open.
    const batches = new DynamoBatchStore({ client: clients.doc, tableName: resources.table });
    const batchPoller = containers.pool(
      'batch-poller',
      functionContainer('batchPoller', 'batch-poller', env),
    );
    const pollMs = suite.run.batchPollSeconds * 1000;
    let lastPass = 0;
    const settled = async () => {
      if (!(await poller.idle())) return false;
      const open = await batches.openBatches();
      if (open.length > 0 && Date.now() - lastPass < pollMs) return false;
      lastPass = Date.now();
      const outcome = await batchPoller.invoke({}, { region: MOTO_REGION });
      if (!outcome.ok) {
        log(`  batch-poller ${describeFailure(outcome)}`);
        throw outcome.error;
      }
      const pass = outcome.response as BatchPollerPass;
      // Waiting on a vendor's open batch is waiting, not a stall.
      if (open.length > 0 || pass.submitted + pass.closed + pass.woken > 0) poller.progressed();
      if (pass.submitted + pass.closed + pass.woken > 0) {
        log(`  batch-poller submitted ${pass.submitted}, collected ${pass.closed}, woke ${pass.woken} items`);
      }
      return open.length === 0 && pass.submitted + pass.closed + pass.woken === 0;
    };
    const stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    try {
      const done = async () => {
        if (reportDue) {
          reportDue = false;
          if ((await findReport()) !== undefined) return true;
        }
        return settled();
      };
      await poller.runUntil(done, { stallTimeoutMs });
    } catch (error) {
      if (!(error instanceof PollStalledError)) throw error;
      throw await gaveUp(error, {
        suite,
        sweep,
        blobs,
        runStore: new DynamoRunStore({
          client: clients.doc,
          tableName: resources.table,
          checkSuite: validateSuite,
          blobs,
        }),
        outDir: options.outDir,
        suitePath: options.suitePath,
        log,
      });
    }
    const reportKey = await findReport();
    if (!reportKey) {
      const rejected = await blobs.get(rejectionKey(suite.name));
      if (rejected) {
        const { key, reason } = JSON.parse(new TextDecoder().decode(rejected)) as RejectedUpload;
        throw new Error(`the upload of ${key} was rejected: ${reason}`);
      }
      throw new Error(
        'the pipeline went idle without writing a report: see the log lines above (--verbose shows every one)',
      );
    }

    const prefix = reportKey.slice(0, -reportFile.length);
    const runId = basename(prefix);
    const outDir = resolve(options.outDir ?? join('runs', 'cloud', runId));
    const files = await download(blobs, prefix, outDir);
    const body = JSON.parse(new TextDecoder().decode(await blobs.get(reportKey)));
    const reportUri = `s3://${resources.bucket}/${prefix}`;
    log(`report written to ${reportUri} (${files.length} files), downloaded to ${outDir}`);
    const { served: tableServed } = await partitionStats(moto.endpoint, NAMES.table);
    const common = {
      runId,
      bucket: resources.bucket,
      reportPrefix: prefix,
      reportUri,
      outDir,
      files,
      tableServed,
    };
    return sweep ? { ...common, sweep: body as SweepReport } : { ...common, report: body as Report };
  } finally {
    process.off('SIGINT', onSigint);
    await containers.close();
    for (const client of Object.values(clients)) client.destroy();
    log('stopping moto_server');
    await moto.stop();
  }
}

/**
 * True when an upload to `datasetKey` starts a run of the suite (`datasets/<its name>/…`); any
 * other key is only read when the suite itself is uploaded.
 */
export function datasetUploadStartsRun(suiteName: string, datasetKey: string): boolean {
  const route = routeKey(datasetKey);
  return route.kind === 'dataset' && route.suiteName === suiteName;
}

/**
 * A suite reads only its own `datasets/<name>/` unless the deployment shares a folder
 * (ASSAY_DATASET_PREFIXES): a suite whose dataset is another folder's key (`datasets/shared/…`)
 * runs here as on a stack deployed with that folder shared, and the log says so.
 */
function sharedDatasetEnv(
  suiteName: string,
  datasetKey: string,
  log: (line: string) => void,
): { ASSAY_DATASET_PREFIXES?: string } {
  if (datasetUploadStartsRun(suiteName, datasetKey)) return {};
  const folder = datasetKey.slice(0, datasetKey.lastIndexOf('/') + 1);
  if (!folder.startsWith(DATASETS_PREFIX) || folder === DATASETS_PREFIX) return {};
  const shared = [process.env.ASSAY_DATASET_PREFIXES, folder].filter(Boolean).join(',');
  log(
    `the functions share ${folder} with every suite (ASSAY_DATASET_PREFIXES=${shared}, deploy with -c datasetPrefixes=${folder})`,
  );
  return { ASSAY_DATASET_PREFIXES: shared };
}

/** Copies every object under `prefix` into `outDir` (the prefix cut off); returns the paths. */
async function download(blobs: BlobStore, prefix: string, outDir: string): Promise<string[]> {
  const files: string[] = [];
  await mkdir(outDir, { recursive: true });
  for (const key of await blobs.list(prefix)) {
    const body = await blobs.get(key);
    if (!body) continue;
    const path = join(outDir, key.slice(prefix.length));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, body);
    files.push(path);
  }
  return files;
}

/**
 * Giving up on a stalled pipeline: the run's results so far go into a report of those items
 * (written to the bucket, downloaded to the run's folder, as a finished run's are), and the
 * error says what was left and how to finish.
 */
async function gaveUp(
  stalled: PollStalledError,
  context: {
    suite: Suite;
    sweep: boolean;
    blobs: BlobStore;
    runStore: DynamoRunStore;
    outDir?: string;
    suitePath: string;
    log: (line: string) => void;
  },
): Promise<CloudStalledError> {
  const { suite, blobs, runStore } = context;
  const finish = [
    `The local cloud's queues and table live in moto_server, which stops now, so this run cannot be picked up where it stopped. To finish it:`,
    `  assay cloud ${context.suitePath} --stall-timeout <ms>   (wait longer for a slow backend; the run starts again from the dataset)`,
    `  assay run ${context.suitePath}   (the local shell, where a run resumes after any interruption)`,
  ].join('\n');
  const run = context.sweep ? undefined : await runStore.latestRun(suite.name).catch(() => undefined);
  if (!run) {
    return new CloudStalledError(`assay cloud gave up: ${stalled.message}.\n${finish}`, undefined, []);
  }
  const counters = await runStore.counters(run.runId);
  const recorded = (counters?.done ?? 0) + (counters?.failed ?? 0);
  const total = counters?.total === undefined ? 'an unknown number of' : String(counters.total);
  const outDir = resolve(context.outDir ?? join('runs', 'cloud', run.runId));
  let written = '';
  let files: string[] = [];
  if (recorded > 0) {
    await writeRunReport({ runStore, reports: blobs, history: runStore }, run.runId);
    files = await download(blobs, run.reportPrefix, outDir);
    written = ` A report of those items (not of the run) is in ${outDir}.`;
    context.log(`partial report of ${recorded} items downloaded to ${outDir}`);
  }
  return new CloudStalledError(
    `assay cloud gave up on run ${run.runId}: ${stalled.message}. ${recorded} of ${total} items have results.${written}\n${finish}`,
    recorded > 0 ? outDir : undefined,
    files,
  );
}

/** The suite file as uploaded: validated here first, so mistakes show before moto starts. */
async function readSuite(
  path: string,
  backends?: string[],
  simulate?: boolean,
): Promise<{ suite: Suite; text: string }> {
  const original = await readFile(path, 'utf8');
  let suite = parseSuite(original, path);
  if (!backends && !simulate) return { suite, text: original };
  let raw = JSON.parse(original) as Record<string, unknown>;
  if (backends) raw.backends = backends;
  if (simulate) raw = simulateSuite(raw);
  const text = `${JSON.stringify(raw, null, 2)}\n`;
  suite = parseSuite(text, path);
  return { suite, text };
}

function describeInvocation(invocation: Invocation): string {
  const { functionName, records, failed, error, durationMs, container } = invocation;
  const plural = records === 1 ? 'record' : 'records';
  const outcome =
    error !== undefined
      ? `${container?.killed === undefined ? `threw ${errorText(error)}` : killedText(container.killed, error)}; all back to the queue`
      : failed > 0
        ? `${records - failed} ok, ${failed} back to the queue`
        : 'ok';
  const memory = container?.maxMemoryMb === undefined ? '' : `, max memory ${container.maxMemoryMb} MB`;
  const timing = container?.cold
    ? `${durationMs} ms, cold start${container.initMs === undefined ? '' : `, init ${container.initMs} ms`}${memory}`
    : `${durationMs} ms${memory}`;
  return `  ${functionName.padEnd(11)} ${String(records).padStart(2)} ${plural.padEnd(7)} ${outcome} (${timing})`;
}

/** A failed invocation outside the queues (the batch poller's schedule). */
function describeFailure(outcome: ContainerOutcome & { ok: false }): string {
  const { killed } = outcome.container;
  return killed === undefined ? `threw ${errorText(outcome.error)}` : killedText(killed, outcome.error);
}

/** Why the container ended, and the error the invocation failed with. */
function killedText(killed: KillReason, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (killed === 'exited') return `container exited: ${message}`;
  if (killed === 'stopped') return 'container stopped with the run';
  return `container killed (${killed}): ${message}`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
