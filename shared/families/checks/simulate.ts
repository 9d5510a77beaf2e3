/**
 * What the simulator answers for checks: as the model under test, the text the first
 * equality-like check expects with probability 1 − noise, else a wrong answer; as a grader, the
 * grade another tool gave (when the dataset has it) or a pass, turned with probability noise —
 * in the grader's own answer format (a JSON label or score, or a choice on the last line).
 */
import type { SimHint } from '../../model/provider.js';

export type ChecksHint =
  | { family: 'checks'; stage: 'answer'; item: string; expected?: string }
  | {
      family: 'checks';
      stage: 'grade';
      item: string;
      labels?: readonly string[];
      range?: readonly [number, number];
      threshold?: number;
      choices?: readonly string[];
      evalType?: 'cot_classify' | 'classify_cot' | 'classify';
      /** Labels or choices that pass. */
      passing?: readonly string[];
      /** Whether the item passes as graded elsewhere (before `not`). */
      gold?: boolean;
    };

const pick = <T>(rng: () => number, list: readonly T[]): T => list[Math.floor(rng() * list.length)]!;

export function simulateChecks(hint: SimHint, rng: () => number, noise: number): string {
  const h = hint as ChecksHint;
  if (h.stage === 'answer') {
    if (h.expected !== undefined && rng() >= noise) return h.expected;
    return pick(rng, ['I am not sure.', 'It depends on the situation.', 'No answer.']);
  }
  const pass = (h.gold ?? true) === rng() >= noise / 2;
  const reason = 'simulated grade (from the grade given, with noise)';
  if (h.choices) {
    const side = h.choices.filter((c) => (h.passing ?? []).includes(c) === pass);
    const choice = side.length > 0 ? pick(rng, side) : pick(rng, h.choices);
    return h.evalType === 'cot_classify' ? `${reason}.\n${choice}` : `${choice}\n${reason}.`;
  }
  if (h.labels) {
    const side = h.labels.filter((l) => (h.passing ?? []).includes(l) === pass);
    return JSON.stringify({ label: side.length > 0 ? pick(rng, side) : pick(rng, h.labels), reason });
  }
  const [min, max] = h.range ?? [0, 1];
  const threshold = h.threshold ?? max;
  // Two decimals, rounded away from the threshold so that the side drawn is the side said.
  const score = pass
    ? Math.min(max, Math.ceil((threshold + rng() * (max - threshold)) * 100) / 100)
    : Math.max(min, Math.floor((min + rng() * (threshold - min)) * 100) / 100);
  return JSON.stringify({ score, reason });
}
