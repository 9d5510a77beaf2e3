/**
 * The promotion gate: conditions a sweep variant must meet, written as text in the suite and
 * evaluated on the variant's figures, the baseline's, and their paired comparison. Pure.
 *
 * ```
 * condition := ["delta"] metric [where] op rhs ["with p <" alpha]
 * metric    := "p50 latency" | "p95 latency" | "cost per 10k" | name ["[" column "=" value "]"] | scorer.name […]
 * where     := "where" ("words" | "chars") ["(" column ")"] op number     (latency only)
 * rhs       := number | "baseline" [("+" | "-") number] | ["-"] "noise"
 * op        := ">=" | ">" | "<=" | "<" | "=="
 * ```
 *
 * - `accuracy >= 0.8`: absolute; `kappa >= baseline - 0.05`: relative to the baseline's value.
 * - `delta accuracy > 0 with p < 0.05`: the paired difference (variant − baseline on the same
 *   items) with the paired bootstrap's two-sided p-value; `with p` works on any condition on a
 *   scorer metric and asks that the paired difference be significant too.
 * - `delta accuracy > noise`: the paired difference must exceed the metric's noise floor, the
 *   larger of the variant's and the baseline's (report.json `scores.<scorer>.reliability
 *   .noiseFloor`, from runs with `run.repeats` > 1); `delta accuracy > -noise`: no worse than
 *   the noise. `noise` is compared with a delta of a scorer metric only.
 * - `p50 latency where words(transcript) >= 150 < baseline`: a latency percentile over the
 *   items whose input has at least 150 words (`words` alone counts every input column).
 * - `accuracy[subset=Natural] >= 0.8`, `delta accuracy[lang=de] >= -0.02`: a metric of the
 *   primary scorer over the items of one value of a slice column (the suite's `slices`, report.json
 *   `slices`; `[lang=]` or `[lang=(none)]` for the items without one). A value the run does not
 *   have fails the condition and says so.
 * - A name is looked up as a run figure (`scored_rate`, `parse_valid_rate`, `error_rate`), then
 *   a metric of the primary scorer, then a figure of the family's report metrics (`binary.f1`).
 * - `coverage` (or `<scorer>.coverage`): the share of a scorer's items it scored (invalid rows and
 *   items a sequential gate settled left out); its delta is the paired difference over the items
 *   of both runs. Every scorer metric's delta is over the items both runs scored.
 *
 * A condition with no data on either side (a metric that is n/a, a slice with no items) fails
 * and says so: a gate never promotes on figures it does not have. Nor does it promote a variant
 * for leaving the hard items unscored: {@link coverageGuard} fails a variant whose coverage is
 * below the baseline's beyond chance unless a condition on `coverage` says what is acceptable.
 */

import { InputError } from '../model/errors.js';
import { type MetricValue, NO_VALUE, type Report } from '../model/report.js';
import type { PairedDelta } from './metrics/index.js';
import { percentile } from './metrics/stats.js';

export type Op = '>=' | '>' | '<=' | '<' | '==';

export interface Slice {
  measure: 'words' | 'chars';
  /** Input column; undefined: every input column. */
  column?: string;
  op: Op;
  value: number;
}

/** The items of one value of a slice column (`accuracy[lang=de]`). */
export interface SliceRef {
  column: string;
  /** As report.json keys it: `(none)` for the items without a value. */
  value: string;
}

export type MetricRef =
  | { kind: 'latency'; percentile: number; slice?: Slice }
  | { kind: 'cost' }
  /**
   * A run figure, a scorer metric (`scorer.metric`), a primary-scorer metric or a family figure;
   * with `slice`, a primary-scorer metric over the items of one slice value.
   */
  | { kind: 'named'; name: string; slice?: SliceRef };

export interface Condition {
  text: string;
  delta: boolean;
  metric: MetricRef;
  op: Op;
  rhs:
    | { kind: 'number'; value: number }
    | { kind: 'baseline'; offset: number }
    /** The metric's noise floor (the larger of the two runs'), times `sign`. */
    | { kind: 'noise'; sign: 1 | -1 };
  /** `with p < alpha`. */
  alpha?: number;
}

export class GateSyntaxError extends InputError {
  override readonly name = 'GateSyntaxError';
}

/** The parts of a condition as written, before they are read (see {@link conditionParts}). */
interface ConditionParts {
  delta: boolean;
  metric: string;
  measure?: string;
  column?: string;
  sliceOp?: string;
  sliceValue?: string;
  op: string;
  rhs: string;
  alpha?: string;
}

const OPS = ['>=', '<=', '==', '>', '<'] as const;
const isSpace = (c: string | undefined) => c !== undefined && /\s/.test(c);
const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
const isWordStart = (c: string | undefined) => c !== undefined && /[A-Za-z_]/.test(c);
const isWord = (c: string | undefined) => c !== undefined && /[\w.]/.test(c);

/**
 * A cursor over a condition's text: each step reads forward from its position and moves past
 * what it read, or fails and stays (an `attempt` puts it back). The parser retries only a fixed
 * number of alternatives, never one per character, so a condition is read in time linear in
 * its length, however many spaces it holds.
 */
class Cursor {
  at = 0;
  constructor(readonly text: string) {}

  get done(): boolean {
    return this.at >= this.text.length;
  }

  /** Skips whitespace; how much it skipped. */
  spaces(): number {
    const from = this.at;
    while (isSpace(this.text[this.at])) this.at++;
    return this.at - from;
  }

  /** At least one whitespace character, skipped; false (and nothing skipped) when none. */
  someSpace(): boolean {
    return this.spaces() > 0;
  }

  /** `word` here, in any case. */
  keyword(word: string): boolean {
    if (this.text.slice(this.at, this.at + word.length).toLowerCase() !== word) return false;
    this.at += word.length;
    return true;
  }

  /** Runs `step`; where it fails, puts the cursor back. */
  attempt<T>(step: () => T | undefined): T | undefined {
    const from = this.at;
    const out = step();
    if (out === undefined) this.at = from;
    return out;
  }

  /** The text read since `from`. */
  since(from: number): string {
    return this.text.slice(from, this.at);
  }

  /** Skips digits; how many it skipped. */
  digits(): number {
    const from = this.at;
    while (isDigit(this.text[this.at])) this.at++;
    return this.at - from;
  }

  /**
   * `lead`, an optional `sign`, then at least one digit (`.5`, `e-3`, `e3`), skipped; false
   * (nothing skipped) when not there.
   */
  part(lead: string, sign?: string): boolean {
    const from = this.at;
    if (this.keyword(lead)) {
      if (sign) this.keyword(sign);
      if (this.digits() > 0) return true;
    }
    this.at = from;
    return false;
  }

  /** `\d+(\.\d+)?(e-?\d+)?`: an unsigned number as conditions write it. */
  unsigned(): string | undefined {
    const from = this.at;
    if (this.digits() === 0) return undefined;
    this.part('.');
    this.part('e', '-');
    return this.since(from);
  }

  /** An unsigned number, or one after a `-`. */
  number(): string | undefined {
    return this.attempt(() => {
      const from = this.at;
      this.keyword('-');
      return this.unsigned() === undefined ? undefined : this.since(from);
    });
  }

  op(): string | undefined {
    const found = OPS.find((op) => this.text.startsWith(op, this.at));
    if (found) this.at += found.length;
    return found;
  }
}

/**
 * A metric's text: `p50 latency`, `cost per 10k`, or a name (`accuracy`, `label.kappa`) with an
 * optional slice `[column=value]`. Each form in turn, as `rest` accepts what follows it.
 */
function metricThen<T>(cursor: Cursor, rest: () => T | undefined): { metric: string; rest: T } | undefined {
  const forms: (() => boolean)[] = [
    () => {
      if (!cursor.keyword('p')) return false;
      const digits = cursor.digits();
      if (digits < 1 || digits > 2) return false;
      cursor.part('.');
      return cursor.someSpace() && cursor.keyword('latency');
    },
    () =>
      cursor.keyword('cost') &&
      cursor.someSpace() &&
      cursor.keyword('per') &&
      cursor.someSpace() &&
      cursor.keyword('10k'),
    () => {
      if (!isWordStart(cursor.text[cursor.at])) return false;
      while (isWord(cursor.text[cursor.at])) cursor.at++;
      cursor.attempt(() => {
        cursor.spaces();
        if (!cursor.keyword('[')) return undefined;
        const close = cursor.text.indexOf(']', cursor.at);
        if (close < 0) return undefined;
        cursor.at = close + 1;
        return true;
      });
      return true;
    },
  ];
  const from = cursor.at;
  for (const form of forms) {
    cursor.at = from;
    if (!form()) continue;
    const metric = cursor.since(from);
    const after = cursor.attempt(rest);
    if (after !== undefined) return { metric, rest: after };
  }
  cursor.at = from;
  return undefined;
}

/** ` where words(column) >= 150`: a latency slice, its parts. */
function whereClause(
  cursor: Cursor,
): Pick<ConditionParts, 'measure' | 'column' | 'sliceOp' | 'sliceValue'> | undefined {
  return cursor.attempt(() => {
    if (!cursor.someSpace() || !cursor.keyword('where') || !cursor.someSpace()) return undefined;
    const measure = ['words', 'chars'].find((word) => cursor.keyword(word));
    if (!measure) return undefined;
    const column = cursor.attempt(() => {
      cursor.spaces();
      if (!cursor.keyword('(')) return undefined;
      const close = cursor.text.indexOf(')', cursor.at);
      if (close < 0) return undefined;
      const inside = cursor.text.slice(cursor.at, close).trim();
      if (inside === '') return undefined;
      cursor.at = close + 1;
      return inside;
    });
    cursor.spaces();
    const sliceOp = cursor.op();
    if (!sliceOp) return undefined;
    cursor.spaces();
    const sliceValue = cursor.number();
    if (sliceValue === undefined) return undefined;
    return { measure, ...(column !== undefined ? { column } : {}), sliceOp, sliceValue };
  });
}

/** The right-hand side: `baseline [± x]`, `[-] noise`, or a number. */
function rhsOf(cursor: Cursor): string | undefined {
  const from = cursor.at;
  if (cursor.keyword('baseline')) {
    cursor.attempt(() => {
      cursor.spaces();
      if (!cursor.keyword('+') && !cursor.keyword('-')) return undefined;
      cursor.spaces();
      return cursor.unsigned();
    });
    return cursor.since(from);
  }
  const noise = cursor.attempt(() => {
    cursor.keyword('-');
    cursor.spaces();
    return cursor.keyword('noise') || undefined;
  });
  if (noise) return cursor.since(from);
  return cursor.number();
}

/** ` with p < 0.05`: the level, or undefined when the text does not say it. */
function alphaOf(cursor: Cursor): string | undefined {
  return cursor.attempt(() => {
    if (!cursor.someSpace() || !cursor.keyword('with') || !cursor.someSpace() || !cursor.keyword('p'))
      return undefined;
    cursor.spaces();
    if (!cursor.keyword('<')) return undefined;
    cursor.spaces();
    return cursor.number();
  });
}

/**
 * The parts of a condition (the grammar above), or undefined when it does not follow it.
 * Read left to right by a cursor with a bounded number of retries (a leading `delta` may be
 * a metric's name; a metric's forms are tried in turn), so in linear time.
 */
function conditionParts(text: string): ConditionParts | undefined {
  const cursor = new Cursor(text);
  const after = (delta: boolean): ConditionParts | undefined => {
    const read = metricThen(cursor, () => {
      const slice = whereClause(cursor) ?? {};
      cursor.spaces();
      const op = cursor.op();
      if (!op) return undefined;
      cursor.spaces();
      const rhs = rhsOf(cursor);
      if (rhs === undefined) return undefined;
      const alpha = alphaOf(cursor);
      cursor.spaces();
      if (!cursor.done) return undefined;
      return { ...slice, op, rhs, ...(alpha !== undefined ? { alpha } : {}) };
    });
    return read ? { delta, metric: read.metric, ...read.rest } : undefined;
  };
  const withDelta = cursor.attempt(() =>
    cursor.keyword('delta') && cursor.someSpace() ? after(true) : undefined,
  );
  return withDelta ?? after(false);
}

/** Reads one condition; a GateSyntaxError says what is wrong with it. */
export function parseCondition(text: string): Condition {
  const m = conditionParts(text.trim());
  if (!m)
    throw new GateSyntaxError(
      `gate condition ${JSON.stringify(text)} is not [delta] <metric>[<column>=<value>] [where words(<column>) >= N] <op> <number | baseline ± x | noise> [with p < a]`,
    );
  const metric = parseMetric(m.metric);
  if (m.measure && metric.kind === 'latency') {
    metric.slice = {
      measure: m.measure.toLowerCase() as Slice['measure'],
      op: normalOp(m.sliceOp!),
      value: Number(m.sliceValue),
    };
    if (m.column) metric.slice.column = m.column;
  }
  if (m.measure && metric.kind !== 'latency')
    throw new GateSyntaxError(`${text}: a "where" slice applies to latency percentiles only`);

  const rhsText = m.rhs.replace(/\s+/g, '').toLowerCase();
  const rhs: Condition['rhs'] = rhsText.startsWith('baseline')
    ? { kind: 'baseline', offset: rhsText === 'baseline' ? 0 : Number(rhsText.slice('baseline'.length)) }
    : rhsText.endsWith('noise')
      ? { kind: 'noise', sign: rhsText.startsWith('-') ? -1 : 1 }
      : { kind: 'number', value: Number(rhsText) };
  const delta = m.delta;
  if (rhs.kind === 'noise' && metric.kind === 'named' && metric.slice)
    throw new GateSyntaxError(
      `${text}: noise floors are the whole run's; a slice has none: compare its delta with a number`,
    );
  if (rhs.kind === 'noise' && (!delta || metric.kind !== 'named'))
    throw new GateSyntaxError(
      `${text}: noise (a metric's noise floor across repeats) is compared with the delta of a scorer metric: write delta <metric> > noise`,
    );
  if (delta && rhs.kind === 'baseline')
    throw new GateSyntaxError(
      `${text}: a delta is already relative to the baseline; compare it with a number`,
    );
  const condition: Condition = { text: text.trim(), delta, metric, op: normalOp(m.op), rhs };
  if (m.alpha !== undefined) {
    const alpha = Number(m.alpha);
    if (!(alpha > 0 && alpha <= 1))
      throw new GateSyntaxError(`${text}: p must be compared with a level in (0, 1]`);
    if (!delta && rhs.kind !== 'baseline')
      throw new GateSyntaxError(
        `${text}: "with p" needs a comparison with the baseline (delta, or baseline on the right)`,
      );
    if (metric.kind !== 'named')
      throw new GateSyntaxError(`${text}: "with p" needs a scorer metric (latency and cost are not paired)`);
    condition.alpha = alpha;
  }
  return condition;
}

/** A metric as conditions and `rankBy` name it: `p95 latency`, `cost per 10k`, `accuracy`, `label.kappa`. */
export function parseMetric(text: string): MetricRef {
  const normal = text.trim().replace(/\s+/g, ' ').toLowerCase();
  const latency = /^p(\d{1,2}(?:\.\d+)?) latency$/.exec(normal);
  if (latency) {
    const p = Number(latency[1]);
    if (!(p > 0 && p < 100)) throw new GateSyntaxError(`${text}: a latency percentile is between 0 and 100`);
    return { kind: 'latency', percentile: p };
  }
  if (normal === 'cost per 10k') return { kind: 'cost' };
  const sliced = /^([A-Za-z_][\w.]*)\s*\[(.*)\]$/s.exec(text.trim());
  if (sliced) {
    const [, name, inside] = sliced as unknown as [string, string, string];
    const eq = inside.indexOf('=');
    const column = eq < 0 ? '' : inside.slice(0, eq).trim();
    if (column === '' || inside.includes(']'))
      throw new GateSyntaxError(
        `${JSON.stringify(text)}: a slice is written [<column>=<value>] after the metric, e.g. accuracy[lang=de]`,
      );
    const value = inside.slice(eq + 1).trim();
    return { kind: 'named', name, slice: { column, value: value === '' ? NO_VALUE : value } };
  }
  if (!/^[A-Za-z_][\w.]*$/.test(text.trim()))
    throw new GateSyntaxError(
      `${JSON.stringify(text)} is not a metric (a name like accuracy or label.kappa, optionally of a slice as accuracy[lang=de], "p50 latency", "cost per 10k")`,
    );
  return { kind: 'named', name: text.trim() };
}

function normalOp(op: string): Op {
  return (op === '=' ? '==' : op) as Op;
}

/** What the gate reads of one variant. */
export interface GateFigures {
  report: Pick<Report, 'scores' | 'metrics' | 'primaryScorer' | 'cost' | 'latencyMs' | 'counts' | 'slices'>;
  /** Every item that called a model: its end-to-end latency and its input columns (latency slices). */
  items: readonly { latencyMs: number; input: Readonly<Record<string, string>> }[];
}

/** The variant's paired comparison with the baseline: per scorer, per metric. */
export type GatePairing = Readonly<
  Record<
    string,
    {
      deltas: Readonly<Record<string, PairedDelta>>;
      /** The paired difference of the scorer's coverage (the share of the paired items it scored). */
      coverage?: PairedDelta;
      /** The primary scorer: per slice column, per value, the paired deltas over that value's items. */
      slices?: Readonly<
        Record<string, Readonly<Record<string, { deltas: Readonly<Record<string, PairedDelta>> }>>>
      >;
    }
  >
>;

export interface ConditionVerdict {
  condition: string;
  passed: boolean;
  /** The variant's figure (or the delta); null when n/a. */
  value: number | null;
  /** What it was held against: the number, or the baseline's figure ± offset. */
  against: number | null;
  pValue?: number;
  /** The figures in words: why it passed or failed. */
  reason: string;
}

export interface GateVerdict {
  promoted: boolean;
  conditions: ConditionVerdict[];
  /** The conditions that failed, by text. */
  failed: string[];
}

/** Run figures any variant has, over the items that reached a model (invalid rows left out). */
const RUN_FIGURES: Record<string, (r: GateFigures['report']) => number | null> = {
  scored_rate: (r) => rate(r.counts.scored, r),
  error_rate: (r) => rate(r.counts.errors, r),
  parse_valid_rate: (r) => rate(r.counts.items - r.counts.invalidRows - (r.counts.byFailure.parse ?? 0), r),
};

function rate(count: number, r: GateFigures['report']): number | null {
  const n = r.counts.items - r.counts.invalidRows;
  return n === 0 ? null : count / n;
}

/** Where a named metric is found: a scorer's metric (pairable, with its n and CI), or another figure. */
export type Located =
  | { value: number | null; scorer?: string; metric?: string; found?: MetricValue }
  | { unknown: string };

/** `accuracy[lang=de]`: a metric as conditions name it. */
export function metricLabel(name: string, slice?: SliceRef): string {
  return slice ? `${name}[${slice.column}=${slice.value}]` : name;
}

/**
 * A primary-scorer metric of one slice value (`accuracy` or `<primary>.accuracy`): unknown, with
 * the reason, when the run is not sliced by the column or has no item of the value.
 */
function locateSliceMetric(name: string, slice: SliceRef, report: GateFigures['report']): Located {
  const primary = report.primaryScorer;
  const metric = name.startsWith(`${primary}.`) ? name.slice(primary.length + 1) : name;
  if (metric.includes('.'))
    return {
      unknown: `${metricLabel(name, slice)}: a slice has the primary scorer's metrics only (${primary}'s)`,
    };
  const columns = Object.keys(report.slices ?? {});
  const values = report.slices?.[slice.column];
  if (!values)
    return {
      unknown: `n/a: the run is not sliced by ${slice.column} (${columns.length > 0 ? `its slices: ${columns.join(', ')}` : 'the suite names no slices'})`,
    };
  const found = values[slice.value];
  if (!found) {
    const known = Object.keys(values);
    return {
      unknown: `n/a: the run has no items where ${slice.column} = ${slice.value} (its values: ${known.slice(0, 12).join(', ')}${known.length > 12 ? `, … ${known.length - 12} more` : ''})`,
    };
  }
  const m = found.metrics[metric];
  if (!m)
    return {
      unknown: `n/a: ${metricLabel(metric, slice)} has no figure (the slice's metrics: ${Object.keys(found.metrics).join(', ') || 'none'})`,
    };
  return { value: m.value, scorer: primary, metric, found: m };
}

/** The name of a scorer's coverage as conditions write it: `coverage`, `<scorer>.coverage`. */
export const COVERAGE = 'coverage';

/**
 * A scorer's coverage: the share of its items it scored, over the items that reached a model
 * (invalid rows left out) and were asked (items a sequential gate settled left out), among those
 * it applies to (a check's not-applicable items left out).
 */
export function scorerCoverage(summary: {
  n: number;
  unscored: Readonly<Partial<Record<string, number>>>;
}): MetricValue {
  let total = summary.n;
  for (const [kind, count] of Object.entries(summary.unscored))
    if (kind !== 'invalid_row' && kind !== 'gate_settled' && kind !== 'not_applicable') total += count ?? 0;
  return { value: total === 0 ? null : summary.n / total, n: total };
}

/** `coverage` or `<scorer>.coverage`, when the scorer's report has no metric of that name: its coverage. */
function locateCoverage(name: string, report: GateFigures['report']): Located | undefined {
  const scorer = name === COVERAGE ? report.primaryScorer : name.slice(0, -COVERAGE.length - 1);
  if (name !== COVERAGE && name !== `${scorer}.${COVERAGE}`) return undefined;
  const summary = report.scores[scorer];
  if (!summary || summary.metrics[COVERAGE]) return undefined;
  const found = scorerCoverage(summary);
  return { value: found.value, scorer, metric: COVERAGE, found };
}

/** A named metric of a variant, by the lookup rules above (the gate's and `rankBy`'s). */
export function locateMetric(name: string, report: GateFigures['report'], slice?: SliceRef): Located {
  if (slice) return locateSliceMetric(name, slice, report);
  const run = RUN_FIGURES[name];
  if (run) return { value: run(report) };
  const coverage = locateCoverage(name, report);
  if (coverage) return coverage;
  const dot = name.indexOf('.');
  if (dot > 0 && report.scores[name.slice(0, dot)]) {
    const scorer = name.slice(0, dot);
    const metric = name.slice(dot + 1);
    const found = report.scores[scorer]!.metrics[metric];
    return found
      ? { value: found.value, scorer, metric, found }
      : {
          unknown: `scorer ${scorer} has no metric ${metric} (it has: ${Object.keys(report.scores[scorer]!.metrics).join(', ') || 'none'})`,
        };
  }
  const primary = report.scores[report.primaryScorer]?.metrics[name];
  if (primary) return { value: primary.value, scorer: report.primaryScorer, metric: name, found: primary };
  let figure: unknown = report.metrics;
  for (const part of name.split('.')) figure = (figure as Record<string, unknown> | undefined)?.[part];
  if (typeof figure === 'number' || figure === null) return { value: figure };
  return {
    unknown: `no metric ${name} (run figures: ${Object.keys(RUN_FIGURES).join(', ')}; ${report.primaryScorer}: ${Object.keys(report.scores[report.primaryScorer]?.metrics ?? {}).join(', ')})`,
  };
}

function words(text: string): number {
  const trimmed = text.trim();
  return trimmed === '' ? 0 : trimmed.split(/\s+/).length;
}

function sliceText(slice: Slice): string {
  return `${slice.measure}${slice.column ? `(${slice.column})` : ''} ${slice.op} ${slice.value}`;
}

/** A latency percentile over the items in the slice; null when the slice has none. */
export function latencyOf(
  figures: GateFigures,
  p: number,
  slice: Slice | undefined,
): { value: number | null; n: number } {
  const items = slice
    ? figures.items.filter((item) => {
        const text =
          slice.column === undefined ? Object.values(item.input).join(' ') : (item.input[slice.column] ?? '');
        return compare(slice.measure === 'words' ? words(text) : [...text].length, slice.op, slice.value);
      })
    : figures.items;
  return {
    value:
      items.length === 0
        ? null
        : percentile(
            items.map((i) => i.latencyMs),
            p,
          ),
    n: items.length,
  };
}

export function compare(a: number, op: Op, b: number): boolean {
  switch (op) {
    case '>=':
      return a >= b;
    case '>':
      return a > b;
    case '<=':
      return a <= b;
    case '<':
      return a < b;
    case '==':
      return a === b;
  }
}

const show = (x: number) => (Number.isInteger(x) ? String(x) : Number(x.toPrecision(4)).toString());

/** One condition on a variant, against the baseline's figures and the pairing of the two. */
export function evaluateCondition(
  condition: Condition,
  variant: GateFigures,
  baseline: GateFigures,
  pairing: GatePairing = {},
): ConditionVerdict {
  const { metric } = condition;
  const fail = (
    reason: string,
    value: number | null = null,
    against: number | null = null,
  ): ConditionVerdict => ({
    condition: condition.text,
    passed: false,
    value,
    against,
    reason,
  });

  // The figure on each side, and where the paired difference is (scorer metrics only).
  let label: string;
  let ours: number | null;
  let theirs: number | null;
  let paired: PairedDelta | undefined;
  let pairable = false;
  /** The scorer metric the condition names (noise floors are a scorer metric's). */
  let located: { scorer: string; metric: string } | undefined;
  if (metric.kind === 'latency') {
    label = `p${metric.percentile} latency${metric.slice ? ` where ${sliceText(metric.slice)}` : ''}`;
    const a = latencyOf(variant, metric.percentile, metric.slice);
    const b = latencyOf(baseline, metric.percentile, metric.slice);
    if (a.n === 0)
      return fail(`n/a: no items${metric.slice ? ` where ${sliceText(metric.slice)}` : ' with model calls'}`);
    ours = a.value;
    theirs = b.value;
    if (theirs === null && (condition.delta || condition.rhs.kind === 'baseline'))
      return fail(
        `n/a: the baseline has no items${metric.slice ? ` where ${sliceText(metric.slice)}` : ' with model calls'}`,
        ours,
      );
  } else if (metric.kind === 'cost') {
    label = 'cost per 10k';
    ours = variant.report.cost.per10kUsd;
    theirs = baseline.report.cost.per10kUsd;
  } else {
    label = metricLabel(metric.name, metric.slice);
    const a = locateMetric(metric.name, variant.report, metric.slice);
    if ('unknown' in a) return fail(a.unknown);
    const b = locateMetric(metric.name, baseline.report, metric.slice);
    ours = a.value;
    theirs = 'unknown' in b ? null : b.value;
    if (a.scorer && a.metric) {
      pairable = true;
      located = { scorer: a.scorer, metric: a.metric };
      paired = metric.slice
        ? pairing[a.scorer]?.slices?.[metric.slice.column]?.[metric.slice.value]?.deltas[a.metric]
        : a.metric === COVERAGE && !pairing[a.scorer]?.deltas[COVERAGE]
          ? pairing[a.scorer]?.coverage
          : pairing[a.scorer]?.deltas[a.metric];
    }
  }
  if (ours === null) return fail(`n/a: ${label} has no data`);

  let value: number;
  let against: number;
  let words: string;
  if (condition.delta) {
    if (pairable) {
      if (!paired) return fail(`n/a: no paired ${label} with the baseline (no items scored on both)`);
      value = paired.delta;
    } else {
      if (theirs === null) return fail(`n/a: the baseline's ${label} has no data`, ours);
      value = ours - theirs;
    }
    if (condition.rhs.kind === 'noise') {
      const floor = located
        ? noiseFloorOf(located.scorer, located.metric, variant.report, baseline.report)
        : null;
      if (floor === null)
        return fail(
          `n/a: no noise floor of ${label} (neither run scored its items more than once: set run.repeats > 1)`,
          value,
        );
      against = condition.rhs.sign * floor;
      words = `delta ${label} ${show(value)} vs noise floor ${condition.rhs.sign < 0 ? '−' : ''}${show(floor)}`;
    } else {
      against = (condition.rhs as { value: number }).value;
      words = `delta ${label} ${show(value)}`;
    }
  } else if (condition.rhs.kind === 'baseline') {
    if (theirs === null) return fail(`n/a: the baseline's ${label} has no data`, ours);
    value = ours;
    against = theirs + condition.rhs.offset;
    const offset = condition.rhs.offset;
    words = `${label} ${show(value)} vs baseline ${show(theirs)}${offset === 0 ? '' : ` ${offset > 0 ? '+' : '−'} ${show(Math.abs(offset))} = ${show(against)}`}`;
  } else {
    value = ours;
    against = (condition.rhs as { value: number }).value;
    words = `${label} ${show(value)}`;
  }
  const holds = compare(value, condition.op, against);
  const verdict: ConditionVerdict = {
    condition: condition.text,
    passed: holds,
    value,
    against,
    reason: `${words} ${holds ? 'meets' : 'fails'} ${condition.op} ${show(against)}`,
  };
  if (condition.alpha !== undefined) {
    if (!paired)
      return { ...verdict, passed: false, reason: `${verdict.reason}; n/a: no paired ${label} for p` };
    if (paired.reason)
      return {
        ...verdict,
        passed: false,
        reason: `${verdict.reason}; n/a: no p for ${label}: ${paired.reason}`,
      };
    verdict.pValue = paired.pValue;
    const significant = paired.pValue < condition.alpha;
    verdict.passed = holds && significant;
    // A p under 0.0001 is shown as such (never as 0: no test gives a p of 0).
    const p = paired.pValue < 0.0001 ? 'p < 0.0001' : `p = ${show(paired.pValue)}`;
    verdict.reason += `; ${p} ${significant ? '<' : '≥'} ${condition.alpha}${significant ? '' : ' (not significant)'}`;
  }
  return verdict;
}

/**
 * A scorer metric's noise floor for a comparison of two runs: the larger of the two runs' floors
 * (report.json `scores.<scorer>.reliability.noiseFloor`); null when neither run has one.
 */
export function noiseFloorOf(
  scorer: string,
  metric: string,
  a: Pick<Report, 'scores'>,
  b: Pick<Report, 'scores'>,
): number | null {
  const floors = [a, b]
    .map((r) => r.scores[scorer]?.reliability?.noiseFloor[metric])
    .filter((f): f is number => typeof f === 'number');
  return floors.length === 0 ? null : Math.max(...floors);
}

/** Every condition on a variant, and the coverage guard: promoted when all pass. */
export function evaluateGate(
  conditions: readonly Condition[],
  variant: GateFigures,
  baseline: GateFigures,
  pairing: GatePairing = {},
): GateVerdict {
  const verdicts = conditions.map((c) => evaluateCondition(c, variant, baseline, pairing));
  return withCoverageGuard(
    { promoted: true, conditions: verdicts, failed: [] },
    conditions,
    variant,
    pairing,
  );
}

/** What the coverage guard's verdict is called among the conditions. */
export const COVERAGE_GUARD = 'coverage not below the baseline (implicit)';

/**
 * The coverage guard: a variant that scored a smaller share of the paired items than the
 * baseline did, beyond chance (the upper end of the paired difference's 95% interval below 0),
 * fails — its figures are over the items it chose to answer — unless a condition names the
 * coverage of a scorer (`delta coverage >= -0.05`, `coverage >= 0.9`), which then says what is
 * acceptable. Undefined when the guard does not apply (no pairing for the scorer).
 */
export function coverageGuard(
  conditions: readonly Condition[],
  variant: Pick<GateFigures, 'report'>,
  pairing: GatePairing,
): ConditionVerdict | undefined {
  const scorer = variant.report.primaryScorer;
  const named = conditions.some(
    (c) =>
      c.metric.kind === 'named' && (c.metric.name === COVERAGE || c.metric.name.endsWith(`.${COVERAGE}`)),
  );
  const delta = pairing[scorer]?.coverage;
  if (named || !delta) return undefined;
  const lower = delta.ci[1] < 0;
  return {
    condition: COVERAGE_GUARD,
    passed: !lower,
    value: delta.delta,
    against: 0,
    pValue: delta.pValue,
    reason: `${scorer} coverage ${show(delta.candidate)} vs baseline ${show(delta.base)} over ${delta.n} paired items: delta ${show(delta.delta)} [${show(delta.ci[0])}, ${show(delta.ci[1])}], ${lower ? 'lower beyond chance: a variant does not pass by leaving items unscored (its other figures are over the items both scored); to accept it, add a condition on coverage, e.g. "delta coverage >= -0.05"' : 'not lower beyond chance'}`,
  };
}

/** A verdict with the coverage guard added (when it applies) and `promoted`/`failed` made whole. */
export function withCoverageGuard(
  verdict: GateVerdict,
  conditions: readonly Condition[],
  variant: Pick<GateFigures, 'report'>,
  pairing: GatePairing,
): GateVerdict {
  const guard = coverageGuard(conditions, variant, pairing);
  const verdicts = guard ? [...verdict.conditions, guard] : verdict.conditions;
  const failed = verdicts.filter((v) => !v.passed).map((v) => v.condition);
  return { promoted: verdict.promoted && failed.length === 0, conditions: verdicts, failed };
}

/** Per-item rates a sequential gate can follow item by item: each item adds a 0 or a 1. */
export const SEQUENTIAL_METRICS = ['accuracy', 'passRate'] as const;

/**
 * A condition as a sequential gate reads it: a per-item rate of the variant (`threshold`), or
 * the mean of the per-item difference variant − baseline on the same items (`paired`), against
 * a number (the threshold, or the margin).
 */
export interface SequencedCondition {
  text: string;
  /** The metric as the condition names it: `accuracy`, or `<scorer>.accuracy`. */
  metric: string;
  paired: boolean;
  op: '>=' | '>' | '<=' | '<';
  against: number;
}

/**
 * How a sequential gate settles `condition`, or a GateSyntaxError saying why it cannot: only a
 * rate that is a mean over items (accuracy, passRate) can be followed by a confidence sequence
 * one item at a time; `accuracy >= baseline - 0.02` is read, like `delta accuracy >= -0.02`, on
 * the paired per-item difference.
 */
export function sequencedCondition(condition: Condition): SequencedCondition {
  const { text, metric } = condition;
  const name = metric.kind === 'named' ? metric.name : undefined;
  const last = name?.split('.').at(-1);
  if (
    metric.kind !== 'named' ||
    metric.slice ||
    !(SEQUENTIAL_METRICS as readonly string[]).includes(last ?? '')
  )
    throw new GateSyntaxError(
      `${text}: a sequential gate settles conditions on a per-item rate (${SEQUENTIAL_METRICS.join(', ')}, of the whole run), which a confidence sequence follows item by item; drop gate.sequential or this condition`,
    );
  if (condition.op === '==')
    throw new GateSyntaxError(`${text}: == cannot be settled by an interval; use >=, >, <= or <`);
  if (condition.rhs.kind === 'noise')
    throw new GateSyntaxError(
      `${text}: a sequential gate compares with a number or the baseline, not a noise floor`,
    );
  if (condition.alpha !== undefined)
    throw new GateSyntaxError(
      `${text}: a sequential verdict is already held at the gate's level (gate.alpha); drop "with p < ${condition.alpha}"`,
    );
  const op = condition.op;
  if (condition.rhs.kind === 'baseline')
    return { text, metric: name!, paired: true, op, against: condition.rhs.offset };
  return { text, metric: name!, paired: condition.delta, op, against: condition.rhs.value };
}
