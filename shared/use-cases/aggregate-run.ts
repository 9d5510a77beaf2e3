import { RunNotFoundError } from '../model/errors.js';
import type { Report } from '../model/report.js';
import { inReportOrder } from '../model/report-order.js';
import type { BlobStore, RunHistory, RunStore } from '../ports/ports.js';
import { taskFor } from '../registry/registry.js';
import { comparableRun, comparisonOfRuns } from '../reports/compare-parts.js';
import { FileLayout, writeReportFiles } from '../reports/files.js';
import { buildReport } from '../reports/report.js';
import { aggregateInParts, type InPartsDeps } from './aggregate-parts.js';
import { compareWithPrevious } from './compare-previous.js';

export interface AggregateDeps {
  runStore: RunStore;
  /** Where report files go (the bucket on AWS, the run folder locally). */
  reports: BlobStore;
  /** When given, the report is compared with the suite's previous finished run. */
  history?: RunHistory;
  /**
   * How long a claim on the run holds it (ms): an aggregation that dies leaves the run to be
   * claimed again once this has passed. Default {@link DEFAULT_AGGREGATION_LEASE_MS}.
   */
  leaseMs?: number;
  /**
   * A run of several parts with at least `fromResults` results is aggregated a part at a time,
   * a step per invocation (see aggregate-parts.ts); without it, every run in one pass.
   */
  inParts?: Omit<InPartsDeps, 'runStore' | 'reports' | 'now'> & { fromResults: number };
  now?: () => Date;
}

/** A claim's lease when none is given: longer than any aggregation a Lambda can run (15 minutes). */
export const DEFAULT_AGGREGATION_LEASE_MS = 16 * 60_000;

export type AggregateOutcome =
  | { status: 'written'; report: Report; keys: string[] }
  /** Aggregated a part at a time: the parts' tallies are asked for, the report comes with the last step. */
  | { status: 'in-parts'; parts: number }
  | { status: 'skipped'; reason: string };

/** Why an aggregation wrote no report now. */
export function whyNotWritten(outcome: Exclude<AggregateOutcome, { status: 'written' }>): string {
  return outcome.status === 'skipped'
    ? outcome.reason
    : `aggregated in ${outcome.parts} parts: the report comes with the last step`;
}

/**
 * Claims the run (exactly one caller wins, however many triggers arrive), streams its
 * results, computes metrics and cost, writes the report files and marks the run done.
 */
export async function aggregateRun(deps: AggregateDeps, runId: string): Promise<AggregateOutcome> {
  const claimed = await deps.runStore.claimAggregation(runId, deps.leaseMs ?? DEFAULT_AGGREGATION_LEASE_MS);
  if (!claimed) return { status: 'skipped', reason: 'already claimed, finished, or not complete' };
  if (deps.inParts) {
    const parts = await deps.runStore.partCount(runId);
    const results = (await deps.runStore.getRun(runId))?.total ?? 0;
    if (parts > 1 && results >= deps.inParts.fromResults) {
      await aggregateInParts(
        { ...deps.inParts, runStore: deps.runStore, ...(deps.history ? { history: deps.history } : {}) },
        runId,
        parts,
      );
      return { status: 'in-parts', parts };
    }
  }
  try {
    const outcome = await writeRunReport(deps, runId);
    await deps.runStore.setStatus(runId, 'done', outcome.report.finishedAt ?? undefined);
    return outcome;
  } catch (error) {
    // Give the run back so a retried trigger can claim it again.
    await deps.runStore.setStatus(runId, 'running');
    throw error;
  }
}

/**
 * Builds and writes the report from the stored results, without claiming (`assay report`).
 * The results stream: they are put in report order with bounded memory (see `inReportOrder`),
 * read once for the figures and once for the item files, and side by side with the previous
 * run's for a comparison (see compare-parts.ts).
 */
export async function writeRunReport(
  deps: AggregateDeps,
  runId: string,
): Promise<{ status: 'written'; report: Report; keys: string[] }> {
  const run = await deps.runStore.getRun(runId);
  if (!run) throw new RunNotFoundError(runId, `run ${runId} not found`);
  const family = taskFor(run.suite);
  const ordered = await inReportOrder(() => deps.runStore.results(runId));
  try {
    // A finished run keeps its finish time when its report is rebuilt.
    const finishedAt =
      run.status === 'done' && run.finishedAt
        ? run.finishedAt
        : (deps.now ?? (() => new Date()))().toISOString();
    const layout = new FileLayout(family, run.suite);
    const report = await buildReport(run, ordered.results, family, finishedAt, (r) => layout.add(r));
    const keys: string[] = [];
    // Compared only with an earlier run of the suite on the same dataset that scored something,
    // and only when this run scored something: an empty comparison says nothing.
    const { history } = deps;
    const found = history && report.counts.scored > 0 ? await comparableRun(history, run) : undefined;
    if (history && found)
      keys.push(
        ...(await compareWithPrevious(deps.reports, run, report, found, () =>
          comparisonOfRuns(history, found.run, run, { results: ordered.results }),
        )),
      );
    keys.unshift(
      ...(await writeReportFiles(deps.reports, run.reportPrefix, report, ordered.results, run.suite, layout)),
    );
    return { status: 'written', report, keys };
  } finally {
    await ordered.close();
  }
}
