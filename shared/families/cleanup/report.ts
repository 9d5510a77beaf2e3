/**
 * The cleanup family's own figures: the `I mean` rates and spelling accuracy over the tagged
 * items, latency per pass (p50 / p95), the edits made by kind with the content-change rate,
 * and, for items with a heuristics fixture, the heuristic alignment figures and the combined
 * ranking score (1 − w)·hybrid + w·heuristic.
 */

import type { FamilyReportTally, ReportSection } from '../../family/types.js';
import { ms, num } from '../../lib/format.js';
import {
  CompensatedSum,
  type CompensatedSumState,
  type NumberArray,
  NumberColumn,
  ratio,
  summarizeLatency,
} from '../../lib/metrics/index.js';
import { type ItemResult, isScored, resultLatencyMs } from '../../model/model.js';
import type { LatencySummary, Report } from '../../model/report.js';
import { classifyEdits, heuristicFigures, TaggedCounts } from './metrics.js';
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

/** A {@link CleanupTally} saved. */
export interface CleanupTallyState {
  tagged: Pick<
    TaggedCounts,
    'literal' | 'literalRemoved' | 'correction' | 'correctionKept' | 'spelling' | 'spellingRight'
  >;
  latency: Record<'draft' | 'audit' | 'total', NumberArray>;
  edits: { fillerRemoved: number; selfRepairResolved: number; contentChanged: number };
  changedItems: number;
  withText: number;
  heuristic: {
    items: number;
    exactMatch: CompensatedSumState;
    tokenF1: CompensatedSumState;
    ruleMatch: CompensatedSumState;
    combined: CompensatedSumState;
    decisionsMatched: number;
    decisionsMade: number;
    decisionsExpected: number;
  };
  hybrids: number;
  hybridSum: CompensatedSumState;
}

/**
 * The cleanup figures as running figures, fed one result at a time in report order: counts,
 * compensated sums (the same as a mean over every value, in the same order), and the
 * latencies as typed columns (their percentiles need every value); never the results. The
 * family's report tally: tallies of consecutive parts of a run merge into the whole's.
 */
export class CleanupTally implements FamilyReportTally {
  private readonly tagged = new TaggedCounts();
  private readonly latency = {
    draft: new NumberColumn(),
    audit: new NumberColumn(),
    total: new NumberColumn(),
  };
  private readonly edits = { fillerRemoved: 0, selfRepairResolved: 0, contentChanged: 0 };
  private changedItems = 0;
  private withText = 0;
  private readonly heuristic = {
    items: 0,
    exactMatch: new CompensatedSum(),
    tokenF1: new CompensatedSum(),
    ruleMatch: new CompensatedSum(),
    combined: new CompensatedSum(),
    decisionsMatched: 0,
    decisionsMade: 0,
    decisionsExpected: 0,
  };
  private hybrids = 0;
  private hybridSum = new CompensatedSum();

  /** A tally of no result, or loaded from `state` (see `toState`). */
  constructor(
    private readonly suite: CleanupSuite,
    state?: CleanupTallyState,
  ) {
    if (!state) return;
    Object.assign(this.tagged, state.tagged);
    for (const pass of PASSES) this.latency[pass] = NumberColumn.fromState(state.latency[pass]);
    Object.assign(this.edits, state.edits);
    this.changedItems = state.changedItems;
    this.withText = state.withText;
    const h = state.heuristic;
    Object.assign(this.heuristic, {
      ...h,
      exactMatch: CompensatedSum.fromState(h.exactMatch),
      tokenF1: CompensatedSum.fromState(h.tokenF1),
      ruleMatch: CompensatedSum.fromState(h.ruleMatch),
      combined: CompensatedSum.fromState(h.combined),
    });
    this.hybrids = state.hybrids;
    this.hybridSum = CompensatedSum.fromState(state.hybridSum);
  }

  add(r: ItemResult): void {
    const s = r.scores.hybrid;
    if (isScored(s)) {
      this.hybrids += 1;
      this.hybridSum.add(Number(s.value));
    }
    if (r.output === undefined) return;
    const output = r.output as CleanupOutput;
    this.tagged.add({
      tags: JSON.parse(r.input.tags ?? '[]') as string[],
      cleaned: output.cleaned ?? '',
      ...(r.input.spelling_expected ? { spellingExpected: r.input.spelling_expected } : {}),
    });

    for (const stage of ['draft', 'audit'] as const) {
      const timed = r.stages[stage];
      if (timed) this.latency[stage].push(timed.latencyMs);
    }
    const total = resultLatencyMs(r);
    if (total !== undefined) this.latency.total.push(total);

    if (output.cleaned !== undefined) {
      this.withText += 1;
      const e = classifyEdits(r.input.transcript ?? '', output.cleaned);
      this.edits.fillerRemoved += e.fillerRemoved;
      this.edits.selfRepairResolved += e.selfRepairResolved;
      this.edits.contentChanged += e.contentChanged;
      if (e.contentChanged > 0) this.changedItems += 1;
    }

    if (r.input.heuristics) {
      const fixture = heuristicsFixtureSchema.parse(JSON.parse(r.input.heuristics));
      const decisions: DecisionSpan[] = output.decisions ?? [];
      const h = heuristicFigures({
        fixture,
        expected: r.gold ?? '',
        cleaned: output.cleaned ?? '',
        decisions,
      });
      const sums = this.heuristic;
      sums.items += 1;
      sums.exactMatch.add(h.exactMatch);
      sums.tokenF1.add(h.tokenF1);
      sums.ruleMatch.add(h.ruleMatch);
      sums.combined.add(h.combined);
      sums.decisionsMatched += h.decisionsMatched;
      sums.decisionsMade += h.decisionsMade;
      sums.decisionsExpected += h.decisionsExpected;
    }
  }

  /**
   * Appends `later`, the tally of the results that come after this one's. The heuristic means
   * and the hybrid's (so the combined ranking) equal one tally's to within their last bits.
   */
  merge(later: CleanupTally): void {
    this.tagged.merge(later.tagged);
    for (const pass of PASSES) this.latency[pass].merge(later.latency[pass]);
    this.edits.fillerRemoved += later.edits.fillerRemoved;
    this.edits.selfRepairResolved += later.edits.selfRepairResolved;
    this.edits.contentChanged += later.edits.contentChanged;
    this.changedItems += later.changedItems;
    this.withText += later.withText;
    const h = this.heuristic;
    const other = later.heuristic;
    h.items += other.items;
    h.exactMatch.merge(other.exactMatch);
    h.tokenF1.merge(other.tokenF1);
    h.ruleMatch.merge(other.ruleMatch);
    h.combined.merge(other.combined);
    h.decisionsMatched += other.decisionsMatched;
    h.decisionsMade += other.decisionsMade;
    h.decisionsExpected += other.decisionsExpected;
    this.hybrids += later.hybrids;
    this.hybridSum.merge(later.hybridSum);
  }

  toState(): CleanupTallyState {
    const h = this.heuristic;
    const { literal, literalRemoved, correction, correctionKept, spelling, spellingRight } = this.tagged;
    return {
      tagged: { literal, literalRemoved, correction, correctionKept, spelling, spellingRight },
      latency: {
        draft: this.latency.draft.toState(),
        audit: this.latency.audit.toState(),
        total: this.latency.total.toState(),
      },
      edits: { ...this.edits },
      changedItems: this.changedItems,
      withText: this.withText,
      heuristic: {
        ...h,
        exactMatch: h.exactMatch.toState(),
        tokenF1: h.tokenF1.toState(),
        ruleMatch: h.ruleMatch.toState(),
        combined: h.combined.toState(),
      },
      hybrids: this.hybrids,
      hybridSum: this.hybridSum.toState(),
    };
  }

  figures(): CleanupFigures {
    const h = this.heuristic;
    const mean = (total: CompensatedSum, n: number) => (n === 0 ? null : total.value() / n);
    const heuristicCombined = mean(h.combined, h.items);
    const hybrid = mean(this.hybridSum, this.hybrids);
    const w = h.items > 0 ? this.suite.cleanup.heuristicWeight : 0;
    return {
      iMean: this.tagged.iMeanRates(),
      spellingAccuracy: this.tagged.spellingAccuracy(),
      latencyMs: {
        draft: summarizeLatency(this.latency.draft.values()),
        audit: summarizeLatency(this.latency.audit.values()),
        total: summarizeLatency(this.latency.total.values()),
      },
      edits: { ...this.edits, contentChangeRate: ratio(this.changedItems, this.withText) },
      heuristic: {
        items: h.items,
        exactMatchRate: mean(h.exactMatch, h.items),
        tokenF1Avg: mean(h.tokenF1, h.items),
        ruleMatchAvg: mean(h.ruleMatch, h.items),
        decisionPrecision: ratio(h.decisionsMatched, h.decisionsMade),
        decisionRecall: ratio(h.decisionsMatched, h.decisionsExpected),
        combined: heuristicCombined,
      },
      heuristicWeight: w,
      combinedRanking: hybrid === null ? null : (1 - w) * hybrid + w * (heuristicCombined ?? 0),
    };
  }

  section(): ReportSection {
    return { metrics: { cleanup: this.figures() } };
  }
}

const PASSES = ['draft', 'audit', 'total'] as const;

export function cleanupFigures(suite: CleanupSuite, results: readonly ItemResult[]): CleanupFigures {
  const tally = new CleanupTally(suite);
  for (const result of results) tally.add(result);
  return tally.figures();
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
