import { type ChunkStart, readChunk } from '../lib/datasets/chunks.js';
import type { ReaderLimits } from '../lib/datasets/limits.js';
import type { DatasetFormat } from '../lib/datasets/read.js';
import { sampleStateKey } from '../lib/layout/bucket.js';
import { PART_ROWS } from '../lib/layout/queues.js';
import { BlobChangedError } from '../model/errors.js';
import type { Item, ItemMessage } from '../model/model.js';
import type { BlobStore, ChunkStore } from '../ports/ports.js';
import { withinItemLimit } from './deploy-limits.js';
import {
  duplicateReason,
  type InvalidRow,
  invalidOf,
  invalidResult,
  Reservoir,
  type ReservoirState,
  RowList,
  rowParser,
  type StartRunDeps,
  unreadableReason,
} from './start-run.js';

/**
 * A large dataset is ingested a chunk at a time (see lib/datasets/chunks.ts), one invocation a
 * chunk, each taking up where the one before stopped reading: no invocation's work grows with
 * the dataset, and its items are on their way to the workers while the rest is still read.
 *
 * Each chunk, in order: it reads its rows, claims their item ids (a duplicate is an id an
 * earlier row claimed), and only then asks for the next chunk, so that ids are claimed in the
 * dataset's order and the first row of an id is the one scored, as in one pass. Then it hands
 * its rows on — items sent, invalid rows and duplicates recorded as failed results — and closes
 * its part of the run: a chunk's results are a part of their own (see `RunStore.closePart`), and
 * the chunk that meets the dataset's end says the run has no more.
 *
 * A chunk is held with a lease (`ChunkStore`): a task delivered twice is done once, and a chunk
 * whose invocation died is taken up again when its task comes back, going on from the rows it
 * had handed on (marked as it goes), so that nothing is handed on twice but the last few.
 *
 * A sampled run (`run.sample`) keeps one pass's reservoir: each chunk goes on from the sample
 * the chunk before left (kept in the bucket), records its invalid rows and duplicates as it
 * goes, and the last chunk sends the sample. Its results are all one part.
 */

/**
 * Items handed to the queue at once: the queue sends them in batches of ten, several at a time,
 * so a chunk's fifty thousand items go in well under a minute.
 */
const SEND_EVERY = 1_000;

/** A chunk of a run's dataset to ingest: the object, the version the run reads, where the chunk starts. */
export interface ChunkTask extends ChunkStart {
  runId: string;
  key: string;
  /** The object's version (S3: its ETag): a chunk of a replaced object is not read. */
  version: string;
  format: DatasetFormat;
  chunk: number;
}

export interface IngestChunkDeps extends StartRunDeps {
  /** The dataset objects, and a sampled run's state between chunks. */
  bucket: BlobStore;
  chunks: ChunkStore;
  /** Hands a chunk's task to another invocation (AWS: a message on the events queue). */
  sendChunk(task: ChunkTask): Promise<void>;
  /**
   * How many bytes a chunk reads (it ends at the first record that ends past them, or at its
   * `partRows`th row: default the layout's `PART_ROWS`).
   */
  chunkBytes: number;
  /** How long a chunk is held by the invocation that took it: more than an invocation can run. */
  chunkLeaseMs: number;
  /** What a dataset reader may take from the file (the deployment's; see limits.ts): default the readers' own. */
  readerLimits?: ReaderLimits;
}

export type ChunkOutcome =
  | {
      status: 'ingested';
      runId: string;
      chunk: number;
      /** Rows of the chunk, invalid ones among them. */
      rows: number;
      invalidRows: number;
      queued: number;
      /** This chunk ended the dataset. */
      last: boolean;
      /** The run had all its results once this chunk closed: it was sent to aggregation. */
      complete: boolean;
      /** The file could not be read past this chunk: why (the run was stopped, this chunk is the last). */
      unreadable?: string;
    }
  /** The chunk is done, or another invocation holds it: nothing was done. */
  | { status: 'skipped'; runId: string; chunk: number; why: 'held' | 'done' }
  /** The chunk cannot be read (the run or the object is gone, or the object was replaced); the run stays incomplete. */
  | { status: 'rejected'; runId: string; chunk: number; reason: string };

/** Rows a chunk hands on between two marks of its progress. */
const PROGRESS_EVERY = 2_000;

/** One row of a chunk as it is handed on. */
interface Entry {
  row: number;
  item?: Item;
  /** The row's fields (a duplicate's failed result shows them). */
  record?: Record<string, string>;
  /** Why the row is no item (it is recorded as a failed result), with what the row holds. */
  invalid?: InvalidRow;
}

/** What a sampled ingest keeps between chunks: the reservoir, and every invalid row met so far. */
interface SampleState {
  reservoir: ReservoirState;
  invalidRows: number[];
}

export async function ingestChunk(deps: IngestChunkDeps, task: ChunkTask): Promise<ChunkOutcome> {
  const { runStore, chunks, queue } = deps;
  const { runId, chunk } = task;
  const rejected = (reason: string): ChunkOutcome => ({ status: 'rejected', runId, chunk, reason });
  const run = await runStore.getRun(runId);
  if (!run) return rejected(`run ${runId} does not exist`);
  const claim = await chunks.claimChunk(runId, chunk, deps.chunkLeaseMs);
  if (!claim.claimed) return { status: 'skipped', runId, chunk, why: claim.why };

  let object: Awaited<ReturnType<BlobStore['read']>>;
  try {
    object = await deps.bucket.read(task.key, { start: task.start, version: task.version });
  } catch (error) {
    if (!(error instanceof BlobChangedError)) throw error;
    return rejected(
      `${task.key} was replaced while run ${runId} was reading it; the run stays incomplete (upload the dataset again for a new run)`,
    );
  }
  if (!object) return rejected(`${task.key} is gone (deleted while run ${runId} was reading it)`);
  // A chunk's rows are a part of the run: no more than a part holds.
  // Rows past the deployment's item limit are not read: the run is stopped there.
  const read = await withinItemLimit(
    runStore,
    runId,
    await readChunk(
      object.body,
      task.format,
      { ...run.suite.dataset, file: task.key, ...(deps.readerLimits ? { limits: deps.readerLimits } : {}) },
      task,
      deps.chunkBytes,
      deps.partRows ?? PART_ROWS,
    ),
    deps.limits,
  );

  const parse = rowParser(run);
  const entries: Entry[] = read.rows.map((raw) => {
    const parsed = parse(raw);
    return 'error' in parsed
      ? { row: raw.row, invalid: invalidOf(parsed) }
      : { row: raw.row, item: parsed.item, record: raw.record };
  });
  // The file cannot be read past this chunk: the row it stopped at fails with the reason, the
  // run is stopped, and this chunk is the last (see startRun, which does the same in one pass).
  const { unreadable } = read;
  if (unreadable) {
    entries.push({ row: unreadable.row, invalid: { reason: unreadable.reason } });
    await runStore.stop?.(runId, unreadableReason(unreadable.row, unreadable.reason));
  }
  // Duplicates: an id met earlier in the chunk, else one an earlier chunk's row claimed.
  const firstRow = new Map<string, number>();
  const duplicate = (entry: Entry, first: number) => {
    entry.invalid = { reason: duplicateReason(entry.item!.id, first), input: entry.record ?? {} };
    entry.item = undefined;
  };
  for (const entry of entries) {
    if (!entry.item) continue;
    const first = firstRow.get(entry.item.id);
    if (first === undefined) firstRow.set(entry.item.id, entry.row);
    else duplicate(entry, first);
  }
  const earlier = await chunks.claimIds(
    runId,
    [...firstRow].map(([id, row]) => ({ id, row })),
  );
  for (const entry of entries) {
    const first = entry.item && earlier.get(entry.item.id);
    if (first !== undefined) duplicate(entry, first);
  }

  const sample = run.suite.run.sample;
  const state = sample ? await sampleAfter(deps.bucket, task, sample, entries) : undefined;
  // The next chunk claims its ids after these: it may start now.
  if (read.next) await deps.sendChunk({ ...task, ...read.next, chunk: chunk + 1 });

  // Handed on in order, from where an earlier holder of the chunk stopped; a sampled run's
  // results all go in part 0, the others' in the chunk's own part.
  const part = sample ? 0 : chunk;
  const now = deps.now ?? (() => new Date());
  let pending: ItemMessage[] = [];
  let queued = 0;
  const flush = async () => {
    if (pending.length > 0) await queue.sendItems(pending);
    pending = [];
  };
  for (let i = claim.handed; i < entries.length; i += 1) {
    const entry = entries[i]!;
    if (entry.invalid)
      await runStore.recordResult(invalidResult(runId, { row: entry.row, part, ...entry.invalid }, now()));
    else if (!sample) {
      pending.push({ runId, item: entry.item!, ...(part ? { part } : {}) });
      queued += 1;
      if (pending.length >= SEND_EVERY) await flush();
    }
    if ((i + 1) % PROGRESS_EVERY === 0) {
      await flush();
      await chunks.chunkProgress(runId, chunk, i + 1);
    }
  }
  await flush();

  const invalidRows = entries.filter((entry) => entry.invalid).length;
  let complete = false;
  if (!sample) {
    ({ complete } = await runStore.closePart(runId, part, {
      rows: entries.map((entry) => entry.row),
      invalidRows,
      last: !read.next,
    }));
  } else if (!read.next) {
    // The last chunk: the sample is final, and part 0 holds it and every invalid row.
    const sampled = new Reservoir(sample, state!.reservoir).sample();
    for (let i = 0; i < sampled.length; i += 100) {
      await queue.sendItems(sampled.slice(i, i + 100).map((item) => ({ runId, item })));
      queued += Math.min(100, sampled.length - i);
    }
    const rows = new RowList();
    for (const row of state!.invalidRows) rows.push(row);
    for (const item of sampled) rows.push(item.row);
    ({ complete } = await runStore.closePart(runId, 0, {
      rows: rows.values(),
      invalidRows: state!.invalidRows.length,
      last: true,
    }));
  }
  await chunks.chunkProgress(runId, chunk, entries.length, true);
  if (complete) await deps.trigger.trigger(runId);
  return {
    status: 'ingested',
    runId,
    chunk,
    rows: entries.length,
    invalidRows,
    queued,
    last: !read.next,
    complete,
    ...(unreadable ? { unreadable: unreadable.reason } : {}),
  };
}

/**
 * A sampled run's sample after this chunk: the one the chunk before left (none before the
 * first), offered this chunk's items in order; kept for the next chunk (written again the same
 * when the chunk is done again).
 */
async function sampleAfter(
  bucket: BlobStore,
  task: ChunkTask,
  sample: { n: number; seed?: number },
  entries: readonly Entry[],
): Promise<SampleState> {
  let before: SampleState = { reservoir: { offered: 0, draws: 0, items: [] }, invalidRows: [] };
  if (task.chunk > 0) {
    const body = await bucket.get(sampleStateKey(task.runId, task.chunk - 1));
    if (!body) throw new Error(`the sample left by chunk ${task.chunk - 1} of run ${task.runId} is missing`);
    before = JSON.parse(new TextDecoder().decode(body)) as SampleState;
  }
  const reservoir = new Reservoir(sample, before.reservoir);
  const invalidRows = [...before.invalidRows];
  for (const entry of entries) {
    if (entry.item) reservoir.offer(entry.item);
    else invalidRows.push(entry.row);
  }
  const after: SampleState = { reservoir: reservoir.state(), invalidRows };
  await bucket.put(sampleStateKey(task.runId, task.chunk), JSON.stringify(after), 'application/json');
  return after;
}
