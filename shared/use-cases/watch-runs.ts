import type { AggregateTrigger, RunStore } from '../ports/ports.js';

export interface WatchRunsDeps {
  runStore: Pick<RunStore, 'activeRuns' | 'noteProgress'>;
  trigger: AggregateTrigger;
  /** A run whose progress has not moved for this long (ms) is stuck. */
  stuckAfterMs: number;
  now?: () => number;
}

export interface WatchOutcome {
  /** Runs not done, looked at. */
  checked: number;
  /** Runs sent to aggregation again: complete with nobody aggregating them, or held by a lapsed claim. */
  retriggered: string[];
  /** Runs whose progress has not moved for `stuckAfterMs`: what an alarm should say. */
  stuck: { runId: string; status: string; quietMs: number }[];
}

/**
 * The watchdog's pass over the runs not done yet, on a schedule: a run whose every result is
 * in but that nobody aggregates (its triggers lost), or whose aggregation claim lapsed (the
 * aggregation died), is sent to aggregation again; a run whose progress (results recorded,
 * rows handed on) has not moved for `stuckAfterMs` is reported stuck, whatever its state, so
 * that an alarm says so instead of the run waiting for ever.
 */
export async function watchRuns(deps: WatchRunsDeps): Promise<WatchOutcome> {
  const now = (deps.now ?? Date.now)();
  const outcome: WatchOutcome = { checked: 0, retriggered: [], stuck: [] };
  for (const run of await deps.runStore.activeRuns()) {
    // A failed run is over (its stop reason says why): nothing will move it again.
    if (run.status === 'failed') continue;
    outcome.checked += 1;
    const waiting = (run.status === 'running' || run.status === 'ingesting') && run.complete;
    const lapsed = run.status === 'aggregating' && run.leaseUntil !== undefined && run.leaseUntil <= now;
    if (waiting || lapsed) {
      await deps.trigger.trigger(run.runId);
      outcome.retriggered.push(run.runId);
    }
    if (run.watched?.progress !== run.progress) {
      await deps.runStore.noteProgress(run.runId, run.progress, now);
      continue;
    }
    const quietMs = now - Math.max(run.watched.since, run.statusSince);
    if (quietMs >= deps.stuckAfterMs) outcome.stuck.push({ runId: run.runId, status: run.status, quietMs });
  }
  return outcome;
}
