/**
 * What the simulator answers for summarization. As the summarizer: the reference's first
 * sentences, now and then with a fact changed (a negation or a number: a hallucination) or a
 * sentence dropped. As the judge and as the LLM-as-NLI: the human label when the item has one,
 * flipped with noise; without one, a lexical check of the summary against the reference.
 */
import { simContradiction } from '../../lib/encoders/sim.js';
import type { SimHint } from '../../model/provider.js';

export type SummarizationHint =
  | { family: 'summarization'; stage: 'summarize'; item: string; reference: string[] }
  | {
      family: 'summarization';
      stage: 'judge' | 'nli';
      item: string;
      reference: string[];
      summary: string[];
      against: 'reference' | 'document';
      /** The human label: 1 faithful, 0 not. */
      label?: number;
    };

/** A sentence with one fact changed: a number moved, else a negation added or removed. */
export function falsify(sentence: string): string {
  if (/\d/.test(sentence)) return sentence.replace(/\d+/, (n) => String(Number(n) + 3));
  if (/\b(?:did|does|was|is|were|will) not\b/.test(sentence))
    return sentence.replace(/\b(did|does|was|is|were|will) not\b/, '$1');
  const negated = sentence.replace(/\b(did|does|was|is|were|will|has|had|can)\b/, '$1 not');
  return negated === sentence
    ? `It is not true that ${sentence.charAt(0).toLowerCase()}${sentence.slice(1)}`
    : negated;
}

function simSummary(h: Extract<SummarizationHint, { stage: 'summarize' }>, rng: () => number, noise: number) {
  const sentences = h.reference.slice(0, 6);
  if (sentences.length === 0) return 'The document has no content to summarize.';
  if (rng() < noise) {
    const at = Math.floor(rng() * sentences.length);
    sentences[at] = falsify(sentences[at]!);
  }
  if (sentences.length > 2 && rng() < noise / 2) sentences.splice(Math.floor(rng() * sentences.length), 1);
  return sentences.join(' ');
}

/** Reference sentences some summary sentence contradicts, by the lexical check. */
function contradicted(reference: readonly string[], summary: readonly string[]): number[] {
  return reference.flatMap((premise, r) =>
    summary.some((hypothesis) => simContradiction({ premise, hypothesis }) >= 0.5) ? [r + 1] : [],
  );
}

function simCheck(
  h: Extract<SummarizationHint, { stage: 'judge' | 'nli' }>,
  rng: () => number,
  noise: number,
) {
  const found = contradicted(h.reference, h.summary);
  const truth = h.label === undefined ? found.length === 0 : h.label === 1;
  const faithful = rng() >= noise / 2 ? truth : !truth;
  if (h.stage === 'nli') {
    const list = faithful
      ? []
      : found.length > 0
        ? found
        : [1 + Math.floor(rng() * Math.max(1, h.reference.length))];
    return JSON.stringify({
      contradicted: list,
      reasoning: 'simulated (from the label or a lexical check, with noise)',
    });
  }
  // Against a document a short summary is complete enough; against a reference, length tells.
  const covered =
    h.against === 'document'
      ? 1
      : Math.min(1, h.summary.length / Math.max(1, Math.min(h.reference.length, 6)));
  return JSON.stringify({
    factual_accuracy: faithful ? 4 + Math.round(rng()) : 1 + Math.round(rng()),
    completeness: covered >= 0.8 ? 4 : covered >= 0.5 ? 3 : 2,
    factual_errors: faithful ? [] : ['simulated: a statement the reference does not support'],
    hedging_detected: false,
    hedging_examples: [],
    key_omissions: covered >= 0.8 ? [] : ['simulated: part of the reference is missing'],
    overall_assessment: 'simulated verdict (from the label or a lexical check, with noise)',
  });
}

export function simulateSummarization(hint: SimHint, rng: () => number, noise: number): string {
  const h = hint as SummarizationHint;
  return h.stage === 'summarize' ? simSummary(h, rng, noise) : simCheck(h, rng, noise);
}
