import { InputError } from '../../model/errors.js';
import { DEFAULT_READER_LIMITS, type ReaderLimits } from './limits.js';
import { type DatasetFormat, delimitedSyntax, type ReadOptions, readRows } from './read.js';

/**
 * A large CSV, TSV or JSONL file is cut into byte ranges that separate readers read at the same
 * time. One pass over the bytes finds where each range starts: the first record boundary at or
 * past `rangeBytes` from the range before it (or after its `maxRows`th row), with the rows and
 * lines before that boundary, so that a reader started there numbers its rows as a reader of
 * the whole file does. The pass looks only at quote and newline bytes (found with indexOf), so
 * it runs at the speed the bytes stream.
 *
 * A CSV record ends at a record delimiter outside quotes, as csv-parse reads it (see read.ts):
 * the delimiter is the first CRLF, LF or CR met outside quotes (a file of bare CRs is not cut);
 * a quote opens a quoted field only at a field's start; inside one, `""` is a quote and a quote
 * closes it only before a delimiter, a record delimiter or the end. Any other quote makes the
 * parser skip the record (the field stays as it was, open or not), which is a row, once for each
 * such quote; a record of no bytes is an empty line (no row); the first record is the header
 * unless the suite declares one (a file whose header is skipped is not cut). Lines are
 * counted as the parser counts them: every CR and LF byte, a CRLF ending a record once. A TSV
 * is read the same way but has no quoting (see `delimitedSyntax`): a quote is a byte of a field.
 *
 * A JSONL record is a line: any LF is a boundary; a line of only whitespace is no row unless it
 * is longer than the reader's record limit (which reads it as an invalid row).
 */

/** A point between two records: the byte offset of the next, and the rows and lines before it. */
export interface Boundary {
  start: number;
  row: number;
  line: number;
}

/** Where a pass over a file goes on from (a boundary), with what the pass before learned. */
export interface BoundaryState extends Boundary {
  /** CSV: the file's records end in CRLF (true) or LF (false); undefined until met. */
  crlf?: boolean;
  /** CSV: the header row is behind (read, or declared by the suite). */
  headerRead?: boolean;
}

export interface BoundaryScanOptions {
  format: DatasetFormat;
  /** Delimited text's field separator (default `,` for CSV, a tab for TSV). */
  delimiter?: string;
  /** The suite declares the CSV's columns: the file has no header row. */
  declaredHeader?: boolean;
  limits?: ReaderLimits;
  /** The object's size: no range starts at its end. */
  size: number;
  /** The bytes a range takes at least (it ends at the first boundary past them). */
  rangeBytes: number;
  /** The rows a range takes at most. */
  maxRows?: number;
}

/** What a pass over some bytes found. */
export interface ScanStep {
  /** Each boundary where a new range starts. */
  boundaries: Boundary[];
  /** CSV: the header record ends here (the byte after its record delimiter). */
  headerEnd?: number;
  /** The file cannot be cut (a CSV whose records end in a bare CR): why. */
  uncuttable?: string;
}

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

/** Whether ranges of `format` can be found by this pass. */
export const cutsInRanges = (format: DatasetFormat) =>
  format === 'csv' || format === 'tsv' || format === 'jsonl';

/**
 * The pass, fed the file's bytes from `from.start` on, a block at a time; `end()` once they are
 * all in. Each step gives the boundaries found so far that start a range.
 */
export class BoundaryScan {
  private readonly csv: boolean;
  private readonly delimiter: number;
  /** The byte that quotes a field: `"` in a CSV, none (-1) in a TSV (see `delimitedSyntax`). */
  private readonly quote: number;
  private readonly maxRecordBytes: number;
  private readonly maxRows: number;
  private crlfState: boolean | undefined;
  private headerPending: boolean;
  /** Bytes not looked at yet (a record delimiter or quote cut by a block's end), and their offset. */
  private tail: Uint8Array = new Uint8Array();
  private base: number;
  private quoting = false;
  /** The byte before `base` (a delimiter there puts a quote at `base` at a field's start). */
  private before = -1;
  private recordStart: number;
  private rows: number;
  private lines: number;
  private rangeStart: number;
  private rangeRows = 0;
  /** CSV: the times the parser skips the record being read (each is a row). */
  private recordErrors = 0;
  /** JSONL: the line being read is longer than the record limit (its bytes are let go). */
  private longLine = false;
  private stopped?: string;

  constructor(
    private readonly options: BoundaryScanOptions,
    from: BoundaryState,
  ) {
    this.csv = options.format !== 'jsonl';
    const syntax = delimitedSyntax(options.format === 'tsv' ? 'tsv' : 'csv', options.delimiter);
    this.delimiter = syntax.delimiter.charCodeAt(0);
    this.quote = syntax.quoted ? QUOTE : -1;
    this.maxRecordBytes = (options.limits ?? DEFAULT_READER_LIMITS).maxRecordBytes;
    this.maxRows = options.maxRows ?? Number.POSITIVE_INFINITY;
    this.crlfState = from.crlf;
    this.headerPending = this.csv && !options.declaredHeader && !from.headerRead && from.start === 0;
    this.base = from.start;
    this.recordStart = from.start;
    this.rows = from.row;
    this.lines = from.line;
    this.rangeStart = from.start;
  }

  /** CSV: whether records end in CRLF, once known. */
  get crlf(): boolean | undefined {
    return this.crlfState;
  }

  push(block: Uint8Array): ScanStep {
    return this.step(block, false);
  }

  end(): ScanStep {
    return this.step(new Uint8Array(), true);
  }

  private step(block: Uint8Array, final: boolean): ScanStep {
    const out: ScanStep = { boundaries: [] };
    if (this.stopped) return { ...out, uncuttable: this.stopped };
    const buf = this.tail.length > 0 ? Buffer.concat([this.tail, block]) : block;
    if (this.csv && this.base === 0 && this.recordStart === 0 && this.lines === 0) {
      // A BOM is not part of the first record (the parser drops it): a quote after it opens a field.
      if (buf.length < 3 && !final) {
        this.tail = buf;
        return out;
      }
      if (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) this.recordStart = 3;
    }
    const done = this.csv ? this.csvStep(buf, final, out) : this.jsonlStep(buf, final, out);
    if (this.stopped) out.uncuttable = this.stopped;
    // Keep what was not looked at for the next block.
    this.before = done > 0 ? buf[done - 1]! : this.before;
    this.tail = done < buf.length ? Uint8Array.prototype.slice.call(buf, done) : new Uint8Array();
    this.base += done;
    return out;
  }

  /**
   * The parser met a quote it cannot read (an opening quote inside a field, a closing one before
   * another byte): it skips the record, saying so as a row each time.
   */
  private unreadable(): void {
    if (this.headerPending) this.stopped = 'its header row cannot be read';
    this.recordErrors += 1;
    this.rows += 1;
    this.rangeRows += 1;
  }

  /** A record ended at `end` (the byte after it): a row, the header, or an empty line. */
  private recordEnd(end: number, out: ScanStep): void {
    const empty = this.csv ? end - this.recordStart <= (this.crlfState ? 2 : 1) : false;
    const skipped = this.recordErrors > 0;
    this.recordStart = end;
    this.recordErrors = 0;
    if (empty) return;
    if (this.headerPending) {
      this.headerPending = false;
      out.headerEnd = end;
      return;
    }
    if (!skipped) {
      this.rows += 1;
      this.rangeRows += 1;
    }
    if (
      (end - this.rangeStart >= this.options.rangeBytes || this.rangeRows >= this.maxRows) &&
      end < this.options.size
    ) {
      out.boundaries.push({ start: end, row: this.rows, line: this.lines });
      this.rangeStart = end;
      this.rangeRows = 0;
    }
  }

  /**
   * Scans a CSV block; gives how many of its bytes were looked at (the rest wait for more). A
   * plain loop: the bytes that matter are a few in each record, and looking at each byte is
   * cheaper than a search started for each of them.
   */
  private csvStep(buf: Uint8Array, final: boolean, out: ScanStep): number {
    const base = this.base;
    const n = buf.length;
    const delimiter = this.delimiter;
    const quote = this.quote;
    for (let i = 0; i < n; i += 1) {
      const byte = buf[i]!;
      if (byte !== quote && byte !== LF && byte !== CR) continue;
      if (this.quoting) {
        if (byte !== quote) {
          // Inside quotes every CR and LF is a line to the parser.
          this.lines += 1;
          continue;
        }
        if (i + 2 >= n && !final) return i;
        const next = buf[i + 1];
        if (next === quote) {
          i += 1;
          continue;
        }
        const closes =
          next === undefined ||
          next === delimiter ||
          (this.crlfState === undefined
            ? next === LF || next === CR
            : this.crlfState
              ? next === CR && buf[i + 2] === LF
              : next === LF);
        if (closes) this.quoting = false;
        else this.unreadable();
        continue;
      }
      if (byte === quote) {
        const previous = i > 0 ? buf[i - 1] : this.before;
        if (base + i === this.recordStart || previous === delimiter) this.quoting = true;
        else this.unreadable();
        continue;
      }
      if (byte === CR && i + 1 >= n && !final) return i;
      const crlf = byte === CR && buf[i + 1] === LF;
      if (this.crlfState === undefined) {
        if (byte === CR && !crlf) {
          this.stopped = 'its records end in a bare CR';
          return n;
        }
        this.crlfState = crlf;
      }
      this.lines += 1;
      if (this.crlfState ? crlf : byte === LF) {
        if (crlf) i += 1;
        this.recordEnd(base + i + 1, out);
      }
      // Else a CR or LF that ends no record: a byte of the field, a line to the parser.
    }
    return n;
  }

  /** Scans a JSONL block: each LF ends a line; the bytes of the line being read wait for its LF. */
  private jsonlStep(buf: Uint8Array, final: boolean, out: ScanStep): number {
    const base = this.base;
    let start = this.recordStart - base;
    let i = start;
    while (true) {
      const lf = buf.indexOf(LF, i);
      if (lf < 0) break;
      this.lines += 1;
      const long = this.longLine || lf - start > this.maxRecordBytes;
      this.longLine = false;
      const row = long || !blank(buf, start, lf);
      start = lf + 1;
      i = start;
      if (row) this.recordEnd(base + start, out);
      else this.recordStart = base + start;
    }
    if (final) return buf.length;
    // A line past the record limit is a row whatever it holds: its bytes need not be kept.
    if (buf.length - start > this.maxRecordBytes) {
      this.longLine = true;
      this.recordStart = base + buf.length;
      return buf.length;
    }
    return start;
  }
}

const utf8 = new TextDecoder();

/** A JSONL line the reader skips: only whitespace (as String.trim sees it, a BOM among it). */
function blank(buf: Uint8Array, from: number, to: number): boolean {
  for (let p = from; p < to; p += 1) {
    const byte = buf[p]!;
    if (byte === 0x20 || (byte >= 0x09 && byte <= 0x0d)) continue;
    if (byte < 0x80) return false;
    // Text outside ASCII: it may be whitespace too (a BOM, a no-break space).
    return utf8.decode(buf.subarray(from, to)).trim() === '';
  }
  return true;
}

/**
 * A CSV's column names, read from its header record's bytes (`headerEnd` bytes from the start)
 * as the file's reader reads them; undefined when that record gives none (the reader refuses it,
 * or skips it as unreadable): such a file is read in order, not in ranges.
 */
export async function headerOf(
  bytes: Uint8Array,
  format: DatasetFormat,
  options: ReadOptions,
): Promise<readonly string[] | undefined> {
  let header: readonly string[] | undefined;
  try {
    for await (const _ of readRows(once(bytes), format, {
      ...options,
      onHeader: (names) => {
        header = names;
      },
    }));
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    return undefined;
  }
  return header;
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}
