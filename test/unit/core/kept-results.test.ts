import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { StoredDataError } from '../../../shared/model/codec.js';
import type { ItemResult } from '../../../shared/model/model.js';
import { collectResults, sourceOf } from '../../../shared/model/report-order.js';
import { keptLines, keptResults } from '../../../shared/use-cases/kept-results.js';
import { tempDir } from '../../helpers.js';

const result = (i: number): ItemResult => ({
  schemaVersion: 2,
  runId: 'r',
  itemId: `item-${i}`,
  row: i + 1,
  status: 'scored',
  // Not ASCII, with a newline: the file is split on newlines between results only.
  input: { text: `ü€😀 line\nnext ${i}` },
  gold: 'yes',
  scores: {},
  stages: {},
  simulated: true,
  finishedAt: '2025-01-01T00:00:00.000Z',
});

describe("a part's kept results", () => {
  it('reads back what was kept, in order, each time asked, across chunks of the stream', async () => {
    const store = new FolderBlobStore(join(await tempDir('assay-kept-'), 'bucket'));
    const results = Array.from({ length: 700 }, (_, i) => result(i));
    let seen = 0;
    await store.putStream(
      'spill/r/kept.jsonl',
      keptLines(sourceOf(results)(), () => {
        seen += 1;
      }),
    );
    expect(seen).toBe(700);
    const kept = await keptResults(store, 'spill/r/kept.jsonl');
    expect(await collectResults(kept!())).toEqual(results);
    expect(await collectResults(kept!())).toEqual(results);
    expect(await keptResults(store, 'spill/r/none.jsonl')).toBeUndefined();
  });

  it('refuses a line that is not a result, naming it, and a cut-off file', async () => {
    const store = new FolderBlobStore(join(await tempDir('assay-kept-'), 'bucket'));
    await store.put('k1', `${JSON.stringify(result(0))}\n{"not": "a result"}\n`);
    await expect(collectResults((await keptResults(store, 'k1'))!())).rejects.toThrow(/k1 line 2/);
    await store.put('k2', `${JSON.stringify(result(0))}\n{"cut`);
    await expect(collectResults((await keptResults(store, 'k2'))!())).rejects.toThrow(StoredDataError);
  });
});
