import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { RunNotFoundError } from '../../../shared/model/errors.js';
import { endRunOfDeadChunk } from '../../../shared/use-cases/dead-letter.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { endHalted, haltCheck } from '../../../shared/use-cases/stop-run.js';
import { watchRuns } from '../../../shared/use-cases/watch-runs.js';
import { REPO, suite, tempDir } from '../../helpers.js';

const WHY = 'exhausted its receives on the events queue (ApproximateReceiveCount 15)';
const NOW = new Date('2026-12-02T05:00:00.000Z');

/** A run ingested in chunks whose chunk 0 closed its part (rows 1–3 handed on) and whose chunk 1 died. */
async function runMidIngest() {
  // Its status times on a clock of its own: the watchdog below measures quiet from 0.
  const runStore = new LocalRunStore(await tempDir(), { now: () => 0 });
  const run = await prepareRun({
    suite: suite({ backends: ['openai:gpt-4o-mini'] }),
    prompts: new FolderBlobStore(REPO),
    datasetKey: 'datasets/test-suite/big.csv',
    datasetVersion: 'v1',
    reportPrefix: 'reports/{runId}/',
  });
  await runStore.createRun(run);
  await runStore.closePart(run.runId, 0, { rows: [1, 2, 3], invalidRows: 0, last: false });
  const triggered: string[] = [];
  const trigger = { trigger: async (id: string) => void triggered.push(id), triggerSweep: async () => {} };
  return { runStore, run, trigger, triggered };
}

describe('a dead-lettered ingest chunk', () => {
  it('ends its run failed, with a reason naming the chunk, and its queued items stopped unscored', async () => {
    const { runStore, run, trigger } = await runMidIngest();
    expect((await runStore.getRun(run.runId))?.status).toBe('ingesting');

    const outcome = await endRunOfDeadChunk(
      { runStore, now: () => NOW },
      { runId: run.runId, chunk: 1, key: 'datasets/test-suite/big.csv' },
      WHY,
    );

    const reason = `ingest chunk 1 of datasets/test-suite/big.csv ${WHY}: its rows were not all read, so the run cannot complete and ends failed`;
    expect(outcome).toEqual({ status: 'failed', runId: run.runId, reason });
    expect(await runStore.getRun(run.runId)).toMatchObject({
      status: 'failed',
      finishedAt: NOW.toISOString(),
    });
    expect(await runStore.stopped(run.runId)).toBe(reason);
    // An item of chunk 0 still on the queue ends `stopped` as a worker reaches it: no model call.
    const check = await haltCheck({ runStore, trigger }, run.runId);
    expect(check.failure).toEqual({ kind: 'stopped', message: `the run was stopped: ${reason}` });
    const item = { id: '1', row: 1, input: { src: 'a', tgt: 'b' }, gold: 'TP' };
    const { result } = await endHalted(
      { runStore, trigger },
      { runId: run.runId, item } as never,
      check.failure!,
    );
    expect(result).toMatchObject({ status: 'failed', failure: { kind: 'stopped' } });
    expect((await runStore.getRun(run.runId))?.status).toBe('failed');
  });

  it('changes nothing the second time, nor for a run whose rows were all handed on, and names an unknown run', async () => {
    const first = await runMidIngest();
    await endRunOfDeadChunk({ runStore: first.runStore }, { runId: first.run.runId, chunk: 1 }, WHY);
    expect(
      await endRunOfDeadChunk({ runStore: first.runStore }, { runId: first.run.runId, chunk: 1 }, 'again'),
    ).toEqual({ status: 'unchanged', runId: first.run.runId, why: 'failed' });
    expect(await first.runStore.stopped(first.run.runId)).toMatch(/^ingest chunk 1 exhausted/);

    // The task of the last chunk died after the chunk closed its part: the run completes as usual.
    const handed = await runMidIngest();
    await handed.runStore.closePart(handed.run.runId, 1, { rows: [4, 5], invalidRows: 0, last: true });
    expect(
      await endRunOfDeadChunk({ runStore: handed.runStore }, { runId: handed.run.runId, chunk: 1 }, WHY),
    ).toEqual({ status: 'unchanged', runId: handed.run.runId, why: 'handed-on' });
    expect((await handed.runStore.getRun(handed.run.runId))?.status).toBe('running');
    expect(await handed.runStore.stopped(handed.run.runId)).toBeUndefined();

    await expect(
      endRunOfDeadChunk({ runStore: handed.runStore }, { runId: 'nobody-000000000000', chunk: 0 }, WHY),
    ).rejects.toThrow(RunNotFoundError);
  });

  it('leaves the watchdog nothing to report about the failed run', async () => {
    const { runStore, run, trigger, triggered } = await runMidIngest();
    const deps = { runStore, trigger, stuckAfterMs: 1000, now: () => 10_000 };
    // Before: a run that does not move is reported stuck once it has been quiet long enough.
    await watchRuns({ ...deps, now: () => 0 });
    expect((await watchRuns(deps)).stuck.map((s) => s.runId)).toEqual([run.runId]);

    await endRunOfDeadChunk({ runStore }, { runId: run.runId, chunk: 1 }, WHY);

    expect(await watchRuns(deps)).toEqual({ checked: 0, retriggered: [], stuck: [] });
    expect(triggered).toEqual([]);
  });
});
