/**
 * The composition root of the AWS shell. Each function's entry file calls its `…Root()` once,
 * at module load: the environment is parsed there (a missing variable fails the cold start
 * and names itself), and SDK clients, adapters, the price table and providers are built once
 * per container, never per invocation.
 *
 * Each function asks only for the variables its stack wiring sets: the worker, for one, gets
 * no ITEMS_QUEUE_URL, so the env is checked per function rather than all at once.
 */
import { fileURLToPath } from 'node:url';
import {
  BatchProcessor,
  EventType,
  FullBatchFailureError,
  processPartialResponse,
} from '@aws-lambda-powertools/batch';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { type AwsClients, createAwsClients } from '../shared/adapters/aws/clients.js';
import { DynamoBatchStore } from '../shared/adapters/aws/dynamo-batch-store.js';
import { DynamoChunkStore } from '../shared/adapters/aws/dynamo-chunk-store.js';
import { DynamoLlmCache } from '../shared/adapters/aws/dynamo-llm-cache.js';
import { DynamoPromptIndex } from '../shared/adapters/aws/dynamo-prompt-index.js';
import { DynamoRateLimitStore } from '../shared/adapters/aws/dynamo-rate-limit-store.js';
import { DynamoRunStore } from '../shared/adapters/aws/dynamo-run-store.js';
import { DynamoLeaderboard, DynamoSweepStore } from '../shared/adapters/aws/dynamo-sweeps.js';
import {
  type FunctionEnv,
  loadProviderSecrets,
  parseFunctionEnv,
  type QueueVariable,
} from '../shared/adapters/aws/env.js';
import { S3BlobStore } from '../shared/adapters/aws/s3-blob-store.js';
import { SqsAggregateTrigger } from '../shared/adapters/aws/sqs-aggregate-trigger.js';
import { SqsWorkQueue } from '../shared/adapters/aws/sqs-work-queue.js';
import { FolderBlobStore } from '../shared/adapters/local/folder-blob-store.js';
import { readerLimitsFromEnv } from '../shared/lib/datasets/limits.js';
import { EncoderPool } from '../shared/lib/encoders/registry.js';
import { REPORTS_PREFIX } from '../shared/lib/layout/bucket.js';
import { FUNCTION_TIMEOUT_SECONDS, PART_ROWS } from '../shared/lib/layout/queues.js';
import { parseDatasetPrefixes } from '../shared/lib/layout/suite-paths.js';
import { parseTeams } from '../shared/lib/layout/tenancy.js';
import {
  declaredKeyEnv,
  parseProviderKeyNames,
  withDeclaredKeys,
} from '../shared/lib/providers/declared-keys.js';
import {
  loadPriceTable,
  type PriceTable,
  requirePricedBackends,
  withSuitePrices,
} from '../shared/lib/providers/pricing.js';
import { fleetSizeOf, RateLimiters } from '../shared/lib/providers/rate-limit/limiters.js';
import { ProviderPool } from '../shared/lib/providers/registry.js';
import { LeaseKeptError } from '../shared/model/errors.js';
import type { RunRecord } from '../shared/model/model.js';
import type { AggregateTrigger, RunStore } from '../shared/ports/ports.js';
import { encodersOf, simulateAnswer } from '../shared/registry/registry.js';
import { validateSuite } from '../shared/registry/suite.js';
import type { InPartsDeps } from '../shared/use-cases/aggregate-parts.js';
import type { AggregateDeps } from '../shared/use-cases/aggregate-run.js';
import type { AggregateSweepDeps } from '../shared/use-cases/aggregate-sweep.js';
import type { AdvanceBatchesDeps } from '../shared/use-cases/batch-lane.js';
import type { FinishRunDeps } from '../shared/use-cases/finish-run.js';
import type { IngestObjectDeps } from '../shared/use-cases/ingest-object.js';
import type { ScoreItemDeps } from '../shared/use-cases/score-item.js';
import type { HaltDeps } from '../shared/use-cases/stop-run.js';
import type { WatchRunsDeps } from '../shared/use-cases/watch-runs.js';
import { dailySpendLimitFromEnv, deployLimitsFromEnv, stopCacheMsFromEnv } from './deploy-env.js';
import { RetryBackoffs, retryBackoffFromEnv } from './retry-backoff.js';
import { parseSqsEvent } from './sqs-event.js';

/** Structured JSON logs. POWERTOOLS_SERVICE_NAME (set per function by the stack) wins over `assay`. */
export const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME || 'assay' });

/** EMF metrics, flushed by {@link publishMetrics} at the end of each invocation. */
export const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE || 'Assay',
  serviceName: process.env.POWERTOOLS_SERVICE_NAME || 'assay',
});

/** Writes the invocation's buffered metrics as one EMF line (nothing when there are none). */
export function publishMetrics(): void {
  if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
}

/**
 * The folder whose `prompts/` ship with the functions: the Lambda task root (the bundling step
 * copies `prompts/` next to each handler), else the repository when run locally.
 */
export const BUNDLE_ROOT = process.env.LAMBDA_TASK_ROOT || fileURLToPath(new URL('..', import.meta.url));

/**
 * What a container is built from: by default the process's environment and SDK clients built
 * from it (a Lambda container); the capacity model builds many containers in one process, each
 * from an environment and clients of its own.
 */
export interface ContainerOptions {
  env?: NodeJS.ProcessEnv;
  clients?: AwsClients;
}

interface Base<Q extends QueueVariable> {
  env: FunctionEnv<Q>;
  /** The whole environment (provider keys, limits, prices), not only the variables parsed. */
  processEnv: NodeJS.ProcessEnv;
  clients: AwsClients;
  blobs: S3BlobStore;
  runStore: DynamoRunStore;
}

function base<Q extends QueueVariable>(queues: readonly Q[], options: ContainerOptions = {}): Base<Q> {
  const processEnv = options.env ?? process.env;
  const env = parseFunctionEnv(queues, processEnv);
  const clients = options.clients ?? createAwsClients(env);
  const blobs = new S3BlobStore({ client: clients.s3, bucket: env.BUCKET_NAME });
  return {
    env,
    processEnv,
    clients,
    blobs,
    runStore: new DynamoRunStore({
      client: clients.doc,
      tableName: env.TABLE_NAME,
      checkSuite: validateSuite,
      // Results too large for a DynamoDB item go by reference to the bucket.
      blobs,
      stopCacheMs: stopCacheMsFromEnv(processEnv),
      resultTtlDays: env.ASSAY_RESULT_TTL_DAYS,
      // Set on aggregate only: its reads of results keep to its share of the table.
      resultReadUnitsPerSecond: env.ASSAY_RESULT_READ_UNITS_PER_SECOND,
    }),
  };
}

/**
 * The container's retries in seconds: the records an invocation failed are given their backoff
 * (see retry-backoff.ts) through this container's SQS client.
 */
function retriesOf<Q extends QueueVariable>(b: Base<Q>): RetryBackoffs {
  return new RetryBackoffs({
    sqs: b.clients.sqs,
    backoff: retryBackoffFromEnv(b.processEnv),
    onError: (error, queueUrl) =>
      logger.warn('retry backoff not set: the record comes back after the visibility timeout', {
        queueUrl,
        error: error as Error,
      }),
  });
}

function aggregateTrigger(b: Base<'AGGREGATE_QUEUE_URL'>): AggregateTrigger {
  return new SqsAggregateTrigger({ client: b.clients.sqs, queueUrl: b.env.AGGREGATE_QUEUE_URL });
}

/**
 * Provider keys: the process env with the Secrets Manager secret's keys over it, read once per
 * container, on first use (a failed read is not kept: the next invocation tries again).
 */
function providerKeys<Q extends QueueVariable>(b: Base<Q>): () => Promise<NodeJS.ProcessEnv> {
  const arn = b.env.PROVIDER_SECRET_ARN;
  let keys: Promise<NodeJS.ProcessEnv> | undefined;
  return () => {
    keys ??= (
      arn
        ? loadProviderSecrets(b.clients.secrets, arn).then((secrets) => ({ ...b.processEnv, ...secrets }))
        : Promise.resolve(b.processEnv)
    ).catch((error: unknown) => {
      keys = undefined;
      throw error;
    });
    return keys;
  };
}

/**
 * Ingest: reads uploads, writes the run, sends items; a suite's prompts come from its scope in
 * the bucket, then the bundle. Ingest parses untrusted files and never reads the provider secret:
 * a backend's key is checked against the names the deployment declares (`ASSAY_PROVIDER_KEYS`)
 * and the process's own variables (see declared-keys.ts).
 */
export function ingestRoot(options: ContainerOptions = {}): {
  bucketName: string;
  deps: IngestObjectDeps;
  retries: RetryBackoffs;
} {
  const b = base(['ITEMS_QUEUE_URL', 'AGGREGATE_QUEUE_URL', 'EVENTS_QUEUE_URL'], options);
  const declared = parseProviderKeyNames(b.processEnv.ASSAY_PROVIDER_KEYS);
  const env = declaredKeyEnv(b.processEnv, declared);
  const prices = loadPriceTable(undefined, b.processEnv);
  // A chunk is held a little longer than an invocation can run.
  const chunkLeaseSeconds = FUNCTION_TIMEOUT_SECONDS.ingest + 60;
  return {
    bucketName: b.env.BUCKET_NAME,
    // A chunk task that failed gave its chunk's lease up: it comes back in seconds.
    retries: retriesOf(b),
    deps: {
      bucket: b.blobs,
      // Each suite's scope in the bucket (prompts/<team>/ or prompts/) overrides these.
      prompts: new FolderBlobStore(BUNDLE_ROOT),
      // The deployment's teams, each with its suites and prompt folder (a bad list fails the cold start).
      teams: parseTeams(b.processEnv.ASSAY_TEAMS),
      // The dataset readers' limits (ASSAY_MAX_RECORD_BYTES…; a bad one fails the cold start).
      readerLimits: readerLimitsFromEnv(b.processEnv),
      checkBackends: async (suite) => {
        withDeclaredKeys(declared, () => {
          new ProviderPool({ env, prices }).require(suite.backends, suite.sim);
          new EncoderPool({ env, prices, s3: () => b.clients.s3 }).require(encodersOf(suite));
        });
        // A run with a budget needs a price for each backend (the table's, or the suite's run.prices for a model the table lacks).
        requirePricedBackends(suite, prices, 'add');
      },
      runStore: b.runStore,
      history: b.runStore,
      promptIndex: new DynamoPromptIndex({ client: b.clients.doc, tableName: b.env.TABLE_NAME }),
      // A dataset's items are queued at a chunk's pace: sixteen batches in flight.
      queue: new SqsWorkQueue({
        client: b.clients.sqs,
        queueUrl: b.env.ITEMS_QUEUE_URL,
        blobs: b.blobs,
        concurrency: 16,
      }),
      trigger: aggregateTrigger(b),
      sweeps: new DynamoSweepStore({ client: b.clients.doc, tableName: b.env.TABLE_NAME }),
      chunks: new DynamoChunkStore({
        client: b.clients.doc,
        tableName: b.env.TABLE_NAME,
        ttlDays: b.env.ASSAY_CACHE_TTL_DAYS,
        claimsPerSecond: b.env.ASSAY_INGEST_CLAIMS_PER_SECOND,
      }),
      // The next chunk of a dataset is a task on the events queue, which ingest consumes.
      sendChunk: async (chunk) => {
        await b.clients.sqs.send(
          new SendMessageCommand({
            QueueUrl: b.env.EVENTS_QUEUE_URL,
            MessageBody: JSON.stringify({ chunk }),
          }),
        );
      },
      chunkBytes: b.env.ASSAY_INGEST_CHUNK_BYTES,
      // A suite reads its own datasets/<name>/, and these shared folders (a bad list fails the cold start).
      datasetPrefixes: parseDatasetPrefixes(b.env.ASSAY_DATASET_PREFIXES),
      partRows: PART_ROWS,
      // The deployment's limits on an upload: its rows, runs × repeats, answer length, default budget.
      // The models it may call and the budget it may name, and the prices a suite may not change.
      limits: { ...deployLimitsFromEnv(b.processEnv), prices },
      chunkLeaseMs: chunkLeaseSeconds * 1000,
    },
  };
}

/**
 * The worker: scores items. Provider keys are read once per container, on the first
 * invocation (see {@link providerKeys}), and providers are built once per backend.
 */
export function workerRoot(options: ContainerOptions = {}): {
  blobs: S3BlobStore;
  batchStore: DynamoBatchStore;
  /** What ends an item before it is scored: its run stopped, the day's spend at the daily limit. */
  halt: HaltDeps;
  retries: RetryBackoffs;
  /** Records a batch's results together (the run store's). */
  recordResults: RunStore['recordResults'];
  scoring(): Promise<ScoreItemDeps>;
} {
  const b = base(['AGGREGATE_QUEUE_URL'], options);
  const prices = loadPriceTable(undefined, b.processEnv);
  const cache = new DynamoLlmCache({
    client: b.clients.doc,
    tableName: b.env.TABLE_NAME,
    ttlDays: b.env.ASSAY_CACHE_TTL_DAYS,
    onError: (error, op, key) => logger.warn(`llm cache ${op} failed`, { key, error: error as Error }),
  });
  const trigger = aggregateTrigger(b);
  const keys = providerKeys(b);
  // One limiter per model in this container; their buckets are items of the table, shared by
  // every container, so a declared limit holds for the fleet (ASSAY_LIMITS and suites' run.limits).
  // The containers lease the buckets in stretches (rate-limit/lease.ts); while the table cannot
  // give them out, each keeps to the limit divided by the most containers there may be
  // (ASSAY_WORKER_MAX_CONCURRENCY), counted once per episode in RateLimitStoreFallback.
  const limiters = new RateLimiters({
    store: new DynamoRateLimitStore({ client: b.clients.doc, tableName: b.env.TABLE_NAME }),
    env: b.processEnv,
    fleetSize: fleetSizeOf(b.processEnv),
    onStoreFallback: ({ key, error, fleetSize, share }) => {
      metrics.addMetric('RateLimitStoreFallback', MetricUnit.Count, 1);
      logger.warn("rate limit store unavailable: keeping to this container's share of the limit", {
        key,
        fleetSize,
        share,
        error: error as Error,
      });
    },
    onStoreRecovered: ({ key, fallbackMs, calls }) =>
      logger.info('rate limit store answers again: back to the shared bucket', { key, fallbackMs, calls }),
    onStoreError: (error, key) =>
      logger.warn('learned rate limit not shared with the store', { key, error: error as Error }),
  });
  let deps: ScoreItemDeps | undefined;

  return {
    blobs: b.blobs,
    batchStore: batchStore(b),
    halt: { runStore: b.runStore, trigger, dailySpendLimitUsd: dailySpendLimitFromEnv(b.processEnv) },
    retries: retriesOf(b),
    recordResults: (results) => b.runStore.recordResults(results),
    async scoring() {
      if (deps) return deps;
      const env = await keys();
      const poolFor = suitePricedPools(env, prices);
      deps = {
        runStore: b.runStore,
        trigger,
        cache,
        prices,
        // A suite's run.prices may price a model the deployment lacks, never change one it prices.
        suitePrices: 'add',
        providerFor: (backend: string, run: RunRecord) =>
          poolFor(run).get(backend, run.suite.sim, run.suite.run.timeoutMs),
        encoders: new EncoderPool({ env, prices, s3: () => b.clients.s3 }),
        onTransientError: 'throw',
        limiters,
      };
      return deps;
    },
  };
}

/**
 * Providers per set of suite prices (`run.prices`), each costing calls at the deployment's
 * table with the suite's prices for the models the table lacks: a model the deployment prices
 * costs the deployment's price whatever the suite says, so a run's budget and the day's spend
 * count what the deployment pays.
 */
function suitePricedPools(env: NodeJS.ProcessEnv, prices: PriceTable): (run: RunRecord) => ProviderPool {
  const pools = new Map<string, ProviderPool>();
  return (run) => {
    const key = JSON.stringify(run.suite.run.prices ?? null);
    let pool = pools.get(key);
    if (!pool) {
      const table = withSuitePrices(prices, run.suite.run.prices, 'add', "the suite's run.prices");
      pool = new ProviderPool({ env, prices: table, simulator: simulateAnswer });
      pools.set(key, pool);
    }
    return pool;
  };
}

function batchStore<Q extends QueueVariable>(b: Base<Q>): DynamoBatchStore {
  return new DynamoBatchStore({
    client: b.clients.doc,
    tableName: b.env.TABLE_NAME,
    ttlDays: b.env.ASSAY_CACHE_TTL_DAYS,
  });
}

/**
 * The batch poller (scheduled): submits the calls workers recorded, collects finished batches
 * and sends their waiting items back to the items queue.
 */
export function batchPollerRoot(options: ContainerOptions = {}): { deps(): Promise<AdvanceBatchesDeps> } {
  const b = base(['ITEMS_QUEUE_URL'], options);
  const prices = loadPriceTable(undefined, b.processEnv);
  const keys = providerKeys(b);
  const queue = new SqsWorkQueue({ client: b.clients.sqs, queueUrl: b.env.ITEMS_QUEUE_URL, blobs: b.blobs });
  let deps: AdvanceBatchesDeps | undefined;
  return {
    async deps() {
      if (deps) return deps;
      const poolFor = suitePricedPools(await keys(), prices);
      deps = {
        store: batchStore(b),
        runStore: b.runStore,
        providerFor: (backend, run) => poolFor(run).get(backend, run.suite.sim),
        resend: (bodies) => queue.resend(bodies.map(namedBody)),
        // A batch's calls are items of the table, read back when it closes: keep batches modest.
        maxRequests: 2_000,
        log: (message, fields) => logger.info(message, fields),
      };
      return deps;
    },
  };
}

/** An item message body with the names SQS errors report it by. */
function namedBody(body: string): { runId: string; itemId: string; body: string } {
  const parsed = JSON.parse(body) as { runId?: string; itemId?: string; item?: { id?: string } };
  return { runId: parsed.runId ?? '?', itemId: parsed.itemId ?? parsed.item?.id ?? '?', body };
}

/** The dead-letter function: records dead items as failed results, ends the runs of dead ingest chunks. */
export function deadLetterRoot(options: ContainerOptions = {}): {
  blobs: S3BlobStore;
  runStore: RunStore;
  trigger: AggregateTrigger;
  retries: RetryBackoffs;
} {
  const b = base(['AGGREGATE_QUEUE_URL'], options);
  return { blobs: b.blobs, runStore: b.runStore, trigger: aggregateTrigger(b), retries: retriesOf(b) };
}

/**
 * The aggregator: reads results, writes report files to the bucket, compares with the suite's
 * previous run (`run`); aggregates a sweep it is asked for (`sweep`); once a run is done, keeps
 * the leaderboard and aggregates the sweeps it completes (`finish`).
 */
export function aggregateRoot(options: ContainerOptions = {}): {
  run: AggregateDeps;
  steps: InPartsDeps;
  sweep: AggregateSweepDeps;
  finish: FinishRunDeps;
  retries: RetryBackoffs;
} {
  const b = base(['AGGREGATE_QUEUE_URL'], options);
  const table = { client: b.clients.doc, tableName: b.env.TABLE_NAME };
  // A step is held a little longer than an invocation can run.
  const stepLeaseSeconds = FUNCTION_TIMEOUT_SECONDS.aggregate + 60;
  const sweeps = new DynamoSweepStore(table);
  const inParts = {
    scratch: b.blobs,
    steps: new DynamoChunkStore({ ...table, ttlDays: b.env.ASSAY_CACHE_TTL_DAYS }),
    trigger: new SqsAggregateTrigger({ client: b.clients.sqs, queueUrl: b.env.AGGREGATE_QUEUE_URL }),
    stepLeaseMs: stepLeaseSeconds * 1000,
  };
  return {
    run: {
      runStore: b.runStore,
      reports: b.blobs,
      history: b.runStore,
      leaseMs: b.env.ASSAY_AGGREGATION_LEASE_MS,
      inParts: { ...inParts, fromResults: b.env.ASSAY_AGGREGATE_IN_PARTS_FROM },
    },
    steps: { ...inParts, runStore: b.runStore, reports: b.blobs, history: b.runStore },
    sweep: { sweeps, runs: b.runStore, reports: b.blobs },
    // A step that failed gave its lease up: its trigger comes back in seconds.
    retries: retriesOf(b),
    finish: {
      runs: b.runStore,
      reports: b.blobs,
      leaderboard: new DynamoLeaderboard(table),
      leaderboardFiles: { blobs: b.blobs, prefix: REPORTS_PREFIX },
      sweeps,
      sweepFiles: () => b.blobs,
      stopped: (runId) => b.runStore.stopped(runId),
    },
  };
}

/** The watchdog: looks at the runs not done yet, triggers their aggregation again when it is due. */
export function watchdogRoot(options: ContainerOptions = {}): WatchRunsDeps {
  const b = base(['AGGREGATE_QUEUE_URL'], options);
  return { runStore: b.runStore, trigger: aggregateTrigger(b), stuckAfterMs: b.env.ASSAY_STUCK_AFTER_MS };
}

/**
 * An SQS-triggered handler: checks the event, runs `recordHandler` on each record through
 * Powertools' batch processor (a record that throws is reported in `batchItemFailures` and
 * only it is retried), gives each failed record its backoff (`retries`: it comes back in
 * seconds, not after the queue's visibility timeout; see retry-backoff.ts), and flushes the
 * invocation's metrics. `parallel` runs the records of a batch concurrently. `shared`, when
 * given, makes what the records of one batch share (made afresh for each batch), handed to
 * each record's handler.
 */
export function sqsBatchHandler<Shared = undefined>(
  recordHandler: (record: SQSRecord, context: Context, shared: Shared) => Promise<void>,
  {
    parallel,
    retries,
    shared,
  }: { parallel: boolean; retries: RetryBackoffs; shared?: (records: readonly SQSRecord[]) => Shared },
): (event: unknown, context: Context) => Promise<SQSBatchResponse> {
  return async (event, context) => {
    logger.addContext(context);
    try {
      const batch = parseSqsEvent(event);
      const own = shared?.(batch.Records) as Shared;
      let response: SQSBatchResponse;
      // Records whose failed attempt kept a lease: they come back no sooner than it lapses.
      const kept = new Map<string, number>();
      const handle = async (record: SQSRecord) => {
        try {
          await recordHandler(record, context, own);
        } catch (error) {
          if (error instanceof LeaseKeptError) kept.set(record.messageId, Math.ceil(error.leaseMs / 1000));
          throw error;
        }
      };
      try {
        // A fresh processor per invocation: it holds one batch's state, and the local poller
        // may run several invocations of a function in one process.
        response = await processPartialResponse(batch, handle, new BatchProcessor(EventType.SQS), {
          context,
          processInParallel: parallel,
        });
      } catch (error) {
        // Every record failed: Powertools throws (the invocation counts as an error), and each
        // record still gets its backoff.
        if (error instanceof FullBatchFailureError) await retries.delay(batch.Records, kept);
        throw error;
      }
      const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
      if (failed.size > 0)
        await retries.delay(
          batch.Records.filter((record) => failed.has(record.messageId)),
          kept,
        );
      return response;
    } finally {
      publishMetrics();
    }
  };
}
