/**
 * The pass that cuts a CSV, TSV or JSONL dataset into byte ranges read at the same time, sending
 * each range's task as soon as its end is found; with the choice of a dataset read in ranges and
 * the ranges of a Parquet file, which are its row groups.
 */
import { readsInChunks } from '../../lib/datasets/chunks.js';
import { DEFAULT_READER_LIMITS } from '../../lib/datasets/limits.js';
import {
  type Boundary,
  BoundaryScan,
  cutsInRanges,
  headerOf,
  type ScanStep,
} from '../../lib/datasets/ranges.js';
import type { DatasetFormat, ReadOptions } from '../../lib/datasets/read.js';
import { PART_ROWS } from '../../lib/layout/queues.js';
import type { RunRecord } from '../../model/model.js';
import { datasetOptions, readObject, rejectedChunk, scanLease } from './common.js';
import { type ChunkOutcome, type ChunkTask, type IngestChunkDeps, SCAN_BYTES } from './types.js';

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

const concatBytes = (parts: Uint8Array[]) => (parts.length === 1 ? parts[0]! : Buffer.concat(parts));
