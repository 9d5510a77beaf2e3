/**
 * Self-preference of a run's scorers, when the suite names each output's producer
 * (`dataset.columns.producer`): for each scorer whose values read as numbers (numbers, passes,
 * labels with positive labels or an ordinal order), the judge's verdicts against gold by the
 * producer's model family (report.json `scores.<scorer>.bias.selfPreference`). A running,
 * mergeable tally fed the run's results in report order, like the other scorer figures.
 */
import type { Scorer } from '../family/types.js';
import type { ScoreRow, ScorerMetricOptions } from '../lib/metrics/scores.js';
import { SelfPreferenceRows, type SelfPreferenceRowsState } from '../lib/metrics/self-preference-rows.js';
import type { ItemResult, RunRecord, ScoreKind } from '../model/model.js';
import type { SelfPreferenceBias } from '../model/report.js';

/** A {@link SelfPreferenceTally} saved: each scorer's rows. */
export type SelfPreferenceTallyState = Record<string, SelfPreferenceRowsState>;

type Options = { positive?: readonly string[]; labelOrder?: readonly string[] };

/**
 * How a scorer's values read as numbers for self-preference, or undefined when they do not
 * (a label scorer with neither positive labels nor an ordinal order: a label has no direction).
 */
export function selfPreferenceOptions(
  kind: ScoreKind,
  metrics: ScorerMetricOptions = {},
): Options | undefined {
  if (kind !== 'label') return {};
  if (metrics.ordinal && metrics.labelOrder) return { labelOrder: metrics.labelOrder };
  if (metrics.positive?.length) return { positive: metrics.positive };
  return undefined;
}

/** The producer of a result's output: the producer column among the row's kept columns or its inputs. */
export function producerOf(result: ItemResult, column: string): string | undefined {
  const value = result.columns?.[column] ?? result.input[column];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/**
 * The model that judged a result for `scorer`: the backend its score names as the decider, else
 * the suite's one backend when the outputs are the run's own (not given by the dataset).
 * Undefined when it is not known (given outputs; an ensemble's vote, several backends).
 */
export function judgeOf(result: ItemResult, scorer: string, suite: RunRecord['suite']): string | undefined {
  const decidedBy = result.scores[scorer]?.decidedBy;
  if (decidedBy !== undefined && suite.backends.includes(decidedBy)) return decidedBy;
  if (suite.dataset.columns.output === undefined && suite.backends.length === 1) return suite.backends[0];
  return undefined;
}

export class SelfPreferenceTally {
  private readonly rows = new Map<string, SelfPreferenceRows>();

  private constructor(
    private readonly suite: RunRecord['suite'],
    private readonly column: string,
  ) {}

  /**
   * The tally of a suite's scorers (loaded from `state` when given), or undefined when the suite
   * names no producer column or no scorer's values read as numbers.
   */
  static of(
    suite: RunRecord['suite'],
    scorers: readonly (readonly [name: string, kind: ScoreKind, scorer: Scorer, ...rest: unknown[]])[],
    state?: SelfPreferenceTallyState,
  ): SelfPreferenceTally | undefined {
    // Optional chaining: figures are also worked out for bare suites (a family's defaults).
    const column = suite.dataset?.columns?.producer;
    if (column === undefined) return undefined;
    const tally = new SelfPreferenceTally(suite, column);
    for (const [name, kind, scorer] of scorers) {
      const options = selfPreferenceOptions(kind, scorer.metrics);
      if (!options) continue;
      const saved = state?.[name];
      tally.rows.set(
        name,
        saved ? SelfPreferenceRows.fromState(saved, options) : new SelfPreferenceRows(column, options),
      );
    }
    return tally.rows.size > 0 ? tally : undefined;
  }

  /** The next result's row for `scorer` (its value and gold target). */
  add(result: ItemResult, scorer: string, row: ScoreRow): void {
    const rows = this.rows.get(scorer);
    if (!rows || row.unscored === 'invalid_row') return;
    rows.add(producerOf(result, this.column), judgeOf(result, scorer, this.suite), row.value, row.target);
  }

  merge(later: SelfPreferenceTally): void {
    for (const [name, rows] of this.rows) {
      const more = later.rows.get(name);
      if (more) rows.merge(more);
    }
  }

  toState(): SelfPreferenceTallyState {
    return Object.fromEntries(Array.from(this.rows, ([name, rows]) => [name, rows.toState()]));
  }

  figures(scorer: string): SelfPreferenceBias | undefined {
    return this.rows.get(scorer)?.figures();
  }
}
