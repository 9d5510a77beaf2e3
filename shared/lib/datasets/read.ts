import { parse } from 'csv-parse';
import { notUtf8, Utf8Check } from './utf8.js';

/**
 * Streams dataset rows as plain string records. Rows that cannot even be read (a broken
 * quote, a ragged row, a JSONL line that is not an object, bytes that are not UTF-8, a field
 * longer than the limit) come out as `{ error }` with their row number: the caller records
 * them as invalid, the stream goes on.
 */

export type DatasetFormat = 'csv' | 'jsonl';

export type RawRow =
  | {
      row: number;
      line: number;
      record: Record<string, string>;
      error?: undefined;
      /**
       * Where the record ends in the stream: the offset of the byte after it (its newline
       * included), counted from the stream's first byte. Set for records read from UTF-8 bytes,
       * where a fresh reader started there reads on exactly as this one would (see chunks.ts).
       */
      end?: number;
    }
  /** `id`: the item id of the failed result, when `row-<row>` would not be unique (a second file). */
  | { row: number; line: number; record?: undefined; error: string; id?: string; end?: number };

export function formatFromPath(path: string): DatasetFormat {
  const lower = path.toLowerCase();
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return 'jsonl';
  if (lower.endsWith('.csv')) return 'csv';
  throw new Error(`${path}: unknown dataset format (use .csv or .jsonl, or set dataset.format)`);
}

export interface ReadOptions {
  /** CSV without a header row: its column names, in order (every line is a record). */
  header?: readonly string[];
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
}

/** True when `encoding` names UTF-8 (or is not given): the bytes are checked, not just decoded. */
export function isUtf8Encoding(encoding: string | undefined): boolean {
  return encoding === undefined || new TextDecoder(encoding).encoding === 'utf-8';
}

export async function* readRows(
  chunks: AsyncIterable<Uint8Array | string>,
  format: DatasetFormat,
  options: ReadOptions = {},
): AsyncGenerator<RawRow> {
  const rows = format === 'csv' ? readCsv(chunks, options) : readJsonl(chunks, options);
  const limit = options.maxFieldChars;
  if (limit === undefined) {
    yield* rows;
    return;
  }
  for await (const raw of rows) {
    const long = raw.record && Object.entries(raw.record).find(([, value]) => value.length > limit);
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

async function* readCsv(
  chunks: AsyncIterable<Uint8Array | string>,
  options: ReadOptions,
): AsyncGenerator<RawRow> {
  const names = options.header;
  const utf8 = isUtf8Encoding(options.encoding);
  const base = options.byteOffset ?? 0;
  // Records and skipped (unreadable) records go through one queue so row numbers follow the file.
  const queue: CsvEvent[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  let failure: Error | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const parser = parse({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    info: true,
  });
  parser.on('data', (entry: { record: string[]; info: { lines: number; bytes: number } }) => {
    queue.push({ record: entry.record, lines: entry.info.lines + lines, bytes: entry.info.bytes });
    notify();
  });
  const lines = options.lineOffset ?? 0;
  parser.on('skip', (error: Error & { lines?: number }) => {
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
  /** The reader stopped early (a chunk read far enough): the feed lets the source go. */
  let stopped = false;
  const feed = (async () => {
    try {
      for await (const chunk of source) {
        if (stopped) return;
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

async function* readJsonl(
  chunks: AsyncIterable<Uint8Array | string>,
  { encoding, byteOffset = 0, rowOffset = 0, lineOffset = 0 }: ReadOptions,
): AsyncGenerator<RawRow> {
  let line = lineOffset;
  let row = rowOffset;
  const handle = (text: string, bad?: number, end?: number): RawRow | undefined => {
    line += 1;
    const trimmed = (line === 1 ? text.replace(/^\uFEFF/, '') : text).trim();
    if (trimmed === '') return undefined;
    row += 1;
    if (bad !== undefined) return { row, line, error: notUtf8(bad) };
    try {
      const value: unknown = JSON.parse(trimmed);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        return { row, line, error: 'JSONL line is not an object' };
      }
      const record = stringifyFields(value as Record<string, unknown>);
      return end === undefined ? { row, line, record } : { row, line, record, end };
    } catch (error) {
      return { row, line, error: `invalid JSON: ${(error as Error).message}` };
    }
  };

  if (!isUtf8Encoding(encoding)) {
    // A declared encoding (UTF-16 has no newline byte of its own): split the decoded text.
    let buffer = '';
    for await (const text of decoded(chunks, encoding!)) {
      buffer += text;
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const result = handle(buffer.slice(0, newline));
        buffer = buffer.slice(newline + 1);
        if (result) yield result;
        newline = buffer.indexOf('\n');
      }
    }
    const last = handle(buffer);
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
      start = stop + 1;
      const result = handle(text, first, base + Math.min(start, block.length));
      if (result) yield result;
    }
  };
  let partial: Uint8Array[] = [];
  let base = 0;
  for await (const chunk of chunks) {
    const bytes = asBytes(chunk);
    const last = bytes.lastIndexOf(0x0a);
    if (last < 0) {
      partial.push(bytes);
      continue;
    }
    const head = bytes.subarray(0, last + 1);
    const block = partial.length > 0 ? Buffer.concat([...partial, head]) : head;
    partial = last + 1 < bytes.length ? [bytes.subarray(last + 1)] : [];
    yield* lines(block, base);
    base += block.length;
  }
  yield* lines(Buffer.concat(partial), base, true);
}

function stringifyFields(value: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, field] of Object.entries(value)) {
    if (field === null || field === undefined) continue;
    out[key] =
      typeof field === 'string' ? field : typeof field === 'object' ? JSON.stringify(field) : String(field);
  }
  return out;
}
