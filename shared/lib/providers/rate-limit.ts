/**
 * Rate limits as part of a backend: the declared requests and tokens per minute of a
 * provider+model, a token bucket that holds calls to them, and an adaptive ceiling on the calls
 * in flight (AIMD: halved on a 429, raised by one per window of successes) that also honours
 * the server's retry-after for every caller of that model, not only the one that got it.
 *
 * One {@link ModelLimiter} per provider+model per process ({@link RateLimiters}); the bucket
 * itself lives behind the {@link RateLimitStore} port, in memory locally and in DynamoDB on AWS,
 * so the whole fleet of workers shares one budget.
 */

import { ConfigError, ProviderError } from '../../model/errors.js';
import type { RateLimit, RateNeed } from '../../model/limits.js';
import type { CompletionRequest, LearnedAxis, LearnedLimits } from '../../model/provider.js';
import { resolveProviderId } from '../../model/provider-ids.js';
import type { RateLimitStore } from '../../ports/ports.js';
import { defaultSleep, type Sleep } from './retry.js';

/** A bucket's levels at a moment (epoch ms). Levels may be negative after a call larger than the burst. */
export interface BucketState {
  requests: number;
  tokens: number;
  at: number;
}

/**
 * The share of a declared limit a bucket refills at. Vendors meter a per-minute limit by the
 * second, over a sliding window (3,000 RPM: at most 50 in any second); a bucket lets through its
 * burst plus a second of refill in any second, so it refills at 98% and holds the other 2% of a
 * second's rate as its burst (at least one request): never more than the limit in any second.
 */
export const PACE = 0.98;

/**
 * The burst a bucket holds: the headroom left of one second of the limit, at least 1. A minute's
 * worth would let a fresh bucket fire 3,000 requests at once, which vendors refuse.
 */
export function burstOf(perMinute: number): number {
  return Math.max(1, ((1 - PACE) * perMinute) / 60);
}

/** What a bucket refills per millisecond. */
const refillPerMs = (perMinute: number) => (PACE * perMinute) / 60_000;

/** A full bucket at `now`. */
export function fullBucket(limit: RateLimit, now: number): BucketState {
  return {
    requests: limit.rpm === undefined ? 0 : burstOf(limit.rpm),
    tokens: limit.tpm === undefined ? 0 : burstOf(limit.tpm),
    at: now,
  };
}

/**
 * The levels at `now`: what the time since `state.at` added, capped at the burst plus one
 * millisecond of refill. Waits are whole milliseconds, so a waiter arrives with a fraction of a
 * request to spare; capping at the burst alone would throw that fraction away every time and
 * pace a few per cent slow. The extra fraction never adds a whole request to any second.
 */
export function refill(state: BucketState, limit: RateLimit, now: number): BucketState {
  const elapsed = Math.max(0, now - state.at);
  const level = (value: number, perMinute: number | undefined) =>
    perMinute === undefined
      ? 0
      : Math.min(burstOf(perMinute) + refillPerMs(perMinute), value + elapsed * refillPerMs(perMinute));
  return {
    requests: level(state.requests, limit.rpm),
    tokens: level(state.tokens, limit.tpm),
    at: Math.max(now, state.at),
  };
}

/**
 * How long (ms) until `state` (already refilled) can give `need`: 0 when it can now. A need
 * larger than the burst is granted once the bucket is full, and leaves it in debt.
 */
export function shortfallMs(state: BucketState, limit: RateLimit, need: RateNeed): number {
  const wait = (level: number, want: number, perMinute: number | undefined) => {
    if (perMinute === undefined || want <= 0) return 0;
    const missing = Math.min(want, burstOf(perMinute)) - level;
    return missing <= 0 ? 0 : Math.ceil(missing / refillPerMs(perMinute));
  };
  return Math.max(wait(state.requests, need.requests, limit.rpm), wait(state.tokens, need.tokens, limit.tpm));
}

/** `state` after giving `need` (call only when {@link shortfallMs} is 0). */
export function taken(state: BucketState, limit: RateLimit, need: RateNeed): BucketState {
  return {
    requests: limit.rpm === undefined ? 0 : state.requests - need.requests,
    tokens: limit.tpm === undefined ? 0 : state.tokens - need.tokens,
    at: state.at,
  };
}

/** `state` holding no more than its burst less `debt`, per axis (a bucket in debt refills first). */
export function inDebt(state: BucketState, limit: RateLimit, debt: RateNeed): BucketState {
  const lower = (level: number, perMinute: number | undefined, owed: number) =>
    perMinute === undefined ? level : Math.min(level, burstOf(perMinute) - owed);
  return {
    requests: lower(state.requests, limit.rpm, debt.requests),
    tokens: lower(state.tokens, limit.tpm, debt.tokens),
    at: state.at,
  };
}

/**
 * Tokens a call may count against a TPM limit, estimated without a tokenizer (the hot path):
 * a quarter of the characters sent, plus `maxTokens` (what OpenAI's limiter reserves).
 */
export function estimateCallTokens(request: CompletionRequest): number {
  let chars = request.prompt.length + (request.system?.length ?? 0);
  if (request.history) for (const turn of request.history) chars += turn.content.length;
  return Math.ceil(chars / 4) + (request.maxTokens ?? 0);
}

/** The stricter of two limits, axis by axis. */
export function stricter(a: RateLimit | undefined, b: RateLimit | undefined): RateLimit | undefined {
  if (!a) return b;
  if (!b) return a;
  const min = (x?: number, y?: number) => (x === undefined ? y : y === undefined ? x : Math.min(x, y));
  return { rpm: min(a.rpm, b.rpm), tpm: min(a.tpm, b.tpm) };
}

/** Reads one response header by its (lower-case) name. */
export type HeaderReader = (name: string) => string | null | undefined;

const DURATION_UNITS_MS: Record<string, number> = {
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
  us: 1e-3,
  µs: 1e-3,
  ns: 1e-6,
};

/**
 * A duration as OpenAI writes its resets (`6m0s`, `1m30.5s`, `1s`, `250ms`, `1h2m`) in
 * milliseconds; undefined for anything else (a bare number is read as seconds).
 */
export function parseResetDuration(text: string | null | undefined): number | undefined {
  const value = text?.trim();
  if (!value) return undefined;
  if (/^\d+(?:\.\d+)?$/.test(value)) return Number(value) * 1000;
  if (!/^(?:\d+(?:\.\d+)?(?:h|ms|m|s|us|µs|ns))+$/.test(value)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of value.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g))
    ms += Number(amount) * DURATION_UNITS_MS[unit!]!;
  return Number.isFinite(ms) ? ms : undefined;
}

/** A non-negative finite number from a header, else undefined. */
function headerNumber(text: string | null | undefined): number | undefined {
  const value = text?.trim();
  if (!value || !/^\d+(?:\.\d+)?$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/** One axis from its three headers; undefined without a positive limit. Garbage parts are dropped. */
function learnedAxis(
  limit: string | null | undefined,
  remaining: string | null | undefined,
  resetMs: number | undefined,
): LearnedAxis | undefined {
  const max = headerNumber(limit);
  if (max === undefined || max <= 0) return undefined;
  const axis: LearnedAxis = { limit: max };
  const left = headerNumber(remaining);
  if (left !== undefined) axis.remaining = Math.min(left, max);
  if (resetMs !== undefined && Number.isFinite(resetMs)) axis.resetMs = Math.max(0, resetMs);
  return axis;
}

const withAxes = (requests?: LearnedAxis, tokens?: LearnedAxis): LearnedLimits | undefined =>
  requests || tokens ? { ...(requests ? { requests } : {}), ...(tokens ? { tokens } : {}) } : undefined;

/**
 * OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (resets as durations), as
 * OpenAI-compatible servers that meter (OpenRouter, Together, some vLLM proxies) also send them.
 */
export function openAiLearnedLimits(header: HeaderReader): LearnedLimits | undefined {
  const axis = (name: 'requests' | 'tokens') =>
    learnedAxis(
      header(`x-ratelimit-limit-${name}`),
      header(`x-ratelimit-remaining-${name}`),
      parseResetDuration(header(`x-ratelimit-reset-${name}`)),
    );
  return withAxes(axis('requests'), axis('tokens'));
}

/**
 * Anthropic's `anthropic-ratelimit-requests-{limit,remaining,reset}` and the token axes (resets
 * as RFC 3339 times, read against `now`). Tokens: `anthropic-ratelimit-tokens-*` (the most
 * restrictive token limit in force), else the input-token limit, which is what a call mostly
 * spends.
 */
export function anthropicLearnedLimits(header: HeaderReader, now = Date.now()): LearnedLimits | undefined {
  const reset = (name: string) => {
    const text = header(`anthropic-ratelimit-${name}-reset`)?.trim();
    const at = text ? Date.parse(text) : Number.NaN;
    return Number.isNaN(at) ? undefined : at - now;
  };
  const axis = (name: string) =>
    learnedAxis(
      header(`anthropic-ratelimit-${name}-limit`),
      header(`anthropic-ratelimit-${name}-remaining`),
      reset(name),
    );
  return withAxes(axis('requests'), axis('tokens') ?? axis('input-tokens'));
}

/** Whichever vendor's rate-limit headers a response carries (OpenAI's first); undefined for none. */
export function learnedLimitsFromHeaders(header: HeaderReader, now = Date.now()): LearnedLimits | undefined {
  return openAiLearnedLimits(header) ?? anthropicLearnedLimits(header, now);
}

/** A window this much longer than a minute (from remaining and reset) means a longer-term limit. */
const LONG_WINDOW_MS = 120_000;

/**
 * The per-minute limit an axis stands for. Vendors name per-minute limits in these headers, but
 * an axis whose reset says its bucket refills slower than a minute's worth per minute (a daily
 * limit: 10,000 left of 10,000,000 and hours to reset) is a longer window: its per-minute rate
 * is what the reset implies.
 */
export function perMinuteOf(axis: LearnedAxis): number {
  if (axis.remaining === undefined || axis.resetMs === undefined) return axis.limit;
  const used = axis.limit - axis.remaining;
  if (used <= 0 || axis.resetMs <= 0) return axis.limit;
  const windowMs = (axis.resetMs * axis.limit) / used;
  return windowMs > LONG_WINDOW_MS ? (axis.limit * 60_000) / windowMs : axis.limit;
}

/** The limits learned from a response as a {@link RateLimit}; undefined when it carried none. */
export function learnedRateLimit(learned: LearnedLimits | undefined): RateLimit | undefined {
  if (!learned) return undefined;
  const limit: RateLimit = {};
  if (learned.requests) limit.rpm = perMinuteOf(learned.requests);
  if (learned.tokens) limit.tpm = perMinuteOf(learned.tokens);
  return limit.rpm === undefined && limit.tpm === undefined ? undefined : limit;
}

/** What the vendor's bucket had given out and not yet refilled, as of the response (0 when unsaid). */
export function vendorUsed(learned: LearnedLimits): RateNeed {
  const used = (axis?: LearnedAxis) =>
    axis?.remaining === undefined ? 0 : Math.max(0, axis.limit - axis.remaining);
  return { requests: used(learned.requests), tokens: used(learned.tokens) };
}

/**
 * How long (ms) to hold every call when the vendor says an axis has less than one unit left:
 * the time its bucket takes to refill one (its reset spread over what it has to refill).
 */
export function exhaustedWaitMs(learned: LearnedLimits): number {
  const wait = (axis?: LearnedAxis) => {
    if (!axis || axis.remaining === undefined || axis.remaining >= 1 || !axis.resetMs) return 0;
    const used = axis.limit - axis.remaining;
    return Math.ceil(used > 0 ? axis.resetMs / used : axis.resetMs);
  };
  return Math.max(wait(learned.requests), wait(learned.tokens));
}

const sameLimit = (a: RateLimit | undefined, b: RateLimit | undefined) =>
  a?.rpm === b?.rpm && a?.tpm === b?.tpm;

export class RateLimitSyntaxError extends ConfigError {
  override readonly name = 'RateLimitSyntaxError';
}

/**
 * Reads limits written as `id=3000rpm,2000000tpm;other-id=50rpm` (the `ASSAY_LIMITS` variable):
 * backends separated by `;`, each an id or alias, `=`, then comma-separated `<n>rpm` / `<n>tpm`.
 * Keys are resolved to `vendor:model`. Throws {@link RateLimitSyntaxError} naming the bad part.
 */
export function parseLimitSpec(text: string, source = 'ASSAY_LIMITS'): Record<string, RateLimit> {
  const out: Record<string, RateLimit> = {};
  for (const entry of text.split(';')) {
    if (!entry.trim()) continue;
    const eq = entry.lastIndexOf('=');
    const fail = (why: string): never => {
      throw new RateLimitSyntaxError(
        `${source}: "${entry.trim()}" ${why} (expected e.g. openai:gpt-4o-mini=3000rpm,2000000tpm; backends separated by ";")`,
      );
    };
    if (eq <= 0) fail('has no "=" between the backend and its limits');
    let id: string;
    try {
      id = resolveProviderId(entry.slice(0, eq)).id;
    } catch (error) {
      return fail(`names no known backend: ${(error as Error).message}`);
    }
    const limit: RateLimit = {};
    for (const part of entry.slice(eq + 1).split(',')) {
      const match = /^\s*(\d+(?:\.\d+)?)\s*(rpm|tpm)\s*$/i.exec(part);
      if (!match || Number(match[1]) <= 0)
        fail(`has "${part.trim()}", which is not a positive <n>rpm or <n>tpm`);
      limit[match![2]!.toLowerCase() as 'rpm' | 'tpm'] = Number(match![1]);
    }
    out[id] = stricter(out[id], limit)!;
  }
  return out;
}

/**
 * Limits declared in a suite (`run.limits`, keyed by id or alias) as a map by resolved id.
 * Computed once per suite object: the hot path looks a backend up in a Map.
 */
const resolvedSuiteLimits = new WeakMap<object, Map<string, RateLimit>>();
export function suiteLimitsById(suiteRun: { limits?: Record<string, RateLimit> }): Map<string, RateLimit> {
  let byId = resolvedSuiteLimits.get(suiteRun);
  if (!byId) {
    byId = new Map();
    for (const [key, limit] of Object.entries(suiteRun.limits ?? {})) {
      const id = resolveProviderId(key).id;
      byId.set(id, stricter(byId.get(id), limit)!);
    }
    resolvedSuiteLimits.set(suiteRun, byId);
  }
  return byId;
}

/**
 * Additive increase, multiplicative decrease of the calls allowed in flight, never below a
 * floor: a window of one turns every slow call into a stall of the whole model, so the floor
 * keeps the pipe busy (the retry-after pause still holds everyone back while the server asks).
 */
export class Aimd {
  /** Calls allowed in flight now (fractional: it grows by 1/limit per success). */
  limit: number;
  /** Bumped by each cut: a 429 from a call admitted before the last cut does not cut again. */
  epoch = 0;

  constructor(
    readonly max: number,
    public min = 1,
  ) {
    this.limit = max;
  }

  /** The window's floor for a caller that runs `concurrency` calls at once: an eighth of them, at least 1. */
  static floorFor(concurrency: number): number {
    return Math.max(1, Math.floor(concurrency / 8));
  }

  /** A call admitted at `epoch` was refused with a 429 while `inFlight` calls were out (itself included). */
  throttled(epoch: number, inFlight: number): void {
    if (epoch < this.epoch) return;
    this.limit = Math.max(this.min, Math.floor(Math.min(this.limit, inFlight) / 2));
    this.epoch += 1;
  }

  /** A call succeeded: one more slot per `limit` successes, up to `max`. */
  succeeded(): void {
    if (this.limit < this.max) this.limit = Math.min(this.max, this.limit + 1 / this.limit);
  }

  /** Whole calls allowed in flight. */
  get allowed(): number {
    return Math.max(this.min, Math.floor(this.limit));
  }
}

export interface ModelLimiterOptions {
  store: RateLimitStore;
  /** Ceiling of the adaptive concurrency. Default 256 (the most a suite may ask for). */
  maxConcurrency?: number;
  now?: () => number;
  sleep?: Sleep;
  /**
   * The bucket could not be read or written (DynamoDB down, throttled): the call goes on without
   * it (the adaptive concurrency still backs off on 429s), because a limiter must never lose
   * an item. Default: a JSON warning on stderr.
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
  suiteLimit: RateLimit | undefined;
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

  /** Runs one attempt of a call under the limits. A 429 cuts the ceiling and pauses the model for its retry-after. */
  async run<T>(
    request: CompletionRequest,
    attempt: () => Promise<T>,
    signal?: AbortSignal,
    /** Which attempt of the call this is (1-based): a call refused again and again is no noise. */
    attemptNo = 1,
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

  /** Waits out a pause, then takes this call's requests and tokens from the bucket. */
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
      let wait: number;
      try {
        wait = await this.options.store.take(this.key, limit, need);
      } catch (error) {
        (this.options.onStoreError ?? warnStoreError)(error, this.key);
        return;
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
      message: 'rate limit bucket unavailable, calling without it',
      key,
      error,
    }),
  );
}

/**
 * The limiters of a process, one per provider+model, shared by every run and item that calls
 * the model. `env` limits (`ASSAY_LIMITS`) and a suite's `run.limits` both apply: per axis the
 * stricter one wins.
 */
export class RateLimiters {
  private readonly byId = new Map<string, ModelLimiter>();
  readonly declared: Record<string, RateLimit>;

  constructor(private readonly options: ModelLimiterOptions & { env?: NodeJS.ProcessEnv }) {
    const spec = options.env?.ASSAY_LIMITS;
    this.declared = spec ? parseLimitSpec(spec) : {};
  }

  /**
   * The limiter for `providerId` (resolved `vendor:model`) under the suite's own limits. With
   * `concurrency` (the calls the caller runs at once), the window never drops below an eighth
   * of it ({@link Aimd.floorFor}).
   */
  for(providerId: string, suiteLimits?: Map<string, RateLimit>, concurrency?: number): ModelLimiter {
    const fromSuite = suiteLimits?.get(providerId);
    let limiter = this.byId.get(providerId);
    if (!limiter) {
      limiter = new ModelLimiter(providerId, stricter(this.declared[providerId], fromSuite), this.options);
      limiter.suiteLimit = fromSuite;
      this.byId.set(providerId, limiter);
    } else if (limiter.suiteLimit !== fromSuite) {
      // Another suite (or none) now calls this model: its limits apply from here on.
      limiter.suiteLimit = fromSuite;
      limiter.limit = stricter(this.declared[providerId], fromSuite);
    }
    if (concurrency !== undefined) limiter.aimd.min = Math.min(limiter.aimd.max, Aimd.floorFor(concurrency));
    return limiter;
  }

  /** Every limiter built so far. */
  all(): ModelLimiter[] {
    return [...this.byId.values()];
  }
}
