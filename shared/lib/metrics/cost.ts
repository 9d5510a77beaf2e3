/**
 * Cost roll-up for a run. "Cost per 10K" is the seed project's definition: total cost / items ×
 * 10,000, where items is the number of dataset items the run covered (pass the run's item count,
 * not the number of provider calls).
 */
import type { TokenUsage } from '../../model/provider.js';
import type { CostSummary, StageCost } from '../../model/report.js';
import { CompensatedSum } from './stats.js';

export interface CostItem {
  costUsd: number;
  usage: TokenUsage;
  /** Pipeline stage (e.g. `classify`, `repair`, `audit`); `default` when absent. */
  stage?: string;
  /** Provider calls this entry stands for (default 1), e.g. a per-item `StageSpend.calls`. */
  calls?: number;
}

export const DEFAULT_COST_STAGE = 'default';

/** Sums spend and tokens, overall and per stage (stages in order of first appearance). */
export function costSummary(items: readonly CostItem[], itemCount: number): CostSummary {
  const tally = new CostTally();
  for (const item of items) tally.add(item);
  return tally.summary(itemCount);
}

/** {@link costSummary} one spend at a time, holding only the running sums (a stream of results). */
export class CostTally {
  private readonly total = new CompensatedSum();
  private readonly tokens: TokenUsage = { input: 0, output: 0, cached: 0 };
  private readonly stages = new Map<string, { usd: CompensatedSum; calls: number; tokens: TokenUsage }>();

  add(item: CostItem): void {
    const name = item.stage ?? DEFAULT_COST_STAGE;
    let stage = this.stages.get(name);
    if (!stage) {
      stage = { usd: new CompensatedSum(), calls: 0, tokens: { input: 0, output: 0, cached: 0 } };
      this.stages.set(name, stage);
    }
    this.total.add(item.costUsd);
    stage.usd.add(item.costUsd);
    stage.calls += item.calls ?? 1;
    addTokens(this.tokens, item.usage);
    addTokens(stage.tokens, item.usage);
  }

  summary(itemCount: number): CostSummary {
    const totalUsd = this.total.value();
    const byStage: Record<string, StageCost> = {};
    for (const [name, stage] of this.stages) {
      byStage[name] = { usd: stage.usd.value(), calls: stage.calls, tokens: { ...stage.tokens } };
    }
    const perItemUsd = itemCount > 0 ? totalUsd / itemCount : null;
    return {
      totalUsd,
      per10kUsd: perItemUsd === null ? null : perItemUsd * 10_000,
      perItemUsd,
      tokens: { ...this.tokens },
      byStage,
    };
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
