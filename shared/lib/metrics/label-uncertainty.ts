/**
 * How unsure a judge was about one item, read from what a run kept of it: the √ of the chance
 * that the judge's verdict is not what a person would say, the quantity label-selection.ts
 * sizes each item's labelling probability by (√E[(Y − Ŷ)²] for a label's 0/1 indicator, up to a
 * constant factor that cancels).
 *
 * The evidence, each giving a share a ∈ [0, 1] of the evidence that agrees with the verdict:
 *
 * - `repeats`: the run scored the item k ≥ 2 times (`run.repeats`): a is the share of the
 *   repeats that gave the item's verdict. For a number without a pass threshold, the spread of
 *   the repeats instead: u = SD(repeats) / (range width), or the SD itself with no range.
 * - `judges`: several judges voted (an ensemble's `details.votes`, each `{ backend, label,
 *   weight? }`): a is the weight share of the votes for the verdict.
 * - `confidence`: the judge stated how sure it is (an answer field `confidence` or
 *   `probability`, in [0, 1], or a percentage in (1, 100]): a is that figure.
 * - `threshold`: a number judged against a pass threshold t on a range [lo, hi]: the score s
 *   read as a chance of passing, p = clamp(1/2 + (s − t)/(hi − lo), 0, 1), and a = max(p, 1 − p):
 *   a score at the threshold is a coin flip, one at the far end of the range is sure.
 *
 * Then u = √(1 − a). With several kinds of evidence the item takes the largest u (the least sure
 * reading). A result with none of them gives no figure (the caller decides what that means).
 */
import type { ItemResult, ScoreValue } from '../../model/model.js';

export const UNCERTAINTY_SIGNALS = ['repeats', 'judges', 'confidence', 'threshold'] as const;
export type UncertaintySignal = (typeof UNCERTAINTY_SIGNALS)[number];

export interface ScorerView {
  /** The scorer whose verdict a person is asked to check (the run's primary scorer). */
  name: string;
  /** A number scorer's range and pass threshold, when the suite declares them. */
  range?: readonly [number, number];
  threshold?: number;
}

export interface ItemUncertainty {
  /** u ≥ 0: larger is less sure. */
  value: number;
  /** The evidence that gave it. */
  signal: UncertaintySignal;
}

const same = (a: ScoreValue | null | undefined, b: ScoreValue | null | undefined) =>
  a !== null && a !== undefined && b !== null && b !== undefined && String(a) === String(b);

/** √(1 − a), for a share of agreement a (clamped to [0, 1]). */
const fromAgreement = (a: number) => Math.sqrt(1 - Math.max(0, Math.min(1, a)));

/** Population standard deviation. */
function sd(values: readonly number[]): number {
  const mean = values.reduce((s, v) => s + v, 0) / values.length;
  return Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / values.length);
}

function fromRepeats(
  repeats: readonly (ScoreValue | null)[] | undefined,
  verdict: ScoreValue,
  scorer: ScorerView,
): number | undefined {
  const given = (repeats ?? []).filter((v): v is ScoreValue => v !== null && v !== undefined);
  if (given.length < 2) return undefined;
  if (typeof verdict === 'number') {
    const numbers = given.filter((v): v is number => typeof v === 'number');
    if (numbers.length < 2) return undefined;
    if (scorer.threshold !== undefined) {
      const passes = verdict >= scorer.threshold;
      return fromAgreement(numbers.filter((v) => v >= scorer.threshold! === passes).length / numbers.length);
    }
    const width = scorer.range ? scorer.range[1] - scorer.range[0] : 1;
    return sd(numbers) / (width > 0 ? width : 1);
  }
  return fromAgreement(given.filter((v) => same(v, verdict)).length / given.length);
}

function fromVotes(votes: unknown, verdict: ScoreValue): number | undefined {
  if (!Array.isArray(votes)) return undefined;
  let total = 0;
  let agreeing = 0;
  let counted = 0;
  for (const vote of votes) {
    if (vote === null || typeof vote !== 'object') continue;
    const { label, weight } = vote as { label?: unknown; weight?: unknown };
    if (typeof label !== 'string' && typeof label !== 'number' && typeof label !== 'boolean') continue;
    const w = typeof weight === 'number' && Number.isFinite(weight) && weight > 0 ? weight : 1;
    total += w;
    counted += 1;
    if (same(label, verdict)) agreeing += w;
  }
  return counted < 2 || total <= 0 ? undefined : fromAgreement(agreeing / total);
}

/** A stated confidence as a share in [0, 1]; undefined when there is none. */
function statedConfidence(result: ItemResult, scorerDetails: unknown): number | undefined {
  const output = result.output as { fields?: unknown } | undefined;
  const places = [output?.fields, scorerDetails, result.details];
  for (const place of places) {
    if (place === null || typeof place !== 'object') continue;
    for (const key of ['confidence', 'probability']) {
      const value = (place as Record<string, unknown>)[key];
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) continue;
      if (value <= 1) return value;
      if (value <= 100) return value / 100;
    }
  }
  return undefined;
}

function fromThreshold(verdict: ScoreValue, scorer: ScorerView): number | undefined {
  if (typeof verdict !== 'number' || scorer.threshold === undefined || !scorer.range) return undefined;
  const width = scorer.range[1] - scorer.range[0];
  if (!(width > 0)) return undefined;
  const p = Math.max(0, Math.min(1, 0.5 + (verdict - scorer.threshold) / width));
  return fromAgreement(Math.max(p, 1 - p));
}

/** How unsure the judge was about this result's verdict (see the module comment); undefined without evidence. */
export function itemUncertainty(result: ItemResult, scorer: ScorerView): ItemUncertainty | undefined {
  const score = result.scores[scorer.name];
  if (score === undefined || 'unscored' in score || score.value === undefined) return undefined;
  const verdict = score.value;
  const readings: [UncertaintySignal, number | undefined][] = [
    ['repeats', fromRepeats(score.repeats, verdict, scorer)],
    ['judges', fromVotes(result.details?.votes, verdict)],
    [
      'confidence',
      (() => {
        const c = statedConfidence(result, score.details);
        return c === undefined ? undefined : fromAgreement(c);
      })(),
    ],
    ['threshold', fromThreshold(verdict, scorer)],
  ];
  let best: ItemUncertainty | undefined;
  for (const [signal, value] of readings) {
    if (value === undefined || !Number.isFinite(value)) continue;
    if (best === undefined || value > best.value) best = { value, signal };
  }
  return best;
}
