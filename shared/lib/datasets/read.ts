import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { JSONParser } from '@streamparser/json';
import { parse } from 'csv-parse';
import type { FileMetaData } from 'hyparquet';
import { AssayError, InputError } from '../../model/errors.js';
import {
  DEFAULT_READER_LIMITS,
  GZIP_RATIO_FLOOR_BYTES,
  JsonDepthScan,
  limitText,
  nestsDeeperThan,
  READER_LIMIT_VARIABLES,
  type ReaderLimits,
} from './limits.js';
import { notUtf8, Utf8Check } from './utf8.js';

/**
 * Streams dataset rows as plain string records. Rows that cannot even be read (a broken
 * quote, a ragged row, a JSONL line that is not an object, bytes that are not UTF-8, a field
 * longer than the limit) come out as `{ error }` with their row number: the caller records
 * them as invalid, the stream goes on. A file that cannot be read at all (a corrupt gzip stream, a
 * `.json` file that is not an array, a broken Parquet file) throws an `InputError` naming it.
 *
 * Formats: CSV and other delimited text (TSV, or any `delimiter`), JSONL, a JSON array of
 * objects (streamed, element by element), and Parquet (a row group at a time, read from a
 * {@link ByteSource}: it needs random access). Any but Parquet may be gzipped.
 *
 * Every reader holds to its {@link ReaderLimits} (record size, JSON depth, columns, gunzipped
 * size, Parquet page and row group size): a row past one is invalid, saying which limit and
 * what raises it; where the row's end cannot be found (a CSV record or JSON element too long,
 * a gzip bomb, a Parquet page too large) the file is refused at that row with an `InputError`.
 */

export type DatasetFormat = 'csv' | 'tsv' | 'jsonl' | 'json' | 'parquet';
export type DatasetCompression = 'gzip' | 'none';

export type RawRow =
  | {
      row: number;
      line: number;
      record: Record<string, string>;
      /**
       * The parsed values of the record's fields that were objects or arrays (JSON, JSONL,
       * Parquet), whose `record` value is their JSON text: a suite may name a field inside them
       * (see fields.ts), and an object never reaches a prompt as text. Absent when there are none.
       */
      structured?: Record<string, unknown>;
      error?: undefined;
      /**
       * Where the record ends in the stream: the offset of the byte after it (its newline
       * included), counted from the stream's first byte. Set for records read from UTF-8 bytes,
       * where a fresh reader started there reads on exactly as this one would (see chunks.ts).
       */
      end?: number;
    }
  /** `id`: the item id of the failed result, when `row-<row>` would not be unique (a second file). */
  | {
      row: number;
      line: number;
      record?: undefined;
      structured?: undefined;
      error: string;
      id?: string;
      end?: number;
    };

/**
 * Bytes read by position: a file, or an object in a bucket read by ranges. Parquet is read this
 * way (its footer first, then one row group at a time); the other formats stream from it.
 */
export interface ByteSource {
  /** The whole size, bytes. */
  readonly size: number;
  /** The bytes from `start` to `end` (exclusive). */
  read(start: number, end: number): Promise<Uint8Array>;
}

const EXTENSIONS: readonly (readonly [string, DatasetFormat])[] = [
  ['.csv', 'csv'],
  ['.tsv', 'tsv'],
  ['.tab', 'tsv'],
  ['.jsonl', 'jsonl'],
  ['.ndjson', 'jsonl'],
  ['.json', 'json'],
  ['.parquet', 'parquet'],
];

const KNOWN_EXTENSIONS =
  'use .csv, .tsv, .tab, .jsonl, .ndjson, .json or .parquet, or one of them but .parquet gzipped (.csv.gz, .jsonl.gz, …), or set dataset.format';

/** The format a file's extension says (a `.gz` after it says gzip: see {@link compressionFromPath}). */
export function formatFromPath(path: string): DatasetFormat {
  const lower = path.toLowerCase();
  const gzipped = lower.endsWith('.gz');
  const name = gzipped ? lower.slice(0, -3) : lower;
  const found = EXTENSIONS.find(([extension]) => name.endsWith(extension));
  if (!found) throw new InputError(`${path}: unknown dataset format (${KNOWN_EXTENSIONS})`);
  if (gzipped && found[1] === 'parquet')
    throw new InputError(
      `${path}: a gzipped Parquet file is not read; Parquet compresses its own pages: upload the .parquet file`,
    );
  return found[1];
}

/** `gzip` for a name ending in `.gz`. */
export function compressionFromPath(path: string): DatasetCompression {
  return path.toLowerCase().endsWith('.gz') ? 'gzip' : 'none';
}

/** How a dataset says it is to be read: the suite's `dataset` keys that concern the file. */
export interface DatasetSpec extends ReadOptions {
  format?: DatasetFormat;
}

/**
 * How to read the file at `path`: its format (`dataset.format`, else its extension) and the
 * read options, with the compression settled (`dataset.compression`, else the extension) and
 * the file named for errors.
 */
export function datasetReading(
  path: string,
  dataset: DatasetSpec = {},
): { format: DatasetFormat; options: ReadOptions } {
  const format = dataset.format ?? formatFromPath(path);
  const compression = dataset.compression ?? compressionFromPath(path);
  if (format === 'parquet' && compression === 'gzip')
    throw new InputError(
      `${path}: Parquet is not read gzipped (it compresses its own pages): set dataset.compression to "none" or upload the .parquet file`,
    );
  if (dataset.delimiter !== undefined && format !== 'csv' && format !== 'tsv')
    throw new InputError(
      `${path}: dataset.delimiter is for delimited text (csv, tsv), not ${format}: remove it or set dataset.format`,
    );
  return { format, options: { ...dataset, compression, file: dataset.file ?? path } };
}

export interface ReadOptions {
  /** CSV without a header row: its column names, in order (every line is a record). */
  header?: readonly string[];
  /** Delimited text's field separator, one character: default `,` (CSV) or a tab (TSV). */
  delimiter?: string;
  /** `gzip`: the bytes are gunzipped as they are read (not for Parquet). Default `none`. */
  compression?: DatasetCompression;
  /** The file's name or key, for errors that concern the whole file. */
  file?: string;
  /**
   * The file's text encoding, as TextDecoder names it (`windows-1252`, `latin1`, `utf-16le`…).
   * Default UTF-8, checked: a row with bytes that are not UTF-8 is invalid, with the offset of
   * the first one. A declared encoding is decoded as declared.
   */
  encoding?: string;
  /** A row with a field (any column: input, gold or given output) longer than this is invalid. */
  maxFieldChars?: number;
  /** Hears a CSV file's column names when its header row is read. */
  onHeader?: (names: readonly string[]) => void;
  /**
   * Where the stream starts in the file, for a stream that reads it from the middle (a chunk of
   * it): its byte offset (added to the offsets errors name), and the rows and lines before it
   * (added to the row and line numbers).
   */
  byteOffset?: number;
  rowOffset?: number;
  lineOffset?: number;
  /**
   * Delimited text read from the middle: how its records end, as the file's first record
   * delimiter says (the parser would otherwise take the first it meets, which in a file of CRLF
   * records may be an LF inside a field).
   */
  recordDelimiter?: '\n' | '\r\n';
  /**
   * Parquet read in ranges: only these row groups (`to` exclusive), their rows numbered as in
   * the whole file (the groups before them are counted from the footer).
   */
  rowGroups?: { from: number; to: number };
  /** What the reader may take from the file (see limits.ts); default {@link DEFAULT_READER_LIMITS}. */
  limits?: ReaderLimits;
}

/** True when `encoding` names UTF-8 (or is not given): the bytes are checked, not just decoded. */
export function isUtf8Encoding(encoding: string | undefined): boolean {
  return encoding === undefined || new TextDecoder(encoding).encoding === 'utf-8';
}

/**
 * The dataset's rows. `input` is the file's bytes as a stream, or a {@link ByteSource} (which
 * Parquet needs; the other formats stream from it).
 */
export async function* readRows(
  input: AsyncIterable<Uint8Array | string> | ByteSource,
  format: DatasetFormat,
  options: ReadOptions = {},
): AsyncGenerator<RawRow> {
  const rows = guarded(rowsOf(input, format, options), options.file ?? 'the dataset');
  const limit = options.maxFieldChars;
  if (limit === undefined) {
    yield* rows;
    return;
  }
  for await (const raw of rows) {
    // An object or array is checked by the fields read inside it (see fields.ts), not as a whole.
    const long =
      raw.record &&
      Object.entries(raw.record).find(
        ([name, value]) => value.length > limit && raw.structured?.[name] === undefined,
      );
    if (long) {
      const [name, value] = long;
      yield {
        row: raw.row,
        line: raw.line,
        error: `field ${JSON.stringify(name)} has ${value.length} characters, more than dataset.maxFieldChars (${limit})`,
      };
    } else yield raw;
  }
}

/**
 * The rows, with an error that is not one of Assay's (a stack or string too large for the
 * runtime: RangeError) turned into an `InputError` naming the file: it comes from the file's
 * content, and reading it again would fail the same way.
 */
async function* guarded(rows: AsyncGenerator<RawRow>, name: string): AsyncGenerator<RawRow> {
  let last = 0;
  try {
    for await (const raw of rows) {
      last = raw.row;
      yield raw;
    }
  } catch (error) {
    if (error instanceof AssayError || !(error instanceof RangeError)) throw error;
    throw new InputError(
      `${name}: cannot be read after row ${last} (${error.message}): the file holds a value too large or too deep to read`,
      { cause: error },
    );
  }
}

const limitsOf = (options: ReadOptions): ReaderLimits => options.limits ?? DEFAULT_READER_LIMITS;

function isByteSource(input: AsyncIterable<Uint8Array | string> | ByteSource): input is ByteSource {
  return !(Symbol.asyncIterator in input) && typeof (input as ByteSource).read === 'function';
}

/** What a source holds, streamed a block at a time. */
export async function* streamOf(source: ByteSource, blockBytes = 1 << 20): AsyncGenerator<Uint8Array> {
  for (let start = 0; start < source.size; start += blockBytes)
    yield await source.read(start, Math.min(source.size, start + blockBytes));
}

function rowsOf(
  input: AsyncIterable<Uint8Array | string> | ByteSource,
  format: DatasetFormat,
  options: ReadOptions,
): AsyncGenerator<RawRow> {
  const name = options.file ?? 'the dataset';
  if (format === 'parquet') {
    if (options.compression === 'gzip')
      throw new InputError(`${name}: Parquet is not read gzipped (it compresses its own pages)`);
    if (!isByteSource(input))
      throw new Error(`${name}: Parquet is read by position, from a file or an object, not from a stream`);
    return readParquet(input, options);
  }
  let chunks = isByteSource(input) ? streamOf(input) : input;
  if (options.compression === 'gzip') chunks = gunzipped(chunks, name, limitsOf(options));
  switch (format) {
    case 'csv':
    case 'tsv':
      return readCsv(chunks, options, delimitedSyntax(format, options.delimiter));
    case 'jsonl':
      return readJsonl(chunks, options);
    case 'json':
      return readJson(chunks, options, name);
  }
}

/**
 * The chunks gunzipped as they come. A stream that is not gzip (or is cut short) throws, naming
 * the file; so does one that gunzips to more than the limits allow (in all, or for each byte
 * of it read so far: a gzip bomb), at the offset of the gunzipped byte that passed them.
 */
async function* gunzipped(
  chunks: AsyncIterable<Uint8Array | string>,
  name: string,
  limits: ReaderLimits,
): AsyncGenerator<Uint8Array> {
  const gunzip = createGunzip();
  let compressed = 0;
  let out = 0;
  const source = Readable.from(
    (async function* () {
      for await (const chunk of chunks) {
        const bytes = asBytes(chunk);
        compressed += bytes.length;
        yield bytes;
      }
    })(),
  );
  const check = () => {
    if (out > limits.maxGzipBytes)
      throw new InputError(
        `${name}: gunzips to more than ${limits.maxGzipBytes} bytes, ${limitText(limits, 'maxGzipBytes')}; the rows after byte ${limits.maxGzipBytes} of the gunzipped file are not read`,
      );
    if (out > GZIP_RATIO_FLOOR_BYTES && out > compressed * limits.maxGzipRatio)
      throw new InputError(
        `${name}: gunzips to ${out} bytes from its first ${compressed}, more than ${limits.maxGzipRatio} for each compressed byte, ${limitText(limits, 'maxGzipRatio')}; the rows after byte ${out} of the gunzipped file are not read (a file that compresses this well is usually a gzip bomb)`,
      );
  };
  const piped = pipeline(source, gunzip).catch(() => {
    // Met below, by the reader of `gunzip`, which is destroyed with the error.
  });
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      out += chunk.length;
      check();
      yield chunk;
    }
    await piped;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('Z_'))
      throw new InputError(`${name}: not a readable gzip file (${(error as Error).message})`);
    throw error;
  } finally {
    gunzip.destroy();
    source.destroy();
  }
}

/** The chunks as text in `encoding` (a declared, non-UTF-8 one: decoded as declared). */
async function* decoded(
  chunks: AsyncIterable<Uint8Array | string>,
  encoding: string,
): AsyncGenerator<string> {
  const decoder = new TextDecoder(encoding);
  for await (const chunk of chunks) {
    const text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    if (text !== '') yield text;
  }
  const rest = decoder.decode();
  if (rest !== '') yield rest;
}

const encoder = new TextEncoder();
const asBytes = (chunk: Uint8Array | string) => (typeof chunk === 'string' ? encoder.encode(chunk) : chunk);

type CsvEvent =
  | { record: string[]; lines: number; bytes: number }
  | { skipped: string; lines: number; bytes?: undefined };

/**
 * How a delimited format is read: its delimiter, and whether `"` quotes a field. CSV quotes, as
 * RFC 4180 has it; TSV does not, as IANA's text/tab-separated-values has it (a field holds no
 * tab and no line break, and a quote is a character like any other: many exported TSVs hold
 * `"` in their text). A tab-separated file that does quote its fields is read as
 * `"format": "csv"` with `"delimiter": "\t"`.
 */
export function delimitedSyntax(
  format: 'csv' | 'tsv',
  delimiter?: string,
): { delimiter: string; quoted: boolean } {
  return format === 'tsv'
    ? { delimiter: delimiter ?? '\t', quoted: false }
    : { delimiter: delimiter ?? ',', quoted: true };
}

async function* readCsv(
  chunks: AsyncIterable<Uint8Array | string>,
  options: ReadOptions,
  { delimiter, quoted }: { delimiter: string; quoted: boolean },
): AsyncGenerator<RawRow> {
  const names = options.header;
  const utf8 = isUtf8Encoding(options.encoding);
  const base = options.byteOffset ?? 0;
  const limits = limitsOf(options);
  const name = options.file ?? 'the dataset';
  // Records and skipped (unreadable) records go through one queue so row numbers follow the file.
  const queue: CsvEvent[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  let failure: Error | undefined;
  /** The reader stopped early (a chunk read far enough, or a limit met): the feed lets the source go. */
  let stopped = false;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const parser = parse({
    bom: true,
    delimiter,
    ...(quoted ? {} : { quote: false }),
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    info: true,
    ...(options.recordDelimiter ? { record_delimiter: options.recordDelimiter } : {}),
    // A record past it cannot be skipped (the parser cannot tell where it ends): the file stops there.
    max_record_size: limits.maxRecordBytes,
  });
  parser.on('data', (entry: { record: string[]; info: { lines: number; bytes: number } }) => {
    records += 1;
    queue.push({ record: entry.record, lines: entry.info.lines + lines, bytes: entry.info.bytes });
    notify();
  });
  const lines = options.lineOffset ?? 0;
  /** Records read (the header among them), for the row an error names. */
  let records = 0;
  parser.on('skip', (error: Error & { lines?: number; code?: string }) => {
    if (error.code === 'CSV_MAX_RECORD_SIZE') {
      const at = records + (names ? 1 : 0) + (options.rowOffset ?? 0);
      failure ??= new InputError(
        `${name}: ${at === 0 ? 'the header row' : `row ${at}`} (line ${(error.lines ?? 0) + lines}) is longer than ${limits.maxRecordBytes} characters, ${limitText(limits, 'maxRecordBytes')}; the rows after it are not read`,
      );
      stopped = true;
      notify();
      return;
    }
    records += 1;
    // The parser counts lines from the stream's start: its message says the file's line.
    const message =
      lines === 0
        ? error.message
        : error.message.replace(/\bline (\d+)/, (_, n) => `line ${Number(n) + lines}`);
    queue.push({ skipped: `unreadable CSV record: ${message}`, lines: (error.lines ?? 0) + lines });
    notify();
  });
  parser.on('end', () => {
    ended = true;
    notify();
  });
  parser.on('error', (error: Error) => {
    failure = error;
    notify();
  });
  // UTF-8 is checked as the bytes go to the parser, before it emits their records: the offsets
  // of bad bytes are known when the record that holds them comes out (its end is `bytes`).
  const check = new Utf8Check();
  const badBytes: number[] = [];
  let offset = 0;
  const source = utf8 ? chunks : decoded(chunks, options.encoding!);

  // A header read from the file is counted before the parser has it: a header of a million
  // columns is refused at once, not after the parser has made a million fields of it.
  const headerCount = names || (options.rowOffset ?? 0) > 0 ? undefined : new HeaderFields(delimiter);
  const feed = (async () => {
    try {
      for await (const chunk of source) {
        if (stopped) return;
        const columns = headerCount?.push(chunk);
        if (columns !== undefined && columns > limits.maxColumns)
          throw new InputError(
            `${name}: the header row has more than ${limits.maxColumns} columns, ${limitText(limits, 'maxColumns')}; no row is read`,
          );
        if (utf8) {
          const bytes = asBytes(chunk);
          for (const bad of check.push(bytes, base + offset)) badBytes.push(bad);
          offset += bytes.length;
        }
        if (!parser.write(chunk)) await new Promise((resolve) => parser.once('drain', resolve));
        // Do not run ahead of the consumer by more than a few thousand records.
        while (queue.length > 4096 && !failure && !stopped)
          await new Promise((resolve) => setTimeout(resolve, 1));
      }
      for (const bad of check.end()) badBytes.push(bad);
      parser.end();
    } catch (error) {
      failure = error as Error;
      notify();
    }
  })();

  let header: readonly string[] | undefined = names;
  let row = options.rowOffset ?? 0;
  let afterSkip = false;
  /** The first bad byte before `end` (the end of the record just read), dropping all of them. */
  const badBefore = (end: number): number | undefined => {
    if (badBytes.length === 0 || badBytes[0]! >= end) return undefined;
    const first = badBytes[0]!;
    while (badBytes.length > 0 && badBytes[0]! < end) badBytes.shift();
    return first;
  };
  // Where a record ends, for UTF-8 bytes (see RawRow.end); a declared encoding is decoded first.
  const at = (bytes: number) => (utf8 ? { end: bytes } : {});
  try {
    while (true) {
      const event = queue.shift();
      if (!event) {
        if (failure) throw failure;
        if (ended) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        continue;
      }
      if ('skipped' in event) {
        row += 1;
        afterSkip = true;
        yield { row, line: event.lines, error: event.skipped };
        continue;
      }
      const bad = badBefore(base + event.bytes);
      const skippedBefore = afterSkip;
      afterSkip = false;
      if (!header) {
        if (event.record.length > limits.maxColumns)
          throw new InputError(
            `${name}: the header row has ${event.record.length} columns, more than ${limits.maxColumns}, ${limitText(limits, 'maxColumns')}; no row is read`,
          );
        header = event.record.map((name) => name.trim());
        options.onHeader?.(header);
        if (bad !== undefined)
          yield { row: 0, line: event.lines, error: `header: ${notUtf8(bad)}`, id: 'header' };
        continue;
      }
      row += 1;
      const { record } = event;
      // The parser gives no end for a record it skipped: bad bytes since the last record read may
      // be the skipped record's. This record holds some only if its text has their U+FFFD.
      if (bad !== undefined && (!skippedBefore || record.some((value) => value.includes('\uFFFD')))) {
        yield { row, line: event.lines, error: notUtf8(bad), ...at(event.bytes) };
        continue;
      }
      if (record.length > header.length && record.slice(header.length).some((v) => v.trim() !== '')) {
        yield {
          row,
          line: event.lines,
          error: `has ${record.length} fields, the header has ${header.length}`,
          ...at(event.bytes),
        };
        continue;
      }
      const out: Record<string, string> = {};
      header.forEach((name, i) => {
        const value = record[i];
        if (value !== undefined) out[name] = value;
      });
      yield { row, line: event.lines, record: out, ...at(event.bytes) };
    }
    await feed;
  } finally {
    stopped = true;
  }
}

/**
 * Counts the fields of a delimited file's first record as its text comes, without the parser:
 * delimiters outside double quotes, up to the first newline outside them.
 */
class HeaderFields {
  private fields = 1;
  private quoted = false;
  private done = false;
  private readonly delimiter: number;

  constructor(delimiter: string) {
    this.delimiter = delimiter.charCodeAt(0);
  }

  /** The fields counted so far (all of the header's once it has ended). */
  push(chunk: Uint8Array | string): number {
    if (this.done) return this.fields;
    const text = typeof chunk === 'string';
    for (let i = 0; i < chunk.length; i += 1) {
      const code = text ? chunk.charCodeAt(i) : chunk[i]!;
      if (code === 0x22) this.quoted = !this.quoted;
      else if (this.quoted) continue;
      else if (code === this.delimiter) this.fields += 1;
      else if (code === 0x0a) {
        this.done = true;
        break;
      }
    }
    return this.fields;
  }
}

async function* readJsonl(
  chunks: AsyncIterable<Uint8Array | string>,
  options: ReadOptions,
): AsyncGenerator<RawRow> {
  const { encoding, byteOffset = 0, rowOffset = 0, lineOffset = 0 } = options;
  const limits = limitsOf(options);
  let line = lineOffset;
  let row = rowOffset;
  const tooLong = (bytes: string) =>
    `the line is longer than ${limits.maxRecordBytes} ${bytes}, ${limitText(limits, 'maxRecordBytes')}`;
  /** A line past the record limit: an invalid row, whose text is never held. */
  const long = (unit: string, end?: number): RawRow => {
    line += 1;
    row += 1;
    const error = tooLong(unit);
    return end === undefined ? { row, line, error } : { row, line, error, end };
  };
  const handle = (text: string, bad?: number, end?: number): RawRow | undefined => {
    line += 1;
    const trimmed = (line === 1 ? text.replace(/^\uFEFF/, '') : text).trim();
    if (trimmed === '') return undefined;
    row += 1;
    if (bad !== undefined) return { row, line, error: notUtf8(bad) };
    const problem = jsonProblem(trimmed, limits);
    if (problem !== undefined) return { row, line, error: problem };
    try {
      const value: unknown = JSON.parse(trimmed);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        return { row, line, error: 'JSONL line is not an object' };
      }
      const fields = rowFields(value as Record<string, unknown>, limits);
      if ('error' in fields) return { row, line, error: fields.error };
      return end === undefined ? { row, line, ...fields } : { row, line, ...fields, end };
    } catch (error) {
      return { row, line, error: `invalid JSON: ${(error as Error).message}` };
    }
  };

  if (!isUtf8Encoding(encoding)) {
    // A declared encoding (UTF-16 has no newline byte of its own): split the decoded text.
    let buffer = '';
    /** The line being read is past the limit: its text is let go up to its newline. */
    let skipping = false;
    for await (const text of decoded(chunks, encoding!)) {
      buffer += text;
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const result = skipping ? long('characters') : handle(buffer.slice(0, newline));
        skipping = false;
        buffer = buffer.slice(newline + 1);
        if (result) yield result;
        newline = buffer.indexOf('\n');
      }
      if (buffer.length > limits.maxRecordBytes) {
        skipping = true;
        buffer = '';
      }
    }
    const last = skipping ? long('characters') : handle(buffer);
    if (last) yield last;
    return;
  }

  // UTF-8: lines are cut at the newline byte (never part of a longer character), and each run
  // of whole lines is checked and decoded at once; each line's end is found by its newline.
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  const check = new Utf8Check();
  const lines = function* (block: Uint8Array, base: number, final = false): Generator<RawRow> {
    const bad = check.push(block, byteOffset + base);
    // A run of whole lines ends at a newline, between characters; only the last may cut one short.
    if (final) bad.push(...check.end());
    const texts = decoder.decode(block).split('\n');
    if (block.length > 0 && block[block.length - 1] === 0x0a) texts.pop();
    let start = 0;
    for (const text of texts) {
      const newline = block.indexOf(0x0a, start);
      const stop = newline < 0 ? block.length : newline;
      let first: number | undefined;
      if (bad.length > 0) {
        const end = byteOffset + base + stop;
        if (bad[0]! < end) first = bad[0];
        while (bad.length > 0 && bad[0]! < end) bad.shift();
      }
      const length = stop - start;
      start = stop + 1;
      const end = base + Math.min(start, block.length);
      const result = length > limits.maxRecordBytes ? long('bytes', end) : handle(text, first, end);
      if (result) yield result;
    }
  };
  let partial: Uint8Array[] = [];
  let partialBytes = 0;
  /** Bytes of a line past the limit let go so far (its row is said when its newline comes). */
  let skipped = 0;
  let base = 0;
  for await (const chunk of chunks) {
    const bytes = asBytes(chunk);
    const last = bytes.lastIndexOf(0x0a);
    if (last < 0) {
      if (skipped > 0) skipped += bytes.length;
      else if (partialBytes + bytes.length > limits.maxRecordBytes) {
        // The line is past the limit: what was read of it is let go, not held to its end.
        check.push(Buffer.concat([...partial, bytes]), byteOffset + base);
        skipped = partialBytes + bytes.length;
        partial = [];
        partialBytes = 0;
      } else {
        partial.push(bytes);
        partialBytes += bytes.length;
      }
      continue;
    }
    let head = bytes.subarray(0, last + 1);
    if (skipped > 0) {
      // The long line ends at the chunk's first newline: its row, then the lines after it.
      const newline = bytes.indexOf(0x0a);
      skipped += newline + 1;
      check.push(bytes.subarray(0, newline + 1), byteOffset + base);
      base += skipped;
      skipped = 0;
      yield long('bytes', base);
      head = bytes.subarray(newline + 1, last + 1);
      partial = [];
      partialBytes = 0;
    }
    const block = partial.length > 0 ? Buffer.concat([...partial, head]) : head;
    partial = last + 1 < bytes.length ? [bytes.subarray(last + 1)] : [];
    partialBytes = bytes.length - (last + 1);
    if (block.length === 0) continue;
    yield* lines(block, base);
    base += block.length;
  }
  if (skipped > 0) {
    check.end();
    yield long('bytes', base + skipped);
    return;
  }
  yield* lines(Buffer.concat(partial), base, true);
}

/**
 * Why JSON text cannot be read as a row within the limits (it nests too deep to parse and print
 * without overflowing the stack), else undefined. One linear scan, only of text that could nest
 * that deep.
 */
function jsonProblem(text: string, limits: ReaderLimits): string | undefined {
  return nestsDeeperThan(text, limits.maxJsonDepth)
    ? `the JSON nests deeper than ${limits.maxJsonDepth} levels, ${limitText(limits, 'maxJsonDepth')}`
    : undefined;
}

/** A parsed row object as its fields (see {@link stringifyFields}), or why it has too many. */
function rowFields(
  value: Record<string, unknown>,
  limits: ReaderLimits,
): ReturnType<typeof stringifyFields> | { error: string } {
  const columns = Object.keys(value).length;
  if (columns > limits.maxColumns)
    return {
      error: `the row has ${columns} fields, more than ${limits.maxColumns}, ${limitText(limits, 'maxColumns')}`,
    };
  return stringifyFields(value);
}

/** A parsed row as text fields, with the parsed values of those that were objects or arrays. */
function stringifyFields(value: Record<string, unknown>): {
  record: Record<string, string>;
  structured?: Record<string, unknown>;
} {
  const record: Record<string, string> = {};
  let structured: Record<string, unknown> | undefined;
  for (const [key, field] of Object.entries(value)) {
    if (field === null || field === undefined) continue;
    if (typeof field === 'object') {
      // Its depth was checked before it was parsed (see jsonProblem): printing it cannot overflow.
      record[key] = JSON.stringify(field);
      structured ??= {};
      structured[key] = field;
    } else record[key] = typeof field === 'string' ? field : String(field);
  }
  return structured ? { record, structured } : { record };
}

const describe = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;

/**
 * A .json dataset in the shapes it is published in, told apart by its first bytes: an array of
 * objects (`[{…}, {…}]`); an object of objects keyed by id (`{"id1": {…}, "id2": {…}}`, as
 * SummaC ships SummEval and XSumFaith), each entry a row whose key is its `id`; or JSON Lines
 * under a .json name (a first line that is a whole JSON value, and another line after it), read
 * as JSONL.
 */
async function* readJson(
  chunks: AsyncIterable<Uint8Array | string>,
  options: ReadOptions,
  name: string,
): AsyncGenerator<RawRow> {
  const iterator = chunks[Symbol.asyncIterator]();
  const seen: (Uint8Array | string)[] = [];
  const decoder = new TextDecoder(isUtf8Encoding(options.encoding) ? 'utf-8' : options.encoding);
  const limit = limitsOf(options).maxRecordBytes;
  // The text read so far, where its first character is (past a BOM and whitespace) and the
  // first line break after it: each found in the text a chunk adds, never the whole again.
  let head = '';
  const firstCharacter = /\S/g;
  let start = -1;
  let newline = -1;
  let shape: JsonShape | undefined;
  while (shape === undefined) {
    const next = await iterator.next();
    const from = head.length;
    if (next.done) head += decoder.decode();
    else {
      seen.push(next.value);
      head += typeof next.value === 'string' ? next.value : decoder.decode(next.value, { stream: true });
    }
    if (start < 0) {
      firstCharacter.lastIndex = from;
      start = firstCharacter.exec(head)?.index ?? -1;
    }
    if (start >= 0 && newline < 0) newline = head.indexOf('\n', Math.max(start, from));
    shape = jsonShape(head, start, newline, next.done === true, limit);
    if (next.done) break;
  }
  const replay = (async function* () {
    try {
      yield* seen.splice(0);
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
    } finally {
      // A reader that stops early lets the source go (a file read by ranges closes).
      await iterator.return?.();
    }
  })();
  if (shape === 'lines') yield* readJsonl(replay, options);
  else yield* readJsonArray(replay, options, name, shape === 'keyed');
}

type JsonShape = 'array' | 'keyed' | 'lines';

/**
 * The shape of a .json file from its first text: `start` is where its first character is (past
 * a BOM and whitespace; -1: none yet), `newline` the first line break after it (-1: none yet).
 * Undefined: more is needed to tell.
 */
function jsonShape(
  head: string,
  start: number,
  newline: number,
  ended: boolean,
  limit: number,
): JsonShape | undefined {
  if (start < 0) return ended ? 'array' : undefined;
  // An array, or anything else: the array reader says what it is.
  if (head[start] !== '{') return 'array';
  if (newline < 0) {
    if (!ended) return head.length - start > limit ? 'keyed' : undefined;
    return isKeyed(head.slice(start)) ? 'keyed' : 'lines';
  }
  const rest = head.slice(newline + 1).trim();
  if (rest === '' && !ended) return undefined;
  const first = head.slice(start, newline);
  if (rest === '') return isKeyed(first) ? 'keyed' : 'lines';
  try {
    JSON.parse(first);
    return 'lines';
  } catch {
    return 'keyed';
  }
}

/** Whether `text` is one JSON object whose every value is an object (rows keyed by id), or not JSON on its own. */
function isKeyed(text: string): boolean {
  try {
    const value = JSON.parse(text) as unknown;
    const entries = value !== null && typeof value === 'object' ? Object.values(value) : [];
    return (
      entries.length > 0 && entries.every((v) => v !== null && typeof v === 'object' && !Array.isArray(v))
    );
  } catch {
    return true;
  }
}

/**
 * A JSON array of objects, element by element (or, `keyed`, an object of objects, entry by
 * entry, each with its key as its `id`, or as `key` when it has an `id` of its own): the parser
 * keeps no element it has handed on, so a million rows are read in the memory of one. An element
 * that is not an object is an invalid row; a file whose top level is not of its shape, or JSON
 * broken midway, throws.
 */
async function* readJsonArray(
  chunks: AsyncIterable<Uint8Array | string>,
  options: ReadOptions,
  name: string,
  keyed = false,
): AsyncGenerator<RawRow> {
  const { encoding, byteOffset = 0, rowOffset = 0 } = options;
  const limits = limitsOf(options);
  const parser = new JSONParser({ paths: ['$.*'], keepStack: false });
  const values: { key: string | number | undefined; value: unknown }[] = [];
  parser.onValue = ({ value, key }) => {
    values.push({ key, value });
  };
  const what = keyed ? 'entry' : 'array element';
  const utf8 = isUtf8Encoding(encoding);
  // UTF-8 is checked as the bytes go by; an element with U+FFFD in it after a bad byte is invalid.
  const check = new Utf8Check();
  const badBytes: number[] = [];
  let offset = 0;
  const decoder = new TextDecoder(utf8 ? 'utf-8' : encoding, { ignoreBOM: false });
  let started = false;
  let row = rowOffset;
  const rowOf = function* (): Generator<RawRow> {
    for (const { key, value } of values.splice(0)) {
      row += 1;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        const which = keyed ? `entry ${JSON.stringify(String(key))}` : `array element ${row}`;
        yield { row, line: 0, error: `${which} is ${describe(value)}, not an object` };
        continue;
      }
      const own = value as Record<string, unknown>;
      const fields = rowFields(
        keyed ? { [own.id === undefined ? 'id' : 'key']: String(key), ...own } : own,
        limits,
      );
      if ('error' in fields) {
        yield { row, line: 0, error: fields.error };
        continue;
      }
      if (badBytes.length > 0 && Object.values(fields.record).some((field) => field.includes('\uFFFD'))) {
        yield { row, line: 0, error: notUtf8(badBytes.shift()!) };
        continue;
      }
      yield { row, line: 0, ...fields };
    }
  };
  // The text is scanned before the parser has it: an element that nests too deep (which the
  // rows' printing could not take) or runs too long (which memory could not) stops the read at
  // it, after the elements before it. The parser cannot skip an element, so the file ends there.
  const scan = new JsonDepthScan();
  /** The element being read (1 once past the `[`), and the position where it began. */
  let element = 1;
  let elementStart = 0;
  let position = 0;
  let failure: InputError | undefined;
  const refused = (why: string) =>
    new InputError(
      `${name}: row ${rowOffset + element} (${what} ${element}) ${why}; the rows after it are not read`,
    );
  /** `text` up to where a limit is met (all of it when none is). */
  const withinLimits = (text: string): string => {
    const base = position;
    const deep = scan.push(text, limits.maxJsonDepth + 1, 1, (i) => {
      element += 1;
      elementStart = base + i + 1;
    });
    if (deep >= 0) {
      failure = refused(
        `nests deeper than ${limits.maxJsonDepth} levels, ${limitText(limits, 'maxJsonDepth')}`,
      );
      return text.slice(0, Math.max(0, elementStart - base));
    }
    position += text.length;
    if (position - elementStart > limits.maxRecordBytes) {
      failure = refused(
        `is longer than ${limits.maxRecordBytes} characters, ${limitText(limits, 'maxRecordBytes')}`,
      );
      return text.slice(0, Math.max(0, elementStart - base));
    }
    return text;
  };
  const write = (whole: string) => {
    let text = whole;
    if (!started) {
      const first = text.replace(/^\uFEFF/, '').trimStart();
      if (first === '') return;
      started = true;
      if (!first.startsWith(keyed ? '{' : '['))
        throw new InputError(
          `${name}: not a JSON array: a .json dataset is one array of objects ([{…}, {…}]), an object of objects keyed by id ({"id": {…}, …}) or JSON Lines (one object a line; or set "format": "jsonl")`,
        );
      text = first;
    }
    text = withinLimits(text);
    if (text === '') return;
    try {
      parser.write(text);
    } catch (error) {
      throw new InputError(
        `${name}: invalid JSON after ${what} ${row + values.length}: ${(error as Error).message}`,
      );
    }
  };
  for await (const chunk of chunks) {
    let text: string;
    if (typeof chunk === 'string') text = chunk;
    else {
      if (utf8) for (const bad of check.push(chunk, byteOffset + offset)) badBytes.push(bad);
      offset += chunk.length;
      text = decoder.decode(chunk, { stream: true });
    }
    if (text !== '') write(text);
    yield* rowOf();
    if (failure) throw failure;
  }
  if (utf8) for (const bad of check.end()) badBytes.push(bad);
  const rest = decoder.decode();
  if (rest !== '') write(rest);
  yield* rowOf();
  if (failure) throw failure;
  if (started && !parser.isEnded) {
    try {
      parser.end();
    } catch (error) {
      throw new InputError(
        `${name}: the JSON ${keyed ? 'object' : 'array'} is not closed (${(error as Error).message})`,
      );
    }
  }
  yield* rowOf();
}

/**
 * A Parquet file, a row group at a time: the footer is read first, then each row group's
 * column chunks, so memory holds one row group. Values are written as JSON values are (see
 * {@link plainValue}).
 */
async function* readParquet(source: ByteSource, options: ReadOptions): AsyncGenerator<RawRow> {
  const { rowOffset = 0, file, rowGroups } = options;
  const limits = limitsOf(options);
  const name = file ?? 'the dataset';
  const { metadata, parquetReadObjects, compressors } = await parquetFooter(source, options);
  let row = rowOffset;
  let first = 0;
  for (const [index, group] of metadata.row_groups.entries()) {
    const count = Number(group.num_rows);
    if (rowGroups && index < rowGroups.from) {
      row += count;
      first += count;
      continue;
    }
    if (rowGroups && index >= rowGroups.to) break;
    if (count === 0) continue;
    const where = `${name}: row group ${index + 1} (rows ${row + 1} to ${row + count})`;
    let records: Record<string, unknown>[];
    try {
      records = await parquetReadObjects({
        file: parquetFile(source),
        metadata,
        rowStart: first,
        rowEnd: first + count,
        compressors: boundedDecompressors(compressors, group, limits, where),
      });
    } catch (error) {
      throw unreadableParquet(error, name);
    }
    first += count;
    for (const record of records) {
      row += 1;
      yield { row, line: 0, ...parquetFields(record, limits) };
    }
  }
}

/** The rows and compressed bytes of each row group of a Parquet file, from its footer (its schema checked). */
export async function parquetRowGroups(
  source: ByteSource,
  options: ReadOptions = {},
): Promise<{ rows: number; bytes: number }[]> {
  const { metadata } = await parquetFooter(source, options);
  return metadata.row_groups.map((group) => ({
    rows: Number(group.num_rows),
    bytes: Number(group.total_compressed_size ?? group.total_byte_size),
  }));
}

const unreadableParquet = (error: unknown, name: string) =>
  error instanceof InputError
    ? error
    : new InputError(`${name}: not a readable Parquet file (${(error as Error).message})`);

/** The source as hyparquet reads a file: by slices. */
function parquetFile(source: ByteSource) {
  return {
    byteLength: source.size,
    slice: async (start: number, end?: number): Promise<ArrayBuffer> => {
      const bytes = await source.read(start, end ?? source.size);
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
}

/** A Parquet file's footer, its schema checked against the limits, and the reader's functions. */
async function parquetFooter(source: ByteSource, options: ReadOptions) {
  const limits = limitsOf(options);
  const name = options.file ?? 'the dataset';
  // Loaded when a Parquet file is read: the other formats do not pay for the decompressors.
  const [{ parquetMetadataAsync, parquetReadObjects }, { compressors }] = await Promise.all([
    import('hyparquet'),
    import('hyparquet-compressors'),
  ]);
  let metadata: FileMetaData;
  try {
    metadata = await parquetMetadataAsync(parquetFile(source));
  } catch (error) {
    throw unreadableParquet(error, name);
  }
  checkParquetSchema(metadata, limits, name);
  return { metadata, parquetReadObjects, compressors };
}

/** A file whose schema has more columns, or nests deeper, than the limits: refused before any row. */
function checkParquetSchema(metadata: FileMetaData, limits: ReaderLimits, name: string): void {
  const leaves = metadata.schema.filter((element) => !element.num_children).length;
  if (leaves > limits.maxColumns)
    throw new InputError(
      `${name}: the Parquet schema has ${leaves} columns, more than ${limits.maxColumns}, ${limitText(limits, 'maxColumns')}; no row is read`,
    );
  // The schema is a tree written depth first, each element with its number of children.
  const open: number[] = [];
  let deepest = 0;
  for (const element of metadata.schema) {
    while (open.length > 0 && open[open.length - 1] === 0) open.pop();
    if (open.length > 0) open[open.length - 1]! -= 1;
    if (element.num_children) open.push(element.num_children);
    deepest = Math.max(deepest, open.length);
  }
  if (deepest > limits.maxJsonDepth + 1)
    throw new InputError(
      `${name}: the Parquet schema nests deeper than ${limits.maxJsonDepth} levels, ${limitText(limits, 'maxJsonDepth')}; no row is read`,
    );
}

type Decompressors = NonNullable<Parameters<typeof import('hyparquet').parquetReadObjects>[0]['compressors']>;

/**
 * The decompressors, each checking the size a page's header asks of it before anything is
 * allocated: no more than a page may hold, nor than the biggest column chunk of the row group
 * says it holds in all; and the row group's pages together no more than a row group may hold.
 * A header can say any size: a page of a few bytes may declare gigabytes.
 */
function boundedDecompressors(
  compressors: Decompressors,
  group: FileMetaData['row_groups'][number],
  limits: ReaderLimits,
  where: string,
): Decompressors {
  const declared = group.columns.map((column) => Number(column.meta_data?.total_uncompressed_size ?? 0));
  const total = declared.reduce((sum, bytes) => sum + bytes, 0);
  if (total > limits.maxParquetRowGroupBytes)
    throw new InputError(
      `${where} declares ${total} bytes uncompressed, more than ${limits.maxParquetRowGroupBytes}, ${limitText(limits, 'maxParquetRowGroupBytes')} (or write the file with smaller row groups); the rows from it on are not read`,
    );
  const largestChunk = Math.max(0, ...declared);
  let spent = 0;
  const bounded: Decompressors = {};
  for (const [codec, decompress] of Object.entries(compressors) as [
    keyof Decompressors,
    Decompressors[keyof Decompressors],
  ][]) {
    if (!decompress) continue;
    bounded[codec] = (input, length) => {
      if (length > limits.maxParquetPageBytes)
        throw new InputError(
          `${where}: a page declares ${length} bytes uncompressed, more than ${limits.maxParquetPageBytes}, ${limitText(limits, 'maxParquetPageBytes')}; the rows from it on are not read`,
        );
      if (length > largestChunk)
        throw new InputError(
          `${where}: a page declares ${length} bytes uncompressed, more than its column chunk's ${largestChunk} in all: the file is corrupt or forged; the rows from it on are not read`,
        );
      spent += length;
      if (spent > limits.maxParquetRowGroupBytes)
        throw new InputError(
          `${where}: its pages decompress to more than ${limits.maxParquetRowGroupBytes} bytes, ${limitText(limits, 'maxParquetRowGroupBytes')}; the rows from it on are not read`,
        );
      return decompress(input, length);
    };
  }
  return bounded;
}

/** A Parquet record as a row's fields; a record with more fields than the limit, or too deep, is invalid. */
function parquetFields(
  record: Record<string, unknown>,
  limits: ReaderLimits,
): ReturnType<typeof stringifyFields> | { error: string } {
  const plain: Record<string, unknown> = {};
  try {
    for (const [key, value] of Object.entries(record)) plain[key] = plainValue(value, limits.maxJsonDepth);
  } catch (error) {
    if (error instanceof InputError) return { error: error.message };
    throw error;
  }
  return rowFields(plain, limits);
}

const utf8Text = new TextDecoder();

/**
 * A Parquet value as a JSON value: a BigInt as its decimal text (inside a nested value, a number
 * when it fits one exactly), a date as ISO text, bytes as UTF-8 text; lists and structs alike.
 */
function plainValue(value: unknown, maxDepth: number, depth = 0): unknown {
  const top = depth === 0;
  if (typeof value === 'bigint')
    return !top && Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) return utf8Text.decode(value);
  if (value === null || typeof value !== 'object') return value;
  // The schema's depth was checked (see checkParquetSchema); this bounds the recursion whatever the values hold.
  if (depth >= maxDepth)
    throw new InputError(
      `the value nests deeper than ${maxDepth} levels, the reader's maxJsonDepth (${READER_LIMIT_VARIABLES.maxJsonDepth} raises it)`,
    );
  if (Array.isArray(value)) return value.map((item) => plainValue(item, maxDepth, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) out[key] = plainValue(field, maxDepth, depth + 1);
  return out;
}
