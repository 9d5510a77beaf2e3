import { InputError } from '../../model/errors.js';
import type { RawRow } from './read.js';

/**
 * A dataset no reader can start in the middle of (a gzipped file, a JSON array, text in an
 * encoding other than UTF-8) is read once, from its start, by one reader, and written again as
 * chunk objects a reader can take one at a time: each holds whole rows as that reader gave
 * them, one JSON text a line, numbered as in the file, so that reading the chunks gives exactly
 * the rows, numbers and errors of one pass. A row the reader cannot read (a reader's limit, a
 * broken file) ends the last chunk, with its number and why, as it ends one pass.
 */

/** One chunk object of a split dataset. */
export interface SplitChunk {
  chunk: number;
  /** The number of the row before the chunk's first (0 for the first chunk). */
  row: number;
  /** Rows the chunk holds (the row it could not read, if any, not counted). */
  rows: number;
  /** The chunk object's text. */
  body: string;
  /** The dataset ends in this chunk: its last row, a row that cannot be read, or the item limit. */
  last: boolean;
  /** Where a split that stops after this chunk goes on. */
  next: SplitFrom;
  /** The file cannot be read past the chunk's rows: the row it stopped at, and why. */
  unreadable?: { row: number; reason: string };
}

export interface SplitOptions {
  /** A chunk ends at its `maxRows`th row, or once its text holds `maxBytes`, whichever comes first. */
  maxRows: number;
  maxBytes: number;
  /** The deployment's item limit: nothing past the first row beyond it is read (the run is stopped there). */
  maxItems?: number;
  /** The file's name, for a value too large for the runtime. */
  file: string;
}

/** The row a split's chunk `chunk` starts after, as a split goes on from there in another invocation. */
export interface SplitFrom {
  chunk: number;
  row: number;
}

/** What a chunk object's last line says when the file could not be read past its rows. */
interface UnreadableLine {
  unreadable: { row: number; reason: string };
}

/**
 * The chunks of `rows` (a reader of the whole file, from its start) from `from` on: the rows up
 * to `from.row` are read and let go (a reader of a gzip stream cannot seek), then every
 * `maxRows` rows (or `maxBytes` of text) make a chunk. The caller may stop after any chunk;
 * the reader is then let go.
 */
export async function* splitRows(
  rows: AsyncIterable<RawRow>,
  from: SplitFrom,
  options: SplitOptions,
): AsyncGenerator<SplitChunk> {
  let chunk = from.chunk;
  let before = from.row;
  let lines: string[] = [];
  let bytes = 0;
  let count = 0;
  let lastRow = from.row;
  const cut = (last: boolean, unreadable?: UnreadableLine): SplitChunk => {
    if (unreadable) lines.push(JSON.stringify(unreadable));
    const piece: SplitChunk = {
      chunk,
      row: before,
      rows: count,
      body: lines.join(''),
      last,
      next: { chunk: chunk + 1, row: lastRow },
      ...unreadable,
    };
    chunk += 1;
    before = lastRow;
    lines = [];
    bytes = 0;
    count = 0;
    return piece;
  };
  /** The open chunk holds its rows: it is cut when another row comes (else it is the last). */
  let full = false;
  try {
    for await (const raw of rows) {
      if (raw.row <= from.row) continue;
      if (full) {
        yield cut(false);
        full = false;
      }
      const { end: _end, ...row } = raw;
      const line = `${JSON.stringify(row)}\n`;
      lines.push(line);
      bytes += line.length;
      count += 1;
      lastRow = raw.row;
      if (options.maxItems && raw.row > options.maxItems) {
        yield cut(true);
        return;
      }
      full = count >= options.maxRows || bytes >= options.maxBytes;
    }
  } catch (error) {
    if (!(error instanceof InputError || error instanceof RangeError)) throw error;
    const reason = error instanceof InputError ? error.message : `${options.file}: ${error.message}`;
    yield cut(true, { unreadable: { row: lastRow + 1, reason } });
    return;
  }
  yield cut(true);
}

/** The rows of a chunk object {@link splitRows} wrote, and the row the file could not be read at, if it ends there. */
export async function readSplitChunk(
  bytes: AsyncIterable<Uint8Array>,
): Promise<{ rows: RawRow[]; unreadable?: { row: number; reason: string } }> {
  const parts: Buffer[] = [];
  for await (const block of bytes) parts.push(Buffer.from(block.buffer, block.byteOffset, block.length));
  const rows: RawRow[] = [];
  let unreadable: UnreadableLine['unreadable'] | undefined;
  for (const line of Buffer.concat(parts).toString('utf8').split('\n')) {
    if (line === '') continue;
    const parsed = JSON.parse(line) as RawRow | UnreadableLine;
    if ('unreadable' in parsed) unreadable = parsed.unreadable;
    else rows.push(parsed);
  }
  return { rows, ...(unreadable ? { unreadable } : {}) };
}
