import { InputError } from '../../model/errors.js';
import {
  type ByteSource,
  type DatasetFormat,
  isUtf8Encoding,
  type RawRow,
  type ReadOptions,
  readRows,
} from './read.js';

/**
 * A large dataset is read a chunk at a time, each chunk by a reader of its own that starts at
 * a byte offset of the file, so that no reader's work grows with the file. Chunks are cut
 * between records, where the reader before them ended one: a chunk reads on from its start
 * until the first record that ends at or past its nominal size, and the next chunk starts right
 * after that record, with the row and line numbers and the CSV header carried over. A reader
 * started at a record's end is in the state a reader of the whole file is in there (no quote
 * open, no record begun), so a quoted CSV field with newlines is never split between chunks,
 * and every record reads as it would in one pass: the same rows, numbers and errors.
 */

/** Where a chunk starts: its byte offset, the rows and lines before it, and the CSV columns. */
export interface ChunkStart {
  /** Byte offset of the chunk's first record in the file (0 for the first chunk). */
  start: number;
  /** Rows before the chunk (its first row is `row + 1`). */
  row: number;
  /** Lines before the chunk (CSV records may span lines). */
  line: number;
  /** A CSV file's column names, read from its header row by the first chunk. */
  header?: readonly string[];
}

export interface ChunkRead {
  /** The chunk's rows, numbered as in the whole file. */
  rows: RawRow[];
  /** The next chunk's start; undefined when this chunk ends the file. */
  next?: ChunkStart;
  /** The CSV column names the chunks after this one read by (the header row's, or the declared ones). */
  header?: readonly string[];
  /**
   * The file cannot be read past the chunk's rows (a record past a reader's limit whose end
   * cannot be found): the row it stopped at, and why. There is no next chunk.
   */
  unreadable?: { row: number; reason: string };
}

/**
 * Whether a dataset can be read in chunks: delimited text (CSV, TSV) and JSONL files in UTF-8,
 * uncompressed, whose records end at a newline byte a reader can start after. The others are
 * read whole, by one reader: a file in a declared other encoding, a gzipped file (its bytes
 * cannot be read from the middle), a JSON array (a reader must start at its `[`), and Parquet
 * (read by row groups, from its footer).
 */
export function readsInChunks(format: DatasetFormat, options: ReadOptions): boolean {
  return (
    (format === 'csv' || format === 'tsv' || format === 'jsonl') &&
    options.compression !== 'gzip' &&
    isUtf8Encoding(options.encoding)
  );
}

/**
 * Reads one chunk: `bytes` are the file's bytes from `from.start` on (a ranged read), of which
 * the chunk takes whole records up to the first one ending at or past `size` bytes from its
 * start, or its `maxRows`th row, whichever comes first. Stops reading `bytes` there: the rest of
 * the stream is let go.
 */
export async function readChunk(
  bytes: AsyncIterable<Uint8Array>,
  format: DatasetFormat,
  options: ReadOptions,
  from: ChunkStart,
  size: number,
  maxRows = Number.POSITIVE_INFINITY,
): Promise<ChunkRead> {
  if (!readsInChunks(format, options))
    throw new Error(
      `a ${format} file${options.compression === 'gzip' ? ', gzipped,' : ''} in ${options.encoding ?? 'utf-8'} is read whole`,
    );
  let header = from.header ?? options.header;
  const rows: RawRow[] = [];
  const reader = readRows(bytes, format, {
    ...options,
    ...(header ? { header } : {}),
    byteOffset: from.start,
    rowOffset: from.row,
    lineOffset: from.line,
    onHeader: (names) => {
      header = names;
    },
  });
  try {
    for await (const raw of reader) {
      const { end, ...row } = raw;
      rows.push(row as RawRow);
      if (end !== undefined && (end >= size || rows.length >= maxRows)) {
        return {
          rows,
          next: { start: from.start + end, row: row.row, line: row.line, ...(header ? { header } : {}) },
          ...(header ? { header } : {}),
        };
      }
    }
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    // Rows come numbered in order: the failed one follows the last read (or the chunk's start).
    const row = (rows.at(-1)?.row ?? from.row) + 1;
    return { rows, ...(header ? { header } : {}), unreadable: { row, reason: error.message } };
  }
  return { rows, ...(header ? { header } : {}) };
}

/** A range of a file cut by the boundary pass (see ranges.ts): where it starts and ends. */
export interface RangeStart extends ChunkStart {
  /** The offset of the byte after the range: the next range's start, or the file's size. */
  end: number;
  /** Delimited text: its records end in CRLF (else LF), as the file's first record said. */
  crlf?: boolean;
}

/**
 * Reads one range: `bytes` are the file's bytes from `from.start` to `from.end` (a ranged read),
 * every record of which the range takes, numbered on from the rows and lines before it; or, for
 * Parquet, the file read by position, of which the range takes `options.rowGroups`. A file that
 * cannot be read past a row (a reader's limit) ends there, with why.
 */
export async function readRange(
  bytes: AsyncIterable<Uint8Array> | ByteSource,
  format: DatasetFormat,
  options: ReadOptions,
  from: RangeStart,
): Promise<Omit<ChunkRead, 'next'>> {
  if (!readsInChunks(format, options) && !(format === 'parquet' && options.rowGroups))
    throw new Error(`a ${format} file is not read in ranges`);
  const rows: RawRow[] = [];
  const header = from.header ?? options.header;
  const reader = readRows(bytes, format, {
    ...options,
    ...(header ? { header } : {}),
    // The first range reads the file's start as one pass does; the others are told how records end.
    ...(from.start > 0 && from.crlf !== undefined ? { recordDelimiter: from.crlf ? '\r\n' : '\n' } : {}),
    byteOffset: from.start,
    rowOffset: from.row,
    lineOffset: from.line,
  });
  try {
    for await (const { end: _end, ...row } of reader) rows.push(row as RawRow);
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    const row = (rows.at(-1)?.row ?? from.row) + 1;
    return { rows, unreadable: { row, reason: error.message } };
  }
  return { rows };
}
