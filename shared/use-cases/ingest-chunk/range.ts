/**
 * A range of a dataset cut up front, or a chunk object of a split one: its rows read, its item ids
 * claimed, and its rows handed on once every range before it has claimed theirs.
 */
import { readRange } from '../../lib/datasets/chunks.js';
import { blobSource } from '../../lib/datasets/source.js';
import { readSplitChunk } from '../../lib/datasets/split.js';
import { BlobChangedError } from '../../model/errors.js';
import { itemLimitReason } from '../deploy-limits.js';
import { unreadableReason } from '../start-run.js';
import {
  chunkDone,
  datasetOptions,
  handOn,
  markDuplicate,
  parsedEntries,
  readObject,
  rejectedChunk,
  replacedReason,
} from './common.js';
import type { ChunkOutcome, ChunkTask, IngestChunkDeps } from './types.js';

/** A range of a dataset cut up front: read, its ids claimed, its rows handed on once the ranges before it have claimed theirs. */
export async function ingestRange(
  deps: IngestChunkDeps,
  task: ChunkTask & { end: number },
): Promise<ChunkOutcome> {
  const { runStore, chunks } = deps;
  const { runId, chunk } = task;
  const run = await runStore.getRun(runId);
  if (!run) return rejectedChunk(task, `run ${runId} does not exist`);
  let claim = await chunks.claimChunk(runId, chunk, deps.chunkLeaseMs);
  if (!claim.claimed) return { status: 'skipped', runId, chunk, why: claim.why };

  const options = {
    ...datasetOptions(deps, run, task.key),
    ...(task.rowGroups ? { rowGroups: task.rowGroups } : {}),
  };
  let read: Awaited<ReturnType<typeof readRange>>;
  if (task.rowGroups) {
    // Parquet is read by position: the footer, then the range's row groups.
    try {
      read = await readRange(
        blobSource(deps.bucket, task.key, { size: task.end, version: task.version }),
        task.format,
        options,
        { ...task, row: 0 },
      );
    } catch (error) {
      if (!(error instanceof BlobChangedError)) throw error;
      return rejectedChunk(task, replacedReason(task));
    }
  } else if (task.rowsKey) {
    // A chunk of a dataset split into chunk objects: its rows as the reader of the file gave them.
    const object = await deps.bucket.read(task.rowsKey);
    if (!object)
      return rejectedChunk(task, `the rows of chunk ${chunk} of run ${runId} are gone (${task.rowsKey})`);
    read = await readSplitChunk(object.body);
  } else {
    const object = await readObject(deps, task, { start: task.start, end: task.end });
    if ('rejected' in object) return rejectedChunk(task, object.rejected);
    read = await readRange(bounded(object.body, task.end - task.start), task.format, options, task);
  }
  // The pass and the reader count rows alike (ranges.ts): a range read otherwise would number
  // the rows after it wrong, so it fails loudly instead.
  if (!read.unreadable && task.rows !== undefined && read.rows.length !== task.rows)
    throw new Error(
      `range ${chunk} of run ${runId} (${task.key}, bytes ${task.start} to ${task.end}) read ${read.rows.length} rows where the pass that cut it counted ${task.rows}`,
    );
  const entries = parsedEntries(run, read.rows);
  // Rows past the deployment's item limit are not read: the run is stopped there.
  const max = deps.limits?.maxItems;
  let ended = false;
  if (max && (entries.at(-1)?.row ?? 0) > max) {
    entries.splice(entries.findIndex((entry) => entry.row > max));
    await runStore.stop?.(runId, itemLimitReason(max));
    ended = true;
  }
  // The file cannot be read past this range: the row it stopped at fails with the reason, the
  // run is stopped, and no range after this one hands anything on (see startRun).
  const { unreadable } = read;
  if (unreadable && !ended) {
    entries.push({ row: unreadable.row, invalid: { reason: unreadable.reason } });
    await runStore.stop?.(runId, unreadableReason(unreadable.row, unreadable.reason));
    ended = true;
  }

  // Each id's first row in the range claims it; a second row of it here is a duplicate.
  const firstRow = new Map<string, number>();
  for (const entry of entries)
    if (entry.item && !firstRow.has(entry.item.id)) firstRow.set(entry.item.id, entry.row);
  // Claimed already (this range's task sent again by the range before it): its duplicates are noted.
  if ((await chunks.waitingTask(runId, chunk)) === undefined) {
    const claims = await chunks.claimIds(
      runId,
      chunk,
      [...firstRow].map(([id, row]) => ({ id, row })),
    );
    const notes = new Map<number, { id: string; row: number }[]>();
    const note = (at: number, id: string, row: number) => {
      if (!notes.has(at)) notes.set(at, []);
      notes.get(at)!.push({ id, row });
    };
    for (const [id] of claims.earlier) note(chunk, id, firstRow.get(id)!);
    for (const { id, row, chunk: later } of claims.displaced) note(later, id, row);
    for (const [at, rows] of notes) await chunks.noteDuplicates(runId, at, rows);
    await chunks.idsClaimed(runId, chunk, { ended, task: JSON.stringify(task) });
  }

  let before = await chunks.claimedBefore(runId, chunk);
  if (!before.claimed) {
    await chunks.releaseChunk(runId, chunk);
    // A range before this one may have claimed its ids since it looked: it may have found this
    // range still holding its lease, so this one looks again now that anyone may take it.
    before = await chunks.claimedBefore(runId, chunk);
    if (!before.claimed) return { status: 'waiting', runId, chunk };
    claim = await chunks.claimChunk(runId, chunk, deps.chunkLeaseMs);
    if (!claim.claimed) return { status: 'skipped', runId, chunk, why: claim.why };
  }
  if (before.ended) {
    await chunks.chunkProgress(runId, chunk, 0, true);
    return { status: 'skipped', runId, chunk, why: 'ended' };
  }
  // Every range before this one has claimed its ids: so has this one, and the next may hand on.
  if (!task.last && !ended) {
    const next = await chunks.waitingTask(runId, chunk + 1);
    if (next !== undefined) await deps.sendChunk(JSON.parse(next) as ChunkTask);
  }

  // The ids' claims are final now for every row up to this range's: a duplicate names its id's first row.
  const noted = await chunks.duplicatesIn(runId, chunk);
  const notedRows = new Set(noted.map(({ row }) => row));
  const holders = await chunks.holders(runId, [...new Set(noted.map(({ id }) => id))]);
  for (const entry of entries) {
    const id = entry.item?.id;
    if (id === undefined) continue;
    const first = holders.get(id) ?? firstRow.get(id)!;
    if (first !== entry.row || notedRows.has(entry.row)) markDuplicate(entry, first);
  }

  const { queued, invalidRows } = await handOn(deps, runId, chunk, entries, claim.handed, chunk);
  const { complete } = await runStore.closePart(runId, chunk, {
    rows: entries.map((entry) => entry.row),
    invalidRows,
    last: Boolean(task.last) || ended,
  });
  return chunkDone(deps, {
    runId,
    chunk,
    rows: entries.length,
    invalidRows,
    queued,
    last: Boolean(task.last) || ended,
    complete,
    ...(unreadable ? { unreadable: unreadable.reason } : {}),
    ...(unreadable && task.uploadRejected ? { uploadRejected: true as const } : {}),
  });
}

/** The first `length` bytes of a stream (a store may send more than a range asked for). */
async function* bounded(bytes: AsyncIterable<Uint8Array>, length: number): AsyncGenerator<Uint8Array> {
  let left = length;
  for await (const block of bytes) {
    if (left <= 0) break;
    yield block.length > left ? block.subarray(0, left) : block;
    left -= block.length;
  }
}
