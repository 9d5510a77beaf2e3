/**
 * The QA family's own figures: the score by question type with CIs, how many answers the fast
 * path decided and what that saved, and — with `qa.audit` — the LLM grader's agreement with
 * the fast path on the items both decided (a check of the grader itself).
 */

import type { ReportSection } from '../../family/types.js';
import { num, usd, withInterval } from '../../lib/format.js';
import { classificationMetrics, scorerFigures } from '../../lib/metrics/index.js';
import { type ItemResult, isScored } from '../../model/model.js';
import type { MetricValue, Report } from '../../model/report.js';
import type { QaSuite } from './suite.js';

export interface QaFigures {
  byType: Record<string, { items: number; score: MetricValue }>;
  decided: { fast: number; llm: number; unscored: number; fastShare: number | null };
  /** The fast path's decisions by the rule that read the answer (`letter`, `leading-option`, `last-sentence`, …). */
  fastBy: Record<string, number>;
  /** What the fast-decided items would have cost the LLM grader, at this run's mean price per grading call. */
  savedUsd: number | null;
  audit?: {
    /** Items the fast path decided and the LLM grader scored too. */
    n: number;
    agreement: number | null;
    kappa: number | null;
    disagreements: { itemId: string; row: number; fast: number; llm: number; answer: string }[];
  };
}

const isFast = (decidedBy: string | undefined) => decidedBy?.startsWith('fast:') ?? false;

export function qaFigures(suite: QaSuite, results: readonly ItemResult[]): QaFigures {
  const reached = results.filter((r) => r.failure?.kind !== 'invalid_row');
  const byType: QaFigures['byType'] = {};
  for (const type of [...new Set(reached.map((r) => r.input.type ?? '?'))].sort()) {
    const ofType = reached.filter((r) => r.input.type === type);
    const rows = ofType.map((r) => {
      const score = r.scores.score;
      return isScored(score)
        ? { value: score.value }
        : { unscored: score?.unscored.kind ?? r.failure?.kind ?? 'internal' };
    });
    const mean = scorerFigures('number', rows).summary.metrics.mean ?? { value: null, n: 0 };
    byType[type] = { items: ofType.length, score: mean };
  }

  const decided = { fast: 0, llm: 0, unscored: 0, fastShare: null as number | null };
  const fastBy: Record<string, number> = {};
  for (const r of reached) {
    const score = r.scores.score;
    if (!isScored(score)) decided.unscored += 1;
    else if (isFast(score.decidedBy)) {
      decided.fast += 1;
      const rule = score.decidedBy!.slice('fast:'.length);
      fastBy[rule] = (fastBy[rule] ?? 0) + 1;
    } else decided.llm += 1;
  }
  if (decided.fast + decided.llm > 0) decided.fastShare = decided.fast / (decided.fast + decided.llm);

  let gradeCost = 0;
  let gradeCalls = 0;
  for (const r of results) {
    const stage = r.stages.grade;
    if (stage) {
      gradeCost += stage.costUsd + (stage.savedUsd ?? 0);
      gradeCalls += stage.calls;
    }
  }
  const figures: QaFigures = {
    byType,
    decided,
    fastBy: Object.fromEntries(Object.entries(fastBy).sort(([a], [b]) => a.localeCompare(b))),
    savedUsd: gradeCalls > 0 ? (decided.fast * gradeCost) / gradeCalls : null,
  };

  if (suite.qa.audit) {
    const pairs: { r: ItemResult; fast: number; llm: number }[] = [];
    for (const r of reached) {
      const fast = r.scores.score;
      const llm = r.scores.llm;
      if (isScored(fast) && isFast(fast.decidedBy) && isScored(llm)) {
        pairs.push({ r, fast: Number(fast.value), llm: Number(llm.value) >= 0.5 ? 1 : 0 });
      }
    }
    const m =
      pairs.length > 0
        ? classificationMetrics(
            pairs.map((p) => ({ gold: String(p.fast), pred: String(p.llm) })),
            { bootstrap: false, positive: false },
          )
        : undefined;
    figures.audit = {
      n: pairs.length,
      agreement: m?.accuracy ?? null,
      kappa: m?.kappa ?? null,
      disagreements: pairs
        .filter((p) => p.fast !== p.llm)
        .map((p) => ({
          itemId: p.r.itemId,
          row: p.r.row,
          fast: p.fast,
          llm: p.llm,
          answer: String((p.r.output as { answer?: string } | undefined)?.answer ?? ''),
        })),
    };
  }
  return figures;
}

export function qaReport(suite: QaSuite, results: readonly ItemResult[]): ReportSection {
  return { metrics: { qa: qaFigures(suite, results) } };
}

export function qaReportText(report: Report): string[] {
  const qa = report.metrics.qa as QaFigures | undefined;
  if (!qa) return [];
  const lines = ['', 'Score by question type (mean, 95% bootstrap CI)'];
  for (const [type, { items, score }] of Object.entries(qa.byType)) {
    lines.push(`  ${type.padEnd(12)} ${withInterval(score)}  (n ${score.n} of ${items})`);
  }
  const { fast, llm, unscored, fastShare } = qa.decided;
  lines.push(
    '',
    `Decided by the fast path ${fast}, by the LLM grader ${llm}${unscored > 0 ? `, unscored ${unscored}` : ''} (fast share ${num(fastShare)})`,
    ...(fast > 0 && qa.fastBy
      ? [
          `  the fast path by rule: ${Object.entries(qa.fastBy)
            .map(([rule, n]) => `${rule} ${n}`)
            .join(', ')}`,
        ]
      : []),
    `saved by the fast path: ${qa.savedUsd === null ? 'n/a (no LLM grading call to price it)' : usd(qa.savedUsd)}${qa.audit && qa.savedUsd !== null ? " (what the grader costs on the items it decided; this run's audit paid it)" : ''}`,
  );
  if (qa.audit) {
    lines.push(
      '',
      `Audit: the LLM grader on the ${qa.audit.n} items the fast path decided: agreement ${num(qa.audit.agreement)}, Cohen's kappa ${num(qa.audit.kappa)}`,
    );
    for (const d of qa.audit.disagreements.slice(0, 20)) {
      lines.push(
        `  row ${d.row} (${d.itemId}): fast ${d.fast}, LLM ${d.llm}: ${JSON.stringify(d.answer.slice(0, 120))}`,
      );
    }
  }
  return lines;
}
