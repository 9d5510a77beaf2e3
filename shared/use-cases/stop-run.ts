import { RunNotFoundError } from '../model/errors.js';
import type { Failure } from '../model/model.js';
import type { AggregateTrigger, RunStore } from '../ports/ports.js';
import { endItemFailed } from './end-item.js';

export type StopOutcome =
  /** The run is stopped now (or was already: `reason` is the first stop's). */
  | { status: 'stopped'; runId: string; runStatus: string }
  /** The run is done: there was nothing left to stop. */
  | { status: 'done'; runId: string };

/**
 * Stops a run (`assay cloud stop`): its items that have no result yet end as failed `stopped`
 * without a model call, as the workers reach them; items already being scored finish. The run
 * still completes (every item ends as exactly one result) and is reported. Throws
 * {@link RunNotFoundError} for an unknown run, and an error for a store that cannot stop runs.
 */
export async function stopRun(
  runStore: Pick<RunStore, 'getRun' | 'stop'>,
  runId: string,
  reason: string,
): Promise<StopOutcome> {
  const run = await runStore.getRun(runId);
  if (!run) throw new RunNotFoundError(runId, `run ${runId} not found`);
  if (run.status === 'done') return { status: 'done', runId };
  if (!runStore.stop) throw new Error('this run store cannot stop runs');
  await runStore.stop(runId, reason);
  return { status: 'stopped', runId, runStatus: run.status };
}

export interface HaltDeps {
  runStore: Pick<RunStore, 'recordResult' | 'stopped' | 'spentToday' | 'flushSpend'>;
  trigger: AggregateTrigger;
  /** The deployment's daily spend limit across runs, USD; unset or 0: none. */
  dailySpendLimitUsd?: number;
  now?: () => Date;
}

/** Whether an item may be scored now, and the day's spend when it was read. */
export interface HaltCheck {
  /** Why the item must not be scored: it ends with this failure, no model called. */
  failure?: Failure;
  /** The day's spend across runs as read for the check (USD); undefined when not read. */
  daySpentUsd?: number;
}

/**
 * Looks, before an item is scored, at what stops it whatever its suite says: its run was
 * stopped (it fails as `stopped`), or the day's spend across runs has reached the deployment's
 * daily limit (it fails as `budget`, which a resumed run replaces, as when its own budget is
 * spent). The day's spend is what the results cost at the deployment's prices: a deployment's
 * workers cost a call of a model it prices at its price, whatever the suite's `run.prices` say.
 * The store answers both from short caches, so this costs a read every few seconds.
 */
export async function haltCheck(deps: HaltDeps, runId: string): Promise<HaltCheck> {
  const reason = await deps.runStore.stopped?.(runId);
  if (reason !== undefined)
    return { failure: { kind: 'stopped', message: `the run was stopped: ${reason}` } };
  const limit = deps.dailySpendLimitUsd;
  if (!limit || !deps.runStore.spentToday) return {};
  const daySpentUsd = await deps.runStore.spentToday();
  if (daySpentUsd < limit) return { daySpentUsd };
  return {
    daySpentUsd,
    failure: {
      kind: 'budget',
      message: `the deployment's daily spend limit of $${limit} (dailySpendLimitUsd, across runs, per UTC day) is spent ($${daySpentUsd.toFixed(4)} today); the item is resumed when the run is started again after midnight UTC or under a higher limit`,
    },
  };
}

/** Ends an item that must not be scored with `failure`, as its one result; asks for aggregation when that completes the run. */
export const endHalted = endItemFailed;
