/**
 * The token bucket of a provider+model's declared limits (requests and tokens per minute): its
 * levels, refill, what a call needs and how long it must wait. Pure arithmetic on a state the
 * `RateLimitStore` keeps (in memory locally, in DynamoDB for a fleet).
 */
import type { RateLimit, RateNeed } from '../../../model/limits.js';
import type { CompletionRequest } from '../../../model/provider.js';

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
export const refillPerMs = (perMinute: number) => (PACE * perMinute) / 60_000;

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
