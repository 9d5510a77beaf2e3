/**
 * Per-method report figures, computed from the results alone (their `details` and per-stage
 * spend): escalation rate and routes, ensemble members, re-fusion of modular sub-scores with
 * each rule set, agent tool use, and for every method accuracy against cost.
 */

import type { FamilyReportTally, ReportSection } from '../../family/types.js';
import {
  addCounts,
  type CostPoint,
  classificationMetrics,
  LabelPairCounts,
  type LabelPairCountsState,
} from '../../lib/metrics/index.js';
import { PanelRows, type PanelRowsState } from '../../lib/metrics/panel-rows.js';
import { type ItemResult, isScored, resultCost, type StageSpend } from '../../model/model.js';
import type { PanelSummary } from '../../model/report.js';
import type { Vote } from './ensemble.js';
import type { EscalationDetails } from './escalation.js';
import { FUSION_INPUTS, FUSIONS, type Fusion, fuse, type SubScores } from './fusion.js';
import { ENSEMBLE_PANEL, ensembleLabels } from './panel.js';
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
  /** Appends `later`, the tally of the judged results that come after this one's. */
  merge(later: this): void;
  toState(): unknown;
  figures(overall: CostPoint): Record<string, unknown>;
  /** report.json `panel`, for a method whose backends each label the item (the ensemble). */
  panel?(): PanelSummary | null;
}

/** A {@link GecReportTally} saved. */
export interface GecTallyState {
  pairs: LabelPairCountsState;
  cost: number;
  judged: number;
  method?: unknown;
}

/**
 * The method's figures, from the results in report order: every method's figures are running
 * counts and sums (label pairs as counts), so no result is kept, whatever the run's size. The
 * family's report tally: tallies of consecutive parts of a run merge into the whole's (costs
 * then equal one tally's to within their last bits: partial sums are rounded apart).
 */
export class GecReportTally implements FamilyReportTally {
  private readonly own: MethodTally | undefined;
  private readonly pairs: LabelPairCounts;
  private cost = 0;
  private judged = 0;

  /** A tally of no result, or loaded from `state` (see `toState`). */
  constructor(
    private readonly suite: GecSuite,
    state?: GecTallyState,
  ) {
    this.own = tallyOf(suite.method, state?.method);
    this.pairs = state ? LabelPairCounts.fromState(state.pairs) : new LabelPairCounts();
    this.cost = state?.cost ?? 0;
    this.judged = state?.judged ?? 0;
  }

  add(r: ItemResult): void {
    if (!isJudged(r)) return;
    this.judged += 1;
    this.pairs.add(r.gold!, predictedLabel(r));
    this.cost += resultCost(r);
    this.own?.add(r);
  }

  merge(later: GecReportTally): void {
    this.judged += later.judged;
    this.pairs.merge(later.pairs);
    this.cost += later.cost;
    if (this.own && later.own) this.own.merge(later.own);
  }

  toState(): GecTallyState {
    return {
      pairs: this.pairs.toState(),
      cost: this.cost,
      judged: this.judged,
      ...(this.own ? { method: this.own.toState() } : {}),
    };
  }

  /** report.json `metrics.method`. */
  figures(): Record<string, unknown> {
    const overall = point(this.suite.method, this.pairs, this.cost, this.judged);
    return this.own ? this.own.figures(overall) : { accuracyVsCost: [overall] };
  }

  section(): ReportSection {
    const panel = this.own?.panel?.();
    return { metrics: { method: this.figures() }, ...(panel ? { panel } : {}) };
  }
}

/** The method's figures of results in report order (see {@link GecReportTally}). */
export function methodMetrics(suite: GecSuite, results: Iterable<ItemResult>): Record<string, unknown> {
  const tally = new GecReportTally(suite);
  for (const r of results) tally.add(r);
  return tally.figures();
}

function tallyOf(method: GecSuite['method'], state: unknown): MethodTally | undefined {
  switch (method) {
    case 'escalation':
      return new EscalationTally(state as EscalationState | undefined);
    case 'ensemble':
      return new EnsembleTally(state as EnsembleState | undefined);
    case 'modular':
      return new ModularTally(state as ModularState | undefined);
    case 'agent':
      return new AgentTally(state as AgentState | undefined);
    default:
      return undefined;
  }
}

function count(counts: Record<string, number>, key: string) {
  counts[key] = (counts[key] ?? 0) + 1;
}

const isSmall = (stage: string) => stage === 'small' || stage === 'small.repair';

interface EscalationState {
  items: number;
  escalated: number;
  finalized: number;
  flags: Record<string, number>;
  paths: Record<string, number>;
  small: LabelPairCountsState;
  smallCost: number;
}

/** Escalation: how often the router escalated and finalized, by flag and route, and the small model alone. */
class EscalationTally implements MethodTally {
  private items = 0;
  private escalated = 0;
  private finalized = 0;
  private readonly flags: Record<string, number> = {};
  private readonly paths: Record<string, number> = {};
  /** The small model's own label against gold, and what its calls cost. */
  private readonly small: LabelPairCounts;
  private smallCost = 0;

  constructor(state?: EscalationState) {
    this.small = state ? LabelPairCounts.fromState(state.small) : new LabelPairCounts();
    if (!state) return;
    this.items = state.items;
    this.escalated = state.escalated;
    this.finalized = state.finalized;
    addCounts(this.flags, state.flags);
    addCounts(this.paths, state.paths);
    this.smallCost = state.smallCost;
  }

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

  merge(later: EscalationTally): void {
    this.items += later.items;
    this.escalated += later.escalated;
    this.finalized += later.finalized;
    addCounts(this.flags, later.flags);
    addCounts(this.paths, later.paths);
    this.small.merge(later.small);
    this.smallCost += later.smallCost;
  }

  toState(): EscalationState {
    return {
      items: this.items,
      escalated: this.escalated,
      finalized: this.finalized,
      flags: { ...this.flags },
      paths: { ...this.paths },
      small: this.small.toState(),
      smallCost: this.smallCost,
    };
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

interface EnsembleState {
  items: number;
  unanimous: number;
  members?: { backend: string; pairs: LabelPairCountsState; cost: number }[];
  panel?: PanelRowsState;
}

/** Ensemble: each member (the first voted item's backends) alone, and how often the votes agreed. */
class EnsembleTally implements MethodTally {
  private items = 0;
  private unanimous = 0;
  private members?: { backend: string; pairs: LabelPairCounts; cost: number }[];
  /** Each backend's vote on each item, kept for the panel's figures. */
  private readonly votes: PanelRows;

  constructor(state?: EnsembleState) {
    this.votes = state?.panel ? PanelRows.fromState(state.panel) : new PanelRows(ENSEMBLE_PANEL);
    if (!state) return;
    this.items = state.items;
    this.unanimous = state.unanimous;
    this.members = state.members?.map((m) => ({ ...m, pairs: LabelPairCounts.fromState(m.pairs) }));
  }

  add(r: ItemResult): void {
    if (!Array.isArray(r.details?.votes)) return;
    const votes = r.details.votes as Vote[];
    this.members ??= votes.map((v) => ({ backend: v.backend, pairs: new LabelPairCounts(), cost: 0 }));
    this.items += 1;
    if (r.details.unanimous === true) this.unanimous += 1;
    const labels = ensembleLabels(r);
    if (labels) this.votes.add(r.gold!, labels);
    this.members.forEach((member, i) => {
      member.pairs.add(r.gold!, votes[i]?.label ?? 'Error');
      member.cost += spend(r, (stage) => stage.startsWith(`vote:${member.backend}`));
    });
  }

  /**
   * Members are matched by place: every voted item of a run carries the suite's backends in
   * the suite's order, so each part's first voted item names the same members.
   */
  merge(later: EnsembleTally): void {
    this.items += later.items;
    this.unanimous += later.unanimous;
    this.votes.merge(later.votes);
    if (!later.members) return;
    if (!this.members) {
      this.members = later.members;
      return;
    }
    this.members.forEach((member, i) => {
      const other = later.members![i];
      if (!other) return;
      member.pairs.merge(other.pairs);
      member.cost += other.cost;
    });
  }

  toState(): EnsembleState {
    return {
      items: this.items,
      unanimous: this.unanimous,
      panel: this.votes.toState(),
      ...(this.members
        ? {
            members: this.members.map((m) => ({
              backend: m.backend,
              pairs: m.pairs.toState(),
              cost: m.cost,
            })),
          }
        : {}),
    };
  }

  figures(overall: CostPoint) {
    const members = (this.members ?? []).map((m) => point(m.backend, m.pairs, m.cost, this.items));
    return {
      items: this.items,
      unanimousRate: this.items > 0 ? this.unanimous / this.items : null,
      accuracyVsCost: [...members, overall],
    };
  }

  panel(): PanelSummary | null {
    return this.votes.figures();
  }
}

interface ModularState {
  fusions: [fusion: Fusion, { pairs: LabelPairCountsState; cost: number; items: number }][];
  distributions: Record<string, Record<string, number>>;
}

/** The modular method keeps every sub-score, so each rule set is re-run here as the results go by. */
class ModularTally implements MethodTally {
  private readonly fusions = new Map<Fusion, { pairs: LabelPairCounts; cost: number; items: number }>(
    FUSIONS.map((fusion) => [fusion, { pairs: new LabelPairCounts(), cost: 0, items: 0 }]),
  );
  private readonly distributions: Record<string, Record<string, number>> = {};

  constructor(state?: ModularState) {
    if (!state) return;
    for (const [fusion, { pairs, cost, items }] of state.fusions)
      this.fusions.set(fusion, { pairs: LabelPairCounts.fromState(pairs), cost, items });
    this.addDistributions(state.distributions);
  }

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

  merge(later: ModularTally): void {
    for (const [fusion, tally] of this.fusions) {
      const other = later.fusions.get(fusion)!;
      tally.items += other.items;
      tally.pairs.merge(other.pairs);
      tally.cost += other.cost;
    }
    this.addDistributions(later.distributions);
  }

  private addDistributions(distributions: Record<string, Record<string, number>>): void {
    for (const [name, counts] of Object.entries(distributions)) {
      this.distributions[name] ??= {};
      addCounts(this.distributions[name], counts);
    }
  }

  toState(): ModularState {
    return {
      fusions: Array.from(this.fusions, ([fusion, { pairs, cost, items }]) => [
        fusion,
        { pairs: pairs.toState(), cost, items },
      ]),
      distributions: Object.fromEntries(
        Object.entries(this.distributions).map(([name, counts]) => [name, { ...counts }]),
      ),
    };
  }

  figures(overall: CostPoint) {
    const fusions: Record<string, CostPoint> = {};
    for (const [fusion, { pairs, cost, items }] of this.fusions) {
      if (items > 0) fusions[fusion] = point(`fusion ${fusion}`, pairs, cost, items);
    }
    return { fusions, subScores: this.distributions, accuracyVsCost: [overall] };
  }
}

interface AgentState {
  items: number;
  steps: number;
  problems: number;
  stepLimit: number;
  tools: Record<string, number>;
}

/** The agent: steps per item, tool use, bad turns, and items stopped by the step limit. */
class AgentTally implements MethodTally {
  private items = 0;
  private steps = 0;
  private problems = 0;
  private stepLimit = 0;
  private readonly tools: Record<string, number> = {};

  constructor(state?: AgentState) {
    if (!state) return;
    this.items = state.items;
    this.steps = state.steps;
    this.problems = state.problems;
    this.stepLimit = state.stepLimit;
    addCounts(this.tools, state.tools);
  }

  add(r: ItemResult): void {
    if (r.failure?.kind === 'step_limit') this.stepLimit += 1;
    if (typeof r.details?.steps !== 'number') return;
    this.items += 1;
    this.steps += r.details.steps;
    this.problems += (r.details.problems as number) ?? 0;
    for (const call of (r.details.tools as string[]) ?? [])
      count(this.tools, call.slice(0, call.indexOf('(')) || call);
  }

  merge(later: AgentTally): void {
    this.items += later.items;
    this.steps += later.steps;
    this.problems += later.problems;
    this.stepLimit += later.stepLimit;
    addCounts(this.tools, later.tools);
  }

  toState(): AgentState {
    return {
      items: this.items,
      steps: this.steps,
      problems: this.problems,
      stepLimit: this.stepLimit,
      tools: { ...this.tools },
    };
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
