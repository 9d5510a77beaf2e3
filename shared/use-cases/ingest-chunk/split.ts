/**
 * The pass that splits a dataset no reader can start in the middle of (gzipped, a JSON array, an
 * encoding other than UTF-8) into chunk objects of JSONL, in one streaming read from the file's
 * start, sending each chunk's task once its object is written.
 */
import { datasetReading, readRows } from '../../lib/datasets/read.js';
import { splitRows } from '../../lib/datasets/split.js';
import { splitChunkKey } from '../../lib/layout/bucket.js';
import { PART_ROWS } from '../../lib/layout/queues.js';
import { readObject, rejectedChunk, splitLease } from './common.js';
import { type ChunkOutcome, type ChunkTask, type IngestChunkDeps, SPLIT_ROWS } from './types.js';

/** Chunk objects written at the same time while the pass that splits a dataset reads on. */
const SPLIT_WRITES = 4;

/**
 * The pass that splits a dataset no reader can start in the middle of (see datasets/split.ts)
 * into chunk objects, from the row after `task.row` on: each chunk's task is sent as soon as
 * its object is written, so the chunks are read (and their items scored) while the pass goes
 * on. After `splitRows` rows it hands the rest to another invocation, which reads the file
 * again from its start and lets the rows already split go by.
 */
export async function splitDataset(deps: IngestChunkDeps, task: ChunkTask): Promise<ChunkOutcome> {
  const { runId } = task;
  const run = await deps.runStore.getRun(runId);
  if (!run) return rejectedChunk(task, `run ${runId} does not exist`);
  const claim = await deps.chunks.claimChunk(splitLease(runId), task.chunk, deps.chunkLeaseMs);
  if (!claim.claimed) return { status: 'skipped', runId, chunk: task.chunk, why: claim.why };
  const object = await readObject(deps, task, { start: 0 });
  if ('rejected' in object) return rejectedChunk(task, object.rejected);
  const { options } = datasetReading(task.key, run.suite.dataset);
  const rows = readRows(object.body, task.format, {
    ...options,
    ...(deps.readerLimits ? { limits: deps.readerLimits } : {}),
  });
  const base = { runId, key: task.key, version: task.version, format: task.format };
  const budget = deps.splitRows ?? SPLIT_ROWS;
  // The pass from the file's start runs in the upload's invocation (see ingest-object.ts), which
  // rejects the upload with a row the pass cannot read: the chunk that ends there says so.
  const inUpload = task.chunk === 0 && task.row === 0;
  const writes = new Set<Promise<void>>();
  const write = async (key: string, body: string, send: ChunkTask) => {
    await deps.bucket.put(key, body, 'application/x-ndjson');
    await deps.sendChunk(send);
  };
  let written = 0;
  let ranges = 0;
  let continued = false;
  let unreadable: string | undefined;
  for await (const piece of splitRows(
    rows,
    { chunk: task.chunk, row: task.row },
    {
      maxRows: deps.partRows ?? PART_ROWS,
      maxBytes: deps.chunkBytes,
      ...(deps.limits?.maxItems ? { maxItems: deps.limits.maxItems } : {}),
      file: task.key,
    },
  )) {
    const key = splitChunkKey(runId, piece.chunk);
    const pending = write(key, piece.body, {
      ...base,
      chunk: piece.chunk,
      start: 0,
      end: Buffer.byteLength(piece.body),
      row: piece.row,
      line: 0,
      rows: piece.rows,
      rowsKey: key,
      ...(piece.last ? { last: true } : {}),
      ...(piece.unreadable && inUpload ? { uploadRejected: true } : {}),
    });
    writes.add(pending);
    void pending.then(
      () => writes.delete(pending),
      () => {},
    );
    if (writes.size >= SPLIT_WRITES) await Promise.race(writes);
    ranges += 1;
    written += piece.rows;
    unreadable = piece.unreadable?.reason;
    if (!piece.last && written >= budget) {
      // The rest from the next row on, in another invocation: this one has split its share.
      await Promise.all(writes);
      await deps.sendChunk({ ...base, ...piece.next, start: 0, line: 0, split: true });
      continued = true;
      break;
    }
  }
  await Promise.all(writes);
  await deps.chunks.chunkProgress(splitLease(runId), task.chunk, ranges, true);
  return {
    status: 'scanned',
    runId,
    chunk: task.chunk,
    ranges,
    continued,
    ...(unreadable ? { unreadable } : {}),
  };
}
