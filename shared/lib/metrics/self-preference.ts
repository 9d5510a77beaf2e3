/**
 * Self-preference: whether a judge favours outputs its own model family produced. Each item
 * gives the output's producer, the judge's model, the judge's verdict and the gold; the judge's
 * error is verdict − gold (a pass as 1 and a fail as 0, a number as itself, a label by the
 * options), so a judge that is merely strict or lenient errs the same way on every family, and
 * a judge that prefers its own family errs upward on its own family's outputs only.
 *
 * - `byProducer`: for each producer family, n, the judge's mean verdict (a pass or win rate for
 *   a pass or positive label), gold's mean, and the judge's mean error, each with an interval.
 * - `selfPreference`: the judge's mean error on outputs of its own family minus its mean error
 *   on outputs of other families (positive: it rates its own family higher, relative to gold,
 *   than it rates the others), with n on each side; null when either side has no item.
 * - `byJudge`: the same figures for each judge family on its own items (a run with one judge has
 *   one entry, equal to the whole).
 *
 * "Own" is decided per item (producer family = judge family), so items judged by several judges
 * pool. Items without a verdict or without gold are counted in `skipped` and left out of every
 * figure. Intervals are 95% percentile-bootstrap intervals over items with the repository's
 * seeded generator (for `selfPreference`, over all the items, the two sides' sizes varying with
 * the resample; a resample with a side empty is skipped).
 */
import type { ScoreValue } from '../../model/model.js';
import type { Interval, MetricValue } from '../../model/report.js';
import { isHostPrefix, serviceOf, vendorSpec } from '../../model/vendors.js';
import { type BootstrapOptions, bootstrapCis, type Indices } from './stats.js';

/** One judged output. */
export interface SelfPreferenceItem {
  /** Who produced the output: a model id (`openai:gpt-4o`, `claude-3-5-sonnet`, a Bedrock id) or free text. */
  producer: string;
  /** The judge's model id. */
  judge: string;
  /** The judge's verdict; undefined or null when it gave none. */
  verdict: ScoreValue | null | undefined;
  /** The gold verdict on the same scale; undefined or null when there is none. */
  gold: ScoreValue | null | undefined;
}

export interface SelfPreferenceOptions {
  /** Label verdicts: the labels that count 1 (a win, a pass); every other label counts 0. */
  positive?: readonly string[];
  /** Label verdicts on an ordinal scale, from low to high: a label counts its place (0, 1, …). */
  labelOrder?: readonly string[];
  /** false: no intervals. */
  bootstrap?: BootstrapOptions | false;
}

/** The items one producer family made. */
export interface ProducerFamilyFigures {
  n: number;
  /** Of them, items judged by a judge of the same family. */
  ownFamily: number;
  /** The judge's mean verdict. */
  judge: MetricValue;
  /** Gold's mean. */
  gold: MetricValue;
  /** The judge's mean error, judge − gold. */
  error: MetricValue;
}

/** One side of the self-preference comparison. */
export interface SelfPreferenceSide {
  n: number;
  /** The judge's mean error (judge − gold) on this side's items. */
  error: number;
}

/** The judge's mean error on its own family's outputs minus that on other families'. */
export interface SelfPreference {
  value: number;
  ci?: Interval;
  own: SelfPreferenceSide;
  other: SelfPreferenceSide;
}

export interface SelfPreferenceGroup {
  /** Items with both a verdict and gold. */
  items: number;
  byProducer: Record<string, ProducerFamilyFigures>;
  /** Null when no item is of the judge's own family, or none of another. */
  selfPreference: SelfPreference | null;
}

export interface SelfPreferenceFigures extends SelfPreferenceGroup {
  /** Items left out: no verdict, or no gold. */
  skipped: number;
  byJudge: Record<string, SelfPreferenceGroup>;
}

/** One item ready for the figures. */
interface Row {
  producer: string;
  judge: string;
  own: boolean;
  verdict: number;
  gold: number;
}

/** The self-preference figures of `items` (in order: the intervals resample them). */
export function selfPreference(
  items: readonly SelfPreferenceItem[],
  options: SelfPreferenceOptions = {},
): SelfPreferenceFigures {
  const rows: Row[] = [];
  let skipped = 0;
  items.forEach((item, i) => {
    if (
      item.verdict === undefined ||
      item.verdict === null ||
      item.gold === undefined ||
      item.gold === null
    ) {
      skipped += 1;
      return;
    }
    const producer = familyOf(item.producer);
    const judge = familyOf(item.judge);
    rows.push({
      producer,
      judge,
      own: producer === judge,
      verdict: numericVerdict(item.verdict, options, `item ${i}'s verdict`),
      gold: numericVerdict(item.gold, options, `item ${i}'s gold`),
    });
  });
  const byJudge = keyed<SelfPreferenceGroup>();
  for (const family of [...new Set(rows.map((r) => r.judge))].sort()) {
    byJudge[family] = group(
      rows.filter((r) => r.judge === family),
      options,
    );
  }
  return { ...group(rows, options), skipped, byJudge };
}

function group(rows: readonly Row[], options: SelfPreferenceOptions): SelfPreferenceGroup {
  const byProducer = keyed<ProducerFamilyFigures>();
  for (const family of [...new Set(rows.map((r) => r.producer))].sort()) {
    byProducer[family] = producerFigures(
      rows.filter((r) => r.producer === family),
      options,
    );
  }
  return { items: rows.length, byProducer, selfPreference: preference(rows, options) };
}

function producerFigures(rows: readonly Row[], options: SelfPreferenceOptions): ProducerFamilyFigures {
  const n = rows.length;
  const meanOf = (pick: (r: Row) => number, ix: Indices) => {
    let total = 0;
    let count = 0;
    for (const i of ix) {
      total += pick(rows[i]!);
      count += 1;
    }
    return count === 0 ? null : total / count;
  };
  const statistics = (ix: Indices) => ({
    judge: meanOf((r) => r.verdict, ix),
    gold: meanOf((r) => r.gold, ix),
    error: meanOf((r) => r.verdict - r.gold, ix),
  });
  const point = statistics(Uint32Array.from(rows.keys()));
  const cis =
    n > 0 && options.bootstrap !== false ? bootstrapCis(n, statistics, options.bootstrap || {}) : {};
  const metric = (key: keyof typeof point): MetricValue => {
    const ci = cis[key];
    return point[key] !== null && ci ? { value: point[key], n, ci } : { value: point[key], n };
  };
  return {
    n,
    ownFamily: rows.filter((r) => r.own).length,
    judge: metric('judge'),
    gold: metric('gold'),
    error: metric('error'),
  };
}

function preference(rows: readonly Row[], options: SelfPreferenceOptions): SelfPreference | null {
  const sides = (ix: Indices) => {
    const own = { n: 0, total: 0 };
    const other = { n: 0, total: 0 };
    for (const i of ix) {
      const r = rows[i]!;
      const side = r.own ? own : other;
      side.n += 1;
      side.total += r.verdict - r.gold;
    }
    return { own, other };
  };
  const difference = (ix: Indices) => {
    const { own, other } = sides(ix);
    return own.n === 0 || other.n === 0 ? null : own.total / own.n - other.total / other.n;
  };
  const { own, other } = sides(Uint32Array.from(rows.keys()));
  if (own.n === 0 || other.n === 0) return null;
  const out: SelfPreference = {
    value: own.total / own.n - other.total / other.n,
    own: { n: own.n, error: own.total / own.n },
    other: { n: other.n, error: other.total / other.n },
  };
  if (options.bootstrap === false) return out;
  const ci = bootstrapCis(rows.length, (ix) => ({ value: difference(ix) }), options.bootstrap ?? {}).value;
  return ci ? { ...out, ci } : out;
}

/**
 * A verdict as a number: a pass 1 and a fail 0, a number itself, a label its place in
 * `labelOrder` or, with `positive`, 1 for a positive label and 0 for another. A label neither
 * option places is an error (what it scores is not known).
 */
export function numericVerdict(
  value: ScoreValue,
  options: SelfPreferenceOptions = {},
  what = 'a verdict',
): number {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw new RangeError(`self-preference: ${what} is not a finite number (${value})`);
    return value;
  }
  if (options.labelOrder) {
    const rank = options.labelOrder.indexOf(value);
    if (rank < 0) throw new RangeError(`self-preference: ${what} "${value}" is not in the label order`);
    return rank;
  }
  if (options.positive) return options.positive.includes(value) ? 1 : 0;
  throw new RangeError(
    `self-preference: ${what} is the label "${value}": give the positive labels or a label order to score labels`,
  );
}

/** Makers of model families and the names that give them away, at the start of a word of the id. */
const MAKERS: ReadonlyArray<[family: string, names: string]> = [
  ['anthropic', 'claude|anthropic'],
  ['openai', 'gpt|chatgpt|openai|davinci|o[1-9](?![a-z0-9])'],
  ['google', 'gemini|gemma|google|palm|bison'],
  ['meta', 'llama|codellama|meta'],
  ['amazon', 'nova|titan|amazon'],
  ['mistral', 'mistral|mixtral|codestral|ministral|pixtral|magistral|devstral'],
  ['cohere', 'command|cohere'],
  ['deepseek', 'deepseek'],
  ['qwen', 'qwen|qwq'],
  ['xai', 'grok|xai'],
  ['microsoft', 'phi-?[0-9]'],
  ['ai21', 'jamba|ai21'],
];
const MAKER_PATTERNS = MAKERS.map(
  ([family, names]) => [family, new RegExp(`(?:^|[^a-z0-9])(?:${names})`)] as const,
);

/**
 * The model family (its maker) behind a producer or judge id: `openai:gpt-4o-mini`, `gpt-4o`
 * and `openrouter:openai/o3` → `openai`; `anthropic:claude-…`, `claude-3-5-sonnet` and the
 * Bedrock `anthropic.claude-3-5-haiku-20241022-v1:0` → `anthropic`; `gemini-2.5-pro` →
 * `google`; `llama-3` → `meta`; `us.amazon.nova-lite-v1:0` → `amazon`. A host's prefix (a
 * vendor the vendor table marks as a host: `bedrock:`, `openrouter:`, `ollama:`, the service of
 * `openai-compatible:<service>/` …) is dropped; the maker whose name comes first in the
 * rest wins (`deepseek-r1-distill-llama` is deepseek's). Otherwise the vendor of a `vendor:model`
 * id, or for free text (`human`, `Reference answer`) its first word in lower case.
 */
export function familyOf(id: string): string {
  const text = id.trim().toLowerCase();
  if (text === '') throw new RangeError('self-preference: a producer or judge id is empty');
  const colon = text.indexOf(':');
  const prefix = colon > 0 && /^[a-z0-9_-]+$/.test(text.slice(0, colon)) ? text.slice(0, colon) : undefined;
  // The vendor table tells a host's prefix (dropped) from a maker's (kept as the fallback).
  const spec = prefix === undefined ? undefined : vendorSpec(prefix);
  const host = prefix !== undefined && isHostPrefix(prefix);
  let model = host || spec !== undefined ? text.slice(colon + 1) : text;
  // A host serving another vendor's id (the simulator standing in for `vllm:…`): that id decides.
  const inner = model.indexOf(':');
  if (host && inner > 0 && vendorSpec(model.slice(0, inner)) !== undefined) return familyOf(model);
  // A service named by the user (`openai-compatible:my-openai-proxy/llama-3`) is no maker either.
  if (spec?.perService) model = serviceOf(model)?.model ?? model;
  let best: { family: string; at: number } | undefined;
  for (const [family, pattern] of MAKER_PATTERNS) {
    const match = pattern.exec(model);
    if (match && (best === undefined || match.index < best.at)) best = { family, at: match.index };
  }
  if (best) return best.family;
  if (spec?.names === 'maker') return spec.maker ?? spec.id;
  if (prefix !== undefined && !host) return prefix;
  return /^[a-z0-9_]+/.exec(model)?.[0] ?? model;
}

/** An object keyed by data (judge names, families) without a prototype: `__proto__` stays an ordinary key. */
function keyed<T>(entries: Iterable<readonly [string, T]> = []): Record<string, T> {
  const out = Object.create(null) as Record<string, T>;
  for (const [key, value] of entries) out[key] = value;
  return out;
}
