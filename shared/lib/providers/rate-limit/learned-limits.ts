/**
 * The limits a vendor reports on each answer (its rate-limit response headers): read from
 * OpenAI's and Anthropic's headers, turned into a per-minute {@link RateLimit}, what the vendor
 * had given out, and how long an exhausted limit keeps refusing.
 */
import type { RateLimit, RateNeed } from '../../../model/limits.js';
import type { LearnedAxis, LearnedLimits } from '../../../model/provider.js';

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
