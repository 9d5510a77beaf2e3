/**
 * The capacity model end to end: the stack synthesized (deployment.ts), each function's
 * container baseline measured (baseline.ts), the run simulated at each size asked
 * (simulation.ts), its invocations replayed alone (calibration.ts), its figures (figures.ts),
 * the projections to 1M and 10M items (projection.ts) and the goals checked against their
 * targets. `CloudModelReport` is what `npm run bench:cloud` writes as JSON.
 */
import { cpus, loadavg } from 'node:os';
import type { CloudResources } from '../../../cli/cloud/moto.js';
import { INGEST_CHUNK_BYTES, queueNames } from '../../../shared/lib/layout/queues.js';
import { AWS_PRICES } from '../../parts/cost.js';
import type { PartitionLimits } from '../dynamo-capacity.js';
import { type ContainerBaseline, measureBaselines } from './baseline.js';
import { calibrate, SCALED_PARTS } from './calibration.js';
import {
  type Deployment,
  type EventSourceMode,
  functionEnvironments,
  synthesizeDeployment,
} from './deployment.js';
import {
  FUNCTIONS,
  HEADROOM,
  PARTITION_LIMITS,
  type PerItem,
  type RunFigures,
  round,
  runFigures,
} from './figures.js';
import { loadFunctions } from './functions.js';
import type { LlmBehaviour } from './llm.js';
import { IN_PARTS_FROM, type Projection, project } from './projection.js';
import { ACCOUNT, DEFAULT_VENDOR_LIMITS, mappingScaling, REGION, simulate } from './simulation.js';

export interface ModelOptions {
  items: number;
  /** Also run this many items (e.g. a tenth), for the per-item figures side by side and two-size fits. */
  compare?: number;
  /** The worker's maximum concurrency. Default 1,000. */
  concurrency?: number;
  /** The simulated LLM call's median latency, ms (lognormal, p99 five times it). Default 1,000. */
  llmMs?: number;
  /** The items mapping's mode; default the deploy setting's. */
  esm?: EventSourceMode;
  /** The vendor's burst of 429s; default {@link DEFAULT_BURST}; null for none. */
  burst?: LlmBehaviour['burst'] | null;
  /** Each answer grown to about this many bytes (a workload with large results); default as simulated. */
  answerBytes?: number;
  /** The requests a minute the vendor reports as its limit; default far above the fleet's. */
  vendorRpm?: number;
  seed?: number;
  /** Per-partition-key limits of the simulated DynamoDB (a test lowers them). */
  partitionLimits?: PartitionLimits;
  /** Measure each function's bundle (init time, resident memory after it). Default true. */
  baselines?: boolean;
  /** Replay captured invocations alone for memory and /tmp. Default true. */
  calibrate?: boolean;
  /** The stack already synthesized with this concurrency (tests share one); default synthesized here. */
  deployment?: Deployment;
  /** Deploy settings (CDK context) over the stack's defaults, when the stack is synthesized here. */
  context?: Record<string, string>;
  /** Ingest's range size, bytes (ASSAY_INGEST_CHUNK_BYTES); default the stack's. */
  chunkBytes?: number;
  log?: (line: string) => void;
}

export interface Goal {
  goal: string;
  measured: string;
  target: string;
  /** null: not checked (the run was not made under the goal's conditions). */
  pass: boolean | null;
}

export type CloudModelReport = Omit<RunFigures, 'basis'> & {
  at: string;
  machine: { cpus: number; model: string; node: string; loadAverage: number[] };
  settings: {
    workerConcurrency: number;
    llmMs: number;
    esm: EventSourceMode;
    burst: LlmBehaviour['burst'] | null;
    answerBytes: number | null;
    vendorRpm: number;
    limits: Deployment['limits'];
    assumed: string[];
    seed: number;
    partitionLimits: { wruPerSecond: number; rruPerSecond: number };
    mappings: Deployment['mappings'];
    schedules: Deployment['schedules'];
    functions: Record<string, { memoryMb: number; timeoutS: number; tmpMb: number }>;
    chunkBytes: number;
    aggregateInPartsFrom: number;
    prices: typeof AWS_PRICES;
  };
  basis: RunFigures['basis'];
  projection: Record<'1000000' | '10000000', Projection>;
  goals: Goal[];
  compare?: {
    items: [number, number];
    perItem: Record<string, { small: number; large: number; ratio: number | null }>;
    small: Omit<RunFigures, 'lambda'> & { lambda: Record<string, unknown> };
  };
  baselines: Record<string, ContainerBaseline> | null;
  method: Record<string, string>;
  notes: string[];
};

/** The vendor's burst of 429s: a fifth of the calls refused for ten seconds, half a minute into the scoring. */
export const DEFAULT_BURST: NonNullable<LlmBehaviour['burst']> = {
  fromMs: 30_000,
  forMs: 10_000,
  share: 0.2,
  retryAfterMs: 1000,
};

export async function runModel(options: ModelOptions): Promise<CloudModelReport> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const concurrency = options.concurrency ?? 1000;
  const llmMs = options.llmMs ?? 1000;
  const seed = options.seed ?? 1;
  const burst = options.burst === undefined ? DEFAULT_BURST : options.burst;
  if (!options.deployment)
    log(
      `synthesizing the stack (worker concurrency ${concurrency}${options.esm ? `, ${options.esm} mode` : ''})…`,
    );
  const synthesized =
    options.deployment ??
    (await synthesizeDeployment(concurrency, {
      ...(options.esm ? { esm: options.esm } : {}),
      ...(options.context ? { context: options.context } : {}),
    }));
  const deployment =
    options.chunkBytes === undefined ? synthesized : withChunkBytes(synthesized, options.chunkBytes);
  const esm = deployment.mappings.find((m) => m.fn === 'worker')?.mode ?? 'standard';
  const functions = await loadFunctions();
  let baselines: Record<string, ContainerBaseline> | null = null;
  if (options.baselines ?? true) {
    log('measuring each function’s bundle: init time and memory after it…');
    baselines = await measureBaselines(
      functionEnvironments(deployment, placeholderResources(), 'arn:placeholder', REGION),
    );
  }
  const initMs = Object.fromEntries(
    FUNCTIONS.map((fn) => [fn, baselines?.[fn] && !baselines[fn]!.error ? baselines[fn]!.initMs : 0]),
  );
  const sizes = [
    ...new Set([options.compare, options.items].filter((n): n is number => n !== undefined)),
  ].sort((a, b) => a - b);
  const runs: RunFigures[] = [];
  for (const items of sizes) {
    log(
      `running ${items.toLocaleString('en-US')} items at worker concurrency ${concurrency} (${esm} mode), LLM ${llmMs} ms median…`,
    );
    const started = process.hrtime.bigint();
    const sim = await simulate({
      items,
      deployment,
      llmMs,
      ...(burst ? { burst } : {}),
      ...(options.answerBytes ? { answerBytes: options.answerBytes } : {}),
      ...(options.vendorRpm
        ? { vendorLimits: { rpm: options.vendorRpm, tpm: DEFAULT_VENDOR_LIMITS.tpm } }
        : {}),
      seed,
      initMs,
      capture: options.calibrate ?? true,
      ...(options.partitionLimits ? { partitionLimits: options.partitionLimits } : {}),
      log,
    });
    log(`  replaying ${sim.captures.length} invocations alone (memory, /tmp)…`);
    const calibrated =
      options.calibrate === false
        ? []
        : await calibrate(sim, functions, log, { scaleAssembly: items === sizes[sizes.length - 1] });
    const realSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    runs.push(
      runFigures({
        sim,
        calibrated,
        baselines: (baselines ?? undefined) as Parameters<typeof runFigures>[0]['baselines'],
        datasetBytes: sim.datasetBytes,
        chunkBytes: chunkBytesOf(deployment),
        realSeconds,
      }),
    );
    log(`  done in ${Math.round(realSeconds)} s`);
  }
  const large = runs[runs.length - 1]!;
  const small = runs.length > 1 ? runs[0] : undefined;
  const projection = {
    '1000000': project(runs, 1_000_000),
    '10000000': project(runs, 10_000_000),
  };
  const { basis, ...figures } = large;
  const partitionLimits = {
    wruPerSecond: options.partitionLimits?.writeUnitsPerSecond ?? PARTITION_LIMITS.wru,
    rruPerSecond: options.partitionLimits?.readUnitsPerSecond ?? PARTITION_LIMITS.rru,
  };
  const report: CloudModelReport = {
    at: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      model: cpus()[0]?.model ?? '?',
      node: process.version,
      loadAverage: loadavg().map((l) => round(l, 2)),
    },
    ...figures,
    settings: {
      workerConcurrency: concurrency,
      llmMs,
      esm,
      burst,
      answerBytes: options.answerBytes ?? null,
      vendorRpm: options.vendorRpm ?? DEFAULT_VENDOR_LIMITS.rpm,
      limits: deployment.limits,
      assumed: deployment.assumed,
      seed,
      partitionLimits,
      mappings: deployment.mappings,
      schedules: deployment.schedules,
      functions: Object.fromEntries(
        Object.entries(deployment.functions).map(([fn, f]) => [
          fn,
          { memoryMb: f.memoryMb, timeoutS: f.timeoutS, tmpMb: f.tmpMb },
        ]),
      ),
      chunkBytes: chunkBytesOf(deployment),
      aggregateInPartsFrom: IN_PARTS_FROM,
      prices: AWS_PRICES,
    },
    basis,
    projection,
    goals: goals(large, projection, concurrency, llmMs, esm),
    ...(small ? { compare: compareRuns(small, large) } : {}),
    baselines,
    method: METHOD,
    notes: notes(large, deployment),
  };
  return report;
}

/** What the functions' environment points at when only the bundles' init is measured. */
function placeholderResources(): CloudResources {
  const names = queueNames('assay-model');
  const queue = (name: string) => ({
    url: `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`,
    arn: `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`,
  });
  return {
    bucket: 'assay-model',
    table: 'assay-model',
    queues: {
      events: queue(names.events.queue),
      eventsDlq: queue(names.events.deadLetter),
      items: queue(names.items.queue),
      itemsDlq: queue(names.items.deadLetter),
      aggregate: queue(names.aggregate.queue),
      aggregateDlq: queue(names.aggregate.deadLetter),
    },
  };
}

/** `deployment` with ingest reading its files in ranges of `bytes`. */
function withChunkBytes(deployment: Deployment, bytes: number): Deployment {
  const ingest = deployment.functions.ingest;
  return {
    ...deployment,
    functions: {
      ...deployment.functions,
      ingest: { ...ingest, env: { ...ingest.env, ASSAY_INGEST_CHUNK_BYTES: String(bytes) } },
    },
  };
}

function chunkBytesOf(deployment: Deployment): number {
  const set = deployment.functions.ingest.env.ASSAY_INGEST_CHUNK_BYTES;
  return typeof set === 'string' ? Number(set) : INGEST_CHUNK_BYTES;
}

function goals(
  run: RunFigures,
  projection: CloudModelReport['projection'],
  concurrency: number,
  llmMs: number,
  esm: EventSourceMode,
): Goal[] {
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  const atGoal = concurrency === 1000 && llmMs === 1000;
  const over = FUNCTIONS.flatMap((fn) => {
    const f = run.lambda[fn];
    const out: string[] = [];
    if (!f.within80.timeout)
      out.push(
        f.maxDurationS === null
          ? `${fn} duration not measured`
          : `${fn} ${f.maxDurationS} s of ${f.timeoutS} s`,
      );
    if (!f.within80.memory)
      out.push(
        f.peakMemoryMb === null
          ? `${fn} memory not measured`
          : `${fn} ${f.peakMemoryMb} MB of ${f.memoryMb} MB`,
      );
    if (!f.within80.tmp)
      out.push(
        f.peakTmpMb === null ? `${fn} /tmp not measured` : `${fn} /tmp ${f.peakTmpMb} MB of ${f.tmpMb} MB`,
      );
    return out;
  });
  const worst = FUNCTIONS.map((fn) => {
    const f = run.lambda[fn];
    return `${fn} ${f.maxDurationS ?? '?'}/${f.timeoutS} s, ${f.peakMemoryMb ?? '?'}/${f.memoryMb} MB, /tmp ${f.peakTmpMb ?? '?'}/${f.tmpMb} MB`;
  }).join('; ');
  const failed = FUNCTIONS.filter((fn) => run.lambda[fn].errors > 0);
  const families = Object.entries(run.keyFamilies);
  const hotFamilies = families.filter(
    ([, f]) =>
      f.peakOfferedWruPerSecond > HEADROOM * PARTITION_LIMITS.wru ||
      f.peakOfferedRruPerSecond > HEADROOM * PARTITION_LIMITS.rru,
  );
  const busiest = families
    .map(([name, f]) => ({
      name,
      share: Math.max(
        f.peakOfferedWruPerSecond / PARTITION_LIMITS.wru,
        f.peakOfferedRruPerSecond / PARTITION_LIMITS.rru,
      ),
      f,
    }))
    .sort((a, b) => b.share - a.share)[0];
  const refused = families.reduce((m, [, f]) => m + f.refused, 0);
  const table = run.tablePeak;
  const wall = (size: '1000000' | '10000000', limitS: number): Goal => ({
    goal: `${n(Number(size))} items from upload to report.json with provisioned pollers`,
    measured:
      projection[size].wallSeconds === null
        ? 'not projected'
        : `${n(projection[size].wallSeconds!)} s (${esm} mode)`,
    target: `≤ ${n(limitS)} s`,
    pass:
      esm !== 'provisioned' || projection[size].wallSeconds === null
        ? null
        : projection[size].wallSeconds! <= limitS,
  });
  return [
    {
      goal: 'steady throughput at worker concurrency 1,000 and a 1 s median LLM call',
      measured: `${n(projection['10000000'].steadyItemsPerSecond)} items/s once ramped (${projection['10000000'].rateSetBy}); the run: ${n(run.itemsPerSecond)} between 5 % and 95 %, ${n(run.sustainedItemsPerSecond ?? 0)} from upload to report`,
      target: '≥ 5,000 items/s',
      pass: atGoal ? projection['10000000'].steadyItemsPerSecond >= 5000 : null,
    },
    wall('1000000', 300),
    wall('10000000', 2400),
    {
      goal: 'no key family above 80 % of its limit (peak offered: taken and refused)',
      measured: busiest
        ? `busiest ${busiest.name}: ${busiest.f.peakOfferedWruPerSecond} WRU/s, ${busiest.f.peakOfferedRruPerSecond} RRU/s${hotFamilies.length > 0 ? `; over: ${hotFamilies.map(([k]) => k).join(', ')}` : ''}`
        : 'no key',
      target: `≤ ${n(HEADROOM * PARTITION_LIMITS.wru)} WRU/s and ≤ ${n(HEADROOM * PARTITION_LIMITS.rru)} RRU/s per key`,
      pass: busiest !== undefined && hotFamilies.length === 0,
    },
    {
      goal: 'nothing refused',
      measured: `${n(refused)} requests refused (${n(run.throttled)} throttled in all, table ${n(table.refused)})`,
      target: '0',
      pass: refused === 0 && run.throttled === 0,
    },
    {
      goal: 'the table-wide peak under its quota',
      measured: `${n(table.wru)} WRU/s, ${n(table.rru)} RRU/s offered; warm ${n(table.warm.wru)}/${n(table.warm.rru)}${table.warm.declared ? '' : ' (a new table’s)'}`,
      target: `≤ ${n(table.quota.wru)} WRU/s and ≤ ${n(table.quota.rru)} RRU/s`,
      pass: table.wru <= table.quota.wru && table.rru <= table.quota.rru,
    },
    {
      goal: 'every invocation within 80 % of its function’s timeout, memory and /tmp',
      measured: over.length === 0 ? worst : `over: ${over.join('; ')}`,
      target: `≤ ${HEADROOM * 100} % of each`,
      pass: over.length === 0,
    },
    {
      goal: 'AWS cost per 1M items',
      measured: `$${run.awsCostPer1MUsd.total}`,
      target: '≤ $5',
      pass: run.awsCostPer1MUsd.total <= 5,
    },
    ...(['1000000', '10000000'] as const).map((size) => ({
      goal: `projection to ${n(Number(size))} items within limits`,
      measured: projection[size].withinLimits
        ? `within (closest: ${projection[size].closest}); ${projection[size].wallSeconds} s, $${projection[size].awsCostUsd}`
        : `not within: ${projection[size].reasons.join('; ')}`,
      target: 'withinLimits: true',
      pass: projection[size].withinLimits,
    })),
    {
      goal: 'no invocation failed (a check beyond the goals)',
      measured:
        failed.length === 0
          ? 'none failed'
          : failed
              .map((fn) => `${fn}: ${run.lambda[fn].errors} failed (${run.lambda[fn].firstError})`)
              .join('; '),
      target: '0 failed',
      pass: failed.length === 0,
    },
  ];
}

/** The per-item figures of two sizes side by side, and their ratio (large / small). */
function compareRuns(small: RunFigures, large: RunFigures): NonNullable<CloudModelReport['compare']> {
  const perItem: Record<string, { small: number; large: number; ratio: number | null }> = {};
  const add = (name: string, a: number, b: number) => {
    perItem[name] = { small: a, large: b, ratio: a === 0 ? null : round(b / a, 3) };
  };
  for (const key of Object.keys(large.perItem) as (keyof PerItem)[])
    add(key, small.perItem[key], large.perItem[key]);
  for (const key of Object.keys(large.awsCostPer1MUsd) as (keyof RunFigures['awsCostPer1MUsd'])[])
    add(`awsCostPer1MUsd.${key}`, small.awsCostPer1MUsd[key], large.awsCostPer1MUsd[key]);
  for (const fn of FUNCTIONS)
    add(`logBytesPerItem.${fn}`, small.logs.byFunction[fn] ?? 0, large.logs.byFunction[fn] ?? 0);
  const { lambda, ...rest } = small;
  return {
    items: [small.items, large.items],
    perItem,
    small: {
      ...rest,
      lambda: Object.fromEntries(
        FUNCTIONS.map((fn) => {
          const { byKind: _byKind, ...f } = lambda[fn];
          return [fn, f];
        }),
      ),
    },
  };
}

const METHOD: Record<string, string> = {
  simulation:
    'the product’s Lambda handlers, adapters and use-cases over in-memory stand-ins of DynamoDB, SQS and S3 behind the AWS SDK’s request handler (bench/cloud/), on a simulated clock that drives every timer; the stack’s resources and wiring read from the synthesized CDK template; a dataset upload starts everything through S3’s notification',
  itemsPerSecond:
    'the steady stretch: 0.9 × items / (t95 − t5), where tX is the simulated time after the upload at which X % of the items had their worker invocation end (records deleted)',
  sustainedItemsPerSecond:
    'the whole run: items / the simulated seconds from the dataset’s upload to report.json',
  fleet:
    'Lambda’s documented scaling of the items mapping: standard mode starts 5 lanes and adds up to 300 a minute while messages wait, up to its maximum concurrency (1,250 at most); provisioned mode starts its minimum pollers × 10 and adds up to 1,000 a minute up to its maximum pollers × 10; every invocation takes one of the account’s concurrent executions (1,000 by default), a function with reserved concurrency its own',
  keyFamilies:
    'per family of partition keys (the prefix before #): the busiest key’s most request units in any one second, taken and offered (taken plus refused, each SDK attempt counted), and the requests refused on its keys',
  tablePeak:
    'the table’s most request units offered in any one second; an on-demand table serves its warm throughput (a new table’s 4,000 WRU/s and 12,000 RRU/s unless declared), then twice its peak of half an hour earlier, never above its quota (40,000 each way by default)',
  llm: 'a stand-in vendor before the simulator: lognormal latency (the median given, p99 five times it), a burst of 429s with a retry-after, the rate limits OpenAI reports; the worker’s calls go through the real LLM cache and rate limiter',
  wallSeconds: 'simulated seconds from the dataset’s upload to report.json’s creation in the bucket',
  hottestKey:
    'the partition key value whose peak load is the largest share of its limit (1,000 WRU/s, 3,000 RRU/s): peaks over any one second (ten 100 ms slots), every item under the key counted',
  throttled:
    'requests the simulated DynamoDB refused for a partition key over its limit (each SDK attempt counts)',
  durations:
    'per invocation, simulated: its waits (service latencies, the LLM, backoffs) plus its CPU time at the share of a vCPU its memory buys (memory / 1,769 MB); CPU is measured per invocation in the run by async context (each synchronous stretch timed and charged to the invocation it ran for; the stand-ins’ and Lambda’s own work excluded), on this machine, taken as fast as Lambda’s arm64',
  memory: `the container’s resident memory after init (the function’s bundle, built as CDK builds it, imported in a fresh node and collected) plus an upper bound of the peak live heap growth of the function’s invocations replayed alone on the state each started from (used heap + external memory after a full collection each time it grew by 8 MB or a quarter of its own growth so far, the next such step taken as the bound, and past 40 collections the used heap itself; less the bytes the stand-ins came to hold meanwhile: S3’s objects and its open uploads’ parts, a part copied inside S3 included, SQS’s messages, DynamoDB’s items): the first of each kind (two of those done a chunk or a part at a time), a cold and a warm worker invocation, and the largest run’s assembly on ${SCALED_PARTS.join(' and ')} parts too (its largest part repeated); garbage V8 has not yet collected is not counted (the 80 % headroom is for it)`,
  tmp: 'the most bytes at once in the replayed invocation’s own TMPDIR',
  lambdaCost:
    'GB-seconds at each function’s declared memory (each invocation’s duration rounded up to 1 ms, plus each cold start’s measured init) at the arm64 price, plus requests',
  dynamodbCost:
    'the simulated DynamoDB’s request units between the upload and the end of the run’s work, at on-demand prices; dynamodbStorage: the bytes the run leaves in the table for the results’ retention (resultRetentionDays; a month when they never expire)',
  sqsCost:
    'billed requests (one per call and per 64 KB of payload), Lambda’s pollers’ receives and deletes included',
  s3Cost:
    'requests by price tier, plus a month of storage for what the run leaves in the bucket (the dataset and the report files)',
  logsCost:
    'bytes the functions wrote (Powertools JSON logs at INFO, EMF metrics: each container with its own logger and metrics) plus Lambda’s START/END/REPORT lines, at the ingestion price',
  secretsManagerCost: 'GetSecretValue calls (one per container that reads the provider keys)',
  llmCostPer1MUsd: 'the report’s cost of the simulated calls (priced as gpt-4o-mini) per item × 1,000,000',
  perItem: 'each count of the run divided by its items',
  projection:
    'per-item costs × items; the rate second by second as the items mapping ramps (each lane a full batch per mean full-batch duration), capped by ingest’s measured steady rate and the table’s throughput; wall = time to the first result + the ramped time + the tail after the last result (per run); every key family’s and the table’s peak offered load scaled by the projected steady rate over the run’s, checked against 80 % of its limit; each function’s per-invocation figures by their kind’s growth (projection.ts): per batch and per pass constant, per chunk and per part constant once the dataset fills a chunk, per run a line through two sizes aggregated alike or else in proportion to the items; checked against 80 % of each limit; keys at their measured peak',
};

function notes(run: RunFigures, deployment: Deployment): string[] {
  const most =
    deployment.mappings.reduce((n, m) => n + mappingScaling(m).concurrency, 0) + deployment.schedules.length;
  return [
    ...deployment.assumed,
    `The mappings can drive ${most} invocations at once with the schedules, within the account’s ${deployment.limits.accountConcurrency} concurrent executions: ${
      Object.entries(run.fleet.throttled)
        .map(([fn, k]) => `${fn} waited ${k} times`)
        .join(', ') || 'no invocation waited for one'
    }.`,
    `The table’s busiest second took ${run.tablePeak.takenWru} WRU and ${run.tablePeak.takenRru} RRU (offered ${run.tablePeak.wru} and ${run.tablePeak.rru}).`,
    deployment.limits.resultRetentionDays === null
      ? 'Results never expire (no retention set): their storage is counted for one month, and it recurs every month.'
      : `Results expire after ${deployment.limits.resultRetentionDays} days (TTL attribute ${deployment.limits.ttlAttribute ?? 'not declared in the template'}): their storage is counted for that long.`,
    'Ingest’s rate at 1M and 10M is the steady rate it had in the run (it may scale further when its ranges run side by side at a larger size).',
    'S3’s request rates per prefix, X-Ray tracing (its cost and log lines) and CloudWatch custom metrics from EMF are not modelled.',
    'CPU time is this machine’s (Node 20); Lambda runs nodejs24.x on Graviton: no speed factor is applied.',
    'The composition root keeps one Powertools logger and metrics object per module; the model routes their calls to each container’s own (logging.ts). Other module-wide state of shared/ (score-item’s spend in flight, for budgets) is shared by the containers of this process; the run has the deploy’s default budget (its ledger’s shards are modelled, not this shared state).',
    'Each container’s module state is otherwise its own: its root, SDK clients, caches and limiters.',
  ];
}
