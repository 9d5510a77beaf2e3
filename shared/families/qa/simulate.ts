/**
 * What the simulator answers for QA: as the model under test, the key with probability
 * 1 − noise (written the ways models write it: a bare letter, a sentence, a worked number with
 * its unit, now and then the question echoed back), else a wrong option or number; as the
 * grader, the fast verdict when there is one, else the answer's agreement with the key, with
 * noise.
 */
import type { SimHint } from '../../model/provider.js';
import { fastGrade, type QuestionType } from './fast-path.js';

export type QaHint =
  | {
      family: 'qa';
      stage: 'answer';
      item: string;
      type: QuestionType;
      key: string;
      options: Record<string, string>;
      question: string;
    }
  | {
      family: 'qa';
      stage: 'grade';
      item: string;
      type: QuestionType;
      key: string;
      options: Record<string, string>;
      predicted: string;
      tolerance: number;
    };

const pick = <T>(rng: () => number, list: readonly T[]): T => list[Math.floor(rng() * list.length)]!;

function simAnswer(h: Extract<QaHint, { stage: 'answer' }>, rng: () => number, noise: number): string {
  const right = rng() >= noise;
  if (h.type === 'mcq') {
    const letters = Object.keys(h.options).length > 0 ? Object.keys(h.options) : ['A', 'B', 'C', 'D'];
    const wrong = letters.filter((l) => l !== h.key);
    const letter = right || wrong.length === 0 ? h.key : pick(rng, wrong);
    const text = h.options[letter] ?? '';
    return pick(rng, [
      letter,
      `(${letter})`,
      `Answer: ${letter}`,
      `${letter}. ${text}`,
      `The answer is (${letter}) ${text}.`,
      // The question echoed back with its options: only the LLM grader can read this one.
      `${h.question}\nAnswer: ${letter}`,
    ]);
  }
  if (h.type === 'numeric') {
    const key = Number(h.key);
    const value = right || !Number.isFinite(key) ? key : Math.round(key * (1.3 + rng()) * 100) / 100;
    return pick(rng, [String(value), `${value}`, `The answer is ${value}.`, `x = ${value}`]);
  }
  return right ? h.key : 'I am not sure; it depends on the situation.';
}

function simGrade(h: Extract<QaHint, { stage: 'grade' }>, rng: () => number, noise: number): string {
  const fast = fastGrade(h.type, h.predicted, h.key, { options: h.options, tolerance: h.tolerance });
  const truth = fast.decided
    ? fast.correct
    : h.predicted.trim() === h.key.trim() || h.predicted.includes(h.key);
  const said = rng() >= noise / 2 ? truth : !truth;
  return JSON.stringify({ score: said ? 1 : 0, reasoning: 'simulated grade (from the key, with noise)' });
}

export function simulateQa(hint: SimHint, rng: () => number, noise: number): string {
  const h = hint as QaHint;
  return h.stage === 'answer' ? simAnswer(h, rng, noise) : simGrade(h, rng, noise);
}
