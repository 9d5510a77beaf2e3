/**
 * What a deployment needs from its AWS account, and what its settings let it do, computed from
 * the deploy settings alone (no AWS call): the concurrency its functions may take against the
 * account's quota, the table's throughput at the fleet's ceiling against the table-wide quota,
 * the ceiling in items a second and the time of a 1M and a 10M run at it, and what the defaults
 * stop. `npm run synth` and `assay cloud deploy` print it; the capacity model (bench/cloud)
 * measures what these figures assume.
 */
import { FUNCTION_TIMEOUT_SECONDS, QUEUE_NAMES, QUEUES } from '../shared/lib/layout/queues.js';
import { normalQuantile } from '../shared/lib/metrics/stats.js';
import { costOf, EMBEDDED_PRICES } from '../shared/lib/providers/pricing.js';
import {
  INVOCATIONS_PER_POLLER,
  LAMBDA_UNRESERVED_MINIMUM,
  ON_DEMAND_INITIAL_THROUGHPUT,
  PROVISIONED_ESM_SCALE_PER_MINUTE,
  STANDARD_ESM_INITIAL_CONCURRENCY,
  STANDARD_ESM_SCALE_PER_MINUTE,
} from './aws-quotas.js';
import { type AssayConfig, aggregateReadsPerInvocation, ingestClaimsPerInvocation } from './config.js';

/** Write units an item costs the table in all (its result, counters, spend, cache and limiter shares). */
export const WRU_PER_ITEM = 4;
/** Read units an item costs the table in all. */
export const RRU_PER_ITEM = 2;
/**
 * Read units the aggregation of a run in parts takes an item: each result is read from the
 * table once (its part's tally, which keeps them for the part's files); 0.19 in the capacity
 * model's 100K-item run.
 */
export const AGGREGATE_RRU_PER_ITEM = 0.2;
/** The model call an item waits for, seconds: the median the capacity goals are stated at. */
export const LLM_CALL_SECONDS = 1;
/**
 * How much slower than the median a call at the 99th percentile is: calls are taken to be
 * lognormal with this tail (the capacity model's vendor has the same).
 */
export const LLM_P99_OVER_MEDIAN = 5;

/**
 * Seconds a worker batch of `size` items takes: it ends with its slowest call, the expected
 * largest of `size` lognormal latencies (Blom's approximation of the normal order statistic).
 * 1 item: the median (1 s); 20: 3.6 s; 100: 5.6 s.
 */
export function batchSeconds(size: number): number {
  const sigma = Math.log(LLM_P99_OVER_MEDIAN) / normalQuantile(0.99);
  const z = size <= 1 ? 0 : normalQuantile((size - 0.375) / (size + 0.25));
  return LLM_CALL_SECONDS * Math.exp(sigma * z);
}
/** The share of a quota a run's peak may take, leaving room for other work and for bursts. */
export const QUOTA_HEADROOM = 0.8;
/**
 * The call one item makes, to price a run: the quickstart's GEC judgement on gpt-4o-mini, whose
 * 256 items took 163,369 input and 5,376 output tokens (`assay quickstart --simulate`,
 * report.json `cost.tokens`): 638 and 21 an item.
 */
export const REFERENCE_CALL = { model: 'openai:gpt-4o-mini', inputTokens: 638, outputTokens: 21 } as const;

/** The run sizes the printout is stated for. */
export const RUN_SIZES = [1_000_000, 10_000_000] as const;

export interface ConcurrencyNeeds {
  /** The most concurrent executions of each function: a mapping's maximum or a reservation, whichever is more; a schedule's overlapping runs. */
  readonly byFunction: Readonly<
    Record<'worker' | 'ingest' | 'aggregate' | 'deadLetter' | 'batchPoller' | 'watchdog', number>
  >;
  readonly total: number;
  /** Executions reserved (ingest's and aggregate's), which Lambda takes out of the account's pool. */
  readonly reserved: number;
  readonly quota: number;
  /** The total fits the quota, and the reservations leave Lambda its unreserved minimum. */
  readonly fits: boolean;
}

export interface Throughput {
  readonly read: number;
  readonly write: number;
}

export interface RunTime {
  readonly items: number;
  /** From the first item queued to the last scored at the ceiling, the fleet's ramp included. */
  readonly seconds: number;
}

export interface DeploymentNeeds {
  readonly concurrency: ConcurrencyNeeds;
  /** Ingest's pace: the ids it claims a second across its invocations (a write unit each), and each one's share; 0: unpaced. */
  readonly ingest: { readonly claimsPerSecond: number; readonly perInvocation: number };
  /** Aggregate's pace: the read units a second its reads of results take, each invocation's share, and what a run's reads then take. */
  readonly aggregate: {
    readonly readUnitsPerSecond: number;
    readonly perInvocation: number;
    readonly runs: readonly RunTime[];
  };
  readonly fleet: {
    readonly mode: AssayConfig['workerEventSourceMode'];
    /** Concurrent worker invocations at most. */
    readonly workers: number;
    readonly batchSize: number;
    /** Seconds a batch takes: its slowest call ({@link batchSeconds}). */
    readonly batchSeconds: number;
    /** Workers × batch / the batch's seconds. */
    readonly itemsPerSecond: number;
    /** Seconds the mapping takes from its first batches to the concurrency the ceiling needs. */
    readonly rampSeconds: number;
  };
  readonly table: {
    readonly quota: Throughput;
    /** What the quota admits at the units an item costs. */
    readonly itemsPerSecond: number;
    /** The units a second the run takes at the ceiling. */
    readonly atCeiling: Throughput;
    /** What the table serves from its creation: its warm throughput, or a new on-demand table's. */
    readonly initial: Throughput;
    readonly initialItemsPerSecond: number;
    /** The peak at the ceiling stays within {@link QUOTA_HEADROOM} of the quota. */
    readonly withinHeadroom: boolean;
  };
  /** The lower of the fleet's and the table's. */
  readonly ceilingItemsPerSecond: number;
  readonly limitedBy: 'workers' | 'table writes' | 'table reads';
  readonly runs: readonly RunTime[];
  readonly stops: {
    /** Rows an upload is read to (undefined: no limit). */
    readonly itemsPerUpload: number | undefined;
    /** What the reference call costs an item, USD. */
    readonly usdPerItem: number;
    /** Items the default run budget pays for at the reference call (undefined: no default budget). */
    readonly itemsPerDefaultBudget: number | undefined;
    /** Items the largest budget a run may name, and a day's spend limit, pay for (undefined: no limit). */
    readonly itemsPerMaxBudget: number | undefined;
    readonly itemsPerDay: number | undefined;
  };
  /** What to ask of the account (quota increases) or to declare for these settings to hold. */
  readonly asks: readonly string[];
}

/** The most concurrent worker invocations: the mapping's maximum, or 10 per provisioned poller. */
export function workerConcurrency(config: AssayConfig): number {
  return config.workerEventSourceMode === 'provisioned'
    ? config.workerMaxPollers * INVOCATIONS_PER_POLLER
    : config.workerMaxConcurrency;
}

function concurrencyNeeds(config: AssayConfig): ConcurrencyNeeds {
  // A scheduled function started every period and running up to its timeout overlaps itself.
  const overlapping = (timeoutSeconds: number, periodMinutes: number) =>
    Math.ceil(timeoutSeconds / (periodMinutes * 60));
  const byFunction = {
    worker: workerConcurrency(config),
    ingest: Math.max(config.ingestMaxConcurrency, config.ingestReservedConcurrency),
    aggregate: Math.max(config.aggregateMaxConcurrency, config.aggregateReservedConcurrency),
    // One mapping for each dead-letter queue it drains, each up to its maximum.
    deadLetter:
      QUEUE_NAMES.filter((name) => QUEUES[name].deadLetter.consumer?.function === 'deadLetter').length *
      config.deadLetterMaxConcurrency,
    batchPoller: overlapping(FUNCTION_TIMEOUT_SECONDS.batchPoller, config.batchPollMinutes),
    watchdog: overlapping(FUNCTION_TIMEOUT_SECONDS.watchdog, config.watchdogMinutes),
  };
  const total = Object.values(byFunction).reduce((a, b) => a + b, 0);
  const reserved = config.ingestReservedConcurrency + config.aggregateReservedConcurrency;
  const quota = config.lambdaConcurrencyQuota;
  return {
    byFunction,
    total,
    reserved,
    quota,
    fits: total <= quota && reserved <= quota - LAMBDA_UNRESERVED_MINIMUM,
  };
}

/**
 * Seconds to score `items` at `ceiling` items a second when the fleet starts at `start`
 * concurrent batches and adds `perMinute` a minute up to `needed` (the concurrency the ceiling
 * takes), each batch of `batch` items taking {@link batchSeconds}.
 */
function runSeconds(
  items: number,
  ceiling: number,
  ramp: { start: number; needed: number; perMinute: number; batch: number },
): number {
  const perBatchSecond = ramp.batch / batchSeconds(ramp.batch);
  const start = Math.min(ramp.start, ramp.needed);
  const rampSeconds = ((ramp.needed - start) / ramp.perMinute) * 60;
  const rampItems = ((start + ramp.needed) / 2) * perBatchSecond * rampSeconds;
  if (items >= rampItems) return rampSeconds + (items - rampItems) / ceiling;
  // Within the ramp: items = start·k·t + (perMinute/60)·k·t²/2, solved for t.
  const a = ((ramp.perMinute / 60) * perBatchSecond) / 2;
  const b = start * perBatchSecond;
  return (-b + Math.sqrt(b * b + 4 * a * items)) / (2 * a);
}

/** What `config` needs from the account, and what it lets a run do. */
export function deploymentNeeds(config: AssayConfig): DeploymentNeeds {
  const concurrency = concurrencyNeeds(config);
  const workers = concurrency.byFunction.worker;
  const batchSize = config.workerBatchSize;
  const perBatch = batchSeconds(batchSize);
  const fleetItemsPerSecond = (workers * batchSize) / perBatch;

  const quota = { read: config.tableReadQuota, write: config.tableWriteQuota };
  const byWrites = quota.write / WRU_PER_ITEM;
  const byReads = quota.read / RRU_PER_ITEM;
  const ceiling = Math.min(fleetItemsPerSecond, byWrites, byReads);
  const limitedBy =
    ceiling === fleetItemsPerSecond ? 'workers' : ceiling === byWrites ? 'table writes' : 'table reads';
  const atCeiling = { read: ceiling * RRU_PER_ITEM, write: ceiling * WRU_PER_ITEM };
  const initial = {
    read: config.tableWarmReadUnitsPerSecond || ON_DEMAND_INITIAL_THROUGHPUT.read,
    write: config.tableWarmWriteUnitsPerSecond || ON_DEMAND_INITIAL_THROUGHPUT.write,
  };
  const withinHeadroom =
    atCeiling.write <= QUOTA_HEADROOM * quota.write && atCeiling.read <= QUOTA_HEADROOM * quota.read;

  const provisioned = config.workerEventSourceMode === 'provisioned';
  const ramp = {
    start: provisioned ? config.workerMinPollers * INVOCATIONS_PER_POLLER : STANDARD_ESM_INITIAL_CONCURRENCY,
    needed: (ceiling * perBatch) / batchSize,
    perMinute: provisioned ? PROVISIONED_ESM_SCALE_PER_MINUTE : STANDARD_ESM_SCALE_PER_MINUTE,
    batch: batchSize,
  };
  const rampSeconds = (Math.max(0, ramp.needed - ramp.start) / ramp.perMinute) * 60;

  const usdPerItem = costOf(EMBEDDED_PRICES, REFERENCE_CALL.model, {
    input: REFERENCE_CALL.inputTokens,
    output: REFERENCE_CALL.outputTokens,
    cached: 0,
  }).usd;
  const covered = (usd: number) => (usd > 0 ? Math.floor(usd / usdPerItem) : undefined);

  const asks: string[] = [];
  if (!concurrency.fits)
    asks.push(
      `Lambda concurrent executions: ${Math.max(concurrency.total, concurrency.reserved + LAMBDA_UNRESERVED_MINIMUM)} (the settings take ${concurrency.total}, ${concurrency.reserved} of them reserved; the quota assumed is ${concurrency.quota})`,
    );
  const writesNeeded = Math.ceil(atCeiling.write / QUOTA_HEADROOM);
  const readsNeeded = Math.ceil(atCeiling.read / QUOTA_HEADROOM);
  if (writesNeeded > quota.write || readsNeeded > quota.read)
    asks.push(
      `DynamoDB table-level throughput: ${writesNeeded} WRU/s and ${readsNeeded} RRU/s, so the ceiling's ${atCeiling.write} WRU/s and ${atCeiling.read} RRU/s stay within ${QUOTA_HEADROOM * 100} % (assumed: ${quota.write} and ${quota.read})`,
    );
  // Warm throughput with the same headroom as the quota: a run's busiest seconds (ingest's
  // claims beside the workers' results) take more than its mean units an item.
  const warm = (needed: number, floor: number, most: number) =>
    Math.min(most, Math.max(floor, Math.ceil(needed / QUOTA_HEADROOM)));
  if (initial.write < atCeiling.write / QUOTA_HEADROOM || initial.read < atCeiling.read / QUOTA_HEADROOM)
    asks.push(
      `warm throughput, for a new table to serve the ceiling from its first second with ${Math.round((1 - QUOTA_HEADROOM) * 100)} % to spare: -c tableWarmWriteUnitsPerSecond=${warm(atCeiling.write, ON_DEMAND_INITIAL_THROUGHPUT.write, quota.write)} -c tableWarmReadUnitsPerSecond=${warm(atCeiling.read, ON_DEMAND_INITIAL_THROUGHPUT.read, quota.read)} (charged once; without it the table serves ${initial.write} WRU/s and ${initial.read} RRU/s until it has scaled)`,
    );

  return {
    concurrency,
    fleet: {
      mode: config.workerEventSourceMode,
      workers,
      batchSize,
      batchSeconds: perBatch,
      itemsPerSecond: fleetItemsPerSecond,
      rampSeconds,
    },
    table: {
      quota,
      itemsPerSecond: Math.min(byWrites, byReads),
      atCeiling,
      initial,
      initialItemsPerSecond: Math.min(
        fleetItemsPerSecond,
        initial.write / WRU_PER_ITEM,
        initial.read / RRU_PER_ITEM,
      ),
      withinHeadroom,
    },
    ingest: {
      claimsPerSecond: config.ingestClaimsPerSecond,
      perInvocation: ingestClaimsPerInvocation(config),
    },
    aggregate: {
      readUnitsPerSecond: config.aggregateReadUnitsPerSecond,
      perInvocation: aggregateReadsPerInvocation(config),
      runs:
        config.aggregateReadUnitsPerSecond > 0
          ? RUN_SIZES.map((items) => ({
              items,
              seconds: (items * AGGREGATE_RRU_PER_ITEM) / config.aggregateReadUnitsPerSecond,
            }))
          : [],
    },
    ceilingItemsPerSecond: ceiling,
    limitedBy,
    runs: RUN_SIZES.map((items) => ({ items, seconds: runSeconds(items, ceiling, ramp) })),
    stops: {
      itemsPerUpload: config.maxItemsPerUpload > 0 ? config.maxItemsPerUpload : undefined,
      usdPerItem,
      itemsPerDefaultBudget: covered(config.defaultRunBudgetUsd),
      itemsPerMaxBudget: covered(config.maxRunBudgetUsd),
      itemsPerDay: covered(config.dailySpendLimitUsd),
    },
    asks,
  };
}

const count = (n: number) => Math.round(n).toLocaleString('en-US');
const minutes = (seconds: number) =>
  seconds < 120 ? `${Math.round(seconds)} s` : `${(seconds / 60).toFixed(1)} min`;
const percent = (part: number, whole: number) => `${Math.round((100 * part) / whole)} %`;

/** The needs as the deploy prints them: a few lines a person reads before saying yes. */
export function renderDeploymentNeeds(needs: DeploymentNeeds): string {
  const { concurrency: c, fleet, table, stops } = needs;
  const f = c.byFunction;
  const lines = [
    'What this deployment needs from the account',
    `  Lambda concurrency  ${count(c.total)} of ${count(c.quota)}${c.fits ? '' : '  OVER THE QUOTA'}: workers ${count(f.worker)}, ingest ${count(f.ingest)} and aggregate ${count(f.aggregate)} (${count(c.reserved)} reserved), dead-letter ${f.deadLetter}, batch poller ${f.batchPoller}, watchdog ${f.watchdog}`,
    `  workers             ${fleet.mode} mode, ${count(fleet.workers)} × ${fleet.batchSize} items a batch / ${fleet.batchSeconds.toFixed(1)} s a batch (its slowest call: ${LLM_CALL_SECONDS} s median, ${LLM_P99_OVER_MEDIAN} s at the 99th percentile) = ${count(fleet.itemsPerSecond)} items/s, reached after ${minutes(fleet.rampSeconds)} of ramp`,
    `  table               ${count(table.atCeiling.write)} WRU/s (${percent(table.atCeiling.write, table.quota.write)} of ${count(table.quota.write)}) and ${count(table.atCeiling.read)} RRU/s (${percent(table.atCeiling.read, table.quota.read)} of ${count(table.quota.read)}) at the ceiling, at ${WRU_PER_ITEM} WRU and ${RRU_PER_ITEM} RRU an item; the quota admits ${count(table.itemsPerSecond)} items/s`,
    `  ingest              ${needs.ingest.claimsPerSecond > 0 ? `claims ${count(needs.ingest.claimsPerSecond)} item ids a second at most (${count(needs.ingest.perInvocation)} an invocation), a write unit each, beside the workers${needs.ingest.claimsPerSecond < needs.ceilingItemsPerSecond ? ': BELOW THE CEILING, ingest sets the pace' : ''}` : 'unpaced (ingestClaimsPerSecond 0): ranges read at once may take the table from the workers'}`,
    `  aggregate           ${needs.aggregate.readUnitsPerSecond > 0 ? `reads results at ${count(needs.aggregate.readUnitsPerSecond)} RRU/s at most (${count(needs.aggregate.perInvocation)} an invocation), ${AGGREGATE_RRU_PER_ITEM} RRU an item: ${needs.aggregate.runs.map((r) => `a ${count(r.items)}-item run's in ${minutes(r.seconds)}`).join(', ')}, after its last item is scored` : 'unpaced (aggregateReadUnitsPerSecond 0): the parts aggregated at once may take the table from runs still scoring'}`,
    `  from a new table    ${count(table.initial.write)} WRU/s, ${count(table.initial.read)} RRU/s: ${count(table.initialItemsPerSecond)} items/s until the table has scaled`,
    `  ceiling             ${count(needs.ceilingItemsPerSecond)} items/s (set by the ${needs.limitedBy}): ${needs.runs.map((r) => `${count(r.items)} items in ${minutes(r.seconds)}`).join(', ')}`,
    'What the settings stop',
    `  an upload           ${stops.itemsPerUpload === undefined ? 'is read whole (no maxItemsPerUpload)' : `is read to ${count(stops.itemsPerUpload)} rows (maxItemsPerUpload); the rest end as stopped`}`,
    `  a run's spend       at $${(stops.usdPerItem * 1e6).toFixed(2)} per 1M items (${REFERENCE_CALL.model}, ${REFERENCE_CALL.inputTokens} input + ${REFERENCE_CALL.outputTokens} output tokens an item): ${budgetLine('the default budget', stops.itemsPerDefaultBudget)}; ${budgetLine('the largest a run may name', stops.itemsPerMaxBudget)}; ${budgetLine("a day's spend limit", stops.itemsPerDay)}`,
  ];
  if (needs.asks.length > 0)
    lines.push('Ask of the account, or declare', ...needs.asks.map((ask) => `  - ${ask}`));
  return `${lines.join('\n')}\n`;
}

function budgetLine(what: string, items: number | undefined): string {
  return items === undefined ? `${what}: none` : `${what} pays for ${count(items)} items`;
}
