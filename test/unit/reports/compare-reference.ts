/**
 * The comparison as it was computed before it was tallied in parts: both runs' results in
 * memory, joined on the item id, an object per pair and per side. Kept for the tests as the
 * figures the tally must give, to the last bit: every statistic over the pairs both sides
 * scored, each side's coverage beside it, proportions with Newcombe's interval and McNemar's p.
 */
import type { Scorer } from '../../../shared/family/types.js';
import {
  type BootstrapOptions,
  balancedAccuracy,
  binaryTargets,
  classificationMetrics,
  DEFAULT_BOOTSTRAP,
  kendallTauB,
  mcnemarPaired,
  meanAbsoluteError,
  meanOrNull,
  mulberry32,
  newcombePaired,
  type PairedDelta,
  pearson,
  quadraticWeightedKappa,
  RepeatRows,
  rocAuc,
  spearman,
  sum,
  verdictOf,
  withheldReason,
} from '../../../shared/lib/metrics/index.js';
import {
  digestOf,
  type ItemResult,
  isScored,
  resultCost,
  type ScoreKind,
  type ScoreValue,
  scoreOf,
} from '../../../shared/model/model.js';
import { taskFor } from '../../../shared/registry/registry.js';
import {
  type CompareOptions,
  type Comparison,
  type DeltaNoise,
  type FlippedItem,
  type FlippedSide,
  type PromptChange,
  type RunHeader,
  type RunSide,
  type ScorerComparison,
  simulatedNotice,
} from '../../../shared/reports/compare-runs.js';
import { scoreRow, targetReader } from '../../../shared/reports/report.js';

function header(side: RunSide): RunHeader {
  const { run } = side;
  return {
    runId: run.runId,
    suite: run.suiteName,
    task: run.suite.task,
    dataset: run.datasetKey,
    startedAt: run.startedAt,
    prompts: Object.fromEntries(
      Object.entries(run.prompts)
        .map(([path, p]) => [path, p.hash] as const)
        .sort(([a], [b]) => byCodeUnit(a, b)),
    ),
    backends: run.predictions !== undefined ? [] : [...run.suite.backends],
    ...(run.predictions !== undefined ? { predictions: run.predictions } : {}),
    simulated: run.simulated || side.results.some((r) => r.simulated),
  };
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function promptChanges(base: Record<string, string>, candidate: Record<string, string>): PromptChange[] {
  const paths = [...new Set([...Object.keys(base), ...Object.keys(candidate)])].sort(byCodeUnit);
  const changes: PromptChange[] = [];
  for (const path of paths) {
    if (base[path] === candidate[path]) continue;
    const change: PromptChange = { path };
    if (base[path] !== undefined) change.base = base[path];
    if (candidate[path] !== undefined) change.candidate = candidate[path];
    changes.push(change);
  }
  return changes;
}

function usable(results: ItemResult[]): Map<string, ItemResult> {
  const byId = new Map<string, ItemResult>();
  for (const r of results) if (r.failure?.kind !== 'invalid_row') byId.set(r.itemId, r);
  return byId;
}

/** One side of one paired item, as a scorer sees it. */
interface Side {
  result: ItemResult;
  value?: ScoreValue;
  target?: ScoreValue;
  verdict?: boolean;
  shown: string;
  reason?: string;
}

function side(result: ItemResult, name: string, scorer: Scorer, binary: boolean): Side {
  const score = scoreOf(result, name, scorer.kind);
  const target = targetReader(scorer)(result);
  if (!isScored(score)) {
    return { result, target, shown: `(${score.unscored.kind})`, reason: score.unscored.message };
  }
  return {
    result,
    value: score.value,
    target,
    verdict: verdictOf(scorer.kind, score.value, target, scorer.metrics, binary),
    shown: String(score.value),
    reason: score.explanation,
  };
}

function flipKind(b: Side, c: Side): FlippedItem['kind'] {
  if (b.verdict === false && c.verdict === true) return 'fixed';
  if (b.verdict === true && c.verdict === false) return 'broken';
  return 'changed';
}

function flippedSide(s: Side): FlippedSide {
  const out: FlippedSide = { value: s.shown, status: s.result.status };
  if (s.reason !== undefined) out.reason = s.reason;
  if (s.result.failure) out.status = `failed (${s.result.failure.kind})`;
  return out;
}

/** The paired statistics of one scorer, by kind. */
function compareScorer(
  kind: ScoreKind,
  pairs: [Side, Side][],
  scorer: Scorer,
  options: CompareOptions,
): Pick<ScorerComparison, 'n' | 'deltas' | 'mcnemar'> {
  const both = pairs.filter(([b, c]) => b.value !== undefined && c.value !== undefined);
  if (kind === 'label') {
    const gold = both.filter(([b, c]) => b.target !== undefined && c.target !== undefined);
    if (gold.length === 0) return { n: 0, deltas: {} };
    const label = (s: Side) => ({ gold: String(s.target), pred: String(s.value) });
    const { positive: declared, ordinal, labelOrder } = scorer.metrics ?? {};
    const positive = declared ?? false;
    const deltas = pairedBootstraps(
      gold.map(([b]) => label(b)),
      gold.map(([, c]) => label(c)),
      (rows) => {
        const m = classificationMetrics(rows, {
          bootstrap: false,
          positive,
          ...(ordinal ? { ordinal, labelOrder } : {}),
        });
        const stats: Record<string, number | null> = { accuracy: m.accuracy, macroF1: m.macroF1 };
        if (m.binary) {
          stats.binaryAccuracy = m.binary.accuracy;
          stats.binaryF1 = m.binary.f1;
          stats.positiveF1 = m.binary.positive.f1;
        }
        stats.kappa = m.kappa;
        if (m.weightedKappa !== undefined) stats.weightedKappa = m.weightedKappa;
        return stats;
      },
      options.bootstrap,
    ) as Record<string, PairedDelta>;
    const right = (s: Side) => s.target === s.value;
    proportion(deltas.accuracy, gold, right);
    if (positive) {
      const isPositive = (label: unknown) => positive.includes(String(label));
      proportion(deltas.binaryAccuracy, gold, (s) => isPositive(s.target) === isPositive(s.value));
    }
    const mcnemar = mcnemarPaired(
      gold.map(([b]) => right(b)),
      gold.map(([, c]) => right(c)),
    );
    return { n: gold.length, deltas, mcnemar };
  }

  if (both.length === 0) return { n: 0, deltas: {} };
  if (kind === 'pass') {
    const targeted = both.every(([b, c]) => typeof b.target === 'boolean' && typeof c.target === 'boolean');
    const deltas = pairedBootstraps(
      both.map(([b]) => b),
      both.map(([, c]) => c),
      (rows) => {
        const stats: Record<string, number | null> = {
          passRate: meanOrNull(rows.map((s) => Number(s.value === true))),
        };
        if (targeted) {
          stats.accuracy = meanOrNull(rows.map((s) => Number(s.verdict === true)));
          stats.balancedAccuracy = balancedAccuracy(
            rows.map((s) => s.value === true),
            rows.map((s) => s.target === true),
          );
        }
        return stats;
      },
      options.bootstrap,
    ) as Record<string, PairedDelta>;
    const right = (s: Side) => (targeted ? s.verdict === true : s.value === true);
    proportion(deltas.passRate, both, (s) => s.value === true);
    if (targeted) proportion(deltas.accuracy, both, right);
    const mcnemar = mcnemarPaired(
      both.map(([b]) => right(b)),
      both.map(([, c]) => right(c)),
    );
    return { n: both.length, deltas, mcnemar };
  }

  const numericTargets = both.every(([b, c]) => typeof b.target === 'number' && typeof c.target === 'number');
  const binary = numericTargets && binaryTargets(both.map(([b]) => b.target));
  const deltas = pairedBootstraps(
    both.map(([b]) => b),
    both.map(([, c]) => c),
    (rows) => {
      const values = rows.map((s) => s.value as number);
      const targets = rows.map((s) => s.target as number);
      const stats: Record<string, number | null> = { mean: meanOrNull(values) };
      const { ordinal, threshold } = scorer.metrics ?? {};
      if (binary) {
        stats.rocAuc = rocAuc(
          values,
          targets.map((t) => t === 1),
        );
        if (ordinal) stats.weightedKappa = quadraticWeightedKappa(values, targets);
        if (threshold !== undefined)
          stats.balancedAccuracy = balancedAccuracy(
            values.map((v) => v >= threshold),
            targets.map((t) => t === 1),
          );
      } else if (numericTargets) {
        stats.mae = meanAbsoluteError(values, targets);
        stats.pearson = pearson(values, targets);
        stats.spearman = spearman(values, targets);
        stats.kendallTau = kendallTauB(values, targets);
        if (ordinal) stats.weightedKappa = quadraticWeightedKappa(values, targets);
        // The scorer's own figures (the judge family's withinOne on a scale).
        for (const [name, metric] of Object.entries(scorer.metrics?.extra ?? {}))
          stats[name] = metric.value(values, targets);
      }
      return stats;
    },
    options.bootstrap,
  ) as Record<string, PairedDelta>;
  return { n: both.length, deltas };
}

/** A 0/1 outcome's paired 2×2 table over `pairs`: [both, base only, candidate only, neither]. */
function table(pairs: [Side, Side][], one: (s: Side) => boolean) {
  const count = (b: boolean, c: boolean) => pairs.filter(([x, y]) => one(x) === b && one(y) === c).length;
  return {
    both: count(true, true),
    baseOnly: count(true, false),
    candidateOnly: count(false, true),
    neither: count(false, false),
  };
}

/** A difference of proportions: Newcombe's interval and McNemar's p in place of the bootstrap's. */
function proportion(delta: PairedDelta | undefined, pairs: [Side, Side][], one: (s: Side) => boolean): void {
  if (!delta) return;
  const t = table(pairs, one);
  delta.ci = newcombePaired(t)!;
  delta.pValue = mcnemarPaired(
    pairs.map(([b]) => one(b)),
    pairs.map(([, c]) => one(c)),
  ).pValue;
  delta.interval = 'newcombe';
}

/** Each side's coverage of the pairs (those a sequential gate settled left out). */
function coverageOf(sides: [Side, Side][]): ScorerComparison['coverage'] {
  const asked = sides.filter(
    ([b, c]) => b.result.failure?.kind !== 'gate_settled' && c.result.failure?.kind !== 'gate_settled',
  );
  if (asked.length === 0) return undefined;
  const scored = (s: Side) => s.value !== undefined;
  const t = table(asked, scored);
  const base = (t.both + t.baseOnly) / asked.length;
  const candidate = (t.both + t.candidateOnly) / asked.length;
  return {
    n: asked.length,
    base,
    candidate,
    delta: candidate - base,
    ci: newcombePaired(t)!,
    pValue: mcnemarPaired(
      asked.map(([b]) => scored(b)),
      asked.map(([, c]) => scored(c)),
    ).pValue,
    interval: 'newcombe',
    scored: { base: t.both + t.baseOnly, candidate: t.both + t.candidateOnly },
  };
}

/**
 * A run's noise floor per headline metric of one scorer (the same figures as its report's
 * `reliability.noiseFloor`); undefined for a run that scored each item once.
 */
function noiseFloors(side: RunSide, name: string, scorer: Scorer): Record<string, number | null> | undefined {
  const k = side.run.suite.run?.repeats ?? 1;
  if (k <= 1) return undefined;
  const rows = new RepeatRows(scorer.kind, k);
  const target = targetReader(scorer);
  for (const result of side.results) {
    const score = result.scores[name];
    rows.add(scoreRow(result, name, scorer, target), score?.repeats, score?.tie);
  }
  return rows.figures({ ...scorer.metrics, bootstrap: false }).noiseFloor;
}

/** Each delta against the larger of the two runs' noise floors; undefined when neither run has one. */
function deltaNoise(
  deltas: Record<string, PairedDelta>,
  base: Record<string, number | null> | undefined,
  candidate: Record<string, number | null> | undefined,
): Record<string, DeltaNoise> | undefined {
  if (!base && !candidate) return undefined;
  const out: Record<string, DeltaNoise> = {};
  for (const [metric, d] of Object.entries(deltas)) {
    const b = base?.[metric] ?? null;
    const c = candidate?.[metric] ?? null;
    if (b === null && c === null) continue;
    const floor = Math.max(b ?? 0, c ?? 0);
    out[metric] = { floor, base: b, candidate: c, withinNoise: Math.abs(d.delta) <= floor };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

export function referenceCompareRuns(
  base: RunSide,
  candidate: RunSide,
  options: CompareOptions = {},
): Comparison {
  const baseHeader = header(base);
  const candidateHeader = header(candidate);
  const simulated = baseHeader.simulated || candidateHeader.simulated;
  const baseById = usable(base.results);
  const candidateById = usable(candidate.results);

  const pairs: [ItemResult, ItemResult][] = [];
  let changed = 0;
  for (const [id, b] of baseById) {
    const c = candidateById.get(id);
    // An item whose input or gold differ between the runs is not a pair.
    if (c && digestOf(b) !== digestOf(c)) changed += 1;
    else if (c) pairs.push([b, c]);
  }
  pairs.sort(([a], [b]) => a.row - b.row || byCodeUnit(a.itemId, b.itemId));

  const baseFamily = taskFor(base.run.suite);
  const candidateFamily = taskFor(candidate.run.suite);
  const baseScorers = baseFamily.scorers(base.run.suite);
  const scores: Record<string, ScorerComparison> = {};
  for (const [name, scorer] of Object.entries(candidateFamily.scorers(candidate.run.suite))) {
    const baseScorer = baseScorers[name];
    if (!baseScorer || baseScorer.kind !== scorer.kind) continue;
    const binary = scorer.kind === 'number' && binaryTargets(pairs.map(([b]) => targetReader(scorer)(b)));
    const sides = pairs.map(
      ([b, c]) => [side(b, name, baseScorer, binary), side(c, name, scorer, binary)] as [Side, Side],
    );
    const flipped: FlippedItem[] = [];
    for (const [b, c] of sides) {
      if (b.shown === c.shown) continue;
      const gold = b.result.gold ?? c.result.gold;
      flipped.push({
        itemId: b.result.itemId,
        row: b.result.row,
        input: Object.keys(b.result.input).length > 0 ? b.result.input : c.result.input,
        ...(gold !== undefined ? { gold } : {}),
        base: flippedSide(b),
        candidate: flippedSide(c),
        kind: flipKind(b, c),
      });
    }
    const compared = compareScorer(scorer.kind, sides, scorer, options);
    // A bootstrap delta on fewer pairs than its metric's minimum says so.
    for (const [metric, d] of Object.entries(compared.deltas)) {
      const reason = d.interval === 'newcombe' ? undefined : withheldReason(metric, compared.n);
      if (reason) d.reason = reason;
    }
    const noise = deltaNoise(
      compared.deltas,
      noiseFloors(base, name, baseScorer),
      noiseFloors(candidate, name, scorer),
    );
    const coverage = coverageOf(sides);
    scores[name] = {
      kind: scorer.kind,
      ...(coverage ? { coverage } : {}),
      ...compared,
      flipped,
      ...(noise ? { noise } : {}),
    };
  }

  const baseCost = sum(base.results.map(resultCost));
  const candidateCost = sum(candidate.results.map(resultCost));
  return {
    simulated,
    ...(simulated ? { notice: simulatedNotice(baseHeader.simulated, candidateHeader.simulated) } : {}),
    base: baseHeader,
    candidate: candidateHeader,
    promptChanges: promptChanges(baseHeader.prompts, candidateHeader.prompts),
    items: {
      paired: pairs.length,
      onlyBase: baseById.size - pairs.length - changed,
      onlyCandidate: candidateById.size - pairs.length - changed,
      ...(changed > 0 ? { changed } : {}),
    },
    primaryScorer: candidateFamily.primaryScorer(candidate.run.suite),
    scores,
    cost: { base: baseCost, candidate: candidateCost, delta: candidateCost - baseCost },
  };
}

/** The paired bootstrap as it was: an array of rows per side per resample. */
function pairedBootstraps<T, K extends string>(
  base: readonly T[],
  candidate: readonly T[],
  statistic: (rows: readonly T[]) => Record<K, number | null>,
  options: BootstrapOptions = {},
): Partial<Record<K, PairedDelta>> {
  if (base.length !== candidate.length) {
    throw new RangeError(`pairedBootstrap: sides differ in length (${base.length} vs ${candidate.length})`);
  }
  const n = base.length;
  const { iterations, seed, alpha } = { ...DEFAULT_BOOTSTRAP, ...options };
  if (n < 1) throw new RangeError('pairedBootstrap: needs at least one pair');
  if (!Number.isInteger(iterations) || iterations < 1) {
    throw new RangeError(`pairedBootstrap: iterations must be a positive integer, got ${iterations}`);
  }
  if (!(alpha > 0 && alpha < 1))
    throw new RangeError(`pairedBootstrap: alpha must be in (0, 1), got ${alpha}`);

  const finite = (stats: Record<K, number | null>, where: string) => {
    for (const key of Object.keys(stats) as K[]) {
      const value = stats[key];
      if (value !== null && !Number.isFinite(value)) {
        throw new RangeError(
          `pairedBootstrap: statistic "${key}" returned a non-finite value (${value}) on ${where}`,
        );
      }
    }
    return stats;
  };
  const baseStats = finite(statistic(base), 'base');
  const candidateStats = finite(statistic(candidate), 'candidate');
  const keys = (Object.keys(baseStats) as K[]).filter(
    (k) => baseStats[k] !== null && candidateStats[k] !== null && candidateStats[k] !== undefined,
  );

  const random = mulberry32(seed);
  const deltas = new Map<K, number[]>(keys.map((k) => [k, []]));
  for (let it = 0; it < iterations; it++) {
    // Fresh arrays each time: a statistic may keep the rows it is given.
    const baseSample = new Array<T>(n);
    const candidateSample = new Array<T>(n);
    for (let i = 0; i < n; i++) {
      const index = Math.floor(random() * n);
      baseSample[i] = base[index]!;
      candidateSample[i] = candidate[index]!;
    }
    const b = finite(statistic(baseSample), 'a base resample');
    const c = finite(statistic(candidateSample), 'a candidate resample');
    for (const key of keys) {
      const bk = b[key];
      const ck = c[key];
      if (bk !== null && ck !== null) deltas.get(key)!.push(ck - bk);
    }
  }

  const result: Partial<Record<K, PairedDelta>> = {};
  for (const key of keys) {
    const values = deltas.get(key)!.sort((a, b) => a - b);
    const baseValue = baseStats[key] as number;
    const candidateValue = candidateStats[key] as number;
    const delta = candidateValue - baseValue;
    let otherSide = values.length;
    if (delta > 0) otherSide = values.filter((d) => d <= 0).length;
    else if (delta < 0) otherSide = values.filter((d) => d >= 0).length;
    result[key] = {
      n,
      base: baseValue,
      candidate: candidateValue,
      delta,
      ci:
        values.length > 0
          ? [percentileOfSorted(values, (alpha / 2) * 100), percentileOfSorted(values, (1 - alpha / 2) * 100)]
          : [delta, delta],
      pValue: values.length > 0 ? Math.min(1, (2 * (otherSide + 1)) / (values.length + 1)) : 1,
    };
  }
  return result;
}

function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (b - a) * (rank - lo);
}
