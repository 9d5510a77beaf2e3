/**
 * The summarization family's own figures, from the harsh judge's findings: how often it found
 * a factual error, hedging or an omission, and how many per summary; and the reference
 * sentences the NLI score found contradicted. Beside agreement with human labels, the
 * published figures a reader needs to judge them.
 */

import type { FamilyReportTally, ReportSection } from '../../family/types.js';
import { num } from '../../lib/format.js';
import { CompensatedSum, type CompensatedSumState, ratio } from '../../lib/metrics/index.js';
import { type ItemResult, isScored } from '../../model/model.js';
import type { Report } from '../../model/report.js';

export interface SummarizationFigures {
  /** Summaries the judge answered for. */
  judged: number;
  /** Share of judged summaries with at least one factual error. */
  factualErrorRate: number | null;
  meanFactualErrors: number | null;
  hedgingRate: number | null;
  meanKeyOmissions: number | null;
  /** Share of NLI-scored summaries contradicting at least one reference sentence. */
  contradictionRate: number | null;
}

/** Published agreement of detectors with human faithfulness labels, for scale. */
export const PUBLISHED_ANCHORS = [
  'SummEdits: GPT-4 0.824 balanced accuracy, humans ~0.909',
  'FaithBench: the best detectors near 0.50',
  'LLM-AggreFact: the best model 0.774',
];

interface JudgeDetails {
  factualErrors: string[];
  hedgingDetected: boolean;
  keyOmissions: string[];
}

/** A {@link SummarizationTally} saved. */
export interface SummarizationTallyState {
  judged: number;
  withFactualErrors: number;
  factualErrors: CompensatedSumState;
  hedged: number;
  keyOmissions: CompensatedSumState;
  nli: number;
  contradicting: number;
}

/**
 * The summarization figures as running figures, fed one result at a time: counts and
 * compensated sums (the same as a mean over every value, in the same order), never the results.
 * The family's report tally: tallies of consecutive parts of a run merge into the whole's.
 */
export class SummarizationTally implements FamilyReportTally {
  private judged = 0;
  private withFactualErrors = 0;
  private factualErrors = new CompensatedSum();
  private hedged = 0;
  private keyOmissions = new CompensatedSum();
  private nli = 0;
  private contradicting = 0;

  /** A tally of no result, or loaded from `state` (see `toState`). */
  constructor(state?: SummarizationTallyState) {
    if (!state) return;
    this.judged = state.judged;
    this.withFactualErrors = state.withFactualErrors;
    this.factualErrors = CompensatedSum.fromState(state.factualErrors);
    this.hedged = state.hedged;
    this.keyOmissions = CompensatedSum.fromState(state.keyOmissions);
    this.nli = state.nli;
    this.contradicting = state.contradicting;
  }

  add(r: ItemResult): void {
    const judge = r.scores.judge;
    if (isScored(judge)) {
      const d = judge.details as unknown as JudgeDetails;
      this.judged += 1;
      if (d.factualErrors.length > 0) this.withFactualErrors += 1;
      this.factualErrors.add(d.factualErrors.length);
      if (d.hedgingDetected) this.hedged += 1;
      this.keyOmissions.add(d.keyOmissions.length);
    }
    const nli = r.scores.nli;
    if (isScored(nli)) {
      this.nli += 1;
      if ((nli.value as number) < 1) this.contradicting += 1;
    }
  }

  /** Appends `later`, the tally of the results that come after this one's. */
  merge(later: SummarizationTally): void {
    this.judged += later.judged;
    this.withFactualErrors += later.withFactualErrors;
    this.factualErrors.merge(later.factualErrors);
    this.hedged += later.hedged;
    this.keyOmissions.merge(later.keyOmissions);
    this.nli += later.nli;
    this.contradicting += later.contradicting;
  }

  toState(): SummarizationTallyState {
    return {
      judged: this.judged,
      withFactualErrors: this.withFactualErrors,
      factualErrors: this.factualErrors.toState(),
      hedged: this.hedged,
      keyOmissions: this.keyOmissions.toState(),
      nli: this.nli,
      contradicting: this.contradicting,
    };
  }

  figures(): SummarizationFigures {
    const judged = this.judged;
    const mean = (total: CompensatedSum) => (judged === 0 ? null : total.value() / judged);
    return {
      judged,
      factualErrorRate: ratio(this.withFactualErrors, judged),
      meanFactualErrors: mean(this.factualErrors),
      hedgingRate: ratio(this.hedged, judged),
      meanKeyOmissions: mean(this.keyOmissions),
      contradictionRate: ratio(this.contradicting, this.nli),
    };
  }

  section(): ReportSection {
    return { metrics: { summarization: this.figures() } };
  }
}

export function summarizationFigures(results: readonly ItemResult[]): SummarizationFigures {
  const tally = new SummarizationTally();
  for (const result of results) tally.add(result);
  return tally.figures();
}

export function summarizationReportText(report: Report): string[] {
  const f = report.metrics.summarization as SummarizationFigures | undefined;
  if (!f) return [];
  const labelled = Object.values(report.scores).some((s) => s.metrics.rocAuc !== undefined);
  return [
    '',
    'Summarization',
    `  judge on ${f.judged} summaries: factual errors in ${num(f.factualErrorRate)} (${num(f.meanFactualErrors)} per summary), hedging in ${num(f.hedgingRate)}, ${num(f.meanKeyOmissions)} key omissions per summary`,
    `  NLI: summaries contradicting a reference sentence ${num(f.contradictionRate)}`,
    ...(labelled
      ? [`  published agreement with human labels, for scale: ${PUBLISHED_ANCHORS.join('; ')}`]
      : []),
  ];
}
