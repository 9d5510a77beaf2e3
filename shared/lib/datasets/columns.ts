import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { parse } from 'csv-parse';
import type { DatasetFormat, ReadOptions } from './read.js';

/** JSONL records read to learn a file's columns (their keys, united). */
const JSONL_SAMPLE = 100;

/**
 * The columns a dataset file offers, read from its start only: a CSV's header row (or the
 * declared `header` of a headerless CSV), a JSONL file's keys over its first records.
 * Empty when the file has no header or no record.
 */
export async function fileColumns(
  path: string,
  format: DatasetFormat,
  options: ReadOptions = {},
): Promise<string[]> {
  if (format === 'csv') {
    if (options.header) return [...options.header];
    return csvHeader(path);
  }
  return jsonlKeys(path);
}

async function csvHeader(path: string): Promise<string[]> {
  const stream = createReadStream(path);
  const parser = parse({ bom: true, relax_column_count: true, skip_empty_lines: true, to: 1 });
  try {
    stream.pipe(parser);
    for await (const record of parser as AsyncIterable<string[]>) return record.map((name) => name.trim());
    return [];
  } catch {
    // A header csv-parse cannot read: the run reports the file's rows itself.
    return [];
  } finally {
    stream.destroy();
  }
}

async function jsonlKeys(path: string): Promise<string[]> {
  const stream = createReadStream(path, 'utf8');
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  const keys = new Set<string>();
  let records = 0;
  try {
    for await (const line of lines) {
      const text = line.replace(/^\uFEFF/, '').trim();
      if (text === '') continue;
      try {
        const value: unknown = JSON.parse(text);
        if (value !== null && typeof value === 'object' && !Array.isArray(value))
          for (const key of Object.keys(value)) keys.add(key);
      } catch {
        // An unreadable line is an invalid row of the run; it names no column.
      }
      if (++records >= JSONL_SAMPLE) break;
    }
  } finally {
    lines.close();
    stream.destroy();
  }
  return [...keys];
}

/** `names` as a short list for messages: `a, b, c` (or `(none)`). */
export function columnList(names: readonly string[]): string {
  return names.length === 0 ? '(none)' : names.join(', ');
}
