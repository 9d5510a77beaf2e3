/**
 * How stable a scorer's values are when the same item is scored several times (`run.repeats`):
 * the item's value from its repeats, the share of items whose repeats disagree, Krippendorff's
 * alpha across repeats, the pooled within-item SD of numbers, and the noise floor of a metric
 * (its SD across the single-repeat runs). Pure functions over plain values.
 *
 * A unit is one item: its values in repeat order, `null` where a repeat has no value (unscored).
 */
import type { ScoreKind, ScoreValue } from '../../model/model.js';
import type { Alpha, AlphaLevel, MetricValue, ScorerReliability } from '../../model/report.js';
import { HEADLINE_METRICS } from '../../model/report.js';
import { withheldReason } from './intervals.js';
import {
  LabelRows,
  type LabelRowsState,
  mergeRows,
  rowsFromState,
  type ScoreRow,
  type ScorerMetricOptions,
  scorerFigures,
  ValueRows,
  type ValueRowsState,
} from './scores.js';
import { type BootstrapOptions, bootstrapCi, bootstrapCis } from './stats.js';

/** One repeat's value of an item; null when that repeat has none. */
export type RepeatValue = ScoreValue | null;

/**
 * The item's value from its repeats: the mean of numbers; for labels and passes the value most
 * repeats gave. A tie between the most frequent values goes to the one that came first in
 * repeat order (`tie: true`). Undefined when no repeat has a value.
 */
export function combineRepeats(
  kind: ScoreKind,
  values: readonly RepeatValue[],
): { value: ScoreValue; tie: boolean } | undefined {
  const present = values.filter((v): v is ScoreValue => v !== null);
  if (present.length === 0) return undefined;
  if (kind === 'number') {
    const numbers = present as number[];
    return { value: numbers.reduce((a, b) => a + b, 0) / numbers.length, tie: false };
  }
  const counts = new Map<ScoreValue, number>();
  for (const v of present) counts.set(v, (counts.get(v) ?? 0) + 1);
  const top = Math.max(...counts.values());
  // Map keeps insertion order: the first value at the top count is the earliest repeat's.
  const leaders = [...counts].filter(([, n]) => n === top);
  return { value: leaders[0]![0], tie: leaders.length > 1 };
}

/** The values of a unit that can be paired (not null). */
const present = (unit: readonly RepeatValue[]) => unit.filter((v): v is ScoreValue => v !== null);

/**
 * Share of items whose repeats disagree: among items with at least two values, those whose
 * values are not all equal. Null when no item has two values.
 */
export function flipRate(units: readonly (readonly RepeatValue[])[]): { value: number | null; n: number } {
  let n = 0;
  let flips = 0;
  for (const unit of units) {
    const values = present(unit);
    if (values.length < 2) continue;
    n += 1;
    if (values.some((v) => v !== values[0])) flips += 1;
  }
  return { value: n === 0 ? null : flips / n, n };
}

/** C(n, k), as a float (0 when k > n). */
function choose(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let out = 1;
  for (let i = 1; i <= k; i++) out = (out * (n - k + i)) / i;
  return out;
}

/**
 * How often a pass scorer's items pass across their repeats, each item one unit, every figure
 * the mean over items of the item's own estimate, with a percentile bootstrap over items:
 *
 * - `passRate`: the item's share of passing repeats (c / n of its n repeats with a value);
 * - `passAllK` (pass^k): the chance that k repeats drawn from the item's n all pass,
 *   C(c, k) / C(n, k) — with n = k, 1 when every repeat passed, else 0;
 * - `passAnyK` (pass@k): the chance that at least one of k drawn passes, 1 − C(n − c, k) / C(n, k).
 *
 * pass^k and pass@k are over the items with at least k values (a repeat without a value — an
 * error — leaves an item short); `short` counts the items left out. Null when no item counts.
 */
export function passRepeats(
  units: readonly (readonly RepeatValue[])[],
  k: number,
  bootstrap: BootstrapOptions | false = {},
): { k: number; passRate: MetricValue; passAllK: MetricValue; passAnyK: MetricValue; short: number } {
  const shares: number[] = [];
  const all: number[] = [];
  const any: number[] = [];
  let short = 0;
  for (const unit of units) {
    const values = present(unit);
    if (values.length === 0) continue;
    const passes = values.filter((v) => v === true).length;
    shares.push(passes / values.length);
    if (values.length < k) {
      short += 1;
      continue;
    }
    const ways = choose(values.length, k);
    all.push(choose(passes, k) / ways);
    any.push(1 - choose(values.length - passes, k) / ways);
  }
  const mean = (values: readonly number[]): MetricValue => {
    if (values.length === 0) return { value: null, n: 0 };
    const out: MetricValue = { value: values.reduce((a, b) => a + b, 0) / values.length, n: values.length };
    if (bootstrap === false) return out;
    const ci = bootstrapCi(
      values.length,
      (ix) => {
        let total = 0;
        for (const i of ix) total += values[i]!;
        return total / ix.length;
      },
      bootstrap,
    );
    return ci ? { ...out, ci } : out;
  };
  return { k, passRate: mean(shares), passAllK: mean(all), passAnyK: mean(any), short };
}

/**
 * One unit as alpha needs it: its pairable values `m`, its share of the observed disagreement
 * (Σ over ordered pairs of the unit's values of δ², divided by m − 1), and what the expected
 * disagreement is built from (category counts for nominal; Σv and Σv² for interval). An ordinal
 * unit keeps its category counts only: its δ² depends on every value drawn (see `ordinalAlpha`).
 */
interface AlphaUnit {
  m: number;
  observed: number;
  counts?: Map<string, number>;
  sum?: number;
  sumSq?: number;
  /** `counts` coded (see {@link categoryTable}): each category's place in the table, and its count. */
  cats?: Int32Array;
  ks?: Float64Array;
}

/**
 * The categories of coded units (nominal and ordinal), each given a place in first-seen order,
 * and the places in scale order: the units' `cats` and `ks` are filled in, so that a draw tallies
 * its categories in an array, not a map (a bootstrap draws thousands of times).
 */
interface CategoryTable {
  size: number;
  /** The places sorted by the categories' rank on the scale. */
  order: Int32Array;
  /** A category's place. */
  place(value: string): number | undefined;
}

function categoryTable(units: readonly AlphaUnit[], rank: (value: string) => number): CategoryTable {
  const places = new Map<string, number>();
  const names: string[] = [];
  for (const unit of units) {
    if (!unit.counts) continue;
    const cats = new Int32Array(unit.counts.size);
    const ks = new Float64Array(unit.counts.size);
    let j = 0;
    for (const [c, k] of unit.counts) {
      let place = places.get(c);
      if (place === undefined) {
        place = names.length;
        places.set(c, place);
        names.push(c);
      }
      cats[j] = place;
      ks[j] = k;
      j += 1;
    }
    unit.cats = cats;
    unit.ks = ks;
  }
  const order = Int32Array.from(names.keys()).sort((a, b) => rank(names[a]!) - rank(names[b]!));
  return { size: names.length, order, place: (value) => places.get(value) };
}

function alphaUnit(values: readonly ScoreValue[], level: AlphaLevel): AlphaUnit {
  const m = values.length;
  if (level === 'ordinal') {
    const counts = new Map<string, number>();
    for (const v of values) counts.set(String(v), (counts.get(String(v)) ?? 0) + 1);
    return { m, observed: 0, counts };
  }
  if (level === 'interval') {
    let sum = 0;
    let sumSq = 0;
    for (const v of values) {
      const x = Number(v);
      sum += x;
      sumSq += x * x;
    }
    // Σ over ordered pairs i ≠ j of (v_i − v_j)² = 2mΣv² − 2(Σv)².
    return { m, observed: Math.max(0, 2 * m * sumSq - 2 * sum * sum) / (m - 1), sum, sumSq };
  }
  const counts = new Map<string, number>();
  for (const v of values) counts.set(String(v), (counts.get(String(v)) ?? 0) + 1);
  let same = 0;
  for (const c of counts.values()) same += c * c;
  // Ordered pairs of different values: m² − Σ n_c².
  return { m, observed: (m * m - same) / (m - 1), counts };
}

/** Alpha of the units at `indices` (each index one draw of a unit; repeats allowed). */
function alphaOf(
  units: readonly AlphaUnit[],
  indices: Iterable<number>,
  level: AlphaLevel,
  table: CategoryTable,
): number | null {
  if (level === 'ordinal') return ordinalAlpha(units, indices, table);
  let n = 0;
  let observed = 0;
  let sum = 0;
  let sumSq = 0;
  const counts = new Float64Array(table.size);
  for (const i of indices) {
    const unit = units[i]!;
    n += unit.m;
    observed += unit.observed;
    if (level === 'interval') {
      sum += unit.sum!;
      sumSq += unit.sumSq!;
    } else {
      const { cats, ks } = unit;
      for (let j = 0; j < cats!.length; j += 1) counts[cats![j]!]! += ks![j]!;
    }
  }
  if (n < 2) return null;
  let expected: number;
  if (level === 'interval') expected = Math.max(0, 2 * n * sumSq - 2 * sum * sum);
  else {
    let same = 0;
    for (const c of counts) same += c * c;
    expected = n * n - same;
  }
  // No variation at all among the values: agreement is undefined, not perfect.
  if (expected <= 1e-12 * Math.max(1, n * n)) return null;
  return 1 - ((n - 1) * observed) / expected;
}

/**
 * Each category's mid-rank among values counted `counts` (by place in the table): the values
 * below it on the scale, plus the middle of its own run. Categories not drawn have none.
 */
function midRanks(counts: Float64Array, table: CategoryTable): Float64Array {
  const midRank = new Float64Array(table.size);
  let below = 0;
  for (const c of table.order) {
    const k = counts[c]!;
    if (k === 0) continue;
    midRank[c] = below + (k + 1) / 2;
    below += k;
  }
  return midRank;
}

/**
 * Ordinal alpha of the units at `indices`: Krippendorff's ordinal metric, δ²(c, k) =
 * (Σ_{g from c to k} n_g − (n_c + n_k) / 2)² with n_g how often category g occurs among all the
 * values drawn, which is the squared difference of the two categories' mid-ranks among those
 * values. So it is interval alpha on mid-ranks: each value is replaced by its category's
 * mid-rank (the categories in scale order), then both disagreements are sums of squares.
 */
function ordinalAlpha(
  units: readonly AlphaUnit[],
  indices: Iterable<number>,
  table: CategoryTable,
): number | null {
  const drawn = Array.from(indices);
  const counts = new Float64Array(table.size);
  let n = 0;
  for (const i of drawn) {
    const unit = units[i]!;
    n += unit.m;
    const { cats, ks } = unit;
    for (let j = 0; j < cats!.length; j += 1) counts[cats![j]!]! += ks![j]!;
  }
  if (n < 2) return null;
  const midRank = midRanks(counts, table);
  let observed = 0;
  let sum = 0;
  let sumSq = 0;
  for (const i of drawn) {
    const unit = units[i]!;
    const { cats, ks } = unit;
    let s = 0;
    let sq = 0;
    for (let j = 0; j < cats!.length; j += 1) {
      const r = midRank[cats![j]!]!;
      const k = ks![j]!;
      s += k * r;
      sq += k * r * r;
    }
    // Σ over the unit's ordered pairs of (r_i − r_j)² = 2mΣr² − 2(Σr)², weighted 1 / (m − 1).
    observed += Math.max(0, 2 * unit.m * sq - 2 * s * s) / (unit.m - 1);
    sum += s;
    sumSq += sq;
  }
  const expected = Math.max(0, 2 * n * sumSq - 2 * sum * sum);
  if (expected <= 1e-12 * Math.max(1, n * n)) return null;
  return 1 - ((n - 1) * observed) / expected;
}

/**
 * Krippendorff's alpha of units scored by several "coders" (here: repeats), missing values
 * allowed: α = 1 − D_o / D_e, with D_o from the coincidences within units (each unit's pairs
 * weighted 1 / (m_u − 1)) and D_e from all pairable values; δ² = [c ≠ k] (nominal), the squared
 * difference of mid-ranks (ordinal, see `ordinalAlpha`) or (c − k)² (interval). An ordinal
 * scale runs in the order of `scale` (values as text, low to high; values not in it come after,
 * in text order), or without one in the values' numeric order. Units with fewer than two values
 * are left out. The interval resamples units with the shared bootstrap (seeded, so reproducible).
 */
export function krippendorffAlpha(
  units: readonly (readonly RepeatValue[])[],
  level: AlphaLevel,
  bootstrap: BootstrapOptions | false = {},
  scale?: readonly string[],
): Alpha {
  const pairable = units.filter((unit) => present(unit).length >= 2);
  const statistic = alphaStatistic(pairable, level, scale);
  const value = statistic(pairable.map((_, i) => i));
  const out: Alpha = { value, n: pairable.length };
  if (value === null || bootstrap === false) return out;
  // The percentile bootstrap of alpha covers poorly on few units (the coverage bench).
  const withheld = withheldReason('alpha', pairable.length);
  if (withheld) return { ...out, reason: withheld };
  const ci = bootstrapCis(pairable.length, (ix) => ({ alpha: statistic(ix) }), bootstrap).alpha;
  if (ci) out.ci = ci;
  return out;
}

/**
 * Alpha as a statistic of a draw of units (see {@link krippendorffAlpha}): given the indices of
 * the units drawn (repeats allowed, as a bootstrap resample draws them), their alpha. Units with
 * fewer than two values are kept in place but add nothing, so the indices can run over every
 * item of a larger set (the items another figure is resampled over, on the same resamples).
 */
export function alphaStatistic(
  units: readonly (readonly RepeatValue[])[],
  level: AlphaLevel,
  scale?: readonly string[],
): (indices: Iterable<number>) => number | null {
  const coded = units.map((unit) => {
    const values = present(unit);
    return values.length >= 2 ? alphaUnit(values, level) : undefined;
  });
  const pairable = coded.filter((unit): unit is AlphaUnit => unit !== undefined);
  const table = categoryTable(pairable, scaleRank(pairable, scale));
  return (indices) => {
    const drawn: number[] = [];
    for (const i of indices) if (coded[i] !== undefined) drawn.push(i);
    return alphaOf(coded as AlphaUnit[], drawn, level, table);
  };
}

/**
 * Krippendorff's alpha between a judge and the units' coders: alpha of the reliability data whose
 * units are the pairs (the judge's value of a unit, one coder's value of it), every coder value
 * of a unit with a judge value paired with it once. So D_o is the mean δ² between the judge and
 * a coder, and D_e the disagreement expected among the values of those pairs pooled (the
 * judge's, once per coder value, and the coders'): alpha's own construction, on judge–coder
 * pairs where alpha among the coders has coder–coder pairs. A judge that always gives the
 * commonest label scores about 0, however high its raw agreement; one that disagrees with the
 * coders less than they do with each other scores above their alpha.
 *
 * A unit counts when it has a judge value and a coder value. At the ordinal level the mid-ranks
 * are those of the pooled values (a judge's value is a category of its own when no coder gave
 * it). Given the indices of the units drawn (repeats allowed, as a bootstrap draws them); null
 * when no unit pairs the judge with a coder, or the pooled values never vary.
 */
export function judgeAlphaStatistic(
  units: readonly (readonly RepeatValue[])[],
  judge: readonly RepeatValue[],
  level: AlphaLevel,
  scale?: readonly string[],
): (indices: Iterable<number>) => number | null {
  // Each unit with a judge value: its judge–coder pairs as a unit of their own values pooled,
  // the judge's value once per coder value. Nominal and interval need only the sums below.
  interface Paired {
    m: number;
    j: string;
    x: number;
    counts: Map<string, number>;
    miss: number;
    sum: number;
    sumSq: number;
  }
  const paired: (Paired | undefined)[] = units.map((unit, i) => {
    const values = present(unit);
    const j = judge[i];
    if (values.length === 0 || j === null || j === undefined) return undefined;
    const m = values.length;
    const key = String(j);
    const x = Number(j);
    const counts = new Map<string, number>([[key, m]]);
    let miss = 0;
    let sum = m * x;
    let sumSq = m * x * x;
    for (const v of values) {
      const c = String(v);
      counts.set(c, (counts.get(c) ?? 0) + 1);
      if (level === 'nominal') miss += c === key ? 0 : 1;
      else if (level === 'interval') miss += (x - Number(v)) ** 2;
      sum += Number(v);
      sumSq += Number(v) ** 2;
    }
    return { m, j: key, x, counts, miss, sum, sumSq };
  });
  const kept = paired.filter((p): p is Paired => p !== undefined);
  const coded = kept.map((p) => ({ m: 2 * p.m, observed: 0, counts: p.counts }) as AlphaUnit);
  const table = categoryTable(coded, scaleRank(coded, scale));
  // Per unit with a judge value: its pooled categories coded, and the judge's place among them.
  const codedOf = new Map(kept.map((p, i) => [p, coded[i]!]));
  const judgePlace = new Map(kept.map((p) => [p, table.place(p.j)!]));
  return (indices) => {
    let n = 0;
    let miss = 0;
    let sum = 0;
    let sumSq = 0;
    const counts = new Float64Array(table.size);
    const drawn: Paired[] = [];
    for (const i of indices) {
      const p = paired[i];
      if (p === undefined) continue;
      drawn.push(p);
      n += 2 * p.m;
      miss += p.miss;
      sum += p.sum;
      sumSq += p.sumSq;
      if (level !== 'interval') {
        const { cats, ks } = codedOf.get(p)!;
        for (let j = 0; j < cats!.length; j += 1) counts[cats![j]!]! += ks![j]!;
      }
    }
    if (n < 2) return null;
    let expected: number;
    if (level === 'interval') expected = Math.max(0, 2 * n * sumSq - 2 * sum * sum);
    else if (level === 'nominal') {
      let same = 0;
      for (const c of counts) same += c * c;
      expected = n * n - same;
    } else {
      // Interval alpha on the pooled values' mid-ranks (see `ordinalAlpha`).
      const midRank = midRanks(counts, table);
      let rs = 0;
      let rsq = 0;
      for (let c = 0; c < table.size; c += 1) {
        rs += counts[c]! * midRank[c]!;
        rsq += counts[c]! * midRank[c]! ** 2;
      }
      expected = Math.max(0, 2 * n * rsq - 2 * rs * rs);
      miss = 0;
      for (const p of drawn) {
        const j = judgePlace.get(p)!;
        const rj = midRank[j]!;
        const { cats, ks } = codedOf.get(p)!;
        for (let x = 0; x < cats!.length; x += 1)
          if (cats![x] !== j) miss += ks![x]! * (rj - midRank[cats![x]!]!) ** 2;
      }
    }
    if (expected <= 1e-12 * Math.max(1, n * n)) return null;
    // Each judge–coder pair is a unit of two values: its ordered pairs count 2δ² / (2 − 1).
    return 1 - ((n - 1) * 2 * miss) / expected;
  };
}

/**
 * The distance alpha weighs a scorer's disagreements by: ordinal when its values are a declared
 * scale (ordinal labels in their order, an integer range), interval for other numbers, nominal
 * for labels and passes. The scale of ordinal labels is their declared order.
 */
export function alphaLevel(
  kind: ScoreKind,
  options: ScorerMetricOptions = {},
): { level: AlphaLevel; scale?: readonly string[] } {
  const scaled =
    options.ordinal === true && (kind === 'number' || (kind === 'label' && options.labelOrder !== undefined));
  const level: AlphaLevel = scaled ? 'ordinal' : kind === 'number' ? 'interval' : 'nominal';
  return level === 'ordinal' && kind === 'label' ? { level, scale: options.labelOrder } : { level };
}

/**
 * Each ordinal category's place on the scale: its index in `scale` (values not in it after
 * every listed one, in text order), or without a scale the value read as a number.
 */
function scaleRank(units: readonly AlphaUnit[], scale?: readonly string[]): (value: string) => number {
  if (!scale) return Number;
  const places = new Map(scale.map((value, i) => [value, i]));
  const unlisted = new Set<string>();
  for (const unit of units) for (const c of unit.counts?.keys() ?? []) if (!places.has(c)) unlisted.add(c);
  for (const c of [...unlisted].sort()) places.set(c, places.size);
  return (value) => places.get(value)!;
}

/**
 * Pooled within-item SD of numbers: √(Σ (m_u − 1)·s_u² / Σ (m_u − 1)) over items with at least
 * two values, s_u² each item's sample variance. Null when no item has two values.
 */
export function withinItemSd(units: readonly (readonly RepeatValue[])[]): number | null {
  let squares = 0;
  let df = 0;
  for (const unit of units) {
    const values = present(unit).map(Number);
    if (values.length < 2) continue;
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    for (const v of values) squares += (v - mean) ** 2;
    df += values.length - 1;
  }
  return df === 0 ? null : Math.sqrt(squares / df);
}

/**
 * The noise floor of a metric: the sample SD (n − 1) of its values on the single-repeat runs
 * (the metric on repeat 1's values, on repeat 2's, …). Null repeats are left out; null when
 * fewer than two repeats have a value.
 */
export function noiseFloor(perRepeat: readonly (number | null)[]): number | null {
  const values = perRepeat.filter((v): v is number => v !== null);
  if (values.length < 2) return null;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / (values.length - 1));
}

/** {@link RepeatRows} saved: each item's repeat values, and each repeat's rows as its kind keeps them. */
export interface RepeatRowsState {
  kind: ScoreKind;
  repeats: number;
  ties: number;
  units: RepeatValue[][];
  runs: (LabelRowsState | ValueRowsState)[];
  /** Kept no units (see the constructor's `units`). */
  unitless?: true;
}

/**
 * A scorer's rows seen repeat by repeat, fed one result at a time: each item's repeat values
 * (the units of alpha and the flip rate) and, per repeat, the rows its single-repeat run would
 * have had (for the noise floor of each metric), kept as a scorer's rows are.
 */
export class RepeatRows {
  private readonly units: RepeatValue[][] = [];
  private readonly runs: (LabelRows | ValueRows)[];
  private ties = 0;
  private readonly keepUnits: boolean;

  /**
   * With `units: false`, each item's repeat values are not kept (an array an item): only each
   * repeat's rows, enough for {@link noiseFloors} (a comparison's noise floors), not for alpha
   * or the flip rate.
   */
  constructor(
    private readonly kind: ScoreKind,
    readonly repeats: number,
    { units = true }: { units?: boolean } = {},
  ) {
    this.keepUnits = units;
    this.runs = Array.from({ length: repeats }, () =>
      kind === 'label' ? new LabelRows() : new ValueRows(kind),
    );
  }

  /**
   * One item: its row (the item's value, gold and unscored reason) and its score's repeat
   * values. An item without them (a failed item: no repeat solved it) is the same row in every repeat.
   */
  add(row: ScoreRow, values?: readonly RepeatValue[], tie?: boolean): void {
    if (tie) this.ties += 1;
    if (values && this.keepUnits) this.units.push([...values]);
    for (let r = 0; r < this.repeats; r++) {
      let own = row;
      if (values) {
        const value = values[r] ?? null;
        own =
          value === null
            ? {
                unscored: row.unscored ?? 'internal',
                ...(row.target !== undefined ? { target: row.target } : {}),
              }
            : { value, ...(row.target !== undefined ? { target: row.target } : {}) };
      }
      this.runs[r]!.add(own);
    }
  }

  /** Appends `later`, the items that come after this one's. */
  merge(later: RepeatRows): void {
    this.ties += later.ties;
    for (const unit of later.units) this.units.push(unit);
    this.runs.forEach((rows, r) => {
      mergeRows(rows, later.runs[r]!);
    });
  }

  toState(): RepeatRowsState {
    return {
      kind: this.kind,
      repeats: this.repeats,
      ties: this.ties,
      // The units themselves, not copies (an array an item): none changes once added.
      units: this.units,
      runs: this.runs.map((rows) => rows.toState()),
      ...(this.keepUnits ? {} : { unitless: true as const }),
    };
  }

  static fromState(state: RepeatRowsState): RepeatRows {
    const rows = new RepeatRows(state.kind, state.repeats, { units: !state.unitless });
    rows.ties = state.ties;
    for (const unit of state.units) rows.units.push(unit);
    state.runs.forEach((run, r) => {
      rows.runs[r] = rowsFromState(run);
    });
    return rows;
  }

  /**
   * Each headline metric's values on the single-repeat runs (`perRepeat`), and its noise floor:
   * their SD (see {@link noiseFloor}).
   */
  noiseFloors(options: ScorerMetricOptions = {}): {
    noiseFloor: Record<string, number | null>;
    perRepeat: Record<string, (number | null)[]>;
  } {
    const perRun = this.runs.map(
      (rows) => scorerFigures(this.kind, rows, { ...options, bootstrap: false }).summary.metrics,
    );
    const noise: Record<string, number | null> = {};
    const perRepeat: Record<string, (number | null)[]> = {};
    for (const metric of HEADLINE_METRICS[this.kind]) {
      if (!perRun.some((m) => m[metric] !== undefined)) continue;
      perRepeat[metric] = perRun.map((m) => m[metric]?.value ?? null);
      noise[metric] = noiseFloor(perRepeat[metric]);
    }
    return { noiseFloor: noise, perRepeat };
  }

  figures(options: ScorerMetricOptions = {}): ScorerReliability {
    if (!this.keepUnits) throw new RangeError('RepeatRows: kept without units, it has noise floors only');
    // A declared scale (ordinal labels in their order, an integer range) weighs a disagreement by
    // how far apart the two values are on it.
    const { level, scale } = alphaLevel(this.kind, options);
    const { noiseFloor: noise, perRepeat } = this.noiseFloors(options);
    const flips = flipRate(this.units);
    return {
      repeats: this.repeats,
      n: flips.n,
      flipRate: flips.value,
      ties: this.ties,
      alpha: { level, ...krippendorffAlpha(this.units, level, options.bootstrap ?? {}, scale) },
      ...(this.kind === 'number' ? { withinItemSd: withinItemSd(this.units) } : {}),
      ...(this.kind === 'pass'
        ? { passes: passRepeats(this.units, this.repeats, options.bootstrap ?? {}) }
        : {}),
      noiseFloor: noise,
      perRepeat,
    };
  }
}
