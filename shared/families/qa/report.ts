/**
 * The QA family's own figures: the score by question type with CIs, how many answers the fast
 * path decided and what that saved, and — with `qa.audit` — the LLM grader's agreement with
 * the fast path on the items both decided (a check of the grader itself).
 */

import type { FamilyReportTally, ReportSection } from '../../family/types.js';
import { num, usd, withInterval } from '../../lib/format.js';
import {
  addCounts,
  CodedLabelPairs,
  type CodedLabelPairsState,
  classificationMetrics,
  scorerFigures,
  ValueRows,
  type ValueRowsState,
} from '../../lib/metrics/index.js';
import { type ItemResult, isScored } from '../../model/model.js';
import type { MetricValue, Report } from '../../model/report.js';
import type { QaSuite } from './suite.js';

export interface QaFigures {
  byType: Record<string, { items: number; score: MetricValue }>;
  /** Who decided each score: the fast path, the LLM grader, or (text questions) answer matching. */
  decided: { fast: number; llm: number; matched: number; unscored: number; fastShare: number | null };
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
const isMatched = (decidedBy: string | undefined) => decidedBy?.startsWith('match:') ?? false;

/** A {@link QaTally} saved. */
export interface QaTallyState {
  types: string[];
  byType: [type: string, { items: number; scores: ValueRowsState }][];
  decided: { fast: number; llm: number; matched?: number; unscored: number };
  fastBy: Record<string, number>;
  gradeCost: number;
  gradeCalls: number;
  audit?: { pairs: CodedLabelPairsState; disagreements: NonNullable<QaFigures['audit']>['disagreements'] };
}

/**
 * The QA figures as running figures, fed one result at a time in report order: counts, sums,
 * each question type's scores as a typed column (for the mean's bootstrap CI), the audit's
 * pairs as label codes; of the results themselves only the audit's disagreements are kept.
 * The family's report tally: tallies of consecutive parts of a run merge into the whole's.
 */
export class QaTally implements FamilyReportTally {
  /** Every question type met (`?` for none), as the figures list them. */
  private readonly types = new Set<string>();
  /** Per question type as written: items, and the scores (value or unscored reason). */
  private readonly byType = new Map<string, { items: number; scores: ValueRows }>();
  private readonly decided = { fast: 0, llm: 0, matched: 0, unscored: 0 };
  private readonly fastBy: Record<string, number> = {};
  private gradeCost = 0;
  private gradeCalls = 0;
  private readonly audit?: {
    pairs: CodedLabelPairs;
    disagreements: NonNullable<QaFigures['audit']>['disagreements'];
  };

  /** A tally of no result, or loaded from `state` (see `toState`). */
  constructor(suite: QaSuite, state?: QaTallyState) {
    if (suite.qa.audit)
      this.audit = state?.audit
        ? { pairs: CodedLabelPairs.fromState(state.audit.pairs), disagreements: state.audit.disagreements }
        : { pairs: new CodedLabelPairs(), disagreements: [] };
    if (!state) return;
    for (const type of state.types) this.types.add(type);
    for (const [type, { items, scores }] of state.byType)
      this.byType.set(type, { items, scores: ValueRows.fromState(scores) });
    Object.assign(this.decided, state.decided);
    addCounts(this.fastBy, state.fastBy);
    this.gradeCost = state.gradeCost;
    this.gradeCalls = state.gradeCalls;
  }

  add(r: ItemResult): void {
    const stage = r.stages.grade;
    if (stage) {
      this.gradeCost += stage.costUsd + (stage.savedUsd ?? 0);
      this.gradeCalls += stage.calls;
    }
    if (r.failure?.kind === 'invalid_row') return;

    const score = r.scores.score;
    this.types.add(r.input.type ?? '?');
    if (r.input.type !== undefined) {
      const ofType = this.ofType(r.input.type);
      ofType.items += 1;
      ofType.scores.add(
        isScored(score)
          ? { value: score.value }
          : { unscored: score?.unscored.kind ?? r.failure?.kind ?? 'internal' },
      );
    }

    if (!isScored(score)) this.decided.unscored += 1;
    else if (isMatched(score.decidedBy)) this.decided.matched += 1;
    else if (isFast(score.decidedBy)) {
      this.decided.fast += 1;
      const rule = score.decidedBy!.slice('fast:'.length);
      this.fastBy[rule] = (this.fastBy[rule] ?? 0) + 1;
    } else this.decided.llm += 1;

    const llm = r.scores.llm;
    if (this.audit && isScored(score) && isFast(score.decidedBy) && isScored(llm)) {
      const fast = Number(score.value);
      const verdict = Number(llm.value) >= 0.5 ? 1 : 0;
      this.audit.pairs.add(String(fast), String(verdict));
      if (fast !== verdict)
        this.audit.disagreements.push({
          itemId: r.itemId,
          row: r.row,
          fast,
          llm: verdict,
          answer: String((r.output as { answer?: string } | undefined)?.answer ?? ''),
        });
    }
  }

  private ofType(type: string): { items: number; scores: ValueRows } {
    let ofType = this.byType.get(type);
    if (!ofType) {
      ofType = { items: 0, scores: new ValueRows('number') };
      this.byType.set(type, ofType);
    }
    return ofType;
  }

  /**
   * Appends `later`, the tally of the results that come after this one's: the disagreements
   * follow this tally's in report order. `savedUsd` (from the grading spend) equals one tally's
   * to within its last bits.
   */
  merge(later: QaTally): void {
    for (const type of later.types) this.types.add(type);
    for (const [type, { items, scores }] of later.byType) {
      const ofType = this.ofType(type);
      ofType.items += items;
      ofType.scores.merge(scores);
    }
    this.decided.fast += later.decided.fast;
    this.decided.llm += later.decided.llm;
    this.decided.matched += later.decided.matched;
    this.decided.unscored += later.decided.unscored;
    addCounts(this.fastBy, later.fastBy);
    this.gradeCost += later.gradeCost;
    this.gradeCalls += later.gradeCalls;
    if (this.audit && later.audit) {
      this.audit.pairs.merge(later.audit.pairs);
      for (const d of later.audit.disagreements) this.audit.disagreements.push(d);
    }
  }

  toState(): QaTallyState {
    return {
      types: [...this.types],
      byType: Array.from(this.byType, ([type, { items, scores }]) => [
        type,
        { items, scores: scores.toState() },
      ]),
      decided: { ...this.decided },
      fastBy: { ...this.fastBy },
      gradeCost: this.gradeCost,
      gradeCalls: this.gradeCalls,
      ...(this.audit
        ? { audit: { pairs: this.audit.pairs.toState(), disagreements: [...this.audit.disagreements] } }
        : {}),
    };
  }

  figures(): QaFigures {
    const byType: QaFigures['byType'] = {};
    for (const type of [...this.types].sort()) {
      // Results without a type are listed as `?` but counted under no type.
      const ofType = this.byType.get(type) ?? { items: 0, scores: new ValueRows('number') };
      const mean = scorerFigures('number', ofType.scores).summary.metrics.mean ?? { value: null, n: 0 };
      byType[type] = { items: ofType.items, score: mean };
    }
    const { fast, llm, matched, unscored } = this.decided;
    const figures: QaFigures = {
      byType,
      decided: { fast, llm, matched, unscored, fastShare: fast + llm > 0 ? fast / (fast + llm) : null },
      fastBy: Object.fromEntries(Object.entries(this.fastBy).sort(([a], [b]) => a.localeCompare(b))),
      savedUsd: this.gradeCalls > 0 ? (fast * this.gradeCost) / this.gradeCalls : null,
    };
    if (this.audit) {
      const { pairs, disagreements } = this.audit;
      const m =
        pairs.length > 0 ? classificationMetrics(pairs, { bootstrap: false, positive: false }) : undefined;
      figures.audit = {
        n: pairs.length,
        agreement: m?.accuracy ?? null,
        kappa: m?.kappa ?? null,
        disagreements,
      };
    }
    return figures;
  }

  section(): ReportSection {
    return { metrics: { qa: this.figures() } };
  }
}

export function qaFigures(suite: QaSuite, results: readonly ItemResult[]): QaFigures {
  const tally = new QaTally(suite);
  for (const result of results) tally.add(result);
  return tally.figures();
}

export function qaReportText(report: Report): string[] {
  const qa = report.metrics.qa as QaFigures | undefined;
  if (!qa) return [];
  const lines = ['', 'Score by question type (mean, 95% bootstrap CI)'];
  for (const [type, { items, score }] of Object.entries(qa.byType)) {
    lines.push(`  ${type.padEnd(12)} ${withInterval(score)}  (n ${score.n} of ${items})`);
  }
  const { fast, llm, matched, unscored, fastShare } = qa.decided;
  lines.push(
    '',
    `Decided by the fast path ${fast}, by the LLM grader ${llm}${matched ? `, by matching the acceptable answers ${matched}` : ''}${unscored > 0 ? `, unscored ${unscored}` : ''} (fast share ${num(fastShare)})`,
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
