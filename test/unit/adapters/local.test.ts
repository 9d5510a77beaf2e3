import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileLlmCache } from '../../../shared/adapters/local/file-llm-cache.js';
import { FolderBlobStore, LayeredBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { CorruptLineError } from '../../../shared/adapters/local/jsonl.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { StoredDataError } from '../../../shared/model/codec.js';
import { RunExistsError } from '../../../shared/model/errors.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import type { Completion } from '../../../shared/model/provider.js';
import { suite, tempDir } from '../../helpers.js';

const run = (runId: string): RunRecord => ({
  schemaVersion: 2,
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

const result = (itemId: string, status: 'scored' | 'failed' = 'scored', costUsd = 0): ItemResult => ({
  schemaVersion: 2,
  runId: 'r1',
  itemId,
  row: 1,
  status,
  input: {},
  scores: status === 'scored' ? { label: { kind: 'label', value: 'TP' } } : {},
  ...(status === 'failed' ? { failure: { kind: 'parse', message: 'x' } } : {}),
  stages: {
    classify: { calls: 1, cachedCalls: 0, costUsd, latencyMs: 1, usage: { input: 1, output: 1, cached: 0 } },
  },
  simulated: true,
  finishedAt: '',
});

/** Rows 1…n: what ingest hands over when it closes a run's only part of n rows. */
const rowsUpTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('local run store (append-only log)', () => {
  it('replays the log when reopened and ignores a torn last line', async () => {
    const dir = await tempDir();
    const store = new LocalRunStore(dir);
    await store.createRun(run('r1'));
    await store.closePart('r1', 0, { rows: rowsUpTo(3), invalidRows: 0, last: true });
    await store.recordResult(result('a'));
    await store.recordResult(result('b', 'failed'));
    await appendFile(join(dir, 'results.jsonl'), '{"runId":"r1","itemId":"c","ro'); // killed mid-write

    const reopened = new LocalRunStore(dir);
    expect(new Set(await reopened.resultIds('r1'))).toEqual(new Set(['a', 'b']));
    await expect(reopened.createRun(run('r1'))).rejects.toBeInstanceOf(RunExistsError);
    const outcome = await reopened.recordResult(result('a'));
    expect(outcome).toEqual({ recorded: false, complete: false });
    expect(await reopened.counters('r1')).toEqual({ done: 1, failed: 1, total: 3, spentUsd: 0 });
    await expect(reopened.createRun(run('other'))).rejects.toThrow(/holds run r1/);
    // A result written after the torn line gets a line of its own and survives the next reopen.
    await reopened.recordResult(result('c'));
    expect(new Set(await new LocalRunStore(dir).resultIds('r1'))).toEqual(new Set(['a', 'b', 'c']));
  });

  it("streams back each item's current result: a resumed item replaces its budget failure, counters follow", async () => {
    const dir = await tempDir();
    const store = new LocalRunStore(dir);
    await store.createRun(run('r1'));
    await store.closePart('r1', 0, { rows: rowsUpTo(2), invalidRows: 0, last: true });
    const stopped: ItemResult = {
      ...result('a', 'failed', 0.5),
      failure: { kind: 'budget', message: 'spent' },
    };
    await store.recordResult(stopped);
    await store.recordResult(result('b', 'failed', 0.25));
    expect(new Set(await store.resultIds('r1'))).toEqual(new Set(['b']));
    const resumed = await store.recordResult(result('a', 'scored', 1));
    expect(resumed).toEqual({ recorded: true, complete: true });
    expect(await store.counters('r1')).toEqual({ done: 1, failed: 1, total: 2, spentUsd: 1.25 });
    expect((await store.recordResult(result('a', 'failed'))).recorded).toBe(false);
    for (const reader of [store, new LocalRunStore(dir)]) {
      const back: ItemResult[] = [];
      for await (const r of reader.results('r1')) back.push(r);
      expect(back.map((r) => [r.itemId, r.status])).toEqual([
        ['b', 'failed'],
        ['a', 'scored'],
      ]);
      expect(await reader.counters('r1')).toEqual({ done: 1, failed: 1, total: 2, spentUsd: 1.25 });
    }
  });

  it('refuses a corrupt line that is not the last, naming its line number', async () => {
    const dir = await tempDir();
    const store = new LocalRunStore(dir);
    await store.createRun(run('r1'));
    await store.recordResult(result('a'));
    await appendFile(join(dir, 'results.jsonl'), 'not json at all\n');
    await store.recordResult(result('b'));
    await expect(new LocalRunStore(dir).resultIds('r1')).rejects.toThrow(CorruptLineError);
    await expect(new LocalRunStore(dir).resultIds('r1')).rejects.toThrow(
      /results\.jsonl line 2: not a JSON line/,
    );
  });

  it('refuses a line that is JSON but not a result, saying what is wrong', async () => {
    const dir = await tempDir();
    const store = new LocalRunStore(dir);
    await store.createRun(run('r1'));
    await appendFile(join(dir, 'results.jsonl'), `${JSON.stringify({ schemaVersion: 2, runId: 'r1' })}\n`);
    await expect(new LocalRunStore(dir).resultIds('r1')).rejects.toThrow(StoredDataError);
    await expect(new LocalRunStore(dir).resultIds('r1')).rejects.toThrow(
      /line 1: not a result of schema version 2: itemId/,
    );
  });

  it('a later result replaces a budget failure, and the counters and spend follow', async () => {
    const dir = await tempDir();
    const store = new LocalRunStore(dir);
    await store.createRun(run('r1'));
    await store.closePart('r1', 0, { rows: rowsUpTo(2), invalidRows: 0, last: true });
    await store.recordResult(result('a', 'scored', 0.25));
    const stopped = {
      ...result('b', 'failed'),
      failure: { kind: 'budget' as const, message: 'budget spent' },
    };
    await store.recordResult(stopped);
    expect(new Set(await store.resultIds('r1'))).toEqual(new Set(['a']));
    const resumed = await store.recordResult(result('b', 'scored', 0.5));
    expect(resumed).toEqual({ recorded: true, complete: true });
    expect(await store.counters('r1')).toEqual({ done: 2, failed: 0, total: 2, spentUsd: 0.75 });
    expect((await store.recordResult(result('b', 'scored', 9))).recorded).toBe(false);
    // The log keeps both lines; reopening keeps the replacement.
    const reopened = new LocalRunStore(dir);
    expect(await reopened.counters('r1')).toEqual({ done: 2, failed: 0, total: 2, spentUsd: 0.75 });
    expect(new Set(await reopened.resultIds('r1'))).toEqual(new Set(['a', 'b']));
  });

  it('lets its item index go while the run is aggregated: results still skip the stale lines, a late result is still refused', async () => {
    const dir = await tempDir();
    const store = new LocalRunStore(dir);
    await store.createRun(run('r1'));
    await store.closePart('r1', 0, { rows: rowsUpTo(3), invalidRows: 0, last: true });
    await store.recordResult({
      ...result('a', 'failed', 0.5),
      failure: { kind: 'budget', message: 'spent' },
    });
    await store.recordResult(result('b', 'failed', 0.25));
    await store.recordResult(result('a', 'scored', 1));
    // A duplicate line in the log (as a redelivery written by hand): not the item's result.
    await appendFile(join(dir, 'results.jsonl'), `${JSON.stringify(result('b', 'scored', 7))}\n`);
    const reopened = new LocalRunStore(dir);
    await reopened.recordResult(result('c', 'scored', 2));
    for (const reader of [reopened, new LocalRunStore(dir)]) {
      const current = async () => {
        const back: ItemResult[] = [];
        for await (const r of reader.results('r1')) back.push(r);
        return back.map((r) => [r.itemId, r.status, resultCostOf(r)]);
      };
      const expected = [
        ['b', 'failed', 0.25],
        ['a', 'scored', 1],
        ['c', 'scored', 2],
      ];
      expect(await current()).toEqual(expected);
      expect(await reader.claimAggregation('r1', 60_000)).toBe(true);
      expect(await current()).toEqual(expected);
      // Two results at once after the claim: the log is read again once, both are refused.
      const late = await Promise.all([
        reader.recordResult(result('c', 'failed')),
        reader.recordResult(result('a')),
      ]);
      expect(late.map((outcome) => outcome.recorded)).toEqual([false, false]);
      expect(new Set(await reader.resultIds('r1'))).toEqual(new Set(['a', 'b', 'c']));
      expect(await reader.counters('r1')).toEqual({ done: 2, failed: 1, total: 3, spentUsd: 3.25 });
      await reader.setStatus('r1', 'running');
    }
  });
});

const resultCostOf = (r: ItemResult) => Object.values(r.stages).reduce((sum, s) => sum + s.costUsd, 0);

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
