import type { AnyTaskFamily, Scorer } from '../family/types.js';
import {
  biasApplies,
  biasScore,
  CostTally,
  LabelRows,
  LengthRows,
  NumberColumn,
  RepeatRows,
  type ScoreRow,
  scorerFigures,
  summarizeLatency,
  ValueRows,
} from '../lib/metrics/index.js';
import { BATCH_DISCOUNT } from '../lib/providers/batch.js';
import {
  type FailureKind,
  type ItemResult,
  isScored,
  type RunRecord,
  resultLatencyMs,
  type ScoreKind,
  scoreOf,
} from '../model/model.js';
import { REPORT_SCHEMA_VERSION, type Report, type ScorerSummary } from '../model/report.js';
import { compareReportOrder, ResultRelay, type ResultSource, sourceOf } from '../model/report-order.js';

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

/** The gold target a scorer compares a result with (from the result's gold and input). */
export function targetReader(scorer: Pick<Scorer, 'target'>): (result: ItemResult) => ScoreRow['target'] {
  return (result) =>
    scorer.target?.({ id: result.itemId, row: result.row, input: result.input, gold: result.gold });
}

/**
 * Every scorer's figures, and the primary scorer's as plain values, fed one result at a time
 * (in report order, so that bootstrap intervals are reproducible). Only each scorer's rows are
 * kept, never the results.
 */
export class ScoreTally {
  private readonly scorers: [name: string, kind: ScoreKind, Scorer, (r: ItemResult) => ScoreRow['target']][];
  /** Label scorers' rows as codes and counts; number and pass scorers' as typed columns. */
  private readonly rows = new Map<string, LabelRows | ValueRows>();
  /** Scorers whose scores can be set against the output's length: each scored item's length, score and gold. */
  private readonly lengths = new Map<string, LengthRows>();
  /** A run with `run.repeats` k > 1: each scorer's values repeat by repeat. */
  private readonly repeats = new Map<string, RepeatRows>();

  constructor(
    private readonly family: AnyTaskFamily,
    private readonly suite: RunRecord['suite'],
  ) {
    this.scorers = Object.entries(family.scorers(suite)).map(([name, scorer]) => [
      name,
      scorer.kind as ScoreKind,
      scorer,
      targetReader(scorer),
    ]);
    for (const [name, kind, scorer] of this.scorers) {
      this.rows.set(name, kind === 'label' ? new LabelRows() : new ValueRows(kind));
      if (family.outputLength && biasApplies(kind, scorer.metrics)) this.lengths.set(name, new LengthRows());
      const k = suite.run?.repeats ?? 1;
      if (k > 1) this.repeats.set(name, new RepeatRows(kind, k));
    }
  }

  add(result: ItemResult): void {
    const length =
      this.lengths.size > 0 && result.output !== undefined
        ? this.family.outputLength!(result.output, result.input)
        : undefined;
    for (const [name, kind, scorer, target] of this.scorers) {
      const row = scoreRow(result, name, scorer, target);
      this.rows.get(name)!.add(row);
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

  figures(): { scores: Record<string, ScorerSummary>; primary: string; flat: Record<string, unknown> } {
    const primary = this.family.primaryScorer(this.suite);
    const scores: Record<string, ScorerSummary> = {};
    let flat: Record<string, unknown> = {};
    for (const [name, kind, scorer] of this.scorers) {
      const figures = scorerFigures(kind, this.rows.get(name)!, scorer.metrics);
      scores[name] = figures.summary;
      const lengths = this.lengths.get(name);
      if (lengths) scores[name].bias = { length: lengths.figures() };
      const repeats = this.repeats.get(name);
      if (repeats) scores[name].reliability = repeats.figures(scorer.metrics);
      if (name === primary) flat = figures.flat;
    }
    return { scores, primary, flat };
  }
}

/** Every scorer's figures, and the primary scorer's as plain values. */
export function scoreFigures(
  family: AnyTaskFamily,
  suite: RunRecord['suite'],
  results: readonly ItemResult[],
): { scores: Record<string, ScorerSummary>; primary: string; flat: Record<string, unknown> } {
  const tally = new ScoreTally(family, suite);
  for (const result of results) tally.add(result);
  return tally.figures();
}

/**
 * The report of a run from its results, which `results` must give in report order (so that
 * bootstrap intervals are reproducible). A run with fewer results than its dataset's items is
 * `incomplete` and gets no finish time. Streams them: counts, cost and latency as running sums,
 * each scorer's rows compactly; `onResult` sees each result of that pass (the report files'
 * layout is gathered on it), and the family's own figures read the same pass through a relay.
 */
export async function buildReport(
  run: RunRecord,
  results: ResultSource | readonly ItemResult[],
  family: AnyTaskFamily,
  finishedAt: string,
  onResult?: (result: ItemResult) => void,
): Promise<Report> {
  const source = typeof results === 'function' ? results : sourceOf(results);
  const byFailure: Partial<Record<FailureKind, number>> = {};
  let items = 0;
  let scored = 0;
  let calls = 0;
  let cachedCalls = 0;
  let savedUsd = 0;
  let batchCalls = 0;
  let batchSavedUsd = 0;
  let anySimulated = false;
  const spend = new CostTally();
  const latencies = new NumberColumn();
  const tally = new ScoreTally(family, run.suite);
  // The family's figures read the same pass, through a relay.
  const relay = family.report ? new ResultRelay() : undefined;
  const section = relay && Promise.resolve(family.report!(run.suite, relay)).finally(() => relay.abandon());
  section?.catch(() => undefined);
  for await (const result of source()) {
    items += 1;
    if (result.status === 'scored') scored += 1;
    else if (result.failure) byFailure[result.failure.kind] = (byFailure[result.failure.kind] ?? 0) + 1;
    if (result.simulated) anySimulated = true;
    for (const [stage, s] of Object.entries(result.stages)) {
      spend.add({ stage, costUsd: s.costUsd, usage: s.usage, calls: s.calls });
      calls += s.calls;
      cachedCalls += s.cachedCalls;
      savedUsd += s.savedUsd ?? 0;
      batchCalls += s.batchCalls ?? 0;
      batchSavedUsd += s.batchSavedUsd ?? 0;
    }
    const latency = resultLatencyMs(result);
    if (latency !== undefined) latencies.push(latency);
    tally.add(result);
    onResult?.(result);
    await relay?.push(result);
  }
  relay?.end();
  const familyFigures = await section;
  const invalidRows = byFailure.invalid_row ?? 0;
  const failed = items - scored;
  const simulated = run.simulated || anySimulated;
  const { scores, primary, flat } = tally.figures();
  const missingItems = run.total === undefined ? null : Math.max(0, run.total - items);
  return {
    schemaVersion: REPORT_SCHEMA_VERSION,
    runId: run.runId,
    suite: run.suiteName,
    task: run.suite.task,
    config: family.config(run.suite),
    backends: run.suite.backends,
    simulated,
    ...(simulated ? { notice: SIMULATED_NOTICE } : {}),
    dataset: run.datasetKey,
    status: missingItems === 0 ? 'complete' : 'incomplete',
    missingItems,
    startedAt: run.startedAt,
    finishedAt: missingItems === 0 ? finishedAt : null,
    counts: { items, scored, failed, invalidRows, errors: failed - invalidRows, byFailure },
    primaryScorer: primary,
    scores,
    metrics: { ...flat, ...familyFigures?.metrics },
    cost: {
      ...spend.summary(items - invalidRows),
      calls,
      cachedCalls,
      savedUsd,
      ...(batchCalls > 0
        ? { batch: { calls: batchCalls, savedUsd: batchSavedUsd, discount: BATCH_DISCOUNT } }
        : {}),
    },
    latencyMs: summarizeLatency(latencies.values()),
    prompts: Object.fromEntries(Object.entries(run.prompts).map(([path, p]) => [path, p.hash])),
  };
}
