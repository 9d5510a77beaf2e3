import { deserialize, serialize } from 'node:v8';
import type { AnyTaskFamily, FamilyReportTally, Scorer } from '../family/types.js';
import { GOLD_P_COLUMN } from '../lib/datasets/gold-file.js';
import {
  AnnotationRows,
  type AnnotationRowsState,
  addCounts,
  biasApplies,
  biasScore,
  CostTally,
  type CostTallyState,
  LabelRows,
  type LabelRowsState,
  LengthRows,
  type LengthRowsState,
  mergeRows,
  type NumberArray,
  NumberColumn,
  RepeatRows,
  type RepeatRowsState,
  rowsFromState,
  type ScoreRow,
  scorerFigures,
  summarizeLatency,
  ValueRows,
  type ValueRowsState,
} from '../lib/metrics/index.js';
import { BATCH_DISCOUNT } from '../lib/providers/batch.js';
import { StoredDataError } from '../model/codec.js';
import {
  type FailureKind,
  type ItemResult,
  isScored,
  type RunRecord,
  resultLatencyMs,
  type ScoreKind,
  scoreOf,
} from '../model/model.js';
import {
  type CostSummary,
  REPORT_SCHEMA_VERSION,
  type Report,
  type ScorerSummary,
  type SliceFigures,
  type SuitePrices,
} from '../model/report.js';
import { compareReportOrder, type ResultSource, sourceOf } from '../model/report-order.js';
import { InjectionTally, type InjectionTallyState } from './injection-tally.js';
import { FileLayout, type FileLayoutState, targetReader } from './layout.js';
import { SelfPreferenceTally, type SelfPreferenceTallyState } from './self-preference-tally.js';
import { SliceTally, type SliceTallyState } from './slices.js';

export { targetReader } from './layout.js';

export const SIMULATED_NOTICE =
  'SIMULATED: answers were fabricated by the sim provider from the gold labels with noise; these scores measure nothing about a real model.';

/**
 * Results in the order reports show them and metrics resample them: by dataset row. Stores
 * return results in completion order, which differs between a resumed and a straight run.
 */
export function reportOrder(results: ItemResult[]): ItemResult[] {
  return [...results].sort(compareReportOrder);
}

/** One scorer's row of a result: its value or unscored reason, and the gold target. */
export function scoreRow(
  result: ItemResult,
  name: string,
  scorer: Pick<Scorer, 'kind'>,
  targetOf: (result: ItemResult) => ScoreRow['target'],
): ScoreRow {
  const score = scoreOf(result, name, scorer.kind);
  const target = targetOf(result);
  const row: ScoreRow = isScored(score) ? { value: score.value } : { unscored: score.unscored.kind };
  if (target !== undefined) row.target = target;
  // An item chosen for labelling with probability p weighs 1/p in the prediction-powered estimates.
  const p = target === undefined ? undefined : result.columns?.[GOLD_P_COLUMN];
  if (p !== undefined && Number(p) > 0 && Number(p) <= 1) row.weight = 1 / Number(p);
  return row;
}

/** One scorer's rows: each result's value or unscored reason, and the gold target. */
export function scoreRows(
  results: readonly ItemResult[],
  name: string,
  scorer: Pick<Scorer, 'kind' | 'target'>,
  targetOf: (result: ItemResult) => ScoreRow['target'],
): ScoreRow[] {
  return results.map((result) => scoreRow(result, name, scorer, targetOf));
}

/**
 * Each annotator's label of a result as the scorer's gold target (what its value is compared
 * with): undefined for a blank, or for a label the scorer cannot read as its kind.
 */
function annotatorTargets(
  result: ItemResult,
  scorer: Pick<Scorer, 'target'>,
): (ScoreRow['target'] | undefined)[] {
  return (result.annotations ?? []).map((label) =>
    label.trim() === ''
      ? undefined
      : scorer.target?.({ id: result.itemId, row: result.row, input: result.input, gold: label }),
  );
}

/** A {@link ScoreTally} saved: each scorer's rows, length rows and repeat rows, by scorer name. */
export interface ScoreTallyState {
  rows: Record<string, LabelRowsState | ValueRowsState>;
  lengths: Record<string, LengthRowsState>;
  repeats: Record<string, RepeatRowsState>;
  /** Scorers whose results carry several annotators' labels: those labels and the scorer's value. */
  annotations?: Record<string, AnnotationRowsState>;
  /** The primary scorer's rows by the suite's slice columns. */
  slices?: SliceTallyState;
  /** With `dataset.columns.producer`: each scorer's producer, judge, verdict and gold. */
  producers?: SelfPreferenceTallyState;
}

/**
 * Every scorer's figures, and the primary scorer's as plain values, fed one result at a time
 * (in report order, so that bootstrap intervals are reproducible). Only each scorer's rows are
 * kept, never the results. Tallies of consecutive parts of a run merge into the tally of the
 * whole: each scorer's columns are appended in report order, so the resamples are the same.
 */
export class ScoreTally {
  private readonly scorers: [name: string, kind: ScoreKind, Scorer, (r: ItemResult) => ScoreRow['target']][];
  /** Label scorers' rows as codes and counts; number and pass scorers' as typed columns. */
  private readonly rows = new Map<string, LabelRows | ValueRows>();
  /** Scorers whose scores can be set against the output's length: each scored item's length, score and gold. */
  private readonly lengths = new Map<string, LengthRows>();
  /** A run with `run.repeats` k > 1: each scorer's values repeat by repeat. */
  private readonly repeats = new Map<string, RepeatRows>();
  /** Scorers with a gold target whose results carry annotators' labels (made at the first such result). */
  private readonly annotations = new Map<string, AnnotationRows>();
  /** The primary scorer's name, and its rows by each of the suite's slice columns (none without `slices`). */
  private readonly primary: string;
  private readonly slices: SliceTally | undefined;
  /** Gold on only some items by design (`dataset.partialGold`, `dataset.goldFile`): scorers add PPI figures. */
  private readonly ppi: boolean;
  /** With `dataset.columns.producer`: the self-preference rows of the scorers it applies to. */
  private readonly producers: SelfPreferenceTally | undefined;

  /** A tally of no result, or loaded from `state` (see `toState`). */
  constructor(
    private readonly family: AnyTaskFamily,
    suite: RunRecord['suite'],
    state?: ScoreTallyState,
  ) {
    this.scorers = Object.entries(family.scorers(suite)).map(([name, scorer]) => [
      name,
      scorer.kind as ScoreKind,
      scorer,
      targetReader(scorer),
    ]);
    const k = suite.run?.repeats ?? 1;
    for (const [name, kind, scorer] of this.scorers) {
      const rows = state?.rows[name];
      this.rows.set(
        name,
        rows ? rowsFromState(rows) : kind === 'label' ? new LabelRows() : new ValueRows(kind),
      );
      if (family.outputLength && biasApplies(kind, scorer.metrics)) {
        const lengths = state?.lengths[name];
        this.lengths.set(name, lengths ? LengthRows.fromState(lengths) : new LengthRows());
      }
      if (k > 1) {
        const repeats = state?.repeats[name];
        this.repeats.set(name, repeats ? RepeatRows.fromState(repeats) : new RepeatRows(kind, k));
      }
      const annotations = state?.annotations?.[name];
      if (annotations) this.annotations.set(name, AnnotationRows.fromState(annotations));
    }
    this.primary = family.primaryScorer(suite);
    // Optional chaining: a family's own tests build scorer figures from a suite without a dataset.
    this.ppi = Boolean(suite.dataset?.partialGold || suite.dataset?.goldFile);
    const primary = this.scorers.find(([name]) => name === this.primary);
    if (suite.slices?.length && primary)
      this.slices = new SliceTally(suite.slices, primary[1], state?.slices);
    this.producers = SelfPreferenceTally.of(suite, this.scorers, state?.producers);
  }

  add(result: ItemResult): void {
    const length =
      this.lengths.size > 0 && result.output !== undefined
        ? this.family.outputLength!(result.output, result.input)
        : undefined;
    for (const [name, kind, scorer, target] of this.scorers) {
      const row = scoreRow(result, name, scorer, target);
      this.rows.get(name)!.add(row);
      // An invalid row's labels (its annotators tie) count among the annotators, with no judge value.
      if (result.annotations?.length && scorer.target)
        this.annotated(name, kind).add(annotatorTargets(result, scorer), row.value);
      if (name === this.primary) this.slices?.add(result, row);
      this.producers?.add(result, name, row);
      const repeats = this.repeats.get(name);
      if (repeats) {
        const score = result.scores[name];
        repeats.add(row, score?.repeats, score?.tie);
      }
      const lengths = this.lengths.get(name);
      if (lengths && length !== undefined && row.value !== undefined) {
        const score = biasScore(kind, row.value, scorer.metrics);
        if (score !== undefined) lengths.add(length, score, row.target);
      }
    }
  }

  /** Appends `later`, the tally of the results that come right after this one's (same family and suite). */
  merge(later: ScoreTally): void {
    for (const [name, rows] of this.rows) mergeRows(rows, later.rows.get(name)!);
    for (const [name, lengths] of this.lengths) lengths.merge(later.lengths.get(name)!);
    for (const [name, repeats] of this.repeats) repeats.merge(later.repeats.get(name)!);
    for (const [name, annotations] of later.annotations) {
      const own = this.annotations.get(name);
      if (own) own.merge(annotations);
      else this.annotations.set(name, annotations);
    }
    if (this.slices && later.slices) this.slices.merge(later.slices);
    if (this.producers && later.producers) this.producers.merge(later.producers);
  }

  /** The scorer's annotators' labels, made at its first annotated result. */
  private annotated(name: string, kind: ScoreKind): AnnotationRows {
    const rows = this.annotations.get(name) ?? new AnnotationRows(kind);
    this.annotations.set(name, rows);
    return rows;
  }

  toState(): ScoreTallyState {
    const states = <T extends { toState(): S }, S>(map: Map<string, T>) =>
      Object.fromEntries(Array.from(map, ([name, rows]) => [name, rows.toState()])) as Record<string, S>;
    return {
      rows: states<LabelRows | ValueRows, LabelRowsState | ValueRowsState>(this.rows),
      lengths: states<LengthRows, LengthRowsState>(this.lengths),
      repeats: states<RepeatRows, RepeatRowsState>(this.repeats),
      ...(this.annotations.size > 0
        ? { annotations: states<AnnotationRows, AnnotationRowsState>(this.annotations) }
        : {}),
      ...(this.slices ? { slices: this.slices.toState() } : {}),
      ...(this.producers ? { producers: this.producers.toState() } : {}),
    };
  }

  figures(): {
    scores: Record<string, ScorerSummary>;
    primary: string;
    flat: Record<string, unknown>;
    slices?: Record<string, Record<string, SliceFigures>>;
  } {
    const primary = this.primary;
    const scores: Record<string, ScorerSummary> = {};
    let flat: Record<string, unknown> = {};
    for (const [name, kind, scorer] of this.scorers) {
      const figures = scorerFigures(kind, this.rows.get(name)!, { ...scorer.metrics, ppi: this.ppi });
      scores[name] = figures.summary;
      const lengths = this.lengths.get(name);
      if (lengths) scores[name].bias = { length: lengths.figures() };
      const selfPreference = this.producers?.figures(name);
      if (selfPreference) scores[name].bias = { ...scores[name].bias, selfPreference };
      const repeats = this.repeats.get(name);
      if (repeats) scores[name].reliability = repeats.figures(scorer.metrics);
      const annotations = this.annotations.get(name);
      if (annotations) scores[name].humanAgreement = annotations.figures(scorer.metrics);
      if (name === primary) flat = figures.flat;
    }
    const scorer = this.scorers.find(([name]) => name === primary)?.[2];
    const slices = this.slices && scorer ? this.slices.figures(scorer) : undefined;
    return { scores, primary, flat, ...(slices ? { slices } : {}) };
  }
}

/** Every scorer's figures, and the primary scorer's as plain values. */
export function scoreFigures(
  family: AnyTaskFamily,
  suite: RunRecord['suite'],
  results: readonly ItemResult[],
): ReturnType<ScoreTally['figures']> {
  const tally = new ScoreTally(family, suite);
  for (const result of results) tally.add(result);
  return tally.figures();
}

/** Version of {@link ReportTally}'s bytes: a tally saved by another version is not read. */
const TALLY_VERSION = 2;

/** A {@link ReportTally} saved (see `toBytes`). */
interface ReportTallyState {
  version: typeof TALLY_VERSION;
  runId: string;
  task: string;
  items: number;
  scored: number;
  byFailure: Partial<Record<FailureKind, number>>;
  calls: number;
  cachedCalls: number;
  savedUsd: number;
  batchCalls: number;
  batchSavedUsd: number;
  anySimulated: boolean;
  spend: CostTallyState;
  latencies: NumberArray;
  scores: ScoreTallyState;
  layout: FileLayoutState;
  family?: unknown;
  injection?: InjectionTallyState;
}

/**
 * Everything a run's report is computed from, fed one result at a time in report order:
 * counts, cost and latency as running sums and a typed column, each scorer's rows (see
 * {@link ScoreTally}), the family's own tally, and the report files' layout. A run too large
 * for one reader is tallied in parts (each a stretch of consecutive results in report order):
 * each part's tally is saved as bytes, loaded back, and the parts merged in order give the
 * report one tally over every result gives. Every column is appended in report order, so
 * bootstrap intervals are the same too; only figures kept as running floating-point sums (cost
 * and savings in dollars, a family's means of fractions such as cleanup's heuristic figures)
 * can differ, in their last bits: each part's sum is rounded apart.
 */
export class ReportTally {
  private items = 0;
  private scored = 0;
  private readonly byFailure: Partial<Record<FailureKind, number>> = {};
  private calls = 0;
  private cachedCalls = 0;
  private savedUsd = 0;
  private batchCalls = 0;
  private batchSavedUsd = 0;
  private anySimulated = false;
  private spend = new CostTally();
  private latencies = new NumberColumn();
  private scores: ScoreTally;
  private own: FamilyReportTally | undefined;
  private files: FileLayout;
  private injection = new InjectionTally();

  constructor(
    private readonly run: RunRecord,
    private readonly family: AnyTaskFamily,
  ) {
    this.scores = new ScoreTally(family, run.suite);
    this.own = family.reportTally?.(run.suite);
    this.files = new FileLayout(family, run.suite);
  }

  /** The report files' layout, gathered (and merged) with the rest. */
  get layout(): FileLayout {
    return this.files;
  }

  /** The results added (and merged) so far. */
  get count(): number {
    return this.items;
  }

  /** The next result in report order. */
  add(result: ItemResult): void {
    this.items += 1;
    if (result.status === 'scored') this.scored += 1;
    else if (result.failure)
      this.byFailure[result.failure.kind] = (this.byFailure[result.failure.kind] ?? 0) + 1;
    if (result.simulated) this.anySimulated = true;
    for (const [stage, s] of Object.entries(result.stages)) {
      this.spend.add({ stage, costUsd: s.costUsd, usage: s.usage, calls: s.calls, unpriced: s.unpriced });
      this.calls += s.calls;
      this.cachedCalls += s.cachedCalls;
      this.savedUsd += s.savedUsd ?? 0;
      this.batchCalls += s.batchCalls ?? 0;
      this.batchSavedUsd += s.batchSavedUsd ?? 0;
    }
    const latency = resultLatencyMs(result);
    if (latency !== undefined) this.latencies.push(latency);
    this.scores.add(result);
    this.own?.add(result);
    this.files.add(result);
    this.injection.add(result);
  }

  /**
   * Appends `later`: a tally of the results that come right after this tally's (in report
   * order) of the same run. `later` is not to be used afterwards.
   */
  merge(later: ReportTally): void {
    if (later.run.runId !== this.run.runId)
      throw new RangeError(`ReportTally: cannot merge run ${later.run.runId} into run ${this.run.runId}`);
    this.items += later.items;
    this.scored += later.scored;
    addCounts(this.byFailure, later.byFailure);
    this.calls += later.calls;
    this.cachedCalls += later.cachedCalls;
    this.savedUsd += later.savedUsd;
    this.batchCalls += later.batchCalls;
    this.batchSavedUsd += later.batchSavedUsd;
    this.anySimulated ||= later.anySimulated;
    this.spend.merge(later.spend);
    this.latencies.merge(later.latencies);
    this.scores.merge(later.scores);
    if (this.own && later.own) this.own.merge(later.own);
    this.files.merge(later.files);
    this.injection.merge(later.injection);
  }

  /** The whole state as bytes (V8's serialisation: typed columns stay as compact as in memory). */
  toBytes(): Uint8Array {
    const state: ReportTallyState = {
      version: TALLY_VERSION,
      runId: this.run.runId,
      task: this.run.suite.task,
      items: this.items,
      scored: this.scored,
      byFailure: { ...this.byFailure },
      calls: this.calls,
      cachedCalls: this.cachedCalls,
      savedUsd: this.savedUsd,
      batchCalls: this.batchCalls,
      batchSavedUsd: this.batchSavedUsd,
      anySimulated: this.anySimulated,
      spend: this.spend.toState(),
      latencies: this.latencies.toState(),
      scores: this.scores.toState(),
      layout: this.files.toState(),
      ...(this.own ? { family: this.own.toState() } : {}),
      injection: this.injection.toState(),
    };
    return serialize(state);
  }

  /** A tally saved by `toBytes`, for the same run. */
  static fromBytes(run: RunRecord, family: AnyTaskFamily, bytes: Uint8Array): ReportTally {
    const state = deserialize(bytes) as ReportTallyState;
    if (state?.version !== TALLY_VERSION)
      throw new StoredDataError(
        `a report tally of version ${JSON.stringify(state?.version)}; this Assay reads version ${TALLY_VERSION}`,
      );
    if (state.runId !== run.runId || state.task !== run.suite.task)
      throw new StoredDataError(
        `a report tally of run ${state.runId} (${state.task}), read for run ${run.runId} (${run.suite.task})`,
      );
    const tally = new ReportTally(run, family);
    tally.items = state.items;
    tally.scored = state.scored;
    Object.assign(tally.byFailure, state.byFailure);
    tally.calls = state.calls;
    tally.cachedCalls = state.cachedCalls;
    tally.savedUsd = state.savedUsd;
    tally.batchCalls = state.batchCalls;
    tally.batchSavedUsd = state.batchSavedUsd;
    tally.anySimulated = state.anySimulated;
    tally.spend = CostTally.fromState(state.spend);
    tally.latencies = NumberColumn.fromState(state.latencies);
    tally.scores = new ScoreTally(family, run.suite, state.scores);
    tally.own = family.reportTally?.(run.suite, state.family);
    tally.files = FileLayout.fromState(family, run.suite, state.layout);
    tally.injection = new InjectionTally(state.injection);
    return tally;
  }

  /**
   * The run's report (what {@link buildReport} returns). A run with fewer results than its
   * dataset's items is `incomplete` and gets no finish time.
   */
  async report(finishedAt: string): Promise<Report> {
    const { run, family, items, scored, byFailure } = this;
    const familyFigures = await this.own?.section();
    const invalidRows = byFailure.invalid_row ?? 0;
    const failed = items - scored;
    const simulated = run.simulated || this.anySimulated;
    const { scores, primary, flat, slices } = this.scores.figures();
    const missingItems = run.total === undefined ? null : Math.max(0, run.total - items);
    return {
      schemaVersion: REPORT_SCHEMA_VERSION,
      runId: run.runId,
      suite: run.suiteName,
      task: run.suite.task,
      config: family.config(run.suite),
      // Outputs the dataset gives: the backends are the suite's graders, named only if one was called.
      backends: run.predictions !== undefined && this.calls === 0 ? [] : run.suite.backends,
      ...(run.predictions !== undefined ? { predictions: run.predictions } : {}),
      simulated,
      ...(simulated ? { notice: SIMULATED_NOTICE } : {}),
      dataset: run.datasetKey,
      status: missingItems === 0 ? 'complete' : 'incomplete',
      missingItems,
      startedAt: run.startedAt,
      finishedAt: missingItems === 0 ? finishedAt : null,
      counts: {
        items,
        scored,
        failed,
        invalidRows,
        errors: failed - invalidRows,
        byFailure: { ...byFailure },
      },
      primaryScorer: primary,
      scores,
      metrics: { ...flat, ...familyFigures?.metrics },
      ...(slices ? { slices } : {}),
      ...(familyFigures?.panel ? { panel: familyFigures.panel } : {}),
      ...(this.injection.summary() ? { injection: this.injection.summary() } : {}),
      cost: {
        ...atListPrice(this.spend.summary(items - invalidRows), this.savedUsd, items - invalidRows),
        calls: this.calls,
        cachedCalls: this.cachedCalls,
        savedUsd: this.savedUsd,
        ...(this.batchCalls > 0
          ? { batch: { calls: this.batchCalls, savedUsd: this.batchSavedUsd, discount: BATCH_DISCOUNT } }
          : {}),
        ...suitePricesOf(run.suite),
      },
      latencyMs: summarizeLatency(this.latencies.values()),
      prompts: Object.fromEntries(Object.entries(run.prompts).map(([path, p]) => [path, p.hash])),
    };
  }
}

/**
 * Which prices came from the suite's own `run.prices` (as the run record keeps them: on AWS,
 * only those for models the deployment does not price, with a note naming the others).
 */
function suitePricesOf(suite: RunRecord['suite']): { suitePrices?: SuitePrices } {
  const prices = suite.run?.prices;
  if (!prices) return {};
  return {
    suitePrices: { models: Object.keys(prices.models), ...(prices.notes ? { note: prices.notes } : {}) },
  };
}

/**
 * The run's cost per item and per 10K at list price: what the evaluation costs, its cached
 * answers priced as if they had been called (`savedUsd`, what they cost when first paid). A
 * run served from the cache paid less (`totalUsd`), which says nothing of what it costs to run.
 */
function atListPrice(paid: CostSummary, savedUsd: number, items: number): CostSummary {
  const perItemUsd = items > 0 ? (paid.totalUsd + savedUsd) / items : null;
  return { ...paid, perItemUsd, per10kUsd: perItemUsd === null ? null : perItemUsd * 10_000 };
}

/**
 * The report of a run from its results, which `results` must give in report order (so that
 * bootstrap intervals are reproducible): one {@link ReportTally} over them all. A run with fewer
 * results than its dataset's items is `incomplete` and gets no finish time. Streams them, each
 * read once; `onResult` sees each result of that pass.
 */
export async function buildReport(
  run: RunRecord,
  results: ResultSource | readonly ItemResult[],
  family: AnyTaskFamily,
  finishedAt: string,
  onResult?: (result: ItemResult) => void,
): Promise<Report> {
  const source = typeof results === 'function' ? results : sourceOf(results);
  const tally = new ReportTally(run, family);
  for await (const result of source()) {
    tally.add(result);
    onResult?.(result);
  }
  return tally.report(finishedAt);
}
