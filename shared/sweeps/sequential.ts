/**
 * The sequential gate of a sweep (`"gate": { "sequential": true }`): each variant's items are
 * scored in a seeded random order, and after each one the variant's anytime-valid confidence
 * sequences (one per condition, shared/lib/metrics/sequential.ts) are updated; as soon as they
 * settle the gate — every condition met (promote) or one failed (reject) — the variant stops,
 * and its remaining items end as `gate_settled` results without a model call. The verdict is
 * wrong with probability at most the gate's level (`gate.alpha`, default 0.05), whenever the
 * variant stops: each condition's sequence is built at 2α/k for k conditions.
 *
 * ## The order, and paired conditions
 *
 * An item's place in the order is the SHA-256 of the seed and its id: a random permutation of
 * the dataset, the same for every variant and in every shell, that needs no list of the items
 * to compute. Every variant is scored in this order. The baseline is scored first, in full (it
 * is what the others are compared with, and the gate does not judge it); a paired condition
 * (`delta accuracy >= -0.02`, or `accuracy >= baseline - 0.02`) then reads, for each of the
 * variant's items in turn, the difference between its 0/1 outcome and the baseline's on the
 * same item. With several items in flight at once, results are fed to the sequences in the
 * order, never in the order they come back: the verdict, and the item it settles at, are the
 * same whatever the concurrency, and the sweep report recomputes them from the results.
 *
 * ## Which items count
 *
 * A condition counts an item as the fixed-sample figure does: `accuracy`, a scored item with a
 * gold target (right 1, wrong 0); `passRate`, a scored item (pass 1). An item a condition
 * cannot count (a failed call, no gold) adds nothing to its sequence. The sequences are for
 * the dataset's items drawn without replacement (the population is the items that reach a
 * model), exact when every item counts: they then close on the full run's figure once every
 * item is scored, so a gate is always settled by the last item. Where items are left out the
 * last interval may still straddle a threshold; the variant then has scored every item, and the
 * ordinary gate judges its full results.
 */
import { createHash } from 'node:crypto';
import type { Scorer } from '../family/types.js';
import { parseCondition, type SequencedCondition, sequencedCondition } from '../lib/gate.js';
import {
  gateSequenceAlpha,
  MeanConfidenceSequence,
  type SequenceFigures,
  type SequentialCondition,
  type Settlement,
  settle,
} from '../lib/metrics/sequential.js';
import { InputError } from '../model/errors.js';
import { type Failure, type ItemResult, isScored, resultCost, scoreOf } from '../model/model.js';
import { taskFor } from '../registry/registry.js';
import type { Suite } from '../registry/suite.js';
import type { SequentialLineInput } from '../reports/gate-outcome.js';
import { targetReader } from '../reports/layout.js';

/** The sequential verdict's error level when the gate gives none. */
export const DEFAULT_GATE_ALPHA = 0.05;
/** The order's seed when neither the gate nor the run's sample gives one. */
export const DEFAULT_ORDER_SEED = 1;

/** What a sequential gate needs of a suite's (or a sweep record's) gate. */
export interface SequentialGateSpec {
  conditions: readonly string[];
  alpha: number;
  seed: number;
}

/** The sequential gate a suite asks for, with its defaults; undefined when its gate is not sequential. */
export function sequentialSpec(
  gate: { conditions: readonly string[]; sequential?: boolean; alpha?: number; seed?: number } | undefined,
  sampleSeed?: number,
): SequentialGateSpec | undefined {
  if (!gate?.sequential) return undefined;
  return {
    conditions: gate.conditions,
    alpha: gate.alpha ?? DEFAULT_GATE_ALPHA,
    seed: gate.seed ?? sampleSeed ?? DEFAULT_ORDER_SEED,
  };
}

/** An item's place in the seeded order: compare keys as strings (ties, impossible in practice, by id). */
export function orderKey(seed: number, itemId: string): string {
  return createHash('sha256').update(`${seed}\u0000${itemId}`).digest('hex');
}

/** Sorts `things` into the seeded order by their item ids (a new array). */
export function inSeededOrder<T>(things: readonly T[], seed: number, idOf: (thing: T) => string): T[] {
  const keyed = things.map((thing) => ({ thing, id: idOf(thing), key: orderKey(seed, idOf(thing)) }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return keyed.map((k) => k.thing);
}

/** Reads one condition's per-item outcome (1, 0, or null: not counted) from a result. */
type Outcome = (result: ItemResult) => 0 | 1 | null;

/** A condition ready to be followed: how it reads an item, and how it is settled. */
interface PlannedCondition extends SequencedCondition {
  outcome: Outcome;
}

/** A sequential gate's conditions, read against a variant's suite (its scorers). */
export interface SequentialPlan {
  spec: SequentialGateSpec;
  conditions: PlannedCondition[];
  /** The level each condition's sequence is built at: 2α/k. */
  conditionAlpha: number;
}

/**
 * The plan of a sequential gate for a variant's suite; an InputError says why a condition
 * cannot be followed item by item (its metric, or its scorer's kind).
 */
export function sequentialPlan(spec: SequentialGateSpec, suite: Suite): SequentialPlan {
  const family = taskFor(suite);
  const scorers = family.scorers(suite) as Record<string, Scorer>;
  const primary = family.primaryScorer(suite);
  const conditions = spec.conditions.map((text) => {
    const sequenced = sequencedCondition(parseCondition(text));
    const dot = sequenced.metric.lastIndexOf('.');
    const [scorerName, metric] =
      dot > 0
        ? [sequenced.metric.slice(0, dot), sequenced.metric.slice(dot + 1)]
        : [primary, sequenced.metric];
    const scorer = scorers[scorerName];
    if (!scorer)
      throw new InputError(
        `gate condition ${JSON.stringify(text)}: suite ${suite.name} has no scorer ${scorerName} (its scorers: ${Object.keys(scorers).join(', ')})`,
      );
    return { ...sequenced, outcome: outcomeReader(text, scorerName, scorer, metric) };
  });
  return { spec, conditions, conditionAlpha: gateSequenceAlpha(spec.alpha, conditions.length) };
}

function outcomeReader(text: string, name: string, scorer: Scorer, metric: string): Outcome {
  const target = targetReader(scorer);
  if (metric === 'passRate' && scorer.kind === 'pass')
    return (result) => {
      const score = scoreOf(result, name, scorer.kind);
      return isScored(score) ? (score.value === true ? 1 : 0) : null;
    };
  if (metric === 'accuracy' && (scorer.kind === 'label' || scorer.kind === 'pass'))
    return (result) => {
      const score = scoreOf(result, name, scorer.kind);
      if (!isScored(score)) return null;
      const gold = target(result);
      if (gold === undefined || (scorer.kind === 'pass' && typeof gold !== 'boolean')) return null;
      return score.value === gold ? 1 : 0;
    };
  throw new InputError(
    `gate condition ${JSON.stringify(text)}: scorer ${name} gives ${scorer.kind} scores, whose ${metric} is not a per-item rate a sequential gate can follow (label scorers: accuracy; pass scorers: accuracy, passRate)`,
  );
}

/** One condition's sequence after the items fed so far. */
export interface SequentialConditionFigures {
  condition: string;
  paired: boolean;
  state: 'met' | 'failed' | 'undecided';
  /** The items counted; the running mean (of the variant's outcome, or of the paired difference); the interval. */
  n: number;
  mean: number | null;
  lo: number | null;
  hi: number | null;
  op: SequencedCondition['op'];
  against: number;
}

/**
 * The stopping rule of one variant: fed its results one at a time in the seeded order, it
 * follows each condition's confidence sequence and settles the gate. Once settled it stays
 * settled (later items, scored while it settled, change nothing).
 */
export class SequentialGate {
  private readonly sequences: MeanConfidenceSequence[];
  private fed = 0;
  private settlement: Settlement | undefined;
  private settledAt: number | undefined;
  private frozen: SequentialConditionFigures[] | undefined;

  constructor(
    readonly plan: SequentialPlan,
    /** The items a full run scores: the sequences' population. */
    readonly population: number,
    /** The baseline's results by item id (paired conditions: an item it has no outcome for is not counted). */
    private readonly baseline: ReadonlyMap<string, ItemResult> = new Map(),
  ) {
    this.sequences = plan.conditions.map(
      (c) =>
        new MeanConfidenceSequence({
          alpha: plan.conditionAlpha,
          range: c.paired ? [-1, 1] : [0, 1],
          ...(population >= 1 ? { population } : {}),
        }),
    );
  }

  /** Feeds the next result in the order; the gate's verdict so far. */
  observe(result: ItemResult): Settlement['verdict'] {
    if (this.settlement && this.settlement.verdict !== 'undecided') return this.settlement.verdict;
    this.fed += 1;
    this.plan.conditions.forEach((c, i) => {
      const sequence = this.sequences[i]!;
      const mine = c.outcome(result);
      if (mine === null) return;
      if (!c.paired) {
        if (sequence.current().n < this.population) sequence.update(mine);
        return;
      }
      const theirs = this.baseline.get(result.itemId);
      const base = theirs === undefined ? null : c.outcome(theirs);
      if (base !== null && sequence.current().n < this.population) sequence.update(mine - base);
    });
    this.settlement = settle(
      this.plan.conditions.map((c, i): SequentialCondition => {
        const figures: SequenceFigures = this.sequences[i]!.current();
        return c.paired
          ? { kind: 'baseline', label: c.text, figures, op: c.op, margin: c.against }
          : { kind: 'threshold', label: c.text, figures, op: c.op, value: c.against };
      }),
    );
    if (this.settlement.verdict !== 'undecided') {
      this.settledAt = this.fed;
      this.frozen = this.figures();
    }
    return this.settlement.verdict;
  }

  verdict(): Settlement['verdict'] {
    return this.settlement?.verdict ?? 'undecided';
  }

  /** How many items in the order it had seen when it settled (undefined while undecided). */
  settledAfter(): number | undefined {
    return this.settledAt;
  }

  /** Each condition's state and interval (as they were when the gate settled). */
  figures(): SequentialConditionFigures[] {
    if (this.frozen) return this.frozen;
    return this.plan.conditions.map((c, i) => {
      const { n, mean, lo, hi } = this.sequences[i]!.current();
      return {
        condition: c.text,
        paired: c.paired,
        state: this.settlement?.conditions[i]?.state ?? 'undecided',
        n,
        mean,
        lo,
        hi,
        op: c.op,
        against: c.against,
      };
    });
  }

  /** What an item left unscored ends with once the gate has settled. */
  failure(): Failure | undefined {
    const verdict = this.verdict();
    if (verdict === 'undecided') return undefined;
    return {
      kind: 'gate_settled',
      message: `the sequential gate settled: ${verdict === 'promote' ? 'promote' : 'reject'} after ${this.settledAt} of ${this.population} items (error rate at most ${this.plan.spec.alpha}); this item was not scored`,
    };
  }
}

/**
 * A run's side of the sequential gate (what the local run loop asks): the order to score its
 * items in, each result as it is recorded, and once settled, the failure its remaining items
 * end with. Results are fed to the gate in the order, whatever order they are recorded in.
 */
export class SequentialRunControl {
  private sequence: string[] = [];
  private readonly waiting = new Map<string, ItemResult>();
  private cursor = 0;
  private gate: SequentialGate | undefined;

  constructor(
    readonly seed: number,
    /** Builds the stopping rule once the run's population is known; none: the order only (the baseline). */
    private readonly gateFor?: (population: number) => SequentialGate,
  ) {}

  /** The pending items in the order to score them; `done` are the results the run already has (a resume). */
  begin<T extends { item: { id: string } }>(pending: readonly T[], done: readonly ItemResult[]): T[] {
    const ordered = inSeededOrder(pending, this.seed, (m) => m.item.id);
    const pendingIds = new Set(ordered.map((m) => m.item.id));
    // A result of an item queued again (a budget failure a resume replaces) is not its result.
    const kept = done.filter((r) => !pendingIds.has(r.itemId));
    this.sequence = inSeededOrder([...kept.map((r) => r.itemId), ...pendingIds], this.seed, (id) => id);
    const invalid = kept.filter((r) => r.failure?.kind === 'invalid_row').length;
    this.gate = this.gateFor?.(this.sequence.length - invalid);
    for (const result of kept) this.record(result);
    return ordered;
  }

  /** A result recorded by the run. */
  record(result: ItemResult): void {
    this.waiting.set(result.itemId, result);
    while (this.cursor < this.sequence.length) {
      const next = this.waiting.get(this.sequence[this.cursor]!);
      if (!next) break;
      this.waiting.delete(next.itemId);
      this.cursor += 1;
      if (next.failure?.kind !== 'invalid_row' && next.failure?.kind !== 'gate_settled')
        this.gate?.observe(next);
    }
  }

  /** Set once the gate has settled: the failure the items not yet taken end with. */
  settled(): Failure | undefined {
    return this.gate?.failure();
  }
}

/** A sequential variant's figures in the sweep report. */
export interface SequentialOutcome extends SequentialLineInput {
  /** The level of each condition's confidence sequence (2α/k). */
  conditionAlpha: number;
  seed: number;
  conditions: SequentialConditionFigures[];
}

/**
 * A sequential variant's verdict from its results (the sweep report): the same rule the run
 * loop stopped on, replayed in the seeded order, and what stopping saved.
 */
export function replaySequentialGate(
  plan: SequentialPlan,
  results: readonly ItemResult[],
  baseline: readonly ItemResult[],
): SequentialOutcome {
  const invalid = results.filter((r) => r.failure?.kind === 'invalid_row').length;
  const skipped = results.filter((r) => r.failure?.kind === 'gate_settled');
  const population = results.length - invalid;
  const gate = new SequentialGate(plan, population, new Map(baseline.map((r) => [r.itemId, r])));
  for (const result of inSeededOrder(results, plan.spec.seed, (r) => r.itemId)) {
    const kind = result.failure?.kind;
    if (kind === 'invalid_row' || kind === 'gate_settled') continue;
    if (gate.observe(result) !== 'undecided') break;
  }
  const used = results.filter((r) => r.failure?.kind !== 'invalid_row' && r.failure?.kind !== 'gate_settled');
  const calls = used.reduce(
    (total, r) => total + Object.values(r.stages).reduce((sum, s) => sum + s.calls, 0),
    0,
  );
  const cost = used.reduce((total, r) => total + resultCost(r), 0);
  return {
    verdict: gate.verdict(),
    alpha: plan.spec.alpha,
    conditionAlpha: plan.conditionAlpha,
    seed: plan.spec.seed,
    settledAfter: gate.settledAfter() ?? null,
    items: results.length,
    itemsUsed: used.length,
    itemsSkipped: skipped.length,
    callsSaved: used.length === 0 ? 0 : Math.round((skipped.length * calls) / used.length),
    costSavedUsd: used.length === 0 ? null : (skipped.length * cost) / used.length,
    conditions: gate.figures(),
  };
}
