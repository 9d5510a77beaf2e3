/**
 * What the modes of a chunk's ingest share: the lease names of the passes that cut or split a
 * dataset, reading the run's object (or saying why it cannot be read), a chunk's rows as entries,
 * duplicates marked as failed results, and handing a chunk's entries on to the queue and the run.
 */
import type { RawRow } from '../../lib/datasets/read.js';
import { BlobChangedError } from '../../model/errors.js';
import type { Item, ItemMessage, RunRecord } from '../../model/model.js';
import type { BlobStore } from '../../ports/ports.js';
import { duplicateReason, type InvalidRow, invalidOf, invalidResult, rowParser } from '../start-run.js';
import type { ChunkOutcome, ChunkTask, IngestChunkDeps } from './types.js';

/** One row of a chunk as it is handed on. */
export interface Entry {
  row: number;
  item?: Item;
  /** The row's fields (a duplicate's failed result shows them). */
  record?: Record<string, string>;
  /** Why the row is no item (it is recorded as a failed result), with what the row holds. */
  invalid?: InvalidRow;
}

/** The pass over a dataset's bytes that finds its ranges holds its stretch under this chunk name. */
export const scanLease = (runId: string) => `${runId}/ranges`;
/** The pass that splits a dataset into chunk objects holds its stretch under this chunk name. */
export const splitLease = (runId: string) => `${runId}/split`;

export const rejectedChunk = (task: ChunkTask, reason: string): ChunkOutcome => ({
  status: 'rejected',
  runId: task.runId,
  chunk: task.chunk,
  reason,
});

/** The object the run reads, from `start` (to `end`), or why it cannot be read. */
export async function readObject(
  deps: IngestChunkDeps,
  task: ChunkTask,
  range: { start: number; end?: number },
): Promise<NonNullable<Awaited<ReturnType<BlobStore['read']>>> | { rejected: string }> {
  const { runId } = task;
  try {
    const object = await deps.bucket.read(task.key, { ...range, version: task.version });
    if (!object) return { rejected: `${task.key} is gone (deleted while run ${runId} was reading it)` };
    return object;
  } catch (error) {
    if (!(error instanceof BlobChangedError)) throw error;
    return { rejected: replacedReason(task) };
  }
}

export const replacedReason = ({ key, runId }: ChunkTask) =>
  `${key} was replaced while run ${runId} was reading it; the run stays incomplete (upload the dataset again for a new run)`;

/** How a chunk reads the run's dataset: the suite's dataset keys, the file named for errors, the deployment's reader limits. */
export function datasetOptions(deps: IngestChunkDeps, run: RunRecord, file: string) {
  return { ...run.suite.dataset, file, ...(deps.readerLimits ? { limits: deps.readerLimits } : {}) };
}

/** A chunk's rows as ingest takes them: items, or invalid rows with why. */
export function parsedEntries(run: RunRecord, rows: readonly RawRow[]): Entry[] {
  const parse = rowParser(run);
  return rows.map((raw) => {
    const parsed = parse(raw);
    return 'error' in parsed
      ? { row: raw.row, invalid: invalidOf(parsed) }
      : { row: raw.row, item: parsed.item, record: raw.record };
  });
}

/** The row's id is held by an earlier row, `first`: it is a failed result naming that row. */
export function markDuplicate(entry: Entry, first: number): void {
  entry.invalid = { reason: duplicateReason(entry.item!.id, first), input: entry.record ?? {} };
  entry.item = undefined;
}

/**
 * Items handed to the queue at once: the queue sends them in batches of ten, several at a time,
 * so a chunk's fifty thousand items go in well under a minute.
 */
const SEND_EVERY = 1_000;

/** Rows a chunk hands on between two marks of its progress. */
const PROGRESS_EVERY = 2_000;

/**
 * Hands a chunk's entries on in order, from where an earlier holder of the chunk stopped: items
 * sent (unless the run is sampled), invalid rows recorded in `part`, progress marked as it goes.
 */
export async function handOn(
  deps: IngestChunkDeps,
  runId: string,
  chunk: number,
  entries: readonly Entry[],
  handed: number,
  part: number,
  sendItems = true,
): Promise<{ queued: number; invalidRows: number }> {
  const now = deps.now ?? (() => new Date());
  let pending: ItemMessage[] = [];
  let queued = 0;
  const flush = async () => {
    if (pending.length > 0) await deps.queue.sendItems(pending);
    pending = [];
  };
  for (let i = handed; i < entries.length; i += 1) {
    const entry = entries[i]!;
    if (entry.invalid)
      await deps.runStore.recordResult(
        invalidResult(runId, { row: entry.row, part, ...entry.invalid }, now()),
      );
    else if (sendItems) {
      pending.push({ runId, item: entry.item!, ...(part ? { part } : {}) });
      queued += 1;
      if (pending.length >= SEND_EVERY) await flush();
    }
    if ((i + 1) % PROGRESS_EVERY === 0) {
      await flush();
      await deps.chunks.chunkProgress(runId, chunk, i + 1);
    }
  }
  await flush();
  return { queued, invalidRows: entries.filter((entry) => entry.invalid).length };
}

/** What a chunk that was read did, as its outcome says it. */
export type IngestedChunk = Omit<Extract<ChunkOutcome, { status: 'ingested' }>, 'status'>;

/**
 * A chunk read and closed: its progress recorded as done, the run sent to aggregation when the
 * chunk's close made it complete, and its outcome.
 */
export async function chunkDone(deps: IngestChunkDeps, done: IngestedChunk): Promise<ChunkOutcome> {
  await deps.chunks.chunkProgress(done.runId, done.chunk, done.rows, true);
  if (done.complete) await deps.trigger.trigger(done.runId);
  return { status: 'ingested', ...done };
}
