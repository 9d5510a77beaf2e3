import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { readRows } from '../../../shared/lib/datasets/read.js';
import { RunNotFoundError } from '../../../shared/model/errors.js';
import type { ItemMessage, ItemResult } from '../../../shared/model/model.js';
import type { RecordOutcome } from '../../../shared/ports/ports.js';
import { deployLimited, itemLimitReason, withinItemLimit } from '../../../shared/use-cases/deploy-limits.js';
import { finishRun } from '../../../shared/use-cases/finish-run.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { startRun } from '../../../shared/use-cases/start-run.js';
import { endHalted, haltCheck, stopRun } from '../../../shared/use-cases/stop-run.js';
import { chunksOf, REPO, suite, tempDir } from '../../helpers.js';

const CSV = ['idx,src,tgt,label', ...Array.from({ length: 6 }, (_, i) => `${i + 1},a${i},b${i},TP`)].join(
  '\n',
);

const sweep = (repeats: number, variants = 3) =>
  suite({
    run: { repeats },
    variants: Array.from({ length: variants }, (_, i) => ({
      name: `v${i}`,
      params: { temperature: i / 10 },
    })),
  });

describe('deployLimited', () => {
  it('gives a suite without a budget the default one, and keeps a budget the suite sets', () => {
    const limited = deployLimited(suite(), { defaultBudgetUsd: 100 });
    expect('suite' in limited && limited.suite.run.budgetUsd).toBe(100);
    const own = deployLimited(suite({ run: { budgetUsd: 3 } }), { defaultBudgetUsd: 100 });
    expect('suite' in own && own.suite.run.budgetUsd).toBe(3);
    const none = deployLimited(suite(), { defaultBudgetUsd: 0 });
    expect('suite' in none && none.suite.run.budgetUsd).toBeUndefined();
  });

  it('rejects an upload whose runs × repeats pass the limit, counting every variant', () => {
    expect(deployLimited(sweep(16), { maxVariantsTimesRepeats: 50 })).toEqual({ suite: expect.anything() });
    const over = deployLimited(sweep(17), { maxVariantsTimesRepeats: 50 });
    expect(over).toEqual({
      rejected: expect.stringMatching(/51 times \(3 runs.*maxVariantsTimesRepeats \(50\)/),
    });
    expect(deployLimited(suite({ run: { repeats: 5 } }), { maxVariantsTimesRepeats: 4 })).toHaveProperty(
      'rejected',
    );
  });

  it('rejects a suite (or a variant) asking for more output tokens than the deployment allows', () => {
    expect(deployLimited(suite({ params: { maxTokens: 4096 } }), { maxOutputTokens: 4096 })).toHaveProperty(
      'suite',
    );
    expect(deployLimited(suite({ params: { maxTokens: 5000 } }), { maxOutputTokens: 4096 })).toEqual({
      rejected: expect.stringMatching(
        /^params\.maxTokens 5000 is above this deployment's maxOutputTokens \(4096\)/,
      ),
    });
    const variant = suite({ variants: [{ name: 'long', params: { maxTokens: 9000 } }, { name: 'short' }] });
    expect(deployLimited(variant, { maxOutputTokens: 4096 })).toEqual({
      rejected: expect.stringMatching(/9000 \(in test-suite\.long\)/),
    });
  });
});

describe('the item limit', () => {
  async function setUp() {
    const runStore = new LocalRunStore(await tempDir());
    const run = await prepareRun({
      suite: suite(),
      prompts: new FolderBlobStore(REPO),
      datasetKey: 'data.csv',
      datasetVersion: 'v1',
      reportPrefix: 'reports/{runId}/',
    });
    const sent: ItemMessage[] = [];
    const queue = { sendItems: async (m: ItemMessage[]) => void sent.push(...m) };
    const trigger = { trigger: async () => {}, triggerSweep: async () => {} };
    return { runStore, run, sent, queue, trigger };
  }

  it('stops a run at the limit: rows past it are not read, the run says why', async () => {
    const { runStore, run, sent, queue, trigger } = await setUp();
    const outcome = await startRun(
      { runStore, queue, trigger, limits: { maxItems: 4 } },
      { run, rows: readRows(chunksOf(CSV), 'csv') },
    );
    expect(outcome).toMatchObject({ status: 'started', total: 4, queued: 4, stopped: itemLimitReason(4) });
    expect(sent.map((m) => m.item.row)).toEqual([1, 2, 3, 4]);
    expect(await runStore.stopped(run.runId)).toBe(itemLimitReason(4));
    expect((await runStore.getRun(run.runId))?.total).toBe(4);
  });

  it('leaves a dataset of exactly the limit alone', async () => {
    const { runStore, run, queue, trigger } = await setUp();
    const outcome = await startRun(
      { runStore, queue, trigger, limits: { maxItems: 6 } },
      { run, rows: readRows(chunksOf(CSV), 'csv') },
    );
    expect(outcome).toMatchObject({ total: 6, queued: 6 });
    expect(outcome).not.toHaveProperty('stopped');
    expect(await runStore.stopped(run.runId)).toBeUndefined();
  });

  it('cuts a chunk at the limit and makes it the last; a chunk ending at the limit with more to read is over it', async () => {
    const rows = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => ({ row: from + i, line: from + i, record: {} }));
    const stops: string[] = [];
    const store = { stop: async (_: string, reason: string) => void stops.push(reason) };
    const within = await withinItemLimit(
      store,
      'r',
      { rows: rows(1, 5), next: { start: 9 } },
      { maxItems: 10 },
    );
    expect(within.next).toEqual({ start: 9 });
    expect(stops).toEqual([]);
    const exact = await withinItemLimit(store, 'r', { rows: rows(6, 10) }, { maxItems: 10 });
    expect(exact.rows).toHaveLength(5);
    expect(stops).toEqual([]);
    const cut = await withinItemLimit(
      store,
      'r',
      { rows: rows(8, 12), next: { start: 99 } },
      { maxItems: 10 },
    );
    expect(cut.rows.map((r) => r.row)).toEqual([8, 9, 10]);
    expect(cut.next).toBeUndefined();
    const boundary = await withinItemLimit(
      store,
      'r',
      { rows: rows(6, 10), next: { start: 99 } },
      { maxItems: 10 },
    );
    expect(boundary.rows).toHaveLength(5);
    expect(boundary.next).toBeUndefined();
    expect(stops).toEqual([itemLimitReason(10), itemLimitReason(10)]);
  });
});

describe('halting items: a stopped run, the daily spend limit', () => {
  const message: ItemMessage = { runId: 'run-1', item: { id: 'a', row: 3, input: { src: 'x' } }, part: 2 };

  function store(stopped?: string, spent = 0) {
    const recorded: ItemResult[] = [];
    let reads = 0;
    return {
      recorded,
      reads: () => reads,
      runStore: {
        stopped: async () => stopped,
        spentToday: async () => {
          reads += 1;
          return spent;
        },
        recordResult: async (result: ItemResult): Promise<RecordOutcome> => {
          recorded.push(result);
          return { recorded: true, complete: true };
        },
      },
    };
  }
  const trigger = (triggered: string[]) => ({
    trigger: async (runId: string) => void triggered.push(runId),
    triggerSweep: async () => {},
  });

  it('ends an item of a stopped run as `stopped`, its one result, and asks for aggregation when that completes the run', async () => {
    const s = store('stopped with assay cloud stop', 1e9);
    const triggered: string[] = [];
    const check = await haltCheck(
      { runStore: s.runStore, trigger: trigger(triggered), dailySpendLimitUsd: 10 },
      'run-1',
    );
    expect(check.failure).toEqual({
      kind: 'stopped',
      message: 'the run was stopped: stopped with assay cloud stop',
    });
    expect(s.reads()).toBe(0);
    const { result } = await endHalted(
      { runStore: s.runStore, trigger: trigger(triggered), now: () => new Date('2026-11-27T10:00:00Z') },
      message,
      check.failure!,
    );
    expect(result).toMatchObject({
      itemId: 'a',
      row: 3,
      part: 2,
      status: 'failed',
      failure: { kind: 'stopped' },
      stages: {},
      finishedAt: '2026-11-27T10:00:00.000Z',
    });
    expect(s.recorded).toHaveLength(1);
    expect(triggered).toEqual(['run-1']);
  });

  it('refuses items as `budget` once the day has spent the daily limit, naming it; goes on below it', async () => {
    const below = await haltCheck(
      { runStore: store(undefined, 9.99).runStore, trigger: trigger([]), dailySpendLimitUsd: 10 },
      'r',
    );
    expect(below).toEqual({ daySpentUsd: 9.99 });
    const at = await haltCheck(
      { runStore: store(undefined, 10).runStore, trigger: trigger([]), dailySpendLimitUsd: 10 },
      'r',
    );
    expect(at.failure?.kind).toBe('budget');
    expect(at.failure?.message).toMatch(/daily spend limit of \$10 \(dailySpendLimitUsd/);
    expect(at.daySpentUsd).toBe(10);
    // No limit: the day's spend is not even read.
    const s = store(undefined, 1e9);
    expect(await haltCheck({ runStore: s.runStore, trigger: trigger([]) }, 'r')).toEqual({});
    expect(s.reads()).toBe(0);
  });

  it('stopRun: marks a running run, says a done run had nothing to stop, refuses an unknown run', async () => {
    const stops: string[] = [];
    const runs: Record<string, { status: string }> = { live: { status: 'running' }, old: { status: 'done' } };
    const runStore = {
      getRun: async (id: string) => runs[id] as never,
      stop: async (id: string, reason: string) => void stops.push(`${id}: ${reason}`),
    };
    expect(await stopRun(runStore, 'live', 'enough')).toEqual({
      status: 'stopped',
      runId: 'live',
      runStatus: 'running',
    });
    expect(await stopRun(runStore, 'old', 'enough')).toEqual({ status: 'done', runId: 'old' });
    await expect(stopRun(runStore, 'nobody', 'enough')).rejects.toThrow(RunNotFoundError);
    expect(stops).toEqual(['live: enough']);
  });
});

describe('finishing a stopped run', () => {
  it('leaves it off the leaderboard, and still aggregates its sweeps', async () => {
    const recorded: unknown[] = [];
    const run = { runId: 'r1', status: 'done', reportPrefix: 'reports/r1/' };
    const deps = {
      runs: {
        getRun: async () => run as never,
        previousRun: async () => undefined,
        latestRun: async () => undefined,
        results: async function* () {},
      },
      reports: { get: async () => new TextEncoder().encode('{"runId":"r1"}') } as never,
      leaderboard: { record: async (entry: unknown) => void recorded.push(entry), entries: async () => [] },
      sweeps: { sweepsOf: async () => [] } as never,
      sweepFiles: () => ({}) as never,
    };
    expect(await finishRun({ ...deps, stopped: async () => 'enough' }, 'r1')).toEqual({
      status: 'finished',
      recorded: false,
      leaderboardKeys: [],
      sweeps: [],
      stopped: 'enough',
    });
    expect(recorded).toEqual([]);
  });
});
