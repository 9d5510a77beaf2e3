/**
 * What the simulator answers for a declared judge: the gold label (or the gold's place in the
 * range) with probability 1 − noise, else another label or value, in the answer's JSON form,
 * with the extra fields filled from their schema. A simulated pairwise judge also leans to the
 * answer shown first (see {@link SIM_POSITION_BIAS}).
 */
import type { SimHint } from '../../model/provider.js';

export type JudgeHint = {
  family: 'judge';
  /** The item: each draws its own answer. */
  item: string;
  labels?: string[];
  range?: [number, number];
  gold?: string;
  /** Extra answer fields: name → JSON Schema. */
  fields: Record<string, unknown>;
  /**
   * A pairwise judge's question: the order the two answers are shown in (`gold` is then the
   * preference as shown: in the swapped order, A means the dataset's B) and the share of
   * answers on which the simulator picks the first-shown answer whatever the gold.
   */
  pairwise?: { order: 'ab' | 'ba'; positionBias: number };
};

/**
 * The simulated pairwise judge's position bias: on this share of its answers it picks the
 * answer shown first, as real judges lean to; otherwise it answers as any simulated judge.
 */
export const SIM_POSITION_BIAS = 0.3;

const REASON = 'simulated answer (drawn from the gold with noise)';

/** A plausible value for a JSON Schema: its first enum value, its minimum, an empty list… */
function placeholderValue(schema: unknown): unknown {
  const s = (schema ?? {}) as {
    type?: string;
    enum?: unknown[];
    minimum?: number;
    properties?: Record<string, unknown>;
  };
  if (s.enum && s.enum.length > 0) return s.enum[0];
  switch (s.type) {
    case 'string':
      return 'simulated';
    case 'number':
    case 'integer':
      return s.minimum ?? 0;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object':
      return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, placeholderValue(v)]));
    default:
      return null;
  }
}

function simLabel(labels: string[], gold: string | undefined, rng: () => number, noise: number): string {
  const wrong = labels.filter((l) => l !== gold);
  if (gold && labels.includes(gold) && (rng() >= noise || wrong.length === 0)) return gold;
  return wrong[Math.floor(rng() * wrong.length)]!;
}

/** The gold's place in the range: a value in it as is, a 0/1 gold as the range's low or high end. */
function simScore([min, max]: [number, number], gold: string | undefined, rng: () => number, noise: number) {
  const integer = Number.isInteger(min) && Number.isInteger(max);
  const g = gold === undefined ? Number.NaN : Number(gold);
  const center = g >= min && g <= max ? g : g === 0 || g === 1 ? min + g * (max - min) : Number.NaN;
  const value = Number.isFinite(center) && rng() >= noise ? center : min + rng() * (max - min);
  return integer ? Math.round(value) : Math.round(value * 100) / 100;
}

export function simulateJudge(hint: SimHint, rng: () => number, noise: number): string {
  const h = hint as JudgeHint;
  const head = h.pairwise
    ? { label: rng() < h.pairwise.positionBias ? h.labels![0]! : simLabel(h.labels!, h.gold, rng, noise) }
    : h.labels
      ? { label: simLabel(h.labels, h.gold, rng, noise) }
      : { score: simScore(h.range!, h.gold, rng, noise) };
  const fields = Object.fromEntries(Object.entries(h.fields).map(([k, v]) => [k, placeholderValue(v)]));
  return JSON.stringify({ ...head, reason: REASON, ...fields });
}
