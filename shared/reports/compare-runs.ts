import type { Scorer } from '../family/types.js';
import {
  type BootstrapOptions,
  binaryTargets,
  classificationMetrics,
  type McNemarResult,
  mcnemarPaired,
  meanAbsoluteError,
  meanOrNull,
  type PairedDelta,
  pairedBootstraps,
  RepeatRows,
  rocAuc,
  spearman,
  sum,
  verdictOf,
} from '../lib/metrics/index.js';
import {
  type ItemResult,
  isScored,
  type RunRecord,
  resultCost,
  type ScoreKind,
  type ScoreValue,
  scoreOf,
} from '../model/model.js';
import { taskFor } from '../registry/registry.js';
import { scoreRow, targetReader } from './report.js';

/**
 * Run-vs-run comparison: the same items scored by two runs — typically before and after a
 * prompt change — joined on the item id, scorer by scorer. Pure: no I/O.
 *
 * Conventions (the same as the run report's):
 * - `invalid_row` results never reached a model: they are left out of the pairing.
 * - Label scorers keep the AQUA convention: an unscored item predicts `Error`, excluded inside
 *   each side's statistic; McNemar counts it as wrong.
 * - Number and pass scorers compare the items scored on both sides.
 * - Everything resampled is first put in (row, itemId) order, so the same two runs always give
 *   the same numbers whatever order the stores returned the results in.
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
  backends: string[];
}

export interface PromptChange {
  path: string;
  base?: string;
  candidate?: string;
}

/** One scorer of both runs, compared on the paired items. */
export interface ScorerComparison {
  kind: ScoreKind;
  /** Paired items the statistics ran over. */
  n: number;
  /** Paired bootstrap of each metric (candidate − base), by metric name. */
  deltas: Record<string, PairedDelta>;
  /** Label and pass scorers: right vs wrong on the same items; b = base right only, c = candidate right only. */
  mcnemar?: McNemarResult;
  /** Paired items whose value differs, in (row, itemId) order. */
  flipped: FlippedItem[];
  /**
   * Runs that scored each item several times (`run.repeats`): per metric with a delta, the
   * noise floor it is held against (the larger of the two runs' floors; a run without repeats
   * has none) and whether the delta's magnitude is within it.
   */
  noise?: Record<string, DeltaNoise>;
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
  base: RunHeader;
  candidate: RunHeader;
  /** Paths whose hash differs or that exist on one side only, sorted by path. */
  promptChanges: PromptChange[];
  /** Joined on itemId; invalid_row results are excluded from pairing (and from these counts). */
  items: { paired: number; onlyBase: number; onlyCandidate: number };
  primaryScorer: string;
  /** The scorers both runs have, with the same kind. */
  scores: Record<string, ScorerComparison>;
  /** Sum of every stage's costUsd over each side's results (all of them, unpaired included). */
  cost: { base: number; candidate: number; delta: number };
}

export interface CompareOptions {
  bootstrap?: BootstrapOptions;
}

const ERROR_LABEL = 'Error';

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

/** One side of one paired item, as a scorer sees it. */
interface Side {
  result: ItemResult;
  value?: ScoreValue;
  target?: ScoreValue;
  verdict?: boolean;
  shown: string;
  reason?: string;
}

function side(result: ItemResult, name: string, scorer: Scorer, binary: boolean): Side {
  const score = scoreOf(result, name, scorer.kind);
  const target = targetReader(scorer)(result);
  if (!isScored(score)) {
    return { result, target, shown: `(${score.unscored.kind})`, reason: score.unscored.message };
  }
  return {
    result,
    value: score.value,
    target,
    verdict: verdictOf(scorer.kind, score.value, target, scorer.metrics, binary),
    shown: String(score.value),
    reason: score.explanation,
  };
}

function flipKind(b: Side, c: Side): FlippedItem['kind'] {
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

/** The paired statistics of one scorer, by kind. */
function compareScorer(
  kind: ScoreKind,
  pairs: [Side, Side][],
  scorer: Scorer,
  options: CompareOptions,
): Pick<ScorerComparison, 'n' | 'deltas' | 'mcnemar'> {
  if (kind === 'label') {
    // The AQUA convention: items with gold on both sides; unscored predicts Error, excluded inside.
    const gold = pairs.filter(([b, c]) => b.target !== undefined && c.target !== undefined);
    if (gold.length === 0) return { n: 0, deltas: {} };
    const label = (s: Side) => ({
      gold: String(s.target),
      pred: s.value === undefined ? ERROR_LABEL : String(s.value),
    });
    const positive = scorer.metrics?.positive ?? false;
    const deltas = pairedBootstraps(
      gold.map(([b]) => label(b)),
      gold.map(([, c]) => label(c)),
      (rows) => {
        const m = classificationMetrics(rows, { bootstrap: false, positive });
        const stats: Record<string, number | null> = { accuracy: m.accuracy, macroF1: m.macroF1 };
        if (m.binary) stats.binaryF1 = m.binary.f1;
        stats.kappa = m.kappa;
        return stats;
      },
      options.bootstrap,
    ) as Record<string, PairedDelta>;
    const mcnemar = mcnemarPaired(
      gold.map(([b]) => b.verdict === true),
      gold.map(([, c]) => c.verdict === true),
    );
    return { n: gold.length, deltas, mcnemar };
  }

  const both = pairs.filter(([b, c]) => b.value !== undefined && c.value !== undefined);
  if (both.length === 0) return { n: 0, deltas: {} };
  if (kind === 'pass') {
    const targeted = both.every(([b, c]) => typeof b.target === 'boolean' && typeof c.target === 'boolean');
    const deltas = pairedBootstraps(
      both.map(([b]) => b),
      both.map(([, c]) => c),
      (rows) => {
        const stats: Record<string, number | null> = {
          passRate: meanOrNull(rows.map((s) => Number(s.value === true))),
        };
        if (targeted) stats.accuracy = meanOrNull(rows.map((s) => Number(s.verdict === true)));
        return stats;
      },
      options.bootstrap,
    ) as Record<string, PairedDelta>;
    const right = (s: Side) => (targeted ? s.verdict === true : s.value === true);
    const mcnemar = mcnemarPaired(
      both.map(([b]) => right(b)),
      both.map(([, c]) => right(c)),
    );
    return { n: both.length, deltas, mcnemar };
  }

  const numericTargets = both.every(([b, c]) => typeof b.target === 'number' && typeof c.target === 'number');
  const binary = numericTargets && binaryTargets(both.map(([b]) => b.target));
  const deltas = pairedBootstraps(
    both.map(([b]) => b),
    both.map(([, c]) => c),
    (rows) => {
      const values = rows.map((s) => s.value as number);
      const targets = rows.map((s) => s.target as number);
      const stats: Record<string, number | null> = { mean: meanOrNull(values) };
      if (binary)
        stats.rocAuc = rocAuc(
          values,
          targets.map((t) => t === 1),
        );
      else if (numericTargets) {
        stats.mae = meanAbsoluteError(values, targets);
        stats.spearman = spearman(values, targets);
      }
      return stats;
    },
    options.bootstrap,
  ) as Record<string, PairedDelta>;
  return { n: both.length, deltas };
}

/**
 * A run's noise floor per headline metric of one scorer (the same figures as its report's
 * `reliability.noiseFloor`); undefined for a run that scored each item once.
 */
function noiseFloors(side: RunSide, name: string, scorer: Scorer): Record<string, number | null> | undefined {
  const k = side.run.suite.run?.repeats ?? 1;
  if (k <= 1) return undefined;
  const rows = new RepeatRows(scorer.kind, k);
  const target = targetReader(scorer);
  for (const result of side.results) {
    const score = result.scores[name];
    rows.add(scoreRow(result, name, scorer, target), score?.repeats, score?.tie);
  }
  return rows.figures({ ...scorer.metrics, bootstrap: false }).noiseFloor;
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

  const baseFamily = taskFor(base.run.suite);
  const candidateFamily = taskFor(candidate.run.suite);
  const baseScorers = baseFamily.scorers(base.run.suite);
  const scores: Record<string, ScorerComparison> = {};
  for (const [name, scorer] of Object.entries(candidateFamily.scorers(candidate.run.suite))) {
    const baseScorer = baseScorers[name];
    if (!baseScorer || baseScorer.kind !== scorer.kind) continue;
    const binary = scorer.kind === 'number' && binaryTargets(pairs.map(([b]) => targetReader(scorer)(b)));
    const sides = pairs.map(
      ([b, c]) => [side(b, name, baseScorer, binary), side(c, name, scorer, binary)] as [Side, Side],
    );
    const flipped: FlippedItem[] = [];
    for (const [b, c] of sides) {
      if (b.shown === c.shown) continue;
      const gold = b.result.gold ?? c.result.gold;
      flipped.push({
        itemId: b.result.itemId,
        row: b.result.row,
        input: Object.keys(b.result.input).length > 0 ? b.result.input : c.result.input,
        ...(gold !== undefined ? { gold } : {}),
        base: flippedSide(b),
        candidate: flippedSide(c),
        kind: flipKind(b, c),
      });
    }
    const compared = compareScorer(scorer.kind, sides, scorer, options);
    const noise = deltaNoise(
      compared.deltas,
      noiseFloors(base, name, baseScorer),
      noiseFloors(candidate, name, scorer),
    );
    scores[name] = { kind: scorer.kind, ...compared, flipped, ...(noise ? { noise } : {}) };
  }

  const baseCost = sum(base.results.map(resultCost));
  const candidateCost = sum(candidate.results.map(resultCost));
  return {
    base: baseHeader,
    candidate: candidateHeader,
    promptChanges: promptChanges(baseHeader.prompts, candidateHeader.prompts),
    items: {
      paired: pairs.length,
      onlyBase: baseById.size - pairs.length,
      onlyCandidate: candidateById.size - pairs.length,
    },
    primaryScorer: candidateFamily.primaryScorer(candidate.run.suite),
    scores,
    cost: { base: baseCost, candidate: candidateCost, delta: candidateCost - baseCost },
  };
}

export interface ComparisonSummary {
  baseRunId: string;
  paired: number;
  promptChanges: PromptChange[];
  scores: Record<
    string,
    {
      deltas: Record<
        string,
        { delta: number; ci: [number, number]; pValue: number; noiseFloor?: number; withinNoise?: boolean }
      >;
      mcnemarPValue?: number;
      flipped: Record<FlippedItem['kind'], number>;
    }
  >;
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
        ...(noise ? { noiseFloor: noise.floor, withinNoise: noise.withinNoise } : {}),
      };
    }
    const flipped = { fixed: 0, broken: 0, changed: 0 };
    for (const f of s.flipped) flipped[f.kind] += 1;
    scores[name] = {
      deltas,
      ...(s.mcnemar ? { mcnemarPValue: s.mcnemar.pValue } : {}),
      flipped,
    };
  }
  return { baseRunId: c.base.runId, paired: c.items.paired, promptChanges: c.promptChanges, scores };
}
