/**
 * Matching a short free-text answer against reference answers, as reading-comprehension and
 * truthfulness benchmarks score them. A reference is a set: the answers that count as right
 * (SQuAD's several annotators' spans, TruthfulQA's "Correct Answers"); an answer's match is its
 * best over the set, as SQuAD takes the maximum of exact match and F1 over the gold answers.
 *
 * - `exact`: the texts equal once trimmed.
 * - `normalized`: equal after SQuAD's normalisation (lower case, punctuation removed, the
 *   articles a, an and the removed, runs of whitespace one space): SQuAD's exact match.
 * - `contains`: the normalised answer holds a normalised reference as a run of whole words.
 * - `f1`: SQuAD's token F1 between the normalised answers' words (multiset overlap); 1 when
 *   both are empty, 0 when only one is.
 */

export const ANSWER_MATCHES = ['exact', 'normalized', 'contains', 'f1'] as const;
export type AnswerMatch = (typeof ANSWER_MATCHES)[number];

/** ASCII punctuation: the characters Python's `string.punctuation` lists, which SQuAD's script removes. */
export const ASCII_PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;

/**
 * SQuAD's answer normalisation, as its evaluation script and openai/evals' FuzzyMatch apply it:
 * lower case, ASCII punctuation removed (`don't` → `dont`), the articles a, an and the removed,
 * runs of whitespace one space.
 */
export function normalizeAnswer(text: string): string {
  return text
    .toLowerCase()
    .replace(ASCII_PUNCTUATION, '')
    .replace(/\b(a|an|the)\b/g, ' ')
    .split(/\s+/)
    .filter(Boolean)
    .join(' ');
}

const wordsOf = (text: string) => {
  const normal = normalizeAnswer(text);
  return normal === '' ? [] : normal.split(' ');
};

/** SQuAD's token F1 between an answer and one reference. */
export function tokenF1(answer: string, reference: string): number {
  const a = wordsOf(answer);
  const r = wordsOf(reference);
  if (a.length === 0 && r.length === 0) return 1;
  if (a.length === 0 || r.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const w of r) counts.set(w, (counts.get(w) ?? 0) + 1);
  let common = 0;
  for (const w of a) {
    const left = counts.get(w) ?? 0;
    if (left > 0) {
      common += 1;
      counts.set(w, left - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / a.length;
  const recall = common / r.length;
  return (2 * precision * recall) / (precision + recall);
}

/** How well `answer` matches one reference under `how`: 1 or 0, or F1's share. */
export function matchOne(how: AnswerMatch, answer: string, reference: string): number {
  switch (how) {
    case 'exact':
      return answer.trim() === reference.trim() ? 1 : 0;
    case 'normalized':
      return normalizeAnswer(answer) === normalizeAnswer(reference) ? 1 : 0;
    case 'contains': {
      const needle = normalizeAnswer(reference);
      return needle !== '' && ` ${normalizeAnswer(answer)} `.includes(` ${needle} `) ? 1 : 0;
    }
    case 'f1':
      return tokenF1(answer, reference);
  }
}

/**
 * The best match of `answer` over a set of references, with the reference that gave it (the
 * first of the best). Undefined for an empty set: no reference, no match (never 0).
 */
export function bestMatch(
  how: AnswerMatch,
  answer: string,
  references: readonly string[],
): { value: number; reference: string } | undefined {
  let best: { value: number; reference: string } | undefined;
  for (const reference of references) {
    const value = matchOne(how, answer, reference);
    if (best === undefined || value > best.value) best = { value, reference };
  }
  return best;
}

/**
 * A cell holding a set of answers: a JSON array of texts (or numbers), or the texts between
 * `separator` (TruthfulQA's `;`), each trimmed, empty ones left out; any other cell is one
 * answer. Or why the cell holds none.
 */
export function readAnswerSet(text: string, separator?: string): string[] | { error: string } {
  const trimmed = text.trim();
  let answers: string[];
  if (trimmed.startsWith('[')) {
    let list: unknown;
    try {
      list = JSON.parse(trimmed);
    } catch {
      list = undefined;
    }
    if (Array.isArray(list)) {
      if (!list.every((a) => typeof a === 'string' || typeof a === 'number'))
        return { error: 'is a list whose entries are not all texts' };
      answers = list.map((a) => String(a).trim());
    } else answers = separator ? trimmed.split(separator).map((a) => a.trim()) : [trimmed];
  } else answers = separator ? trimmed.split(separator).map((a) => a.trim()) : [trimmed];
  answers = answers.filter((a) => a !== '');
  return answers.length > 0 ? answers : { error: 'holds no answer' };
}
