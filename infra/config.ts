import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Node } from 'constructs';
import { DEFAULT_MAX_RECEIVE_COUNT } from '../shared/lib/layout/queues.js';
import { parseDatasetPrefixes } from '../shared/lib/layout/suite-paths.js';
import { teamNameProblem } from '../shared/lib/layout/tenancy.js';
import { parseProviderKeyNames } from '../shared/lib/providers/declared-keys.js';
import { parseLimitSpec } from '../shared/lib/providers/rate-limit/spec.js';
import { MODEL_ID_PATTERN } from '../shared/model/provider-ids.js';
import {
  ON_DEMAND_INITIAL_THROUGHPUT,
  SQS_BATCH_WITHOUT_WINDOW,
  SQS_MAX_BATCH,
  SQS_MAX_POLLERS,
  SQS_MIN_POLLERS,
} from './aws-quotas.js';

/**
 * Deploy-time settings of the Assay stack. Every key can be set with `-c key=value` on the
 * CDK command line or under `context` in `infra/cdk.json`; unset keys take the defaults below.
 */
export interface AssayConfig {
  /** Keep the bucket, table and secret when the stack is deleted (and turn on table deletion protection). */
  readonly retainData: boolean;
  /** Receives before a message moves to its queue's dead-letter queue. */
  readonly maxReceiveCount: number;
  /**
   * Upper bound of concurrent invocations each SQS event source may drive (Lambda allows 2–1000).
   * Ingest reads the ranges of a dataset in parallel, this many at once.
   */
  readonly ingestMaxConcurrency: number;
  /** The most worker containers at once in standard mode (in provisioned mode the pollers bound them). */
  readonly workerMaxConcurrency: number;
  readonly deadLetterMaxConcurrency: number;
  /** A run aggregated in parts tallies and writes its parts in parallel, this many at once. */
  readonly aggregateMaxConcurrency: number;
  /**
   * Concurrency reserved for ingest and for aggregate (0: none), so that a fleet of workers
   * cannot take the account's every execution from them. At least the function's mapping maximum.
   */
  readonly ingestReservedConcurrency: number;
  readonly aggregateReservedConcurrency: number;
  /**
   * The most item ids ingest claims a second across its invocations (each a conditional put:
   * a write unit), so that reading a large dataset's ranges at once leaves the table's
   * throughput to the workers scoring them; each invocation keeps to this over
   * `ingestMaxConcurrency`. 0: unpaced.
   */
  readonly ingestClaimsPerSecond: number;
  /**
   * The most read units a second the aggregation's reads of results take across its
   * invocations (the parts tallied and written at once), so that aggregating one run leaves
   * the table to the runs still scoring; each invocation keeps to this over
   * `aggregateMaxConcurrency`. Default: half of what the table serves at once (its warm read
   * throughput, or a new table's 12,000). 0: unpaced.
   */
  readonly aggregateReadUnitsPerSecond: number;
  /**
   * How Lambda polls the items queue for the workers. `standard`: Lambda's own pollers, which
   * start with 5 concurrent batches and add up to 300 a minute, bounded by `workerMaxConcurrency`;
   * no cost while idle. `provisioned`: dedicated pollers between `workerMinPollers` and
   * `workerMaxPollers`, each driving up to 10 concurrent invocations, which scale about three
   * times faster; the pollers are billed while they exist, idle or not. Lambda accepts a
   * maximum concurrency or provisioned pollers on a mapping, never both.
   */
  readonly workerEventSourceMode: 'standard' | 'provisioned';
  /** Provisioned mode: the fewest pollers kept (SQS allows 2–200), billed while idle. */
  readonly workerMinPollers: number;
  /** Provisioned mode: the most pollers (SQS allows 2–2000); the workers' ceiling is 10 invocations a poller. */
  readonly workerMaxPollers: number;
  /** Item messages per worker invocation (1–10,000; above 10 Lambda needs a batching window). */
  readonly workerBatchSize: number;
  /** Seconds Lambda may gather item messages into a batch before invoking a worker (0–300; 0: none). */
  readonly workerBatchingWindowSeconds: number;
  /** The account's concurrent executions in the stack's region the deployment assumes (AWS default: 1,000). */
  readonly lambdaConcurrencyQuota: number;
  /**
   * Read and write units a second the table serves at once from its creation (its warm
   * throughput; 0: none declared, and a new on-demand table starts at 12,000 RRU/s and
   * 4,000 WRU/s). Raising it is charged once, when it is raised.
   */
  readonly tableWarmReadUnitsPerSecond: number;
  readonly tableWarmWriteUnitsPerSecond: number;
  /** The table-wide on-demand throughput quota the deployment assumes (AWS default: 40,000 each). */
  readonly tableReadQuota: number;
  readonly tableWriteQuota: number;
  /** ASSAY_RESULT_TTL_DAYS: days after which a run's results and counters in the table expire (by `ttl`); 0: kept. */
  readonly resultRetentionDays: number;
  /** POWERTOOLS_LOG_LEVEL of every function. */
  readonly logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** Retention of the functions' log groups; must be a value CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, …). */
  readonly logRetentionDays: number;
  /** ASSAY_CACHE_TTL_DAYS: lifetime of LLM cache entries in the table. */
  readonly cacheTtlDays: number;
  /** Minutes between passes of the batch poller (the batch lane: submit, poll, collect). */
  readonly batchPollMinutes: number;
  /** Minutes between passes of the watchdog over the runs not done yet. */
  readonly watchdogMinutes: number;
  /** A run whose progress has not moved for this many minutes is stuck: the watchdog counts it, an alarm says so. */
  readonly stuckAfterMinutes: number;
  /** Full ARN of an existing provider-keys secret; when unset the stack creates one. */
  readonly providerSecretArn?: string;
  /** E-mail address subscribed to an SNS topic that receives the dead-letter alarms; no topic when unset. */
  readonly alarmEmail?: string;
  /**
   * ASSAY_LIMITS of the workers: the provider+model rate limits the whole fleet shares through
   * the table's token buckets (`openai:gpt-4o-mini=3000rpm,2000000tpm;…`). Suites may declare
   * more in `run.limits`; the stricter wins.
   */
  readonly rateLimits?: string;
  /**
   * The most rows an uploaded dataset may have (ASSAY_MAX_ITEMS_PER_UPLOAD of ingest): a run
   * stops reading there, its record says why, and its items end as `stopped`. 0: no limit.
   */
  readonly maxItemsPerUpload: number;
  /**
   * The most times one upload may score each item: a sweep's variants × each one's
   * `run.repeats` (a plain suite: its repeats). An upload over it is rejected. 0: no limit.
   */
  readonly maxVariantsTimesRepeats: number;
  /** The most output tokens a call may ask for: a suite whose `params.maxTokens` is higher is rejected at upload. 0: no limit. */
  readonly maxOutputTokens: number;
  /** The budget (USD) a run gets when its suite gives no `run.budgetUsd`. 0: none. */
  readonly defaultRunBudgetUsd: number;
  /**
   * The most `run.budgetUsd` (USD) a run may name: an upload naming more (in any variant) is
   * rejected; a run without a budget, with no default, gets this one. 0: no maximum.
   */
  readonly maxRunBudgetUsd: number;
  /**
   * The models (`vendor:model` ids) an upload may call, as backends or paid encoders, for
   * ingest's ASSAY_ALLOWED_MODELS; `["*"]`: any model. Empty (default): the models the deployed
   * price table prices. The simulator (`sim:`) and local encoders (`onnx:`) are always allowed.
   * `-c allowedModels=a,b` or a JSON list in cdk.json.
   */
  readonly allowedModels: readonly string[];
  /**
   * Spend (USD) across every run in a UTC day after which no item is scored: the items fail as
   * `budget` (resumable, as a spent run budget), and an alarm speaks at 80 % of it. 0: no limit.
   */
  readonly dailySpendLimitUsd: number;
  /**
   * Bedrock model ids (`anthropic.claude-3-5-haiku-20241022-v1:0`) or inference profile ids
   * (`us.anthropic…`) the workers and the batch poller may invoke: `bedrock:InvokeModel` on
   * exactly those ARNs in the stack's region (and, for a profile, the models it routes to).
   * Empty: no Bedrock access at all. `-c bedrockModels=a,b` or a JSON list in cdk.json.
   */
  readonly bedrockModels: readonly string[];
  /**
   * ASSAY_DATASET_PREFIXES of ingest: folders under `datasets/` every suite may read besides its
   * own `datasets/<name>/` (`datasets/shared/,datasets/public/`); none when unset.
   */
  readonly datasetPrefixes?: string;
  /**
   * The teams sharing the bucket, each with the IAM principals (role or user ARNs; `*` allowed
   * as in `ArnLike`) that write its keys: `{"alpha": ["arn:aws:iam::111122223333:role/alpha-writer"]}`.
   * A team owns the suites named `<team>` or `<team>-…`, their `datasets/` folders and
   * `prompts/<team>/`; the bucket policy denies every other principal writing them, and ingest
   * keeps a team's prompts to its suites (shared/lib/layout/tenancy.ts). None by default: every
   * writer of the bucket is one team, and every suite reads `prompts/<path>`.
   */
  readonly teams: Readonly<Record<string, readonly string[]>>;
  /**
   * The names of the keys the provider secret holds (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`…),
   * ingest's ASSAY_PROVIDER_KEYS: ingest refuses a suite whose backend needs another key without
   * reading the secret (it has no access to it). Default: the three the created secret's template
   * names; `-c providerKeys=` (empty) declares none.
   */
  readonly providerKeys: readonly string[];
}

export const DEFAULT_CONFIG: AssayConfig = {
  retainData: true,
  maxReceiveCount: DEFAULT_MAX_RECEIVE_COUNT,
  // Sized for a 10M-item run inside the account's default quotas (docs/aws.md, "What the
  // deployment needs"): 450 workers × 100 items a batch over 5.6 s (a batch ends with its
  // slowest call: 1 s median, 5 s at the 99th percentile) is about 7,990 items/s, whose
  // 31,960 WRU/s at 4 WRU an item is just under 80 % of the default table quota (the most the
  // quota's headroom admits; the capacity model measures nearer 3.2 WRU an item); with ingest's
  // and aggregate's reservations the stack needs 500 of the account's 1,000 executions.
  ingestMaxConcurrency: 20,
  workerMaxConcurrency: 450,
  deadLetterMaxConcurrency: 2,
  aggregateMaxConcurrency: 20,
  ingestReservedConcurrency: 20,
  aggregateReservedConcurrency: 20,
  // Ahead of the workers' 7,990 items/s, and 12,000 WRU/s beside their 17,600 (2.2 an item):
  // within the warm throughput the printout asks for the ceiling.
  ingestClaimsPerSecond: 12_000,
  // Half of a new table's 12,000 RRU/s (with warm throughput declared, half of that instead).
  aggregateReadUnitsPerSecond: 6_000,
  // Standard mode costs nothing while idle; provisioned pollers are for a deployment that runs
  // large uploads often enough to pay for the pollers it keeps (45 of them reach the same 450).
  workerEventSourceMode: 'standard',
  workerMinPollers: 2,
  workerMaxPollers: 45,
  workerBatchSize: 100,
  workerBatchingWindowSeconds: 1,
  lambdaConcurrencyQuota: 1_000,
  // None declared: pre-warming is charged, and a deployment that never runs millions of items
  // would pay for it; the deploy's printout says what to declare for the ceiling.
  tableWarmReadUnitsPerSecond: 0,
  tableWarmWriteUnitsPerSecond: 0,
  tableReadQuota: 40_000,
  tableWriteQuota: 40_000,
  resultRetentionDays: 90,
  logLevel: 'INFO',
  logRetentionDays: 30,
  cacheTtlDays: 30,
  batchPollMinutes: 1,
  watchdogMinutes: 5,
  stuckAfterMinutes: 60,
  // A 10M-item upload is read whole; what a run may spend is the budget's to bound.
  maxItemsPerUpload: 10_000_000,
  maxVariantsTimesRepeats: 50,
  maxOutputTokens: 4_096,
  defaultRunBudgetUsd: 100,
  maxRunBudgetUsd: 1_000,
  dailySpendLimitUsd: 1_000,
  allowedModels: [],
  bedrockModels: [],
  teams: {},
  // The three keys the created secret's template names: an upgraded deployment keeps taking
  // uploads for each vendor, and a key the secret lacks fails its items in the worker, with the reason.
  providerKeys: ['ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'OPENAI_API_KEY'],
};

/** Thrown when a setting is malformed or inconsistent; the message names the setting and what it accepts. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

const LOG_LEVELS: readonly AssayConfig['logLevel'][] = ['DEBUG', 'INFO', 'WARN', 'ERROR'];
const MAX_CONCURRENCY_KEYS = [
  'ingestMaxConcurrency',
  'workerMaxConcurrency',
  'deadLetterMaxConcurrency',
  'aggregateMaxConcurrency',
] as const;

/** Bedrock model and inference-profile ids: letters, digits and `.-:_/` (no wildcard, no ARN). */
const BEDROCK_MODEL_ID = /^[a-z0-9][a-z0-9._:/-]*$/i;

/**
 * A list setting as CDK context gives it: a JSON list (cdk.json, or `-c key='["a","b"]'`) or
 * items separated by "," (`-c key=a,b`), each once. Unset: `fallback`; empty: none. An item
 * `valid` refuses, or a value of another shape, is a {@link ConfigError} saying `what` it takes.
 */
function listSetting(
  key: string,
  raw: unknown,
  what: string,
  valid: (item: string) => boolean,
  fallback: readonly string[] = [],
): readonly string[] {
  if (raw === undefined) return fallback;
  if (raw === '') return [];
  let list: unknown = raw;
  if (typeof raw === 'string') {
    try {
      list = raw.trim().startsWith('[') ? JSON.parse(raw) : raw.split(',').map((item) => item.trim());
    } catch {
      list = raw;
    }
  }
  if (!Array.isArray(list) || !list.every((item) => typeof item === 'string' && valid(item)))
    throw new ConfigError(`context "${key}" must be ${what}, got ${JSON.stringify(raw)}`);
  return [...new Set(list as string[])];
}

const bedrockModels = (raw: unknown) =>
  listSetting(
    'bedrockModels',
    raw,
    'Bedrock model or inference profile ids (a list, or separated by ","), without wildcards or ARNs',
    (id) => BEDROCK_MODEL_ID.test(id) && !id.startsWith('arn:'),
  );

function allowedModels(raw: unknown): readonly string[] {
  const what =
    'vendor:model ids (openai:gpt-4o-mini; a list, or separated by ","), or "*" alone for any model';
  const list = listSetting('allowedModels', raw, what, (id) => id === '*' || MODEL_ID_PATTERN.test(id));
  if (list.includes('*') && list.length > 1)
    throw new ConfigError(`context "allowedModels" must be ${what}, got ${JSON.stringify(raw)}`);
  return list;
}

function rateLimits(raw: unknown): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  try {
    if (typeof raw !== 'string') throw new Error('it is not a string');
    parseLimitSpec(raw, 'rateLimits');
  } catch (error) {
    throw new ConfigError(
      `context "rateLimits" must be backend=<n>rpm,<n>tpm entries separated by ";", got ${JSON.stringify(raw)}: ${(error as Error).message}`,
    );
  }
  return raw;
}

function datasetPrefixes(raw: unknown): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  try {
    if (typeof raw !== 'string') throw new Error('it is not a string');
    return parseDatasetPrefixes(raw).join(',') || undefined;
  } catch (error) {
    throw new ConfigError(
      `context "datasetPrefixes" must be folders under datasets/ separated by ",", got ${JSON.stringify(raw)}: ${(error as Error).message}`,
    );
  }
}

/** A writer of a team's keys: an IAM role, user or assumed-role ARN (wildcards as `ArnLike` reads them). */
const WRITER_ARN = /^arn:aws[a-z-]*:(iam|sts)::(\d{12}|\*):[A-Za-z0-9+=,.@_/*-]+$/;

function teams(raw: unknown): Readonly<Record<string, readonly string[]>> {
  if (raw === undefined || raw === '') return {};
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      value = raw;
    }
  }
  const what = `context "teams" must be a JSON object of team name → writer role ARNs, e.g. {"alpha": ["arn:aws:iam::111122223333:role/alpha-writer"]}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConfigError(`${what}, got ${JSON.stringify(raw)}`);
  const out: Record<string, readonly string[]> = {};
  for (const [team, writers] of Object.entries(value)) {
    const problem = teamNameProblem(team);
    if (problem !== undefined)
      throw new ConfigError(`context "teams": team ${JSON.stringify(team)} ${problem}`);
    if (
      !Array.isArray(writers) ||
      writers.length === 0 ||
      !writers.every((w) => typeof w === 'string' && WRITER_ARN.test(w))
    )
      throw new ConfigError(
        `context "teams": team ${team} needs a non-empty list of IAM role or user ARNs (arn:aws:iam::<account>:role/<name>), got ${JSON.stringify(writers)}`,
      );
    out[team] = [...new Set(writers as string[])];
  }
  return out;
}

function providerKeys(raw: unknown): readonly string[] {
  const names = listSetting(
    'providerKeys',
    raw,
    'the names of the keys the provider secret holds (a list, or separated by ",")',
    () => true,
    DEFAULT_CONFIG.providerKeys,
  );
  try {
    return parseProviderKeyNames(names.join(','), 'context "providerKeys"');
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}

type IntSetting = (key: keyof AssayConfig, min: number, max: number) => number;

const EVENT_SOURCE_MODES: readonly AssayConfig['workerEventSourceMode'][] = ['standard', 'provisioned'];

/** A setting that is one of `choices`, in any case (`-c workerEventSourceMode=Provisioned`). */
function stringChoice<T extends string>(key: keyof AssayConfig, choices: readonly T[]) {
  return (raw: unknown): T => {
    const value = String(raw ?? DEFAULT_CONFIG[key]).toLowerCase();
    if (!choices.includes(value as T))
      throw new ConfigError(
        `context "${key}" must be one of ${choices.join(', ')}, got ${JSON.stringify(raw)}`,
      );
    return value as T;
  };
}

/** The items mapping: its mode, pollers and batches, each within what Lambda accepts for SQS. */
function workerFleet(
  int: IntSetting,
  mode: AssayConfig['workerEventSourceMode'],
): Pick<
  AssayConfig,
  | 'workerEventSourceMode'
  | 'workerMinPollers'
  | 'workerMaxPollers'
  | 'workerBatchSize'
  | 'workerBatchingWindowSeconds'
> {
  const workerMinPollers = int('workerMinPollers', SQS_MIN_POLLERS.min, SQS_MIN_POLLERS.max);
  const workerMaxPollers = int('workerMaxPollers', SQS_MAX_POLLERS.min, SQS_MAX_POLLERS.max);
  if (workerMinPollers > workerMaxPollers)
    throw new ConfigError(
      `context "workerMinPollers" (${workerMinPollers}) is above "workerMaxPollers" (${workerMaxPollers})`,
    );
  const workerBatchSize = int('workerBatchSize', 1, SQS_MAX_BATCH);
  const workerBatchingWindowSeconds = int('workerBatchingWindowSeconds', 0, 300);
  if (workerBatchSize > SQS_BATCH_WITHOUT_WINDOW && workerBatchingWindowSeconds === 0)
    throw new ConfigError(
      `context "workerBatchSize" (${workerBatchSize}) is above ${SQS_BATCH_WITHOUT_WINDOW}: Lambda needs a batching window for it; set "workerBatchingWindowSeconds" to 1 or more`,
    );
  return {
    workerEventSourceMode: mode,
    workerMinPollers,
    workerMaxPollers,
    workerBatchSize,
    workerBatchingWindowSeconds,
  };
}

/** The table's warm throughput and the table-wide quota assumed; warm throughput fits within the quota. */
function tableThroughput(
  int: IntSetting,
): Pick<
  AssayConfig,
  'tableWarmReadUnitsPerSecond' | 'tableWarmWriteUnitsPerSecond' | 'tableReadQuota' | 'tableWriteQuota'
> {
  const tableReadQuota = int('tableReadQuota', 1, 100_000_000);
  const tableWriteQuota = int('tableWriteQuota', 1, 100_000_000);
  const warm = (key: 'tableWarmReadUnitsPerSecond' | 'tableWarmWriteUnitsPerSecond', quota: number) => {
    const initial =
      key === 'tableWarmReadUnitsPerSecond'
        ? ON_DEMAND_INITIAL_THROUGHPUT.read
        : ON_DEMAND_INITIAL_THROUGHPUT.write;
    const value = int(key, 0, 100_000_000);
    if (value !== 0 && (value < initial || value > quota))
      throw new ConfigError(
        `context "${key}" must be 0 (none) or from ${initial} (what a new on-demand table serves) to the quota assumed (${quota}), got ${value}`,
      );
    return value;
  };
  return {
    tableWarmReadUnitsPerSecond: warm('tableWarmReadUnitsPerSecond', tableReadQuota),
    tableWarmWriteUnitsPerSecond: warm('tableWarmWriteUnitsPerSecond', tableWriteQuota),
    tableReadQuota,
    tableWriteQuota,
  };
}

/**
 * Reads the Assay settings from CDK context (values given with `-c` arrive as strings),
 * fills in defaults and validates them, so that a typo fails the synth with the key's name
 * instead of producing a template CloudFormation rejects later.
 */
export function configFromContext(node: Node): AssayConfig {
  const int = (key: keyof AssayConfig, min: number, max: number): number => {
    const raw: unknown = node.tryGetContext(key) ?? DEFAULT_CONFIG[key];
    const value = typeof raw === 'string' ? Number(raw.trim()) : raw;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw new ConfigError(
        `context "${key}" must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`,
      );
    }
    return value;
  };
  const amount = (key: keyof AssayConfig, max: number): number => {
    const raw: unknown = node.tryGetContext(key) ?? DEFAULT_CONFIG[key];
    const value = typeof raw === 'string' && raw.trim() !== '' ? Number(raw.trim()) : raw;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > max) {
      throw new ConfigError(
        `context "${key}" must be a number from 0 (no limit) to ${max}, got ${JSON.stringify(raw)}`,
      );
    }
    return value;
  };
  const bool = (key: keyof AssayConfig): boolean => {
    const raw: unknown = node.tryGetContext(key) ?? DEFAULT_CONFIG[key];
    if (raw === true || raw === 'true') return true;
    if (raw === false || raw === 'false') return false;
    throw new ConfigError(`context "${key}" must be true or false, got ${JSON.stringify(raw)}`);
  };
  const optionalString = (key: keyof AssayConfig, pattern: RegExp, what: string): string | undefined => {
    const raw: unknown = node.tryGetContext(key);
    if (raw === undefined || raw === '') return undefined;
    if (typeof raw !== 'string' || !pattern.test(raw)) {
      throw new ConfigError(`context "${key}" must be ${what}, got ${JSON.stringify(raw)}`);
    }
    return raw;
  };

  const logLevel = String(node.tryGetContext('logLevel') ?? DEFAULT_CONFIG.logLevel).toUpperCase();
  if (!LOG_LEVELS.includes(logLevel as AssayConfig['logLevel'])) {
    throw new ConfigError(`context "logLevel" must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const logRetentionDays = int('logRetentionDays', 1, 3653);
  if (!Object.values(RetentionDays).includes(logRetentionDays)) {
    throw new ConfigError(
      `context "logRetentionDays" must be a CloudWatch Logs retention (${Object.values(RetentionDays)
        .filter((d) => typeof d === 'number')
        .join(', ')}), got ${logRetentionDays}`,
    );
  }
  const budgets = {
    defaultRunBudgetUsd: amount('defaultRunBudgetUsd', 1_000_000),
    maxRunBudgetUsd: amount('maxRunBudgetUsd', 1_000_000),
  };
  if (budgets.maxRunBudgetUsd > 0 && budgets.defaultRunBudgetUsd > budgets.maxRunBudgetUsd) {
    throw new ConfigError(
      `context "defaultRunBudgetUsd" (${budgets.defaultRunBudgetUsd}) is above "maxRunBudgetUsd" (${budgets.maxRunBudgetUsd}): a run would get a budget it may not name; lower the default or raise the maximum`,
    );
  }
  const [ingestMaxConcurrency, workerMaxConcurrency, deadLetterMaxConcurrency, aggregateMaxConcurrency] =
    MAX_CONCURRENCY_KEYS.map((key) => int(key, 2, 1000)) as [number, number, number, number];
  const reserved = (
    key: 'ingestReservedConcurrency' | 'aggregateReservedConcurrency',
    mappingMax: number,
  ) => {
    const value = int(key, 0, 100_000);
    const mappingKey = key.replace('Reserved', 'Max');
    if (value > 0 && value < mappingMax)
      throw new ConfigError(
        `context "${key}" (${value}) is below "${mappingKey}" (${mappingMax}): the mapping's invocations past the reservation would be throttled; reserve at least ${mappingMax}, or 0 for none`,
      );
    return value;
  };
  const fleet = workerFleet(
    int,
    stringChoice('workerEventSourceMode', EVENT_SOURCE_MODES)(node.tryGetContext('workerEventSourceMode')),
  );
  const table = tableThroughput(int);

  return {
    retainData: bool('retainData'),
    maxReceiveCount: int('maxReceiveCount', 1, 1000),
    ingestMaxConcurrency,
    workerMaxConcurrency,
    deadLetterMaxConcurrency,
    aggregateMaxConcurrency,
    ingestReservedConcurrency: reserved('ingestReservedConcurrency', ingestMaxConcurrency),
    aggregateReservedConcurrency: reserved('aggregateReservedConcurrency', aggregateMaxConcurrency),
    ingestClaimsPerSecond: int('ingestClaimsPerSecond', 0, 1_000_000),
    aggregateReadUnitsPerSecond:
      node.tryGetContext('aggregateReadUnitsPerSecond') === undefined
        ? Math.round((table.tableWarmReadUnitsPerSecond || ON_DEMAND_INITIAL_THROUGHPUT.read) / 2)
        : int('aggregateReadUnitsPerSecond', 0, 1_000_000),
    ...fleet,
    lambdaConcurrencyQuota: int('lambdaConcurrencyQuota', 1, 10_000_000),
    ...table,
    resultRetentionDays: int('resultRetentionDays', 0, 36_500),
    logLevel: logLevel as AssayConfig['logLevel'],
    logRetentionDays,
    cacheTtlDays: int('cacheTtlDays', 1, 3650),
    batchPollMinutes: int('batchPollMinutes', 1, 1440),
    watchdogMinutes: int('watchdogMinutes', 1, 1440),
    stuckAfterMinutes: int('stuckAfterMinutes', 5, 10080),
    providerSecretArn: optionalString(
      'providerSecretArn',
      /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+-[A-Za-z0-9]{6}$/,
      'the full ARN of a Secrets Manager secret (with its 6-character suffix)',
    ),
    alarmEmail: optionalString('alarmEmail', /^[^@\s]+@[^@\s]+$/, 'an e-mail address'),
    rateLimits: rateLimits(node.tryGetContext('rateLimits')),
    maxItemsPerUpload: int('maxItemsPerUpload', 0, 1_000_000_000),
    maxVariantsTimesRepeats: int('maxVariantsTimesRepeats', 0, 100_000),
    maxOutputTokens: int('maxOutputTokens', 0, 1_000_000),
    defaultRunBudgetUsd: budgets.defaultRunBudgetUsd,
    maxRunBudgetUsd: budgets.maxRunBudgetUsd,
    allowedModels: allowedModels(node.tryGetContext('allowedModels')),
    dailySpendLimitUsd: amount('dailySpendLimitUsd', 10_000_000),
    bedrockModels: bedrockModels(node.tryGetContext('bedrockModels')),
    datasetPrefixes: datasetPrefixes(node.tryGetContext('datasetPrefixes')),
    teams: teams(node.tryGetContext('teams')),
    providerKeys: providerKeys(node.tryGetContext('providerKeys')),
  };
}

/**
 * Ingest's environment for the deployment's limits on an upload (read by functions/deploy-env.ts;
 * 0: no limit of that kind).
 */
export function uploadLimitsEnv(config: AssayConfig): Record<string, string> {
  return {
    ASSAY_MAX_ITEMS_PER_UPLOAD: String(config.maxItemsPerUpload),
    ASSAY_MAX_VARIANTS_TIMES_REPEATS: String(config.maxVariantsTimesRepeats),
    ASSAY_MAX_OUTPUT_TOKENS: String(config.maxOutputTokens),
    ASSAY_DEFAULT_BUDGET_USD: String(config.defaultRunBudgetUsd),
    ASSAY_MAX_RUN_BUDGET_USD: String(config.maxRunBudgetUsd),
    // Unset: the models the price table prices.
    ...(config.allowedModels.length > 0 ? { ASSAY_ALLOWED_MODELS: config.allowedModels.join(',') } : {}),
  };
}

/**
 * Ingest's environment for tenancy and provider keys: the teams' names (ASSAY_TEAMS; their
 * writers are the bucket policy's) and the key names the secret holds (ASSAY_PROVIDER_KEYS).
 */
export function ingestTenancyEnv(config: AssayConfig): Record<string, string> {
  const teams = Object.keys(config.teams).sort();
  return {
    ...(teams.length > 0 ? { ASSAY_TEAMS: teams.join(',') } : {}),
    ...(config.providerKeys.length > 0 ? { ASSAY_PROVIDER_KEYS: config.providerKeys.join(',') } : {}),
  };
}

/** The workers' environment for the daily spend limit across runs (0: none). */
export function spendLimitEnv(config: AssayConfig): Record<string, string> {
  return { ASSAY_DAILY_SPEND_LIMIT_USD: String(config.dailySpendLimitUsd) };
}

/** Each ingest invocation's share of `ingestClaimsPerSecond`: over the invocations that may read at once. */
export const ingestClaimsPerInvocation = (config: AssayConfig) =>
  Math.ceil(config.ingestClaimsPerSecond / config.ingestMaxConcurrency);

/** Each aggregate invocation's share of `aggregateReadUnitsPerSecond`. */
export const aggregateReadsPerInvocation = (config: AssayConfig) =>
  Math.ceil(config.aggregateReadUnitsPerSecond / config.aggregateMaxConcurrency);

/** ASSAY_RESULT_READ_UNITS_PER_SECOND of aggregate: {@link aggregateReadsPerInvocation}; none when unpaced. */
export function aggregatePaceEnv(config: AssayConfig): Record<string, string> {
  if (config.aggregateReadUnitsPerSecond === 0) return {};
  return { ASSAY_RESULT_READ_UNITS_PER_SECOND: String(aggregateReadsPerInvocation(config)) };
}

/** ASSAY_INGEST_CLAIMS_PER_SECOND: {@link ingestClaimsPerInvocation}; none when unpaced. */
export function ingestPaceEnv(config: AssayConfig): Record<string, string> {
  if (config.ingestClaimsPerSecond === 0) return {};
  return { ASSAY_INGEST_CLAIMS_PER_SECOND: String(ingestClaimsPerInvocation(config)) };
}
