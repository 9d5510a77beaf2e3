import { rowReader } from '../family/dataset-row.js';
import { readColumn } from '../family/rows.js';
import { EXPLANATION_COLUMNS } from '../lib/datasets/join.js';
import type { RawRow } from '../lib/datasets/read.js';
import { IdIndex } from '../lib/id-index.js';
import { mulberry32 } from '../lib/metrics/index.js';
import { InputError, RunExistsError } from '../model/errors.js';
import {
  failedResult,
  type Item,
  type ItemMessage,
  type ItemResult,
  type RunRecord,
} from '../model/model.js';
import type { AggregateTrigger, ItemIdSet, RunStore, WorkQueue } from '../ports/ports.js';
import { taskFor } from '../registry/registry.js';
import type { Suite } from '../registry/suite.js';
import { type DeployLimits, itemLimitReason } from './deploy-limits.js';

/** What ingest does with a run store: create the run, record invalid rows, close its parts. */
export type IngestRunStore = Pick<
  RunStore,
  'createRun' | 'getRun' | 'resultIds' | 'recordResult' | 'closePart' | 'stop'
>;

export interface StartRunDeps {
  runStore: IngestRunStore;
  queue: WorkQueue;
  trigger: AggregateTrigger;
  /**
   * The most rows of a part of the run (AWS: the layout's `PART_ROWS`; see `RunStore.closePart`):
   * a run's rows are cut into parts of this many, in the dataset's order. Unset: one part. A
   * sampled run's results are one part whatever its size (its rows are known only at the end).
   */
  partRows?: number;
  /** What the deployment allows an upload (AWS); none locally. */
  limits?: DeployLimits;
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
      /** The dataset had more rows than the deployment allows: the run was stopped there, and why. */
      stopped?: string;
      /**
       * The file could not be read to its end (a reader's limit, a broken file): why. The row it
       * stopped at is a failed result saying so, and the run was stopped (see {@link unreadableReason}).
       */
      readFailure?: string;
    }
  | { status: 'duplicate'; runId: string };

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

  const batchSize = input.batchSize ?? 100;
  const parse = rowParser(run);
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

  const sample = run.suite.run.sample;
  const reservoir = sample && new Reservoir(sample);

  /** The part rows go in: a new one once the part holds `partRows` (the last part is never empty). */
  const partRows = (!reservoir && deps.partRows) || Number.POSITIVE_INFINITY;
  let part = 0;
  let invalidInPart = 0;
  /** The row of every result the part will hold (items sent, invalid rows recorded): what closes it. */
  let handedRows = new RowList();
  const hand = async (row: number) => {
    if (handedRows.size >= partRows) {
      if (pending.length > 0) await queue.sendItems(pending);
      pending = [];
      await runStore.closePart(run.runId, part, { rows: handedRows.values(), invalidRows: invalidInPart });
      part += 1;
      invalidInPart = 0;
      handedRows = new RowList();
    }
    handedRows.push(row);
  };
  const send = async (item: Item) => {
    await hand(item.row);
    if (finished.has(item.id)) return;
    pending.push({ runId: run.runId, item, ...(part ? { part } : {}) });
    queued += 1;
    if (pending.length >= batchSize) {
      await queue.sendItems(pending);
      pending = [];
    }
  };
  const reject = async (row: number, invalid: InvalidRow) => {
    invalidRows += 1;
    await hand(row);
    invalidInPart += 1;
    const result = invalidResult(run.runId, { row, ...invalid, ...(part ? { part } : {}) }, now());
    if (finished.has(result.itemId)) return;
    await runStore.recordResult(result);
  };

  const maxItems = deps.limits?.maxItems || undefined;
  let stopped: string | undefined;
  let readFailure: string | undefined;
  let lastRow = 0;
  try {
    for await (const raw of rows ? rows() : (input.rows as AsyncIterable<RawRow>)) {
      if (maxItems !== undefined && raw.row > maxItems) {
        // Over the deployment's limit: nothing past it is read, and the items sent end as `stopped`.
        stopped = itemLimitReason(maxItems);
        await runStore.stop?.(run.runId, stopped);
        break;
      }
      lastRow = raw.row; // rows come numbered in order
      await take(raw);
    }
  } catch (error) {
    // The file cannot be read past here (a reader's limit, a broken file, a value too deep for
    // the stack): the run ends with the reason. A retry would meet the same row.
    if (!(error instanceof InputError || error instanceof RangeError)) throw error;
    readFailure = error instanceof InputError ? error.message : `${run.datasetKey}: ${error.message}`;
    total += 1;
    await reject(lastRow + 1, { reason: readFailure });
    await runStore.stop?.(run.runId, unreadableReason(lastRow + 1, readFailure));
  }
  async function take(raw: RawRow): Promise<void> {
    const parsed = parse(raw);
    if ('error' in parsed) {
      total += 1;
      await reject(raw.row, invalidOf(parsed));
      return;
    }
    const { item } = parsed;
    const firstRow = firstRowBefore(raw.row, item);
    if (firstRow !== undefined) {
      total += 1;
      await reject(raw.row, { reason: duplicateReason(item.id, firstRow), input: raw.record });
      return;
    }
    if (reservoir) reservoir.offer(item);
    else {
      total += 1;
      await send(item);
    }
  }
  if (reservoir) {
    const sampled = reservoir.sample();
    total += sampled.length;
    for (const item of sampled) await send(item);
  }
  if (pending.length > 0) await queue.sendItems(pending);

  const { complete } = await runStore.closePart(run.runId, part, {
    rows: handedRows.values(),
    invalidRows: invalidInPart,
    last: true,
  });
  if (complete) await deps.trigger.trigger(run.runId);
  return {
    status: created ? 'started' : 'resumed',
    runId: run.runId,
    total,
    invalidRows,
    queued,
    complete,
    ...(stopped ? { stopped } : {}),
    ...(readFailure ? { readFailure } : {}),
  };
}

/**
 * Why a run whose file could not be read past `row` was stopped: its rows before were read, the
 * row there is a failed result with the reader's reason, and nothing after it is an item. No
 * retry can help: the file (or the reader's limits) must change.
 */
export const unreadableReason = (row: number, reason: string) =>
  `the dataset could not be read from row ${row} on, so the run was stopped there: ${reason}`;

/** Where a reservoir sample stands after some items: every item offered, the draws made, what it holds. */
export interface ReservoirState {
  offered: number;
  draws: number;
  items: Item[];
}

/**
 * Reservoir sampling: a uniform, seeded sample of `n` items in one pass over any number of
 * them, which can stop and go on from its {@link ReservoirState} (a dataset read in chunks)
 * and draws exactly what one pass would.
 */
export class Reservoir {
  private readonly n: number;
  private readonly seed: number;
  private offered: number;
  private draws: number;
  private readonly items: Item[];
  private rng: () => number;

  constructor({ n, seed }: { n: number; seed?: number }, from?: ReservoirState) {
    this.n = n;
    this.seed = seed ?? 0;
    this.offered = from?.offered ?? 0;
    this.draws = from?.draws ?? 0;
    this.items = from ? [...from.items] : [];
    this.rng = mulberry32(this.seed, this.draws);
  }

  offer(item: Item): void {
    this.offered += 1;
    if (this.items.length < this.n) {
      this.items.push(item);
      return;
    }
    this.draws += 1;
    const j = Math.floor(this.rng() * this.offered);
    if (j < this.n) this.items[j] = item;
  }

  state(): ReservoirState {
    return { offered: this.offered, draws: this.draws, items: [...this.items] };
  }

  /** The sample, in dataset order. */
  sample(): Item[] {
    return [...this.items].sort((a, b) => a.row - b.row);
  }
}

/** Row numbers as they come, 4 bytes each (a dataset may have millions of rows). */
export class RowList {
  private rows = new Uint32Array(1024);
  private length = 0;

  get size(): number {
    return this.length;
  }

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

/**
 * A dataset row as ingest takes it: an item, or why it is not one (and what the row holds, with
 * its several annotators' labels: they count among the annotators even when the row is invalid).
 */
export type ParsedRow =
  | { item: Item }
  | { error: string; input?: Record<string, string>; id?: string; gold?: string; annotations?: string[] };

/**
 * Reads dataset rows into the run's items by its family's rules (with the output a row gives),
 * the one place a row becomes an item in either shell: the family reads the row's columns as
 * the suite names them (dot paths, extracted and recoded values, several annotators' majority:
 * see dataset-row.ts), and the columns it did not read travel with the item.
 */
export function rowParser(run: RunRecord): (raw: RawRow) => ParsedRow {
  const task = taskFor(run.suite);
  const rows = rowReader(run.suite, task.suite);
  return (raw) => {
    if (raw.error !== undefined)
      return { error: raw.line > 0 ? `line ${raw.line}: ${raw.error}` : raw.error, id: raw.id };
    const reading = rows.read(raw.record, raw.structured);
    const annotations = reading.annotations ? { annotations: reading.annotations } : {};
    const before = reading.problem();
    if (before !== undefined) return { error: before, input: raw.record, ...annotations };
    const parsed = task.parseRow(reading.record, raw.row, rows.suite, run.prompts);
    // An object the family read as text, a field too long inside one, a blank gold: the row is invalid.
    const problem = reading.problem('item' in parsed ? parsed.item : undefined);
    if (problem !== undefined) return { error: problem, input: raw.record, ...annotations };
    if ('error' in parsed) {
      // Its gold as the row gives it: the family's reading, else the column the suite names.
      const column = rows.suite.dataset.columns.gold;
      const gold = parsed.gold ?? (typeof column === 'string' ? reading.record[column] : undefined);
      return {
        error: parsed.error,
        input: raw.record,
        ...(gold !== undefined ? { gold } : {}),
        ...annotations,
      };
    }
    const item = withGiven(parsed.item, reading.record, run.suite);
    const columns = reading.kept();
    return {
      item: {
        ...item,
        ...(columns ? { columns } : {}),
        ...(reading.annotations ? { annotations: reading.annotations } : {}),
      },
    };
  };
}

/**
 * Why a dataset row is not an item, and what it holds: its columns, its id when it has one, and
 * its several annotators' labels (they count among the annotators even when the row is invalid).
 */
export interface InvalidRow {
  reason: string;
  input?: Record<string, string>;
  id?: string;
  /** Its gold as the row gives it (text, never read as a label): shown, never scored. */
  gold?: string;
  annotations?: string[];
}

/** A row the parser refused, as ingest records it. */
export function invalidOf({ error, ...row }: Extract<ParsedRow, { error: string }>): InvalidRow {
  return { reason: error, ...row };
}

/** A row that is not an item, as ingest records it: a failed result under the row's id (`row-<n>` unless given). */
export function invalidResult(
  runId: string,
  { row, reason, input = {}, id, gold, part, annotations }: InvalidRow & { row: number; part?: number },
  at: Date,
): ItemResult {
  const result = failedResult(
    { runId, itemId: id ?? `row-${row}`, row, input, part, ...(gold !== undefined ? { gold } : {}) },
    { kind: 'invalid_row', message: `row ${row}: ${reason}` },
    at,
  );
  return annotations ? { ...result, annotations } : result;
}

/** Why a row whose id an earlier row had is invalid. */
export const duplicateReason = (id: string, firstRow: number) =>
  `duplicate item id ${JSON.stringify(id)} (first seen at row ${firstRow})`;

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
  try {
    for await (const raw of rows) {
      const parsed = parse(raw);
      if (!('item' in parsed)) continue;
      const first = seen(raw.row, parsed.item);
      if (first !== undefined) duplicates.set(raw.row, first);
    }
  } catch (error) {
    // A file that cannot be read to its end: the pass that hands the rows on stops at the same row, and says so.
    if (!(error instanceof InputError)) throw error;
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
  const values = (typeof output === 'string' ? [output] : output).map((column) => record[column] ?? '');
  const value = values[0];
  const why = readColumn(record, explanation, EXPLANATION_COLUMNS)?.value;
  return {
    ...item,
    given: {
      ...(value !== undefined && value !== '' ? { output: value } : {}),
      ...(typeof output === 'string' ? {} : { outputs: values }),
      ...(why ? { explanation: why } : {}),
    },
  };
}
