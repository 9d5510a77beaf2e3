/**
 * Pieces every vendor adapter shares: turning HTTP failures into `ProviderError`s and building
 * the normalised `Completion`. Vendor-specific error classes are recognised in each adapter.
 */
import { kindFromStatus, ProviderError, type ProviderErrorKind } from './errors.js';
import { costOf, type PriceTable } from './pricing.js';
import { parseRetryAfterMs } from './retry.js';
import type { Completion, FinishReason, TokenUsage } from './types.js';

/** Default per-request timeout of every vendor adapter. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** A ProviderError from an HTTP status and the response's headers. */
export function httpProviderError(
  providerId: string,
  status: number | undefined,
  header: (name: string) => string | null | undefined,
  message: string,
  cause: unknown,
  fallbackRetryAfterMs?: number,
): ProviderError {
  const kind = kindFromStatus(status);
  const retryAfterMs = parseRetryAfterMs(header) ?? fallbackRetryAfterMs;
  return new ProviderError(
    `${providerId}: HTTP ${status ?? '(none)'}: ${message.replace(/^\d{3}\s+/, '')}`,
    kind,
    providerId,
    status,
    retryAfterMs,
    { cause },
  );
}

/** A ProviderError without an HTTP response (timeout, refused connection, …). */
export function transportProviderError(
  providerId: string,
  kind: Extract<ProviderErrorKind, 'timeout' | 'network' | 'unknown'>,
  message: string,
  cause: unknown,
): ProviderError {
  return new ProviderError(`${providerId}: ${kind}: ${message}`, kind, providerId, undefined, undefined, {
    cause,
  });
}

/**
 * A 200 whose body is not the JSON the vendor documents. Retryable (kind `server`): it is
 * almost always a truncated or proxied response, not something the request caused.
 */
export function malformedResponseError(providerId: string, detail: string, cause?: unknown): ProviderError {
  return new ProviderError(
    `${providerId}: malformed response: ${detail}`,
    'server',
    providerId,
    200,
    undefined,
    cause === undefined ? undefined : { cause },
  );
}

/** True for the DOM/undici abort error shape (`fetch` rejected because a signal fired). */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

/** The caller's abort reason, if the caller aborted: it is thrown as is, never retried. */
export function callerAbortReason(signal: AbortSignal | undefined): unknown {
  if (!signal?.aborted) return undefined;
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Non-negative integer token count from whatever the vendor sent (absent → 0). */
export function tokens(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}

/** The normalised completion, with cost from the price table. */
export function buildCompletion(args: {
  providerId: string;
  text: string;
  finishReason: FinishReason;
  usage: TokenUsage;
  latencyMs: number;
  prices: PriceTable;
  simulated?: boolean;
}): Completion {
  return {
    text: args.text,
    finishReason: args.finishReason,
    usage: args.usage,
    costUsd: costOf(args.prices, args.providerId, args.usage).usd,
    latencyMs: args.latencyMs,
    cached: false,
    simulated: args.simulated ?? false,
    providerId: args.providerId,
  };
}
