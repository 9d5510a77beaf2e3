/**
 * One run of the capacity model: the stack deployed over the stand-ins of DynamoDB, SQS and S3
 * (bench/cloud/) on the simulated clock, the prompts and a GEC suite uploaded, then a dataset
 * of `items` distinct rows dropped into `datasets/<suite>/`; from there everything happens as on
 * AWS: S3 notifies the events queue, ingest reads the dataset and queues the items, the worker
 * fleet scores them with the simulator (`sim:gpt-4o-mini`, a fixed mean latency, waited in
 * simulated time), the last result triggers the aggregation, and the run ends when its
 * report.json is in the bucket. Nothing is called that AWS would not call.
 *
 * What it returns is raw: every invocation, the stand-ins' accounting at the upload and once
 * the run's work is done, the completion timeline, the load of every partition key, the report,
 * and the states some invocations started from (for calibration.ts to replay them alone).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { uploadFolder } from '../../../cli/cloud/local-cloud.js';
import { createCloudResources, type ResourceNames } from '../../../cli/cloud/moto.js';
import { S3BlobStore } from '../../../shared/adapters/aws/s3-blob-store.js';
import {
  datasetUploadKey,
  PROMPT_PREFIX,
  suiteKey,
  suiteReportsPrefix,
} from '../../../shared/lib/layout/bucket.js';
import { type FunctionName, queueNames } from '../../../shared/lib/layout/queues.js';
import { KEY_PREFIXES } from '../../../shared/lib/layout/table.js';
import type { Report } from '../../../shared/model/report.js';
import { distinctGecCsv, ROOT } from '../../parts/data.js';
import { type CloudAccounting, SimAws, type SimAwsOptions } from '../clients.js';
import type {
  PartitionLimits,
  PartitionLoadReport,
  TableLimits,
  TableLoadReport,
} from '../dynamo-capacity.js';
import { SimWorld } from '../world.js';
import { AWS_SIDE, CpuMeter, captureOutput, currentInvocation, runAs, takeCpuDebt } from './attribution.js';
import { type DeployedMapping, type Deployment, functionEnvironments } from './deployment.js';
import {
  Fleet,
  type FleetPeaks,
  type InvocationRecord,
  MAPPING_SCALING,
  type Mapping,
  type Schedule,
} from './fleet.js';
import { loadFunctions, withEnv } from './functions.js';
import { type LlmBehaviour, type LlmTally, standInVendors } from './llm.js';
import { routeTelemetry } from './logging.js';
import { type Capture, Captures } from './snapshots.js';

/** The log level the stack gives its functions by default (infra/config.ts): the loggers are built with it. */
export const LOG_LEVEL = 'INFO';

export const REGION = 'us-east-1';
export const ACCOUNT = '123456789012';
export const SUITE_NAME = 'capacity-gec';
const PROVIDER_SECRET_ARN = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:assay-provider-keys-AbCdEf`;
const NAMES: ResourceNames = {
  bucket: 'assay-model',
  table: 'assay-model',
  queues: queueNames('assay-model'),
};

export interface SimulationOptions {
  items: number;
  /** The stack, synthesized with the worker's maximum concurrency (deployment.ts). */
  deployment: Deployment;
  /** The simulated LLM call's median latency, ms (lognormal, p99 five times it). */
  llmMs: number;
  /** A burst of 429s from the vendor; default none. */
  burst?: LlmBehaviour['burst'];
  /** Grows each answer to about this many bytes (a workload with large results). */
  answerBytes?: number;
  /** The rate limits the vendor reports (the limiter keeps the fleet to them); default {@link DEFAULT_VENDOR_LIMITS}. */
  vendorLimits?: { rpm: number; tpm: number };
  seed: number;
  /** Per-partition-key limits of the simulated DynamoDB; default DynamoDB's own. */
  partitionLimits?: PartitionLimits;
  /** Measured init time of each function's bundle, ms: waited before a cold start's first invocation. */
  initMs?: Partial<Record<FunctionName, number>>;
  /** Keep the states some invocations start from, for calibration (default true). */
  capture?: boolean;
  /** Gives up past this much simulated time after the upload, ms (default 24 h). */
  limitMs?: number;
  /** Progress lines (stderr by default: nothing in the summary). */
  log?: (line: string) => void;
}

/** What the run did, raw. */
export interface Simulation {
  options: SimulationOptions;
  /** The dataset's size, bytes. */
  datasetBytes: number;
  /** Every invocation from the dataset's upload on. */
  invocations: InvocationRecord[];
  /** Simulated ms since the world began: the dataset upload, report.json in the bucket, the run's work all done. */
  uploadAtMs: number;
  reportAtMs: number | undefined;
  settledAtMs: number;
  /** Once a simulated second from the upload on: the messages sent to the items queue so far. */
  queued: { atMs: number; sent: number }[];
  /** Simulated ms after the upload at which each worker or dead-letter invocation ended, and the records it finished. */
  completions: { atMs: number; items: number }[];
  /** The stand-ins' accounting at the upload and when the run's work was done. */
  accounting: { start: CloudAccounting; end: CloudAccounting };
  /** Every partition key's load over the run (setup included: a few units). */
  partitions: PartitionLoadReport[];
  /** Items each partition key holds at the end. */
  partitionSizes: Map<string, number>;
  /** Result items in the table (not the counters beside them). */
  resultItems: number;
  report: Report | undefined;
  reportKeys: string[];
  /** Real ms of CPU by who spent it; the stretches the process was not running in, and that time. */
  cpu: {
    aws: number;
    lambda: number;
    none: number;
    invocations: number;
    preempted: number;
    preemptedMs: number;
  };
  /** Log bytes by function, from the upload on. */
  logBytes: Partial<Record<FunctionName, number>>;
  captures: Capture[];
  /** Real ms the simulation took (its setup included), simulated ms, timers fired. */
  world: { realMs: number; simulatedMs: number; timersFired: number };
  /** SDK requests the stand-ins served over the whole run (setup included). */
  requests: number;
  awsOptions: SimAwsOptions;
  queueDefinitions: { name: string; attributes: Record<string, string> }[];
  env: Record<FunctionName, NodeJS.ProcessEnv>;
  /** The fleet's concurrency: its peaks, each mapping's lanes, the invocations that waited for an execution. */
  fleet: FleetPeaks;
  /** The stand-in vendor's calls, 429s and latencies. */
  llm: LlmTally;
  /** The table's load as a whole: peaks taken and offered, its limits, what it refused. */
  table: TableLoadReport | undefined;
}

/**
 * The GEC quickstart suite, on the simulator priced as gpt-4o-mini; the simulator answers at
 * once (the stand-in vendor in front of it waits the latency).
 */
export async function modelSuite(seed: number): Promise<string> {
  const suite = JSON.parse(await readFile(join(ROOT, 'examples', 'quickstart.suite.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  delete suite.$schema;
  return JSON.stringify(
    {
      ...suite,
      name: SUITE_NAME,
      dataset: { path: 'gec.csv', lang: 'en' },
      backends: ['sim:gpt-4o-mini'],
      sim: { latencyMs: 0, seed },
    },
    null,
    2,
  );
}

export async function simulate(options: SimulationOptions): Promise<Simulation> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const dir = await mkdtemp(join(tmpdir(), 'assay-capacity-'));
  try {
    const datasetPath = join(dir, 'gec.csv');
    await distinctGecCsv(datasetPath, options.items);
    const dataset = await readFile(datasetPath);
    const suiteText = await modelSuite(options.seed);
    const functions = await loadFunctions();
    // Read by every Powertools logger and metrics object as it is built; the AWS SDK's warning
    // about the Node version is not a function's output (Lambda runs a newer Node).
    return await withEnv(
      {
        POWERTOOLS_LOG_LEVEL: LOG_LEVEL,
        POWERTOOLS_METRICS_NAMESPACE: 'Assay',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        TMPDIR: dir,
      },
      () => run(options, functions, dataset, suiteText, log),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function run(
  options: Simulation['options'],
  functions: Awaited<ReturnType<typeof loadFunctions>>,
  dataset: Buffer,
  suiteText: string,
  log: (line: string) => void,
): Promise<Simulation> {
  const world = new SimWorld({ seed: options.seed });
  const awsOptions: SimAwsOptions = {
    region: REGION,
    secrets: { [PROVIDER_SECRET_ARN]: '{}' },
    dynamo: {
      seed: options.seed,
      ...(options.partitionLimits ? { limits: options.partitionLimits } : {}),
      tableLimits: tableLimitsOf(options.deployment),
    },
    sqs: { seed: options.seed + 1 },
    s3: { seed: options.seed + 2 },
  };
  const aws = new SimAws(world, awsOptions);
  serveAsAws(aws, world);
  const { deployment } = options;
  const meter = new CpuMeter();
  const logBytes: Partial<Record<FunctionName, number>> = {};
  let counting = false;
  const restoreOutput = captureOutput((fn, bytes) => {
    if (counting) logBytes[fn] = (logBytes[fn] ?? 0) + bytes;
  });
  const restoreTelemetry = routeTelemetry(functions.shared);
  const captures = new Captures(aws, options.capture ?? true);
  let uploadAtMs = Number.POSITIVE_INFINITY;
  const vendors = standInVendors(
    {
      medianMs: options.llmMs,
      seed: options.seed,
      reported: options.vendorLimits ?? DEFAULT_VENDOR_LIMITS,
      ...(options.burst ? { burst: options.burst } : {}),
      ...(options.answerBytes ? { answerBytes: options.answerBytes } : {}),
    },
    () => world.elapsed() - uploadAtMs,
  );
  const realStart = process.hrtime.bigint();
  let lastProgress = realStart;
  meter.start();
  try {
    return await world.run(
      async () => {
        const operator = aws.clients();
        const resources = await createCloudResources(operator, NAMES, { visibilityTimeouts: 'declared' });
        const env = functionEnvironments(deployment, resources, PROVIDER_SECRET_ARN, REGION);
        const blobs = new S3BlobStore({ client: operator.s3, bucket: resources.bucket });
        const completions: Simulation['completions'] = [];
        let completed = 0;
        let reportAtMs: number | undefined;
        const reportPrefix = suiteReportsPrefix(SUITE_NAME);
        const reportKeys: string[] = [];
        aws.s3.observe((bucket, key) => {
          if (bucket !== resources.bucket || !key.startsWith(reportPrefix)) return;
          reportKeys.push(key);
          if (key.endsWith('/report.json')) reportAtMs ??= world.elapsed();
        });
        const mappings: Mapping[] = deployment.mappings.map((m) => ({
          fn: m.fn,
          queueUrl: resources.queues[m.queue].url,
          queueArn: resources.queues[m.queue].arn,
          batchSize: m.batchSize,
          batchingWindowMs: m.batchingWindowS * 1000,
          ...mappingScaling(m),
        }));
        const queueNameOf = new Map(
          Object.values(resources.queues).map((q) => [q.url, q.url.slice(q.url.lastIndexOf('/') + 1)]),
        );
        const schedules: Schedule[] = deployment.schedules;
        const fleet = new Fleet({
          world,
          definitions: functions.definitions,
          env,
          clients: () => aws.clients(),
          // Lambda's pollers: one client with room for every lane's long poll.
          pollerSqs: aws.clients({ maxSockets: 1_000_000 }).sqs,
          region: REGION,
          account: ACCOUNT,
          namespace: 'Assay',
          initMs: options.initMs ?? {},
          functions: deployment.functions,
          mappings,
          schedules,
          concurrency: {
            limit: deployment.limits.accountConcurrency,
            reserved: Object.fromEntries(
              Object.entries(deployment.functions)
                .filter(([, f]) => f.reservedConcurrency !== null)
                .map(([fn, f]) => [fn, f.reservedConcurrency!]),
            ),
          },
          backlog: (url) => aws.sqs.report().queues[queueNameOf.get(url) ?? '']?.visible ?? 0,
          beforeInvoke: (fn, event, container) => {
            if (world.elapsed() >= uploadAtMs) captures.consider(fn, event, container, world);
          },
          onInvocation: (record) => {
            if (record.fn === 'worker' || record.fn === 'deadLetter') {
              const done = record.records - record.failed;
              if (done > 0 && world.elapsed() >= uploadAtMs) {
                completed += done;
                completions.push({ atMs: world.elapsed() - uploadAtMs, items: done });
                // The schedules' first pass comes when half the items are done, if their period
                // has not brought one earlier: so each pass is measured on a run in progress.
                if (completed - done < options.items / 2 && completed >= options.items / 2)
                  for (const schedule of schedules) fleet.passIfNone(schedule.fn, uploadAtMs);
              }
            }
            const now = process.hrtime.bigint();
            if (now - lastProgress > 15_000_000_000n) {
              lastProgress = now;
              const realS = Number(now - realStart) / 1e9;
              log(
                `  ${Math.round(realS)} s: ${completed} of ${options.items} items at ${(world.elapsed() / 1000).toFixed(1)} simulated s, ${Math.round(aws.report(0).pools.requests / realS)} requests/s`,
              );
            }
          },
        });
        fleet.start((schedule) => schedule.periodMs);

        // Set up as a deploy and a user would: the prompts (the stack's BucketDeployment), the
        // suite; each upload is an ingest invocation, done before the dataset goes.
        await uploadFolder(blobs, join(ROOT, 'prompts'), PROMPT_PREFIX);
        await blobs.put(suiteKey(SUITE_NAME), suiteText, 'application/json');
        await until(world, () => fleet.busy === 0 && queuesEmpty(aws, NAMES));

        const start = aws.report();
        uploadAtMs = world.elapsed();
        counting = true;
        await blobs.put(datasetUploadKey(SUITE_NAME, 'gec.csv'), dataset);
        log(`  dataset of ${options.items} rows (${dataset.length} bytes) uploaded`);
        const limit = uploadAtMs + (options.limitMs ?? 24 * 3_600_000);
        const itemsQueue = NAMES.queues.items.queue;
        const sentBefore = aws.sqs.report().queues[itemsQueue]?.sent ?? 0;
        const queued: Simulation['queued'] = [];
        await until(world, () => {
          queued.push({
            atMs: world.elapsed() - uploadAtMs,
            sent: (aws.sqs.report().queues[itemsQueue]?.sent ?? 0) - sentBefore,
          });
          if (world.elapsed() > limit)
            throw new Error(`no report after ${(options.limitMs ?? 0) / 1000} simulated s`);
          return reportAtMs !== undefined && fleet.busy === 0 && queuesEmpty(aws, NAMES);
        });
        const end = aws.report();
        const settledAtMs = world.elapsed();
        counting = false;
        const invocations = fleet.records.filter((r) => r.startMs >= uploadAtMs);
        await fleet.stop();
        const reportKey = reportKeys.find((k) => k.endsWith('/report.json'));
        const reportBody = reportKey ? aws.s3.peek(resources.bucket, reportKey) : undefined;
        const stats = world.stats();
        return {
          options,
          datasetBytes: dataset.length,
          invocations,
          uploadAtMs,
          reportAtMs,
          settledAtMs,
          completions,
          queued,
          accounting: { start, end },
          partitions: aws.dynamo.meter.loads(),
          partitionSizes: aws.dynamo.partitionSizes(resources.table),
          resultItems: aws.dynamo.countItems(resources.table, KEY_PREFIXES.results, KEY_PREFIXES.result),
          report: reportBody ? (JSON.parse(reportBody.toString('utf8')) as Report) : undefined,
          reportKeys,
          cpu: { ...meter.totals, preempted: meter.preempted, preemptedMs: meter.preemptedMs },
          logBytes,
          captures: captures.list,
          world: {
            realMs: Number(process.hrtime.bigint() - realStart) / 1e6,
            simulatedMs: stats.simulatedMs,
            timersFired: stats.timersFired,
          },
          requests: end.pools.requests,
          awsOptions,
          queueDefinitions: aws.sqs.definitions(),
          env,
          fleet: fleet.peaks,
          llm: vendors.tally,
          table: aws.dynamo.meter.tableReport()[resources.table],
        };
      },
      { label: 'capacity model' },
    );
  } finally {
    meter.stop();
    vendors.restore();
    restoreTelemetry();
    restoreOutput();
  }
}

/**
 * The rate limits the stand-in vendor reports on each answer by default (requests and tokens a
 * minute): far above what the fleet asks, so that the LLM's latency is its only wait. OpenAI
 * reports 30,000 requests a minute for gpt-4o-mini at its highest usage tier, which holds a
 * fleet to 500 calls a second (`--vendor-rpm 30000` models it).
 */
export const DEFAULT_VENDOR_LIMITS = { rpm: 1_000_000, tpm: 1_000_000_000 };

/** How Lambda scales a mapping (fleet.ts): where it starts, how fast it adds, its most at once. */
export function mappingScaling(m: DeployedMapping): Pick<Mapping, 'concurrency' | 'initial' | 'perMinute'> {
  if (m.mode === 'provisioned') {
    const per = MAPPING_SCALING.provisioned.invocationsPerPoller;
    const concurrency = (m.maxPollers ?? 1) * per;
    return {
      concurrency,
      initial: Math.min(concurrency, (m.minPollers ?? 1) * per),
      perMinute: MAPPING_SCALING.provisioned.perMinute,
    };
  }
  return {
    concurrency: m.maxConcurrency,
    initial: Math.min(m.maxConcurrency, MAPPING_SCALING.standard.initial),
    perMinute: MAPPING_SCALING.standard.perMinute,
  };
}

/** The table's throughput as deployed: its warm throughput (else a new table's) and its quota. */
export function tableLimitsOf(deployment: Deployment): TableLimits {
  const l = deployment.limits;
  return {
    ...(l.warmWriteUnitsPerSecond === null ? {} : { warmWriteUnitsPerSecond: l.warmWriteUnitsPerSecond }),
    ...(l.warmReadUnitsPerSecond === null ? {} : { warmReadUnitsPerSecond: l.warmReadUnitsPerSecond }),
    writeQuotaPerSecond: l.tableWriteQuota,
    readQuotaPerSecond: l.tableReadQuota,
  };
}

/**
 * The stand-ins serve every request as AWS's work, not the calling function's (attribution.ts),
 * and a request leaves only once the calling invocation's CPU so far has taken its simulated
 * time; so do its timers (the simulated LLM's wait, backoffs). A request from an invocation
 * ended at its timeout is never answered.
 */
export function serveAsAws(aws: SimAws, world: SimWorld): void {
  world.timerDelay = takeCpuDebt;
  for (const service of [aws.dynamo, aws.sqs, aws.s3, aws.secrets]) {
    const serve = service.serve.bind(service);
    service.serve = async (request) => {
      // An invocation Lambda ended at its timeout sends nothing more: its runtime is gone.
      if (currentInvocation()?.ended) return new Promise<never>(() => {});
      const owed = takeCpuDebt();
      if (owed > 0) await world.sleep(owed);
      return runAs(AWS_SIDE, () => serve(request));
    };
  }
}

/**
 * True when every queue a function consumes holds no message (visible, in flight or delayed).
 * The events and aggregate dead-letter queues have no consumer: what lands there stays.
 */
function queuesEmpty(aws: SimAws, names: ResourceNames): boolean {
  const queues = aws.sqs.report().queues;
  return [
    names.queues.events.queue,
    names.queues.items.queue,
    names.queues.items.deadLetter,
    names.queues.aggregate.queue,
  ].every((name) => {
    const q = queues[name];
    return !q || q.visible + q.inFlight + q.delayed === 0;
  });
}

/** Waits, a simulated second at a time, until `done()`. */
async function until(world: SimWorld, done: () => boolean): Promise<void> {
  while (!done()) await world.sleep(1000);
}
