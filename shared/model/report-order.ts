import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { ItemResult } from './model.js';
import { discard } from './streams.js';

/** Results that can be read more than once, each time from the start (a run store's `results(runId)`). */
export type ResultSource = () => AsyncIterable<ItemResult>;

/** Report order: by dataset row, then item id. */
export function compareReportOrder(
  a: Pick<ItemResult, 'row' | 'itemId'>,
  b: Pick<ItemResult, 'row' | 'itemId'>,
): number {
  return a.row - b.row || a.itemId.localeCompare(b.itemId);
}

/** Results read once, from an array or a stream. */
export type ResultStream = AsyncIterable<ItemResult> | Iterable<ItemResult>;

/**
 * Every result of a stream in an array: for figures that need the items side by side, at the
 * cost of holding them all.
 */
export async function collectResults(results: ResultStream): Promise<ItemResult[]> {
  const all: ItemResult[] = [];
  for await (const result of results) all.push(result);
  return all;
}

/** A results array as a {@link ResultSource}. */
export function sourceOf(results: readonly ItemResult[]): ResultSource {
  return async function* () {
    yield* results;
  };
}

export interface OrderedResults {
  /** Every result in report order, read again on each call. */
  results: ResultSource;
  count: number;
  /** Removes the spill files, if any. */
  close(): Promise<void>;
}

const TAB = 0x09;
const NEWLINE = 0x0a;

/** Results per spill file: the most held in memory at once (as bytes) while re-reading in report order. */
export const SPILL_BUCKET_RESULTS = 20_000;

/**
 * A run's results in report order with bounded memory. Stores stream results in completion
 * order; one pass reads them. Up to `bucketSize` results are sorted in memory; beyond that the
 * pass keeps only their sort keys. When the store's order already is report order,
 * it is re-read as is. Otherwise a second pass spills each result into the file of its slice of
 * report order (`bucketSize` results per file, in a temporary folder), and each later read sorts
 * one file at a time: an external bucket sort, so a million results never sit in memory.
 */
export async function inReportOrder(
  given: ResultSource,
  {
    bucketSize = SPILL_BUCKET_RESULTS,
    readOnce = false,
  }: {
    bucketSize?: number;
    /**
     * Read `given` once (a table whose every read is paid for): past the results held, the
     * first pass also writes them to a temporary file, which every later pass reads instead.
     */
    readOnce?: boolean;
  } = {},
): Promise<OrderedResults> {
  const kept = readOnce ? await keptCopy() : undefined;
  const source = kept?.source ?? given;
  try {
    return await ordered(given, source, bucketSize, kept);
  } catch (error) {
    await kept?.close();
    throw error;
  }
}

/** A temporary file the first pass copies the results to, and the source that reads it back. */
interface KeptCopy {
  write(result: ItemResult): Promise<void>;
  end(): Promise<void>;
  source: ResultSource;
  close(): Promise<void>;
}

async function keptCopy(): Promise<KeptCopy> {
  const dir = await mkdtemp(join(tmpdir(), 'assay-report-read-'));
  const path = join(dir, 'results.jsonl');
  const file = createWriteStream(path);
  const failed = new Promise<never>((_, reject) => file.once('error', reject));
  failed.catch(() => undefined);
  return {
    async write(result) {
      if (!file.write(`${JSON.stringify(result)}\n`)) await Promise.race([once(file, 'drain'), failed]);
    },
    async end() {
      file.end();
      await Promise.race([once(file, 'finish'), failed]);
    },
    source: async function* () {
      const lines = createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY });
      for await (const line of lines) if (line !== '') yield JSON.parse(line) as ItemResult;
    },
    close: async () => {
      await discard(file);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function ordered(
  given: ResultSource,
  source: ResultSource,
  bucketSize: number,
  kept: KeptCopy | undefined,
): Promise<OrderedResults> {
  // The first pass keeps each result's row as a number, not its id: ids matter only between
  // results of the same row, read again below in the rare case there are any.
  let rows = new Float64Array(1024);
  let count = 0;
  let sorted = true;
  let last: Pick<ItemResult, 'row' | 'itemId'> | undefined;
  // Up to one spill file's worth, the results themselves are held: a run that small is sorted
  // in memory and never read again from the store.
  let held: ItemResult[] | undefined = [];
  for await (const result of given()) {
    if (last && compareReportOrder(last, result) > 0) sorted = false;
    last = { row: result.row, itemId: result.itemId };
    if (held?.length === bucketSize) {
      // Past what is held, a source read once is copied: the held ones first.
      for (const earlier of held) await kept?.write(earlier);
      held = undefined;
    }
    if (held) held.push(result);
    else await kept?.write(result);
    if (count === rows.length) {
      const grown = new Float64Array(rows.length * 2);
      grown.set(rows);
      rows = grown;
    }
    rows[count++] = result.row;
  }
  if (held) {
    await kept?.close();
    // A stable sort: results equal in report order keep the order the store gave them.
    if (!sorted) held.sort(compareReportOrder);
    return { results: sourceOf(held), count, close: async () => undefined };
  }
  await kept?.end();
  const closeKept = async () => kept?.close();
  if (sorted) return { results: source, count, close: closeKept };

  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  order.sort((a, b) => rows[a]! - rows[b]! || a - b);
  // Results sharing a row go by item id: their ids are read in a second pass.
  const tied = new Map<number, string>();
  for (let k = 1; k < count; k++) {
    if (rows[order[k]!] !== rows[order[k - 1]!]) continue;
    tied.set(order[k - 1]!, '');
    tied.set(order[k]!, '');
  }
  if (tied.size > 0) {
    let position = 0;
    for await (const result of source()) {
      if (tied.has(position)) tied.set(position, result.itemId);
      position += 1;
    }
    for (let k = 0; k < count; ) {
      let end = k + 1;
      while (end < count && rows[order[end]!] === rows[order[k]!]) end++;
      if (end - k > 1) {
        const group = Array.from(order.subarray(k, end)).sort((a, b) =>
          tied.get(a)!.localeCompare(tied.get(b)!),
        );
        order.set(group, k);
      }
      k = end;
    }
  }
  const rank = new Uint32Array(count);
  for (let k = 0; k < count; k++) rank[order[k]!] = k;
  // Only the ranks are needed from here on (the closures below would otherwise keep these).
  rows = new Float64Array(0);
  tied.clear();

  const dir = await mkdtemp(join(tmpdir(), 'assay-report-order-'));
  const buckets = Math.ceil(count / bucketSize);
  const path = (bucket: number) => join(dir, `${bucket}.jsonl`);
  const files: WriteStream[] = Array.from({ length: buckets }, (_, b) => createWriteStream(path(b)));
  try {
    const failed = new Promise<never>((_, reject) => {
      for (const file of files) file.once('error', reject);
    });
    failed.catch(() => undefined);
    let position = 0;
    for await (const result of source()) {
      if (position >= count) throw new Error('the results changed while the report was being written');
      const k = rank[position++]!;
      const file = files[Math.floor(k / bucketSize)]!;
      if (!file.write(`${k}\t${JSON.stringify(result)}\n`)) await Promise.race([once(file, 'drain'), failed]);
    }
    if (position !== count) throw new Error('the results changed while the report was being written');
    for (const file of files) file.end();
    await Promise.race([Promise.all(files.map((file) => once(file, 'finish'))), failed]);
  } catch (error) {
    await Promise.all(files.map(discard));
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  // The slices hold every result now: a copy read once is no longer needed.
  await closeKept();

  return {
    count,
    results: async function* () {
      // A slice's file is held as bytes, each line found by its rank and parsed only when its
      // turn comes: one result object at a time, not a slice's worth of them.
      const starts = new Uint32Array(Math.min(bucketSize, count));
      const ends = new Uint32Array(starts.length);
      for (let b = 0; b < buckets; b++) {
        const bytes = await readFile(path(b));
        const size = Math.min(bucketSize, count - b * bucketSize);
        for (let start = 0; start < bytes.length; ) {
          const tab = bytes.indexOf(TAB, start);
          const end = bytes.indexOf(NEWLINE, tab);
          const k = Number(bytes.toString('latin1', start, tab)) - b * bucketSize;
          starts[k] = tab + 1;
          ends[k] = end;
          start = end + 1;
        }
        for (let k = 0; k < size; k++)
          yield JSON.parse(bytes.toString('utf8', starts[k], ends[k])) as ItemResult;
      }
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}
