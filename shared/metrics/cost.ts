/**
 * Cost roll-up for a run. "Cost per 10K" is the seed project's definition: total cost / items ×
 * 10,000, where items is the number of dataset items the run covered (pass the run's item count,
 * not the number of provider calls).
 */
import type { TokenUsage } from '../providers/types.js';
import { sum } from './stats.js';

export interface CostItem {
  costUsd: number;
  usage: TokenUsage;
  /** Pipeline stage (e.g. `classify`, `repair`, `audit`); `default` when absent. */
  stage?: string;
  /** Provider calls this entry stands for (default 1), e.g. a per-item `StageSpend.calls`. */
  calls?: number;
}

export interface StageCost {
  usd: number;
  calls: number;
  tokens: TokenUsage;
}

export interface CostSummary {
  totalUsd: number;
  /** totalUsd / itemCount × 10,000; null when itemCount is 0. */
  per10kUsd: number | null;
  /** totalUsd / itemCount; null when itemCount is 0. */
  perItemUsd: number | null;
  tokens: TokenUsage;
  byStage: Record<string, StageCost>;
}

export const DEFAULT_COST_STAGE = 'default';

/** Sums spend and tokens, overall and per stage (stages in order of first appearance). */
export function costSummary(items: readonly CostItem[], itemCount: number): CostSummary {
  const totalUsd = sum(items.map((i) => i.costUsd));
  const stages = new Map<string, CostItem[]>();
  for (const item of items) {
    const stage = item.stage ?? DEFAULT_COST_STAGE;
    const list = stages.get(stage);
    if (list) list.push(item);
    else stages.set(stage, [item]);
  }
  const byStage: Record<string, StageCost> = {};
  for (const [stage, list] of stages) {
    byStage[stage] = {
      usd: sum(list.map((i) => i.costUsd)),
      calls: list.reduce((s, i) => s + (i.calls ?? 1), 0),
      tokens: sumTokens(list),
    };
  }
  const perItemUsd = itemCount > 0 ? totalUsd / itemCount : null;
  return {
    totalUsd,
    per10kUsd: perItemUsd === null ? null : perItemUsd * 10_000,
    perItemUsd,
    tokens: sumTokens(items),
    byStage,
  };
}

function sumTokens(items: readonly CostItem[]): TokenUsage {
  const tokens: TokenUsage = { input: 0, output: 0, cached: 0 };
  for (const { usage } of items) {
    tokens.input += usage.input;
    tokens.output += usage.output;
    tokens.cached += usage.cached;
  }
  return tokens;
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
