/**
 * A run aggregated a part at a time (a tally of each part, their reduction, each part's item
 * files, the assembly; a step a request) writes the report and files one pass writes, however
 * its steps arrive: each delivered twice, in reverse order, a step whose input is not there yet
 * put back, and a step that died after asking for the next but before it was marked done taken
 * up again once its lease lapsed.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runLocal } from '../../../cli/local-run.js';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import {
  type AggregateRequest,
  LocalAggregateTrigger,
} from '../../../shared/adapters/local/local-aggregate-trigger.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import type { AggregationStep, ChunkStore, RunHistory } from '../../../shared/ports/ports.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import {
  aggregationStep,
  type InPartsDeps,
  StepInputMissingError,
  type StepOutcome,
} from '../../../shared/use-cases/aggregate-parts.js';
import { aggregateRun } from '../../../shared/use-cases/aggregate-run.js';
import { REPO, tempDir } from '../../helpers.js';

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
async function exampleRun(): Promise<{ run: RunRecord; results: ItemResult[] }> {
  const dir = await tempDir('assay-in-parts-example-');
  const { run, outDir } = await runLocal({
    suitePath: join(REPO, 'examples', 'reply-tone.suite.json'),
    simulate: true,
    fresh: true,
    env: {},
    outDir: join(dir, 'run'),
    cachePath: join(dir, 'cache.jsonl'),
  });
  const results: ItemResult[] = [];
  for await (const r of new LocalRunStore(outDir, { checkSuite: validateSuite }).results(run.runId))
    results.push(r);
  return { run, results };
}

/** A run store holding `results` in `parts` parts of consecutive rows, every part closed. */
async function storeOf(run: RunRecord, results: ItemResult[], parts: number) {
  const dir = await tempDir('assay-in-parts-');
  const store = new LocalRunStore(join(dir, 'run'), { checkSuite: validateSuite });
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

describe('a run aggregated in parts', () => {
  it('writes the files one pass writes, its steps redelivered, reordered, early and dying', {
    timeout: 60_000,
  }, async () => {
    const { run, results } = await exampleRun();
    const PARTS = 4;

    const one = await storeOf(run, results, PARTS);
    const whole = await aggregateRun(
      { runStore: one.store, reports: one.bucket, history: NO_HISTORY, now: () => NOW },
      run.runId,
    );
    expect(whole.status).toBe('written');

    const parted = await storeOf(run, results, PARTS);
    let clock = NOW.getTime();
    const chunks = new MemoryChunkStore(() => clock);
    // The reduction dies once after asking for the parts' files, before it is marked done.
    let dies = true;
    const steps: ChunkStore = {
      claimChunk: (...a) => chunks.claimChunk(...a),
      claimIds: (...a) => chunks.claimIds(...a),
      async chunkProgress(key, chunk, handed, done) {
        if (dies && key.endsWith('/reduce')) {
          dies = false;
          throw new Error('the invocation was killed');
        }
        return chunks.chunkProgress(key, chunk, handed, done);
      },
    };
    const trigger = new LocalAggregateTrigger();
    const inParts = { scratch: parted.bucket, steps, trigger, stepLeaseMs: LEASE_MS };
    const deps: InPartsDeps = { ...inParts, runStore: parted.store, reports: parted.bucket, now: () => NOW };
    const started = await aggregateRun(
      {
        runStore: parted.store,
        reports: parted.bucket,
        history: NO_HISTORY,
        inParts: { ...inParts, fromResults: 0 },
        now: () => NOW,
      },
      run.runId,
    );
    expect(started).toEqual({ status: 'in-parts', parts: PARTS });

    const outcomes: StepOutcome[] = [];
    let queue: AggregationStep[] = [];
    const more = () => {
      const taken = trigger.take() as Exclude<AggregateRequest, { sweepId: string }>[];
      // Each delivered twice, newest first.
      for (const request of taken.reverse()) if ('step' in request) queue.push(request, request);
    };
    more();
    const died: AggregationStep[] = [];
    for (let turns = 0; queue.length > 0 || died.length > 0; turns += 1) {
      expect(turns).toBeLessThan(500);
      if (queue.length === 0) {
        // The dead step's message comes back after its lease.
        clock += LEASE_MS + 1;
        queue = died.splice(0);
        continue;
      }
      const step = queue.shift()!;
      try {
        outcomes.push(await aggregationStep(deps, step));
      } catch (error) {
        if (error instanceof StepInputMissingError) queue.push(step);
        else died.push(step);
      }
      more();
    }

    expect(outcomes.filter((o) => o.status === 'written')).toHaveLength(1);
    const done = outcomes.filter((o) => o.status === 'done');
    expect(done.filter((o) => o.step === 'tally')).toHaveLength(PARTS);
    expect(done.filter((o) => o.step === 'files')).toHaveLength(PARTS);
    expect(done.filter((o) => o.step === 'reduce')).toHaveLength(1);
    expect(outcomes.some((o) => o.status === 'skipped' && o.why === 'held')).toBe(true);
    expect(await parted.store.getRun(run.runId)).toMatchObject({ status: 'done' });
    for (const file of FILES)
      expect(await text(parted.bucket, `reports/${file}`), file).toBe(
        await text(one.bucket, `reports/${file}`),
      );
  });
});
