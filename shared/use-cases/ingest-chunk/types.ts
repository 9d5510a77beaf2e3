/**
 * The task of a dataset chunk, what ingesting one needs, and what it comes to; with the budgets of
 * the passes that cut or split a dataset in one invocation. Every mode of a chunk's ingest imports
 * these; this module imports none of the modes.
 */
import type { ChunkStart } from '../../lib/datasets/chunks.js';
import type { ReaderLimits } from '../../lib/datasets/limits.js';
import type { DatasetFormat } from '../../lib/datasets/read.js';
import type { BlobStore, ChunkStore } from '../../ports/ports.js';
import type { StartRunDeps } from '../start-run.js';

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
