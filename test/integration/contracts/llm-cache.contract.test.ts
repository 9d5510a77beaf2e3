/**
 * The LlmCache contract: a miss is undefined, a put is read back as stored (who paid, a
 * cut-short answer), the latest put wins; by the local file cache and the DynamoDB cache alike.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DynamoLlmCache } from '../../../shared/adapters/aws/dynamo-llm-cache.js';
import { FileLlmCache } from '../../../shared/adapters/local/file-llm-cache.js';
import type { Completion } from '../../../shared/model/provider.js';
import type { LlmCache } from '../../../shared/ports/ports.js';
import { tempDir } from '../../helpers.js';
import { awsStack, fresh } from './fixtures.js';

const aws = awsStack('contract-cache');

/** Two caches on the same storage (a restarted process, another Lambda container). */
const adapters: [string, () => Promise<[LlmCache, LlmCache]>][] = [
  [
    'file',
    async () => {
      const path = join(await tempDir('assay-contract-cache-'), 'llm-cache.jsonl');
      return [new FileLlmCache(path), new FileLlmCache(path)];
    },
  ],
  [
    'dynamodb',
    async () => {
      const options = {
        client: aws().clients.doc,
        tableName: aws().res.table,
        onError: (error: unknown) => {
          throw error;
        },
      };
      return [new DynamoLlmCache(options), new DynamoLlmCache(options)];
    },
  ],
];

function completion(text: string, overrides: Partial<Completion> = {}): Completion {
  return {
    text,
    finishReason: 'stop',
    usage: { input: 10, output: 2, cached: 0 },
    costUsd: 0.000_123,
    latencyMs: 321,
    cached: false,
    simulated: false,
    providerId: 'openai:gpt-4o-mini',
    ...overrides,
  };
}

describe.each(adapters)('LlmCache contract: %s', { timeout: 60_000 }, (_name, make) => {
  it('a key never put is a miss; a put is read back as stored, by this cache and another', async () => {
    const [cache, other] = await make();
    const key = fresh('key');
    expect(await cache.get(key)).toBeUndefined();
    const paid = completion('TP', { finishReason: 'length', paidBy: 'run-1/item-3' });
    await cache.put(key, paid);
    expect(await cache.get(key)).toEqual(paid);
    expect(await other.get(key)).toEqual(paid);
  });

  it('the latest put of a key wins', async () => {
    const [cache, other] = await make();
    const key = fresh('key');
    await cache.put(key, completion('first'));
    await cache.put(key, completion('second', { costUsd: 0.0002 }));
    expect(await cache.get(key)).toEqual(completion('second', { costUsd: 0.0002 }));
    expect(await other.get(key)).toEqual(completion('second', { costUsd: 0.0002 }));
  });
});
