/**
 * The queue topology of the AWS shell: the three work queues, their dead-letter queues, which
 * function consumes each and in what batches. The CDK stack builds its queues and event source
 * mappings from this, the moto stand-in creates the same queues, and the local cloud's poller
 * uses the same batch sizes.
 *
 * ```
 * S3 upload ─▶ events ─▶ ingest ─▶ items ─▶ worker ─▶ aggregate ─▶ aggregate
 *                 │                  │                    │
 *             events DLQ ─┐      items DLQ ─▶ dead-letter  aggregate DLQ
 *                         └─────────────────▶ dead-letter
 * ```
 */

/** The Lambda functions of the stack. */
export type FunctionName = 'ingest' | 'worker' | 'deadLetter' | 'aggregate' | 'batchPoller' | 'watchdog';

/**
 * Each function's timeout, seconds; each consumed queue's visibility timeout is derived from it.
 * The aggregation's steps that see the whole run (the reduction, which bootstraps every result's
 * metric; the assembly, which composes every part's pieces) grow with it: at 10,000,000 items
 * the capacity model projects several minutes each, so the aggregate function has Lambda's
 * longest timeout and memory enough for a full vCPU (docs/aws.md, "At a million items and beyond").
 */
export const FUNCTION_TIMEOUT_SECONDS: Readonly<Record<FunctionName, number>> = {
  ingest: 300,
  worker: 300,
  deadLetter: 60,
  aggregate: 900,
  batchPoller: 300,
  watchdog: 120,
};

/**
 * Each function's memory, MB (Lambda allows 128–10,240; CPU grows with it). The CDK stack sizes
 * the functions from this, the local cloud holds each container to it, and the capacity model
 * checks every invocation against 80% of it.
 */
export const FUNCTION_MEMORY_MB: Readonly<Record<FunctionName, number>> = {
  ingest: 1024,
  worker: 1024,
  deadLetter: 256,
  aggregate: 2048,
  batchPoller: 512,
  watchdog: 256,
};

/**
 * Each function's ephemeral storage (`/tmp`), MB (Lambda allows 512–10,240; 512 is free). The
 * stack sets it, the local cloud gives each container a `/tmp` of this size and stops an
 * invocation that fills it, and the capacity model checks every invocation against 80% of it.
 */
export const FUNCTION_TMP_MB: Readonly<Record<FunctionName, number>> = {
  ingest: 512,
  worker: 512,
  deadLetter: 512,
  aggregate: 512,
  batchPoller: 512,
  watchdog: 512,
};

/**
 * How much of a dataset one ingest invocation reads, bytes: a larger one is read a chunk at a
 * time (a chunk ends at the first record past this), an invocation each, so that ingest stays
 * far inside its timeout, memory and /tmp however large the dataset. At a few hundred bytes a
 * row, a chunk is tens of thousands of rows. A chunk hands its rows on once their ids are
 * claimed, at ingest's claims pace (each invocation its share), so its size sets when the
 * first items reach the workers: 8 MiB, about 30,000 rows of 280 bytes, is some 50 s at 600
 * claims a second (16 MiB took the capacity model's 100K run 93 s to its first result); it is
 * also a run's part, whose pieces of labeled.csv stay above S3's 5 MiB part minimum, so the
 * assembly copies them inside S3.
 */
export const INGEST_CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * The most rows of a part of a run (on AWS, ingest cuts a run's results into parts: a chunk's
 * rows, a one-pass dataset's every this many). A part's results are counted in the slots of
 * its part (see table.ts), each counter holding the rows it counted: at most this many over
 * 64 slots, about 800 rows, a few KB, so that counting a result costs a few write units
 * however short the dataset's rows.
 */
export const PART_ROWS = 50_000;

/** AWS recommends a queue visibility timeout of at least six times the consuming function's timeout. */
export const VISIBILITY_TO_TIMEOUT_RATIO = 6;

/**
 * Receives before a message moves to its queue's dead-letter queue (a deploy setting; this is
 * its default). The functions give a record they failed a backoff in seconds before its next
 * receive (functions/retry-backoff.ts): half to all of min(300 s, 2 s × 2^(n-1)) after the nth,
 * i.e. 1–2 s, 2–4 s, 4–8 s, … 128–256 s, then 150–300 s. Fourteen receives are 13 such waits:
 * an item that fails every time is retried for 16.75–33.5 minutes before it is dead-lettered,
 * so a vendor's or a table's outage of a quarter of an hour loses no item, and a burst of 429s
 * costs seconds. Ingest and aggregate wait at least their lease (6 and 16 minutes: what they
 * failed stays held that long). A record whose invocation died (a timeout, a crash) gets no
 * backoff: it comes back after the visibility timeout, fourteen times at most.
 */
export const DEFAULT_MAX_RECEIVE_COUNT = 14;

/** Retention of every dead-letter queue, days: the longest SQS allows, time to notice the alarm and redrive. */
export const DEAD_LETTER_RETENTION_DAYS = 14;

/** The visibility timeout SQS gives a queue that sets none, seconds. */
export const SQS_DEFAULT_VISIBILITY_SECONDS = 30;

/** A Lambda event source mapping on a queue. */
export interface QueueConsumer {
  readonly function: FunctionName;
  /** Records per invocation. */
  readonly batchSize: number;
  /** How long Lambda gathers records before invoking, seconds; 0: as soon as any arrive. */
  readonly maxBatchingWindowSeconds: number;
}

export interface DeadLetterQueueDeclaration {
  /** Appended to the stack's (or the local cloud's) name prefix, e.g. `-items-dlq`. */
  readonly nameSuffix: string;
  readonly retentionDays: number;
  /** Visibility timeout, seconds: six times its consumer's timeout, or undefined (the SQS default) without one. */
  readonly visibilityTimeoutSeconds: number | undefined;
  readonly consumer: QueueConsumer | undefined;
}

export interface QueueDeclaration {
  /** Appended to the stack's (or the local cloud's) name prefix, e.g. `-items`. */
  readonly nameSuffix: string;
  readonly fifo: boolean;
  /** Six times its consumer's timeout. */
  readonly visibilityTimeoutSeconds: number;
  readonly consumer: QueueConsumer;
  /** Receives before a message moves to the dead-letter queue (the default of the deploy setting). */
  readonly maxReceiveCount: number;
  readonly deadLetter: DeadLetterQueueDeclaration;
}

export type QueueName = 'events' | 'items' | 'aggregate';

function queue(
  name: QueueName,
  consumer: Omit<QueueConsumer, 'maxBatchingWindowSeconds'>,
  deadLetterConsumer?: Omit<QueueConsumer, 'maxBatchingWindowSeconds'>,
): QueueDeclaration {
  const visibility = (c: { function: FunctionName }) =>
    VISIBILITY_TO_TIMEOUT_RATIO * FUNCTION_TIMEOUT_SECONDS[c.function];
  return {
    nameSuffix: `-${name}`,
    fifo: false,
    visibilityTimeoutSeconds: visibility(consumer),
    consumer: { ...consumer, maxBatchingWindowSeconds: 0 },
    maxReceiveCount: DEFAULT_MAX_RECEIVE_COUNT,
    deadLetter: {
      nameSuffix: `-${name}-dlq`,
      retentionDays: DEAD_LETTER_RETENTION_DAYS,
      visibilityTimeoutSeconds: deadLetterConsumer ? visibility(deadLetterConsumer) : undefined,
      consumer: deadLetterConsumer ? { ...deadLetterConsumer, maxBatchingWindowSeconds: 0 } : undefined,
    },
  };
}

/**
 * The queues, each a standard (not FIFO) queue with its own dead-letter queue:
 * - `events`: S3 upload notifications (and ingest's own chunk tasks) → ingest, one upload per
 *   invocation, since a dataset can take minutes to stream; its DLQ is drained by the
 *   dead-letter function, which ends the run of a chunk task that died there;
 * - `items`: one message per dataset item → worker, ten at a time; its DLQ is drained by the
 *   dead-letter function, which records the items as failed;
 * - `aggregate`: one message per finished run or sweep → aggregate, one run per invocation, since a
 *   large run takes a while to stream and score.
 */
export const QUEUES: Readonly<Record<QueueName, QueueDeclaration>> = {
  events: queue('events', { function: 'ingest', batchSize: 1 }, { function: 'deadLetter', batchSize: 10 }),
  items: queue('items', { function: 'worker', batchSize: 10 }, { function: 'deadLetter', batchSize: 10 }),
  aggregate: queue('aggregate', { function: 'aggregate', batchSize: 1 }),
};

export const QUEUE_NAMES = Object.keys(QUEUES) as QueueName[];

/** Every queue's name from a name prefix: `<prefix>-events`, `<prefix>-events-dlq`, … */
export function queueNames(prefix: string): Record<QueueName, { queue: string; deadLetter: string }> {
  return Object.fromEntries(
    QUEUE_NAMES.map((name) => [
      name,
      { queue: prefix + QUEUES[name].nameSuffix, deadLetter: prefix + QUEUES[name].deadLetter.nameSuffix },
    ]),
  ) as Record<QueueName, { queue: string; deadLetter: string }>;
}
