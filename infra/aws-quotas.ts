/**
 * What AWS documents about the services' scaling and quotas, as the deploy settings are checked
 * against them and the deployment's needs are computed from them (infra/capacity.ts).
 */

/** Concurrent executions an account has in a region unless it asks for more. */
export const DEFAULT_LAMBDA_CONCURRENCY = 1_000;
/** Lambda keeps this many of the account's executions unreserved: reservations leave them free. */
export const LAMBDA_UNRESERVED_MINIMUM = 100;

/** A standard SQS mapping starts with this many concurrent batches... */
export const STANDARD_ESM_INITIAL_CONCURRENCY = 5;
/** ...and adds up to this many a minute while messages wait. */
export const STANDARD_ESM_SCALE_PER_MINUTE = 300;
/** Provisioned mode: concurrent invocations one SQS event poller drives at most. */
export const INVOCATIONS_PER_POLLER = 10;
/** Provisioned mode: concurrency the pollers add a minute at most. */
export const PROVISIONED_ESM_SCALE_PER_MINUTE = 1_000;
/** The pollers an SQS mapping in provisioned mode may keep at least / at most. */
export const SQS_MIN_POLLERS = { min: 2, max: 200 } as const;
export const SQS_MAX_POLLERS = { min: 2, max: 2_000 } as const;
/** Records per SQS batch: up to 10 without a batching window, up to 10,000 with one. */
export const SQS_BATCH_WITHOUT_WINDOW = 10;
export const SQS_MAX_BATCH = 10_000;

/** The table-wide on-demand throughput quota an account has unless it asks for more, units a second. */
export const DEFAULT_TABLE_QUOTA = { read: 40_000, write: 40_000 } as const;
/** What a new on-demand table serves at once, units a second, until it has scaled (or been pre-warmed). */
export const ON_DEMAND_INITIAL_THROUGHPUT = { read: 12_000, write: 4_000 } as const;
