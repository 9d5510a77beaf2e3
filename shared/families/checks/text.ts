import { normalizeAnswer } from '../../lib/metrics/answer-match.js';

/**
 * Text comparisons the checks use: edit distance, n-gram overlap (BLEU, ROUGE) and the
 * normalisation openai/evals applies before its fuzzy match. Each runs in time polynomial in
 * the texts' lengths with no pattern an input can stall, and each is pinned by a hand-computed
 * test.
 */

/** Levenshtein distance (insertions, deletions, substitutions each cost 1), in O(|a|·|b|) time and O(|b|) space. */
export function levenshtein(a: string, b: string): number {
  const s = [...a];
  const t = [...b];
  if (s.length === 0) return t.length;
  if (t.length === 0) return s.length;
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  let current = new Array<number>(t.length + 1);
  for (let i = 1; i <= s.length; i += 1) {
    current[0] = i;
    for (let j = 1; j <= t.length; j += 1) {
      const substitution = previous[j - 1]! + (s[i - 1] === t[j - 1] ? 0 : 1);
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution);
    }
    [previous, current] = [current, previous];
  }
  return previous[t.length]!;
}

/** Words: lower-cased runs of letters and digits (the tokenisation ROUGE and BLEU are computed on). */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function ngramCounts(tokens: readonly string[], n: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i + n <= tokens.length; i += 1) {
    const key = tokens.slice(i, i + n).join('\u0000');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Clipped n-gram matches: each candidate n-gram counts at most as often as the reference has it. */
function overlap(candidate: Map<string, number>, reference: Map<string, number>): number {
  let matched = 0;
  for (const [gram, count] of candidate) matched += Math.min(count, reference.get(gram) ?? 0);
  return matched;
}

const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);

function f1(precision: number, recall: number): number {
  return precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
}

/** ROUGE-N F1 of a candidate against a reference (0 when either has no n-gram). */
export function rougeN(candidate: string, reference: string, n: number): number {
  const c = ngramCounts(words(candidate), n);
  const r = ngramCounts(words(reference), n);
  const matched = overlap(c, r);
  const [nc, nr] = [total(c), total(r)];
  if (nc === 0 || nr === 0) return 0;
  return f1(matched / nc, matched / nr);
}

/** ROUGE-L F1: from the longest common subsequence of the two texts' words. */
export function rougeL(candidate: string, reference: string): number {
  const c = words(candidate);
  const r = words(reference);
  if (c.length === 0 || r.length === 0) return 0;
  let previous = new Array<number>(r.length + 1).fill(0);
  let current = new Array<number>(r.length + 1).fill(0);
  for (let i = 1; i <= c.length; i += 1) {
    for (let j = 1; j <= r.length; j += 1)
      current[j] = c[i - 1] === r[j - 1] ? previous[j - 1]! + 1 : Math.max(previous[j]!, current[j - 1]!);
    [previous, current] = [current, previous];
  }
  const lcs = previous[r.length]!;
  return f1(lcs / c.length, lcs / r.length);
}

/**
 * Sentence BLEU (Papineni et al.) as promptfoo computes it: the texts lower-cased and split at
 * white space; clipped 1- to 4-gram precisions, each the best over the references, weighted
 * equally in a geometric mean where a precision of 0 counts as 1e-7; the brevity penalty against
 * the reference closest in length. The penalty is BLEU's e^(1 − r/c) for a candidate of c words
 * shorter than its reference's r; `promptfoo` takes promptfoo's own e^(1 − c/r) instead, which
 * is above 1 for a shorter candidate, so that an imported bleu assertion decides as it did there.
 */
export function bleu(candidate: string, references: readonly string[], promptfoo = false): number {
  const split = (text: string) => text.toLowerCase().trim().split(/\s+/);
  const c = split(candidate);
  if (candidate.trim() === '' || references.length === 0) return 0;
  const refs = references.map(split);
  const closest = refs
    .map((r) => r.length)
    .reduce((prev, curr) => (Math.abs(curr - c.length) < Math.abs(prev - c.length) ? curr : prev));
  let logSum = 0;
  for (let n = 1; n <= 4; n += 1) {
    const cc = ngramCounts(c, n);
    const possible = total(cc);
    const matched = Math.max(...refs.map((r) => overlap(cc, ngramCounts(r, n))));
    const precision = possible > 0 ? matched / possible : 0;
    logSum += 0.25 * Math.log(precision === 0 ? 1e-7 : precision);
  }
  const brevity =
    c.length > closest ? 1 : promptfoo ? Math.exp(1 - c.length / closest) : Math.exp(1 - closest / c.length);
  return brevity * Math.exp(logSum);
}

/** The fuzzy-match ratio: 1 − edit distance / the longer length, on the normalised texts (1 for two empty texts). */
export function fuzzyRatio(a: string, b: string): number {
  const [s, t] = [normalizeAnswer(a), normalizeAnswer(b)];
  const longest = Math.max([...s].length, [...t].length);
  return longest === 0 ? 1 : 1 - levenshtein(s, t) / longest;
}
