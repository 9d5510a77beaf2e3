/**
 * What a limiter does while its store cannot answer (an error, or DynamoDB throttling the
 * table): it paces its calls by its own share of the limit, never by no limit, says so once
 * per episode, and goes back to the shared bucket as soon as the store answers again.
 */
import type { RateLimit, RateNeed } from '../../../model/limits.js';
import { refillPerMs } from './bucket.js';

/**
 * A store that failed is tried again after about this long (ms), doubled for each failure in
 * a row, and the limiter falls back only once every try has failed for
 * {@link FALLBACK_AFTER_MS}: a store that throttles some requests at random answers the next
 * try, and a container that fell back while others still lease would add its share to theirs.
 */
export const BLIP_RETRY_MS = 250;
export const FALLBACK_AFTER_MS = 2_000;
/**
 * While falling back, the store is tried again at every multiple of this period (ms, epoch
 * time, so every container of a fleet tries at about the same moment)…
 */
export const FALLBACK_RETRY_MS = 10_000;
/**
 * …spread over this much (ms), so the fleet does not ask all at once. From the moment itself
 * until its try is answered a container sends nothing on its share: one that is back on the
 * bucket never overlaps with one still on its share.
 */
export const FALLBACK_RETRY_SPREAD_MS = 1_000;

/** Said once when a limiter falls back to its local share. */
export interface StoreFallbackEvent {
  key: string;
  error: unknown;
  /** The most containers sharing the bucket, and the share of the limit each now keeps to. */
  fleetSize: number;
  share: RateLimit;
}

/** Said once when the store answers again and the limiter is back on the shared bucket. */
export interface StoreRecoveredEvent {
  key: string;
  /** How long the episode lasted (ms) and how many calls went out on the local share. */
  fallbackMs: number;
  calls: number;
}

export interface FallbackHooks {
  /** Every try of the store failed for {@link FALLBACK_AFTER_MS}: this limiter keeps to its share. Once per episode. */
  onStoreFallback?: (event: StoreFallbackEvent) => void;
  /** The store answered again. Once per episode. */
  onStoreRecovered?: (event: StoreRecoveredEvent) => void;
}

/** A share of `limit` for one of `fleetSize` containers. */
export function shareOf(limit: RateLimit, fleetSize: number): RateLimit {
  return {
    ...(limit.rpm === undefined ? {} : { rpm: limit.rpm / fleetSize }),
    ...(limit.tpm === undefined ? {} : { tpm: limit.tpm / fleetSize }),
  };
}

/**
 * One container's share of a limit (the limit divided by the most containers the fleet may
 * have) at the bucket's pace and with no burst: one call per interval, the first at a random
 * point of it, so the shares of a whole fleet that falls back at once add up to at most the
 * limit and its first calls do not go out together. A call goes when its axes' next times have
 * come, then pushes them on by what it used.
 */
export class LocalShare {
  calls = 0;
  private requestsAt: number | undefined;
  private tokensAt: number | undefined;

  constructor(
    readonly fleetSize: number,
    private readonly startAt: number,
    /** Where in its first interval the share starts, in [0, 1). */
    private readonly phase: number,
  ) {}

  /** Milliseconds until a call needing `need` may go under `limit` (0: it goes now, and is counted). */
  wait(limit: RateLimit, need: RateNeed, now: number): number {
    const share = shareOf(limit, this.fleetSize);
    const interval = (units: number, perMinute: number | undefined) =>
      perMinute === undefined ? 0 : units / refillPerMs(perMinute);
    this.requestsAt ??= this.startAt + this.phase * interval(1, share.rpm);
    this.tokensAt ??= this.startAt + this.phase * interval(need.tokens, share.tpm);
    const at = Math.max(
      share.rpm === undefined ? now : this.requestsAt,
      share.tpm === undefined ? now : this.tokensAt,
    );
    if (at > now) return Math.ceil(at - now);
    // A wait is whole milliseconds: a call may come up to one late without the share drifting.
    if (share.rpm !== undefined)
      this.requestsAt = Math.max(this.requestsAt, now - 1) + interval(need.requests, share.rpm);
    if (share.tpm !== undefined)
      this.tokensAt = Math.max(this.tokensAt, now - 1) + interval(need.tokens, share.tpm);
    this.calls += 1;
    return 0;
  }

  /** Moves the share's schedule `ms` later (it was closed that long). */
  delay(ms: number): void {
    if (this.requestsAt !== undefined) this.requestsAt += ms;
    if (this.tokensAt !== undefined) this.tokensAt += ms;
  }
}

/**
 * The store's health as one limiter sees it. Failures are retried after growing waits from
 * ~{@link BLIP_RETRY_MS} (the calls wait meanwhile); when every try has failed for
 * {@link FALLBACK_AFTER_MS}, an episode starts: the limiter keeps to a {@link LocalShare} (said
 * once), tries the store at the fleet's next retry moment, and ends the episode (said once)
 * when it answers.
 */
export class StoreFallback {
  /** The share kept to while the store cannot answer; undefined while it can. */
  share: LocalShare | undefined;
  private failures = 0;
  private failingSince = 0;
  private since = 0;
  private retryAt = 0;
  /** The fleet's next retry moment: the share is closed from it until the try is answered. */
  private closesAt = 0;

  constructor(
    private readonly key: string,
    private readonly fleetSize: number,
    private readonly random: () => number,
    private readonly hooks: FallbackHooks,
  ) {}

  /**
   * The store failed at `now`: answers when to try it again. Starting an episode, the share
   * begins at `shareFrom` (in a fleet, after every lease the bucket may still have out).
   */
  failed(error: unknown, limit: RateLimit, now: number, shareFrom = now): number {
    if (this.failures === 0) this.failingSince = now;
    this.failures += 1;
    if (this.share === undefined && now - this.failingSince < FALLBACK_AFTER_MS)
      return now + BLIP_RETRY_MS * 2 ** (this.failures - 1) * (0.5 + this.random());
    if (this.share === undefined) {
      this.share = new LocalShare(this.fleetSize, Math.max(now, shareFrom), this.random());
      this.since = now;
      (this.hooks.onStoreFallback ?? warnFallback)({
        key: this.key,
        error,
        fleetSize: this.fleetSize,
        share: shareOf(limit, this.fleetSize),
      });
    }
    // Reopening after a failed try: the calls due while closed keep their places, later by
    // the time it was closed, rather than all going at once.
    else if (now > this.closesAt) this.share.delay(now - this.closesAt);
    this.closesAt = Math.floor(now / FALLBACK_RETRY_MS + 1) * FALLBACK_RETRY_MS;
    this.retryAt = this.closesAt + this.random() * FALLBACK_RETRY_SPREAD_MS;
    return this.retryAt;
  }

  /** While falling back: whether the share may send at `now` (not between a retry moment and its answer). */
  shareOpen(now: number): boolean {
    return this.share !== undefined && now < this.closesAt;
  }

  /** When the share closes for the next retry (epoch ms). */
  get shareClosesAt(): number {
    return this.closesAt;
  }

  /** The store answered (a lease, a take, or a refusal): an episode in progress ends. */
  answered(now: number): void {
    this.failures = 0;
    if (this.share === undefined) return;
    const calls = this.share.calls;
    this.share = undefined;
    (this.hooks.onStoreRecovered ?? noteRecovered)({ key: this.key, fallbackMs: now - this.since, calls });
  }

  /** While falling back: whether the store is due another try (claimed: asked again, false until the next). */
  claimRetry(now: number): boolean {
    if (this.share === undefined || now < this.retryAt) return false;
    this.retryAt = Number.POSITIVE_INFINITY;
    return true;
  }

  /** When the next try is due (epoch ms; infinite while one is out). */
  get nextRetryAt(): number {
    return this.retryAt;
  }
}

function errorFields(err: unknown): { name?: string; message: string } {
  return err instanceof Error ? { name: err.name, message: err.message } : { message: String(err) };
}

function warnFallback(event: StoreFallbackEvent): void {
  console.warn(
    JSON.stringify({
      level: 'WARN',
      message: "rate limit store unavailable: keeping to this process's share of the limit",
      key: event.key,
      fleetSize: event.fleetSize,
      share: event.share,
      error: errorFields(event.error),
    }),
  );
}

function noteRecovered(event: StoreRecoveredEvent): void {
  console.warn(
    JSON.stringify({
      level: 'INFO',
      message: 'rate limit store answers again: back to the shared bucket',
      ...event,
    }),
  );
}
