/**
 * A chunk of a dataset read in order, a chunk after another: a dataset that cannot be cut into
 * ranges, or a sampled run's, whose reservoir takes the items in the dataset's order and is kept
 * in the bucket between chunks.
 */
import { readChunk } from '../../lib/datasets/chunks.js';
import { sampleStateKey } from '../../lib/layout/bucket.js';
import { PART_ROWS } from '../../lib/layout/queues.js';
import type { BlobStore } from '../../ports/ports.js';
import { withinItemLimit } from '../deploy-limits.js';
import { Reservoir, type ReservoirState, RowList, unreadableReason } from '../start-run.js';
import {
  chunkDone,
  datasetOptions,
  type Entry,
  handOn,
  markDuplicate,
  parsedEntries,
  readObject,
  rejectedChunk,
} from './common.js';
import type { ChunkOutcome, ChunkTask, IngestChunkDeps } from './types.js';

/** What a sampled ingest keeps between chunks: the reservoir, and every invalid row met so far. */
interface SampleState {
  reservoir: ReservoirState;
  invalidRows: number[];
}

/**
 * A chunk of a dataset read in order: it reads on from where the chunk before stopped, claims
 * its ids (every chunk before it has claimed theirs: it was sent after they did), and sends the
 * next chunk before handing its own rows on.
 */
export async function ingestInOrder(deps: IngestChunkDeps, task: ChunkTask): Promise<ChunkOutcome> {
  const { runStore, chunks, queue } = deps;
  const { runId, chunk } = task;
  const run = await runStore.getRun(runId);
  if (!run) return rejectedChunk(task, `run ${runId} does not exist`);
  const claim = await chunks.claimChunk(runId, chunk, deps.chunkLeaseMs);
  if (!claim.claimed) return { status: 'skipped', runId, chunk, why: claim.why };

  const object = await readObject(deps, task, { start: task.start });
  if ('rejected' in object) return rejectedChunk(task, object.rejected);
  // A chunk's rows are a part of the run: no more than a part holds.
  // Rows past the deployment's item limit are not read: the run is stopped there.
  const read = await withinItemLimit(
    runStore,
    runId,
    await readChunk(
      object.body,
      task.format,
      datasetOptions(deps, run, task.key),
      task,
      deps.chunkBytes,
      deps.partRows ?? PART_ROWS,
    ),
    deps.limits,
  );

  const entries = parsedEntries(run, read.rows);
  // The file cannot be read past this chunk: the row it stopped at fails with the reason, the
  // run is stopped, and this chunk is the last (see startRun, which does the same in one pass).
  const { unreadable } = read;
  if (unreadable) {
    entries.push({ row: unreadable.row, invalid: { reason: unreadable.reason } });
    await runStore.stop?.(runId, unreadableReason(unreadable.row, unreadable.reason));
  }
  // Duplicates: an id met earlier in the chunk, else one an earlier chunk's row claimed.
  const firstRow = new Map<string, number>();
  for (const entry of entries) {
    if (!entry.item) continue;
    const first = firstRow.get(entry.item.id);
    if (first === undefined) firstRow.set(entry.item.id, entry.row);
    else markDuplicate(entry, first);
  }
  const { earlier } = await chunks.claimIds(
    runId,
    chunk,
    [...firstRow].map(([id, row]) => ({ id, row })),
  );
  for (const entry of entries) {
    const first = entry.item && earlier.get(entry.item.id);
    if (first !== undefined) markDuplicate(entry, first);
  }

  const sample = run.suite.run.sample;
  const state = sample ? await sampleAfter(deps.bucket, task, sample, entries) : undefined;
  // The next chunk claims its ids after these: it may start now.
  if (read.next) await deps.sendChunk({ ...task, ...read.next, chunk: chunk + 1 });

  // A sampled run's results all go in part 0, the others' in the chunk's own part.
  const part = sample ? 0 : chunk;
  let { queued, invalidRows } = await handOn(deps, runId, chunk, entries, claim.handed, part, !sample);
  let complete = false;
  if (!sample) {
    ({ complete } = await runStore.closePart(runId, part, {
      rows: entries.map((entry) => entry.row),
      invalidRows,
      last: !read.next,
    }));
  } else if (!read.next) {
    // The last chunk: the sample is final, and part 0 holds it and every invalid row.
    const sampled = new Reservoir(sample, state!.reservoir).sample();
    for (let i = 0; i < sampled.length; i += 100) {
      await queue.sendItems(sampled.slice(i, i + 100).map((item) => ({ runId, item })));
      queued += Math.min(100, sampled.length - i);
    }
    const rows = new RowList();
    for (const row of state!.invalidRows) rows.push(row);
    for (const item of sampled) rows.push(item.row);
    ({ complete } = await runStore.closePart(runId, 0, {
      rows: rows.values(),
      invalidRows: state!.invalidRows.length,
      last: true,
    }));
  }
  invalidRows = entries.filter((entry) => entry.invalid).length;
  return chunkDone(deps, {
    runId,
    chunk,
    rows: entries.length,
    invalidRows,
    queued,
    last: !read.next,
    complete,
    ...(unreadable ? { unreadable: unreadable.reason } : {}),
  });
}

/**
 * A sampled run's sample after this chunk: the one the chunk before left (none before the
 * first), offered this chunk's items in order; kept for the next chunk (written again the same
 * when the chunk is done again).
 */
async function sampleAfter(
  bucket: BlobStore,
  task: ChunkTask,
  sample: { n: number; seed?: number },
  entries: readonly Entry[],
): Promise<SampleState> {
  let before: SampleState = { reservoir: { offered: 0, draws: 0, items: [] }, invalidRows: [] };
  if (task.chunk > 0) {
    const body = await bucket.get(sampleStateKey(task.runId, task.chunk - 1));
    if (!body) throw new Error(`the sample left by chunk ${task.chunk - 1} of run ${task.runId} is missing`);
    before = JSON.parse(new TextDecoder().decode(body)) as SampleState;
  }
  const reservoir = new Reservoir(sample, before.reservoir);
  const invalidRows = [...before.invalidRows];
  for (const entry of entries) {
    if (entry.item) reservoir.offer(entry.item);
    else invalidRows.push(entry.row);
  }
  const after: SampleState = { reservoir: reservoir.state(), invalidRows };
  await bucket.put(sampleStateKey(task.runId, task.chunk), JSON.stringify(after), 'application/json');
  return after;
}
