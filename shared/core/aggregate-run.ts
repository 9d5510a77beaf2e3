import type { BlobStore, RunStore } from '../ports.js';
import { writeReportFiles } from '../reports/files.js';
import { buildReport, type Report, reportOrder } from '../reports/report.js';
import { taskFor } from '../tasks/registry.js';
import type { ItemResult } from './model.js';

export interface AggregateDeps {
  runStore: RunStore;
  /** Where report files go (the bucket on AWS, the run folder locally). */
  reports: BlobStore;
  now?: () => Date;
}

export type AggregateOutcome =
  | { status: 'written'; report: Report; keys: string[] }
  | { status: 'skipped'; reason: string };

/**
 * Claims the run (exactly one caller wins, however many triggers arrive), streams its
 * results, computes metrics and cost, writes the report files and marks the run done.
 */
export async function aggregateRun(deps: AggregateDeps, runId: string): Promise<AggregateOutcome> {
  const claimed = await deps.runStore.claimAggregation(runId);
  if (!claimed) return { status: 'skipped', reason: 'already claimed, finished, or not complete' };
  try {
    const outcome = await writeRunReport(deps, runId);
    await deps.runStore.setStatus(runId, 'done', outcome.report.finishedAt);
    return outcome;
  } catch (error) {
    // Give the run back so a retried trigger can claim it again.
    await deps.runStore.setStatus(runId, 'running');
    throw error;
  }
}

/** Builds and writes the report from the stored results, without claiming (`assay report`). */
export async function writeRunReport(
  deps: AggregateDeps,
  runId: string,
): Promise<{ status: 'written'; report: Report; keys: string[] }> {
  const run = await deps.runStore.getRun(runId);
  if (!run) throw new Error(`run ${runId} not found`);
  const stored: ItemResult[] = [];
  for await (const result of deps.runStore.results(runId)) stored.push(result);
  const results = reportOrder(stored);
  const finishedAt = (deps.now ?? (() => new Date()))().toISOString();
  const report = buildReport(run, results, taskFor(run.suite), finishedAt);
  const keys = await writeReportFiles(deps.reports, run.reportPrefix, report, results);
  return { status: 'written', report, keys };
}
