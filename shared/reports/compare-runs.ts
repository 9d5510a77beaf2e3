import { deserialize, serialize } from 'node:v8';
import type { Scorer } from '../family/types.js';
import {
  type BootstrapOptions,
  CompensatedSum,
  type CompensatedSumState,
  classificationMetrics,
  codeOf,
  type GoldColumns,
  type Indices,
  LabelPairCounts,
  type McNemarResult,
  mcnemar,
  meanAt,
  type NumberArray,
  NumberColumn,
  newcombePaired,
  numberStatistics,
  type PairedCounts,
  type PairedDelta,
  type PairedSide,
  pairedBootstrapsAt,
  passStatistics,
  RepeatRows,
  type RepeatRowsState,
  verdictOf,
  withheldReason,
} from '../lib/metrics/index.js';
import { StoredDataError } from '../model/codec.js';
import { deltaMethod } from '../model/metrics.js';
import {
  digestOf,
  type ItemResult,
  isScored,
  type RunRecord,
  resultCost,
  type ScoreKind,
  type ScoreValue,
  scoreOf,
} from '../model/model.js';
import { compareReportOrder } from '../model/report-order.js';
import { taskFor } from '../registry/registry.js';
import { scoreRow, targetReader } from './report.js';
import { MAX_SLICE_VALUES, OTHER_VALUE, shownValue, sliceValue } from './slices.js';

/**
 * Run-vs-run comparison: the same items scored by two runs — typically before and after a
 * prompt change — joined on the item id, scorer by scorer. Pure: no I/O.
 *
 * The two runs are read side by side in report order and paired as they come ({@link pairs}:
 * a streaming merge with a bounded window for items whose rows moved), and the pairs are
 * tallied ({@link ComparisonTally}: typed columns, not results) in parts that merge in order, so
 * a run of ten million results compares in bounded memory, a part at a time.
 *
 * Conventions (the same as the run report's):
 * - `invalid_row` results never reached a model: they are left out of the pairing.
 * - Paired means paired: every scorer's deltas, intervals and tests run over the items scored on
 *   both sides (and, for label scorers, with gold). An item one side failed or refused and the
 *   other scored is an outcome, not a row dropped from one side: it shows in each side's
 *   coverage (scored / paired items) and in the coverage delta, with its own interval and test.
 *   A variant that fails the hard items has a lower coverage, not a better accuracy.
 * - Differences of proportions (accuracy, binary accuracy, pass rate, coverage) take Newcombe's
 *   paired interval (method 10) and McNemar's test; the other metrics the paired bootstrap.
 * - Everything resampled is in the base run's report order (row, then item id), so the same two
 *   runs always give the same numbers whatever order the stores returned the results in.
 */

export interface RunSide {
  run: RunRecord;
  results: ItemResult[];
}

export interface FlippedSide {
  /** The value, or `(parse)`-style unscored reason. */
  value: string;
  reason?: string;
  status: string;
}

export interface FlippedItem {
  itemId: string;
  row: number;
  gold?: string;
  input: Record<string, string>;
  base: FlippedSide;
  candidate: FlippedSide;
  /** 'fixed' (wrong→right), 'broken' (right→wrong), 'changed' (anything else: no gold, unscored involved, wrong→differently wrong) */
  kind: 'fixed' | 'broken' | 'changed';
}

export interface RunHeader {
  runId: string;
  suite: string;
  task: string;
  dataset: string;
  startedAt: string;
  /** Prompt path → content hash. */
  prompts: Record<string, string>;
  /** The backends that answered; none when the dataset gave the outputs (see `predictions`). */
  backends: string[];
  /** Where the outputs came from when the dataset gave them (`assay score`): no backend answered. */
  predictions?: string;
  /** The run was answered by the simulator (its record says so, or a result of it does). */
  simulated: boolean;
}

export interface PromptChange {
  path: string;
  base?: string;
  candidate?: string;
}

/** One scorer of both runs, compared on the paired items. */
export interface ScorerComparison {
  kind: ScoreKind;
  /** Paired items the statistics ran over: scored on both sides (label scorers: with gold). */
  n: number;
  /**
   * Each side's share of the paired items it scored and their paired difference (candidate −
   * base, Newcombe's interval, McNemar's p). Items a sequential gate settled without scoring are
   * left out of it. Absent in comparisons written before it was recorded.
   */
  coverage?: CoverageDelta;
  /** Each metric's paired difference (candidate − base) over the `n` items, by metric name. */
  deltas: Record<string, PairedDelta>;
  /** Label and pass scorers: right vs wrong on the `n` items; b = base right only, c = candidate right only. */
  mcnemar?: McNemarResult;
  /** Paired items whose value differs, in (row, itemId) order. */
  flipped: FlippedItem[];
  /**
   * Runs that scored each item several times (`run.repeats`): per metric with a delta, the
   * noise floor it is held against (the larger of the two runs' floors; a run without repeats
   * has none) and whether the delta's magnitude is within it.
   */
  noise?: Record<string, DeltaNoise>;
  /**
   * The primary scorer, when both runs' suites slice by a column: per column, per value (the
   * base item's), the paired deltas over the paired items of that value.
   */
  slices?: Record<string, Record<string, SliceComparison>>;
}

/** The paired difference of coverage: each side's share of the paired items it scored. */
export interface CoverageDelta extends PairedDelta {
  /** Items each side scored, of the `n` paired items. */
  scored: { base: number; candidate: number };
}

/** One slice value of both runs, compared on its paired items. */
export interface SliceComparison {
  /** Paired items of the value the statistics ran over. */
  n: number;
  /** Paired bootstrap of each metric (candidate − base) over them. */
  deltas: Record<string, PairedDelta>;
}

/** A delta against the scorer's own noise. */
export interface DeltaNoise {
  /** The larger of the two runs' noise floors. */
  floor: number;
  base: number | null;
  candidate: number | null;
  /** |delta| ≤ floor: the runs differ by no more than repeats of one run do. */
  withinNoise: boolean;
}

export interface Comparison {
  /** Either run was answered by the simulator: every output of the comparison says so. */
  simulated: boolean;
  /** Present when `simulated`: the banner every output shows first. */
  notice?: string;
  base: RunHeader;
  candidate: RunHeader;
  /** Paths whose hash differs or that exist on one side only, sorted by path. */
  promptChanges: PromptChange[];
  /**
   * Joined on itemId; invalid_row results are excluded from pairing (and from these counts).
   * `outOfWindow` (absent when 0): items given up unpaired because more items than the pairing
   * window holds were waiting for their partner at once (see {@link pairs}). Each counts as only
   * in its run, and so does a partner of it read later; some may have had no partner at all
   * (rows deleted or inserted by the thousand), the window cannot tell.
   * `changed` (absent when 0): items of the same id in both runs whose input or gold differ (a
   * row edited between the runs, see `inputDigest`): not paired, and not counted as only in a run.
   */
  items: { paired: number; onlyBase: number; onlyCandidate: number; changed?: number; outOfWindow?: number };
  primaryScorer: string;
  /** The scorers both runs have, with the same kind. */
  scores: Record<string, ScorerComparison>;
  /** Sum of every stage's costUsd over each side's results (all of them, unpaired included). */
  cost: { base: number; candidate: number; delta: number };
}

export interface CompareOptions {
  bootstrap?: BootstrapOptions;
}

/** What a comparison with a simulated run says first, in every output. */
export function simulatedNotice(base: boolean, candidate: boolean): string {
  const which = base && candidate ? 'both runs were' : base ? 'the base run was' : 'the candidate run was';
  return `SIMULATED: ${which} answered by the simulator (answers drawn from the gold labels with noise); the differences measure nothing about a real model.`;
}

function header(run: RunRecord, simulated: boolean): RunHeader {
  return {
    runId: run.runId,
    suite: run.suiteName,
    task: run.suite.task,
    dataset: run.datasetKey,
    startedAt: run.startedAt,
    prompts: Object.fromEntries(
      Object.entries(run.prompts)
        .map(([path, p]) => [path, p.hash] as const)
        .sort(([a], [b]) => byCodeUnit(a, b)),
    ),
    backends: run.predictions !== undefined ? [] : [...run.suite.backends],
    ...(run.predictions !== undefined ? { predictions: run.predictions } : {}),
    simulated: run.simulated || simulated,
  };
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function promptChanges(base: Record<string, string>, candidate: Record<string, string>): PromptChange[] {
  const paths = [...new Set([...Object.keys(base), ...Object.keys(candidate)])].sort(byCodeUnit);
  const changes: PromptChange[] = [];
  for (const path of paths) {
    if (base[path] === candidate[path]) continue;
    const change: PromptChange = { path };
    if (base[path] !== undefined) change.base = base[path];
    if (candidate[path] !== undefined) change.candidate = candidate[path];
    changes.push(change);
  }
  return changes;
}

const isInvalidRow = (result: ItemResult) => result.failure?.kind === 'invalid_row';

/** Two results of one item id hold the same input and gold: the row was not edited between the runs. */
const sameContent = (base: ItemResult, candidate: ItemResult) => digestOf(base) === digestOf(candidate);

/** What {@link pairs} yields: an item of both runs, or of one run only. */
export interface ItemPair {
  base?: ItemResult;
  candidate?: ItemResult;
  /** Given up unpaired: more than `maxUnpaired` items were waiting for their partner. */
  outOfWindow?: boolean;
  /**
   * Both results are of the same item id, but its input or gold differ between the runs (a row
   * edited): they are not a pair, and count as changed.
   */
  changed?: boolean;
}

/** How a pairing went, filled in as it goes (see {@link PairOptions}). */
export interface PairingStats {
  /** Items waiting for their partner now. */
  waiting: number;
  /** The most that ever waited at once: never more than `maxUnpaired`. */
  mostWaiting: number;
  /** Items given up unpaired. */
  outOfWindow: number;
}

export interface PairOptions {
  /**
   * How many items may wait for their partner at once (both runs together); beyond it the one
   * that has waited longest is given up. Default {@link DEFAULT_MAX_UNPAIRED}.
   */
  maxUnpaired?: number;
  /**
   * Sees each result as it is read, invalid rows included: each run's results in its report
   * order (what is a figure of one run alone: its cost, its noise floor).
   */
  onRead?: (side: PairedSide, result: ItemResult) => void;
  /**
   * Both runs read the same version of the dataset, so an item is at the same row in both: an
   * item whose partner is not at its (row, item id) in the other run has none, and is unpaired at
   * once. Nothing waits (runs of different samples of a dataset hold many such items).
   */
  sameRows?: boolean;
  /** Filled in as the pairing goes (reset when it starts). */
  stats?: PairingStats;
}

/**
 * Items that may wait for their partner at once when none is given: each holds a result (a
 * compared part of one: its inputs and scores, a kilobyte or a few), so some tens of megabytes.
 */
export const DEFAULT_MAX_UNPAIRED = 20_000;

/** A run's results came out of report order: the caller sorts them first (`inReportOrder`). */
export class ReportOrderError extends RangeError {
  override readonly name = 'ReportOrderError';

  constructor(
    readonly side: PairedSide,
    message: string,
  ) {
    super(message);
  }
}

/** Checks that one run's results come in report order. */
class OrderCheck {
  private last: ItemResult | undefined;

  constructor(private readonly side: PairedSide) {}

  next(result: ItemResult): void {
    const last = this.last;
    if (last && compareReportOrder(last, result) > 0)
      throw new ReportOrderError(
        this.side,
        `the ${this.side} run's results are not in report order: row ${result.row} (item ${result.itemId}) came after row ${last.row} (item ${last.itemId}); sort them first (inReportOrder)`,
      );
    this.last = result;
  }
}

interface Waiting {
  result: ItemResult;
  /** When it began to wait, over both runs: the oldest is given up first. */
  since: number;
}

/**
 * The pairing itself, fed the next usable result of each run (in report order) and told which
 * it took: items at the same (row, item id) pair at once; an item whose partner has not come
 * waits by id (a dataset edited between the runs shifts rows) until it does, or until more
 * than `maxUnpaired` items wait and it has waited longest.
 */
class PairingWindow {
  private readonly waiting: Record<PairedSide, Map<string, Waiting>> = {
    base: new Map(),
    candidate: new Map(),
  };
  private clock = 0;
  private out: ItemPair[] = [];

  constructor(
    private readonly maxUnpaired: number,
    private readonly sameRows: boolean,
    private readonly stats: PairingStats,
  ) {
    if (!(maxUnpaired >= 0)) throw new RangeError(`pairs: maxUnpaired must be 0 or more, got ${maxUnpaired}`);
    Object.assign(stats, { waiting: 0, mostWaiting: 0, outOfWindow: 0 });
  }

  /** Takes the earlier in report order of the two runs' next results (both if they are the same item). */
  step(base: ItemResult | undefined, candidate: ItemResult | undefined): PairedSide | 'both' {
    if (base && candidate && base.row === candidate.row && base.itemId === candidate.itemId) {
      this.out.push(this.pairOf(base, candidate));
      return 'both';
    }
    const side: PairedSide =
      !candidate || (base && compareReportOrder(base, candidate) < 0) ? 'base' : 'candidate';
    const result = (side === 'base' ? base : candidate)!;
    if (this.sameRows) {
      this.out.push(side === 'base' ? { base: result } : { candidate: result });
      return side;
    }
    const other = this.waiting[side === 'base' ? 'candidate' : 'base'];
    const partner = other.get(result.itemId);
    if (partner) {
      other.delete(result.itemId);
      this.out.push(
        side === 'base' ? this.pairOf(result, partner.result) : this.pairOf(partner.result, result),
      );
    } else {
      const own = this.waiting[side];
      if (own.has(result.itemId))
        throw new StoredDataError(`the ${side} run has two results of item ${result.itemId}`);
      own.set(result.itemId, { result, since: this.clock++ });
      while (own.size + other.size > this.maxUnpaired) this.giveUpOldest();
    }
    this.count();
    return side;
  }

  /** Both runs are read: whatever still waits has no partner (the base run's first, in order). */
  end(): void {
    for (const { result } of this.waiting.base.values()) this.out.push({ base: result });
    for (const { result } of this.waiting.candidate.values()) this.out.push({ candidate: result });
    this.waiting.base.clear();
    this.waiting.candidate.clear();
    this.count();
  }

  /** The item's two results: a pair, unless the item changed between the runs. */
  private pairOf(base: ItemResult, candidate: ItemResult): ItemPair {
    return sameContent(base, candidate) ? { base, candidate } : { base, candidate, changed: true };
  }

  /** The pairs made since the last call. */
  drain(): ItemPair[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  private giveUpOldest(): void {
    const base = first(this.waiting.base);
    const candidate = first(this.waiting.candidate);
    const side: PairedSide = !candidate || (base && base.since < candidate.since) ? 'base' : 'candidate';
    const oldest = (side === 'base' ? base : candidate)!;
    this.waiting[side].delete(oldest.result.itemId);
    this.out.push(
      side === 'base'
        ? { base: oldest.result, outOfWindow: true }
        : { candidate: oldest.result, outOfWindow: true },
    );
    this.stats.outOfWindow += 1;
  }

  private count(): void {
    this.stats.waiting = this.waiting.base.size + this.waiting.candidate.size;
    this.stats.mostWaiting = Math.max(this.stats.mostWaiting, this.stats.waiting);
  }
}

/** A map's first entry in insertion order: the one that has waited longest. */
function first<V>(map: Map<string, V>): V | undefined {
  for (const value of map.values()) return value;
  return undefined;
}

/** One run's usable results from an iterator, checked for report order; every result seen by `onRead`. */
function usableOf(side: PairedSide, options: PairOptions) {
  const order = new OrderCheck(side);
  return (result: ItemResult): boolean => {
    order.next(result);
    options.onRead?.(side, result);
    return !isInvalidRow(result);
  };
}

/**
 * Pairs two runs' results, read at once, each in report order (by row, then item id): items
 * at the same row and id pair at once; an item whose partner has not come yet waits for it by
 * id, so rows inserted, deleted or moved between the runs still pair. At most `maxUnpaired`
 * items wait at once (both runs together): beyond that, the one that has waited longest is given
 * up unpaired (`outOfWindow`), and a partner of it read later is unpaired too. An item with no
 * partner at all (a row deleted or inserted, a sample that differs) waits as long too: it is
 * given up when the window is full, or unpaired at the end; runs of the same dataset version
 * (`sameRows`) pair by (row, item id) alone, and nothing waits. Invalid rows are left out. An
 * item whose input or gold differ between the runs (a row edited) comes with both its results
 * marked `changed`: they are not a pair.
 * Memory: the waiting items, nothing else.
 *
 * Pairs come as they are made: in the base run's order while rows keep their order; a row
 * moved ahead pairs when its partner comes. Items without a partner come when they are given
 * up, or at the end (the base run's first). Throws {@link ReportOrderError} at the first result out of report order
 * (a store that gives results in the order they were recorded: sort them first, with
 * `inReportOrder`).
 */
export async function* pairs(
  base: AsyncIterable<ItemResult>,
  candidate: AsyncIterable<ItemResult>,
  options: PairOptions = {},
): AsyncGenerator<ItemPair> {
  const window = windowOf(options);
  const readers = [
    [base[Symbol.asyncIterator](), usableOf('base', options)],
    [candidate[Symbol.asyncIterator](), usableOf('candidate', options)],
  ] as const;
  const next = async ([iterator, usable]: (typeof readers)[number]) => {
    for (;;) {
      const step = await iterator.next();
      if (step.done) return undefined;
      if (usable(step.value)) return step.value;
    }
  };
  const [baseRun, candidateRun] = readers;
  try {
    let b = await next(baseRun);
    let c = await next(candidateRun);
    while (b || c) {
      const took = window.step(b, c);
      yield* window.drain();
      if (took !== 'candidate') b = await next(baseRun);
      if (took !== 'base') c = await next(candidateRun);
    }
    window.end();
    yield* window.drain();
  } finally {
    // Stops a run's results read half-way (an error, or a caller that stopped early).
    await Promise.allSettled(readers.map(([iterator]) => iterator.return?.()));
  }
}

/** {@link pairs} of results in memory (each run's in report order). */
export function* pairsOf(
  base: Iterable<ItemResult>,
  candidate: Iterable<ItemResult>,
  options: PairOptions = {},
): Generator<ItemPair> {
  const window = windowOf(options);
  const readers = [
    [base[Symbol.iterator](), usableOf('base', options)],
    [candidate[Symbol.iterator](), usableOf('candidate', options)],
  ] as const;
  const next = ([iterator, usable]: (typeof readers)[number]) => {
    for (;;) {
      const step = iterator.next();
      if (step.done) return undefined;
      if (usable(step.value)) return step.value;
    }
  };
  const [baseRun, candidateRun] = readers;
  let b = next(baseRun);
  let c = next(candidateRun);
  while (b || c) {
    const took = window.step(b, c);
    yield* window.drain();
    if (took !== 'candidate') b = next(baseRun);
    if (took !== 'base') c = next(candidateRun);
  }
  window.end();
  yield* window.drain();
}

const windowOf = (options: PairOptions) =>
  new PairingWindow(
    options.maxUnpaired ?? DEFAULT_MAX_UNPAIRED,
    options.sameRows ?? false,
    options.stats ?? { waiting: 0, mostWaiting: 0, outOfWindow: 0 },
  );

/** One side of one paired item, as a scorer sees it. */
interface Side {
  result: ItemResult;
  value?: ScoreValue;
  target?: ScoreValue;
  verdict?: boolean;
  shown: string;
  reason?: string;
}

function scoredSide(
  result: ItemResult,
  name: string,
  scorer: Scorer,
  target: (result: ItemResult) => ScoreValue | undefined,
  binary: boolean,
): Side {
  const score = scoreOf(result, name, scorer.kind);
  const gold = target(result);
  if (!isScored(score)) {
    return { result, target: gold, shown: `(${score.unscored.kind})`, reason: score.unscored.message };
  }
  return {
    result,
    value: score.value,
    target: gold,
    verdict: verdictOf(scorer.kind, score.value, gold, scorer.metrics, binary),
    shown: String(score.value),
    reason: score.explanation,
  };
}

function flipKind(b: Pick<Side, 'verdict'>, c: Pick<Side, 'verdict'>): FlippedItem['kind'] {
  if (b.verdict === false && c.verdict === true) return 'fixed';
  if (b.verdict === true && c.verdict === false) return 'broken';
  return 'changed';
}

function flippedSide(s: Side): FlippedSide {
  const out: FlippedSide = { value: s.shown, status: s.result.status };
  if (s.reason !== undefined) out.reason = s.reason;
  if (s.result.failure) out.status = `failed (${s.result.failure.kind})`;
  return out;
}

/**
 * A flipped item as tallied. A number scorer's verdict against numeric gold depends on whether
 * the run's gold is a binary label, known only once every pair is in: `ifBinary` is its kind then.
 */
interface Flip {
  item: FlippedItem;
  ifBinary?: FlippedItem['kind'];
}

/**
 * What `binaryTargets` decides, kept as values come: whether any value was a number, and
 * whether every number was 0 or 1.
 */
type GoldSeen = [numeric: boolean, binary: boolean];

function seeGold(seen: GoldSeen, target: ScoreValue | undefined): void {
  if (typeof target !== 'number') return;
  seen[0] = true;
  if (target !== 0 && target !== 1) seen[1] = false;
}

const binaryGold = (seen: GoldSeen) => seen[0] && seen[1];

/** A {@link ScorerPairs} saved. */
interface ScorerPairsState {
  labels: string[];
  rows: NumberArray;
  columns: NumberArray[];
  targeted: boolean;
  baseGold: GoldSeen;
  flipGold: GoldSeen;
  scored: PairedCountsState;
  flips: Flip[];
  repeats: Partial<Record<PairedSide, RepeatRowsState>>;
  /** Each slice column's values, and each pair's code into them (beside `rows`). */
  slices: { values: string[]; codes: NumberArray }[];
}

/** Label codes into the table above them, dense while the table is this small (a matrix of counts per resample). */
const DENSE_LABELS = 1024;

/**
 * One scorer of both runs, its paired items as typed columns (a few bytes an item, never the
 * results), in the order the pairs came, each with the base run's row so that they are put in
 * the base run's report order before they are resampled:
 * - label: the pairs scored on both sides with gold on both sides, each side's gold and
 *   prediction as codes into one table of labels;
 * - pass: the pairs scored on both sides, each side's pass and whether it is right (1/0);
 * - number: the pairs scored on both sides, each side's value and numeric target (NaN: none).
 * Beside them, every pair counted by which sides scored it (coverage), the flipped items, and
 * each run's repeat rows for their noise floors.
 */
class ScorerPairs {
  private labels: string[] = [];
  private codes = new Map<string, number>();
  private rows = new NumberColumn();
  private columns = [new NumberColumn(), new NumberColumn(), new NumberColumn(), new NumberColumn()];
  /** Pass: every pair has a pass/fail gold on both sides; number: a numeric gold. */
  private targeted = true;
  /** Number: the base gold of the pairs in the columns (is it a binary label?). */
  private baseGold: GoldSeen = [false, true];
  /** Number: the base gold of every pair, read as the candidate's scorer reads it (for flip kinds). */
  private flipGold: GoldSeen = [false, true];
  /** Every pair (but those a sequential gate settled) by which sides scored it. */
  private scored: PairedCountsState = [0, 0, 0, 0];
  /**
   * Every flipped item. Unlike the columns, each holds its item's inputs (every input text, as
   * large as the item is: a long document for a summary judge) and both sides' values and
   * reasons, a few hundred bytes beyond the inputs: a run where most items flip holds nearly
   * every item's inputs. Kept whole all the same: the comparison files list every flipped item.
   */
  private flips: Flip[] = [];
  private readonly repeats: Partial<Record<PairedSide, RepeatRows>> = {};
  private readonly targets: Record<PairedSide, (result: ItemResult) => ScoreValue | undefined>;
  /** Per slice column: its values as met, their codes, and each pair's code (beside `rows`). */
  private slices: { values: string[]; codes: Map<string, number>; column: NumberColumn }[];

  constructor(
    readonly name: string,
    readonly kind: ScoreKind,
    private readonly scorers: Record<PairedSide, Scorer>,
    repeats: Record<PairedSide, number>,
    private readonly sliceColumns: readonly string[],
    state?: ScorerPairsState,
  ) {
    this.slices = sliceColumns.map((_, i) => {
      const saved = state?.slices[i];
      const values = saved ? [...saved.values] : [];
      return {
        values,
        codes: new Map(values.map((value, code) => [value, code])),
        column: saved ? NumberColumn.fromState(saved.codes) : new NumberColumn(),
      };
    });
    this.targets = { base: targetReader(scorers.base), candidate: targetReader(scorers.candidate) };
    for (const s of ['base', 'candidate'] as const) {
      const saved = state?.repeats[s];
      if (saved) this.repeats[s] = RepeatRows.fromState(saved);
      else if (repeats[s] > 1) this.repeats[s] = new RepeatRows(kind, repeats[s], { units: false });
    }
    if (!state) return;
    for (const label of state.labels) this.code(label);
    this.rows = NumberColumn.fromState(state.rows);
    this.columns = state.columns.map((column) => NumberColumn.fromState(column));
    this.targeted = state.targeted;
    this.baseGold = [...state.baseGold];
    this.flipGold = [...state.flipGold];
    this.scored = [...state.scored];
    this.flips = state.flips;
  }

  /** A result of one run as it is read (its repeats, for the noise floor). */
  read(s: PairedSide, result: ItemResult): void {
    const repeats = this.repeats[s];
    if (!repeats) return;
    const score = result.scores[this.name];
    repeats.add(scoreRow(result, this.name, this.scorers[s], this.targets[s]), score?.repeats, score?.tie);
  }

  add(b: ItemResult, c: ItemResult): void {
    const { name, kind, scorers, targets } = this;
    const bs = scoredSide(b, name, scorers.base, targets.base, false);
    const cs = scoredSide(c, name, scorers.candidate, targets.candidate, false);
    if (kind === 'number') seeGold(this.flipGold, targets.candidate(b));
    if (bs.shown !== cs.shown) this.flip(bs, cs);
    // Coverage: which sides scored the item. An item a sequential gate settled was never asked.
    if (b.failure?.kind !== 'gate_settled' && c.failure?.kind !== 'gate_settled')
      this.scored[scoredCell(bs.value !== undefined, cs.value !== undefined)] += 1;
    // Paired means paired: the statistics run over the items both sides scored.
    if (bs.value === undefined || cs.value === undefined) return;
    const [c0, c1, c2, c3] = this.columns as [NumberColumn, NumberColumn, NumberColumn, NumberColumn];
    if (kind === 'label') {
      if (bs.target === undefined || cs.target === undefined) return;
      c0.push(this.code(String(bs.target)));
      c1.push(this.code(String(bs.value)));
      c2.push(this.code(String(cs.target)));
      c3.push(this.code(String(cs.value)));
    } else {
      if (kind === 'pass') {
        c0.push(bs.value === true ? 1 : 0);
        c1.push(bs.verdict === true ? 1 : 0);
        c2.push(cs.value === true ? 1 : 0);
        c3.push(cs.verdict === true ? 1 : 0);
        this.targeted &&= typeof bs.target === 'boolean' && typeof cs.target === 'boolean';
      } else {
        c0.push(bs.value as number);
        c1.push(typeof bs.target === 'number' ? bs.target : Number.NaN);
        c2.push(cs.value as number);
        c3.push(typeof cs.target === 'number' ? cs.target : Number.NaN);
        this.targeted &&= typeof bs.target === 'number' && typeof cs.target === 'number';
        seeGold(this.baseGold, bs.target);
      }
    }
    this.rows.push(b.row);
    this.sliceColumns.forEach((column, i) => {
      const slice = this.slices[i]!;
      slice.column.push(codeOf(slice.values, slice.codes, sliceValue(b, column)));
    });
  }

  private flip(bs: Side, cs: Side): void {
    const b = bs.result;
    const c = cs.result;
    const gold = b.gold ?? c.gold;
    const item: FlippedItem = {
      itemId: b.itemId,
      row: b.row,
      input: Object.keys(b.input).length > 0 ? b.input : c.input,
      ...(gold !== undefined ? { gold } : {}),
      base: flippedSide(bs),
      candidate: flippedSide(cs),
      kind: flipKind(bs, cs),
    };
    const flip: Flip = { item };
    if (this.kind === 'number' && bs.value !== undefined && cs.value !== undefined) {
      const { base, candidate } = this.scorers;
      const ifBinary = flipKind(
        { verdict: verdictOf('number', bs.value, bs.target, base.metrics, true) },
        { verdict: verdictOf('number', cs.value, cs.target, candidate.metrics, true) },
      );
      if (ifBinary !== item.kind) flip.ifBinary = ifBinary;
    }
    this.flips.push(flip);
  }

  private code(label: string): number {
    return codeOf(this.labels, this.codes, label);
  }

  /** Appends `later`: the same scorer's pairs that come after this one's. */
  merge(later: ScorerPairs): void {
    const codes = later.labels.map((label) => this.code(label));
    const same = codes.every((code, i) => code === i);
    this.columns.forEach((column, i) => {
      const next = later.columns[i]!;
      if (this.kind !== 'label' || same) column.merge(next);
      else for (const code of next.values()) column.push(codes[code]!);
    });
    this.rows.merge(later.rows);
    this.slices.forEach((slice, i) => {
      const more = later.slices[i]!;
      const codes = more.values.map((value) => codeOf(slice.values, slice.codes, value));
      for (const code of more.column.values()) slice.column.push(codes[code]!);
    });
    this.targeted &&= later.targeted;
    for (const [into, from] of [
      [this.baseGold, later.baseGold],
      [this.flipGold, later.flipGold],
    ] as const) {
      into[0] ||= from[0];
      into[1] &&= from[1];
    }
    this.scored.forEach((_, i) => {
      this.scored[i]! += later.scored[i]!;
    });
    for (const flip of later.flips) this.flips.push(flip);
    for (const s of ['base', 'candidate'] as const) {
      const repeats = this.repeats[s];
      if (repeats) repeats.merge(later.repeats[s]!);
    }
  }

  toState(): ScorerPairsState {
    const repeats: ScorerPairsState['repeats'] = {};
    for (const s of ['base', 'candidate'] as const) {
      const rows = this.repeats[s];
      if (rows) repeats[s] = rows.toState();
    }
    return {
      labels: [...this.labels],
      rows: this.rows.toState(),
      columns: this.columns.map((column) => column.toState()),
      targeted: this.targeted,
      baseGold: [...this.baseGold],
      flipGold: [...this.flipGold],
      scored: [...this.scored],
      flips: this.flips,
      repeats,
      slices: this.slices.map((slice) => ({ values: [...slice.values], codes: slice.column.toState() })),
    };
  }

  /** Each side's coverage of the paired items and its paired difference; undefined with no pair. */
  coverage(): CoverageDelta | undefined {
    const counts = countsOf(this.scored);
    const delta = proportionDelta(counts);
    if (!delta) return undefined;
    return {
      ...delta,
      scored: { base: counts.both + counts.baseOnly, candidate: counts.both + counts.candidateOnly },
    };
  }

  /** The scorer compared: its paired statistics, flipped items and noise. */
  compared(every: () => Uint32Array, options: CompareOptions): ScorerComparison {
    const [columns, sliceCodes] = this.ordered();
    const compared = this.statistics(columns, every, options);
    const slices = this.slicesCompared(columns, sliceCodes, every, options);
    const binary = this.kind === 'number' && binaryGold(this.flipGold);
    const flipped = this.flips.map((f) => (binary && f.ifBinary ? { ...f.item, kind: f.ifBinary } : f.item));
    if (!isSorted(flipped)) flipped.sort(compareReportOrder);
    const floors = (s: PairedSide) =>
      this.repeats[s]?.noiseFloors({ ...this.scorers[s].metrics, bootstrap: false }).noiseFloor;
    const noise = deltaNoise(compared.deltas, floors('base'), floors('candidate'));
    const coverage = this.coverage();
    return {
      kind: this.kind,
      ...(coverage ? { coverage } : {}),
      ...compared,
      flipped,
      ...(noise ? { noise } : {}),
      ...(slices ? { slices } : {}),
    };
  }

  /**
   * Per slice column, per value (the first {@link MAX_SLICE_VALUES} in sort order, the rest
   * together as `(other)`): the paired statistics over that value's pairs, in the same order.
   */
  private slicesCompared(
    columns: NumberArray[],
    sliceCodes: NumberArray[],
    every: () => Uint32Array,
    options: CompareOptions,
  ): Record<string, Record<string, SliceComparison>> | undefined {
    if (this.sliceColumns.length === 0) return undefined;
    const out: Record<string, Record<string, SliceComparison>> = {};
    this.sliceColumns.forEach((column, i) => {
      const { values } = this.slices[i]!;
      const codes = sliceCodes[i]!;
      const sorted = values.map((_, code) => code).sort((a, b) => (values[a]! < values[b]! ? -1 : 1));
      const group = new Int32Array(values.length).fill(-1);
      sorted.slice(0, MAX_SLICE_VALUES).forEach((code, g) => {
        group[code] = g;
      });
      const kept = Math.min(values.length, MAX_SLICE_VALUES);
      const members: number[][] = Array.from({ length: kept + 1 }, () => []);
      for (let k = 0; k < codes.length; k++) {
        const g = group[codes[k]!]!;
        members[g < 0 ? kept : g]!.push(k);
      }
      const byValue: Record<string, SliceComparison> = {};
      members.forEach((indices, g) => {
        if (indices.length === 0) return;
        const picked = columns.map((c) => {
          const out = new (c.constructor as new (n: number) => NumberArray)(indices.length);
          for (let k = 0; k < indices.length; k++) out[k] = c[indices[k]!]!;
          return out;
        });
        const { n, deltas } = this.statistics(picked, every, options);
        byValue[g === kept ? OTHER_VALUE : shownValue(values[sorted[g]!]!)] = { n, deltas };
      });
      out[column] = byValue;
    });
    return out;
  }

  /**
   * The columns in the base run's report order. Pairs come in it unless a row moved between the
   * runs (a shuffled dataset): then they are sorted by the base run's row (stably: pairs that
   * share a row keep the order they came in).
   */
  private ordered(): [columns: NumberArray[], sliceCodes: NumberArray[]] {
    const [columns, slices] = [this.columns.length, this.slices.length];
    const all = this.orderedColumns([...this.columns, ...this.slices.map((slice) => slice.column)]);
    return [all.slice(0, columns), all.slice(columns, columns + slices)];
  }

  private orderedColumns(of: NumberColumn[]): NumberArray[] {
    const rows = this.rows.values();
    const values = of.map((column) => column.values());
    let sorted = true;
    for (let i = 1; i < rows.length && sorted; i++) sorted = rows[i - 1]! <= rows[i]!;
    if (sorted) return values;
    const order = new Uint32Array(rows.length);
    for (let i = 0; i < order.length; i++) order[i] = i;
    order.sort((a, b) => rows[a]! - rows[b]! || a - b);
    return values.map((column) => {
      const out = new (column.constructor as new (n: number) => NumberArray)(column.length);
      for (let i = 0; i < order.length; i++) out[i] = column[order[i]!]!;
      return out;
    });
  }

  /** The paired statistics of one scorer, by kind (what one pass over the pairs in memory gives). */
  private statistics(
    columns: NumberArray[],
    every: () => Uint32Array,
    options: CompareOptions,
  ): Pick<ScorerComparison, 'n' | 'deltas' | 'mcnemar'> {
    const compared = this.byKind(columns, every, options);
    for (const [name, delta] of Object.entries(compared.deltas)) {
      if (delta.interval === 'newcombe') continue;
      const reason = withheldReason(name, compared.n);
      if (reason) delta.reason = reason;
    }
    return compared;
  }

  /** The paired statistics of one scorer, by kind, before small-sample marks. */
  private byKind(
    columns: NumberArray[],
    every: () => Uint32Array,
    options: CompareOptions,
  ): Pick<ScorerComparison, 'n' | 'deltas' | 'mcnemar'> {
    const [c0, c1, c2, c3] = columns as [NumberArray, NumberArray, NumberArray, NumberArray];
    const n = c0.length;
    if (n === 0) return { n: 0, deltas: {} };
    const bootstrap = (statistic: (s: PairedSide, indices: Indices) => Record<string, number | null>) =>
      pairedBootstraps(n, (s, indices) => statistic(s, indices ?? every().subarray(0, n)), options.bootstrap);

    if (this.kind === 'label') {
      const { positive: declared, ordinal, labelOrder } = this.scorers.candidate.metrics ?? {};
      const positive = declared ?? false;
      const counts = new LabelCells(this.labels);
      const deltas = bootstrap((s, indices) => {
        const [gold, pred] = s === 'base' ? [c0, c1] : [c2, c3];
        const m = classificationMetrics(counts.of(gold, pred, indices), {
          bootstrap: false,
          positive,
          ...(ordinal ? { ordinal, labelOrder } : {}),
        });
        const stats: Record<string, number | null> = { accuracy: m.accuracy, macroF1: m.macroF1 };
        if (m.binary) {
          stats.binaryAccuracy = m.binary.accuracy;
          stats.binaryF1 = m.binary.f1;
          stats.positiveF1 = m.binary.positive.f1;
        }
        stats.kappa = m.kappa;
        if (m.weightedKappa !== undefined) stats.weightedKappa = m.weightedKappa;
        return stats;
      });
      const right = pairedCountsOf(
        n,
        (i) => c0[i] === c1[i],
        (i) => c2[i] === c3[i],
      );
      const isPositive = new Set(positive || []);
      const codes = this.labels.map((label) => isPositive.has(label));
      closedForms(deltas, {
        accuracy: () => right,
        binaryAccuracy: () =>
          pairedCountsOf(
            n,
            (i) => codes[c0[i]!] === codes[c1[i]!],
            (i) => codes[c2[i]!] === codes[c3[i]!],
          ),
      });
      return { n, deltas, mcnemar: mcnemar(right.baseOnly, right.candidateOnly) };
    }

    if (this.kind === 'pass') {
      const targeted = this.targeted;
      const againstGold = targeted ? withDeltas(passStatistics(this.scorers.candidate.metrics ?? {})) : {};
      const deltas = bootstrap((s, indices) => {
        const [passes, right] = s === 'base' ? [c0, c1] : [c2, c3];
        const stats: Record<string, number | null> = { passRate: meanAt(passes, indices) };
        if (!targeted) return stats;
        const v = picked(passes, indices);
        const r = picked(right, indices);
        // The gold of a pass: the pass itself where it is right, the other where it is wrong.
        const columns: GoldColumns = { v, t: v.map((x, i) => (r[i] === 1 ? x : 1 - x)), right: r };
        for (const [name, statistic] of Object.entries(againstGold)) stats[name] = statistic(columns);
        return stats;
      });
      // Right: the verdict against a pass/fail gold, else a pass.
      const [b, c] = targeted ? [c1, c3] : [c0, c2];
      const right = pairedCountsOf(
        n,
        (i) => b[i] === 1,
        (i) => c[i] === 1,
      );
      closedForms(deltas, {
        passRate: () =>
          pairedCountsOf(
            n,
            (i) => c0[i] === 1,
            (i) => c2[i] === 1,
          ),
        accuracy: () => right,
      });
      return { n, deltas, mcnemar: mcnemar(right.baseOnly, right.candidateOnly) };
    }

    const numericTargets = this.targeted;
    const metrics = this.scorers.candidate.metrics ?? {};
    const binary = numericTargets && binaryGold(this.baseGold);
    // The report's own figures against gold (numberStatistics), those the metric table gives a delta.
    const againstGold = numericTargets ? withDeltas(numberStatistics(metrics, binary)) : {};
    const { threshold } = metrics;
    const deltas = bootstrap((s, indices) => {
      const [values, targets] = s === 'base' ? [c0, c1] : [c2, c3];
      const stats: Record<string, number | null> = { mean: meanAt(values, indices) };
      if (!numericTargets) return stats;
      const v = picked(values, indices);
      const columns: GoldColumns = {
        v,
        t: picked(targets, indices),
        ...(threshold === undefined ? {} : { above: v.map((x) => (x >= threshold ? 1 : 0)) }),
      };
      for (const [name, statistic] of Object.entries(againstGold)) stats[name] = statistic(columns);
      return stats;
    });
    return { n, deltas };
  }
}

/** The statistics the metric table gives a comparison's delta of (`delta` not `none`). */
function withDeltas<S>(statistics: Record<string, S>): Record<string, S> {
  return Object.fromEntries(Object.entries(statistics).filter(([name]) => deltaMethod(name) !== 'none'));
}

/** A column's values at `indices`, as a typed array. */
function picked(values: NumberArray, indices: Indices): Float64Array {
  const out = new Float64Array(indices.length);
  let k = 0;
  for (const i of indices) out[k++] = values[i]!;
  return out;
}

/** A {@link PairedCounts} saved: [both, base only, candidate only, neither]. */
type PairedCountsState = [both: number, baseOnly: number, candidateOnly: number, neither: number];

/** The cell of a {@link PairedCountsState} an item whose sides are `base` and `candidate` counts in. */
const scoredCell = (base: boolean, candidate: boolean): 0 | 1 | 2 | 3 =>
  base ? (candidate ? 0 : 1) : candidate ? 2 : 3;

const countsOf = ([both, baseOnly, candidateOnly, neither]: PairedCountsState): PairedCounts => ({
  both,
  baseOnly,
  candidateOnly,
  neither,
});

/** The paired 2×2 table of a 0/1 outcome over `n` pairs. */
function pairedCountsOf(
  n: number,
  base: (i: number) => boolean,
  candidate: (i: number) => boolean,
): PairedCounts {
  const cells: PairedCountsState = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) cells[scoredCell(base(i), candidate(i))] += 1;
  return countsOf(cells);
}

/**
 * The deltas the metric table gives Newcombe's interval (differences of proportions): its
 * interval and McNemar's p in place of the bootstrap's, whose percentile interval has poor
 * coverage for a proportion at small n. `tables` gives each such metric's paired 2×2 table.
 */
function closedForms(
  deltas: Record<string, PairedDelta>,
  tables: Readonly<Record<string, () => PairedCounts>>,
): void {
  for (const [name, delta] of Object.entries(deltas)) {
    if (deltaMethod(name) !== 'newcombe') continue;
    const table = tables[name];
    if (!table) throw new TypeError(`comparison: ${name} is a proportion with no paired table here`);
    closedForm(delta, table());
  }
}

function closedForm(delta: PairedDelta, counts: PairedCounts): void {
  const closed = proportionDelta(counts);
  if (!closed) return;
  delta.ci = closed.ci;
  delta.pValue = closed.pValue;
  delta.interval = 'newcombe';
}

/**
 * The paired difference of two sides' shares of `counts`' items with a 1 (coverage, a rate):
 * Newcombe's interval and McNemar's p; undefined with no item.
 */
function proportionDelta(counts: PairedCounts): PairedDelta | undefined {
  const ci = newcombePaired(counts);
  if (!ci) return undefined;
  const n = counts.both + counts.baseOnly + counts.candidateOnly + counts.neither;
  const base = (counts.both + counts.baseOnly) / n;
  const candidate = (counts.both + counts.candidateOnly) / n;
  return {
    n,
    base,
    candidate,
    delta: candidate - base,
    ci,
    pValue: mcnemar(counts.baseOnly, counts.candidateOnly).pValue,
    interval: 'newcombe',
  };
}

function pairedBootstraps(
  n: number,
  statistic: (s: PairedSide, indices: Indices | undefined) => Record<string, number | null>,
  options?: BootstrapOptions,
): Record<string, PairedDelta> {
  return pairedBootstrapsAt(n, statistic, options) as Record<string, PairedDelta>;
}

/** Whether flipped items are in (row, item id) order already. */
function isSorted(items: readonly FlippedItem[]): boolean {
  for (let i = 1; i < items.length; i++) if (compareReportOrder(items[i - 1]!, items[i]!) > 0) return false;
  return true;
}

/**
 * A resample's label pairs counted (gold → prediction → count), from the columns of codes:
 * what `classificationMetrics` gives the same figures from as from the rows themselves.
 */
class LabelCells {
  private readonly width: number;
  private readonly dense: Int32Array | undefined;
  private readonly touched: number[] = [];
  private readonly sparse = new Map<number, number>();

  constructor(private readonly labels: readonly string[]) {
    this.width = labels.length;
    if (this.width <= DENSE_LABELS) this.dense = new Int32Array(this.width * this.width);
  }

  of(gold: NumberArray, pred: NumberArray, indices: Indices): LabelPairCounts {
    const { width, dense, touched, sparse, labels } = this;
    for (const i of indices) {
      const cell = gold[i]! * width + pred[i]!;
      if (dense) {
        if (dense[cell] === 0) touched.push(cell);
        dense[cell]! += 1;
      } else sparse.set(cell, (sparse.get(cell) ?? 0) + 1);
    }
    const counts = new LabelPairCounts();
    const add = (cell: number, count: number) =>
      counts.add(labels[Math.floor(cell / width)]!, labels[cell % width]!, count);
    if (dense) {
      for (const cell of touched) {
        add(cell, dense[cell]!);
        dense[cell] = 0;
      }
      touched.length = 0;
    } else {
      for (const [cell, count] of sparse) add(cell, count);
      sparse.clear();
    }
    return counts;
  }
}

/** Each delta against the larger of the two runs' noise floors; undefined when neither run has one. */
function deltaNoise(
  deltas: Record<string, PairedDelta>,
  base: Record<string, number | null> | undefined,
  candidate: Record<string, number | null> | undefined,
): Record<string, DeltaNoise> | undefined {
  if (!base && !candidate) return undefined;
  const out: Record<string, DeltaNoise> = {};
  for (const [metric, d] of Object.entries(deltas)) {
    const b = base?.[metric] ?? null;
    const c = candidate?.[metric] ?? null;
    if (b === null && c === null) continue;
    const floor = Math.max(b ?? 0, c ?? 0);
    out[metric] = { floor, base: b, candidate: c, withinNoise: Math.abs(d.delta) <= floor };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Version of {@link ComparisonTally}'s bytes: a tally saved by another version is not read. */
const COMPARISON_TALLY_VERSION = 4;

type RowRange = [first: number, last: number];

const copyRange = (rows: RowRange | null): RowRange | null => (rows ? [rows[0], rows[1]] : null);

/** A {@link ComparisonTally} saved (see `toBytes`). */
interface ComparisonTallyState {
  version: typeof COMPARISON_TALLY_VERSION;
  base: string;
  candidate: string;
  items: { paired: number; onlyBase: number; onlyCandidate: number; changed: number; outOfWindow: number };
  moved: number;
  simulated: Record<PairedSide, boolean>;
  cost: Record<PairedSide, CompensatedSumState>;
  rows: Record<PairedSide, RowRange | null>;
  scorers: Record<string, ScorerPairsState>;
}

/**
 * Everything a comparison of two runs is computed from, fed the pairs of the two runs (see
 * {@link pairs}) and each run's results as they are read: the item counts, each scorer's paired
 * columns (typed: label codes, 0/1, values; with the base run's row), McNemar's counts, the
 * flipped items, each run's repeat rows (noise floors), cost and the rows each run's results
 * spanned. A comparison too large for one reader is tallied in parts (consecutive stretches of
 * the base run's report order, e.g. a part of each run whose rows are the same): each part saved
 * as bytes and loaded back, the parts merged in order give what one tally over both runs gives —
 * every count, interval, p-value, noise floor and flipped item; only the cost, a running
 * floating-point sum per side, may differ in its last bits (each part's sum is rounded apart).
 */
export class ComparisonTally {
  private items = { paired: 0, onlyBase: 0, onlyCandidate: 0, changed: 0, outOfWindow: 0 };
  /** Whether a result of each run read so far was answered by the simulator. */
  private simulated: Record<PairedSide, boolean> = { base: false, candidate: false };
  /** Pairs whose two results are at different rows. */
  private movedPairs = 0;
  private cost: Record<PairedSide, CompensatedSum> = {
    base: new CompensatedSum(),
    candidate: new CompensatedSum(),
  };
  private rows: Record<PairedSide, RowRange | null> = { base: null, candidate: null };
  private readonly scorers: ScorerPairs[] = [];

  /** A tally of no pair of the two runs (`base` the earlier), or loaded from `state`. */
  constructor(
    private readonly base: RunRecord,
    private readonly candidate: RunRecord,
    private readonly options: CompareOptions = {},
    state?: ComparisonTallyState,
  ) {
    const baseScorers = taskFor(base.suite).scorers(base.suite);
    const repeats = {
      base: base.suite.run?.repeats ?? 1,
      candidate: candidate.suite.run?.repeats ?? 1,
    };
    const primary = taskFor(candidate.suite).primaryScorer(candidate.suite);
    const baseSlices = new Set(base.suite.slices ?? []);
    const slices = (candidate.suite.slices ?? []).filter((column) => baseSlices.has(column));
    for (const [name, scorer] of Object.entries(taskFor(candidate.suite).scorers(candidate.suite))) {
      const baseScorer = baseScorers[name];
      if (!baseScorer || baseScorer.kind !== scorer.kind) continue;
      const scorers = { base: baseScorer, candidate: scorer };
      this.scorers.push(
        new ScorerPairs(
          name,
          scorer.kind,
          scorers,
          repeats,
          name === primary ? slices : [],
          state?.scorers[name],
        ),
      );
    }
    if (!state) return;
    this.items = { ...state.items };
    this.movedPairs = state.moved;
    this.simulated = { ...state.simulated };
    this.cost = {
      base: CompensatedSum.fromState(state.cost.base),
      candidate: CompensatedSum.fromState(state.cost.candidate),
    };
    this.rows = { base: copyRange(state.rows.base), candidate: copyRange(state.rows.candidate) };
  }

  /**
   * A result of one run as it is read (every result, invalid rows included, each run's in its
   * report order): its cost, its repeats, its row.
   */
  read(side: PairedSide, result: ItemResult): void {
    this.cost[side].add(resultCost(result));
    if (result.simulated) this.simulated[side] = true;
    const rows = this.rows[side];
    if (!rows) this.rows[side] = [result.row, result.row];
    else {
      rows[0] = Math.min(rows[0], result.row);
      rows[1] = Math.max(rows[1], result.row);
    }
    for (const scorer of this.scorers) scorer.read(side, result);
  }

  /**
   * The next pair: an item of both runs, or of one only (`outOfWindow`: given up by the
   * pairing's window). Invalid rows are not paired: one given here counts as absent. Two results
   * whose input or gold differ (a row edited between the runs) are not paired: they count as
   * one changed item.
   */
  add(base: ItemResult | undefined, candidate: ItemResult | undefined, outOfWindow = false): void {
    const b = base && !isInvalidRow(base) ? base : undefined;
    const c = candidate && !isInvalidRow(candidate) ? candidate : undefined;
    if (b && c && !sameContent(b, c)) {
      this.items.changed += 1;
      return;
    }
    if (b && c) {
      this.items.paired += 1;
      if (b.row !== c.row) this.movedPairs += 1;
      for (const scorer of this.scorers) scorer.add(b, c);
      return;
    }
    if (b) this.items.onlyBase += 1;
    else if (c) this.items.onlyCandidate += 1;
    else return;
    if (outOfWindow) this.items.outOfWindow += 1;
  }

  /** The first and last row of the results of `side` read so far; undefined before the first. */
  rowRange(side: PairedSide): RowRange | undefined {
    const rows = this.rows[side];
    return rows ? [rows[0], rows[1]] : undefined;
  }

  /** Pairs whose two results were at different rows (a dataset edited between the runs). */
  get moved(): number {
    return this.movedPairs;
  }

  /**
   * Items not paired (invalid rows aside): of one run only, whether their partner was missing or
   * out of the window, or changed between the runs.
   */
  get unpaired(): number {
    return this.items.onlyBase + this.items.onlyCandidate + this.items.changed;
  }

  /**
   * Appends `later`: a tally of the same two runs' pairs that come right after this tally's (in
   * the base run's report order). `later` is not to be used afterwards.
   */
  merge(later: ComparisonTally): void {
    if (later.base.runId !== this.base.runId || later.candidate.runId !== this.candidate.runId)
      throw new RangeError(
        `ComparisonTally: cannot merge ${later.base.runId} → ${later.candidate.runId} into ${this.base.runId} → ${this.candidate.runId}`,
      );
    for (const key of Object.keys(this.items) as (keyof typeof this.items)[])
      this.items[key] += later.items[key];
    this.movedPairs += later.movedPairs;
    for (const side of ['base', 'candidate'] as const) {
      this.simulated[side] ||= later.simulated[side];
      this.cost[side].merge(later.cost[side]);
      const [rows, more] = [this.rows[side], later.rows[side]];
      if (!rows) this.rows[side] = copyRange(more);
      else if (more) this.rows[side] = [Math.min(rows[0], more[0]), Math.max(rows[1], more[1])];
    }
    this.scorers.forEach((scorer, i) => {
      scorer.merge(later.scorers[i]!);
    });
  }

  /** The whole state as bytes (V8's serialisation: typed columns stay as compact as in memory). */
  toBytes(): Uint8Array {
    const state: ComparisonTallyState = {
      version: COMPARISON_TALLY_VERSION,
      base: this.base.runId,
      candidate: this.candidate.runId,
      items: { ...this.items },
      moved: this.movedPairs,
      simulated: { ...this.simulated },
      cost: { base: this.cost.base.toState(), candidate: this.cost.candidate.toState() },
      rows: { base: this.rows.base, candidate: this.rows.candidate },
      scorers: Object.fromEntries(this.scorers.map((scorer) => [scorer.name, scorer.toState()])),
    };
    return serialize(state);
  }

  /** A tally saved by `toBytes`, for the same two runs. */
  static fromBytes(
    base: RunRecord,
    candidate: RunRecord,
    bytes: Uint8Array,
    options: CompareOptions = {},
  ): ComparisonTally {
    const state = deserialize(bytes) as ComparisonTallyState;
    if (state?.version !== COMPARISON_TALLY_VERSION)
      throw new StoredDataError(
        `a comparison tally of version ${JSON.stringify(state?.version)}; this Assay reads version ${COMPARISON_TALLY_VERSION}`,
      );
    if (state.base !== base.runId || state.candidate !== candidate.runId)
      throw new StoredDataError(
        `a comparison tally of ${state.base} → ${state.candidate}, read for ${base.runId} → ${candidate.runId}`,
      );
    return new ComparisonTally(base, candidate, options, state);
  }

  /** The comparison (what {@link compareRuns} returns for the same two runs). */
  comparison(): Comparison {
    const baseHeader = header(this.base, this.simulated.base);
    const candidateHeader = header(this.candidate, this.simulated.candidate);
    const simulated = baseHeader.simulated || candidateHeader.simulated;
    // Every row's index, 0 to n − 1: the point estimates' "resample". One array for every scorer.
    let all: Uint32Array | undefined;
    const every = () => {
      if (!all) {
        all = new Uint32Array(this.items.paired);
        for (let i = 0; i < all.length; i++) all[i] = i;
      }
      return all;
    };
    const scores: Record<string, ScorerComparison> = {};
    for (const scorer of this.scorers) scores[scorer.name] = scorer.compared(every, this.options);
    const { paired, onlyBase, onlyCandidate, changed, outOfWindow } = this.items;
    const baseCost = this.cost.base.value();
    const candidateCost = this.cost.candidate.value();
    return {
      simulated,
      ...(simulated ? { notice: simulatedNotice(baseHeader.simulated, candidateHeader.simulated) } : {}),
      base: baseHeader,
      candidate: candidateHeader,
      promptChanges: promptChanges(baseHeader.prompts, candidateHeader.prompts),
      items: {
        paired,
        onlyBase,
        onlyCandidate,
        ...(changed > 0 ? { changed } : {}),
        ...(outOfWindow > 0 ? { outOfWindow } : {}),
      },
      primaryScorer: taskFor(this.candidate.suite).primaryScorer(this.candidate.suite),
      scores,
      cost: { base: baseCost, candidate: candidateCost, delta: candidateCost - baseCost },
    };
  }
}

/**
 * Two runs compared from their results in memory, in any order: each run's put in report order,
 * paired (every item waits for its partner as long as it takes: the results are all here) and
 * tallied in one pass.
 */
export function compareRuns(base: RunSide, candidate: RunSide, options: CompareOptions = {}): Comparison {
  const tally = new ComparisonTally(base.run, candidate.run, options);
  for (const pair of pairsOf(
    [...base.results].sort(compareReportOrder),
    [...candidate.results].sort(compareReportOrder),
    {
      maxUnpaired: Number.POSITIVE_INFINITY,
      onRead: (side, result) => tally.read(side, result),
    },
  ))
    tally.add(pair.base, pair.candidate, pair.outOfWindow);
  return tally.comparison();
}

export interface ComparisonSummary {
  baseRunId: string;
  paired: number;
  /**
   * Present when the runs' items differ: items only in the candidate (added), only in the base
   * (removed), and of the same id with another input or gold (changed, not paired).
   */
  dataset?: DatasetChanges;
  promptChanges: PromptChange[];
  scores: Record<
    string,
    {
      /** Each side's coverage of the paired items and its paired difference (see ScorerComparison). */
      coverage?: CoverageDelta;
      deltas: Record<
        string,
        {
          delta: number;
          ci: [number, number];
          pValue: number;
          interval?: PairedDelta['interval'];
          reason?: string;
          noiseFloor?: number;
          withinNoise?: boolean;
        }
      >;
      mcnemarPValue?: number;
      flipped: Record<FlippedItem['kind'], number>;
    }
  >;
}

/** How the items of two runs differ: added (only in the candidate), removed (only in the base), changed. */
export interface DatasetChanges {
  added: number;
  removed: number;
  changed: number;
}

/** How the two runs' items differ; undefined when every item is in both, unchanged. */
export function datasetChanges(c: Pick<Comparison, 'items'>): DatasetChanges | undefined {
  const { onlyBase, onlyCandidate, changed = 0 } = c.items;
  if (onlyBase + onlyCandidate + changed === 0) return undefined;
  return { added: onlyCandidate, removed: onlyBase, changed };
}

/** A compact summary for the candidate's report.json. */
export function comparisonSummary(c: Comparison): ComparisonSummary {
  const scores: ComparisonSummary['scores'] = {};
  for (const [name, s] of Object.entries(c.scores)) {
    const deltas: ComparisonSummary['scores'][string]['deltas'] = {};
    for (const [metric, d] of Object.entries(s.deltas)) {
      const noise = s.noise?.[metric];
      deltas[metric] = {
        delta: d.delta,
        ci: d.ci,
        pValue: d.pValue,
        ...(d.interval ? { interval: d.interval } : {}),
        ...(d.reason ? { reason: d.reason } : {}),
        ...(noise ? { noiseFloor: noise.floor, withinNoise: noise.withinNoise } : {}),
      };
    }
    const flipped = { fixed: 0, broken: 0, changed: 0 };
    for (const f of s.flipped) flipped[f.kind] += 1;
    scores[name] = {
      ...(s.coverage ? { coverage: s.coverage } : {}),
      deltas,
      ...(s.mcnemar ? { mcnemarPValue: s.mcnemar.pValue } : {}),
      flipped,
    };
  }
  const dataset = datasetChanges(c);
  return {
    baseRunId: c.base.runId,
    paired: c.items.paired,
    ...(dataset ? { dataset } : {}),
    promptChanges: c.promptChanges,
    scores,
  };
}
