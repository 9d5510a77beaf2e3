import { StoredDataError } from '../model/codec.js';
import { RunNotFoundError } from '../model/errors.js';
import { type ItemResult, type RunRecord, resultCost } from '../model/model.js';
import type { Report } from '../model/report.js';
import { compareReportOrder, inReportOrder } from '../model/report-order.js';
import type { BlobStore, RunHistory, RunStore } from '../ports/ports.js';
import { taskFor } from '../registry/registry.js';
import { compareRuns, comparisonSummary } from '../reports/compare-runs.js';
import { writeComparisonFiles } from '../reports/comparison.js';
import { FileLayout, writeReportFiles } from '../reports/files.js';
import { buildReport } from '../reports/report.js';
import { aggregateInParts, type InPartsDeps } from './aggregate-parts.js';

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
      await aggregateInParts(deps.inParts, runId, parts);
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
 * read once for the figures and once for the item files; only a comparison with a previous
 * run holds both runs' results (the parts of them it reads: see `comparedPart`).
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
    if (deps.history && report.counts.scored > 0) {
      const found = await comparableRun(deps.history, run);
      if (found && 'error' in found) report.comparison = { baseRunId: found.run.runId, error: found.error };
      else if (found) {
        const results: ItemResult[] = [];
        for await (const result of ordered.results()) results.push(comparedPart(result));
        const comparison = compareRuns(found, { run, results });
        if ((comparison.scores[comparison.primaryScorer]?.n ?? 0) > 0) {
          report.comparison = { ...comparisonSummary(comparison) };
          keys.push(...(await writeComparisonFiles(deps.reports, run.reportPrefix, comparison)));
        }
      }
    }
    keys.unshift(
      ...(await writeReportFiles(deps.reports, run.reportPrefix, report, ordered.results, run.suite, layout)),
    );
    return { status: 'written', report, keys };
  } finally {
    await ordered.close();
  }
}

/**
 * What a comparison reads of a result, and no more: its id, row, status and failure, gold,
 * input and scores, with its stages folded into one that costs what they cost together
 * (`resultCost` gives the same total, to the last bit). The output, details, raw text and
 * per-stage spend are left out: a comparison holds both runs' results, and those are most of
 * a result's size.
 */
function comparedPart(result: ItemResult): ItemResult {
  const part: ItemResult = {
    schemaVersion: result.schemaVersion,
    runId: result.runId,
    itemId: result.itemId,
    row: result.row,
    status: result.status,
    input: result.input,
    scores: result.scores,
    stages: { all: { calls: 0, cachedCalls: 0, costUsd: resultCost(result), latencyMs: 0, usage: NO_USAGE } },
    simulated: result.simulated,
    finishedAt: '',
  };
  if (result.gold !== undefined) part.gold = result.gold;
  if (result.failure !== undefined) part.failure = result.failure;
  return part;
}

const NO_USAGE = Object.freeze({ input: 0, output: 0, cached: 0 });

/** Earlier runs looked at, newest first, for one to compare with. */
const COMPARABLE_LOOKBACK = 20;

/**
 * The newest earlier finished run of the suite on the same dataset with a scored item, with its
 * results (in report order); or the run whose stored results cannot be read, and why.
 */
async function comparableRun(
  history: RunHistory,
  run: RunRecord,
): Promise<{ run: RunRecord; results: ItemResult[] } | { run: RunRecord; error: string } | undefined> {
  const seen = new Set([run.runId]);
  let cursor = run.runId;
  for (let i = 0; i < COMPARABLE_LOOKBACK; i += 1) {
    const previous = await history.previousRun(run.suiteName, cursor);
    if (!previous || seen.has(previous.runId)) return undefined;
    seen.add(previous.runId);
    cursor = previous.runId;
    if (previous.datasetKey !== run.datasetKey) continue;
    const results: ItemResult[] = [];
    try {
      for await (const result of history.results(previous.runId)) results.push(comparedPart(result));
      results.sort(compareReportOrder);
    } catch (error) {
      // The report is still written; it says why it could not compare.
      if (!(error instanceof StoredDataError)) throw error;
      return { run: previous, error: error.message };
    }
    if (results.some((r) => r.status === 'scored')) return { run: previous, results };
  }
  return undefined;
}
