import { parse } from 'csv-parse';

/**
 * Streams dataset rows as plain string records. Rows that cannot even be read (a broken
 * quote, a ragged row, a JSONL line that is not an object) come out as `{ error }` with their
 * row number: the caller records them as invalid, the stream goes on.
 */

export type DatasetFormat = 'csv' | 'jsonl';

export type RawRow =
  | { row: number; line: number; record: Record<string, string>; error?: undefined }
  /** `id`: the item id of the failed result, when `row-<row>` would not be unique (a second file). */
  | { row: number; line: number; record?: undefined; error: string; id?: string };

export function formatFromPath(path: string): DatasetFormat {
  const lower = path.toLowerCase();
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return 'jsonl';
  if (lower.endsWith('.csv')) return 'csv';
  throw new Error(`${path}: unknown dataset format (use .csv or .jsonl, or set dataset.format)`);
}

export interface ReadOptions {
  /** CSV without a header row: its column names, in order (every line is a record). */
  header?: readonly string[];
}

export async function* readRows(
  chunks: AsyncIterable<Uint8Array | string>,
  format: DatasetFormat,
  options: ReadOptions = {},
): AsyncGenerator<RawRow> {
  if (format === 'csv') yield* readCsv(chunks, options.header);
  else yield* readJsonl(chunks);
}

type CsvEvent = { record: string[]; lines: number } | { skipped: string; lines: number };

async function* readCsv(
  chunks: AsyncIterable<Uint8Array | string>,
  names?: readonly string[],
): AsyncGenerator<RawRow> {
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
  parser.on('data', (entry: { record: string[]; info: { lines: number } }) => {
    queue.push({ record: entry.record, lines: entry.info.lines });
    notify();
  });
  parser.on('skip', (error: Error & { lines?: number }) => {
    queue.push({ skipped: `unreadable CSV record: ${error.message}`, lines: error.lines ?? 0 });
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
  const feed = (async () => {
    try {
      for await (const chunk of chunks) {
        if (!parser.write(chunk)) await new Promise((resolve) => parser.once('drain', resolve));
        // Do not run ahead of the consumer by more than a few thousand records.
        while (queue.length > 4096 && !failure) await new Promise((resolve) => setTimeout(resolve, 1));
      }
      parser.end();
    } catch (error) {
      failure = error as Error;
      notify();
    }
  })();

  let header: readonly string[] | undefined = names;
  let row = 0;
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
      yield { row, line: event.lines, error: event.skipped };
      continue;
    }
    if (!header) {
      header = event.record.map((name) => name.trim());
      continue;
    }
    row += 1;
    const { record } = event;
    if (record.length > header.length && record.slice(header.length).some((v) => v.trim() !== '')) {
      yield { row, line: event.lines, error: `has ${record.length} fields, the header has ${header.length}` };
      continue;
    }
    const out: Record<string, string> = {};
    header.forEach((name, i) => {
      const value = record[i];
      if (value !== undefined) out[name] = value;
    });
    yield { row, line: event.lines, record: out };
  }
  await feed;
}

async function* readJsonl(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<RawRow> {
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let line = 0;
  let row = 0;
  const handle = (text: string): RawRow | undefined => {
    line += 1;
    const trimmed = (line === 1 ? text.replace(/^\uFEFF/, '') : text).trim();
    if (trimmed === '') return undefined;
    row += 1;
    try {
      const value: unknown = JSON.parse(trimmed);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        return { row, line, error: 'JSONL line is not an object' };
      }
      return { row, line, record: stringifyFields(value as Record<string, unknown>) };
    } catch (error) {
      return { row, line, error: `invalid JSON: ${(error as Error).message}` };
    }
  };
  for await (const chunk of chunks) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const result = handle(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
      if (result) yield result;
      newline = buffer.indexOf('\n');
    }
  }
  buffer += decoder.decode();
  const last = handle(buffer);
  if (last) yield last;
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
