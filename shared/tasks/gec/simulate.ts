/**
 * What the simulator answers for GEC prompts. Every answer is drawn from the gold label with
 * noise, in the format the real prompt asks for, so that the whole method (parsers, fusion,
 * routing, the agent loop) runs for real on a simulated model. Sub-judge answers for one item
 * and backend agree with one "intended" label, as a real model's sub-scores would cohere.
 */
import { seededRandom } from '../../providers/sim.js';
import type { CompletionRequest } from '../../providers/types.js';
import type { GecCase } from './case.js';
import type { GecLabel } from './labels.js';
import { LOW_TRUST_LABELS, spanFlags } from './router.js';

type Simulate = NonNullable<CompletionRequest['simulate']>;

const REASON = 'simulated answer (drawn from the gold label with noise)';

/** The gold label with probability 1 − noise, else another allowed label. */
function noisyLabel(c: GecCase, rng: () => number, noise: number): GecLabel {
  const gold = c.gold && c.labels.includes(c.gold) ? c.gold : undefined;
  const wrong = c.labels.filter((l) => l !== gold);
  if (gold && (rng() >= noise || wrong.length === 0)) return gold;
  return wrong[Math.floor(rng() * wrong.length)]!;
}

/** One label per item and backend, shared by all that backend's sub-judge answers. */
function intended(c: GecCase, providerId: string, noise: number): GecLabel {
  return noisyLabel(c, seededRandom(`intent|${providerId}|${c.item.id}`), noise);
}

const pick = (rng: () => number, values: readonly number[]) => values[Math.floor(rng() * values.length)]!;

export function simClassify(c: GecCase): Simulate {
  return (rng, noise) => JSON.stringify({ label: noisyLabel(c, rng, noise), reason: REASON });
}

/** The LLM router's combined classify + route answer. */
export function simRouter(c: GecCase): Simulate {
  return (rng, noise) => {
    const label = noisyLabel(c, rng, noise);
    const risk = spanFlags(c.spans);
    const escalate = LOW_TRUST_LABELS.includes(label) || risk.length > 0;
    return JSON.stringify({ label, reason: REASON, escalate, risk });
  };
}

export type SubJudge = 'nonsense' | 'meaning' | 'quality' | 'pair';

/** Sub-scores that both fusion rule sets map back to the intended label. */
const SCORES: Record<
  GecLabel,
  { nonsense: number[]; meaning: number[]; quality: number[]; pair: [boolean, boolean] }
> = {
  TP: { nonsense: [-1, 0], meaning: [0, 1], quality: [1, 2, 3], pair: [false, true] },
  FP3: { nonsense: [0], meaning: [0, 1], quality: [0], pair: [true, true] },
  FP2: { nonsense: [0, 1], meaning: [0, 1], quality: [-2, -1], pair: [true, false] },
  FP1: { nonsense: [2, 3], meaning: [3, 4], quality: [-3, -2, -1], pair: [true, false] },
  TN: { nonsense: [0], meaning: [0], quality: [0], pair: [true, true] },
  FN: { nonsense: [0], meaning: [0], quality: [0], pair: [false, false] },
};

export function simSubJudge(c: GecCase, providerId: string, judge: SubJudge): Simulate {
  return (rng, noise) => {
    const scores = SCORES[intended(c, providerId, noise)];
    switch (judge) {
      case 'nonsense':
        return `SCORE: ${pick(rng, scores.nonsense)}\nREASON: ${REASON}`;
      case 'meaning':
        return `SEVERITY: ${pick(rng, scores.meaning)}\nREASONING: ${REASON}`;
      case 'quality':
        return `IMPROVEMENT: ${pick(rng, scores.quality)}\nREASONING: ${REASON}`;
      case 'pair': {
        const [source, target] = scores.pair;
        return `SOURCE_CORRECT: ${source ? 'yes' : 'no'}\nTARGET_CORRECT: ${target ? 'yes' : 'no'}\nREASON: ${REASON}`;
      }
    }
  };
}

/** A scripted agent: two tool calls, a grammar lookup, then the intended label. */
export function simAgentTurn(c: GecCase, providerId: string, turn: number): Simulate {
  const quote = (s: string) => JSON.stringify(s);
  const script = [
    `Thought: I should check whether the edit changes the meaning.\nAction: meaning_change(${quote(c.vars.src!)}, ${quote(c.vars.tgt!)})`,
    `Thought: Now the quality of the edit.\nAction: reward_quality(${quote(c.vars.src!)}, ${quote(c.vars.tgt!)})`,
    `Thought: Which grammar rule applies?\nAction: grammar_rag(${quote(c.vars.edit!)}, ${quote(c.lang)})`,
  ];
  return (_rng, noise) =>
    script[turn] ??
    `Thought: I have enough evidence.\nFinal Answer: ${intended(c, providerId, noise)} - ${REASON}`;
}
