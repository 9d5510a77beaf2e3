/**
 * The cleanup family's own figures: the `I mean` rates and spelling accuracy over the tagged
 * items, latency per pass (p50 / p95), the edits made by kind with the content-change rate,
 * and, for items with a heuristics fixture, the heuristic alignment figures and the combined
 * ranking score (1 − w)·hybrid + w·heuristic.
 */

import type { ReportSection } from '../../family/types.js';
import { ms, num } from '../../lib/format.js';
import { meanOrNull, ratio, summarizeLatency } from '../../lib/metrics/index.js';
import { type ItemResult, isScored, resultLatencyMs } from '../../model/model.js';
import type { LatencySummary, Report } from '../../model/report.js';
import { classifyEdits, heuristicFigures, iMeanRates, spellingAccuracy } from './metrics.js';
import type { CleanupOutput } from './output.js';
import { type CleanupSuite, type DecisionSpan, heuristicsFixtureSchema } from './suite.js';

export interface CleanupFigures {
  iMean: { literalFalsePositiveRate: number | null; correctionFalseNegativeRate: number | null };
  spellingAccuracy: number | null;
  latencyMs: { draft: LatencySummary; audit: LatencySummary; total: LatencySummary };
  edits: {
    fillerRemoved: number;
    selfRepairResolved: number;
    contentChanged: number;
    /** Share of the items with a cleaned text in which some content changed. */
    contentChangeRate: number | null;
  };
  heuristic: {
    items: number;
    exactMatchRate: number | null;
    tokenF1Avg: number | null;
    ruleMatchAvg: number | null;
    decisionPrecision: number | null;
    decisionRecall: number | null;
    combined: number | null;
  };
  /** The weight used: the suite's, or 0 when no item has a fixture. */
  heuristicWeight: number;
  /** (1 − w)·hybrid + w·heuristic: the figure a cleanup sweep ranks by (rankBy "cleanup.combinedRanking"). */
  combinedRanking: number | null;
}

export function cleanupFigures(suite: CleanupSuite, results: readonly ItemResult[]): CleanupFigures {
  const done = results.filter((r) => r.output !== undefined);
  const cleanedOf = (r: ItemResult) => (r.output as CleanupOutput).cleaned ?? '';
  const tagged = done.map((r) => ({
    tags: JSON.parse(r.input.tags ?? '[]') as string[],
    cleaned: cleanedOf(r),
    ...(r.input.spelling_expected ? { spellingExpected: r.input.spelling_expected } : {}),
  }));

  const stageMs = (stage: string) =>
    done.flatMap((r) => (r.stages[stage] ? [r.stages[stage]!.latencyMs] : []));
  const totals = done.flatMap((r) => resultLatencyMs(r) ?? []);

  const edits = { fillerRemoved: 0, selfRepairResolved: 0, contentChanged: 0 };
  let changedItems = 0;
  let withText = 0;
  for (const r of done) {
    const cleaned = (r.output as CleanupOutput).cleaned;
    if (cleaned === undefined) continue;
    withText += 1;
    const e = classifyEdits(r.input.transcript ?? '', cleaned);
    edits.fillerRemoved += e.fillerRemoved;
    edits.selfRepairResolved += e.selfRepairResolved;
    edits.contentChanged += e.contentChanged;
    if (e.contentChanged > 0) changedItems += 1;
  }

  const heuristics = done.flatMap((r) => {
    if (!r.input.heuristics) return [];
    const fixture = heuristicsFixtureSchema.parse(JSON.parse(r.input.heuristics));
    const decisions: DecisionSpan[] = (r.output as CleanupOutput).decisions ?? [];
    return [heuristicFigures({ fixture, expected: r.gold ?? '', cleaned: cleanedOf(r), decisions })];
  });
  const sum = (pick: (h: (typeof heuristics)[number]) => number) =>
    heuristics.reduce((a, h) => a + pick(h), 0);
  const heuristicCombined = meanOrNull(heuristics.map((h) => h.combined));

  const hybrids = results.flatMap((r) => {
    const s = r.scores.hybrid;
    return isScored(s) ? [Number(s.value)] : [];
  });
  const hybrid = meanOrNull(hybrids);
  const w = heuristics.length > 0 ? suite.cleanup.heuristicWeight : 0;

  return {
    iMean: iMeanRates(tagged),
    spellingAccuracy: spellingAccuracy(tagged),
    latencyMs: {
      draft: summarizeLatency(stageMs('draft')),
      audit: summarizeLatency(stageMs('audit')),
      total: summarizeLatency(totals),
    },
    edits: { ...edits, contentChangeRate: ratio(changedItems, withText) },
    heuristic: {
      items: heuristics.length,
      exactMatchRate: meanOrNull(heuristics.map((h) => h.exactMatch)),
      tokenF1Avg: meanOrNull(heuristics.map((h) => h.tokenF1)),
      ruleMatchAvg: meanOrNull(heuristics.map((h) => h.ruleMatch)),
      decisionPrecision: ratio(
        sum((h) => h.decisionsMatched),
        sum((h) => h.decisionsMade),
      ),
      decisionRecall: ratio(
        sum((h) => h.decisionsMatched),
        sum((h) => h.decisionsExpected),
      ),
      combined: heuristicCombined,
    },
    heuristicWeight: w,
    combinedRanking: hybrid === null ? null : (1 - w) * hybrid + w * (heuristicCombined ?? 0),
  };
}

export function cleanupReport(suite: CleanupSuite, results: readonly ItemResult[]): ReportSection {
  return { metrics: { cleanup: cleanupFigures(suite, results) } };
}

export function cleanupReportText(report: Report): string[] {
  const c = report.metrics.cleanup as CleanupFigures | undefined;
  if (!c) return [];
  const { draft, audit, total } = c.latencyMs;
  const h = c.heuristic;
  return [
    '',
    'Cleanup',
    `  I mean: literal false-positive rate ${num(c.iMean.literalFalsePositiveRate)}, correction false-negative rate ${num(c.iMean.correctionFalseNegativeRate)}`,
    `  spelling disambiguation accuracy ${num(c.spellingAccuracy)}`,
    `  latency p50 / p95: draft ${ms(draft.p50)} / ${ms(draft.p95)}, audit ${ms(audit.p50)} / ${ms(audit.p95)}, total ${ms(total.p50)} / ${ms(total.p95)}`,
    `  edits: ${c.edits.fillerRemoved} fillers removed, ${c.edits.selfRepairResolved} self-repairs resolved, ${c.edits.contentChanged} content changes (items with a content change: ${num(c.edits.contentChangeRate)})`,
    h.items === 0
      ? '  heuristics: no item has a fixture'
      : `  heuristics on ${h.items} items: exact ${num(h.exactMatchRate)}, token F1 ${num(h.tokenF1Avg)}, rules ${num(h.ruleMatchAvg)}, decisions P ${num(h.decisionPrecision)} R ${num(h.decisionRecall)}, combined ${num(h.combined)}`,
    `  combined ranking (w ${c.heuristicWeight}): ${num(c.combinedRanking)}`,
  ];
}
