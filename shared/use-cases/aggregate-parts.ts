import { aggregationKey } from '../lib/layout/bucket.js';
import { mapLimit } from '../lib/map-limit.js';
import { RunNotFoundError, releasingOnFailure, ServiceError } from '../model/errors.js';
import type { RunRecord } from '../model/model.js';
import type { Report } from '../model/report.js';
import { inReportOrder, type ResultSource } from '../model/report-order.js';
import type {
  AggregationStep,
  BlobStore,
  ChunkStore,
  RunHistory,
  RunStore,
  StepTrigger,
} from '../ports/ports.js';
import { taskFor } from '../registry/registry.js';
import {
  type ComparableRun,
  comparableByParts,
  comparableRun,
  comparisonOfParts,
  comparisonTallyOfPart,
} from '../reports/compare-parts.js';
import { ComparisonTally } from '../reports/compare-runs.js';
import { FileLayout, type FileLayoutState } from '../reports/layout.js';
import { assembleReportFiles, type PartFilesIndex, writePartFiles } from '../reports/part-files.js';
import { ReportTally } from '../reports/report.js';
import { compareWithPrevious } from './compare-previous.js';
import { keptLines, keptResults } from './kept-results.js';

/**
 * A run of many parts is aggregated a part at a time, so that no invocation's work grows with
 * the run but the one that merges the parts' tallies (whose state is a few bytes a result):
 *
 * 1. `tally` of each part (at once): the part's results read (in report order) into a
 *    `ReportTally`, saved with the results themselves (as JSON lines, kept-results.ts); the
 *    last part to finish asks for the reduction;
 * 2. `reduce`: the tallies merged in part order into the report (the same figures one pass
 *    gives), saved with the run's file layout; asks for every part's files;
 * 3. `files` of each part (at once): the part's results, as its tally kept them (one read of
 *    the scratch store, not of the table again), into its pieces of the item files (see
 *    reports/part-files.ts), told how many results the parts before it hold (where
 *    its rows of report.html's capped item table start); the last to finish asks for the assembly;
 * 4. `assemble`: the run's files composed of the parts' (S3 copies large stretches inside S3),
 *    report.json last; the run is done.
 *
 * Each step is held with a lease and marked done (`ChunkStore`, keyed by the run and the step),
 * so a step asked twice is done once, and a step whose invocation died is done again when its
 * message comes back; a step asks for the next before it is marked done, so that no death
 * between the two loses the next. What a step hands the next is an object in the bucket,
 * written the same when the step is done again; the last of a fan-out knows it is last by
 * counting its siblings' objects.
 *
 * Each step renews the claim on the run (`RunStore.holdAggregation`), so the claim lapses only
 * once no step has run for a lease: the steps stopped (one lost to the dead-letter queue). The
 * watchdog then sends the run to aggregation again, whose claim asks for every tally again with
 * `resume`: a step so asked that is done asks for the steps after it again, down to the first
 * not done, which goes on from there.
 */

export interface InPartsDeps {
  runStore: Pick<RunStore, 'getRun' | 'results' | 'partCount' | 'setStatus' | 'holdAggregation'>;
  /** Where the run's report files go. */
  reports: BlobStore;
  /** Where the steps hand each other their work (the bucket, under `spill/<runId>/aggregate/`). */
  scratch: BlobStore;
  steps: ChunkStore;
  trigger: StepTrigger;
  /** How long a step (and the run, by each step) is held: more than an aggregate invocation can run. */
  stepLeaseMs: number;
  /**
   * The suite's earlier runs: when given, the run is compared with the previous one (chosen
   * when the steps start), a tally of the comparison with each part's (see compare-parts.ts).
   */
  history?: RunHistory;
  now?: () => Date;
}

export type StepOutcome =
  | { status: 'done'; step: AggregationStep['step']; part?: number; next?: AggregationStep['step'] }
  /** The run is done: its report written by the assembly. */
  | { status: 'written'; report: Report; keys: string[] }
  /** Done before, held by another invocation, or the run is no longer aggregated: nothing was done. */
  | {
      status: 'skipped';
      step: AggregationStep['step'];
      part?: number;
      why: 'held' | 'done' | 'not aggregating';
    };

/** What the reduction hands the files' steps and the assembly. */
interface Reduced {
  report: Report;
  layout: FileLayoutState;
  /** The comparison's files, written by the reduction. */
  comparisonKeys: string[];
  /** Each part's results, in part order (where each part's rows of the item table start); absent in a reduction of an earlier release. */
  partItems?: number[];
}

/** The run the steps compare with (none: `{}`), chosen once, when the steps start. */
interface ComparedWith {
  baseRunId?: string;
  /** Why that run's results cannot be read. */
  error?: string;
}

const key = (runId: string, path: string) => aggregationKey(runId, path);
const TALLIES = 'tally/';
const COMPARISONS = 'compare/';
const FILES = 'files/';
/** Where a part's files step hands on its index (`PartFilesIndex`), for the assembly to read. */
export const partFilesIndexKey = (runId: string, part: number) => key(runId, `${FILES}${part}.json`);
/** Beside a part's tally: its results (see kept-results.ts). */
const KEPT = '.results.jsonl';
const REDUCED = 'reduced.json';
const COMPARED_WITH = 'compared-with.json';
/**
 * Requests in flight at once over the parts (messages sent, tallies and indexes read): a run of
 * hundreds of parts waits a round trip for every few, not for each.
 */
const PARTS_AT_ONCE = 8;
const range = (from: number, to: number) =>
  Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
/** `fn` for each part, a few at once; the results in part order. */
const eachPart = <R>(parts: number, fn: (part: number) => Promise<R>) =>
  mapLimit(range(0, parts), PARTS_AT_ONCE, fn);

/**
 * Starts the steps of a run of `parts` parts (it is claimed): chooses the run to compare with,
 * then asks for a tally of each part.
 */
export async function aggregateInParts(
  deps: Pick<InPartsDeps, 'trigger' | 'scratch' | 'history' | 'runStore'>,
  runId: string,
  parts: number,
) {
  const run = await deps.runStore.getRun(runId);
  if (!run) throw new RunNotFoundError(runId, `run ${runId} not found`);
  const found = deps.history && (await comparableRun(deps.history, run));
  const chosen: ComparedWith = found
    ? { baseRunId: found.run.runId, ...('error' in found ? { error: found.error } : {}) }
    : {};
  await deps.scratch.put(key(runId, COMPARED_WITH), JSON.stringify(chosen), 'application/json');
  await eachPart(parts, (part) => deps.trigger.triggerStep({ runId, step: 'tally', part, resume: true }));
}

/**
 * Does a step. A step that fails gives its lease up before the error goes on, so that its
 * redelivery, seconds later (the queue's backoff), takes the step again instead of finding it
 * held by the failed attempt until the lease lapses (if the lease cannot be given up, the error
 * says so, and the redelivery waits the lease out: see `LeaseKeptError`).
 */
export async function aggregationStep(deps: InPartsDeps, step: AggregationStep): Promise<StepOutcome> {
  const { runId } = step;
  const part = 'part' in step ? step.part : 0;
  const lease = `${runId}/${step.step}`;
  const claim = await deps.steps.claimChunk(lease, part, deps.stepLeaseMs);
  const skipped = (why: 'held' | 'done' | 'not aggregating'): StepOutcome => ({
    status: 'skipped',
    step: step.step,
    ...('part' in step ? { part } : {}),
    why,
  });
  if (!claim.claimed) {
    if (claim.why === 'done' && step.resume && (await deps.runStore.holdAggregation(runId, deps.stepLeaseMs)))
      await askAfter(deps, step);
    return skipped(claim.why);
  }
  return releasingOnFailure(
    () => claimedStep(deps, step, part, () => skipped('not aggregating')),
    () => deps.steps.releaseChunk(lease, part),
    deps.stepLeaseMs,
  );
}

/** A step whose lease this invocation holds. */
async function claimedStep(
  deps: InPartsDeps,
  step: AggregationStep,
  part: number,
  notAggregating: () => StepOutcome,
): Promise<StepOutcome> {
  const { runId } = step;
  // A run done (or given up) since the step was asked for: nothing to do.
  if (!(await deps.runStore.holdAggregation(runId, deps.stepLeaseMs))) return notAggregating();
  const run = await deps.runStore.getRun(runId);
  if (!run) throw new RunNotFoundError(runId, `run ${runId} not found`);
  const done = () => deps.steps.chunkProgress(`${runId}/${step.step}`, part, 1, true);
  switch (step.step) {
    case 'tally': {
      const tally = new ReportTally(run, taskFor(run.suite));
      const previous = await comparedWith(deps, run);
      await inOrder(deps, runId, part, async (results) => {
        // Kept as they are tallied: the part's files step reads them from there.
        await deps.scratch.putStream(
          key(runId, `${TALLIES}${part}${KEPT}`),
          keptLines(results(), (result) => tally.add(result)),
          'application/x-ndjson',
        );
        if (!previous || 'error' in previous || !comparableByParts(previous.run, run)) return;
        const comparison = await comparisonTallyOfPart(deps.history!, previous.run, run, part, { results });
        await deps.scratch.put(
          key(runId, `${COMPARISONS}${part}.bin`),
          comparison.toBytes(),
          'application/octet-stream',
        );
      });
      await deps.scratch.put(
        key(runId, `${TALLIES}${part}.bin`),
        tally.toBytes(),
        'application/octet-stream',
      );
      const last = await lastOf(deps, runId, TALLIES, '.bin');
      if (last) await deps.trigger.triggerStep({ runId, step: 'reduce' });
      await done();
      return { status: 'done', step: 'tally', part, ...(last ? { next: 'reduce' as const } : {}) };
    }
    case 'reduce': {
      const parts = await deps.runStore.partCount(runId);
      const family = taskFor(run.suite);
      let merged: ReportTally | undefined;
      // Each part's results, in part order: where each part's rows of the item table start.
      const partItems: number[] = [];
      // Read several at once, merged in part order; a window at a time, so that no more than a
      // window's tallies are held beside the merged one.
      for (let from = 0; from < parts; from += PARTS_AT_ONCE) {
        const read = await mapLimit(range(from, Math.min(parts, from + PARTS_AT_ONCE)), PARTS_AT_ONCE, (p) =>
          need(deps.scratch, key(runId, `${TALLIES}${p}.bin`)),
        );
        for (const bytes of read) {
          const tally = ReportTally.fromBytes(run, family, bytes);
          partItems.push(tally.count);
          if (merged) merged.merge(tally);
          else merged = tally;
        }
      }
      const report = await merged!.report(finishedAt(run, deps.now));
      // Compared only when this run scored something (an empty comparison says nothing).
      const previous = report.counts.scored > 0 ? await comparedWith(deps, run) : undefined;
      const comparisonKeys = previous
        ? await compareWithPrevious(deps.reports, run, report, previous, async () => {
            const tallies: ComparisonTally[] = [];
            if (comparableByParts(previous.run, run))
              for (const bytes of await eachPart(parts, (p) =>
                need(deps.scratch, key(runId, `${COMPARISONS}${p}.bin`)),
              ))
                tallies.push(ComparisonTally.fromBytes(previous.run, run, bytes));
            return comparisonOfParts(deps.history!, previous.run, run, tallies);
          })
        : [];
      const reduced: Reduced = { report, layout: merged!.layout.toState(), comparisonKeys, partItems };
      await deps.scratch.put(key(runId, REDUCED), JSON.stringify(reduced), 'application/json');
      await eachPart(parts, (p) => deps.trigger.triggerStep({ runId, step: 'files', part: p }));
      await done();
      return { status: 'done', step: 'reduce', next: 'files' };
    }
    case 'files': {
      const { report, layout, partItems } = await reducedOf(deps.scratch, runId);
      const family = taskFor(run.suite);
      const before = partItems?.slice(0, part).reduce((a, b) => a + b, 0);
      const write = (results: ResultSource) =>
        writePartFiles(
          deps.scratch,
          (name) => key(runId, `${FILES}${part}/${name}`),
          part,
          results(),
          family,
          run.suite,
          FileLayout.fromState(family, run.suite, layout),
          report.counts.items,
          before === undefined ? {} : { before },
        );
      // The results its tally kept, or (kept by none: a tally of an earlier release) the table's.
      const kept = await keptResults(deps.scratch, key(runId, `${TALLIES}${part}${KEPT}`));
      const index = kept ? await write(kept) : await inOrder(deps, runId, part, write);
      await deps.scratch.put(partFilesIndexKey(runId, part), JSON.stringify(index), 'application/json');
      const last = await lastOf(deps, runId, FILES, '.json');
      if (last) await deps.trigger.triggerStep({ runId, step: 'assemble' });
      await done();
      return { status: 'done', step: 'files', part, ...(last ? { next: 'assemble' as const } : {}) };
    }
    case 'assemble': {
      const { report, layout, comparisonKeys } = await reducedOf(deps.scratch, runId);
      const parts = await deps.runStore.partCount(runId);
      const indexes: PartFilesIndex[] = await eachPart(parts, async (p) =>
        JSON.parse(text(await need(deps.scratch, partFilesIndexKey(runId, p)))),
      );
      const family = taskFor(run.suite);
      const keys = await assembleReportFiles(
        deps.reports,
        run.reportPrefix,
        report,
        indexes,
        run.suite,
        FileLayout.fromState(family, run.suite, layout),
      );
      await deps.runStore.setStatus(runId, 'done', report.finishedAt ?? undefined);
      await done();
      return { status: 'written', report, keys: [...keys, ...comparisonKeys] };
    }
  }
}

/**
 * A part's results in report order (by row: parts are consecutive stretches of rows, so the
 * parts in order are the run in report order), to `use`; a store may give them in another order.
 */
async function inOrder<T>(
  deps: InPartsDeps,
  runId: string,
  part: number,
  use: (results: ResultSource) => Promise<T>,
): Promise<T> {
  // Read from the table once: every read of it is paid for, at the aggregation's pace.
  const ordered = await inReportOrder(() => deps.runStore.results(runId, part), { readOnce: true });
  try {
    return await use(ordered.results);
  } finally {
    await ordered.close();
  }
}

/**
 * A resumed step found done asks again for what it asked for when it was done (a fan-out's
 * member, only once all its siblings are done too), resumed as well.
 */
async function askAfter(deps: InPartsDeps, step: AggregationStep): Promise<void> {
  const { runId } = step;
  switch (step.step) {
    case 'tally':
      if (await lastOf(deps, runId, TALLIES, '.bin'))
        await deps.trigger.triggerStep({ runId, step: 'reduce', resume: true });
      return;
    case 'reduce': {
      const parts = await deps.runStore.partCount(runId);
      await eachPart(parts, (p) => deps.trigger.triggerStep({ runId, step: 'files', part: p, resume: true }));
      return;
    }
    case 'files':
      if (await lastOf(deps, runId, FILES, '.json'))
        await deps.trigger.triggerStep({ runId, step: 'assemble', resume: true });
      return;
    case 'assemble':
      return;
  }
}

/** The run the steps compare with, as chosen when they started (none without a history). */
async function comparedWith(deps: InPartsDeps, run: RunRecord): Promise<ComparableRun | undefined> {
  if (!deps.history) return undefined;
  const saved = await deps.scratch.get(key(run.runId, COMPARED_WITH));
  const chosen: ComparedWith = saved ? JSON.parse(text(saved)) : {};
  if (chosen.baseRunId === undefined) return undefined;
  const previous = await deps.history.getRun(chosen.baseRunId);
  if (!previous) return undefined;
  return chosen.error === undefined ? { run: previous } : { run: previous, error: chosen.error };
}

/** A finished run keeps its finish time when its report is built again; else now. */
function finishedAt(run: RunRecord, now?: () => Date): string {
  return run.status === 'done' && run.finishedAt
    ? run.finishedAt
    : (now ?? (() => new Date()))().toISOString();
}

/** Whether every part has handed its object on under `folder` (this step's was the last). */
async function lastOf(deps: InPartsDeps, runId: string, folder: string, ending: string): Promise<boolean> {
  const parts = await deps.runStore.partCount(runId);
  const handed = (await deps.scratch.list(key(runId, folder))).filter((k) => {
    const name = k.slice(key(runId, folder).length);
    return !name.includes('/') && name.endsWith(ending);
  });
  return handed.length >= parts;
}

async function reducedOf(scratch: BlobStore, runId: string): Promise<Reduced> {
  return JSON.parse(text(await need(scratch, key(runId, REDUCED)))) as Reduced;
}

async function need(scratch: BlobStore, path: string): Promise<Uint8Array> {
  const body = await scratch.get(path);
  if (!body) throw new StepInputMissingError(`${path} is missing: the step before it has not handed it on`);
  return body;
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** What a step reads was not there (yet): its message comes back, and the step is tried again. */
export class StepInputMissingError extends ServiceError {
  override readonly name = 'StepInputMissingError';
}
