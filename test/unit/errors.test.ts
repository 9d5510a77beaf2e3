/**
 * The error hierarchy: every error class sits under one root per concern, keeps its name and
 * message, and says by itself whether a retry can help (`retryable`) or never can (`permanent`).
 */
import { describe, expect, it } from 'vitest';
import { InvalidItemMessageError, QueueSendError } from '../../shared/adapters/aws/sqs-work-queue.js';
import { CorruptLineError } from '../../shared/adapters/local/jsonl.js';
import { GateSyntaxError } from '../../shared/lib/gate.js';
import { PromptError } from '../../shared/lib/prompts/prompts.js';
import { PriceTableError } from '../../shared/lib/providers/pricing.js';
import { RateLimitSyntaxError } from '../../shared/lib/providers/rate-limit/spec.js';
import { StoredDataError } from '../../shared/model/codec.js';
import {
  AssayError,
  BlobChangedError,
  ConfigError,
  ConflictError,
  DeferredError,
  InputError,
  NotFoundError,
  ProviderError,
  RunExistsError,
  RunNotFoundError,
  ServiceError,
  StoppedError,
  SweepExistsError,
  SweepNotFoundError,
} from '../../shared/model/errors.js';
import {
  MissingCredentialsError,
  RetriesExhaustedError,
  UnknownProviderError,
} from '../../shared/model/provider-errors.js';
import { SuiteError } from '../../shared/model/suite-base.js';
import { TaskRegistryError } from '../../shared/registry/registry.js';
import { BudgetExceededError, DeferredCall } from '../../shared/use-cases/score-item.js';

describe('error hierarchy', () => {
  it('puts each error under its root, keeps its name and message, and says whether it is permanent', () => {
    const cases: [Error, new (...args: never[]) => AssayError, string, boolean][] = [
      [new SuiteError('bad suite'), InputError, 'SuiteError', true],
      [new PromptError('no prompt'), InputError, 'PromptError', true],
      [new GateSyntaxError('bad gate'), InputError, 'GateSyntaxError', true],
      [new StoredDataError('bad record'), InputError, 'StoredDataError', true],
      [new CorruptLineError('/x.jsonl', 3, 'oops'), InputError, 'CorruptLineError', true],
      [new InvalidItemMessageError('not JSON'), InputError, 'InvalidItemMessageError', true],
      [new UnknownProviderError('who?'), InputError, 'UnknownProviderError', true],
      [new TaskRegistryError('two families'), ConfigError, 'TaskRegistryError', true],
      [
        new MissingCredentialsError('openai:gpt-4o', ['OPENAI_API_KEY']),
        ConfigError,
        'MissingCredentialsError',
        true,
      ],
      [new PriceTableError('bad prices'), ConfigError, 'PriceTableError', true],
      [new RateLimitSyntaxError('bad limit'), ConfigError, 'RateLimitSyntaxError', true],
      [new RunNotFoundError('r1'), NotFoundError, 'RunNotFoundError', false],
      [new SweepNotFoundError('s1'), NotFoundError, 'SweepNotFoundError', false],
      [new BlobChangedError('datasets/x.csv'), ConflictError, 'BlobChangedError', false],
      [new QueueSendError('failed', []), ServiceError, 'QueueSendError', false],
      [new BudgetExceededError('spent'), StoppedError, 'BudgetExceededError', false],
      [new RunExistsError('r1'), ConflictError, 'RunExistsError', false],
      [new SweepExistsError('s1'), ConflictError, 'SweepExistsError', false],
      [
        new DeferredCall('key', { model: 'm', prompt: 'p' }, 'openai:m'),
        DeferredError,
        'DeferredCall',
        false,
      ],
    ];
    for (const [error, root, name, permanent] of cases) {
      expect(error, name).toBeInstanceOf(root);
      expect(error, name).toBeInstanceOf(AssayError);
      expect(error.name).toBe(name);
      expect((error as AssayError).permanent, name).toBe(permanent);
    }
    expect(new RunNotFoundError('r1').message).toBe('run r1 does not exist');
    expect(new QueueSendError('failed', []).retryable).toBe(true);
    // Deferred work waits; it is not a fault a retry could fix.
    expect(new DeferredCall('key', { model: 'm', prompt: 'p' }, 'openai:m').retryable).toBe(false);
  });

  it('a provider error is retryable for throttling and outages, permanent for a refused key or request', () => {
    const of = (kind: ProviderError['kind']) => new ProviderError('failed', kind, 'openai:gpt-4o', 500);
    expect([of('rate_limit'), of('server'), of('timeout'), of('network')].map((e) => e.retryable)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect([of('auth'), of('bad_request')].map((e) => [e.retryable, e.permanent])).toEqual([
      [false, true],
      [false, true],
    ]);
    const exhausted = new RetriesExhaustedError(of('server'), 3);
    expect(exhausted).toBeInstanceOf(ProviderError);
    expect(exhausted.name).toBe('RetriesExhaustedError');
    expect(exhausted.retryable).toBe(true);
  });
});
