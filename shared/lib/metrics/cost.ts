/**
 * Cost roll-up for a run. "Cost per 10K" is the seed project's definition: total cost / items ×
 * 10,000, where items is the number of dataset items the run covered (pass the run's item count,
 * not the number of provider calls).
 */
import type { TokenUsage } from '../../model/provider.js';
import type { CostSummary, StageCost } from '../../model/report.js';
import { CompensatedSum, type CompensatedSumState } from './stats.js';

export interface CostItem {
  costUsd: number;
  usage: TokenUsage;
  /** Pipeline stage (e.g. `classify`, `repair`, `audit`); `default` when absent. */
  stage?: string;
  /** Provider calls this entry stands for (default 1), e.g. a per-item `StageSpend.calls`. */
  calls?: number;
  /** Models whose calls in this entry had no price: their cost is unknown, not 0. */
  unpriced?: readonly string[];
}

export const DEFAULT_COST_STAGE = 'default';

/** Sums spend and tokens, overall and per stage (stages in order of first appearance). */
export function costSummary(items: readonly CostItem[], itemCount: number): CostSummary {
  const tally = new CostTally();
  for (const item of items) tally.add(item);
  return tally.summary(itemCount);
}

/** A {@link CostTally} saved: the total, the tokens, and each stage's in order of first appearance. */
export interface CostTallyState {
  total: CompensatedSumState;
  tokens: TokenUsage;
  stages: [
    name: string,
    { usd: CompensatedSumState; calls: number; tokens: TokenUsage; unpriced?: string[] },
  ][];
  /** Absent in tallies saved before unpriced models were tracked (every call was taken as priced). */
  unpriced?: string[];
}

interface StageTally {
  usd: CompensatedSum;
  calls: number;
  tokens: TokenUsage;
  unpriced: Set<string>;
}

/** {@link costSummary} one spend at a time, holding only the running sums (a stream of results). */
export class CostTally {
  private total = new CompensatedSum();
  private readonly tokens: TokenUsage = { input: 0, output: 0, cached: 0 };
  private readonly stages = new Map<string, StageTally>();
  private readonly unpriced = new Set<string>();

  add(item: CostItem): void {
    const stage = this.stage(item.stage ?? DEFAULT_COST_STAGE);
    this.total.add(item.costUsd);
    stage.usd.add(item.costUsd);
    stage.calls += item.calls ?? 1;
    addTokens(this.tokens, item.usage);
    addTokens(stage.tokens, item.usage);
    for (const model of item.unpriced ?? []) {
      this.unpriced.add(model);
      stage.unpriced.add(model);
    }
  }

  /**
   * Appends `later`, the spend that comes after this one's. Token and call counts are exact;
   * the dollar sums equal one tally's to within their last bits (see `CompensatedSum.merge`).
   */
  merge(later: CostTally): void {
    this.total.merge(later.total);
    addTokens(this.tokens, later.tokens);
    for (const [name, spent] of later.stages) {
      const stage = this.stage(name);
      stage.usd.merge(spent.usd);
      stage.calls += spent.calls;
      addTokens(stage.tokens, spent.tokens);
      for (const model of spent.unpriced) stage.unpriced.add(model);
    }
    for (const model of later.unpriced) this.unpriced.add(model);
  }

  private stage(name: string): StageTally {
    let stage = this.stages.get(name);
    if (!stage) {
      stage = {
        usd: new CompensatedSum(),
        calls: 0,
        tokens: { input: 0, output: 0, cached: 0 },
        unpriced: new Set(),
      };
      this.stages.set(name, stage);
    }
    return stage;
  }

  summary(itemCount: number): CostSummary {
    const totalUsd = this.total.value();
    const byStage: Record<string, StageCost> = {};
    for (const [name, stage] of this.stages) {
      byStage[name] = {
        usd: stage.usd.value(),
        calls: stage.calls,
        tokens: { ...stage.tokens },
        ...(stage.unpriced.size > 0 ? { priced: false as const } : {}),
      };
    }
    const perItemUsd = itemCount > 0 ? totalUsd / itemCount : null;
    return {
      totalUsd,
      per10kUsd: perItemUsd === null ? null : perItemUsd * 10_000,
      perItemUsd,
      tokens: { ...this.tokens },
      byStage,
      priced: this.unpriced.size === 0,
      unpriced: [...this.unpriced].sort(),
    };
  }

  toState(): CostTallyState {
    return {
      total: this.total.toState(),
      tokens: { ...this.tokens },
      stages: Array.from(this.stages, ([name, stage]) => [
        name,
        {
          usd: stage.usd.toState(),
          calls: stage.calls,
          tokens: { ...stage.tokens },
          unpriced: [...stage.unpriced],
        },
      ]),
      unpriced: [...this.unpriced],
    };
  }

  static fromState(state: CostTallyState): CostTally {
    const tally = new CostTally();
    tally.total = CompensatedSum.fromState(state.total);
    addTokens(tally.tokens, state.tokens);
    for (const [name, stage] of state.stages) {
      tally.stages.set(name, {
        usd: CompensatedSum.fromState(stage.usd),
        calls: stage.calls,
        tokens: { ...stage.tokens },
        unpriced: new Set(stage.unpriced ?? []),
      });
    }
    for (const model of state.unpriced ?? []) tally.unpriced.add(model);
    return tally;
  }
}

function addTokens(into: TokenUsage, usage: TokenUsage): void {
  into.input += usage.input;
  into.output += usage.output;
  into.cached += usage.cached;
}

/** One point of the accuracy/cost trade-off: what a policy would have scored and cost. */
export interface CostPoint {
  policy: string;
  n: number;
  accuracy: number | null;
  macroF1: number | null;
  binaryF1: number | null;
  costUsd: number;
  per10kUsd: number | null;
}
