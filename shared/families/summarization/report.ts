/**
 * The summarization family's own figures, from the harsh judge's findings: how often it found
 * a factual error, hedging or an omission, and how many per summary; and the reference
 * sentences the NLI score found contradicted. Beside agreement with human labels, the
 * published figures a reader needs to judge them.
 */

import type { ReportSection } from '../../family/types.js';
import { num } from '../../lib/format.js';
import { meanOrNull, ratio } from '../../lib/metrics/index.js';
import { type ItemResult, isScored } from '../../model/model.js';
import type { Report } from '../../model/report.js';
import type { SummarizationSuite } from './suite.js';

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

export function summarizationFigures(results: readonly ItemResult[]): SummarizationFigures {
  const judged = results
    .map((r) => r.scores.judge)
    .filter(isScored)
    .map((s) => s.details as unknown as JudgeDetails);
  const nli = results.map((r) => r.scores.nli).filter(isScored);
  const count = (test: (d: JudgeDetails) => boolean) => judged.filter(test).length;
  return {
    judged: judged.length,
    factualErrorRate: ratio(
      count((d) => d.factualErrors.length > 0),
      judged.length,
    ),
    meanFactualErrors: meanOrNull(judged.map((d) => d.factualErrors.length)),
    hedgingRate: ratio(
      count((d) => d.hedgingDetected),
      judged.length,
    ),
    meanKeyOmissions: meanOrNull(judged.map((d) => d.keyOmissions.length)),
    contradictionRate: ratio(nli.filter((s) => (s.value as number) < 1).length, nli.length),
  };
}

export function summarizationReport(
  _suite: SummarizationSuite,
  results: readonly ItemResult[],
): ReportSection {
  return { metrics: { summarization: summarizationFigures(results) } };
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
