/**
 * The one place provider calls are retried. Vendor SDKs are built with `maxRetries: 0` so that
 * attempts, waits and the give-up point are decided here and nowhere else.
 */

import { ProviderError } from '../../model/errors.js';
import { RetriesExhaustedError } from '../../model/provider-errors.js';

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface RetryInfo {
  /** The attempt that just failed (1-based). */
  attempt: number;
  /** How long we wait before the next attempt. */
  delayMs: number;
  error: ProviderError;
}

export interface RetryOptions {
  /** Total attempts including the first (≥ 1). */
  maxAttempts: number;
  /** First backoff ceiling; doubles per attempt. Default 500 ms. */
  baseDelayMs?: number;
  /** Upper bound on any single wait, server-advised or computed. Default 30 s. */
  maxDelayMs?: number;
  /** Injected for tests; defaults to an abortable `setTimeout`. */
  sleep?: Sleep;
  /** Injected for tests; defaults to `Math.random`. Used for full jitter only. */
  random?: () => number;
  /** Aborting stops the waiting and the retrying; the abort reason is thrown. */
  signal?: AbortSignal;
  /** Called before each wait (e.g. to slow a worker pool down on 429s). */
  onRetry?: (info: RetryInfo) => void;
}

/** `setTimeout` as a promise that rejects with the signal's reason when aborted. */
export const defaultSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * The wait before attempt `attempt + 1`: the server's `retryAfterMs` when it gave one, else
 * exponential backoff with full jitter (a uniform draw in [0, base·2^(attempt−1)]), both capped
 * by `maxDelayMs`.
 */
export function retryDelayMs(
  error: ProviderError,
  attempt: number,
  opts: { baseDelayMs: number; maxDelayMs: number; random: () => number },
): number {
  if (error.retryAfterMs !== undefined && error.retryAfterMs >= 0) {
    return Math.min(error.retryAfterMs, opts.maxDelayMs);
  }
  const ceiling = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(opts.random() * ceiling);
}

/**
 * Runs `fn` until it succeeds, retrying only `ProviderError`s whose `retryable` is true.
 * Anything else (a permanent provider error, a bug, an abort) is thrown at once, unchanged.
 * When every attempt failed, throws a {@link RetriesExhaustedError} (a `ProviderError` of the
 * last failure's kind, with `attempts` and the last failure as `cause`).
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const { maxAttempts, signal, onRetry } = options;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new RangeError(`maxAttempts must be an integer ≥ 1, got ${maxAttempts}`);
  }
  const backoff = {
    baseDelayMs: options.baseDelayMs ?? 500,
    maxDelayMs: options.maxDelayMs ?? 30_000,
    random: options.random ?? Math.random,
  };
  const sleep = options.sleep ?? defaultSleep;

  for (let attempt = 1; ; attempt++) {
    if (signal?.aborted) throw signal.reason;
    try {
      return await fn(attempt);
    } catch (error) {
      if (!(error instanceof ProviderError) || !error.retryable) throw error;
      if (signal?.aborted) throw signal.reason;
      if (attempt >= maxAttempts) throw new RetriesExhaustedError(error, attempt);
      const delayMs = retryDelayMs(error, attempt, backoff);
      onRetry?.({ attempt, delayMs, error });
      await sleep(delayMs, signal);
    }
  }
}

/**
 * Reads the server's advised wait from `retry-after-ms` (milliseconds) or `retry-after`
 * (delta-seconds or an HTTP date). Undefined when absent or unparseable.
 */
export function parseRetryAfterMs(
  header: (name: string) => string | null | undefined,
  now: number = Date.now(),
): number | undefined {
  const ms = header('retry-after-ms');
  if (ms) {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = header('retry-after')?.trim();
  if (!after) return undefined;
  if (/^\d+(\.\d+)?$/.test(after)) return Number(after) * 1000;
  const date = Date.parse(after);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** A header getter over the shapes SDKs hand back (`Headers`, a plain record, or nothing). */
export function headerGetter(
  headers: Headers | Record<string, string | string[] | undefined> | null | undefined,
): (name: string) => string | undefined {
  return (name) => {
    if (!headers) return undefined;
    if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
    const record = headers as Record<string, string | string[] | undefined>;
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    const value = key === undefined ? undefined : record[key];
    return Array.isArray(value) ? value[0] : value;
  };
}
