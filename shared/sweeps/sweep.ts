/**
 * A sweep: the variant runs of one suite on one dataset, compared with a baseline variant on
 * the same items, ranked, put against their cost, and passed through the promotion gate.
 * `prepareSweep` makes the record both shells store when the variant runs start; once every
 * run is done, `buildSweepReport` (pure) makes the report from their results.
 */
import { createHash } from 'node:crypto';
import {
  type Condition,
  evaluateGate,
  type GateFigures,
  type GateVerdict,
  latencyOf,
  locateMetric,
  type MetricRef,
  parseCondition,
  parseMetric,
  scorerCoverage,
  withCoverageGuard,
} from '../lib/gate.js';
import { metricSpec } from '../model/metrics.js';
import { type ItemResult, type RunRecord, resultLatencyMs } from '../model/model.js';
import type { MetricValue, Report } from '../model/report.js';
import { SWEEP_SCHEMA_VERSION, type SweepRecord } from '../model/sweep-record.js';
import { taskFor } from '../registry/registry.js';
import type { Suite } from '../registry/suite.js';
import {
  type Comparison,
  type ComparisonSummary,
  compareRuns,
  comparisonSummary,
} from '../reports/compare-runs.js';
import { buildReport, SIMULATED_NOTICE } from '../reports/report.js';
import {
  replaySequentialGate,
  type SequentialOutcome,
  sequentialPlan,
  sequentialSpec,
} from './sequential.js';

/**
 * The record of a sweep whose variant runs are `runs` (in the suite's order). Its id derives
 * from the runs and what the sweep asks of them, so starting the same sweep again finds it.
 */
export function prepareSweep(
  suite: Suite,
  runs: readonly { variant: string; runId: string }[],
  options: { datasetKey: string; reportPrefix: string; now?: () => Date },
): SweepRecord {
  const variants = runs.map((r) => ({ name: r.variant, runId: r.runId }));
  const baseline = suite.baseline ?? variants[0]!.name;
  // A family may ship a gate (cleanup: the study's); the suite's own wins.
  const gate = suite.gate ?? taskFor(suite).defaultGate?.(suite);
  const fingerprint = createHash('sha256')
    .update(JSON.stringify({ variants, baseline, gate, rankBy: suite.rankBy }))
    .digest('hex')
    .slice(0, 12);
  const sweepId = `${suite.name}-sweep-${fingerprint}`;
  return {
    schemaVersion: SWEEP_SCHEMA_VERSION,
    sweepId,
    suiteName: suite.name,
    task: suite.task,
    datasetKey: options.datasetKey,
    variants,
    baseline,
    ...(gate ? { gate } : {}),
    ...(suite.rankBy ? { rankBy: suite.rankBy } : {}),
    status: 'running',
    createdAt: (options.now ?? (() => new Date()))().toISOString(),
    reportPrefix: options.reportPrefix.replaceAll('{sweepId}', sweepId),
  };
}

/** One variant's finished run. */
export interface VariantRun {
  variant: string;
  run: RunRecord;
  /** In report order. */
  results: ItemResult[];
}

export type PromotionVerdict = 'baseline' | 'promoted' | 'not promoted' | 'no gate';

export interface SweepVariant {
  name: string;
  runId: string;
  backends: string[];
  config: Record<string, string>;
  simulated: boolean;
  /** 1 = best; tied variants share a rank. Null when the ranking metric is n/a. */
  rank: number | null;
  tied: boolean;
  /** The ranking metric (with its CI when it is a scorer metric). */
  rankValue: MetricValue | null;
  /** The primary scorer's headline metrics. */
  metrics: Record<string, MetricValue>;
  /**
   * The primary scorer's coverage: the share of its items it scored (`n` the items asked). The
   * rank and the Pareto front are over each variant's own scored items: a variant of lower
   * coverage is ranked on fewer, possibly easier, items; its paired comparison and the gate are
   * over the items both it and the baseline scored. Absent in sweeps written before it was recorded.
   */
  coverage?: MetricValue;
  counts: Report['counts'];
  costUsd: number;
  per10kUsd: number | null;
  /**
   * False when the variant called a model without a price: its dollar figures leave those calls
   * out, so it is on no cost front and is shown as unpriced. Absent in sweeps written before
   * this was recorded (read as priced).
   */
  priced?: boolean;
  /** The models without a price (when not `priced`). */
  unpriced?: string[];
  latencyMs: { p50: number | null; p95: number | null };
  /**
   * Not beaten on both quality (the ranking metric) and cost per 10K by another variant. An
   * unpriced variant is never on the front (its cost is unknown), nor does it push others off.
   */
  pareto: boolean;
  /** Against the baseline on the same items (absent for the baseline itself). */
  comparison?: Pick<ComparisonSummary, 'paired' | 'promptChanges' | 'scores'> & { costDeltaUsd: number };
  gate?: GateVerdict & { required: boolean };
  /**
   * A sequential gate's figures (`gate.sequential`): the verdict it settled on, the items it
   * used and spared, and its error level. When it settled, it is the variant's verdict: the
   * fixed-sample gate is not applied to the partial results.
   */
  sequential?: SequentialOutcome;
  verdict: PromotionVerdict;
}

export interface SweepReport {
  schemaVersion: typeof SWEEP_SCHEMA_VERSION;
  sweepId: string;
  suite: string;
  task: string;
  dataset: string;
  baseline: string;
  primaryScorer: string;
  rankBy: {
    metric: string;
    better: 'higher' | 'lower';
    /** Which items the ranking figure is over (each variant's own scored items). */
    over?: string;
  };
  /** Every variant simulated, some (`mixed`), or none. */
  simulated: 'all' | 'mixed' | 'none';
  notice?: string;
  createdAt: string;
  finishedAt: string;
  /** Best first (rank, then cost per 10K, then name); variants with no ranking figure last. */
  variants: SweepVariant[];
  gate?: {
    conditions: string[];
    /** Variants that must be promoted. */
    required: string[];
    /** Required variants that were not: `assay run` exits 1 when any. */
    failedRequired: string[];
    /** Variants stopped early by anytime-valid confidence sequences; a wrong verdict has probability at most `alpha`. */
    sequential?: { alpha: number; seed: number };
  };
}

export const MIXED_NOTICE =
  'MIXED: some variants are simulated and some are real. Simulated rows (SIM) are ranked beside real ones only to show the pipeline; their figures measure nothing about a model.';

/** Which items a sweep's ranking and Pareto front are over. */
export const RANK_OVER =
  "each variant's own scored items (see its coverage); the paired comparison and the gate are over the items both it and the baseline scored";

/** Whether lower is better for a figure: a scorer metric by the metric table, the error rate. */
const lowerIsBetter = (name: string) => name === 'error_rate' || metricSpec(name)?.better === 'lower';

/** What a sweep ranks by when the suite does not say: the primary scorer's leading agreement metric. */
function defaultRankMetric(report: Report): string {
  const metrics = report.scores[report.primaryScorer]?.metrics ?? {};
  const preferred = ['accuracy', 'spearman', 'rocAuc', 'balancedAccuracy', 'passRate', 'mean'];
  return preferred.find((m) => metrics[m] !== undefined) ?? Object.keys(metrics)[0] ?? 'scored_rate';
}

function gateFigures(report: Report, results: readonly ItemResult[]): GateFigures {
  const items: GateFigures['items'][number][] = [];
  for (const result of results) {
    const latencyMs = resultLatencyMs(result);
    if (latencyMs !== undefined) items.push({ latencyMs, input: result.input });
  }
  return { report, items };
}

/** A ranking figure of a variant, by the same rules as the gate's metric names. */
function rankFigure(ref: MetricRef, figures: GateFigures): MetricValue | null {
  const { report } = figures;
  if (ref.kind === 'cost')
    return {
      // A cost that leaves unpriced calls out ranks nowhere: it is not the variant's cost.
      value: report.cost.priced === false ? null : report.cost.per10kUsd,
      n: report.counts.items - report.counts.invalidRows,
    };
  if (ref.kind === 'latency') return latencyOf(figures, ref.percentile, ref.slice);
  const located = locateMetric(ref.name, report, ref.slice);
  if ('unknown' in located) return null;
  return located.found ?? { value: located.value, n: report.counts.items - report.counts.invalidRows };
}

/** The sweep report of finished variant runs. Runs must be in the record's order, results in report order. */
export async function buildSweepReport(
  record: SweepRecord,
  runs: readonly VariantRun[],
  finishedAt: string,
): Promise<SweepReport> {
  const reports: Report[] = [];
  for (const r of runs) reports.push(await buildReport(r.run, r.results, taskFor(r.run.suite), finishedAt));
  const figures = runs.map((r, i) => gateFigures(reports[i]!, r.results));
  const baseIndex = runs.findIndex((r) => r.variant === record.baseline);
  if (baseIndex < 0)
    throw new Error(`sweep ${record.sweepId}: no run for the baseline variant ${record.baseline}`);
  const base = runs[baseIndex]!;

  const rankName = record.rankBy ?? defaultRankMetric(reports[baseIndex]!);
  const rankRef = parseMetric(rankName);
  const better: 'higher' | 'lower' =
    rankRef.kind !== 'named' || lowerIsBetter(rankRef.name.split('.').at(-1)!) ? 'lower' : 'higher';
  const sign = better === 'higher' ? 1 : -1;
  const conditions: Condition[] = (record.gate?.conditions ?? []).map(parseCondition);
  const requiredNames = record.gate
    ? record.gate.required === true
      ? runs.map((r) => r.variant).filter((n) => n !== record.baseline)
      : record.gate.required === false
        ? []
        : record.gate.required
    : [];

  const sequential = sequentialSpec(record.gate);
  const variants: SweepVariant[] = runs.map((r, i) => {
    const report = reports[i]!;
    const primary = report.scores[report.primaryScorer];
    const variant: SweepVariant = {
      name: r.variant,
      runId: r.run.runId,
      backends: r.run.suite.backends,
      config: report.config,
      simulated: report.simulated,
      rank: null,
      tied: false,
      rankValue: rankFigure(rankRef, figures[i]!),
      metrics: primary?.metrics ?? {},
      ...(primary ? { coverage: scorerCoverage(primary) } : {}),
      counts: report.counts,
      costUsd: report.cost.totalUsd,
      per10kUsd: report.cost.per10kUsd,
      priced: report.cost.priced !== false,
      ...(report.cost.priced === false ? { unpriced: report.cost.unpriced ?? [] } : {}),
      latencyMs: { p50: report.latencyMs.p50, p95: report.latencyMs.p95 },
      pareto: false,
      verdict: i === baseIndex ? 'baseline' : 'no gate',
    };
    if (i === baseIndex) return variant;
    const comparison: Comparison = compareRuns(base, r);
    const summary = comparisonSummary(comparison);
    variant.comparison = {
      paired: summary.paired,
      promptChanges: summary.promptChanges,
      scores: summary.scores,
      costDeltaUsd: comparison.cost.delta,
    };
    if (record.gate) {
      let verdict: GateVerdict | undefined;
      if (sequential) {
        variant.sequential = replaySequentialGate(
          sequentialPlan(sequential, r.run.suite),
          r.results,
          base.results,
        );
        verdict = sequentialVerdict(variant.sequential);
      }
      // Unsettled, the variant scored every item: the ordinary gate judges its full results.
      // Settled or not, a variant that left more items unscored than the baseline fails the
      // coverage guard unless a condition on coverage accepts it.
      verdict = verdict
        ? withCoverageGuard(verdict, conditions, figures[i]!, comparison.scores)
        : evaluateGate(conditions, figures[i]!, figures[baseIndex]!, comparison.scores);
      variant.gate = { ...verdict, required: requiredNames.includes(r.variant) };
      variant.verdict = verdict.promoted ? 'promoted' : 'not promoted';
    }
    return variant;
  });

  // Competition ranking (1, 1, 3): a variant's rank is one more than the variants strictly better.
  const figureOf = (v: SweepVariant) => v.rankValue?.value ?? null;
  for (const v of variants) {
    const mine = figureOf(v);
    if (mine === null) continue;
    const others = variants.filter((o) => o !== v && figureOf(o) !== null);
    v.rank = 1 + others.filter((o) => sign * figureOf(o)! > sign * mine).length;
    v.tied = others.some((o) => figureOf(o) === mine);
  }
  // The Pareto front of quality against cost per 10K: nobody at least as good on both and better
  // on one. A variant without a price has no known cost: it is not on the front. Nor is one that
  // scored fewer items than the baseline beyond chance: its quality is over the items it chose
  // to answer, not comparable with the others'.
  const costOf = (v: SweepVariant) => (v.priced === false ? null : v.per10kUsd);
  const primary = reports[baseIndex]!.primaryScorer;
  for (const v of variants) {
    const q = figureOf(v);
    const c = costOf(v);
    if (q === null || c === null || lowerCoverage(v, primary)) continue;
    v.pareto = !variants.some((o) => {
      const oq = figureOf(o);
      const oc = costOf(o);
      if (o === v || oq === null || oc === null) return false;
      const asGood = sign * oq >= sign * q && oc <= c;
      return asGood && (sign * oq > sign * q || oc < c);
    });
  }
  variants.sort(
    (a, b) =>
      (a.rank ?? Number.POSITIVE_INFINITY) - (b.rank ?? Number.POSITIVE_INFINITY) ||
      (costOf(a) ?? Number.POSITIVE_INFINITY) - (costOf(b) ?? Number.POSITIVE_INFINITY) ||
      a.name.localeCompare(b.name),
  );

  const simulatedCount = variants.filter((v) => v.simulated).length;
  const simulated = simulatedCount === 0 ? 'none' : simulatedCount === variants.length ? 'all' : 'mixed';
  const report: SweepReport = {
    schemaVersion: SWEEP_SCHEMA_VERSION,
    sweepId: record.sweepId,
    suite: record.suiteName,
    task: record.task,
    dataset: record.datasetKey,
    baseline: record.baseline,
    primaryScorer: reports[baseIndex]!.primaryScorer,
    rankBy: { metric: rankName, better, over: RANK_OVER },
    simulated,
    ...(simulated === 'all'
      ? { notice: SIMULATED_NOTICE }
      : simulated === 'mixed'
        ? { notice: MIXED_NOTICE }
        : {}),
    createdAt: record.createdAt,
    finishedAt,
    variants,
  };
  if (record.gate) {
    report.gate = {
      conditions: record.gate.conditions,
      required: requiredNames,
      failedRequired: variants.filter((v) => v.gate?.required && !v.gate.promoted).map((v) => v.name),
      ...(sequential ? { sequential: { alpha: sequential.alpha, seed: sequential.seed } } : {}),
    };
  }
  return report;
}

const figure = (x: number | null) => (x === null ? 'n/a' : Number(x.toPrecision(3)).toString());

/**
 * Whether a variant scored a smaller share of the paired items than the baseline, beyond chance
 * (the upper end of the coverage delta's 95% interval below 0): it is off the Pareto front.
 */
export function lowerCoverage(v: Pick<SweepVariant, 'comparison'>, scorer: string): boolean {
  const coverage = v.comparison?.scores[scorer]?.coverage;
  return coverage !== undefined && coverage.ci[1] < 0;
}

/**
 * The gate's verdict as a sequential gate settled it (undefined when it did not: the ordinary
 * gate judges the full run). A condition passes when its interval lies wholly on its side.
 */
export function sequentialVerdict(outcome: SequentialOutcome): GateVerdict | undefined {
  if (outcome.verdict === 'undecided') {
    if (outcome.itemsSkipped === 0) return undefined;
    // Items were spared, yet the results do not settle: they are not the results the run stopped on.
    return {
      promoted: false,
      conditions: outcome.conditions.map((c) => ({
        condition: c.condition,
        passed: false,
        value: c.mean,
        against: c.against,
        reason: `n/a: ${outcome.itemsSkipped} items were not scored, yet the results do not settle the gate (were they edited?)`,
      })),
      failed: outcome.conditions.map((c) => c.condition),
    };
  }
  const conditions = outcome.conditions.map((c) => {
    const what = c.paired ? 'paired delta (variant − baseline)' : 'rate';
    const interval = `[${figure(c.lo)}, ${figure(c.hi)}]`;
    const state =
      c.state === 'met'
        ? `lies wholly where ${c.op} ${c.against} holds: met`
        : c.state === 'failed'
          ? `lies wholly where ${c.op} ${c.against} fails: failed`
          : `straddles ${c.against}: undecided when the gate settled`;
    return {
      condition: c.condition,
      passed: c.state === 'met',
      value: c.mean,
      against: c.against,
      reason: `${what} ${figure(c.mean)} over ${c.n} items; its confidence sequence ${interval} (each at ${figure(outcome.conditionAlpha)}) ${state}`,
    };
  });
  return {
    promoted: outcome.verdict === 'promote',
    conditions,
    failed: conditions.filter((c) => !c.passed).map((c) => c.condition),
  };
}
