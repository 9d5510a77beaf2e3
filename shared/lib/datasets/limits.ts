import { InputError } from '../../model/errors.js';

/**
 * How much a dataset reader may take from one file, so that a small hostile file (a Parquet page
 * that declares gigabytes, a gzip bomb, a JSON value nested a hundred thousand deep, a line of a
 * gigabyte, a million columns) ends as a clear input error instead of taking the process's
 * memory or stack. The limits belong to whoever runs the readers (the machine, the deployment),
 * not to a suite: a suite cannot raise them. Each has a safe default and an environment variable
 * that sets it (read by {@link readerLimitsFromEnv}: the CLI's and the ingest function's
 * environment), which every error that reports it names.
 */
export interface ReaderLimits {
  /**
   * The most bytes of one record: a CSV or TSV record (its characters), a JSONL line, an element
   * of a JSON array. Past it the record is invalid (JSONL), or the file is refused at it (CSV,
   * JSON: their parsers cannot find where the record ends).
   */
  maxRecordBytes: number;
  /** The deepest a JSON value may nest (objects and arrays within each other; a row object is 1). */
  maxJsonDepth: number;
  /** The most columns of a row: a CSV header or record, a JSON object's keys, a Parquet schema's columns. */
  maxColumns: number;
  /** The most bytes a gzipped file may gunzip to, whatever it compresses. */
  maxGzipBytes: number;
  /**
   * The most bytes a gzipped file may gunzip to for each compressed byte read so far (text
   * compresses ten times or so; a gzip bomb a thousand). Not checked on the first
   * {@link GZIP_RATIO_FLOOR_BYTES}.
   */
  maxGzipRatio: number;
  /** The most bytes one Parquet page may decompress to (its header says how many). */
  maxParquetPageBytes: number;
  /** The most bytes one Parquet row group may decompress to, its pages together (memory holds one row group). */
  maxParquetRowGroupBytes: number;
}

const MIB = 1024 * 1024;

export const DEFAULT_READER_LIMITS: Readonly<ReaderLimits> = Object.freeze({
  maxRecordBytes: 8 * MIB,
  maxJsonDepth: 64,
  maxColumns: 10_000,
  maxGzipBytes: 2048 * MIB,
  maxGzipRatio: 200,
  maxParquetPageBytes: 64 * MIB,
  maxParquetRowGroupBytes: 256 * MIB,
});

/** The gunzipped bytes below which no ratio is checked (a small file may compress very well). */
export const GZIP_RATIO_FLOOR_BYTES = 16 * MIB;

/** The environment variable that sets each limit. */
export const READER_LIMIT_VARIABLES: Readonly<Record<keyof ReaderLimits, string>> = Object.freeze({
  maxRecordBytes: 'ASSAY_MAX_RECORD_BYTES',
  maxJsonDepth: 'ASSAY_MAX_JSON_DEPTH',
  maxColumns: 'ASSAY_MAX_COLUMNS',
  maxGzipBytes: 'ASSAY_MAX_GZIP_BYTES',
  maxGzipRatio: 'ASSAY_MAX_GZIP_RATIO',
  maxParquetPageBytes: 'ASSAY_MAX_PARQUET_PAGE_BYTES',
  maxParquetRowGroupBytes: 'ASSAY_MAX_PARQUET_ROW_GROUP_BYTES',
});

/**
 * The limits `env` sets (each variable a positive whole number), the defaults for the rest. A
 * variable that is not a positive whole number is an error naming it, before anything is read.
 */
export function readerLimitsFromEnv(
  env: NodeJS.ProcessEnv | Record<string, string | undefined>,
): ReaderLimits {
  const limits: ReaderLimits = { ...DEFAULT_READER_LIMITS };
  for (const key of Object.keys(READER_LIMIT_VARIABLES) as (keyof ReaderLimits)[]) {
    const variable = READER_LIMIT_VARIABLES[key];
    const text = env[variable]?.trim();
    if (text === undefined || text === '') continue;
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new InputError(
        `${variable}=${JSON.stringify(text)} is not a positive whole number: unset it for the default (${DEFAULT_READER_LIMITS[key]}) or give a number`,
      );
    limits[key] = value;
  }
  return limits;
}

/** `maxRecordBytes (8388608; ASSAY_MAX_RECORD_BYTES raises it)`: a limit as an error names it. */
export function limitText(limits: ReaderLimits, key: keyof ReaderLimits): string {
  return `the reader's ${key} (${limits[key]}; ${READER_LIMIT_VARIABLES[key]} raises it)`;
}

/**
 * How deep JSON text nests, found by one linear scan that keeps no value (so a value too deep
 * to parse or print without overflowing the stack is found before anything parses it). Text
 * may come in pieces; strings and their escapes are skipped.
 */
export class JsonDepthScan {
  /** The current nesting: open objects and arrays. */
  depth = 0;
  /** The deepest nesting met so far. */
  deepest = 0;
  private inString = false;
  private escaped = false;

  /**
   * Scans `text`; returns the index in it at which the nesting first passed `max`, else -1.
   * `onTop` hears each comma and closing bracket at nesting `topDepth` (a JSON array's
   * element boundaries) with its index in `text`.
   */
  push(text: string, max: number, topDepth = -1, onTop?: (index: number) => void): number {
    for (let i = 0; i < text.length; i += 1) {
      const code = text.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (code === 0x5c) this.escaped = true;
        else if (code === 0x22) this.inString = false;
        continue;
      }
      if (code === 0x22) {
        // Most of a row's text is in strings: jump to the string's closing quote.
        const close = closingQuote(text, i + 1);
        if (close < 0) this.inString = true;
        else i = close;
      } else if (code === 0x7b || code === 0x5b) {
        this.depth += 1;
        if (this.depth > this.deepest) this.deepest = this.depth;
        if (this.depth > max) return i;
      } else if (code === 0x7d || code === 0x5d) {
        if (this.depth === topDepth) onTop?.(i);
        this.depth -= 1;
      } else if (code === 0x2c && this.depth === topDepth) onTop?.(i);
    }
    return -1;
  }
}

/** The index of the quote that closes a string begun before `from`, or -1 when `text` ends first. */
function closingQuote(text: string, from: number): number {
  let quote = text.indexOf('"', from);
  while (quote >= 0) {
    let backslashes = 0;
    while (quote - 1 - backslashes >= from && text.charCodeAt(quote - 1 - backslashes) === 0x5c)
      backslashes += 1;
    if (backslashes % 2 === 0) return quote;
    quote = text.indexOf('"', quote + 1);
  }
  return -1;
}

/**
 * Whether a JSON text nests deeper than `max` levels: a text of at most 2 × `max` characters
 * cannot, so only a longer one is scanned.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  return text.length > 2 * max && jsonDepth(text, max) > max;
}

/** How deep one JSON text nests (see {@link JsonDepthScan}); stops counting past `max`. */
export function jsonDepth(text: string, max: number): number {
  const scan = new JsonDepthScan();
  scan.push(text, max);
  return scan.deepest;
}
