/**
 * Provider errors. Whether an error is worth retrying is decided here, once, from the status
 * code or the failure kind; callers only read `retryable`.
 */
import { ConfigError, InputError, ProviderError, type ProviderErrorKind } from './errors.js';

/** Maps an HTTP status to an error kind. One table for every vendor. */
export function kindFromStatus(status: number | undefined): ProviderErrorKind {
  if (status === undefined) return 'network';
  if (status === 408) return 'timeout';
  if (status === 429) return 'rate_limit';
  if (status === 529 || status >= 500) return 'server';
  if (status === 401 || status === 403) return 'auth';
  if (status >= 400) return 'bad_request';
  return 'unknown';
}

/** A provider id or alias that names no known vendor or model. Raised at suite load. */
export class UnknownProviderError extends InputError {
  override readonly name = 'UnknownProviderError';
}

/**
 * A provider needs a credential or endpoint variable that is not set. Raised when the provider
 * is created (suite load), never at call time. `variables` names what to set (any one of them).
 */
export class MissingCredentialsError extends ConfigError {
  override readonly name = 'MissingCredentialsError';

  constructor(
    readonly providerId: string,
    readonly variables: readonly string[],
    message = `${providerId} needs ${variables.join(' or ')} (or use a sim: backend)`,
  ) {
    super(message);
  }
}

/**
 * The last retryable error once `withRetry` has used every attempt. It is a `ProviderError` with
 * the same kind, status and provider as the last failure (so callers that branch on `kind` keep
 * working), adds `attempts`, and keeps the last failure as `cause`.
 */
export class RetriesExhaustedError extends ProviderError {
  constructor(
    readonly lastError: ProviderError,
    readonly attempts: number,
  ) {
    super(
      `${lastError.message} (gave up after ${attempts} attempts)`,
      lastError.kind,
      lastError.providerId,
      lastError.status,
      lastError.retryAfterMs,
      { cause: lastError },
    );
    // `name` is a literal on ProviderError; set the runtime value so logs and stacks say what this is.
    Object.defineProperty(this, 'name', { value: 'RetriesExhaustedError', enumerable: false });
  }
}
