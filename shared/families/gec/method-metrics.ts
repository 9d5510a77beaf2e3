/**
 * Per-method report figures, computed from the results alone (their `details` and per-stage
 * spend): escalation rate and routes, ensemble members, re-fusion of modular sub-scores with
 * each rule set, agent tool use, and for every method accuracy against cost.
 */

import {
  type CostPoint,
  classificationMetrics,
  type LabelPair,
  LabelPairCounts,
} from '../../lib/metrics/index.js';
import { type ItemResult, isScored, resultCost, type StageSpend } from '../../model/model.js';
import type { ResultStream } from '../../model/report-order.js';
import type { Vote } from './ensemble.js';
import type { EscalationDetails } from './escalation.js';
import { FUSION_INPUTS, FUSIONS, fuse, type SubScores } from './fusion.js';
import type { GecSuite } from './suite.js';

/** The GEC family's one scorer: the judge's label against the gold label. */
export const LABEL_SCORER = 'label';

/** Whether a result counts for metrics: scored or failed after reaching a model. */
function isJudged(r: ItemResult): boolean {
  return r.gold !== undefined && r.failure?.kind !== 'invalid_row';
}

/** Stages are summed in name order: the same total, to the last bit, in either shell. */
function spend(result: ItemResult, stage: (name: string) => boolean): number {
  return Object.keys(result.stages)
    .filter(stage)
    .sort()
    .reduce((sum, name) => sum + (result.stages[name] as StageSpend).costUsd, 0);
}

function point(
  policy: string,
  pairs: LabelPair[] | LabelPairCounts,
  costUsd: number,
  items: number,
): CostPoint {
  const m = classificationMetrics(pairs, { bootstrap: false });
  return {
    policy,
    n: m.n,
    accuracy: m.accuracy,
    macroF1: m.macroF1,
    binaryF1: m.binary?.f1 ?? null,
    costUsd,
    per10kUsd: items > 0 ? (costUsd / items) * 10_000 : null,
  };
}

/** The judge's label of a result, or `Error` (the AQUA convention) when it has none. */
export function predictedLabel(r: ItemResult): string {
  const score = r.scores[LABEL_SCORER];
  return isScored(score) ? String(score.value) : 'Error';
}

/**
 * The method's figures, from the results in report order. The overall point is counted as the
 * results stream by; only the methods whose figures read each item's details (escalation,
 * ensemble, modular, agent) keep the judged results.
 */
export async function methodMetrics(
  suite: GecSuite,
  results: ResultStream,
): Promise<Record<string, unknown>> {
  const keep = suite.method !== 'legacy' && suite.method !== 'baseline';
  const rows: ItemResult[] = [];
  const pairs = new LabelPairCounts();
  let cost = 0;
  let judged = 0;
  for await (const r of results) {
    if (!isJudged(r)) continue;
    judged += 1;
    pairs.add(r.gold!, predictedLabel(r));
    cost += resultCost(r);
    if (keep) rows.push(r);
  }
  const overall = point(suite.method, pairs, cost, judged);
  switch (suite.method) {
    case 'escalation':
      return escalationMetrics(rows, overall);
    case 'ensemble':
      return ensembleMetrics(rows, overall);
    case 'modular':
      return modularMetrics(rows, overall);
    case 'agent':
      return agentMetrics(rows, overall);
    default:
      return { accuracyVsCost: [overall] };
  }
}

function count(counts: Record<string, number>, key: string) {
  counts[key] = (counts[key] ?? 0) + 1;
}

function escalationMetrics(rows: ItemResult[], overall: CostPoint) {
  const routed = rows.filter((r) => r.details?.path !== undefined);
  const details = routed.map((r) => r.details as unknown as EscalationDetails);
  const flags: Record<string, number> = {};
  const paths: Record<string, number> = {};
  for (const d of details) {
    for (const flag of d.flags) count(flags, flag);
    count(paths, d.path.map((step) => step.stage).join('→'));
  }
  const isSmall = (stage: string) => stage === 'small' || stage === 'small.repair';
  const smallOnly = point(
    'small model only',
    routed.map((r, i) => ({ gold: r.gold!, pred: details[i]!.path[0]!.label })),
    routed.reduce((s, r) => s + spend(r, isSmall), 0),
    routed.length,
  );
  const share = (n: number) => (routed.length > 0 ? n / routed.length : null);
  return {
    items: routed.length,
    escalationRate: share(details.filter((d) => d.escalated).length),
    finalizerRate: share(details.filter((d) => d.finalized).length),
    flags,
    paths,
    accuracyVsCost: [smallOnly, overall],
  };
}

function ensembleMetrics(rows: ItemResult[], overall: CostPoint) {
  const voted = rows.filter((r) => Array.isArray(r.details?.votes));
  const votesOf = (r: ItemResult) => r.details!.votes as Vote[];
  const backends = voted[0] ? votesOf(voted[0]).map((v) => v.backend) : [];
  const members = backends.map((backend, i) =>
    point(
      backend,
      voted.map((r) => ({ gold: r.gold!, pred: votesOf(r)[i]?.label ?? 'Error' })),
      voted.reduce((s, r) => s + spend(r, (stage) => stage.startsWith(`vote:${backend}`)), 0),
      voted.length,
    ),
  );
  const unanimous = voted.filter((r) => r.details!.unanimous === true).length;
  return {
    items: voted.length,
    unanimousRate: voted.length > 0 ? unanimous / voted.length : null,
    accuracyVsCost: [...members, overall],
  };
}

/** The modular method keeps every sub-score, so each rule set can be re-run offline here. */
function modularMetrics(rows: ItemResult[], overall: CostPoint) {
  const scoresOf = (r: ItemResult) => r.details?.scores as SubScores | undefined;
  const fusions: Record<string, CostPoint> = {};
  for (const fusion of FUSIONS) {
    const usable = rows.filter((r) => {
      const scores = scoresOf(r);
      return (
        predictedLabel(r) !== 'Error' && scores && FUSION_INPUTS[fusion].every((k) => scores[k] !== undefined)
      );
    });
    if (usable.length === 0) continue;
    fusions[fusion] = point(
      `fusion ${fusion}`,
      usable.map((r) => ({ gold: r.gold!, pred: fuse(fusion, scoresOf(r)!).label })),
      usable.reduce((s, r) => s + resultCost(r), 0),
      usable.length,
    );
  }
  const distributions: Record<string, Record<string, number>> = {};
  for (const r of rows) {
    for (const [name, value] of Object.entries(scoresOf(r) ?? {})) {
      distributions[name] ??= {};
      count(distributions[name], String(value));
    }
  }
  return { fusions, subScores: distributions, accuracyVsCost: [overall] };
}

function agentMetrics(rows: ItemResult[], overall: CostPoint) {
  const runs = rows.filter((r) => typeof r.details?.steps === 'number');
  const tools: Record<string, number> = {};
  let steps = 0;
  let problems = 0;
  for (const r of runs) {
    steps += r.details!.steps as number;
    problems += (r.details!.problems as number) ?? 0;
    for (const call of (r.details!.tools as string[]) ?? [])
      count(tools, call.slice(0, call.indexOf('(')) || call);
  }
  return {
    items: runs.length,
    meanSteps: runs.length > 0 ? steps / runs.length : null,
    toolCalls: tools,
    badTurns: problems,
    stepLimit: rows.filter((r) => r.failure?.kind === 'step_limit').length,
    accuracyVsCost: [overall],
  };
}
