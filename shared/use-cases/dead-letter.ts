import { RunNotFoundError } from '../model/errors.js';
import type { ItemMessage } from '../model/model.js';
import type { RecordOutcome, RunStore } from '../ports/ports.js';
import { type EndItemDeps, endItemFailed } from './end-item.js';

/**
 * A message that exhausted its receives becomes a failed result, so the run still completes.
 * If the item already has a result (it was scored, then the message was redelivered until it
 * died), nothing changes.
 */
export async function recordDeadLetter(
  deps: EndItemDeps,
  message: ItemMessage,
  reason: string,
): Promise<RecordOutcome> {
  const { outcome } = await endItemFailed(deps, message, { kind: 'dead_letter', message: reason });
  return outcome;
}

/** A chunk of a run's ingest whose task exhausted its receives. */
export interface DeadChunk {
  runId: string;
  chunk: number;
  /** The dataset object the chunk is of, when the task says. */
  key?: string;
}

export interface DeadChunkDeps {
  runStore: Pick<RunStore, 'getRun' | 'stop' | 'setStatus'>;
  now?: () => Date;
}

export type DeadChunkOutcome =
  /** The run is failed now, with `reason`; its items that have no result end as `stopped`. */
  | { status: 'failed'; runId: string; reason: string }
  /**
   * Nothing to end: the run is over already (`done`, `failed`), or every part of it was closed
   * (`handed-on`: the chunk's task died after its rows were handed on, the run completes as usual).
   */
  | { status: 'unchanged'; runId: string; why: 'done' | 'failed' | 'handed-on' };

/**
 * An ingest chunk whose task exhausted its receives: its rows were never (or not all) handed on,
 * and no one else will read them, so the run could never complete and would stay `ingesting`.
 * It ends `failed` instead, and stopped with a reason that names the chunk and why (`why`:
 * e.g. how many receives it had): the workers end its items still queued as `stopped` without
 * a model call, so nothing more is spent on a run that cannot be reported. Idempotent: a run
 * stopped before keeps its first reason. Throws {@link RunNotFoundError} for an unknown run.
 */
export async function endRunOfDeadChunk(
  deps: DeadChunkDeps,
  dead: DeadChunk,
  why: string,
): Promise<DeadChunkOutcome> {
  const { runStore } = deps;
  const { runId } = dead;
  const run = await runStore.getRun(runId);
  if (!run) throw new RunNotFoundError(runId, `run ${runId} not found`);
  if (run.status === 'done' || run.status === 'failed')
    return { status: 'unchanged', runId, why: run.status };
  // A total is known once every part is closed: the whole dataset was handed on.
  if (run.total !== undefined) return { status: 'unchanged', runId, why: 'handed-on' };
  const of = dead.key === undefined ? '' : ` of ${dead.key}`;
  const reason = `ingest chunk ${dead.chunk}${of} ${why}: its rows were not all read, so the run cannot complete and ends failed`;
  await runStore.stop?.(runId, reason);
  await runStore.setStatus(runId, 'failed', (deps.now ?? (() => new Date()))().toISOString());
  return { status: 'failed', runId, reason };
}
