/**
 * Per-method report figures, computed from the results alone (their `details` and per-stage
 * spend): escalation rate and routes, ensemble members, re-fusion of modular sub-scores with
 * each rule set, agent tool use, and for every method accuracy against cost.
 */

import { type CostPoint, classificationMetrics, LabelPairCounts } from '../../lib/metrics/index.js';
import { type ItemResult, isScored, resultCost, type StageSpend } from '../../model/model.js';
import type { ResultStream } from '../../model/report-order.js';
import type { Vote } from './ensemble.js';
import type { EscalationDetails } from './escalation.js';
import { FUSION_INPUTS, FUSIONS, type Fusion, fuse, type SubScores } from './fusion.js';
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

function point(policy: string, pairs: LabelPairCounts, costUsd: number, items: number): CostPoint {
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

/** A method's own figures, fed one judged result at a time (in report order). */
interface MethodTally {
  add(r: ItemResult): void;
  figures(overall: CostPoint): Record<string, unknown>;
}

/**
 * The method's figures, from the results in report order, read once: every method's figures
 * are running counts and sums (label pairs as counts), so no result is kept, whatever the
 * run's size.
 */
export async function methodMetrics(
  suite: GecSuite,
  results: ResultStream,
): Promise<Record<string, unknown>> {
  const own = tallyOf(suite.method);
  const pairs = new LabelPairCounts();
  let cost = 0;
  let judged = 0;
  for await (const r of results) {
    if (!isJudged(r)) continue;
    judged += 1;
    pairs.add(r.gold!, predictedLabel(r));
    cost += resultCost(r);
    own?.add(r);
  }
  const overall = point(suite.method, pairs, cost, judged);
  return own ? own.figures(overall) : { accuracyVsCost: [overall] };
}

function tallyOf(method: GecSuite['method']): MethodTally | undefined {
  switch (method) {
    case 'escalation':
      return new EscalationTally();
    case 'ensemble':
      return new EnsembleTally();
    case 'modular':
      return new ModularTally();
    case 'agent':
      return new AgentTally();
    default:
      return undefined;
  }
}

function count(counts: Record<string, number>, key: string) {
  counts[key] = (counts[key] ?? 0) + 1;
}

const isSmall = (stage: string) => stage === 'small' || stage === 'small.repair';

/** Escalation: how often the router escalated and finalized, by flag and route, and the small model alone. */
class EscalationTally implements MethodTally {
  private items = 0;
  private escalated = 0;
  private finalized = 0;
  private readonly flags: Record<string, number> = {};
  private readonly paths: Record<string, number> = {};
  /** The small model's own label against gold, and what its calls cost. */
  private readonly small = new LabelPairCounts();
  private smallCost = 0;

  add(r: ItemResult): void {
    if (r.details?.path === undefined) return;
    const d = r.details as unknown as EscalationDetails;
    this.items += 1;
    if (d.escalated) this.escalated += 1;
    if (d.finalized) this.finalized += 1;
    for (const flag of d.flags) count(this.flags, flag);
    count(this.paths, d.path.map((step) => step.stage).join('→'));
    this.small.add(r.gold!, d.path[0]!.label);
    this.smallCost += spend(r, isSmall);
  }

  figures(overall: CostPoint) {
    const share = (n: number) => (this.items > 0 ? n / this.items : null);
    return {
      items: this.items,
      escalationRate: share(this.escalated),
      finalizerRate: share(this.finalized),
      flags: this.flags,
      paths: this.paths,
      accuracyVsCost: [point('small model only', this.small, this.smallCost, this.items), overall],
    };
  }
}

/** Ensemble: each member (the first voted item's backends) alone, and how often the votes agreed. */
class EnsembleTally implements MethodTally {
  private items = 0;
  private unanimous = 0;
  private members?: { backend: string; pairs: LabelPairCounts; cost: number }[];

  add(r: ItemResult): void {
    if (!Array.isArray(r.details?.votes)) return;
    const votes = r.details.votes as Vote[];
    this.members ??= votes.map((v) => ({ backend: v.backend, pairs: new LabelPairCounts(), cost: 0 }));
    this.items += 1;
    if (r.details.unanimous === true) this.unanimous += 1;
    this.members.forEach((member, i) => {
      member.pairs.add(r.gold!, votes[i]?.label ?? 'Error');
      member.cost += spend(r, (stage) => stage.startsWith(`vote:${member.backend}`));
    });
  }

  figures(overall: CostPoint) {
    const members = (this.members ?? []).map((m) => point(m.backend, m.pairs, m.cost, this.items));
    return {
      items: this.items,
      unanimousRate: this.items > 0 ? this.unanimous / this.items : null,
      accuracyVsCost: [...members, overall],
    };
  }
}

/** The modular method keeps every sub-score, so each rule set is re-run here as the results go by. */
class ModularTally implements MethodTally {
  private readonly fusions = new Map<Fusion, { pairs: LabelPairCounts; cost: number; items: number }>(
    FUSIONS.map((fusion) => [fusion, { pairs: new LabelPairCounts(), cost: 0, items: 0 }]),
  );
  private readonly distributions: Record<string, Record<string, number>> = {};

  add(r: ItemResult): void {
    const scores = r.details?.scores as SubScores | undefined;
    if (scores && predictedLabel(r) !== 'Error') {
      for (const [fusion, tally] of this.fusions) {
        if (!FUSION_INPUTS[fusion].every((k) => scores[k] !== undefined)) continue;
        tally.items += 1;
        tally.pairs.add(r.gold!, fuse(fusion, scores).label);
        tally.cost += resultCost(r);
      }
    }
    for (const [name, value] of Object.entries(scores ?? {})) {
      this.distributions[name] ??= {};
      count(this.distributions[name], String(value));
    }
  }

  figures(overall: CostPoint) {
    const fusions: Record<string, CostPoint> = {};
    for (const [fusion, { pairs, cost, items }] of this.fusions) {
      if (items > 0) fusions[fusion] = point(`fusion ${fusion}`, pairs, cost, items);
    }
    return { fusions, subScores: this.distributions, accuracyVsCost: [overall] };
  }
}

/** The agent: steps per item, tool use, bad turns, and items stopped by the step limit. */
class AgentTally implements MethodTally {
  private items = 0;
  private steps = 0;
  private problems = 0;
  private stepLimit = 0;
  private readonly tools: Record<string, number> = {};

  add(r: ItemResult): void {
    if (r.failure?.kind === 'step_limit') this.stepLimit += 1;
    if (typeof r.details?.steps !== 'number') return;
    this.items += 1;
    this.steps += r.details.steps;
    this.problems += (r.details.problems as number) ?? 0;
    for (const call of (r.details.tools as string[]) ?? [])
      count(this.tools, call.slice(0, call.indexOf('(')) || call);
  }

  figures(overall: CostPoint) {
    return {
      items: this.items,
      meanSteps: this.items > 0 ? this.steps / this.items : null,
      toolCalls: this.tools,
      badTurns: this.problems,
      stepLimit: this.stepLimit,
      accuracyVsCost: [overall],
    };
  }
}
