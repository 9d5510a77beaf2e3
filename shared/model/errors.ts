/**
 * Assay's errors. Every error Assay raises is an {@link AssayError} under one root per concern,
 * and says by itself what a caller may do with it:
 *
 * - `permanent`: no retry can fix it; the suite, dataset, prompt, file or configuration must
 *   change (ingest rejects the upload instead of retrying it).
 * - `retryable`: the same call may succeed later (a throttled model, a queue that failed to take
 *   a message).
 *
 * Adapters translate their vendor's errors (DynamoDB condition failures, S3 missing keys, a
 * missing file) into these, so the core never looks at a vendor's error. Callers tell the
 * concerns apart by class (`instanceof NotFoundError`). Pure: imports only the redaction of
 * secrets (secrets.ts), which every provider error passes through.
 */

import { redactedError, redactSecrets } from './secrets.js';

export abstract class AssayError extends Error {
  override readonly name: string = 'AssayError';
  /** The same call may succeed if tried again later. */
  readonly retryable: boolean = false;
  /** No retry can fix it: something the user gave must change. */
  readonly permanent: boolean = false;
}

/** Something the user gave is wrong: a dataset, suite, prompt or file, or data stored from one. */
export class InputError extends AssayError {
  override readonly name: string = 'InputError';
  override readonly permanent: boolean = true;
}

/** The environment or a setting is wrong: a variable, a price table, a limit, a missing key. */
export class ConfigError extends AssayError {
  override readonly name: string = 'ConfigError';
  override readonly permanent: boolean = true;
}

/** A run, sweep or object that does not exist. */
export class NotFoundError extends AssayError {
  override readonly name: string = 'NotFoundError';
}

/** A conditional write lost: the record exists already, or another caller claimed it first. */
export class ConflictError extends AssayError {
  override readonly name: string = 'ConflictError';
}

/**
 * The work is not done yet, on purpose: it waits for something that will come (a model call
 * whose answer a vendor batch gives later) and is tried again then. Not a failure: nothing is
 * recorded for it, no retry loop retries it, and ingest never rejects an upload for it.
 */
export class DeferredError extends AssayError {
  override readonly name: string = 'DeferredError';
}

/** A storage, queue or local-cloud service failed; trying again may work. */
export class ServiceError extends AssayError {
  override readonly name: string = 'ServiceError';
  override readonly retryable: boolean = true;
}

/**
 * A failed attempt could not give up the lease it took (an ingest chunk's, an aggregation
 * step's): what it worked on stays held until the lease lapses, so its retry must come no
 * sooner than `leaseMs` (a retry before would find it held and be skipped). The attempt's own
 * error is the cause.
 */
export class LeaseKeptError extends ServiceError {
  override readonly name = 'LeaseKeptError';
  constructor(
    readonly leaseMs: number,
    cause: unknown,
  ) {
    super(`${cause instanceof Error ? cause.message : String(cause)} (and its lease could not be given up)`, {
      cause,
    });
  }
}

/** Gives up the lease of a failed attempt (`release`), then throws its error: a {@link LeaseKeptError} if the release failed. */
export async function releasingOnFailure<T>(
  work: () => Promise<T>,
  release: () => Promise<void>,
  leaseMs: number,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const released = await release().then(
      () => true,
      () => false,
    );
    // A permanent error is not retried at all: it goes on as it is.
    throw released || (error instanceof AssayError && error.permanent)
      ? error
      : new LeaseKeptError(leaseMs, error);
  }
}

export type ProviderErrorKind =
  | 'rate_limit' // 429
  | 'server' // 5xx, overloaded
  | 'timeout' // request timed out
  | 'network' // connection refused/reset
  | 'auth' // 401/403, missing key
  | 'bad_request' // 400/404/422: the request itself is wrong
  | 'unknown';

const RETRYABLE: ReadonlySet<ProviderErrorKind> = new Set(['rate_limit', 'server', 'timeout', 'network']);
const PERMANENT: ReadonlySet<ProviderErrorKind> = new Set(['auth', 'bad_request']);

/**
 * A model call failed. Whether it is worth retrying is decided here, once, from the failure
 * kind (see `kindFromStatus` in providers/errors.ts); callers only read `retryable`.
 */
export class ProviderError extends AssayError {
  override readonly name: string = 'ProviderError';
  override readonly retryable: boolean;
  override readonly permanent: boolean;

  constructor(
    message: string,
    readonly kind: ProviderErrorKind,
    readonly providerId: string,
    readonly status?: number,
    /** Server-advised wait before the next attempt (retry-after / retry-after-ms), if any. */
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    // A vendor's error body may echo the request's key: neither the message nor the cause
    // carries it on (see secrets.ts). A cause that is one of ours was redacted when it was made.
    super(
      redactSecrets(message),
      options?.cause === undefined
        ? undefined
        : { cause: options.cause instanceof AssayError ? options.cause : redactedError(options.cause) },
    );
    this.retryable = RETRYABLE.has(kind);
    this.permanent = PERMANENT.has(kind);
  }
}

/** Work stopped on purpose (a spent budget): not a fault, and not retried in the same run. */
export class StoppedError extends AssayError {
  override readonly name: string = 'StoppedError';
}

/** An operation on a run that has no record. */
export class RunNotFoundError extends NotFoundError {
  override readonly name: string = 'RunNotFoundError';

  constructor(
    readonly runId: string,
    message = `run ${runId} does not exist`,
  ) {
    super(message);
  }
}

/** An operation on a sweep that has no record. */
export class SweepNotFoundError extends NotFoundError {
  override readonly name: string = 'SweepNotFoundError';

  constructor(
    readonly sweepId: string,
    message = `sweep ${sweepId} not found`,
  ) {
    super(message);
  }
}

/** A second create of a run that exists already (`RunStore.createRun`). */
export class RunExistsError extends ConflictError {
  override readonly name: string = 'RunExistsError';

  constructor(
    readonly runId: string,
    message = `run ${runId} exists already`,
  ) {
    super(message);
  }
}

/** A second create of a sweep that exists already (`SweepStore.createSweep`). */
export class SweepExistsError extends ConflictError {
  override readonly name: string = 'SweepExistsError';

  constructor(
    readonly sweepId: string,
    message = `sweep ${sweepId} exists already`,
  ) {
    super(message);
  }
}

/**
 * An object read at a version it no longer has: it was replaced since (a dataset uploaded again
 * while a run was reading it). A run reads one version of its dataset, or none.
 */
export class BlobChangedError extends ConflictError {
  override readonly name: string = 'BlobChangedError';

  constructor(
    readonly key: string,
    message = `${key} was replaced while it was being read`,
  ) {
    super(message);
  }
}
