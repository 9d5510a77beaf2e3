import {
  type BootstrapOptions,
  classificationMetrics,
  type LabelPair,
  type McNemarResult,
  mcnemarPaired,
  type PairedDelta,
  pairedBootstrap,
  pairedBootstraps,
  sum,
} from '../metrics/index.js';
import type { ItemResult, RunRecord } from './model.js';

/**
 * Run-vs-run comparison (SPEC §2 "Prompt versions"): the same items judged by two runs —
 * typically before and after a prompt change — joined on the item id. Pure: no I/O.
 *
 * Conventions (the same as the run report's):
 * - `invalid_row` results never reached a model: they are left out of the pairing.
 * - A failed item's prediction is `Error`. Label metrics exclude each side's Error rows inside
 *   the statistic (classificationMetrics' convention); McNemar counts an Error as wrong.
 * - Everything resampled is first put in (row, itemId) order, so the same two runs always give
 *   the same numbers whatever order the stores returned the results in.
 */

export interface RunSide {
  run: RunRecord;
  results: ItemResult[];
}

export interface FlippedSide {
  prediction?: string;
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
  /** 'fixed' (wrong→right), 'broken' (right→wrong), 'changed' (wrong→differently wrong, no gold, or Error involved) */
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
  backends: string[];
}

export const COMPARED_METRICS = ['accuracy', 'macroF1', 'binaryF1', 'kappa'] as const;
export type ComparedMetric = (typeof COMPARED_METRICS)[number];

export interface PromptChange {
  path: string;
  base?: string;
  candidate?: string;
}

export interface Comparison {
  base: RunHeader;
  candidate: RunHeader;
  /** Paths whose hash differs or that exist on one side only, sorted by path. */
  promptChanges: PromptChange[];
  /** Joined on itemId; invalid_row results are excluded from pairing (and from these counts). */
  items: { paired: number; onlyBase: number; onlyCandidate: number };
  /**
   * Paired bootstrap of each label metric over the paired items with a gold label (a failed
   * item predicts `Error`, excluded inside the statistic). Undefined when no paired item has a
   * gold label, or when no result carries a prediction (a score-only task).
   */
  metrics: Record<ComparedMetric, PairedDelta> | undefined;
  /** Correctness (prediction === gold, Error = wrong) on the same items; b = base right only, c = candidate right only. */
  mcnemar: McNemarResult | undefined;
  /** Paired bootstrap of the mean score over the paired items with a numeric score on both sides. */
  scores: PairedDelta | undefined;
  /** Paired items whose prediction differs, in (row, itemId) order. */
  flipped: FlippedItem[];
  /** Sum of every stage's costUsd over each side's results (all of them, unpaired included). */
  cost: { base: number; candidate: number; delta: number };
}

export interface CompareOptions {
  bootstrap?: BootstrapOptions;
}

const ERROR_LABEL = 'Error';

/** The label a result stands for in the metrics: its prediction, or `Error` when it failed. */
function predicted(r: ItemResult): string {
  return r.status === 'scored' && r.prediction !== undefined ? r.prediction : ERROR_LABEL;
}

function header(run: RunRecord): RunHeader {
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
    backends: [...run.suite.backends],
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

function usable(results: ItemResult[]): Map<string, ItemResult> {
  const byId = new Map<string, ItemResult>();
  for (const r of results) if (r.failure?.kind !== 'invalid_row') byId.set(r.itemId, r);
  return byId;
}

function flippedSide(r: ItemResult): FlippedSide {
  const side: FlippedSide = { prediction: predicted(r), status: r.status };
  const reason = r.reason ?? r.failure?.message;
  if (reason !== undefined) side.reason = reason;
  if (r.status === 'failed' && r.failure) side.status = `failed (${r.failure.kind})`;
  return side;
}

function flipKind(gold: string | undefined, base: string, candidate: string): FlippedItem['kind'] {
  if (gold === undefined || base === ERROR_LABEL || candidate === ERROR_LABEL) return 'changed';
  if (candidate === gold) return 'fixed';
  if (base === gold) return 'broken';
  return 'changed';
}

const totalCost = (results: ItemResult[]) =>
  sum(results.flatMap((r) => Object.values(r.stages).map((s) => s.costUsd)));

export function compareRuns(base: RunSide, candidate: RunSide, options: CompareOptions = {}): Comparison {
  const baseHeader = header(base.run);
  const candidateHeader = header(candidate.run);
  const baseById = usable(base.results);
  const candidateById = usable(candidate.results);

  const pairs: [ItemResult, ItemResult][] = [];
  for (const [id, b] of baseById) {
    const c = candidateById.get(id);
    if (c) pairs.push([b, c]);
  }
  pairs.sort(([a], [b]) => a.row - b.row || byCodeUnit(a.itemId, b.itemId));

  // Label metrics and McNemar: paired items with a gold label, each side against its own gold.
  const gold = pairs.filter(([b, c]) => b.gold !== undefined && c.gold !== undefined);
  const labelled = gold.some(([b, c]) => b.prediction !== undefined || c.prediction !== undefined);
  let metrics: Comparison['metrics'];
  let mcnemar: McNemarResult | undefined;
  if (gold.length > 0 && labelled) {
    const basePairs: LabelPair[] = gold.map(([b]) => ({ gold: b.gold!, pred: predicted(b) }));
    const candidatePairs: LabelPair[] = gold.map(([, c]) => ({ gold: c.gold!, pred: predicted(c) }));
    metrics = pairedBootstraps(
      basePairs,
      candidatePairs,
      (rows) => {
        const m = classificationMetrics(rows, { bootstrap: false });
        return { accuracy: m.accuracy, macroF1: m.macroF1, binaryF1: m.binary.f1, kappa: m.kappa };
      },
      options.bootstrap,
    );
    mcnemar = mcnemarPaired(
      basePairs.map((p) => p.pred === p.gold),
      candidatePairs.map((p) => p.pred === p.gold),
    );
  }

  const scored = pairs.filter(([b, c]) => Number.isFinite(b.score) && Number.isFinite(c.score));
  const meanOf = (rows: readonly number[]) => sum(rows) / rows.length;
  const scores =
    scored.length > 0
      ? pairedBootstrap(
          scored.map(([b]) => b.score!),
          scored.map(([, c]) => c.score!),
          meanOf,
          options.bootstrap,
        )
      : undefined;

  const flipped: FlippedItem[] = [];
  for (const [b, c] of pairs) {
    const bp = predicted(b);
    const cp = predicted(c);
    if (bp === cp) continue;
    const itemGold = b.gold ?? c.gold;
    const item: FlippedItem = {
      itemId: b.itemId,
      row: b.row,
      input: Object.keys(b.input).length > 0 ? b.input : c.input,
      base: flippedSide(b),
      candidate: flippedSide(c),
      kind: flipKind(itemGold, bp, cp),
    };
    if (itemGold !== undefined) item.gold = itemGold;
    flipped.push(item);
  }

  const baseCost = totalCost(base.results);
  const candidateCost = totalCost(candidate.results);
  return {
    base: baseHeader,
    candidate: candidateHeader,
    promptChanges: promptChanges(baseHeader.prompts, candidateHeader.prompts),
    items: {
      paired: pairs.length,
      onlyBase: baseById.size - pairs.length,
      onlyCandidate: candidateById.size - pairs.length,
    },
    metrics,
    mcnemar,
    scores,
    flipped,
    cost: { base: baseCost, candidate: candidateCost, delta: candidateCost - baseCost },
  };
}

/** A compact summary for the candidate's report.json. */
export function comparisonSummary(c: Comparison): Record<string, unknown> {
  const deltas: Record<string, { delta: number; ci: [number, number]; pValue: number }> = {};
  for (const [name, d] of Object.entries(c.metrics ?? {})) {
    deltas[name] = { delta: d.delta, ci: d.ci, pValue: d.pValue };
  }
  if (c.scores) deltas.meanScore = { delta: c.scores.delta, ci: c.scores.ci, pValue: c.scores.pValue };
  const flipped = { fixed: 0, broken: 0, changed: 0 };
  for (const f of c.flipped) flipped[f.kind] += 1;
  return {
    baseRunId: c.base.runId,
    paired: c.items.paired,
    promptChanges: c.promptChanges,
    deltas,
    mcnemarPValue: c.mcnemar?.pValue,
    flipped,
  };
}
