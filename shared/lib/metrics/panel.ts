/**
 * A panel of judges: several judges label the same items, and the gold label is known. How far
 * the judges agree, whether they make the same mistakes, whether the panel's majority beats its
 * best member, and how many independent judges the panel is worth.
 *
 * - `accuracy`: each judge's share of correct labels over the items it labelled.
 * - `pairs`: for each pair of judges, over the items both labelled, the share labelled
 *   identically (`agreement`), and the Pearson correlation of the two judges' error indicators
 *   1[judge ≠ gold] (`errorCorrelation`, the phi coefficient of the two). Two judges that are
 *   wrong on the same item count as a shared error even when their wrong labels differ. Null
 *   when either judge's errors do not vary over those items (never wrong, or always wrong).
 * - `majority`: the accuracy of the panel's plurality label over the items at least one judge
 *   labelled. A tie between labels is broken, by default (`ties: 'best-judge'`), by the label of
 *   the most accurate judge among those voting for a tied label (accuracy on all the items,
 *   the judges' order breaking equal accuracies); with `ties: 'wrong'` a tied item counts as
 *   wrong.
 * - `majorityVsBest`: majority accuracy minus the best single judge's (the highest accuracy,
 *   the judges' order breaking ties) over the items that judge labelled, with a paired bootstrap
 *   interval. The best judge is chosen on the same items it is compared on, which flatters it a
 *   little (the winner of several noisy accuracies is lucky on average).
 * - `effectiveJudges`: n_eff = k / (1 + (k − 1)·ρ̄), with k the judges that labelled anything
 *   and ρ̄ the mean of their pairwise error correlations (the pairs where it is defined): the
 *   design effect of a mean of k equally correlated variables, Var = σ²/k · (1 + (k − 1)ρ̄), so
 *   the panel's errors average out like those of n_eff independent judges. Clipped to [1, k]
 *   (a negative ρ̄ would give more than k). Null below two judges or without a defined pair.
 *
 * Labels are compared as text (`String(label)`), as elsewhere in the metrics. Intervals are 95%
 * percentile-bootstrap intervals over items with the repository's seeded generator; a figure
 * with no data is null, never 0.
 */
import type { ScoreValue } from '../../model/model.js';
import type {
  Interval,
  MetricValue,
  PanelMajorityVsBest,
  PanelPairSummary,
  PanelSummary,
} from '../../model/report.js';
import { type BootstrapOptions, bootstrapCis, codeOf, type Indices, pairedBootstrapsAt } from './stats.js';

/** A judge's label for an item; undefined or null when it gave none. */
export type PanelLabel = ScoreValue | null | undefined;

/** One item the panel labelled. */
export interface PanelItem {
  /** The gold label. */
  gold: ScoreValue;
  /** Each judge's label, by judge name; a judge left out did not label the item. */
  labels: Readonly<Record<string, PanelLabel>>;
}

/** How a tied majority vote is settled (see the module comment). */
export type PanelTies = PanelSummary['tiesPolicy'];

export interface PanelOptions {
  /** The judges, in order (the order settles equal accuracies). Default: in order of first appearance. */
  judges?: readonly string[];
  /** Default `best-judge`. */
  ties?: PanelTies;
  /** false: no intervals. */
  bootstrap?: BootstrapOptions | false;
}

/** The panel's figures: report.json `panel` without its `source`. */
export type PanelFigures = Omit<PanelSummary, 'source'>;

const MISSING = -1;
/** A majority vote that counts as wrong (a tie, under `ties: 'wrong'`). */
const TIED_WRONG = -2;

/** The panel's figures over `items` (in order: the intervals resample them). */
export function panelAgreement(items: readonly PanelItem[], options: PanelOptions = {}): PanelFigures {
  const tiesPolicy = options.ties ?? 'best-judge';
  if (tiesPolicy !== 'best-judge' && tiesPolicy !== 'wrong') {
    throw new RangeError(`panel: ties must be "best-judge" or "wrong", got "${String(tiesPolicy)}"`);
  }
  const judges = judgesOf(items, options.judges);
  const k = judges.length;
  const n = items.length;

  // Codes: each label's place in a table of labels seen, gold and judges alike.
  const table: string[] = [];
  const codes = new Map<string, number>();
  const gold = new Int32Array(n);
  const label = new Int32Array(n * k).fill(MISSING);
  const judgeIndex = new Map(judges.map((j, i) => [j, i]));
  items.forEach((item, i) => {
    if (item.gold === undefined || item.gold === null || !validLabel(item.gold)) {
      throw new RangeError(`panel: item ${i} has no usable gold label (${String(item.gold)})`);
    }
    gold[i] = codeOf(table, codes, String(item.gold));
    for (const [judge, value] of Object.entries(item.labels)) {
      const j = judgeIndex.get(judge);
      if (j === undefined)
        throw new RangeError(`panel: item ${i} has a label from "${judge}", not in the judges`);
      if (value === undefined || value === null) continue;
      if (!validLabel(value))
        throw new RangeError(`panel: judge "${judge}" gave item ${i} a non-finite number`);
      label[i * k + j] = codeOf(table, codes, String(value));
    }
  });
  const at = (i: number, j: number) => label[i * k + j]!;
  const all = Uint32Array.from({ length: n }, (_, i) => i);

  const accuracyOf = (j: number, ix: Indices): number | null => {
    let right = 0;
    let total = 0;
    for (const i of ix) {
      const v = at(i, j);
      if (v === MISSING) continue;
      total += 1;
      if (v === gold[i]) right += 1;
    }
    return total === 0 ? null : right / total;
  };
  const labelled = judges.map((_, j) => count(all, (i) => at(i, j) !== MISSING));
  const accuracies = judges.map((_, j) => accuracyOf(j, all));
  // Judges from the most accurate; equal (or null) accuracies keep the judges' order.
  const ranking = judges
    .map((_, j) => j)
    .sort((a, b) => (accuracies[b] ?? -1) - (accuracies[a] ?? -1) || a - b);
  const rank = new Int32Array(k);
  ranking.forEach((j, r) => {
    rank[j] = r;
  });

  // Each item's majority label (MISSING without labels, TIED_WRONG for a tie counted wrong).
  const majority = new Int32Array(n);
  let ties = 0;
  for (let i = 0; i < n; i += 1) {
    const votes = new Map<number, number>();
    for (let j = 0; j < k; j += 1) {
      const v = at(i, j);
      if (v !== MISSING) votes.set(v, (votes.get(v) ?? 0) + 1);
    }
    if (votes.size === 0) {
      majority[i] = MISSING;
      continue;
    }
    const top = Math.max(...votes.values());
    const tied = [...votes].filter(([, c]) => c === top).map(([v]) => v);
    if (tied.length === 1) {
      majority[i] = tied[0]!;
      continue;
    }
    ties += 1;
    if (tiesPolicy === 'wrong') {
      majority[i] = TIED_WRONG;
      continue;
    }
    let chosen = MISSING;
    let chosenRank = Number.POSITIVE_INFINITY;
    for (let j = 0; j < k; j += 1) {
      const v = at(i, j);
      if (v !== MISSING && tied.includes(v) && rank[j]! < chosenRank) {
        chosen = v;
        chosenRank = rank[j]!;
      }
    }
    majority[i] = chosen;
  }
  const majorityAccuracy = (ix: Indices): number | null => {
    let right = 0;
    let total = 0;
    for (const i of ix) {
      if (majority[i] === MISSING) continue;
      total += 1;
      if (majority[i] === gold[i]) right += 1;
    }
    return total === 0 ? null : right / total;
  };

  const pairIndex: [number, number][] = [];
  for (let a = 0; a < k; a += 1) for (let b = a + 1; b < k; b += 1) pairIndex.push([a, b]);
  const pairOf = (a: number, b: number, ix: Indices) => {
    let both = 0;
    let same = 0;
    let wrongA = 0;
    let wrongB = 0;
    let wrongBoth = 0;
    for (const i of ix) {
      const va = at(i, a);
      const vb = at(i, b);
      if (va === MISSING || vb === MISSING) continue;
      both += 1;
      if (va === vb) same += 1;
      const ea = va !== gold[i];
      const eb = vb !== gold[i];
      if (ea) wrongA += 1;
      if (eb) wrongB += 1;
      if (ea && eb) wrongBoth += 1;
    }
    return {
      both,
      agreement: both === 0 ? null : same / both,
      errorCorrelation: phi(both, wrongA, wrongB, wrongBoth),
    };
  };
  const active = judges.map((_, j) => labelled[j]! > 0);
  const effective = (correlations: readonly (number | null)[]) => {
    const kActive = active.filter(Boolean).length;
    const defined = pairIndex
      .map(([a, b], p) => (active[a] && active[b] ? correlations[p] : null))
      .filter((r): r is number => r !== null && r !== undefined);
    const rho = defined.length === 0 ? null : defined.reduce((s, r) => s + r, 0) / defined.length;
    return { kActive, pairs: defined.length, rho, value: effectiveNumber(kActive, rho) };
  };

  /** Every figure on the items at `ix`, keyed for the bootstrap. */
  const statistics = (ix: Indices): Record<string, number | null> => {
    const out: Record<string, number | null> = {
      majority: majorityAccuracy(ix),
    };
    judges.forEach((_, j) => {
      out[`accuracy${j}`] = accuracyOf(j, ix);
    });
    const correlations = pairIndex.map(([a, b], p) => {
      const pair = pairOf(a, b, ix);
      out[`agreement${p}`] = pair.agreement;
      out[`correlation${p}`] = pair.errorCorrelation;
      return pair.errorCorrelation;
    });
    out.effective = k < 2 ? null : effective(correlations).value;
    return out;
  };

  const cis: Partial<Record<string, Interval>> =
    n > 0 && options.bootstrap !== false ? bootstrapCis(n, statistics, options.bootstrap || {}) : {};
  const metric = (key: string, value: number | null, over: number): MetricValue => {
    const ci = cis[key];
    return value !== null && ci ? { value, n: over, ci } : { value, n: over };
  };

  const pairs = pairIndex.map(([a, b], p): PanelPairSummary => {
    const pair = pairOf(a, b, all);
    return {
      judges: [judges[a]!, judges[b]!],
      agreement: metric(`agreement${p}`, pair.agreement, pair.both),
      errorCorrelation: metric(`correlation${p}`, pair.errorCorrelation, pair.both),
    };
  });
  const point = effective(pairs.map((p) => p.errorCorrelation.value));
  const judged = count(all, (i) => majority[i] !== MISSING);

  return {
    judges,
    items: n,
    accuracy: keyed(judges.map((judge, j) => [judge, metric(`accuracy${j}`, accuracies[j]!, labelled[j]!)])),
    pairs,
    majority: metric('majority', majorityAccuracy(all), judged),
    ties,
    tiesPolicy,
    majorityVsBest: versusBest(),
    effectiveJudges: {
      ...metric('effective', point.value, n),
      k: point.kActive,
      meanErrorCorrelation: point.rho,
      pairs: point.pairs,
    },
  };

  function versusBest(): PanelMajorityVsBest | null {
    const best = ranking[0];
    if (best === undefined || accuracies[best] === null) return null;
    // Correctness (0/1) of the best judge and of the majority on the items the best judge labelled.
    const rows = Array.from(all).filter((i) => at(i, best) !== MISSING);
    const bestRight = Uint8Array.from(rows, (i) => (at(i, best) === gold[i] ? 1 : 0));
    const majorityRight = Uint8Array.from(rows, (i) => (majority[i] === gold[i] ? 1 : 0));
    const share = (column: Uint8Array, ix: Indices | undefined) => {
      let right = 0;
      let total = 0;
      for (const r of ix ?? column.keys()) {
        right += column[r]!;
        total += 1;
      }
      return right / total;
    };
    const bestValue = share(bestRight, undefined);
    const majorityValue = share(majorityRight, undefined);
    const out: PanelMajorityVsBest = {
      bestJudge: judges[best]!,
      n: rows.length,
      best: bestValue,
      majority: majorityValue,
      delta: majorityValue - bestValue,
    };
    if (options.bootstrap === false) return out;
    const paired = pairedBootstrapsAt(
      rows.length,
      (side, ix) => ({ accuracy: share(side === 'base' ? bestRight : majorityRight, ix) }),
      options.bootstrap ?? {},
    ).accuracy;
    return paired ? { ...out, ci: paired.ci, pValue: paired.pValue } : out;
  }
}

/**
 * The design-effect count of independent judges: k / (1 + (k − 1)·ρ̄), clipped to [1, k]. Null
 * below two judges or without a mean error correlation.
 */
export function effectiveNumber(k: number, meanCorrelation: number | null): number | null {
  if (k < 2 || meanCorrelation === null) return null;
  const deff = 1 + (k - 1) * meanCorrelation;
  // A design effect at or below 0 (ρ̄ ≤ −1/(k − 1)) means more than k: clipped to k.
  if (deff <= 0) return k;
  return Math.min(k, Math.max(1, k / deff));
}

/**
 * Pearson's r of two 0/1 indicators from their counts over m items (the phi coefficient):
 * (m·n₁₁ − a·b) / √(a(m − a) · b(m − b)), a and b the ones of each, n₁₁ the ones in both.
 * Null when either indicator is constant.
 */
export function phi(m: number, a: number, b: number, both: number): number | null {
  const denominator = a * (m - a) * b * (m - b);
  if (denominator === 0) return null;
  return Math.max(-1, Math.min(1, (m * both - a * b) / Math.sqrt(denominator)));
}

function validLabel(value: ScoreValue): boolean {
  return typeof value !== 'number' || Number.isFinite(value);
}

function count(ix: Indices, keep: (i: number) => boolean): number {
  let c = 0;
  for (const i of ix) if (keep(i)) c += 1;
  return c;
}

/** The judges in the given order, or in order of first appearance; each named once. */
function judgesOf(items: readonly PanelItem[], given: readonly string[] | undefined): string[] {
  if (given) {
    if (new Set(given).size !== given.length) throw new RangeError('panel: a judge is named twice');
    return [...given];
  }
  const seen = new Set<string>();
  for (const item of items) for (const judge of Object.keys(item.labels)) seen.add(judge);
  return [...seen];
}

/** An object keyed by data (judge names, families) without a prototype: `__proto__` stays an ordinary key. */
function keyed<T>(entries: Iterable<readonly [string, T]> = []): Record<string, T> {
  const out = Object.create(null) as Record<string, T>;
  for (const [key, value] of entries) out[key] = value;
  return out;
}
