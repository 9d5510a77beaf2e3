/**
 * The figures of one run of the model, each measured or derived by a rule written beside it
 * (and in the JSON's `method`): throughput, wall time, partition-key load, throttling, each
 * function's durations, memory and /tmp against its limits, and what the run cost on AWS.
 */
import type { FunctionName } from '../../../shared/lib/layout/queues.js';
import { AWS_PRICES } from '../../parts/cost.js';
import type { CloudAccounting } from '../clients.js';
import type { ContainerBaseline } from './baseline.js';
import type { Calibrated } from './calibration.js';
import type { InvocationRecord } from './fleet.js';
import { type Growth, growthOf } from './kinds.js';
import { mappingScaling, type Simulation } from './simulation.js';

export const FUNCTIONS: readonly FunctionName[] = [
  'ingest',
  'worker',
  'deadLetter',
  'aggregate',
  'batchPoller',
  'watchdog',
];

/** DynamoDB's limits per partition key value, request units per second. */
export const PARTITION_LIMITS = { wru: 1000, rru: 3000 } as const;
/** The share of a function's timeout, memory and /tmp an invocation may use. */
export const HEADROOM = 0.8;
const MB = 1024 * 1024;
const GB = 1024 * MB;

export interface KindFigures {
  growth: Growth;
  invocations: number;
  /** Longest invocation of this kind in the run (or its replay when the run had none), s. */
  maxDurationS: number | null;
  /** The most a calibrated invocation of this kind grew the heap, MB; null when none was replayed. */
  peakHeapMb: number | null;
  peakTmpMb: number | null;
  /** CPU per invocation in the run, this machine, ms. */
  cpuMs: { mean: number; max: number } | null;
  calibrated: {
    label: string;
    cpuMs: number;
    durationS: number;
    peakHeapMb: number;
    storedMb: number;
    peakTmpMb: number;
    /** A replay on more parts than the run had (not in the figures above: see `scaled`). */
    scaled?: { parts: number; items: number };
    error?: string;
  }[];
  /**
   * The replays on more parts than the run had (calibration.ts' `SCALED_PARTS`), fewest first:
   * the results they stand for and their figures. Absent when none was made.
   */
  scaled?: { parts: number; items: number; durationS: number; peakHeapMb: number; peakTmpMb: number }[];
}

export interface FunctionFigures {
  invocations: number;
  coldStarts: number;
  errors: number;
  firstError?: string;
  records: number;
  maxDurationS: number | null;
  meanDurationS: number | null;
  timeoutS: number;
  peakMemoryMb: number | null;
  memoryMb: number;
  peakTmpMb: number | null;
  tmpMb: number;
  /** Where the duration comes from: the run's invocations, or a replay when the run had none. */
  durationFrom: 'run' | 'replay' | 'none';
  /** The bundle's measured init time and resident memory after it, before any invocation. */
  initMs: number | null;
  baselineRssMb: number | null;
  /** Billed GB-seconds: each invocation's duration (rounded up to 1 ms) and each cold start's init. */
  gbSeconds: number;
  /** What the function wrote (logs and EMF metrics) plus Lambda's START/END/REPORT lines, bytes. */
  logBytes: number;
  /** Of which Lambda's own lines. */
  platformLogBytes: number;
  within80: { timeout: boolean; memory: boolean; tmp: boolean };
  byKind: Record<string, KindFigures>;
}

export interface CostLines {
  dynamodb: number;
  dynamodbStorage: number;
  lambda: number;
  sqs: number;
  s3: number;
  logs: number;
  secretsManager: number;
  total: number;
}

export interface RunFigures {
  items: number;
  /** Between the 5 % and 95 % completion marks (the run's steady stretch). */
  itemsPerSecond: number;
  /** Over the whole run: the items over the time from the upload to report.json. */
  sustainedItemsPerSecond: number | null;
  wallSeconds: number | null;
  timeline: {
    firstResultS: number | null;
    p5S: number | null;
    p50S: number | null;
    p95S: number | null;
    lastResultS: number | null;
    reportS: number | null;
    settledS: number;
  };
  hottestKey: { key: string; peakWruPerSecond: number; peakRruPerSecond: number } | null;
  hotKeys: { write: KeyLoad[]; read: KeyLoad[] };
  keyFamilies: Record<string, KeyFamily>;
  /** The table's busiest second offered (taken and refused), its limits, what it refused. */
  tablePeak: TablePeak;
  /** The worker fleet: the items mapping's mode, and the concurrency the run reached. */
  fleet: FleetFigures;
  /** The stand-in vendor: calls, 429s, the latency drawn. */
  llm: { calls: number; refused429: number; p50Ms: number | null; p99Ms: number | null };
  throttled: number;
  dynamo: {
    writeUnits: number;
    readUnits: number;
    requests: number;
    transactionConflicts: number;
    conditionalCheckFailures: number;
    unprocessedItems: number;
    /** The whole table's busiest second after the upload (an on-demand table's own ramp is not modelled). */
    tablePeakWruPerSecond: number;
    tablePeakRruPerSecond: number;
    byOperation: Record<
      string,
      { requests: number; writeUnits: number; readUnits: number; throttled: number }
    >;
  };
  sqs: { billedRequests: number; requests: Record<string, number>; emptyReceives: number };
  s3: { tier1: number; tier2: number; requests: Record<string, number>; bytesLeft: number };
  lambda: Record<FunctionName, FunctionFigures>;
  stages: {
    /**
     * What the worker fleet could score if every poll brought a full batch: maximum concurrency ×
     * batch size / the mean duration of the run's full-batch invocations.
     */
    workerFleetItemsPerSecond: number | null;
    /** The worker invocations' mean records: below the batch size when polls outran the queue. */
    meanRecordsPerWorkerInvocation: number | null;
    /** Items ingest queued per second: the items over the time from the upload to its last invocation's end. */
    ingestItemsPerSecond: number | null;
    /**
     * Ingest's steady rate as it ran: 80 % of the items over the time between the 10 % and 90 %
     * marks of the messages it sent to the items queue (whether its chunks follow one another
     * or run side by side).
     */
    ingestSteadyItemsPerSecond: number | null;
    /** The stage with the lower of the two rates, with both. */
    limitingStage: string;
  };
  awsCostUsd: CostLines;
  awsCostPer1MUsd: CostLines;
  llmCostUsd: number | null;
  llmCostPer1MUsd: number | null;
  perItem: PerItem;
  logs: {
    bytesPerItem: number;
    functionBytes: number;
    platformBytes: number;
    byFunction: Record<string, number>;
  };
  report: {
    status: string | null;
    items: number | null;
    scored: number | null;
    failed: number | null;
    resultItemsInTable: number;
    everyItemOnce: boolean;
    files: number;
  };
  /** What the model itself took. */
  model: {
    realSeconds: number;
    simulatedSeconds: number;
    sdkRequests: number;
    requestsPerRealSecond: number;
    /** Real ms of CPU by who spent it, and the time taken off stretches the process was not running in. */
    cpuMs: { invocations: number; aws: number; lambda: number; none: number; notRunning: number };
  };
  /** What the projection needs that is not shown above. */
  basis: {
    datasetBytes: number;
    chunkBytes: number;
    aggregateInParts: boolean;
    headS: number | null;
    tailS: number | null;
    /** The vendor's burst of 429s, seconds (0: none): the steady rate leaves it out, the wall counts it once. */
    burstS: number;
    /** The aggregate mapping's most concurrent invocations: the parts tallied (or written) at once. */
    aggregateLanes: number;
  };
}

export interface KeyLoad {
  key: string;
  peakUnitsPerSecond: number;
  totalUnits: number;
}

export interface KeyFamily {
  keys: number;
  itemsHeld: number;
  /** The busiest key's most taken in any one second. */
  peakWruPerSecond: number;
  peakRruPerSecond: number;
  /** The busiest key's most asked in any one second: taken plus refused. */
  peakOfferedWruPerSecond: number;
  peakOfferedRruPerSecond: number;
  /** Requests refused on the family's keys. */
  refused: number;
  writeUnits: number;
  readUnits: number;
}

export interface TablePeak {
  /** The most request units offered to the table in any one second (taken and refused). */
  wru: number;
  rru: number;
  /** The most taken. */
  takenWru: number;
  takenRru: number;
  /** The table's quota, and what it served from the start (its warm throughput, else a new table's). */
  quota: { wru: number; rru: number };
  warm: { wru: number; rru: number; declared: boolean };
  refused: number;
}

export interface FleetFigures {
  mode: 'standard' | 'provisioned';
  /** The most invocations at once, all functions together, and the worker's own. */
  peakConcurrency: number;
  peakWorkerConcurrency: number;
  byFunction: Partial<Record<FunctionName, number>>;
  /** Invocations that waited for a concurrent execution, by function. */
  throttled: Partial<Record<FunctionName, number>>;
  accountConcurrency: number;
  reserved: Partial<Record<FunctionName, number>>;
  /** The items mapping's scaling: where it starts, how fast it adds, its most at once. */
  scaling: { initial: number; perMinute: number; concurrency: number };
}

export interface PerItem {
  dynamoWriteUnits: number;
  dynamoReadUnits: number;
  dynamoRequests: number;
  /** Write and read requests (each SDK attempt; a batch or transaction is one). */
  dynamoWriteRequests: number;
  dynamoReadRequests: number;
  sqsBilledRequests: number;
  s3Requests: number;
  lambdaInvocations: number;
  lambdaGbSeconds: number;
  logBytes: number;
  awsCostUsd: number;
}

export interface FigureInputs {
  sim: Simulation;
  calibrated: Calibrated[];
  baselines: Record<FunctionName, ContainerBaseline> | undefined;
  datasetBytes: number;
  chunkBytes: number;
  realSeconds: number;
}

export function runFigures({
  sim,
  calibrated,
  baselines,
  datasetBytes,
  chunkBytes,
  realSeconds,
}: FigureInputs): RunFigures {
  const items = sim.options.items;
  const { start, end } = sim.accounting;
  const timeline = timelineOf(sim);
  const itemsPerSecond =
    timeline.p5S !== null && timeline.p95S !== null && timeline.p95S > timeline.p5S
      ? (0.9 * items) / (timeline.p95S - timeline.p5S)
      : 0;

  const lambda = {} as Record<FunctionName, FunctionFigures>;
  for (const fn of FUNCTIONS) lambda[fn] = functionFigures(fn, sim, calibrated, baselines?.[fn]);

  const keys = keyFigures(sim);
  const dynamo = end.dynamo;
  const costs = costLines(
    lambda,
    start,
    end,
    storageMonths(sim.options.deployment.limits.resultRetentionDays),
  );
  const per1M = scale(costs, 1e6 / items);
  const llmCostUsd = sim.report?.cost.totalUsd ?? null;
  const logTotals = logFigures(lambda);
  const lambdaInvocations = FUNCTIONS.reduce((n, fn) => n + lambda[fn].invocations, 0);
  const lambdaGbSeconds = FUNCTIONS.reduce((n, fn) => n + lambda[fn].gbSeconds, 0);
  const s3Requests =
    end.s3.byTier.tier1 - start.s3.byTier.tier1 + (end.s3.byTier.tier2 - start.s3.byTier.tier2);
  const resultItems = sim.resultItems;
  const stages = stageFigures(sim);
  const requests = requestKinds(end.dynamo.byOperation, start.dynamo.byOperation);
  const { deployment } = sim.options;
  const itemsMapping = deployment.mappings.find((m) => m.fn === 'worker');
  const table = sim.table;
  const latencies = [...sim.llm.latenciesMs].sort((a, b) => a - b);
  const quantile = (q: number) =>
    latencies.length === 0
      ? null
      : round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!, 1);
  return {
    items,
    itemsPerSecond: round(itemsPerSecond, 1),
    sustainedItemsPerSecond:
      timeline.reportS !== null && timeline.reportS > 0 ? round(items / timeline.reportS, 1) : null,
    wallSeconds: timeline.reportS,
    timeline,
    hottestKey: keys.hottest,
    hotKeys: keys.hot,
    keyFamilies: keys.families,
    tablePeak: {
      wru: round(table?.peakOfferedWriteUnitsPerSecond ?? 0, 1),
      rru: round(table?.peakOfferedReadUnitsPerSecond ?? 0, 1),
      takenWru: round(table?.peakWriteUnitsPerSecond ?? 0, 1),
      takenRru: round(table?.peakReadUnitsPerSecond ?? 0, 1),
      quota: { wru: deployment.limits.tableWriteQuota, rru: deployment.limits.tableReadQuota },
      warm: {
        wru: table?.limits.warmWriteUnitsPerSecond ?? 0,
        rru: table?.limits.warmReadUnitsPerSecond ?? 0,
        declared: deployment.limits.warmWriteUnitsPerSecond !== null,
      },
      refused: table?.refused ?? 0,
    },
    fleet: {
      mode: itemsMapping?.mode ?? 'standard',
      peakConcurrency: sim.fleet.concurrency,
      peakWorkerConcurrency: sim.fleet.byFunction.worker ?? 0,
      byFunction: sim.fleet.byFunction,
      throttled: sim.fleet.throttled,
      accountConcurrency: deployment.limits.accountConcurrency,
      reserved: Object.fromEntries(
        Object.entries(deployment.functions)
          .filter(([, f]) => f.reservedConcurrency !== null)
          .map(([fn, f]) => [fn, f.reservedConcurrency!]),
      ),
      scaling: itemsMapping ? mappingScaling(itemsMapping) : { initial: 0, perMinute: 0, concurrency: 0 },
    },
    llm: {
      calls: sim.llm.calls,
      refused429: sim.llm.refused,
      p50Ms: quantile(0.5),
      p99Ms: quantile(0.99),
    },
    throttled: dynamo.throttledRequests - start.dynamo.throttledRequests,
    dynamo: {
      writeUnits: round(dynamo.writeRequestUnits - start.dynamo.writeRequestUnits, 1),
      readUnits: round(dynamo.readRequestUnits - start.dynamo.readRequestUnits, 1),
      requests: dynamo.requests - start.dynamo.requests,
      transactionConflicts: dynamo.transactionConflicts - start.dynamo.transactionConflicts,
      conditionalCheckFailures: dynamo.conditionalCheckFailures - start.dynamo.conditionalCheckFailures,
      unprocessedItems: dynamo.unprocessedItems - start.dynamo.unprocessedItems,
      tablePeakWruPerSecond: round(
        Math.max(
          0,
          ...dynamo.perSecond.filter((s) => s.second * 1000 >= sim.uploadAtMs).map((s) => s.writeUnits),
        ),
        1,
      ),
      tablePeakRruPerSecond: round(
        Math.max(
          0,
          ...dynamo.perSecond.filter((s) => s.second * 1000 >= sim.uploadAtMs).map((s) => s.readUnits),
        ),
        1,
      ),
      byOperation: Object.fromEntries(
        Object.entries(dynamo.byOperation).map(([op, load]) => {
          const before = start.dynamo.byOperation[op];
          return [
            op,
            {
              requests: load.requests - (before?.requests ?? 0),
              writeUnits: round(load.writeUnits - (before?.writeUnits ?? 0), 1),
              readUnits: round(load.readUnits - (before?.readUnits ?? 0), 1),
              throttled: load.throttled - (before?.throttled ?? 0),
            },
          ];
        }),
      ),
    },
    sqs: {
      billedRequests: end.sqs.billedRequests - start.sqs.billedRequests,
      requests: difference(end.sqs.requests, start.sqs.requests),
      emptyReceives:
        sum(Object.values(end.sqs.queues), (q) => q.emptyReceives) -
        sum(Object.values(start.sqs.queues), (q) => q.emptyReceives),
    },
    s3: {
      tier1: end.s3.byTier.tier1 - start.s3.byTier.tier1,
      tier2: end.s3.byTier.tier2 - start.s3.byTier.tier2,
      requests: difference(end.s3.requests, start.s3.requests),
      bytesLeft: end.s3.bytesStored - start.s3.bytesStored,
    },
    lambda,
    stages,
    awsCostUsd: roundLines(costs, 6),
    awsCostPer1MUsd: roundLines(per1M, 2),
    llmCostUsd: llmCostUsd === null ? null : round(llmCostUsd, 6),
    llmCostPer1MUsd: llmCostUsd === null ? null : round((llmCostUsd / items) * 1e6, 2),
    perItem: {
      dynamoWriteUnits: round((dynamo.writeRequestUnits - start.dynamo.writeRequestUnits) / items, 3),
      dynamoReadUnits: round((dynamo.readRequestUnits - start.dynamo.readRequestUnits) / items, 3),
      dynamoRequests: round((dynamo.requests - start.dynamo.requests) / items, 3),
      dynamoWriteRequests: round(requests.write / items, 3),
      dynamoReadRequests: round(requests.read / items, 3),
      sqsBilledRequests: round((end.sqs.billedRequests - start.sqs.billedRequests) / items, 3),
      s3Requests: round(s3Requests / items, 5),
      lambdaInvocations: round(lambdaInvocations / items, 4),
      lambdaGbSeconds: round(lambdaGbSeconds / items, 5),
      logBytes: round(logTotals.total / items, 1),
      awsCostUsd: costs.total / items,
    },
    logs: {
      bytesPerItem: round(logTotals.total / items, 1),
      functionBytes: logTotals.function,
      platformBytes: logTotals.platform,
      byFunction: Object.fromEntries(FUNCTIONS.map((fn) => [fn, round(lambda[fn].logBytes / items, 1)])),
    },
    report: {
      status: sim.report?.status ?? null,
      items: sim.report?.counts.items ?? null,
      scored: sim.report?.counts.scored ?? null,
      failed: sim.report?.counts.failed ?? null,
      resultItemsInTable: resultItems,
      everyItemOnce:
        sim.report?.status === 'complete' && sim.report.counts.items === items && resultItems === items,
      files: new Set(sim.reportKeys).size,
    },
    model: {
      realSeconds: round(realSeconds, 1),
      simulatedSeconds: round(sim.world.simulatedMs / 1000, 1),
      sdkRequests: sim.requests,
      requestsPerRealSecond: Math.round(sim.requests / Math.max(0.001, sim.world.realMs / 1000)),
      cpuMs: {
        invocations: Math.round(sim.cpu.invocations),
        aws: Math.round(sim.cpu.aws),
        lambda: Math.round(sim.cpu.lambda),
        none: Math.round(sim.cpu.none),
        notRunning: Math.round(sim.cpu.preemptedMs),
      },
    },
    basis: {
      datasetBytes,
      chunkBytes,
      aggregateInParts: sim.invocations.some((r) => r.kind === 'aggregate:tally'),
      headS: timeline.firstResultS,
      tailS:
        timeline.reportS !== null && timeline.lastResultS !== null
          ? round(timeline.reportS - timeline.lastResultS, 3)
          : null,
      burstS: (sim.options.burst?.forMs ?? 0) / 1000,
      aggregateLanes: sim.options.deployment.mappings.find((m) => m.fn === 'aggregate')?.maxConcurrency ?? 1,
    },
  };
}

function stageFigures(sim: Simulation): RunFigures['stages'] {
  const items = sim.options.items;
  const mapping = sim.options.deployment.mappings.find((m) => m.fn === 'worker');
  const workers = sim.invocations.filter((r) => r.fn === 'worker' && r.error === undefined);
  const batch = mapping?.batchSize ?? 10;
  const full = workers.filter((r) => r.records === batch);
  // The batches the vendor's burst of 429s slowed are left out of the rate (a burst happens
  // once, wherever it lands: the projection adds its seconds to the wall once instead).
  const burst = sim.options.burst;
  const burstFrom = sim.uploadAtMs + (sim.llm.firstCallMs ?? 0) + (burst?.fromMs ?? 0);
  const inBurst = (r: (typeof workers)[number]) =>
    burst !== undefined && r.startMs < burstFrom + burst.forMs && r.startMs + r.durationMs > burstFrom;
  const clear = full.filter((r) => !inBurst(r));
  const basis = clear.length > 0 ? clear : full.length > 0 ? full : workers;
  const most = mapping
    ? Math.min(mappingScaling(mapping).concurrency, sim.options.deployment.limits.accountConcurrency)
    : 0;
  const fleet =
    mapping && basis.length > 0
      ? (most * batch) / (sum(basis, (r) => r.durationMs) / basis.length / 1000)
      : null;
  const ingests = sim.invocations.filter((r) => r.fn === 'ingest');
  const ingestEndMs = Math.max(0, ...ingests.map((r) => r.startMs + r.durationMs - sim.uploadAtMs));
  const ingest = ingestEndMs > 0 ? items / (ingestEndMs / 1000) : null;
  const steady = queuedRate(sim.queued, items);
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  const limitingStage =
    fleet === null || ingest === null
      ? 'not measured'
      : ingest < fleet
        ? `ingest: it queued ${n(ingest)} items/s; the worker fleet could score ${n(fleet)} in full batches`
        : `the worker fleet: ${n(fleet)} items/s in full batches${clear.length > 0 && clear.length < full.length ? ' outside the burst of 429s' : ''} (${most} × ${batch} / ${round(sum(basis, (r) => r.durationMs) / basis.length / 1000, 2)} s); ingest queued ${n(ingest)}`;
  return {
    workerFleetItemsPerSecond: fleet === null ? null : Math.round(fleet),
    meanRecordsPerWorkerInvocation:
      workers.length > 0 ? round(sum(workers, (r) => r.records) / workers.length, 2) : null,
    ingestItemsPerSecond: ingest === null ? null : Math.round(ingest),
    ingestSteadyItemsPerSecond: steady === null ? null : Math.round(steady),
    limitingStage,
  };
}

/**
 * Items a second ingest queued in its steady stretch: 80 % of the items over the time between
 * the 10 % and 90 % marks of the messages sent to the items queue; null when too few samples.
 */
export function queuedRate(queued: readonly { atMs: number; sent: number }[], items: number): number | null {
  const last = queued[queued.length - 1]?.sent ?? 0;
  if (last === 0) return null;
  const at = (share: number) => queued.find((q) => q.sent >= share * last)?.atMs;
  const from = at(0.1);
  const to = at(0.9);
  if (from === undefined || to === undefined || to <= from) return null;
  return (0.8 * items) / ((to - from) / 1000);
}

/** Write and read requests from the operations' counts between two reports. */
function requestKinds(
  after: Record<string, { requests: number }>,
  before: Record<string, { requests: number }>,
): { write: number; read: number } {
  const writes = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);
  const reads = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem', 'TransactGetItems']);
  let write = 0;
  let read = 0;
  for (const [op, load] of Object.entries(after)) {
    const n = load.requests - (before[op]?.requests ?? 0);
    if (writes.has(op)) write += n;
    else if (reads.has(op)) read += n;
  }
  return { write, read };
}

/** Simulated seconds after the upload at which 5, 50, 95 and 100 % of the items had their invocation end. */
function timelineOf(sim: Simulation): RunFigures['timeline'] {
  const items = sim.options.items;
  const marks = { first: 1, p5: 0.05 * items, p50: 0.5 * items, p95: 0.95 * items, last: items };
  const at: Partial<Record<keyof typeof marks, number>> = {};
  let done = 0;
  for (const c of [...sim.completions].sort((a, b) => a.atMs - b.atMs)) {
    done += c.items;
    for (const [name, count] of Object.entries(marks) as [keyof typeof marks, number][])
      if (at[name] === undefined && done >= count) at[name] = c.atMs / 1000;
  }
  const s = (v: number | undefined) => (v === undefined ? null : round(v, 3));
  return {
    firstResultS: s(at.first),
    p5S: s(at.p5),
    p50S: s(at.p50),
    p95S: s(at.p95),
    lastResultS: s(at.last),
    reportS: sim.reportAtMs === undefined ? null : round((sim.reportAtMs - sim.uploadAtMs) / 1000, 3),
    settledS: round((sim.settledAtMs - sim.uploadAtMs) / 1000, 3),
  };
}

function functionFigures(
  fn: FunctionName,
  sim: Simulation,
  calibrated: Calibrated[],
  baseline: ContainerBaseline | undefined,
): FunctionFigures {
  const deployed = sim.options.deployment.functions[fn];
  const records = sim.invocations.filter((r) => r.fn === fn);
  const replays = calibrated.filter((c) => c.fn === fn);
  const memoryGb = deployed.memoryMb / 1024;
  const kinds = new Set([...records.map((r) => r.kind), ...replays.map((c) => c.kind)]);
  const byKind: Record<string, KindFigures> = {};
  for (const kind of kinds) {
    const mine = records.filter((r) => r.kind === kind);
    const all = replays.filter((c) => c.kind === kind);
    const cal = all.filter((c) => c.scaled === undefined);
    const wider = all
      .filter((c) => c.scaled !== undefined && c.error === undefined)
      .sort((a, b) => a.scaled!.parts - b.scaled!.parts);
    const runMax = mine.length > 0 ? Math.max(...mine.map((r) => r.durationMs)) / 1000 : null;
    const replayMax = cal.length > 0 ? Math.max(...cal.map((c) => c.durationMs)) / 1000 : null;
    const ok = cal.filter((c) => c.error === undefined);
    byKind[kind] = {
      growth: growthOf(kind),
      invocations: mine.length,
      maxDurationS: runMax === null ? (replayMax === null ? null : round(replayMax, 3)) : round(runMax, 3),
      peakHeapMb: ok.length > 0 ? round(Math.max(...ok.map((c) => c.peakHeapMb)), 1) : null,
      peakTmpMb: ok.length > 0 ? round(Math.max(...ok.map((c) => c.peakTmpMb)), 2) : null,
      cpuMs:
        mine.length > 0
          ? {
              mean: round(sum(mine, (r) => r.cpuMs) / mine.length, 2),
              max: round(Math.max(...mine.map((r) => r.cpuMs)), 2),
            }
          : null,
      calibrated: all.map((c) => ({
        label: c.label,
        cpuMs: c.cpuMs,
        durationS: round(c.durationMs / 1000, 3),
        peakHeapMb: c.peakHeapMb,
        storedMb: c.storedMb,
        peakTmpMb: c.peakTmpMb,
        ...(c.scaled ? { scaled: c.scaled } : {}),
        ...(c.error === undefined ? {} : { error: c.error }),
      })),
      ...(wider.length > 0
        ? {
            scaled: wider.map((c) => ({
              ...c.scaled!,
              durationS: round(c.durationMs / 1000, 3),
              peakHeapMb: c.peakHeapMb,
              peakTmpMb: c.peakTmpMb,
            })),
          }
        : {}),
    };
  }
  const kindValues = Object.values(byKind);
  const maxOf = (pick: (k: KindFigures) => number | null) => {
    const values = kindValues.map(pick).filter((v): v is number => v !== null);
    return values.length > 0 ? Math.max(...values) : null;
  };
  const maxDurationS = maxOf((k) => k.maxDurationS);
  const peakHeap = maxOf((k) => k.peakHeapMb);
  const peakTmpMb = maxOf((k) => k.peakTmpMb);
  const peakMemoryMb =
    peakHeap !== null && baseline && baseline.error === undefined
      ? round(baseline.rssMb + peakHeap, 1)
      : null;
  const errors = records.filter((r) => r.error !== undefined);
  const initMs = baseline && baseline.error === undefined ? baseline.initMs : null;
  const billedMs = sum(records, (r) => Math.ceil(r.durationMs) + r.initMs);
  const platform = sum(records, (r) => platformLogBytes(r, deployed.memoryMb, peakMemoryMb));
  return {
    invocations: records.length,
    coldStarts: records.filter((r) => r.cold).length,
    errors: errors.length,
    ...(errors[0]?.error ? { firstError: errors[0].error } : {}),
    records: sum(records, (r) => r.records),
    maxDurationS,
    meanDurationS:
      records.length > 0 ? round(sum(records, (r) => r.durationMs) / records.length / 1000, 3) : null,
    timeoutS: deployed.timeoutS,
    peakMemoryMb,
    memoryMb: deployed.memoryMb,
    peakTmpMb,
    tmpMb: deployed.tmpMb,
    durationFrom: records.length > 0 ? 'run' : replays.length > 0 ? 'replay' : 'none',
    initMs,
    baselineRssMb: baseline && baseline.error === undefined ? baseline.rssMb : null,
    gbSeconds: round((billedMs / 1000) * memoryGb, 3),
    logBytes: sum(records, (r) => r.logBytes) + platform,
    platformLogBytes: platform,
    within80: {
      timeout: maxDurationS !== null && maxDurationS <= HEADROOM * deployed.timeoutS,
      memory: peakMemoryMb !== null && peakMemoryMb <= HEADROOM * deployed.memoryMb,
      tmp: peakTmpMb !== null && peakTmpMb <= HEADROOM * deployed.tmpMb,
    },
    byKind,
  };
}

/**
 * The lines Lambda itself writes to a function's log group for each invocation (START, END and
 * REPORT, with the invocation's figures; the X-Ray line of a traced invocation is not counted).
 */
export function platformLogBytes(record: InvocationRecord, memoryMb: number, usedMb: number | null): number {
  const id = '00000000-0000-0000-0000-000000000000';
  const used = Math.round(usedMb ?? memoryMb / 4);
  const lines = [
    `START RequestId: ${id} Version: $LATEST\n`,
    `END RequestId: ${id}\n`,
    `REPORT RequestId: ${id}\tDuration: ${record.durationMs.toFixed(2)} ms\tBilled Duration: ${Math.ceil(record.durationMs)} ms\tMemory Size: ${memoryMb} MB\tMax Memory Used: ${used} MB\t${record.cold ? `Init Duration: ${record.initMs.toFixed(2)} ms\t` : ''}\n`,
  ];
  return lines.reduce((n, line) => n + Buffer.byteLength(line), 0);
}

function logFigures(lambda: Record<FunctionName, FunctionFigures>): {
  total: number;
  function: number;
  platform: number;
} {
  const total = FUNCTIONS.reduce((n, fn) => n + lambda[fn].logBytes, 0);
  const platform = FUNCTIONS.reduce((n, fn) => n + lambda[fn].platformLogBytes, 0);
  return { total, function: total - platform, platform };
}

/** The partition keys: the hottest, the top five each way, and the load by key family (the prefix before `#`). */
function keyFigures(sim: Simulation): {
  hottest: RunFigures['hottestKey'];
  hot: RunFigures['hotKeys'];
  families: Record<string, KeyFamily>;
} {
  const loads = sim.partitions;
  let hottest: RunFigures['hottestKey'] = null;
  let worst = -1;
  for (const load of loads) {
    const w = Math.max(load.write?.peakUnitsPerSecond ?? 0, load.offered.peakWriteUnitsPerSecond);
    const r = Math.max(load.read?.peakUnitsPerSecond ?? 0, load.offered.peakReadUnitsPerSecond);
    const share = Math.max(w / PARTITION_LIMITS.wru, r / PARTITION_LIMITS.rru);
    if (share > worst) {
      worst = share;
      hottest = { key: load.pk, peakWruPerSecond: round(w, 1), peakRruPerSecond: round(r, 1) };
    }
  }
  const top = (kind: 'read' | 'write'): KeyLoad[] =>
    loads
      .filter((l) => l[kind])
      .sort((a, b) => b[kind]!.peakUnitsPerSecond - a[kind]!.peakUnitsPerSecond)
      .slice(0, 5)
      .map((l) => ({
        key: l.pk,
        peakUnitsPerSecond: round(l[kind]!.peakUnitsPerSecond, 1),
        totalUnits: round(l[kind]!.totalUnits, 1),
      }));
  const families: Record<string, KeyFamily> = {};
  for (const load of loads) {
    const family = familyOf(load.pk);
    const f = families[family] ?? {
      keys: 0,
      itemsHeld: 0,
      peakWruPerSecond: 0,
      peakRruPerSecond: 0,
      peakOfferedWruPerSecond: 0,
      peakOfferedRruPerSecond: 0,
      refused: 0,
      writeUnits: 0,
      readUnits: 0,
    };
    families[family] = f;
    f.keys += 1;
    f.itemsHeld += sim.partitionSizes.get(load.pk) ?? 0;
    f.peakWruPerSecond = Math.max(f.peakWruPerSecond, round(load.write?.peakUnitsPerSecond ?? 0, 1));
    f.peakRruPerSecond = Math.max(f.peakRruPerSecond, round(load.read?.peakUnitsPerSecond ?? 0, 1));
    f.peakOfferedWruPerSecond = Math.max(
      f.peakOfferedWruPerSecond,
      round(load.offered.peakWriteUnitsPerSecond, 1),
    );
    f.peakOfferedRruPerSecond = Math.max(
      f.peakOfferedRruPerSecond,
      round(load.offered.peakReadUnitsPerSecond, 1),
    );
    f.refused += load.refused;
    f.writeUnits = round(f.writeUnits + (load.write?.totalUnits ?? 0), 1);
    f.readUnits = round(f.readUnits + (load.read?.totalUnits ?? 0), 1);
  }
  return { hottest, hot: { write: top('write'), read: top('read') }, families };
}

/** A partition key's family: its prefix up to the first `#` (`RESULTS#run#0#3` → `RESULTS`). */
export function familyOf(pk: string): string {
  const at = pk.indexOf('#');
  return at === -1 ? pk : pk.slice(0, at);
}

/**
 * Months the table keeps what a run leaves: the results' retention (their TTL) when the
 * deployment sets one, else a month (results that never expire cost that every month).
 */
export function storageMonths(retentionDays: number | null): number {
  return retentionDays === null ? 1 : retentionDays / (365.25 / 12);
}

/**
 * What the run cost, from the stand-ins' accounting between the upload and the end of the
 * run's work, and the invocations' billed durations: see the JSON's `method.costs`.
 */
function costLines(
  lambda: Record<FunctionName, FunctionFigures>,
  start: CloudAccounting,
  end: CloudAccounting,
  months: number,
): CostLines {
  const p = AWS_PRICES;
  const dynamodb =
    (end.dynamo.writeRequestUnits - start.dynamo.writeRequestUnits) * p.dynamoWriteUnitUsd +
    (end.dynamo.readRequestUnits - start.dynamo.readRequestUnits) * p.dynamoReadUnitUsd;
  const tableBytes = (a: CloudAccounting) => Object.values(a.dynamo.tables).reduce((n, t) => n + t.bytes, 0);
  const dynamodbStorage =
    (Math.max(0, tableBytes(end) - tableBytes(start)) / GB) * p.dynamoStorageGbMonthUsd * months;
  const lambdaUsd = FUNCTIONS.reduce(
    (usd, fn) =>
      usd + lambda[fn].gbSeconds * p.lambdaArmGbSecondUsd + lambda[fn].invocations * p.lambdaRequestUsd,
    0,
  );
  const sqs = (end.sqs.billedRequests - start.sqs.billedRequests) * p.sqsRequestUsd;
  const s3 =
    (end.s3.byTier.tier1 - start.s3.byTier.tier1) * p.s3PutUsd +
    (end.s3.byTier.tier2 - start.s3.byTier.tier2) * p.s3GetUsd +
    (Math.max(0, end.s3.bytesStored - start.s3.bytesStored) / GB) * p.s3StorageGbMonthUsd;
  const logs = (FUNCTIONS.reduce((n, fn) => n + lambda[fn].logBytes, 0) / GB) * p.cloudwatchLogsIngestGbUsd;
  const secretsManager = (end.secretsRequests - start.secretsRequests) * p.secretsManagerApiCallUsd;
  const lines = { dynamodb, dynamodbStorage, lambda: lambdaUsd, sqs, s3, logs, secretsManager };
  return { ...lines, total: Object.values(lines).reduce((a, b) => a + b, 0) };
}

function scale(lines: CostLines, factor: number): CostLines {
  return Object.fromEntries(Object.entries(lines).map(([k, v]) => [k, v * factor])) as unknown as CostLines;
}

function roundLines(lines: CostLines, digits: number): CostLines {
  return Object.fromEntries(
    Object.entries(lines).map(([k, v]) => [k, round(v, digits)]),
  ) as unknown as CostLines;
}

function difference(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

export function sum<T>(list: readonly T[], pick: (t: T) => number): number {
  let total = 0;
  for (const t of list) total += pick(t);
  return total;
}

export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
