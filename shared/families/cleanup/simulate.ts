/**
 * What the simulator answers for cleanup: the draft is the expected text with probability
 * 1 − noise (else the transcript as it was), with a decision span per filler it removed; the
 * audit returns the expected text with probability 1 − noise (else the candidate). Now and then
 * an answer breaks its contract — prose instead of JSON, a missing field — as models do, so the
 * contract metrics have something to measure.
 */
import type { SimHint } from '../../model/provider.js';
import { FILLERS, words } from './metrics.js';

export type CleanupHint =
  | { family: 'cleanup'; stage: 'draft'; item: string; transcript: string; expected: string }
  | {
      family: 'cleanup';
      stage: 'audit';
      item: string;
      transcript: string;
      expected: string;
      candidate: string;
    };

export function simulateCleanup(hint: SimHint, rng: () => number, noise: number): string {
  const h = hint as CleanupHint;
  const broken = rng() < noise / 4;
  if (h.stage === 'draft') {
    if (broken) return `Here is the cleaned text: ${h.expected}`;
    const right = rng() >= noise;
    const candidate = right ? h.expected : h.transcript;
    const decision_spans = right
      ? words(h.transcript)
          .filter((w) => FILLERS.has(w))
          .slice(0, 5)
          .map((w) => ({ action: 'remove_filler', source: w, result: '' }))
      : [];
    return JSON.stringify({ candidate_text: candidate, decision_spans });
  }
  if (broken) return rng() < 0.5 ? `{"text": ${JSON.stringify(h.expected)}}` : h.expected;
  return JSON.stringify({ cleaned_text: rng() >= noise ? h.expected : h.candidate });
}
