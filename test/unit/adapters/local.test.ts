import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileLlmCache } from '../../../shared/adapters/local/file-llm-cache.js';
import { FolderBlobStore, LayeredBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import type { ItemResult, RunRecord } from '../../../shared/core/model.js';
import type { Completion } from '../../../shared/providers/types.js';
import { suite, tempDir } from '../../helpers.js';

const run = (runId: string): RunRecord => ({
  runId,
  suiteName: 's',
  suite: suite(),
  prompts: {},
  status: 'ingesting',
  invalidRows: 0,
  startedAt: '2026-01-01T00:00:00.000Z',
  reportPrefix: '',
  datasetKey: 'd.csv',
  simulated: true,
});

const result = (itemId: string, status: 'scored' | 'failed' = 'scored'): ItemResult => ({
  runId: 'r1',
  itemId,
  row: 1,
  status,
  input: {},
  stages: {},
  simulated: true,
  finishedAt: '',
});

describe('local run store (append-only log)', () => {
  it('replays the log when reopened and ignores a torn last line', async () => {
    const dir = await tempDir();
    const store = new LocalRunStore(dir);
    await store.createRun(run('r1'));
    await store.setTotal('r1', 3, 0);
    await store.recordResult(result('a'));
    await store.recordResult(result('b', 'failed'));
    await appendFile(join(dir, 'results.jsonl'), '{"runId":"r1","itemId":"c","ro'); // killed mid-write

    const reopened = new LocalRunStore(dir);
    expect(await reopened.resultIds('r1')).toEqual(new Set(['a', 'b']));
    expect(await reopened.createRun(run('r1'))).toBe(false);
    const outcome = await reopened.recordResult(result('a'));
    expect(outcome).toEqual({ recorded: false, counters: { done: 1, failed: 1, total: 3 } });
    await expect(reopened.createRun(run('other'))).rejects.toThrow(/holds run r1/);
    // A result written after the torn line gets a line of its own and survives the next reopen.
    await reopened.recordResult(result('c'));
    expect(await new LocalRunStore(dir).resultIds('r1')).toEqual(new Set(['a', 'b', 'c']));
  });

  it('claims aggregation once, and only when complete', async () => {
    const store = new LocalRunStore(await tempDir());
    await store.createRun(run('r1'));
    await store.setTotal('r1', 1, 0);
    expect(await store.claimAggregation('r1')).toBe(false);
    await store.recordResult(result('a'));
    expect(await store.claimAggregation('r1')).toBe(true);
    expect(await store.claimAggregation('r1')).toBe(false);
  });
});

describe('folder blob store', () => {
  it('refuses keys that escape its root, and layers read first hit first', async () => {
    const [a, b] = [new FolderBlobStore(await tempDir()), new FolderBlobStore(await tempDir())];
    await expect(a.put('../evil', 'x')).rejects.toThrow(/escapes/);
    await a.put('prompts/x.md', 'from a');
    await b.put('prompts/x.md', 'from b');
    await b.put('prompts/y.md', 'only b');
    const layered = new LayeredBlobStore([a, b]);
    expect(new TextDecoder().decode(await layered.get('prompts/x.md'))).toBe('from a');
    expect(await layered.list('prompts/')).toEqual(['prompts/x.md', 'prompts/y.md']);
    expect(await a.get('missing')).toBeUndefined();
  });
});

describe('file LLM cache', () => {
  it('survives a restart and a torn last line', async () => {
    const path = join(await tempDir(), 'cache', 'llm.jsonl');
    const completion = { text: '{"label":"TP"}', providerId: 'openai:x' } as Completion;
    await new FileLlmCache(path).put('k1', completion);
    await appendFile(path, '{"key":"k2","comp');
    const reopened = new FileLlmCache(path);
    expect(await reopened.get('k1')).toEqual(completion);
    expect(await reopened.get('k2')).toBeUndefined();
    await reopened.put('k3', completion);
    expect(await new FileLlmCache(path).get('k3')).toEqual(completion);
    expect((await readFile(path, 'utf8')).split('\n')[0]).toContain('"k1"');
  });
});
