/**
 * The limiter of one provider+model in one process: the adaptive ceiling on calls in flight
 * ({@link Aimd}), the token bucket behind the {@link RateLimitStore} port (taken per call in one
 * process, leased in stretches by a fleet: {@link FleetBucket}), a local share of the limit
 * while the store cannot answer ({@link StoreFallback}), the server's retry-after for every
 * caller of the model, the limits the vendor reports, and a watch that hands a stalled call's
 * slot on.
 */
import { ProviderError } from '../../../model/errors.js';
import type { BackendLimit, RateLimit, RateNeed } from '../../../model/limits.js';
import type { CompletionRequest, LearnedLimits } from '../../../model/provider.js';
import type { RateLimitStore } from '../../../ports/ports.js';
import { defaultSleep, type Sleep } from '../retry.js';
import { Aimd } from './aimd.js';
import { estimateCallTokens, stricter } from './bucket.js';
import { BLIP_RETRY_MS, type FallbackHooks, StoreFallback } from './fallback.js';
import { FleetBucket } from './fleet.js';
import { exhaustedWaitMs, learnedRateLimit, vendorUsed } from './learned-limits.js';
import type { Slots } from './slots.js';

const sameLimit = (a: RateLimit | undefined, b: RateLimit | undefined) =>
  a?.rpm === b?.rpm && a?.tpm === b?.tpm;
export interface ModelLimiterOptions extends FallbackHooks {
  store: RateLimitStore;
  /**
   * The most processes (worker containers) that share the store's buckets at once. Given, the
   * limiter leases stretches of a sharded bucket ({@link FleetBucket}) instead of taking per
   * call, and while the store cannot answer keeps to the limit divided by it. Without it the
   * process owns its buckets (the local shell): a take per call, and the whole limit on a
   * failing store.
   */
  fleetSize?: number;
  /** Ceiling of the adaptive concurrency. Default 256 (the most a suite may ask for). */
  maxConcurrency?: number;
  now?: () => number;
  sleep?: Sleep;
  /** Random source of the waits that spread a fleet out (tests). Default `Math.random`. */
  random?: () => number;
  /**
   * A learned limit could not be recorded in or read from the store: it still holds this
   * process. A store that cannot give out the bucket itself is an episode instead (see
   * {@link FallbackHooks}). Default: a JSON warning on stderr.
   */
  onStoreError?: (error: unknown, key: string) => void;
  /** Timers for the stall watch (tests run it on a simulated clock). Default: the global ones. */
  timers?: Timers;
}

/** The two timer functions the stall watch uses. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const globalTimers: Timers = {
  setTimeout: (callback, ms) => {
    const timer = setTimeout(callback, ms);
    // The watch never keeps a process alive: the call it watches does.
    timer.unref?.();
    return timer;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * How many of the latest answers (answered calls and 429s) the throttle share is taken over,
 * and the share above which a 429 means the model is over its limit. Below it, 429s are noise
 * (a vendor refuses a few calls at any load): the refused call waits out its own retry-after
 * and retries, but the window and everyone else carry on. Over 100 answers a 4% rate of such
 * refusals reaches 10% about once in 600 tries.
 */
export const THROTTLE_SAMPLE = 100;
export const THROTTLE_SHARE = 0.1;
/** Until this many answers were seen, every 429 counts as the model being over its limit. */
export const THROTTLE_MIN_SAMPLE = 20;

/**
 * A 429 on this attempt of a call (its second retry) means the model is over its limit whatever
 * the share says: random refusals at a few percent refuse one call's attempts again and again
 * only about once in tens of thousands of calls, while a call left to retry alone under a real
 * limit is refused until its attempts run out and its item is lost.
 */
export const REFUSED_RETRY_ATTEMPT = 3;

/** A call is not counted as progressing once it has run this many times the usual latency… */
export const STALL_FACTOR = 4;
/** …nor ever before this long (ms), */
export const MIN_STALL_MS = 5_000;
/** …and before any call has answered, after this long (ms). */
export const FIRST_STALL_MS = 20_000;

/**
 * The limiter of one provider+model in one process: every call to that model waits here for a
 * slot under the adaptive ceiling, then for its requests and tokens from the bucket, and for any
 * retry-after the server gave. Without a declared limit only the ceiling and retry-after apply,
 * and an admitted call costs two counter updates.
 */
export class ModelLimiter {
  /** The declared limit (the suite's and ASSAY_LIMITS, the stricter per axis). */
  limit: RateLimit | undefined;
  /**
   * The limit the vendor reported on its latest answer that carried one (or that the store
   * recorded for the fleet). The bucket holds calls to the stricter of this and `limit`.
   */
  learned: RateLimit | undefined;
  /** The suite's own limit `limit` was merged from (RateLimiters compares it, not the merge). */
  suiteLimit: BackendLimit | undefined;
  /**
   * The slots of a declared `concurrency`, shared with the other backends its key names: each
   * attempt holds one while it is out. Undefined: only the adaptive window bounds the calls.
   */
  slots: Slots | undefined;
  readonly aimd: Aimd;
  /** Calls holding a slot of the window: admitted, and not (yet) past the latency budget. */
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private pausedUntil = 0;
  /** 429s this limiter saw (for reports and benchmarks). */
  throttles = 0;
  /** Calls that ran past the latency budget and gave their slot up (for reports and benchmarks). */
  stalls = 0;
  /** Counted calls whose attempt is out, by token, with when it was sent (in sending order). */
  private readonly sent = new Map<object, number>();
  /** Calls out past the budget: no longer counted, their slot already handed on. */
  private readonly overdue = new Set<object>();
  /** The latest answers, 1 for a 429 and 0 for an answer (a ring), and how many 429s it holds. */
  private readonly recent = new Uint8Array(THROTTLE_SAMPLE);
  private recentCount = 0;
  private recentNext = 0;
  private recentThrottled = 0;
  /** The usual latency of an answered call (ms, a moving average); undefined before the first. */
  private typicalMs: number | undefined;
  private watch: unknown;
  /** Whether the store was asked for a limit learned elsewhere (another worker, an earlier run). */
  private askedStore = false;
  private asking: Promise<void> | undefined;
  /** When the latest calls went out while no limit was known (a ring, the last second's). */
  private readonly unmetered: number[] = [];
  private readonly timers: Timers;
  private readonly now: () => number;
  private readonly sleep: Sleep;
  /** The store's health, and the local share kept to while it cannot answer. */
  readonly fallback: StoreFallback;
  /** This process's share of a fleet's bucket (with `fleetSize`); undefined: a take per call. */
  readonly fleet: FleetBucket | undefined;

  constructor(
    readonly key: string,
    limit: RateLimit | undefined,
    private readonly options: ModelLimiterOptions,
  ) {
    this.limit = limit;
    this.aimd = new Aimd(options.maxConcurrency ?? 256);
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? defaultSleep;
    this.timers = options.timers ?? globalTimers;
    const random = options.random ?? Math.random;
    this.fallback = new StoreFallback(key, options.fleetSize ?? 1, random, options);
    this.fleet =
      options.fleetSize === undefined
        ? undefined
        : new FleetBucket({
            key,
            store: options.store,
            now: this.now,
            sleep: this.sleep,
            random,
            fallback: this.fallback,
          });
  }

  /** What the bucket holds calls to: the stricter of the declared and the learned limit. */
  get effectiveLimit(): RateLimit | undefined {
    return this.learned === undefined ? this.limit : stricter(this.limit, this.learned);
  }

  /** Calls counted against the window now. */
  get active(): number {
    return this.inFlight;
  }

  /** Calls still out past the latency budget (not counted). */
  get overdueCalls(): number {
    return this.overdue.size;
  }

  /**
   * How long an answer may take before its call stops counting against the window: a hung
   * call (the server never answers; the client gives up only at its timeout) must not hold a
   * slot that a window cut by 429s has few of. {@link STALL_FACTOR} times the usual latency,
   * at least {@link MIN_STALL_MS}.
   */
  get latencyBudgetMs(): number {
    if (this.typicalMs === undefined) return FIRST_STALL_MS;
    return Math.max(MIN_STALL_MS, Math.ceil(STALL_FACTOR * this.typicalMs));
  }

  /**
   * Runs one attempt of a call under the limits: a slot of the declared `concurrency` first
   * (when there is one), then the window and the bucket. A 429 cuts the ceiling and pauses the
   * model for its retry-after.
   */
  async run<T>(
    request: CompletionRequest,
    attempt: () => Promise<T>,
    signal?: AbortSignal,
    /** Which attempt of the call this is (1-based): a call refused again and again is no noise. */
    attemptNo = 1,
  ): Promise<T> {
    const slots = this.slots;
    if (slots === undefined) return this.runInWindow(request, attempt, signal, attemptNo);
    await slots.take();
    try {
      return await this.runInWindow(request, attempt, signal, attemptNo);
    } finally {
      slots.give();
    }
  }

  private async runInWindow<T>(
    request: CompletionRequest,
    attempt: () => Promise<T>,
    signal: AbortSignal | undefined,
    attemptNo: number,
  ): Promise<T> {
    // A waiter is handed its slot already counted (see release), so nobody overtakes it.
    if (this.waiting.length === 0 && this.inFlight < this.aimd.allowed) this.inFlight += 1;
    else {
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        this.armWatch();
      });
    }
    const epoch = this.aimd.epoch;
    const token = {};
    let sentAt: number | undefined;
    try {
      // Without a limit (declared, learned or in the store) or a pause, nothing to wait for: no
      // further promise.
      if (
        this.limit !== undefined ||
        this.learned !== undefined ||
        this.pausedUntil > 0 ||
        (!this.askedStore && this.options.store.learned !== undefined)
      )
        await this.admit(request, signal);
      sentAt = this.now();
      this.sent.set(token, sentAt);
      if (this.learned === undefined && this.limit === undefined) this.noteUnmetered(sentAt);
      if (this.waiting.length > 0) this.armWatch();
      const value = await attempt();
      const learned = (value as { learnedLimits?: LearnedLimits } | undefined)?.learnedLimits;
      if (learned !== undefined) this.learn(learned);
      this.answered(this.now() - sentAt);
      this.heard(0);
      this.aimd.succeeded();
      return value;
    } catch (error) {
      if (error instanceof ProviderError && error.kind === 'rate_limit')
        this.throttled(epoch, error.retryAfterMs, attemptNo >= REFUSED_RETRY_ATTEMPT);
      throw error;
    } finally {
      // An overdue call handed its slot on when it became overdue.
      if (!this.overdue.delete(token)) {
        this.sent.delete(token);
        this.release();
      }
    }
  }

  /**
   * What a vendor said about its limits on an answer. A limit it reports (new, or changed) holds
   * the bucket from now on; the first one also starts the bucket in debt by the calls the
   * vendor still counts (sent before any limit was known, which the vendor meters by the second
   * as it does every call): without it, a bucket born full would add its refill to the calls
   * of that first second. An axis with nothing left holds every call until one unit refills.
   */
  learn(learned: LearnedLimits): void {
    const exhausted = exhaustedWaitMs(learned);
    if (exhausted > 0) this.pausedUntil = Math.max(this.pausedUntil, this.now() + exhausted);
    const limit = learnedRateLimit(learned);
    if (limit === undefined || sameLimit(limit, this.learned)) return;
    const first = this.effectiveLimit === undefined;
    this.learned = limit;
    const store = this.options.store;
    if (!store.learn) return;
    let debt: RateNeed | undefined;
    if (first) {
      debt = vendorUsed(learned);
      debt.requests = Math.max(debt.requests, this.unmeteredInLastSecond());
    }
    store
      .learn(this.key, limit, this.effectiveLimit!, debt)
      .catch((error: unknown) => (this.options.onStoreError ?? warnStoreError)(error, this.key));
  }

  /** Keeps the times of calls sent without a limit, over the last second. */
  private noteUnmetered(at: number): void {
    this.unmetered.push(at);
    if (this.unmetered.length > 64 && this.unmetered[0]! <= at - 1_000) {
      const keep = this.unmetered.findIndex((t) => t > at - 1_000);
      this.unmetered.splice(0, keep === -1 ? this.unmetered.length : keep);
    }
  }

  private unmeteredInLastSecond(): number {
    const since = this.now() - 1_000;
    let n = 0;
    for (let i = this.unmetered.length - 1; i >= 0 && this.unmetered[i]! > since; i--) n += 1;
    this.unmetered.length = 0;
    return n;
  }

  /** Once per limiter: adopts a limit the store learned before (another worker, an earlier run). */
  private async askStore(): Promise<void> {
    try {
      const learned = await this.options.store.learned?.(this.key);
      if (learned !== undefined && this.learned === undefined) this.learned = learned;
    } catch (error) {
      (this.options.onStoreError ?? warnStoreError)(error, this.key);
    } finally {
      this.askedStore = true;
    }
  }

  /** Frees a slot, and starts as many waiters as the ceiling now allows. */
  private release(): void {
    this.inFlight -= 1;
    this.startWaiters();
  }

  private startWaiters(): void {
    while (this.waiting.length > 0 && this.inFlight < this.aimd.allowed) {
      this.inFlight += 1;
      this.waiting.shift()!();
    }
    if (this.waiting.length === 0) this.disarmWatch();
  }

  /** Feeds the usual latency: a moving average over about the last 20 answers. */
  private answered(latencyMs: number): void {
    this.typicalMs =
      this.typicalMs === undefined ? latencyMs : this.typicalMs + (latencyMs - this.typicalMs) / 20;
  }

  /**
   * While calls wait for a slot, watches the oldest call out: when it passes the latency budget
   * it (and any other past it) stops counting, and a waiter takes its slot.
   */
  private armWatch(): void {
    if (this.watch !== undefined) return;
    const oldest = this.sent.values().next();
    if (oldest.done) return;
    const dueIn = Math.max(0, oldest.value + this.latencyBudgetMs - this.now());
    this.watch = this.timers.setTimeout(() => {
      this.watch = undefined;
      this.expireOverdue();
      this.startWaiters();
      if (this.waiting.length > 0) this.armWatch();
    }, dueIn);
  }

  private disarmWatch(): void {
    if (this.watch === undefined) return;
    this.timers.clearTimeout(this.watch);
    this.watch = undefined;
  }

  private expireOverdue(): void {
    const cutoff = this.now() - this.latencyBudgetMs;
    for (const [token, sentAt] of this.sent) {
      if (sentAt > cutoff) break; // sent in order: the rest are younger
      this.sent.delete(token);
      this.overdue.add(token);
      this.inFlight -= 1;
      this.stalls += 1;
    }
  }

  /** Adds one answer to the ring of recent ones (1: a 429). */
  private heard(throttled: 0 | 1): void {
    if (this.recentCount === THROTTLE_SAMPLE) this.recentThrottled -= this.recent[this.recentNext]!;
    else this.recentCount += 1;
    this.recent[this.recentNext] = throttled;
    this.recentThrottled += throttled;
    this.recentNext = (this.recentNext + 1) % THROTTLE_SAMPLE;
  }

  /** The share of 429s among the latest answers. */
  get throttleShare(): number {
    return this.recentCount === 0 ? 0 : this.recentThrottled / this.recentCount;
  }

  /**
   * A 429. When 429s are more than {@link THROTTLE_SHARE} of the latest answers (or too few
   * answers were seen to tell), or a call is refused on its {@link REFUSED_RETRY_ATTEMPT}rd
   * attempt, the model is over its limit: the window is cut and every caller waits out the
   * retry-after. Otherwise only the refused call waits (its retry).
   */
  private throttled(epoch: number, retryAfterMs: number | undefined, retried: boolean): void {
    this.throttles += 1;
    this.heard(1);
    if (!retried && this.recentCount >= THROTTLE_MIN_SAMPLE && this.throttleShare <= THROTTLE_SHARE) return;
    this.aimd.throttled(epoch, this.inFlight);
    if (retryAfterMs !== undefined && retryAfterMs > 0)
      this.pausedUntil = Math.max(this.pausedUntil, this.now() + retryAfterMs);
  }

  /**
   * Waits out a pause, then for this call's requests and tokens: from the fleet's leases, or
   * taken from the bucket; while the store cannot answer, from the local share.
   */
  private async admit(request: CompletionRequest, signal?: AbortSignal): Promise<void> {
    if (!this.askedStore && this.options.store.learned !== undefined) {
      this.asking ??= this.askStore();
      await this.asking;
    }
    for (;;) {
      const pause = this.pausedUntil - this.now();
      if (pause > 0) {
        await this.sleep(pause, signal);
        continue;
      }
      this.pausedUntil = 0;
      const limit = this.effectiveLimit;
      if (!limit) return;
      const need = { requests: 1, tokens: limit.tpm === undefined ? 0 : estimateCallTokens(request) };
      if (this.fleet) return this.fleet.admit(limit, need, signal);
      const now = this.now();
      const { fallback } = this;
      if (fallback.share && !fallback.claimRetry(now)) {
        // Closed from the retry moment until the try is answered (another call may be making it).
        const open = fallback.shareOpen(now);
        const wait = open ? fallback.share.wait(limit, need, now) : undefined;
        if (wait === 0) return;
        const until = open
          ? Math.min(wait!, fallback.shareClosesAt - now)
          : Math.min(fallback.nextRetryAt - now, BLIP_RETRY_MS);
        await this.sleep(Math.max(1, Math.ceil(until)), signal);
        continue;
      }
      let wait: number;
      try {
        wait = await this.options.store.take(this.key, limit, need);
        this.fallback.answered(this.now());
      } catch (error) {
        const retryAt = this.fallback.failed(error, limit, this.now());
        // In an episode the local share admits the call; a blip waits for the next try.
        if (!this.fallback.share) await this.sleep(Math.max(1, Math.ceil(retryAt - this.now())), signal);
        continue;
      }
      if (wait <= 0) return;
      await this.sleep(wait, signal);
    }
  }
}

function warnStoreError(err: unknown, key: string): void {
  const error = err instanceof Error ? { name: err.name, message: err.message } : { message: String(err) };
  console.warn(
    JSON.stringify({
      level: 'WARN',
      message: 'learned rate limit not shared with the store (it still holds this process)',
      key,
      error,
    }),
  );
}
