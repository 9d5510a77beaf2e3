/**
 * The ingest of a dataset chunk's task: the dispatcher that hands a task to its mode, and every
 * name other modules import from this folder. How the modes divide a dataset follows.
 */
import { releasingOnFailure } from '../../model/errors.js';
import { scanLease, splitLease } from './common.js';
import { ingestInOrder } from './in-order.js';
import { ingestRange } from './range.js';
import { scanRanges } from './scan.js';
import { splitDataset } from './split.js';
import type { ChunkOutcome, ChunkTask, IngestChunkDeps } from './types.js';

export { type ParquetRange, parquetRanges, readsInRanges, scanRanges, sendParquetRanges } from './scan.js';
export { type ChunkOutcome, type ChunkTask, type IngestChunkDeps, SCAN_BYTES, SPLIT_ROWS } from './types.js';

/**
 * A large dataset is ingested in chunks, one invocation a chunk, so that no invocation's work
 * grows with the dataset and its items are on their way to the workers while the rest is read.
 *
 * A CSV, TSV or JSONL file (UTF-8, uncompressed) is cut into ranges up front (see
 * lib/datasets/ranges.ts): a pass over its bytes finds each range's start (and the rows and
 * lines before it) and sends each range's task as soon as its end is known, going on in a task
 * of its own after `scanBytes`. The ranges are read at the same time, each by its own
 * invocation: it reads its rows and claims their item ids (the lowest row of an id holds it,
 * whatever order the ranges claim in; a claim that takes an id from a later row notes that row
 * as a duplicate where its range will look), then hands its rows on once every range before it
 * has claimed its ids, so that a row is never scored before a lower row of its id has claimed
 * it. A range that is ready first waits without holding its invocation: it marks its ids
 * claimed with its task, gives its lease up and ends; the range before it, once ready, sends
 * that task again (and a range that finds the ranges before it ready just then goes on).
 *
 * Handing on: items sent, invalid rows and duplicates recorded as failed results (each
 * duplicate naming the id's first row), in the range's own part of the run (see
 * `RunStore.closePart`); the last range says the run has no more. A file that cannot be read
 * past a row (or an upload past the deployment's item limit) ends in the range that meets it:
 * the ranges after it hand nothing on, as one pass would read nothing after it.
 *
 * A dataset no reader can start in the middle of (gzipped, a JSON array, an encoding other than
 * UTF-8) is split instead (see lib/datasets/split.ts): one pass reads it from its start and
 * writes its rows again as chunk objects, each at most a range's rows and bytes, sending each
 * chunk's task once its object is written; the chunks are then read as ranges are, their rows
 * numbered as in the file. The pass goes on in a task of its own after `splitRows` rows.
 *
 * A dataset that cannot be cut (a CSV whose records end in a bare CR, or whose header cannot
 * be read) and a sampled run (`run.sample`, whose reservoir takes the items in the dataset's
 * order) are read in order instead, a chunk after another: each chunk reads on from where the
 * one before stopped, claims its ids and only then sends the next. A sampled run's chunk goes on
 * from the sample the chunk before left (kept in the bucket), records its invalid rows and
 * duplicates as it goes, and the last chunk sends the sample; its results are all one part.
 *
 * A chunk is held with a lease (`ChunkStore`): a task delivered twice is done once, and a chunk
 * whose invocation died is taken up again when its task comes back, going on from the rows it
 * had handed on (marked as it goes), so that nothing is handed on twice but the last few.
 */

/**
 * Does a chunk's task. A task that fails gives its chunk's lease up before the error goes on,
 * so that its redelivery, seconds later, takes the chunk again instead of finding it held (if
 * the lease cannot be given up, the error says so and the redelivery waits it out).
 */
export async function ingestChunk(deps: IngestChunkDeps, task: ChunkTask): Promise<ChunkOutcome> {
  const lease = task.scan ? scanLease(task.runId) : task.split ? splitLease(task.runId) : task.runId;
  return releasingOnFailure(
    () => {
      if (task.scan) return scanRanges(deps, task);
      if (task.split) return splitDataset(deps, task);
      if (task.end !== undefined) return ingestRange(deps, { ...task, end: task.end });
      return ingestInOrder(deps, task);
    },
    () => deps.chunks.releaseChunk(lease, task.chunk),
    deps.chunkLeaseMs,
  );
}
