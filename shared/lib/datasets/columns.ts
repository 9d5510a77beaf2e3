import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import { DEFAULT_READER_LIMITS, type ReaderLimits } from './limits.js';
import { type DatasetFormat, delimitedSyntax, type ReadOptions } from './read.js';
import { readDatasetFile } from './source.js';

/** Records read to learn a JSONL, JSON or Parquet file's columns (their keys, united). */
const JSONL_SAMPLE = 100;

/**
 * The columns a dataset file offers, read from its start only: a CSV's header row (or the
 * declared `header` of a headerless CSV), a JSONL or JSON file's keys over its first records,
 * a Parquet file's over its first row group. Empty when the file has no header or no record.
 */
export async function fileColumns(
  path: string,
  format: DatasetFormat,
  options: ReadOptions = {},
): Promise<string[]> {
  const delimited = format === 'csv' || format === 'tsv';
  if (delimited && options.header) return [...options.header];
  const gzipped = (options.compression ?? (path.toLowerCase().endsWith('.gz') ? 'gzip' : 'none')) === 'gzip';
  if (!gzipped && delimited)
    return csvHeader(path, delimitedSyntax(format, options.delimiter), options.limits);
  // JSONL, JSON and Parquet by their reader, held to its limits (a line of a gigabyte is not held).
  return sampledKeys(path, format, options);
}

/** The columns as the dataset's reader sees them: a header row, or the keys of the first records. */
async function sampledKeys(path: string, format: DatasetFormat, options: ReadOptions): Promise<string[]> {
  let header: readonly string[] | undefined;
  const keys = new Set<string>();
  let records = 0;
  try {
    for await (const raw of readDatasetFile(path, {
      ...options,
      format,
      onHeader: (names) => {
        header = names;
      },
    })) {
      if (header) break;
      for (const key of Object.keys(raw.record ?? {})) keys.add(key);
      if (++records >= JSONL_SAMPLE) break;
    }
  } catch {
    // A file that cannot be read: the run reports it itself.
  }
  return header ? [...header] : [...keys];
}

/** A CSV file's header row, within the reader's limits (a header past them: none, the run says why). */
async function csvHeader(
  path: string,
  { delimiter, quoted }: { delimiter: string; quoted: boolean },
  limits: ReaderLimits = DEFAULT_READER_LIMITS,
): Promise<string[]> {
  const stream = createReadStream(path);
  const parser = parse({
    bom: true,
    delimiter,
    ...(quoted ? {} : { quote: false }),
    relax_column_count: true,
    skip_empty_lines: true,
    to: 1,
    max_record_size: limits.maxRecordBytes,
  });
  try {
    stream.pipe(parser);
    for await (const record of parser as AsyncIterable<string[]>)
      return record.length > limits.maxColumns ? [] : record.map((name) => name.trim());
    return [];
  } catch {
    // A header csv-parse cannot read: the run reports the file's rows itself.
    return [];
  } finally {
    stream.destroy();
  }
}

/** `names` as a short list for messages: `a, b, c` (or `(none)`). */
export function columnList(names: readonly string[]): string {
  return names.length === 0 ? '(none)' : names.join(', ');
}
