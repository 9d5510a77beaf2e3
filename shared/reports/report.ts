import {
  type FailureKind,
  type ItemResult,
  isScored,
  type RunRecord,
  resultLatencyMs,
  type ScoreKind,
  scoreOf,
} from '../core/model.js';
import {
  type CostItem,
  type CostSummary,
  costSummary,
  type LatencySummary,
  type ScoreRow,
  type ScorerSummary,
  scorerFigures,
  summarizeLatency,
} from '../metrics/index.js';
import { BATCH_DISCOUNT } from '../providers/batch.js';
import type { AnyTaskFamily, Scorer } from '../tasks/types.js';

export const REPORT_SCHEMA_VERSION = 2;

/**
 * The report contract: written for every run, local or AWS, whatever the task family. Plain
 * numbers only; a metric with no data is null. `scores` has every scorer's figures by kind;
 * `metrics` repeats the primary scorer's as plain values (for GEC: `accuracy`, `macroF1`,
 * `binary.f1`, `kappa`, `perClass`, `confusion`), plus the family's own figures.
 */
export interface Report {
  schemaVersion: typeof REPORT_SCHEMA_VERSION;
  runId: string;
  suite: string;
  task: string;
  /** The family's facts about the suite (GEC: judge, method). */
  config: Record<string, string>;
  backends: string[];
  /** True when any answer came from the simulator: the scores say nothing about a real model. */
  simulated: boolean;
  notice?: string;
  dataset: string;
  startedAt: string;
  finishedAt: string;
  counts: {
    /** Every dataset row of the run (after sampling): scored + failed. */
    items: number;
    /** Items with an output. */
    scored: number;
    /** Items without one, invalid rows included. */
    failed: number;
    invalidRows: number;
    /** Failed after reaching the pipeline (parse, refusal, provider, dead letter, budget…). */
    errors: number;
    byFailure: Partial<Record<FailureKind, number>>;
  };
  /** The scorer whose figures `metrics` repeats. */
  primaryScorer: string;
  scores: Record<string, ScorerSummary>;
  metrics: Record<string, unknown>;
  /** `cachedCalls` were answered from the LLM cache; `savedUsd` is what they cost when first paid. */
  cost: CostSummary & {
    calls: number;
    cachedCalls: number;
    savedUsd: number;
    /**
     * Calls answered by vendor batches (the batch lane) and what the batch discount took off
     * their synchronous price: `totalUsd + batch.savedUsd` is what the run would have cost synchronously.
     */
    batch?: { calls: number; savedUsd: number; discount: number };
  };
  latencyMs: LatencySummary;
  prompts: Record<string, string>;
  /** Against the suite's previous finished run (details in comparison.json / comparison.txt). */
  comparison?: Record<string, unknown>;
}

export const SIMULATED_NOTICE =
  'SIMULATED: answers were fabricated by the sim provider from the gold labels with noise; these scores measure nothing about a real model.';

/**
 * Results in the order reports show them and metrics resample them: by dataset row. Stores
 * return results in completion order, which differs between a resumed and a straight run.
 */
export function reportOrder(results: ItemResult[]): ItemResult[] {
  return [...results].sort((a, b) => a.row - b.row || a.itemId.localeCompare(b.itemId));
}

/** One scorer's rows: each result's value or unscored reason, and the gold target. */
export function scoreRows(
  results: readonly ItemResult[],
  name: string,
  scorer: Pick<Scorer, 'kind' | 'target'>,
  targetOf: (result: ItemResult) => ScoreRow['target'],
): ScoreRow[] {
  return results.map((result) => {
    const score = scoreOf(result, name, scorer.kind);
    const target = targetOf(result);
    const row: ScoreRow = isScored(score) ? { value: score.value } : { unscored: score.unscored.kind };
    if (target !== undefined) row.target = target;
    return row;
  });
}

/** The gold target a scorer compares a result with (from the result's gold and input). */
export function targetReader(scorer: Pick<Scorer, 'target'>): (result: ItemResult) => ScoreRow['target'] {
  return (result) =>
    scorer.target?.({ id: result.itemId, row: result.row, input: result.input, gold: result.gold });
}

/** Every scorer's figures, and the primary scorer's as plain values. */
export function scoreFigures(
  family: AnyTaskFamily,
  suite: RunRecord['suite'],
  results: readonly ItemResult[],
): { scores: Record<string, ScorerSummary>; primary: string; flat: Record<string, unknown> } {
  const scorers = family.scorers(suite);
  const primary = family.primaryScorer(suite);
  const scores: Record<string, ScorerSummary> = {};
  let flat: Record<string, unknown> = {};
  for (const [name, scorer] of Object.entries(scorers)) {
    const figures = scorerFigures(
      scorer.kind as ScoreKind,
      scoreRows(results, name, scorer, targetReader(scorer)),
      scorer.metrics,
    );
    scores[name] = figures.summary;
    if (name === primary) flat = figures.flat;
  }
  return { scores, primary, flat };
}

/** `results` must be in `reportOrder`, so that bootstrap intervals are reproducible. */
export function buildReport(
  run: RunRecord,
  results: ItemResult[],
  family: AnyTaskFamily,
  finishedAt: string,
): Report {
  const byFailure: Partial<Record<FailureKind, number>> = {};
  let scored = 0;
  let calls = 0;
  let cachedCalls = 0;
  let savedUsd = 0;
  let batchCalls = 0;
  let batchSavedUsd = 0;
  const spends: CostItem[] = [];
  const latencies: number[] = [];
  for (const result of results) {
    if (result.status === 'scored') scored += 1;
    else if (result.failure) byFailure[result.failure.kind] = (byFailure[result.failure.kind] ?? 0) + 1;
    for (const [stage, spend] of Object.entries(result.stages)) {
      spends.push({ stage, costUsd: spend.costUsd, usage: spend.usage, calls: spend.calls });
      calls += spend.calls;
      cachedCalls += spend.cachedCalls;
      savedUsd += spend.savedUsd ?? 0;
      batchCalls += spend.batchCalls ?? 0;
      batchSavedUsd += spend.batchSavedUsd ?? 0;
    }
    const latency = resultLatencyMs(result);
    if (latency !== undefined) latencies.push(latency);
  }
  const invalidRows = byFailure.invalid_row ?? 0;
  const failed = results.length - scored;
  const simulated = run.simulated || results.some((r) => r.simulated);
  const { scores, primary, flat } = scoreFigures(family, run.suite, results);
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
    startedAt: run.startedAt,
    finishedAt,
    counts: { items: results.length, scored, failed, invalidRows, errors: failed - invalidRows, byFailure },
    primaryScorer: primary,
    scores,
    metrics: { ...flat, ...family.report?.(run.suite, results).metrics },
    cost: {
      ...costSummary(spends, results.length - invalidRows),
      calls,
      cachedCalls,
      savedUsd,
      ...(batchCalls > 0
        ? { batch: { calls: batchCalls, savedUsd: batchSavedUsd, discount: BATCH_DISCOUNT } }
        : {}),
    },
    latencyMs: summarizeLatency(latencies),
    prompts: Object.fromEntries(Object.entries(run.prompts).map(([path, p]) => [path, p.hash])),
  };
}
