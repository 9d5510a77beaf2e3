import { type ChunkStart, readChunk, readRange, readsInChunks } from '../lib/datasets/chunks.js';
import { DEFAULT_READER_LIMITS, type ReaderLimits } from '../lib/datasets/limits.js';
import {
  type Boundary,
  BoundaryScan,
  cutsInRanges,
  headerOf,
  type ScanStep,
} from '../lib/datasets/ranges.js';
import {
  type DatasetFormat,
  datasetReading,
  type RawRow,
  type ReadOptions,
  readRows,
} from '../lib/datasets/read.js';
import { blobSource } from '../lib/datasets/source.js';
import { readSplitChunk, splitRows } from '../lib/datasets/split.js';
import { sampleStateKey, splitChunkKey } from '../lib/layout/bucket.js';
import { PART_ROWS } from '../lib/layout/queues.js';
import { BlobChangedError } from '../model/errors.js';
import type { Item, ItemMessage, RunRecord } from '../model/model.js';
import type { BlobStore, ChunkStore } from '../ports/ports.js';
import { itemLimitReason, withinItemLimit } from './deploy-limits.js';
import {
  duplicateReason,
  type InvalidRow,
  invalidOf,
  invalidResult,
  Reservoir,
  type ReservoirState,
  RowList,
  rowParser,
  type StartRunDeps,
  unreadableReason,
} from './start-run.js';

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
 * Items handed to the queue at once: the queue sends them in batches of ten, several at a time,
 * so a chunk's fifty thousand items go in well under a minute.
 */
const SEND_EVERY = 1_000;

/** A chunk of a run's dataset to ingest: the object, the version the run reads, where the chunk starts. */
export interface ChunkTask extends ChunkStart {
  runId: string;
  key: string;
  /** The object's version (S3: its ETag): a chunk of a replaced object is not read. */
  version: string;
  format: DatasetFormat;
  chunk: number;
  /**
   * A range of a dataset cut up front: the offset of the byte after it (the next range's
   * start). Absent: a chunk of a dataset read in order, which reads on until it has enough.
   */
  end?: number;
  /** The range ends the dataset. */
  last?: boolean;
  /** Rows of the range, as the pass that cut it counted them (the last range's are not). */
  rows?: number;
  /** A range of a Parquet file: its row groups (`to` exclusive); `end` is the file's size. */
  rowGroups?: { from: number; to: number };
  /** Delimited text read in ranges: its records end in CRLF (else LF). */
  crlf?: boolean;
  /** Not a range but the pass that finds them, from `start` on; `chunk` is the next range's number. */
  scan?: true;
  /**
   * Not a range but the pass that splits a dataset no reader can start in the middle of into
   * chunk objects, from the row after `row` on; `chunk` is the next chunk's number.
   */
  split?: true;
  /** A chunk of a split dataset: the object holding its rows (`end` is its size). */
  rowsKey?: string;
  /** The row it cannot read rejected the upload already, with the reason: it is not reported again. */
  uploadRejected?: true;
}

export interface IngestChunkDeps extends StartRunDeps {
  /** The dataset objects, and a sampled run's state between chunks. */
  bucket: BlobStore;
  chunks: ChunkStore;
  /** Hands a chunk's task to another invocation (AWS: a message on the events queue). */
  sendChunk(task: ChunkTask): Promise<void>;
  /**
   * How many bytes a chunk reads (a range ends at the first record boundary past them, a
   * chunk read in order at the first record that ends past them), or its `partRows`th row
   * (default the layout's `PART_ROWS`), whichever comes first.
   */
  chunkBytes: number;
  /** How long a chunk is held by the invocation that took it: more than an invocation can run. */
  chunkLeaseMs: number;
  /**
   * How many bytes one invocation of the pass that cuts a dataset into ranges reads before it
   * hands the rest to another (default {@link SCAN_BYTES}): well within an invocation's time.
   */
  scanBytes?: number;
  /** What a dataset reader may take from the file (the deployment's; see limits.ts): default the readers' own. */
  readerLimits?: ReaderLimits;
  /**
   * Rows one invocation of the pass that splits a dataset writes before it hands the rest to
   * another (default {@link SPLIT_ROWS}): well within an invocation's time.
   */
  splitRows?: number;
}

/**
 * Bytes the pass that cuts a dataset reads in one invocation: it streams at tens of megabytes a
 * second from S3, so this many take a minute or so of the five an invocation may run.
 */
export const SCAN_BYTES = 2 * 1024 ** 3;

/**
 * Rows the pass that splits a dataset writes in one invocation. The invocation after it reads
 * the file again from its start (a gzip stream cannot be entered in the middle) and lets the
 * rows already split go by, which costs about half of what splitting them did: on one busy
 * core the reader splits 30–55 thousand short rows a second and lets 65–115 thousand go by,
 * so each invocation of a 10-million-row file stays within two thirds of its five minutes.
 */
export const SPLIT_ROWS = 3_000_000;

export type ChunkOutcome =
  | {
      status: 'ingested';
      runId: string;
      chunk: number;
      /** Rows of the chunk, invalid ones among them. */
      rows: number;
      invalidRows: number;
      queued: number;
      /** This chunk ended the dataset. */
      last: boolean;
      /** The run had all its results once this chunk closed: it was sent to aggregation. */
      complete: boolean;
      /** The file could not be read past this chunk: why (the run was stopped, this chunk is the last). */
      unreadable?: string;
      /** That reason rejected the upload already (see {@link ChunkTask.uploadRejected}). */
      uploadRejected?: true;
    }
  /**
   * The pass cut (a stretch of) the dataset into ranges and sent their tasks: how many, whether
   * another invocation goes on with the rest, or (`inOrder`) why the dataset is read in order instead.
   */
  | {
      status: 'scanned';
      runId: string;
      chunk: number;
      ranges: number;
      continued: boolean;
      inOrder?: string;
      /** The pass that splits a dataset met a row it cannot read: why (its chunk ends the run there). */
      unreadable?: string;
    }
  /** The range claimed its ids; a range before it has not yet: that range will send this one's task again. */
  | { status: 'waiting'; runId: string; chunk: number }
  /**
   * Nothing was done: the chunk is done, or another invocation holds it, or (`ended`) a range
   * before it ended the dataset (a row it could not read, or the deployment's item limit).
   */
  | { status: 'skipped'; runId: string; chunk: number; why: 'held' | 'done' | 'ended' }
  /** The chunk cannot be read (the run or the object is gone, or the object was replaced); the run stays incomplete. */
  | { status: 'rejected'; runId: string; chunk: number; reason: string };

/** Rows a chunk hands on between two marks of its progress. */
const PROGRESS_EVERY = 2_000;

/** One row of a chunk as it is handed on. */
interface Entry {
  row: number;
  item?: Item;
  /** The row's fields (a duplicate's failed result shows them). */
  record?: Record<string, string>;
  /** Why the row is no item (it is recorded as a failed result), with what the row holds. */
  invalid?: InvalidRow;
}

/** What a sampled ingest keeps between chunks: the reservoir, and every invalid row met so far. */
interface SampleState {
  reservoir: ReservoirState;
  invalidRows: number[];
}

/** The pass over a dataset's bytes that finds its ranges holds its stretch under this chunk name. */
const scanLease = (runId: string) => `${runId}/ranges`;
/** The pass that splits a dataset into chunk objects holds its stretch under this chunk name. */
const splitLease = (runId: string) => `${runId}/split`;

/**
 * Does a chunk's task. A task that fails gives its chunk's lease up before the error goes on,
 * so that its redelivery, seconds later, takes the chunk again instead of finding it held.
 */
export async function ingestChunk(deps: IngestChunkDeps, task: ChunkTask): Promise<ChunkOutcome> {
  const lease = task.scan ? scanLease(task.runId) : task.split ? splitLease(task.runId) : task.runId;
  try {
    if (task.scan) return await scanRanges(deps, task);
    if (task.split) return await splitDataset(deps, task);
    if (task.end !== undefined) return await ingestRange(deps, { ...task, end: task.end });
    return await ingestInOrder(deps, task);
  } catch (error) {
    await deps.chunks.releaseChunk(lease, task.chunk).catch(() => {});
    throw error;
  }
}

const rejectedChunk = (task: ChunkTask, reason: string): ChunkOutcome => ({
  status: 'rejected',
  runId: task.runId,
  chunk: task.chunk,
  reason,
});

/** The object the run reads, from `start` (to `end`), or why it cannot be read. */
async function readObject(
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

const replacedReason = ({ key, runId }: ChunkTask) =>
  `${key} was replaced while run ${runId} was reading it; the run stays incomplete (upload the dataset again for a new run)`;

/**
 * Whether a run's dataset is cut into ranges read at the same time: a CSV, TSV or JSONL file in
 * UTF-8, uncompressed, or a Parquet file (by row groups), of a run that is not sampled (a
 * reservoir takes items in order).
 */
export function readsInRanges(run: RunRecord, format: DatasetFormat, options: ReadOptions): boolean {
  return (
    (format === 'parquet' || (readsInChunks(format, options) && cutsInRanges(format))) &&
    !run.suite.run.sample
  );
}

/** A range of a Parquet file: its row groups (`to` exclusive), the rows before it, and its rows. */
export interface ParquetRange {
  from: number;
  to: number;
  row: number;
  rows: number;
}

/**
 * A Parquet file's ranges of whole row groups (as its footer gives them: see
 * `parquetRowGroups`), each taking groups until it holds `chunkBytes` or `partRows` (a group
 * larger than that is a range of its own).
 */
export function parquetRanges(
  deps: Pick<IngestChunkDeps, 'chunkBytes' | 'partRows'>,
  groups: readonly { rows: number; bytes: number }[],
): ParquetRange[] {
  const partRows = deps.partRows ?? PART_ROWS;
  const ranges: ParquetRange[] = [];
  let row = 0;
  let bytes = 0;
  for (const [index, group] of groups.entries()) {
    const open = ranges.at(-1);
    if (open && bytes < deps.chunkBytes && open.rows + group.rows <= partRows) {
      open.to += 1;
      open.rows += group.rows;
      bytes += group.bytes;
    } else {
      ranges.push({ from: index, to: index + 1, row, rows: group.rows });
      bytes = group.bytes;
    }
    row += group.rows;
  }
  return ranges;
}

/** Sends the tasks of a Parquet file's ranges (`end` is the file's size), the last saying so. */
export async function sendParquetRanges(
  deps: IngestChunkDeps,
  task: Pick<ChunkTask, 'runId' | 'key' | 'version' | 'format'>,
  size: number,
  ranges: readonly ParquetRange[],
): Promise<void> {
  for (const [chunk, range] of ranges.entries())
    await deps.sendChunk({
      ...task,
      chunk,
      start: 0,
      end: size,
      row: range.row,
      line: 0,
      rows: range.rows,
      rowGroups: { from: range.from, to: range.to },
      ...(chunk === ranges.length - 1 ? { last: true } : {}),
    });
}

/**
 * The pass that cuts the dataset into ranges, from `task.start` on: it sends each range's task
 * as soon as the range's end is found, and after `scanBytes` hands the rest to another
 * invocation (a task of its own from the last boundary found). A dataset that cannot be cut is
 * read in order instead (this is found before any range is sent: in the first record).
 */
export async function scanRanges(deps: IngestChunkDeps, task: ChunkTask): Promise<ChunkOutcome> {
  const { runId } = task;
  const run = await deps.runStore.getRun(runId);
  if (!run) return rejectedChunk(task, `run ${runId} does not exist`);
  const claim = await deps.chunks.claimChunk(scanLease(runId), task.chunk, deps.chunkLeaseMs);
  if (!claim.claimed) return { status: 'skipped', runId, chunk: task.chunk, why: claim.why };
  const base = { runId, key: task.key, version: task.version, format: task.format };
  const inOrder = async (why: string): Promise<ChunkOutcome> => {
    await deps.sendChunk({ ...base, chunk: 0, start: 0, row: 0, line: 0 });
    await deps.chunks.chunkProgress(scanLease(runId), task.chunk, 0, true);
    return { status: 'scanned', runId, chunk: task.chunk, ranges: 0, continued: false, inOrder: why };
  };
  // Its reservoir takes the items in the dataset's order: one chunk after another.
  if (run.suite.run.sample) return inOrder('a sampled run takes its items in order');
  const object = await readObject(deps, task, { start: task.start });
  if ('rejected' in object) return rejectedChunk(task, object.rejected);

  const dataset = run.suite.dataset;
  const scan = new BoundaryScan(
    {
      format: task.format,
      ...(dataset.delimiter ? { delimiter: dataset.delimiter } : {}),
      declaredHeader: dataset.header !== undefined,
      ...(deps.readerLimits ? { limits: deps.readerLimits } : {}),
      size: object.size,
      rangeBytes: deps.chunkBytes,
      maxRows: deps.partRows ?? PART_ROWS,
    },
    {
      start: task.start,
      row: task.row,
      line: task.line,
      crlf: task.crlf,
      headerRead: task.header !== undefined,
    },
  );
  const budget = deps.scanBytes ?? SCAN_BYTES;
  let header = task.header;
  /** The file's first bytes, until its header record has ended. */
  let head: Uint8Array[] | undefined =
    task.start === 0 && task.format !== 'jsonl' && dataset.header === undefined ? [] : undefined;
  let from: Boundary = { start: task.start, row: task.row, line: task.line };
  let chunk = task.chunk;
  // The first range reads the header row itself, and finds how records end as one pass does.
  const where = () => ({
    ...from,
    ...(header && from.start > 0 ? { header } : {}),
    ...(scan.crlf !== undefined && task.format !== 'jsonl' && from.start > 0 ? { crlf: scan.crlf } : {}),
  });
  /** Takes a step's findings: false once the dataset turned out not to be cut, or this pass has read enough. */
  let outcome: ChunkOutcome | undefined;
  const take = async (step: ScanStep): Promise<boolean> => {
    if (step.uncuttable) {
      outcome = await inOrder(`${task.key}: ${step.uncuttable}`);
      return false;
    }
    if (step.headerEnd !== undefined && head) {
      header = await headerOf(
        concatBytes(head).subarray(0, step.headerEnd),
        task.format,
        datasetOptions(deps, run, task.key),
      );
      head = undefined;
      if (!header) {
        outcome = await inOrder(`${task.key}: its header row cannot be read`);
        return false;
      }
    }
    for (const boundary of step.boundaries) {
      await deps.sendChunk({
        ...base,
        ...where(),
        chunk,
        end: boundary.start,
        rows: boundary.row - from.row,
      });
      chunk += 1;
      from = boundary;
      if (from.start - task.start >= budget) {
        // The rest from here, in another invocation: this one has read its share.
        await deps.sendChunk({ ...base, ...where(), chunk, scan: true });
        await deps.chunks.chunkProgress(scanLease(runId), task.chunk, chunk - task.chunk, true);
        outcome = {
          status: 'scanned',
          runId,
          chunk: task.chunk,
          ranges: chunk - task.chunk,
          continued: true,
        };
        return false;
      }
    }
    return true;
  };
  const maxHeadBytes = (deps.readerLimits ?? DEFAULT_READER_LIMITS).maxRecordBytes;
  let headBytes = 0;
  for await (const block of object.body) {
    if (head) {
      head.push(block);
      headBytes += block.length;
      // The reader refuses a header this long: read in order, the run says so.
      if (headBytes > maxHeadBytes + block.length) return inOrder(`${task.key}: its header row is too long`);
    }
    if (!(await take(scan.push(block)))) return outcome!;
  }
  if (!(await take(scan.end()))) return outcome!;
  await deps.sendChunk({ ...base, ...where(), chunk, end: object.size, last: true });
  await deps.chunks.chunkProgress(scanLease(runId), task.chunk, chunk + 1 - task.chunk, true);
  return { status: 'scanned', runId, chunk: task.chunk, ranges: chunk + 1 - task.chunk, continued: false };
}

/** Chunk objects written at the same time while the pass that splits a dataset reads on. */
const SPLIT_WRITES = 4;

/**
 * The pass that splits a dataset no reader can start in the middle of (see datasets/split.ts)
 * into chunk objects, from the row after `task.row` on: each chunk's task is sent as soon as
 * its object is written, so the chunks are read (and their items scored) while the pass goes
 * on. After `splitRows` rows it hands the rest to another invocation, which reads the file
 * again from its start and lets the rows already split go by.
 */
async function splitDataset(deps: IngestChunkDeps, task: ChunkTask): Promise<ChunkOutcome> {
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

const concatBytes = (parts: Uint8Array[]) => (parts.length === 1 ? parts[0]! : Buffer.concat(parts));

/** A range of a dataset cut up front: read, its ids claimed, its rows handed on once the ranges before it have claimed theirs. */
/** How a chunk reads the run's dataset: the suite's dataset keys, the file named for errors, the deployment's reader limits. */
function datasetOptions(deps: IngestChunkDeps, run: RunRecord, file: string) {
  return { ...run.suite.dataset, file, ...(deps.readerLimits ? { limits: deps.readerLimits } : {}) };
}

async function ingestRange(deps: IngestChunkDeps, task: ChunkTask & { end: number }): Promise<ChunkOutcome> {
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
  await chunks.chunkProgress(runId, chunk, entries.length, true);
  if (complete) await deps.trigger.trigger(runId);
  return {
    status: 'ingested',
    runId,
    chunk,
    rows: entries.length,
    invalidRows,
    queued,
    last: Boolean(task.last) || ended,
    complete,
    ...(unreadable ? { unreadable: unreadable.reason } : {}),
    ...(unreadable && task.uploadRejected ? { uploadRejected: true } : {}),
  };
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

/** A chunk's rows as ingest takes them: items, or invalid rows with why. */
function parsedEntries(run: RunRecord, rows: readonly RawRow[]): Entry[] {
  const parse = rowParser(run);
  return rows.map((raw) => {
    const parsed = parse(raw);
    return 'error' in parsed
      ? { row: raw.row, invalid: invalidOf(parsed) }
      : { row: raw.row, item: parsed.item, record: raw.record };
  });
}

/** The row's id is held by an earlier row, `first`: it is a failed result naming that row. */
function markDuplicate(entry: Entry, first: number): void {
  entry.invalid = { reason: duplicateReason(entry.item!.id, first), input: entry.record ?? {} };
  entry.item = undefined;
}

/**
 * Hands a chunk's entries on in order, from where an earlier holder of the chunk stopped: items
 * sent (unless the run is sampled), invalid rows recorded in `part`, progress marked as it goes.
 */
async function handOn(
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

/**
 * A chunk of a dataset read in order: it reads on from where the chunk before stopped, claims
 * its ids (every chunk before it has claimed theirs: it was sent after they did), and sends the
 * next chunk before handing its own rows on.
 */
async function ingestInOrder(deps: IngestChunkDeps, task: ChunkTask): Promise<ChunkOutcome> {
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
  await chunks.chunkProgress(runId, chunk, entries.length, true);
  if (complete) await deps.trigger.trigger(runId);
  return {
    status: 'ingested',
    runId,
    chunk,
    rows: entries.length,
    invalidRows,
    queued,
    last: !read.next,
    complete,
    ...(unreadable ? { unreadable: unreadable.reason } : {}),
  };
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
