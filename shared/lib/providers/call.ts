/**
 * The one way tasks call a model: cache lookup, then the provider under `withRetry`, then a
 * cache store. Identical calls (same provider, model, messages and parameters) are paid once.
 */
import { createHash } from 'node:crypto';
import type { Completion, CompletionRequest, LlmProvider } from '../../model/provider.js';
import type { LlmCache } from '../../ports/ports.js';
import type { ModelLimiter } from './rate-limit/limiter.js';
import { type RetryInfo, type Sleep, withRetry } from './retry.js';

export interface CallOptions {
  cache?: LlmCache;
  /**
   * Who is paying (e.g. `<runId>/<itemId>`), stored with the answer. A later hit by the same
   * payer is the answer it already paid for (a run killed before it logged the result, then
   * resumed): it keeps its cost. A hit by anyone else is free and reports `savedUsd`.
   */
  payer?: string;
  /**
   * Which stored answers this call may use. `any` (default): any answer to the same call that
   * ended normally, and the payer's own answer whatever it says. `own`: only the payer's own
   * (a suite with `run.cache: false`: it never reuses another call's answer, but an item that is
   * resumed still finds what it paid for). Either way every answer paid for is stored, with its
   * payer, before it is returned.
   */
  reuse?: 'any' | 'own';
  /** Total attempts per call, retryable errors only. Default 5. */
  maxAttempts?: number;
  signal?: AbortSignal;
  sleep?: Sleep;
  random?: () => number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /**
   * The provider+model's rate limiter: each attempt waits there for a slot, its requests and
   * tokens, and any retry-after (see `rate-limit/limiter.ts`). Cache hits never reach it.
   */
  limiter?: ModelLimiter;
  /** Before each retry wait (e.g. to make a worker pool back off on 429s). */
  onRetry?: (info: RetryInfo) => void;
  /**
   * A failing cache never fails the call (the answer is paid for either way); the failure is
   * reported here. Default: `console.warn`.
   */
  onCacheError?: (error: unknown, operation: 'get' | 'put') => void;
}

/** Bump when the key's contents change, so old entries stop matching instead of lying. */
const CACHE_KEY_VERSION = 'assay.llm-cache.v1';

/** JSON with object keys sorted at every depth and `undefined` members dropped. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(v).sort()) sorted[key] = (v as Record<string, unknown>)[key];
    return sorted;
  });
}

/**
 * The cache key of a call: SHA-256 (hex) of the canonical JSON of everything that shapes the
 * answer: provider id, the endpoint when it is not the vendor's default (`provider.endpoint`: a
 * local server answering as `openai:` is not OpenAI), model, system, history, prompt,
 * temperature, maxTokens, jsonSchema, and the sample number of a repeated call (from 2 on: the
 * first sample keeps the plain call's key). A call to a default endpoint has no endpoint in its
 * key, so it keeps the key it had before endpoints were keyed.
 *
 * The key is of the canonical request, as the family built it: its data sections' tags carry
 * the mark (`<reply_nonce>`) that each adapter replaces with a random word of that call only as
 * it sends the request (`withTagNonce`, tag-nonce.ts). So no two calls send the same tag names,
 * yet the same item's call has the same key every time and keeps hitting the cache (and the
 * batch lane, which keys its calls here too, finds the answers its batches stored).
 */
export function cacheKey(provider: LlmProvider, request: CompletionRequest): string {
  const material = canonicalJson({
    v: CACHE_KEY_VERSION,
    provider: provider.id,
    endpoint: provider.endpoint,
    model: request.model,
    system: request.system,
    history: request.history,
    prompt: request.prompt,
    temperature: request.temperature,
    maxTokens: request.maxTokens,
    jsonSchema: request.jsonSchema,
    rawCompletion: request.rawCompletion,
    sample: request.sample !== undefined && request.sample > 1 ? request.sample : undefined,
  });
  return createHash('sha256').update(material).digest('hex');
}

/**
 * Where an answer only its payer may reuse is stored: the call's key, salted with the payer. A
 * truncated answer, a refusal, or any answer of a suite that does not share answers is still
 * money spent: a resumed item finds it here and counts it, instead of paying again.
 */
export function ownKey(key: string, payer: string): string {
  return createHash('sha256').update(`${key}\n${payer}`).digest('hex');
}

/**
 * Calls in flight, by cache: a second identical call made while the first is still running
 * waits for it instead of paying again (duplicate rows in a dataset, concurrent runs).
 */
const inFlight = new WeakMap<LlmCache, Map<string, Promise<Completion>>>();

/**
 * Calls `provider` with caching and retries. A cache hit returns the stored completion with
 * `cached: true`, `costUsd: 0`, `savedUsd` (what it cost when first paid) and the lookup's
 * latency; a hit on an answer the same `payer` bought keeps its cost instead. A miss calls the
 * provider through `withRetry` and stores the completion before returning it: under the call's
 * key when it finished normally (`finishReason: 'stop'`) and answers may be shared, else under
 * the payer's own key ({@link ownKey}), where only that payer finds it. Simulated providers
 * bypass the cache. Errors: see `withRetry`.
 */
export async function callModel(
  provider: LlmProvider,
  request: CompletionRequest,
  options: CallOptions = {},
): Promise<Completion> {
  const cache = provider.simulated ? undefined : options.cache;
  const onCacheError =
    options.onCacheError ??
    ((error, operation) => console.warn(`LLM cache ${operation} failed, calling without it:`, error));
  const key = cache ? cacheKey(provider, request) : undefined;

  if (cache && key) {
    const started = performance.now();
    let hit: Completion | undefined;
    try {
      hit = await lookup(cache, key, options);
    } catch (error) {
      onCacheError(error, 'get');
    }
    if (hit) {
      const latencyMs = performance.now() - started;
      if (options.payer !== undefined && hit.paidBy === options.payer)
        return { ...hit, cached: true, latencyMs };
      return { ...hit, cached: true, costUsd: 0, savedUsd: hit.costUsd, latencyMs };
    }
    // Answers that are not shared are not shared while in flight either.
    if (options.reuse === 'own') return callAndStore(provider, request, options, cache, key, onCacheError);
    let calls = inFlight.get(cache);
    if (!calls) {
      calls = new Map();
      inFlight.set(cache, calls);
    }
    const pending = calls.get(key);
    if (pending) {
      const shared = await pending;
      return {
        ...shared,
        cached: true,
        costUsd: 0,
        savedUsd: shared.costUsd,
        latencyMs: performance.now() - started,
      };
    }
    const call = callAndStore(provider, request, options, cache, key, onCacheError);
    calls.set(key, call);
    try {
      return await call;
    } finally {
      calls.delete(key);
    }
  }
  return callAndStore(provider, request, options, undefined, undefined, onCacheError);
}

async function callAndStore(
  provider: LlmProvider,
  request: CompletionRequest,
  options: CallOptions,
  cache: LlmCache | undefined,
  key: string | undefined,
  onCacheError: (error: unknown, operation: 'get' | 'put') => void,
): Promise<Completion> {
  const { limiter, signal } = options;
  const attempt = limiter
    ? (n: number) => limiter.run(request, () => provider.complete(request, signal), signal, n)
    : () => provider.complete(request, signal);
  const completion = await withRetry(attempt, {
    maxAttempts: options.maxAttempts ?? 5,
    baseDelayMs: options.baseDelayMs,
    maxDelayMs: options.maxDelayMs,
    sleep: options.sleep,
    random: options.random,
    signal: options.signal,
    onRetry: options.onRetry,
  });

  const { payer } = options;
  const shared = completion.finishReason === 'stop' && options.reuse !== 'own';
  if (cache && key && (shared || payer !== undefined)) {
    // What the vendor said of its limits then is no part of the answer.
    const stored = completion.learnedLimits ? { ...completion, learnedLimits: undefined } : completion;
    try {
      if (payer === undefined) await cache.put(key, stored);
      else await cache.put(shared ? key : ownKey(key, payer), { ...stored, paidBy: payer });
    } catch (error) {
      onCacheError(error, 'put');
    }
  }
  return completion;
}

/**
 * The stored answer this call may use: the shared one (answers that ended normally), then the
 * payer's own. Under `reuse: 'own'` only the payer's own.
 */
async function lookup(cache: LlmCache, key: string, options: CallOptions): Promise<Completion | undefined> {
  const { payer } = options;
  if (options.reuse !== 'own') {
    const hit = await cache.get(key);
    if (hit) return hit;
  }
  return payer === undefined ? undefined : cache.get(ownKey(key, payer));
}
