/**
 * What the simulator answers for GEC prompts. Every answer is drawn from the gold label with
 * noise, in the format the real prompt asks for, so that the whole method (parsers, fusion,
 * routing, the agent loop) runs for real on a simulated model. Sub-judge answers for one item
 * and backend agree with one "intended" label, as a real model's sub-scores would cohere.
 *
 * The requests carry what this needs as a JSON hint (`request.simulation`), built by
 * {@link gecHint}: a request stays plain data, and the simulator stays the family's.
 */
import { seededRandom } from '../../lib/providers/sim.js';
import type { LlmProvider, SimHint } from '../../model/provider.js';
import type { GecCase } from './case.js';
import type { GecLabel } from './labels.js';
import { LOW_TRUST_LABELS, spanFlags } from './router.js';

export type SubJudge = 'nonsense' | 'meaning' | 'quality' | 'pair';

type Answer =
  /** `stage`: the same backend asked twice for one item (an expert that also finalizes) draws anew. */
  | { answer: 'classify'; stage: string }
  | { answer: 'router'; risk: string[] }
  | { answer: 'subjudge'; judge: SubJudge }
  /** `turn` null: the reminder turn, which must give the Final Answer. */
  | { answer: 'agent'; turn: number | null; src: string; tgt: string; edit: string; lang: string };

type GecHint = Answer & {
  family: 'gec';
  item: string;
  provider: string;
  gold?: GecLabel;
  labels: GecLabel[];
};

const REASON = 'simulated answer (drawn from the gold label with noise)';

/** The hint of one GEC request to `provider`. */
export function gecHint(c: GecCase, provider: LlmProvider, answer: Answer): SimHint {
  const hint: GecHint = {
    family: 'gec',
    item: c.item.id,
    provider: provider.id,
    labels: [...c.labels],
    ...(c.gold ? { gold: c.gold } : {}),
    ...answer,
  };
  return hint;
}

/** The hint of the LLM router's request: the risk it would see in the spans. */
export function routerHint(c: GecCase, provider: LlmProvider): SimHint {
  return gecHint(c, provider, { answer: 'router', risk: spanFlags(c.spans) });
}

/** The hint of one agent turn. */
export function agentHint(c: GecCase, provider: LlmProvider, turn: number | null): SimHint {
  const { src, tgt, edit } = c.vars;
  return gecHint(c, provider, { answer: 'agent', turn, src: src!, tgt: tgt!, edit: edit!, lang: c.lang });
}

/** The gold label with probability 1 − noise, else another allowed label. */
function noisyLabel(h: GecHint, rng: () => number, noise: number): GecLabel {
  const gold = h.gold && h.labels.includes(h.gold) ? h.gold : undefined;
  const wrong = h.labels.filter((l) => l !== gold);
  if (gold && (rng() >= noise || wrong.length === 0)) return gold;
  return wrong[Math.floor(rng() * wrong.length)]!;
}

/** One label per item and backend, shared by all that backend's sub-judge answers. */
function intended(h: GecHint, noise: number): GecLabel {
  return noisyLabel(h, seededRandom(`intent|${h.provider}|${h.item}`), noise);
}

const pick = (rng: () => number, values: readonly number[]) => values[Math.floor(rng() * values.length)]!;

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

function subJudgeAnswer(h: GecHint, judge: SubJudge, rng: () => number, noise: number): string {
  const scores = SCORES[intended(h, noise)];
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
}

/** A scripted agent: two tool calls, a grammar lookup, then the intended label. */
function agentTurn(h: GecHint & { answer: 'agent' }, noise: number): string {
  const quote = (s: string) => JSON.stringify(s);
  const script = [
    `Thought: I should check whether the edit changes the meaning.\nAction: meaning_change(${quote(h.src)}, ${quote(h.tgt)})`,
    `Thought: Now the quality of the edit.\nAction: reward_quality(${quote(h.src)}, ${quote(h.tgt)})`,
    `Thought: Which grammar rule applies?\nAction: grammar_rag(${quote(h.edit)}, ${quote(h.lang)})`,
  ];
  return (
    (h.turn === null ? undefined : script[h.turn]) ??
    `Thought: I have enough evidence.\nFinal Answer: ${intended(h, noise)} - ${REASON}`
  );
}

/** The GEC family's simulator: the answer a hint asks for. */
export function simulateGec(hint: SimHint, rng: () => number, noise: number): string {
  const h = hint as GecHint;
  switch (h.answer) {
    case 'classify':
      return JSON.stringify({ label: noisyLabel(h, rng, noise), reason: REASON });
    case 'router': {
      const label = noisyLabel(h, rng, noise);
      const escalate = LOW_TRUST_LABELS.includes(label) || h.risk.length > 0;
      return JSON.stringify({ label, reason: REASON, escalate, risk: h.risk });
    }
    case 'subjudge':
      return subJudgeAnswer(h, h.judge, rng, noise);
    case 'agent':
      return agentTurn(h, noise);
  }
}
