import type { PairedSide } from '../lib/metrics/index.js';
import { StoredDataError } from '../model/codec.js';
import { digestOf, type ItemResult, type RunRecord, resultCost } from '../model/model.js';
import { inReportOrder, type OrderedResults, type ResultSource } from '../model/report-order.js';
import type { RunHistory } from '../ports/ports.js';
import {
  type CompareOptions,
  type Comparison,
  ComparisonTally,
  DEFAULT_MAX_UNPAIRED,
  type PairingStats,
  pairs,
  ReportOrderError,
} from './compare-runs.js';

/**
 * A run compared with the suite's previous run as the aggregation in parts needs it: the
 * previous run found without reading its results, a part of the comparison tallied from a part
 * of each run, the parts merged, or both whole runs streamed side by side. Never more than the
 * pairing window's results in memory (see `pairs`), however large the runs.
 */

/** Reads a run's results: a part of them (as the run store keeps them), or all. */
export interface ResultsReader {
  results(runId: string, part?: number): AsyncIterable<ItemResult>;
}

export interface CompareReadOptions extends CompareOptions {
  /** Items that may wait for their partner at once (default {@link DEFAULT_MAX_UNPAIRED}). */
  maxUnpaired?: number;
  /**
   * This run's results when the caller has them at hand (e.g. already in report order), instead
   * of reading them again from the history.
   */
  results?: ResultSource;
  /** Filled in as the pairing goes (the last pass's, when the results had to be sorted first). */
  stats?: PairingStats;
}

/**
 * What a comparison reads of a result, and no more: its id, row, part, status and failure,
 * gold, input and its digest (worked out once here for a result stored without one), and scores, with its stages folded into one that costs what they cost together
 * (`resultCost` gives the same total, to the last bit). The output, details, raw text and
 * per-stage spend are left out: they are most of a result's size, and the pairing window holds
 * the results that wait for their partner.
 */
export function comparedPart(result: ItemResult): ItemResult {
  const part: ItemResult = {
    schemaVersion: result.schemaVersion,
    runId: result.runId,
    itemId: result.itemId,
    row: result.row,
    status: result.status,
    input: result.input,
    inputDigest: digestOf(result),
    scores: result.scores,
    stages: { all: { calls: 0, cachedCalls: 0, costUsd: resultCost(result), latencyMs: 0, usage: NO_USAGE } },
    simulated: result.simulated,
    finishedAt: '',
  };
  if (result.part !== undefined) part.part = result.part;
  if (result.gold !== undefined) part.gold = result.gold;
  if (result.failure !== undefined) part.failure = result.failure;
  return part;
}

const NO_USAGE = Object.freeze({ input: 0, output: 0, cached: 0 });

/** Earlier runs looked at, newest first, for one to compare with. */
export const COMPARABLE_LOOKBACK = 20;

/** The run a run is compared with; or that run, and why its results cannot be read. */
export type ComparableRun = { run: RunRecord } | { run: RunRecord; error: string };

/**
 * Whether two runs are of the same kind: both answered by the simulator, or neither. A run is
 * never compared automatically with one of the other kind: the differences would be the
 * simulator's, not the prompt's or the model's.
 */
export function sameKind(previous: RunRecord, run: RunRecord): boolean {
  return previous.simulated === run.simulated;
}

/**
 * The newest earlier finished run of the suite on the same dataset and of the same kind (real
 * or simulated, {@link sameKind}) that scored something (of the {@link COMPARABLE_LOOKBACK}
 * before it); or the first such run whose stored results cannot
 * be read, and why. Holds no results: whether a run scored something is read from its results
 * up to the first scored one (the first result, as a rule; every result only of a run that
 * scored nothing, streamed). A result that cannot be read further on is met by the comparison
 * itself, which throws the same `StoredDataError`.
 */
export async function comparableRun(history: RunHistory, run: RunRecord): Promise<ComparableRun | undefined> {
  const seen = new Set([run.runId]);
  let cursor = run.runId;
  for (let i = 0; i < COMPARABLE_LOOKBACK; i += 1) {
    const previous = await history.previousRun(run.suiteName, cursor);
    if (!previous || seen.has(previous.runId)) return undefined;
    seen.add(previous.runId);
    cursor = previous.runId;
    if (previous.datasetKey !== run.datasetKey || !sameKind(previous, run)) continue;
    try {
      if (await scoredAny(history.results(previous.runId))) return { run: previous };
    } catch (error) {
      // The report is still written; it says why it could not compare.
      if (!(error instanceof StoredDataError)) throw error;
      return { run: previous, error: error.message };
    }
  }
  return undefined;
}

async function scoredAny(results: AsyncIterable<ItemResult>): Promise<boolean> {
  for await (const result of results) if (result.status === 'scored') return true;
  return false;
}

/**
 * Whether the comparison of `run` with `previous` may be tallied a part at a time: both read
 * the same dataset, so that the parts of the two runs may hold the same items. The tallies of
 * the parts say whether they do (see {@link comparisonOfParts}).
 */
export function comparableByParts(previous: RunRecord, run: RunRecord): boolean {
  return previous.datasetKey === run.datasetKey;
}

/** Both runs read the same version of the dataset: an item has the same row in both. */
function sameDatasetVersion(previous: RunRecord, run: RunRecord): boolean {
  return (
    previous.datasetKey === run.datasetKey &&
    previous.datasetVersion !== undefined &&
    previous.datasetVersion === run.datasetVersion
  );
}

/**
 * The comparison's tally of part `part`: the previous run's part `part` paired with this run's
 * (both read by part, in report order; sorted first if they are not). Its row ranges say which
 * rows each run's part held, for {@link comparisonOfParts}. Holds the pairing window's results
 * and the tally's columns, not the parts.
 */
export async function comparisonTallyOfPart(
  history: ResultsReader,
  previous: RunRecord,
  run: RunRecord,
  part: number,
  options: CompareReadOptions = {},
): Promise<ComparisonTally> {
  return tallied(
    previous,
    run,
    {
      base: partOf(history, previous.runId, part),
      candidate: options.results ?? partOf(history, run.runId, part),
    },
    options,
  );
}

/**
 * The comparison from the tallies of every part of this run, in order (see
 * {@link comparisonTallyOfPart}): merged, when the two runs have the same parts: the same
 * dataset ({@link comparableByParts}), each part's results spanning the same rows in both runs
 * (the first and last row each part's tally read), every item of each part paired within the
 * part and at the same row in both (none changed: an edited row's input or gold differ, and
 * it is not paired), and no part beyond them in either run (its first result is
 * read) — then every item's partner is the one a pass over both whole runs finds, and the pairs
 * come in the same order. Otherwise (an edited dataset: rows added, removed or moved) the
 * comparison is one streaming pass over both whole runs ({@link comparisonOfRuns}). The tallies
 * are not to be used afterwards.
 */
export async function comparisonOfParts(
  history: ResultsReader,
  previous: RunRecord,
  run: RunRecord,
  parts: readonly ComparisonTally[],
  options: CompareReadOptions = {},
): Promise<Comparison> {
  if (await sameParts(history, previous, run, parts)) {
    const [whole, ...rest] = parts;
    for (const part of rest) whole!.merge(part);
    return whole!.comparison();
  }
  return comparisonOfRuns(history, previous, run, options);
}

async function sameParts(
  history: ResultsReader,
  previous: RunRecord,
  run: RunRecord,
  parts: readonly ComparisonTally[],
): Promise<boolean> {
  if (parts.length === 0 || !comparableByParts(previous, run)) return false;
  for (const tally of parts) {
    const base = tally.rowRange('base');
    const candidate = tally.rowRange('candidate');
    if (tally.moved > 0 || tally.unpaired > 0) return false;
    if (base?.[0] !== candidate?.[0] || base?.[1] !== candidate?.[1]) return false;
  }
  const beyond = await Promise.all([
    anyResult(partOf(history, previous.runId, parts.length)()),
    anyResult(partOf(history, run.runId, parts.length)()),
  ]);
  return !beyond.some(Boolean);
}

async function anyResult(results: AsyncIterable<ItemResult>): Promise<boolean> {
  const iterator = results[Symbol.asyncIterator]();
  const first = await iterator.next();
  await iterator.return?.();
  return !first.done;
}

/**
 * `run` compared with `previous` from their whole results, read side by side in report order
 * in one pass (each run sorted first, with bounded memory, if its results do not come in report
 * order: the local store gives them in the order they were recorded). Memory: the pairing
 * window's results and the tally's columns.
 */
export async function comparisonOfRuns(
  history: ResultsReader,
  previous: RunRecord,
  run: RunRecord,
  options: CompareReadOptions = {},
): Promise<Comparison> {
  const tally = await tallied(
    previous,
    run,
    {
      base: () => history.results(previous.runId),
      candidate: options.results ?? (() => history.results(run.runId)),
    },
    options,
  );
  return tally.comparison();
}

/**
 * The tally of two runs' pairs. The results are first taken as they come; a run found out of
 * report order is then sorted (`inReportOrder`: spilled to temporary files beyond a bucket of
 * results) and the pass starts again, so a store that gives report order is read once.
 */
async function tallied(
  previous: RunRecord,
  run: RunRecord,
  sources: Record<PairedSide, ResultSource>,
  options: CompareReadOptions,
): Promise<ComparisonTally> {
  const sorted: Partial<Record<PairedSide, OrderedResults>> = {};
  const read = (side: PairedSide) => sorted[side]?.results() ?? compared(sources[side]());
  try {
    for (;;) {
      const tally = new ComparisonTally(previous, run, options);
      try {
        for await (const pair of pairs(read('base'), read('candidate'), {
          maxUnpaired: options.maxUnpaired ?? DEFAULT_MAX_UNPAIRED,
          sameRows: sameDatasetVersion(previous, run),
          onRead: (side, result) => tally.read(side, result),
          ...(options.stats ? { stats: options.stats } : {}),
        }))
          tally.add(pair.base, pair.candidate, pair.outOfWindow);
        return tally;
      } catch (error) {
        if (!(error instanceof ReportOrderError) || sorted[error.side]) throw error;
        const source = sources[error.side];
        sorted[error.side] = await inReportOrder(() => compared(source()));
      }
    }
  } finally {
    await Promise.all(Object.values(sorted).map((ordered) => ordered.close()));
  }
}

async function* compared(results: AsyncIterable<ItemResult>): AsyncIterable<ItemResult> {
  for await (const result of results) yield comparedPart(result);
}

/**
 * Part `part` of a run's results, checked to be of that part: a reader that gave another part's
 * results (one that cannot read by part) would pair the wrong items.
 */
function partOf(history: ResultsReader, runId: string, part: number): ResultSource {
  return async function* () {
    for await (const result of history.results(runId, part)) {
      if ((result.part ?? 0) !== part)
        throw new RangeError(
          `asked for part ${part} of run ${runId}, got a result of part ${result.part ?? 0} (item ${result.itemId}): the history must read results by part`,
        );
      yield result;
    }
  };
}
