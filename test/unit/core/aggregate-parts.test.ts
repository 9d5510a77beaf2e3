/**
 * A run aggregated a part at a time (a tally of each part, their reduction, each part's item
 * files, the assembly; a step a request) writes the report and files one pass writes, however
 * its steps arrive: each delivered twice, in reverse order, a step whose input is not there yet
 * put back, and a step that died after asking for the next but before it was marked done taken
 * up again once its lease lapsed; and when a step is lost (to the dead-letter queue), the run
 * goes on from there once the watchdog sends it to aggregation again.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import {
  type AggregateRequest,
  LocalAggregateTrigger,
} from '../../../shared/adapters/local/local-aggregate-trigger.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import { LeaseKeptError } from '../../../shared/model/errors.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import type { AggregationStep, ChunkStore, RunHistory } from '../../../shared/ports/ports.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import {
  aggregationStep,
  type InPartsDeps,
  type StepOutcome,
} from '../../../shared/use-cases/aggregate-parts.js';
import { aggregateRun } from '../../../shared/use-cases/aggregate-run.js';
import { watchRuns } from '../../../shared/use-cases/watch-runs.js';
import { simulatedExampleRun } from '../../example-run.js';
import { tempDir } from '../../helpers.js';

const NOW = new Date('2026-01-01T00:00:00.000Z');
const LEASE_MS = 60_000;
/** No earlier run of the suite to compare with. */
const NO_HISTORY: RunHistory = {
  getRun: async () => undefined,
  previousRun: async () => undefined,
  latestRun: async () => undefined,
  results: async function* () {},
};
const FILES = ['report.json', 'report.txt', 'labeled.csv', 'errors.txt', 'correct.txt'];

/** The reply-tone example's run on the simulator: its record and its results. */
const exampleRun = () => simulatedExampleRun('reply-tone.suite.json');

/** A run store holding `results` in `parts` parts of consecutive rows, every part closed. */
async function storeOf(run: RunRecord, results: ItemResult[], parts: number, now?: () => number) {
  const dir = await tempDir('assay-in-parts-');
  const store = new LocalRunStore(join(dir, 'run'), { checkSuite: validateSuite, ...(now ? { now } : {}) });
  await store.createRun({ ...run, status: 'ingesting', reportPrefix: 'reports/' });
  const rows = results.map((r) => r.row!).sort((a, b) => a - b);
  const partOf = (row: number) => Math.min(parts - 1, Math.floor((rows.indexOf(row) * parts) / rows.length));
  for (const result of results) {
    const part = partOf(result.row!);
    await store.recordResult({ ...result, ...(part ? { part } : {}) });
  }
  for (let part = 0; part < parts; part += 1) {
    await store.closePart(run.runId, part, {
      rows: rows.filter((row) => partOf(row) === part),
      invalidRows: 0,
      last: part === parts - 1,
    });
  }
  return { store, bucket: new FolderBlobStore(join(dir, 'bucket')) };
}

async function text(store: FolderBlobStore, key: string): Promise<string> {
  return new TextDecoder().decode(await store.get(key));
}

const PARTS = 4;

/** Cuts `results` into `parts` parts of consecutive rows, as storeOf does. */
function cut(results: ItemResult[], parts: number): ItemResult[] {
  const rows = results.map((r) => r.row).sort((a, b) => a - b);
  return results.map((r) => {
    const part = Math.min(parts - 1, Math.floor((rows.indexOf(r.row) * parts) / rows.length));
    return { ...r, ...(part ? { part } : {}) };
  });
}

/**
 * A history of one earlier run of the suite (`previous`, its results in parts as the run's),
 * reading the run itself from its store.
 */
function historyOf(
  previous: { run: RunRecord; results: ItemResult[] },
  store: LocalRunStore,
  wholeReads: string[] = [],
): RunHistory {
  const earlier = cut(previous.results, PARTS);
  return {
    getRun: async (runId) => (runId === previous.run.runId ? previous.run : store.getRun(runId)),
    previousRun: async (_suite, runId) => (runId === previous.run.runId ? undefined : previous.run),
    latestRun: async () => undefined,
    results: (runId, part) => {
      if (part === undefined) wholeReads.push(runId);
      return runId === previous.run.runId
        ? (async function* () {
            yield* earlier.filter((r) => part === undefined || (r.part ?? 0) === part);
          })()
        : store.results(runId, part);
    },
  };
}

type History = (store: LocalRunStore) => RunHistory;

/** The example run aggregated in one pass: its report files. */
async function onePass(run: RunRecord, results: ItemResult[], history: History = () => NO_HISTORY) {
  const one = await storeOf(run, results, PARTS);
  const whole = await aggregateRun(
    { runStore: one.store, reports: one.bucket, history: history(one.store), now: () => NOW },
    run.runId,
  );
  expect(whole.status).toBe('written');
  return one.bucket;
}

/** The report files in `bucket` are, byte for byte, those one pass wrote to `one`. */
async function expectFilesOf(bucket: FolderBlobStore, one: FolderBlobStore): Promise<void> {
  for (const file of FILES)
    expect(await text(bucket, `reports/${file}`), file).toBe(await text(one, `reports/${file}`));
}

interface DeliverOptions {
  once?: boolean;
  lose?: (step: AggregationStep) => boolean;
}

/**
 * The example run in parts, and what drives its aggregation: `deliver` takes the requests made
 * (runs and steps), hands each to the aggregate function's use-cases as the queue would, and
 * gives what they did; `chunkProgress` may be made to fail.
 */
async function inParts(run: RunRecord, results: ItemResult[], history: History = () => NO_HISTORY) {
  const clock = { ms: NOW.getTime() };
  const { store, bucket } = await storeOf(run, results, PARTS, () => clock.ms);
  const chunks = new MemoryChunkStore(() => clock.ms);
  const faults = {
    chunkProgress: (_key: string): void => undefined,
    releaseChunk: (_key: string): void => undefined,
  };
  const steps: ChunkStore = Object.assign(Object.create(chunks) as ChunkStore, {
    async chunkProgress(key: string, chunk: number, handed: number, done?: boolean) {
      faults.chunkProgress(key);
      return chunks.chunkProgress(key, chunk, handed, done);
    },
    async releaseChunk(key: string, chunk: number) {
      faults.releaseChunk(key);
      return chunks.releaseChunk(key, chunk);
    },
  });
  const trigger = new LocalAggregateTrigger();
  const inPartsDeps = { scratch: bucket, steps, trigger, stepLeaseMs: LEASE_MS };
  const deps: InPartsDeps = {
    ...inPartsDeps,
    runStore: store,
    reports: bucket,
    history: history(store),
    now: () => NOW,
  };
  const runDeps = {
    runStore: store,
    reports: bucket,
    history: history(store),
    leaseMs: LEASE_MS,
    inParts: { ...inPartsDeps, fromResults: 0 },
    now: () => NOW,
  };
  /**
   * Delivers what was asked for until nothing is left, newest first (each twice, unless `once`);
   * a step whose input is missing goes back; one that throws goes back at once if it gave its
   * lease up, and after its lease if it could not (`LeaseKeptError`). `lose` drops a step for good.
   */
  async function deliver({ once = false, lose = () => false }: DeliverOptions = {}) {
    const outcomes: (StepOutcome | { status: 'in-parts' | 'written' | 'skipped' })[] = [];
    let queue: AggregateRequest[] = [];
    const more = () => {
      for (const request of trigger.take().reverse())
        if (!('step' in request && lose(request))) queue.push(...(once ? [request] : [request, request]));
    };
    more();
    const died: AggregateRequest[] = [];
    for (let turns = 0; queue.length > 0 || died.length > 0; turns += 1) {
      expect(turns).toBeLessThan(1_000);
      if (queue.length === 0) {
        clock.ms += LEASE_MS + 1;
        queue = died.splice(0);
        continue;
      }
      const request = queue.shift()!;
      try {
        if ('step' in request) outcomes.push(await aggregationStep(deps, request));
        else if ('runId' in request) outcomes.push(await aggregateRun(runDeps, request.runId));
      } catch (error) {
        if (error instanceof LeaseKeptError) died.push(request);
        else queue.push(request);
      }
      more();
    }
    return outcomes;
  }
  return { store, bucket, trigger, clock, faults, deliver };
}

describe('a run aggregated in parts', () => {
  it('writes the files one pass writes, its steps redelivered, reordered, early and dying', {
    timeout: 60_000,
  }, async () => {
    const { run, results } = await exampleRun();
    const one = await onePass(run, results);
    const parted = await inParts(run, results);
    // The reduction dies once after asking for the parts' files, before it is marked done: killed,
    // it gives no lease up either.
    let dies = true;
    parted.faults.chunkProgress = (key) => {
      if (dies && key.endsWith('/reduce')) {
        dies = false;
        parted.faults.releaseChunk = () => {
          parted.faults.releaseChunk = () => undefined;
          throw new Error('the invocation was killed');
        };
        throw new Error('the invocation was killed');
      }
    };
    await parted.trigger.trigger(run.runId);
    const outcomes = await parted.deliver();

    expect(outcomes.filter((o) => o.status === 'in-parts')).toHaveLength(1);
    expect(outcomes.filter((o) => o.status === 'written')).toHaveLength(1);
    const done = outcomes.filter((o): o is Extract<StepOutcome, { status: 'done' }> => o.status === 'done');
    expect(done.filter((o) => o.step === 'tally')).toHaveLength(PARTS);
    expect(done.filter((o) => o.step === 'files')).toHaveLength(PARTS);
    // The reduction that died had asked for the files: the run was done when it came back.
    expect(done.filter((o) => o.step === 'reduce')).toHaveLength(0);
    expect(outcomes.at(-1)).toMatchObject({ status: 'skipped', step: 'reduce', why: 'not aggregating' });
    expect(outcomes.some((o) => o.status === 'skipped' && 'why' in o && o.why === 'held')).toBe(true);
    expect(await parted.store.getRun(run.runId)).toMatchObject({ status: 'done' });
    await expectFilesOf(parted.bucket, one);
  });

  it('gives up the lease of a step that failed, so that its redelivery takes it at once', {
    timeout: 60_000,
  }, async () => {
    const { run, results } = await exampleRun();
    const one = await onePass(run, results);
    const parted = await inParts(run, results);
    // Each part's files step fails once (a transient error, the invocation alive).
    let failures = 0;
    parted.faults.chunkProgress = (key) => {
      if (key.endsWith('/files') && failures < PARTS) {
        failures += 1;
        throw new Error('a transient S3 error');
      }
    };
    const start = parted.clock.ms;
    await parted.trigger.trigger(run.runId);
    const outcomes = await parted.deliver({ once: true });

    expect(failures).toBe(PARTS);
    // No step waited for a lease to lapse: the clock never moved, nothing was skipped as held.
    expect(parted.clock.ms).toBe(start);
    expect(outcomes.some((o) => o.status === 'skipped' && 'why' in o && o.why === 'held')).toBe(false);
    expect(outcomes.filter((o) => o.status === 'done' && o.step === 'files')).toHaveLength(PARTS);
    expect(await parted.store.getRun(run.runId)).toMatchObject({ status: 'done' });
    await expectFilesOf(parted.bucket, one);
  });

  it("writes each part's files from what its tally kept, not the table (or the table, if it kept none)", {
    timeout: 60_000,
  }, async () => {
    const { run, results } = await exampleRun();
    const one = await onePass(run, results);
    const readsOf = new Map<boolean, number>();
    for (const keptByTally of [true, false]) {
      const parted = await inParts(run, results);
      let reads = 0;
      const read = parted.store.results.bind(parted.store);
      parted.store.results = (runId, part) => {
        reads += 1;
        return read(runId, part);
      };
      // A tally of an earlier release kept nothing: the kept files are not found.
      if (!keptByTally) {
        const find = parted.bucket.read.bind(parted.bucket);
        parted.bucket.read = async (key, options) =>
          key.endsWith('.results.jsonl') ? undefined : find(key, options);
      }
      await parted.trigger.trigger(run.runId);
      await parted.deliver({ once: true });

      readsOf.set(keptByTally, reads);
      await expectFilesOf(parted.bucket, one);
    }
    // Without the kept results, each part's files step reads the table once more.
    expect(readsOf.get(false)! - readsOf.get(true)!).toBe(PARTS);
  });

  it('goes on from the step lost once the watchdog sends the run to aggregation again', {
    timeout: 60_000,
  }, async () => {
    const { run, results } = await exampleRun();
    const one = await onePass(run, results);
    const parted = await inParts(run, results);
    await parted.trigger.trigger(run.runId);
    // Part 2's files are never written: their step is lost (on AWS: to the dead-letter queue).
    await parted.deliver({ once: true, lose: (step) => step.step === 'files' && step.part === 2 });
    expect(await parted.store.getRun(run.runId)).toMatchObject({ status: 'aggregating' });
    expect(await parted.bucket.get('reports/report.json')).toBeUndefined();

    // Within the lease the run is left alone; past it, the watchdog sends it again.
    const watch = { runStore: parted.store, trigger: parted.trigger, stuckAfterMs: 3_600_000 };
    expect((await watchRuns({ ...watch, now: () => parted.clock.ms })).retriggered).toEqual([]);
    parted.clock.ms += LEASE_MS + 1;
    expect((await watchRuns({ ...watch, now: () => parted.clock.ms })).retriggered).toEqual([run.runId]);
    const outcomes = await parted.deliver({ once: true });
    // Only what was not done is done again: part 2's files and the assembly.
    const done = outcomes.filter((o): o is Extract<StepOutcome, { status: 'done' }> => o.status === 'done');
    expect(done.map((o) => `${o.step}${o.part ?? ''}`)).toEqual(['files2']);
    expect(outcomes.filter((o) => o.status === 'written')).toHaveLength(1);
    expect(await parted.store.getRun(run.runId)).toMatchObject({ status: 'done' });
    await expectFilesOf(parted.bucket, one);
  });

  it('compares with the previous run a part at a time, as one pass compares', {
    timeout: 60_000,
  }, async () => {
    const { run, results } = await exampleRun();
    // The previous run: the same items, each with its neighbour's scores.
    const previous = {
      run: {
        ...run,
        runId: 'reply-tone-previous',
        status: 'done' as const,
        startedAt: '2025-12-01T00:00:00.000Z',
      },
      results: results.map((r, i) => ({
        ...r,
        runId: 'reply-tone-previous',
        scores: results[(i + 1) % results.length]!.scores,
      })),
    };
    const one = await onePass(run, results, (store) => historyOf(previous, store));
    const wholeReads: string[] = [];
    const parted = await inParts(run, results, (store) => historyOf(previous, store, wholeReads));
    await parted.trigger.trigger(run.runId);
    const outcomes = await parted.deliver({ once: true });
    const written = outcomes.find(
      (o): o is Extract<StepOutcome, { status: 'written' }> => o.status === 'written',
    );
    expect(written?.keys).toContain('reports/comparison.json');
    // Merged from the parts' tallies: no whole run was read but the previous run's first result
    // (whether it scored anything).
    expect(await parted.bucket.list(`spill/${run.runId}/aggregate/compare/`)).toHaveLength(PARTS);
    expect(wholeReads).toEqual([previous.run.runId]);
    const [whole, joined] = await Promise.all(
      [one, parted.bucket].map(async (b) => JSON.parse(await text(b, 'reports/comparison.json'))),
    );
    expect(whole.scores.label.n).toBeGreaterThan(10);
    expect(joined).toEqual(whole);
    await expectFilesOf(parted.bucket, one);
  });
});
