import type { FailureKind, ItemResult, RunRecord } from '../core/model.js';
import { type CostItem, costSummary, summarizeLatency } from '../metrics/index.js';
import type { Task } from '../tasks/types.js';

/** The report contract (DESIGN.md): written for every run, local or AWS. Plain numbers only. */
export interface Report {
  runId: string;
  suite: string;
  task: string;
  judge: string;
  method: string;
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
    scored: number;
    /** Failed items, invalid rows included. */
    failed: number;
    invalidRows: number;
    /** Failed after reaching a model (parse, refusal, provider, dead letter…): the `Error` rows. */
    errors: number;
    byFailure: Partial<Record<FailureKind, number>>;
  };
  metrics: Record<string, unknown>;
  /** `cachedCalls` were answered from the LLM cache; `savedUsd` is what they cost when first paid. */
  cost: ReturnType<typeof costSummary> & { calls: number; cachedCalls: number; savedUsd: number };
  latencyMs: { p50: number; p95: number; mean: number; max: number };
  prompts: Record<string, string>;
  /** Against the suite's previous finished run (details in comparison.json / comparison.txt). */
  comparison?: Record<string, unknown>;
}

export const SIMULATED_NOTICE =
  'SIMULATED: answers were drawn from the gold labels with noise by the sim provider; these scores measure nothing about a real model.';

/**
 * Results in the order reports show them and metrics resample them: by dataset row. Stores
 * return results in completion order, which differs between a resumed and a straight run.
 */
export function reportOrder(results: ItemResult[]): ItemResult[] {
  return [...results].sort((a, b) => a.row - b.row || a.itemId.localeCompare(b.itemId));
}

/** `results` must be in `reportOrder`, so that bootstrap intervals are reproducible. */
export function buildReport(run: RunRecord, results: ItemResult[], task: Task, finishedAt: string): Report {
  const byFailure: Partial<Record<FailureKind, number>> = {};
  let scored = 0;
  let calls = 0;
  let cachedCalls = 0;
  let savedUsd = 0;
  const spends: CostItem[] = [];
  const latencies: number[] = [];
  for (const result of results) {
    if (result.status === 'scored') scored += 1;
    else if (result.failure) byFailure[result.failure.kind] = (byFailure[result.failure.kind] ?? 0) + 1;
    let latency = 0;
    for (const [stage, spend] of Object.entries(result.stages)) {
      spends.push({ stage, costUsd: spend.costUsd, usage: spend.usage, calls: spend.calls });
      calls += spend.calls;
      cachedCalls += spend.cachedCalls;
      savedUsd += spend.savedUsd ?? 0;
      latency += spend.latencyMs;
    }
    if (Object.keys(result.stages).length > 0) latencies.push(latency);
  }
  const invalidRows = byFailure.invalid_row ?? 0;
  const failed = results.length - scored;
  const simulated = run.simulated || results.some((r) => r.simulated);
  return {
    runId: run.runId,
    suite: run.suiteName,
    task: run.suite.task,
    judge: run.suite.judge,
    method: run.suite.method,
    backends: run.suite.backends,
    simulated,
    ...(simulated ? { notice: SIMULATED_NOTICE } : {}),
    dataset: run.datasetKey,
    startedAt: run.startedAt,
    finishedAt,
    counts: { items: results.length, scored, failed, invalidRows, errors: failed - invalidRows, byFailure },
    metrics: task.metrics(results, run.suite),
    cost: { ...costSummary(spends, results.length - invalidRows), calls, cachedCalls, savedUsd },
    latencyMs: summarizeLatency(latencies),
    prompts: Object.fromEntries(Object.entries(run.prompts).map(([path, p]) => [path, p.hash])),
  };
}
