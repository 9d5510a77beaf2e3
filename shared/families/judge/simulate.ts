/**
 * What the simulator answers for a declared judge: the gold label (or the gold's place in the
 * range) with probability 1 − noise, else another label or value, in the answer's JSON form,
 * with the extra fields filled from their schema. A simulated pairwise judge also leans to the
 * answer shown first (see {@link SIM_POSITION_BIAS}).
 *
 * An item without gold (`dataset.partialGold`) has a latent truth instead, which the simulated
 * judge answers by the same noise model: one of the labels (or a point of the range, a whole
 * number on a whole-number range), drawn uniformly by a generator seeded from the item id alone
 * ({@link latentGold}), so an item always has the same latent truth, whatever the backend, the
 * seed or the noise. The simulated world is then complete: every item has a truth, the gold where
 * the dataset gives one, the latent truth elsewhere, and a prediction-powered estimate over the
 * items has a figure to cover (were the gold labels of the dataset given by the same rule, a
 * uniform share of each label). A pairwise item's latent preference is in the dataset's order
 * (A the dataset's first answer), swapped with the order shown.
 */
import { seededRandom } from '../../lib/providers/sim.js';
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
const LATENT_REASON =
  'simulated answer (the item has no gold: drawn with noise from its latent label, fixed by its id)';

/**
 * The latent truth of an item without gold: a label, or a value of the range (whole on a
 * whole-number range, else to two decimals), drawn uniformly from a generator seeded by the id.
 */
export function latentGold(
  item: string,
  scale: { labels: readonly string[] } | { range: [number, number] },
): string {
  const rng = seededRandom(`latent|${item}`);
  if ('labels' in scale) return scale.labels[Math.floor(rng() * scale.labels.length)]!;
  const [min, max] = scale.range;
  if (Number.isInteger(min) && Number.isInteger(max))
    return String(min + Math.floor(rng() * (max - min + 1)));
  return String(Math.round((min + rng() * (max - min)) * 100) / 100);
}

/** A pairwise preference seen in the other order: A and B change places, a tie stays. */
const swapped = (label: string) => (label === 'A' ? 'B' : label === 'B' ? 'A' : label);

/** The gold of a hint, or the item's latent truth in the order shown. */
function truthOf(h: JudgeHint): string {
  if (h.gold !== undefined) return h.gold;
  if (h.labels) {
    const latent = latentGold(h.item, { labels: h.labels });
    return h.pairwise?.order === 'ba' ? swapped(latent) : latent;
  }
  return latentGold(h.item, { range: h.range! });
}

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
  const truth = truthOf(h);
  const head = h.pairwise
    ? { label: rng() < h.pairwise.positionBias ? h.labels![0]! : simLabel(h.labels!, truth, rng, noise) }
    : h.labels
      ? { label: simLabel(h.labels, truth, rng, noise) }
      : { score: simScore(h.range!, truth, rng, noise) };
  const fields = Object.fromEntries(Object.entries(h.fields).map(([k, v]) => [k, placeholderValue(v)]));
  return JSON.stringify({ ...head, reason: h.gold === undefined ? LATENT_REASON : REASON, ...fields });
}
