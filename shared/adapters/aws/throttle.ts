import {
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ThrottlingException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';

/**
 * How a DynamoDB call that was throttled (or lost a race with a transaction on the same item)
 * is tried again here, in the caller, rather than by handing its work back to a queue: a
 * worker whose result write is refused for a moment waits milliseconds, not a visibility
 * timeout, and never lets an answer it paid for become a dead letter.
 */
export interface Backoff {
  /** Tries in all, the first included. Default 10: about ten seconds of waiting at most. */
  attempts?: number;
  /** The first wait's ceiling, ms; each later one doubles it, up to `capMs`. Default 50. */
  baseMs?: number;
  /** The longest wait, ms. Default 3,000. */
  capMs?: number;
  /** Waits (the global timers by default, so a simulated clock drives them too). */
  sleep?: (ms: number) => Promise<void>;
  /** A number in [0, 1): each wait is drawn between 0 and its ceiling ("full jitter"). */
  random?: () => number;
  /** Hears each retry (a metric, a log line). */
  onRetry?: (error: unknown, attempt: number) => void;
}

/**
 * True for the refusals that pass: a partition over its throughput, the account's request
 * limit, and a transaction cancelled only because an entry was throttled or in conflict with
 * another transaction (not because a condition failed, which no retry changes).
 */
export function isThrottled(error: unknown): boolean {
  if (
    error instanceof ProvisionedThroughputExceededException ||
    error instanceof ThrottlingException ||
    error instanceof RequestLimitExceeded
  )
    return true;
  if (!(error instanceof TransactionCanceledException)) return false;
  const codes = (error.CancellationReasons ?? []).map((reason) => reason.Code ?? 'None');
  return (
    codes.some((code) => code === 'ThrottlingError' || code === 'TransactionConflict') &&
    codes.every((code) => code === 'None' || code === 'ThrottlingError' || code === 'TransactionConflict')
  );
}

/** The global `setTimeout` as a promise (a simulated clock that replaces it drives these waits too). */
export const globalSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs `call`, again after a jittered, growing wait each time it is throttled (see {@link Backoff}). */
export async function retryThrottled<T>(call: () => Promise<T>, backoff: Backoff = {}): Promise<T> {
  const attempts = backoff.attempts ?? 10;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= attempts || !isThrottled(error)) throw error;
      backoff.onRetry?.(error, attempt);
      await pauseBeforeRetry(attempt, backoff);
    }
  }
}

/** The wait after the `attempt`th try: drawn between 0 and a ceiling that doubles each try, up to `capMs`. */
export function pauseBeforeRetry(attempt: number, backoff: Backoff = {}): Promise<void> {
  const { baseMs = 50, capMs = 3_000, random = Math.random } = backoff;
  const sleep = backoff.sleep ?? globalSleep;
  return sleep(Math.floor(random() * Math.min(capMs, baseMs * 2 ** (attempt - 1))));
}

/**
 * A pace a process's calls share: what they take averages at most `perSecond` units a second.
 * `take(units)` waits the caller's turn (the units taken before it due, evenly, from the first)
 * and books its own; `charge(units)` settles a call's booking once it is known what it took
 * (a Query's consumed capacity): more, and the next caller waits it out; less (negative), and
 * the next goes sooner, never before now. A rate of 0 or less never waits.
 */
export class Pace {
  /** When the units booked so far are all due (epoch ms). */
  private until = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly perSecond: number,
    private readonly now: () => number = Date.now,
    private readonly sleep: (ms: number) => Promise<void> = globalSleep,
  ) {}

  get paced(): boolean {
    return this.perSecond > 0;
  }

  async take(units: number): Promise<void> {
    if (!this.paced) return;
    const start = Math.max(this.now(), this.until);
    this.until = start + (units * 1000) / this.perSecond;
    const wait = start - this.now();
    if (wait > 0) await this.sleep(wait);
  }

  charge(units: number): void {
    if (this.paced) this.until = Math.max(this.now(), this.until + (units * 1000) / this.perSecond);
  }
}
