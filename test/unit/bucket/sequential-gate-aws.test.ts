/**
 * The AWS shell does not stop variants early: a sweep with `gate.sequential` uploaded there is
 * rejected with a reason that says so, before a run is written or an item sent.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore, LayeredBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunHistory } from '../../../shared/adapters/local/local-run-history.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { LocalSweepStore } from '../../../shared/adapters/local/local-sweeps.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import { MemoryPromptIndex } from '../../../shared/adapters/local/memory-prompt-index.js';
import type { ItemMessage } from '../../../shared/model/model.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { ingestObject } from '../../../shared/use-cases/ingest-object.js';
import { REPO, tempDir } from '../../helpers.js';

describe('a sequential gate in the AWS shell', () => {
  it('is rejected, saying it runs in the local shell only', async () => {
    const bucket = new FolderBlobStore(await tempDir('assay-bucket-'));
    const sent: ItemMessage[] = [];
    const sweeps = new LocalSweepStore(await tempDir('assay-sweeps-'));
    const deps = {
      bucket,
      prompts: new LayeredBlobStore([bucket, new FolderBlobStore(REPO)]),
      chunks: new MemoryChunkStore(),
      sendChunk: async () => {},
      chunkBytes: 1 << 30,
      chunkLeaseMs: 60_000,
      checkBackends: async () => {},
      runStore: new LocalRunStore(await tempDir('assay-runs-')),
      queue: { sendItems: async (messages: ItemMessage[]) => void sent.push(...messages) },
      trigger: { trigger: async () => {}, triggerSweep: async () => {} },
      promptIndex: new MemoryPromptIndex(),
      history: new LocalRunHistory(await tempDir('assay-history-'), validateSuite),
      sweeps,
    };
    await bucket.put(
      'suites/demo.json',
      JSON.stringify({
        version: 1,
        name: 'demo',
        dataset: { path: 'data.csv' },
        task: 'gec',
        method: 'baseline',
        backends: ['sim:gold'],
        variants: [{ name: 'a' }, { name: 'b', backends: ['sim:other'] }],
        gate: { conditions: ['accuracy >= 0.8'], sequential: true },
      }),
    );
    await bucket.put(
      'datasets/demo/data.csv',
      await readFile(join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv')),
    );
    const outcome = await ingestObject(deps, { key: 'datasets/demo/data.csv', version: 'v' });
    expect(outcome).toMatchObject({
      status: 'rejected',
      reason: expect.stringMatching(/^gate\.sequential: .*local shell only/),
    });
    expect(sent).toEqual([]);
  });
});
