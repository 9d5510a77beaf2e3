/**
 * Pieces every vendor adapter shares: turning HTTP failures into `ProviderError`s and building
 * the normalised `Completion`. Vendor-specific error classes are recognised in each adapter.
 */

import { ProviderError, type ProviderErrorKind } from '../../model/errors.js';
import type { Completion, FinishReason, TokenUsage } from '../../model/provider.js';
import { kindFromStatus } from '../../model/provider-errors.js';
import { redactKnownSecrets } from '../../model/secrets.js';
import { costOf, type PriceTable } from './pricing.js';
import { headerGetter, parseRetryAfterMs } from './retry.js';

/** Default per-request timeout of every vendor adapter. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** What every vendor adapter is given, beside its own settings. */
export interface VendorProviderOptions {
  /** `vendor:model` */
  id: string;
  prices: PriceTable;
  /** Per request; default 60 s. */
  timeoutMs?: number;
}

/**
 * The finish reason of a Claude-style answer (Anthropic's Messages API, Bedrock's Converse API),
 * where structured output is one forced tool call. `refusals` are the vendor's own stop reasons
 * for an answer it declined to give.
 */
export function claudeFinishReason(
  reason: string | null | undefined,
  answeredWithTool: boolean,
  refusals: ReadonlySet<string>,
): FinishReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'tool_use':
      // The forced tool call is how a structured answer ends normally.
      return answeredWithTool ? 'stop' : 'other';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    default:
      return reason != null && refusals.has(reason) ? 'refusal' : 'other';
  }
}

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

/**
 * The normalised completion, with cost from the price table. Every vendor adapter (and the
 * batch lane, which parses through the same adapters) builds its answers here: the one door by
 * which a model's text enters the product. A model that echoes a key it was shown (a prompt
 * quoting a config, a proxy adding headers to the answer) has it redacted here
 * (the keys this process holds, model/secrets.ts), before the answer is cached, scored, stored or written into a report.
 */
export function buildCompletion(args: {
  providerId: string;
  text: string;
  finishReason: FinishReason;
  usage: TokenUsage;
  latencyMs: number;
  prices: PriceTable;
  simulated?: boolean;
}): Completion {
  const cost = costOf(args.prices, args.providerId, args.usage);
  return {
    text: redactKnownSecrets(args.text),
    finishReason: args.finishReason,
    usage: args.usage,
    costUsd: cost.usd,
    ...(cost.priced ? {} : { priced: false as const }),
    latencyMs: args.latencyMs,
    cached: false,
    simulated: args.simulated ?? false,
    providerId: args.providerId,
  };
}

/**
 * The error classes the OpenAI and Anthropic SDKs share (both are generated by Stainless, with
 * the same hierarchy): passed in so this file imports neither SDK.
 */
export interface StainlessErrorClasses {
  APIConnectionTimeoutError: new (...args: never[]) => Error;
  APIUserAbortError: new (...args: never[]) => Error;
  APIConnectionError: new (...args: never[]) => Error & { cause?: unknown };
  APIError: new (...args: never[]) => Error & { status?: number; headers?: Headers };
}

/** Maps an OpenAI/Anthropic SDK failure to a ProviderError (or the caller's abort reason). */
export function stainlessProviderError(
  sdk: StainlessErrorClasses,
  providerId: string,
  error: unknown,
  signal: AbortSignal | undefined,
): unknown {
  const aborted = callerAbortReason(signal);
  if (aborted !== undefined) return aborted;
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return transportProviderError(providerId, 'timeout', error.message, error);
  }
  if (error instanceof sdk.APIUserAbortError) {
    return transportProviderError(providerId, 'unknown', error.message, error);
  }
  if (error instanceof sdk.APIConnectionError) {
    return transportProviderError(providerId, 'network', errorMessage(error.cause ?? error), error);
  }
  if (error instanceof sdk.APIError) {
    return httpProviderError(providerId, error.status, headerGetter(error.headers), error.message, error);
  }
  if (error instanceof SyntaxError) return malformedResponseError(providerId, error.message, error);
  if (isAbortError(error)) return transportProviderError(providerId, 'timeout', errorMessage(error), error);
  if (error instanceof TypeError) {
    // undici reports a connection dropped mid-body as a TypeError ("terminated").
    return transportProviderError(providerId, 'network', errorMessage(error), error);
  }
  return error;
}
