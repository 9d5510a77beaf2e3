import { readColumn } from '../family/rows.js';
import { EXPLANATION_COLUMNS } from '../lib/datasets/join.js';
import type { RawRow } from '../lib/datasets/read.js';
import { IdIndex } from '../lib/id-index.js';
import { mulberry32 } from '../lib/metrics/index.js';
import { RunExistsError } from '../model/errors.js';
import { failedResult, type Item, type ItemMessage, type RunRecord } from '../model/model.js';
import type { AggregateTrigger, ItemIdSet, RunStore, WorkQueue } from '../ports/ports.js';
import { taskFor } from '../registry/registry.js';
import type { Suite } from '../registry/suite.js';

export interface StartRunDeps {
  runStore: RunStore;
  queue: WorkQueue;
  trigger: AggregateTrigger;
  now?: () => Date;
}

export interface StartRunInput {
  /** The run record to create (status `ingesting`, no total yet). */
  run: RunRecord;
  /**
   * The dataset's rows: read once, or, given as a function that reads them again from the start
   * (a local file), read twice: a first pass finds the duplicate item ids before any item is
   * sent, so the index of every id (tens of MB for a million rows) is let go before scoring
   * starts instead of being held beside the run store's while items are scored.
   */
  rows: AsyncIterable<RawRow> | (() => AsyncIterable<RawRow>);
  /**
   * Continue a run that already exists: items that have no result yet are sent again.
   * Without it, a second start of an existing run (a redelivered upload event) does nothing
   * unless the first ingest died before it finished.
   */
  resume?: boolean;
  batchSize?: number;
  /**
   * Continue an ingest that paused: the first `skip` items and invalid rows (in the dataset's
   * order; they were handed on by earlier invocations) are read again, for the totals and the
   * duplicate check, but not sent or recorded again.
   */
  skip?: number;
  /**
   * Asked after each item or invalid row handed on by this call (`handed` of them so far):
   * true pauses the ingest there, with everything handed on sent, and the outcome says where
   * to continue (`paused`, `next`). An invocation with a time limit pauses before reaching it.
   */
  shouldPause?: (handed: number) => boolean;
}

export type StartRunOutcome =
  | {
      status: 'started' | 'resumed';
      runId: string;
      total: number;
      invalidRows: number;
      queued: number;
      /** Every item already had its result (a resumed run that was done): the run was sent to aggregation. */
      complete: boolean;
    }
  | { status: 'duplicate'; runId: string }
  /** Stopped by `shouldPause`: start again with `skip: next` to continue (the total is not set yet). */
  | { status: 'paused'; runId: string; next: number; queued: number };

/**
 * Reads the dataset (after a pass of its own for the duplicate ids, when it can be read twice):
 * bad rows become failed results (with row number and reason), good ones become item messages.
 * The total is written last, and completion is checked here too, because workers may finish
 * every item before ingest knows the total.
 */
export async function startRun(deps: StartRunDeps, input: StartRunInput): Promise<StartRunOutcome> {
  const { run } = input;
  const { runStore, queue } = deps;
  const now = deps.now ?? (() => new Date());
  const created = await runStore.createRun(run).then(
    () => true,
    (error: unknown) => {
      // The run exists (a redelivered upload, a resume): what happens next depends on its state.
      if (error instanceof RunExistsError) return false;
      throw error;
    },
  );
  /** The ids a resumed run has final results for: compact, as a run may have a million items. */
  let finished: ItemIdSet = new Set<string>();
  if (!created) {
    const existing = await runStore.getRun(run.runId);
    if (!input.resume && existing?.status !== 'ingesting') return { status: 'duplicate', runId: run.runId };
    finished = await runStore.resultIds(run.runId);
  }

  const task = taskFor(run.suite);
  const batchSize = input.batchSize ?? 100;
  /** A row as the ingest takes it: an item, or why it is not one (and what the row holds). */
  const parse = (
    raw: RawRow,
  ): { item: Item } | { error: string; input?: Record<string, string>; id?: string } => {
    if (raw.error !== undefined)
      return { error: raw.line > 0 ? `line ${raw.line}: ${raw.error}` : raw.error, id: raw.id };
    const parsed = task.parseRow(raw.record, raw.row, run.suite, run.prompts);
    if ('error' in parsed) return { error: parsed.error, input: raw.record };
    return { item: withGiven(parsed.item, raw.record, run.suite) };
  };
  const rows = typeof input.rows === 'function' ? input.rows : undefined;
  /**
   * The first row of an item id met before (a duplicate): from a pass of its own when the rows
   * can be read twice, else from each id's first row, kept compactly as the rows go by.
   */
  const firstRowBefore = rows ? await duplicateRows(rows(), parse) : seenBefore();
  let pending: ItemMessage[] = [];
  let total = 0;
  let invalidRows = 0;
  let queued = 0;
  /** Items and invalid rows handed on so far, counting the ones skipped; `skip` of them were earlier invocations'. */
  let handed = 0;
  const skip = input.skip ?? 0;
  /** True when this one was handed on by an earlier invocation. */
  const skipped = () => {
    handed += 1;
    return handed <= skip;
  };
  const pause = async (): Promise<StartRunOutcome | undefined> => {
    if (handed <= skip || !input.shouldPause?.(handed - skip)) return undefined;
    if (pending.length > 0) await queue.sendItems(pending);
    pending = [];
    return { status: 'paused', runId: run.runId, next: handed, queued };
  };

  /** The row of every result the run will hold (items sent, invalid rows recorded): what closes its part. */
  const handedRows = new RowList();
  const send = async (item: Item) => {
    handedRows.push(item.row);
    if (skipped() || finished.has(item.id)) return;
    pending.push({ runId: run.runId, item });
    queued += 1;
    if (pending.length >= batchSize) {
      await queue.sendItems(pending);
      pending = [];
    }
  };
  const reject = async (row: number, reason: string, input: Record<string, string> = {}, id?: string) => {
    invalidRows += 1;
    handedRows.push(row);
    const itemId = id ?? `row-${row}`;
    if (skipped() || finished.has(itemId)) return;
    await runStore.recordResult(
      failedResult(
        { runId: run.runId, itemId, row, input },
        { kind: 'invalid_row', message: `row ${row}: ${reason}` },
        now(),
      ),
    );
  };

  const sample = run.suite.run.sample;
  const reservoir: Item[] = [];
  const rng = mulberry32(sample?.seed ?? 0);
  let valid = 0;

  for await (const raw of rows ? rows() : (input.rows as AsyncIterable<RawRow>)) {
    const paused = await pause();
    if (paused) return paused;
    const parsed = parse(raw);
    if ('error' in parsed) {
      total += 1;
      await reject(raw.row, parsed.error, parsed.input, parsed.id);
      continue;
    }
    const { item } = parsed;
    const firstRow = firstRowBefore(raw.row, item);
    if (firstRow !== undefined) {
      total += 1;
      await reject(
        raw.row,
        `duplicate item id ${JSON.stringify(item.id)} (first seen at row ${firstRow})`,
        raw.record,
      );
      continue;
    }
    if (!sample) {
      total += 1;
      await send(item);
      continue;
    }
    // Reservoir sampling: a uniform, seeded sample in one pass over any dataset size.
    valid += 1;
    if (reservoir.length < sample.n) reservoir.push(item);
    else {
      const j = Math.floor(rng() * valid);
      if (j < sample.n) reservoir[j] = item;
    }
  }
  if (sample) {
    total += reservoir.length;
    for (const item of reservoir.sort((a, b) => a.row - b.row)) {
      const paused = await pause();
      if (paused) return paused;
      await send(item);
    }
  }
  if (pending.length > 0) await queue.sendItems(pending);

  const { complete } = await runStore.closePart(run.runId, 0, {
    rows: handedRows.values(),
    invalidRows,
    last: true,
  });
  if (complete) await deps.trigger.trigger(run.runId);
  return { status: created ? 'started' : 'resumed', runId: run.runId, total, invalidRows, queued, complete };
}

/** Row numbers as they come, 4 bytes each (a dataset may have millions of rows). */
class RowList {
  private rows = new Uint32Array(1024);
  private length = 0;

  push(row: number): void {
    if (this.length === this.rows.length) {
      const grown = new Uint32Array(this.rows.length * 2);
      grown.set(this.rows);
      this.rows = grown;
    }
    this.rows[this.length++] = row;
  }

  values(): Uint32Array {
    return this.rows.subarray(0, this.length);
  }
}

/** Looks an item up by its id as the rows go by: the first row it was met at, else notes it. */
function seenBefore(): (row: number, item: Item) => number | undefined {
  /** Each item id's first row: compact, as a dataset may have a million rows. */
  const firstRowOf = new IdIndex();
  return (_row, item) => {
    const first = firstRowOf.get(item.id);
    if (first === undefined) firstRowOf.set(item.id, item.row);
    return first;
  };
}

/**
 * One pass over the rows for their duplicate item ids: the rows (by row number) whose id an
 * earlier row had, with that earlier row. Only the duplicates are kept past the pass.
 */
async function duplicateRows(
  rows: AsyncIterable<RawRow>,
  parse: (raw: RawRow) => { item: Item } | { error: string },
): Promise<(row: number, item: Item) => number | undefined> {
  const seen = seenBefore();
  const duplicates = new Map<number, number>();
  for await (const raw of rows) {
    const parsed = parse(raw);
    if (!('item' in parsed)) continue;
    const first = seen(raw.row, parsed.item);
    if (first !== undefined) duplicates.set(raw.row, first);
  }
  return (row) => duplicates.get(row);
}

/**
 * When the suite maps a dataset column to the output (`dataset.columns.output`), the item
 * carries the row's value: the family reads it instead of solving (a row without one fails as
 * `no_output`, it is not an invalid row).
 */
function withGiven(item: Item, record: Record<string, string>, suite: Suite): Item {
  const { output, explanation } = suite.dataset.columns;
  if (output === undefined) return item;
  const value = record[output];
  const why = readColumn(record, explanation, EXPLANATION_COLUMNS)?.value;
  return {
    ...item,
    given: {
      ...(value !== undefined && value !== '' ? { output: value } : {}),
      ...(why ? { explanation: why } : {}),
    },
  };
}
