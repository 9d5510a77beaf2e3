import type { Report } from '../model/report.js';
import { leaderboardEntry } from '../model/report.js';
import type { BlobStore, Leaderboard, RunHistory, SweepStore } from '../ports/ports.js';
import type { AggregateOutcome } from './aggregate-run.js';
import { type AggregateSweepOutcome, aggregateSweep } from './aggregate-sweep.js';
import { publishToLeaderboard } from './publish-leaderboard.js';

export interface FinishRunDeps {
  /** Reads the run, and for its sweeps the variant runs and their results. */
  runs: RunHistory;
  /** Where the run's report files are: `report.json` under the run's `reportPrefix`. */
  reports: BlobStore;
  leaderboard: Leaderboard;
  /**
   * Where `leaderboard.json` / `leaderboard.txt` are written anew from every entry, under
   * `prefix` (the bucket's reports/). Without it the entry is only recorded: the local shell
   * shows the board with `assay leaderboard`.
   */
  leaderboardFiles?: { blobs: BlobStore; prefix: string };
  sweeps: SweepStore;
  /** Where a sweep's report files go (the bucket on AWS, the sweep's folder locally). */
  sweepFiles(sweepId: string): BlobStore;
  /**
   * Why the run was stopped (`assay cloud stop`, a deploy limit), if it was: a stopped run's
   * figures cover only the items scored before, so it does not join the leaderboard.
   */
  stopped?(runId: string): Promise<string | undefined>;
  now?: () => Date;
}

export type FinishRunOutcome =
  /** The run is not `done` (not complete yet, or another caller is aggregating it): nothing to finish. */
  | { status: 'not-done'; reason: string }
  | {
      status: 'finished';
      /** Whether the run's entry was recorded (false when it has no report to publish, or was stopped). */
      recorded: boolean;
      /** The run was stopped, and why: its report stands, the leaderboard leaves it out. */
      stopped?: string;
      /** The leaderboard files written. */
      leaderboardKeys: string[];
      /** Every sweep the run is a variant of, and what aggregating it did. */
      sweeps: { sweepId: string; outcome: AggregateSweepOutcome }[];
    };

/**
 * What follows a finished run, in both shells: its report joins the leaderboard, and every
 * sweep it completes is aggregated. Idempotent, so a retried trigger (or a run started again
 * after it finished) finishes whatever an earlier attempt left undone: the leaderboard entry
 * is replaced, and a sweep already aggregated is skipped.
 *
 * `aggregated` is what aggregating the run just did; when it wrote no report (an earlier
 * delivery did), the report is read back from the run's report.json.
 */
export async function finishRun(
  deps: FinishRunDeps,
  runId: string,
  aggregated?: AggregateOutcome,
): Promise<FinishRunOutcome> {
  const run = await deps.runs.getRun(runId);
  if (!run) return { status: 'not-done', reason: `no run ${runId}` };
  if (run.status !== 'done') return { status: 'not-done', reason: `run is ${run.status}` };
  const report =
    aggregated?.status === 'written'
      ? aggregated.report
      : await readReport(deps.reports, `${run.reportPrefix}report.json`);
  let leaderboardKeys: string[] = [];
  const stopped = await deps.stopped?.(runId);
  if (stopped !== undefined) {
    // Its report is written; a board entry would rank a part of the dataset against whole runs.
  } else if (report && deps.leaderboardFiles) {
    const { blobs, prefix } = deps.leaderboardFiles;
    leaderboardKeys = await publishToLeaderboard(
      { leaderboard: deps.leaderboard, reports: blobs },
      report,
      prefix,
    );
  } else if (report) await deps.leaderboard.record(leaderboardEntry(report));
  const sweeps: { sweepId: string; outcome: AggregateSweepOutcome }[] = [];
  for (const sweepId of await deps.sweeps.sweepsOf(runId)) {
    const sweepDeps = {
      sweeps: deps.sweeps,
      runs: deps.runs,
      reports: deps.sweepFiles(sweepId),
      ...(deps.now ? { now: deps.now } : {}),
    };
    sweeps.push({ sweepId, outcome: await aggregateSweep(sweepDeps, sweepId) });
  }
  return {
    status: 'finished',
    recorded: report !== undefined && stopped === undefined,
    leaderboardKeys,
    sweeps,
    ...(stopped !== undefined ? { stopped } : {}),
  };
}

async function readReport(blobs: BlobStore, key: string): Promise<Report | undefined> {
  const body = await blobs.get(key);
  return body ? (JSON.parse(new TextDecoder().decode(body)) as Report) : undefined;
}
