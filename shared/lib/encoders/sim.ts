/**
 * Simulated encoders, for `--simulate` and tests: no model, no key, deterministic. Neither
 * knows the gold; each is a crude lexical stand-in, named `sim:` so reports mark it.
 *
 * - `sim:embed`: a hashed bag of words (256 dimensions), so sentences sharing words are close.
 * - `sim:nli`: a hypothesis that shares most of its words with the premise but differs from it
 *   in negation or in a number counts as contradicted.
 */
import { createHash } from 'node:crypto';
import type { Embedder, EncoderSpend, NliModel, NliPair } from './types.js';

const DIMENSIONS = 256;
const NEGATIONS = new Set(['not', 'no', 'never', 'none', 'nobody', 'nothing', "n't", 'cannot', 'without']);
const STOP = new Set([
  'the',
  'a',
  'an',
  'of',
  'to',
  'and',
  'in',
  'on',
  'for',
  'is',
  'was',
  'be',
  'that',
  'it',
  'with',
  'as',
  'at',
  'by',
]);

const words = (text: string) =>
  text
    .toLowerCase()
    .replace(/n't\b/g, " n't")
    .match(/[\p{L}\p{N}']+/gu) ?? [];

/**
 * A simulated encoder costs nothing and takes no model time: it reports a latency of 0 rather
 * than the time its arithmetic took, so a simulated run's latency figures are the same on
 * every machine and in either shell.
 */
const free = (texts: number): EncoderSpend => ({ tokens: texts, costUsd: 0, latencyMs: 0 });

export class SimEmbedder implements Embedder {
  readonly simulated = true;
  constructor(readonly id = 'sim:embed') {}

  async embed(texts: readonly string[]) {
    const vectors = texts.map((text) => {
      const vector = new Array<number>(DIMENSIONS).fill(0);
      for (const word of words(text)) {
        if (STOP.has(word)) continue;
        const hash = createHash('md5').update(word).digest();
        vector[hash.readUInt16BE(0) % DIMENSIONS]! += hash[2]! & 1 ? 1 : -1;
      }
      return vector;
    });
    return { vectors, spend: free(texts.length) };
  }
}

/** The simulated contradiction probability of one pair (exported for tests). */
export function simContradiction({ premise, hypothesis }: NliPair): number {
  const p = words(premise);
  const h = words(hypothesis);
  const content = h.filter((w) => !STOP.has(w) && !NEGATIONS.has(w));
  if (content.length === 0) return 0.02;
  const inPremise = new Set(p);
  const overlap = content.filter((w) => inPremise.has(w)).length / content.length;
  if (overlap < 0.5) return 0.05;
  const negated = (list: string[]) => list.filter((w) => NEGATIONS.has(w)).length % 2;
  const numbers = (list: string[]) => list.filter((w) => /^\d/.test(w));
  const pn = new Set(numbers(p));
  const numberClash = pn.size > 0 && numbers(h).some((n) => !pn.has(n));
  return negated(p) !== negated(h) || numberClash ? 0.9 : 0.1;
}

export class SimNli implements NliModel {
  readonly simulated = true;
  constructor(readonly id = 'sim:nli') {}

  async contradiction(pairs: readonly NliPair[]) {
    return { probabilities: pairs.map(simContradiction), spend: free(pairs.length) };
  }
}
