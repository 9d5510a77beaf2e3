/**
 * How soon SQS delivers again a record a handler failed. Left alone, a failed record comes back
 * when its queue's visibility timeout runs out: six times the function's timeout, half an hour
 * on the work queues. Instead, each failed record's visibility is set to a backoff in seconds
 * that grows with its receives, so that a vendor's burst of 429s or a few seconds of throttling
 * cost a record seconds, and a longer outage is waited out with fewer and fewer receives.
 *
 * The schedule: before its next receive, a record received `n` times waits between half and
 * all of `min(cap, base × 2^(n-1))` seconds, the half above the floor drawn at random so that
 * records failed together do not all come back together. With the defaults (base 2 s, cap
 * 300 s) the waits are 1–2 s, 2–4 s, 4–8 s, … 128–256 s, then 150–300 s each. The floor keeps
 * a known least time before a record runs out of receives: with the layout's receive budget
 * (14 receives, shared/lib/layout/queues.ts) a record is retried for 16.75–33.5 minutes before
 * it moves to the dead-letter queue, so an outage of a quarter of an hour costs no item.
 *
 * A function whose records take a lease on what they work on (an ingest chunk, an aggregation
 * step) gives the lease up when an attempt fails, so its record comes back on the same
 * schedule. Only a record whose attempt could not give its lease up (`LeaseKeptError`) waits
 * at least that lease: sooner, it would find its work held by its own failed attempt, and be
 * skipped.
 *
 * A backoff never lengthens a wait: a record whose backoff reaches its queue's visibility
 * timeout is left to that timeout. Setting a visibility may fail (the receipt expired, SQS
 * unreachable): the record then comes back after the visibility timeout, as it would have
 * anyway; nothing is lost.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  GetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { ConfigError } from '../shared/model/errors.js';

export interface RetryBackoff {
  /** The ceiling of the first wait, seconds; it doubles with each receive. */
  baseSeconds: number;
  /** The ceiling no wait passes, seconds. */
  capSeconds: number;
}

export const RETRY_BACKOFF: RetryBackoff = { baseSeconds: 2, capSeconds: 300 };

/** The longest visibility timeout SQS accepts, seconds. */
const MAX_VISIBILITY_SECONDS = 43_200;

/** Entries per ChangeMessageVisibilityBatch request (SQS's limit). */
const BATCH_ENTRIES = 10;

/** The ceiling of the wait after a record's `receiveCount`th receive, seconds. */
export function backoffCeilingSeconds(receiveCount: number, backoff: RetryBackoff = RETRY_BACKOFF): number {
  const n = Math.max(1, Math.floor(receiveCount));
  // 2^(n-1) overflows to Infinity long after the cap is reached; min() keeps the cap.
  return Math.min(backoff.capSeconds, backoff.baseSeconds * 2 ** (n - 1));
}

/**
 * The wait after a record's `receiveCount`th receive, whole seconds (a visibility timeout is
 * one): half its ceiling, plus up to as much again at random.
 */
export function retryDelaySeconds(
  receiveCount: number,
  backoff: RetryBackoff = RETRY_BACKOFF,
  random: () => number = Math.random,
): number {
  const ceiling = backoffCeilingSeconds(receiveCount, backoff);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * How long a record that fails every time keeps being retried, seconds: from its first failed
 * receive to its last, the `maxReceiveCount`th (the receive after that moves it to the
 * dead-letter queue). The least when every wait is at its floor, the most at its ceiling.
 */
export function retrySpanSeconds(
  maxReceiveCount: number,
  backoff: RetryBackoff = RETRY_BACKOFF,
): { least: number; most: number } {
  let least = 0;
  let most = 0;
  for (let n = 1; n < maxReceiveCount; n += 1) {
    least += retryDelaySeconds(n, backoff, () => 0);
    most += retryDelaySeconds(n, backoff, () => 1);
  }
  return { least, most };
}

/**
 * The schedule a container uses: the defaults, or ASSAY_RETRY_BASE_SECONDS and
 * ASSAY_RETRY_CAP_SECONDS (whole seconds; a test shortens them). A bad value fails the cold start.
 */
export function retryBackoffFromEnv(env: NodeJS.ProcessEnv): RetryBackoff {
  const seconds = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1 || value > MAX_VISIBILITY_SECONDS)
      throw new ConfigError(
        `${name} must be a whole number of seconds, 1–${MAX_VISIBILITY_SECONDS}; got ${raw}`,
      );
    return value;
  };
  const baseSeconds = seconds('ASSAY_RETRY_BASE_SECONDS', RETRY_BACKOFF.baseSeconds);
  const capSeconds = seconds('ASSAY_RETRY_CAP_SECONDS', Math.max(RETRY_BACKOFF.capSeconds, baseSeconds));
  if (capSeconds < baseSeconds)
    throw new ConfigError(
      `ASSAY_RETRY_CAP_SECONDS (${capSeconds}) must be at least ASSAY_RETRY_BASE_SECONDS (${baseSeconds})`,
    );
  return { baseSeconds, capSeconds };
}

/**
 * A queue's URL from its ARN (`arn:<partition>:sqs:<region>:<account>:<name>`), as the SQS
 * endpoint of its region names it. A client with an endpoint of its own (moto) sends its
 * requests there whatever the URL's host; SQS itself reads the account and name from the path.
 */
export function queueUrlOf(queueArn: string): string {
  const [, partition, service, region, account, name] = queueArn.split(':');
  if (service !== 'sqs' || !region || !account || !name) throw new Error(`not an SQS queue ARN: ${queueArn}`);
  const domain = partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com';
  return `https://sqs.${region}.${domain}/${account}/${name}`;
}

export interface RetryBackoffsOptions {
  sqs: SQSClient;
  backoff?: RetryBackoff;
  /** Default `Math.random`, looked up at each draw (the capacity model seeds it). */
  random?: () => number;
  /** A visibility that could not be set or read: the record keeps its visibility timeout. */
  onError?: (error: unknown, queueUrl: string) => void;
}

/**
 * Sets failed records' visibility to their backoff. One per container: it keeps each queue's
 * visibility timeout once read (a read that fails is tried again on the next batch).
 */
export class RetryBackoffs {
  private readonly visibility = new Map<string, Promise<number>>();

  constructor(private readonly options: RetryBackoffsOptions) {}

  get backoff(): RetryBackoff {
    return this.options.backoff ?? RETRY_BACKOFF;
  }

  /**
   * Gives each of `records` (failed ones) its backoff, never less than `leastSeconds` gives a
   * record by its message id (one whose failed attempt kept a lease); never throws.
   */
  async delay(records: readonly SQSRecord[], leastSeconds?: ReadonlyMap<string, number>): Promise<void> {
    const byQueue = new Map<string, SQSRecord[]>();
    for (const record of records) {
      const list = byQueue.get(record.eventSourceARN);
      if (list) list.push(record);
      else byQueue.set(record.eventSourceARN, [record]);
    }
    await Promise.all([...byQueue].map(([arn, list]) => this.delayOn(arn, list, leastSeconds)));
  }

  private async delayOn(
    queueArn: string,
    records: SQSRecord[],
    leastSeconds?: ReadonlyMap<string, number>,
  ): Promise<void> {
    let queueUrl = queueArn;
    try {
      queueUrl = queueUrlOf(queueArn);
      const timeout = await this.visibilityOf(queueUrl);
      const random = this.options.random ?? (() => Math.random());
      const entries = records.flatMap((record, i) => {
        const seconds = Math.max(
          leastSeconds?.get(record.messageId) ?? 0,
          retryDelaySeconds(Number(record.attributes.ApproximateReceiveCount), this.backoff, random),
        );
        return seconds < timeout
          ? [{ Id: `r${i}`, ReceiptHandle: record.receiptHandle, VisibilityTimeout: seconds }]
          : [];
      });
      for (let i = 0; i < entries.length; i += BATCH_ENTRIES) {
        const out = await this.options.sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: entries.slice(i, i + BATCH_ENTRIES),
          }),
        );
        for (const failed of out.Failed ?? [])
          this.options.onError?.(new Error(`${failed.Code}: ${failed.Message ?? ''}`), queueUrl);
      }
    } catch (error) {
      this.options.onError?.(error, queueUrl);
    }
  }

  private visibilityOf(queueUrl: string): Promise<number> {
    let read = this.visibility.get(queueUrl);
    if (!read) {
      read = this.options.sqs
        .send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['VisibilityTimeout'] }))
        .then(({ Attributes }) => {
          const seconds = Number(Attributes?.VisibilityTimeout);
          if (!Number.isFinite(seconds)) throw new Error(`${queueUrl} has no VisibilityTimeout attribute`);
          return seconds;
        });
      read.catch(() => this.visibility.delete(queueUrl));
      this.visibility.set(queueUrl, read);
    }
    return read;
  }
}
