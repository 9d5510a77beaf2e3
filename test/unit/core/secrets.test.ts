/**
 * No secret leaves the process in a message: the keys this process holds, and credential-shaped
 * strings, are redacted from provider errors (their causes too), from recorded failures, and from
 * the error a provider secret that is not JSON raises.
 */
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import { loadProviderSecrets } from '../../../shared/adapters/aws/env.js';
import { httpProviderError } from '../../../shared/lib/providers/normalise.js';
import { requireVar } from '../../../shared/lib/providers/registry.js';
import { ProviderError } from '../../../shared/model/errors.js';
import { redactSecrets, rememberSecret } from '../../../shared/model/secrets.js';

describe('redactSecrets', () => {
  it.each([
    [
      'Incorrect API key provided: Bearer sk-test-SECRET123.',
      'Incorrect API key provided: Bearer [redacted].',
    ],
    ['key sk-proj-abcDEF123456 is invalid', 'key sk-[redacted] is invalid'],
    ['x-api-key: sk-ant-api03-XYZ987654', 'x-api-key: [redacted]'],
    ['{"api_key": "abcdef123456"}', '{"api_key": "[redacted]"}'],
    [
      'GET /v1beta/models?key=AIzaSyA1234567890abcdefghijkl&alt=sse',
      'GET /v1beta/models?key=[redacted]&alt=sse',
    ],
    ['plain text with a number 1234567890 stays', 'plain text with a number 1234567890 stays'],
  ])('%s', (input, expected) => {
    expect(redactSecrets(input)).toBe(expected);
  });

  it('replaces a key this process holds wherever it appears, whatever its shape', () => {
    rememberSecret('h0ldm3-n0-sh4pe-at-all');
    expect(redactSecrets('echo: h0ldm3-n0-sh4pe-at-all (twice: h0ldm3-n0-sh4pe-at-all)')).toBe(
      'echo: [redacted] (twice: [redacted])',
    );
  });

  it('remembers the keys a provider is built from', () => {
    requireVar({ SOME_KEY: 'zz-built-from-env-42' }, 'openai:x', ['SOME_KEY']);
    expect(redactSecrets('the body said zz-built-from-env-42')).toBe('the body said [redacted]');
  });
});

describe('provider errors', () => {
  it('carry neither the key in their message nor the vendor error with its body as their cause', () => {
    const vendor = Object.assign(new Error('401 Incorrect API key provided: Bearer sk-test-SECRET123'), {
      headers: { authorization: 'Bearer sk-test-SECRET123' },
      cause: new Error('upstream said sk-test-SECRET123'),
    });
    const error = httpProviderError('openai:gpt-4o-mini', 401, () => null, vendor.message, vendor);
    expect(error).toBeInstanceOf(ProviderError);
    const everything = JSON.stringify({
      message: error.message,
      stack: error.stack,
      cause: (error.cause as Error).message,
      causeOfCause: ((error.cause as Error).cause as Error).message,
      own: { ...(error.cause as object) },
    });
    expect(everything).not.toContain('SECRET123');
    expect(error.message).toContain('HTTP 401');
  });
});

describe('a provider secret that is not JSON', () => {
  it('is refused without quoting it, in the message or a cause', async () => {
    const client = {
      send: async () => ({ SecretString: 'sk-live-PLAINTEXT-KEY-0001' }),
    } as unknown as SecretsManagerClient;
    const error = (await loadProviderSecrets(client, 'arn:secret').catch((e) => e)) as Error;
    expect(error.message).toMatch(/is not JSON/);
    expect(error.cause).toBeUndefined();
    expect(`${error.message} ${error.stack}`).not.toContain('PLAINTEXT');
  });
});
