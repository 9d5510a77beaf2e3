/**
 * The faithfulness scores of a summary against its reference document, each from 0 (bad) to 1
 * (good), and their composite. Pure: the NLI and embedding models are passed in as results.
 *
 * - NLI: 1 − the share of reference sentences contradicted by some summary sentence (a
 *   contradiction probability of 0.5 or more).
 * - coverage: the share of reference sentences whose best cosine similarity with a summary
 *   sentence is 0.5 or more.
 * - judge: the harsh judge's factual accuracy and completeness (each 1–5), their mean mapped
 *   to 0–1.
 * - composite = 0.35·NLI + 0.40·judge + 0.25·coverage against a reference summary, 0.35·NLI +
 *   0.40·judge (renormalised: coverage left out) against the document (weights configurable,
 *   normalised; see `defaultWeights`).
 */

export const CONTRADICTION_THRESHOLD = 0.5;
export const COVERAGE_THRESHOLD = 0.5;

/** Cosine similarity of two vectors of the same length; null when either has no length. */
export function cosine(a: readonly number[], b: readonly number[]): number | null {
  if (a.length !== b.length)
    throw new RangeError(`cosine: vectors of ${a.length} and ${b.length} dimensions`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? null : dot / Math.sqrt(na * nb);
}

/**
 * `contradiction[r][s]`: the probability that summary sentence s contradicts reference
 * sentence r. Null with no reference sentence.
 */
export function nliScore(contradiction: readonly (readonly number[])[]): number | null {
  if (contradiction.length === 0) return null;
  const contradicted = contradiction.filter((row) => row.some((p) => p >= CONTRADICTION_THRESHOLD)).length;
  return 1 - contradicted / contradiction.length;
}

/** Reference sentence embeddings against summary sentence embeddings. Null with no reference sentence. */
export function coverageScore(
  reference: readonly (readonly number[])[],
  summary: readonly (readonly number[])[],
): number | null {
  if (reference.length === 0) return null;
  const covered = reference.filter((r) =>
    summary.some((s) => (cosine(r, s) ?? Number.NEGATIVE_INFINITY) >= COVERAGE_THRESHOLD),
  ).length;
  return covered / reference.length;
}

/** The judge's factual accuracy and completeness (1–5 each) as one figure from 0 to 1. */
export function judgeScore(factualAccuracy: number, completeness: number): number {
  return ((factualAccuracy + completeness) / 2 - 1) / 4;
}

export interface CompositeWeights {
  nli: number;
  judge: number;
  coverage: number;
}

export const DEFAULT_WEIGHTS: CompositeWeights = { nli: 0.35, judge: 0.4, coverage: 0.25 };

/**
 * The composite's weights when the suite sets none, by what a summary is checked against.
 *
 * Against a reference summary, coverage is the share of the reference's points the summary
 * makes: two texts of a summary's length, so a good summary covers most of them. Against the
 * document it is the share of the document's sentences the summary is close to, and a summary
 * is short by design: it restates a small share of the document's sentences, so coverage sits
 * near 0 for faithful and unfaithful summaries alike and says little about faithfulness. Weighted 0.25 it would cap the composite near 0.75 (every other
 * score perfect), never above its default threshold in practice. So against the document it
 * weighs 0 and the composite is 0.35·NLI + 0.40·judge renormalised (0.467·NLI + 0.533·judge);
 * coverage is still scored and reported on its own.
 */
export function defaultWeights(against: 'reference' | 'document'): CompositeWeights {
  return against === 'document' ? { ...DEFAULT_WEIGHTS, coverage: 0 } : DEFAULT_WEIGHTS;
}

/** The weights the composite uses: the suite's own, else the default for what it is checked against. */
export function compositeWeights(block: {
  against: 'reference' | 'document';
  weights?: CompositeWeights | undefined;
}): CompositeWeights {
  return block.weights ?? defaultWeights(block.against);
}

/**
 * The weighted mean of the scores there are (weights normalised over them); null when none is.
 * With every score present and the default weights: 0.35·NLI + 0.40·judge + 0.25·coverage.
 */
export function composite(
  scores: { nli: number | null; judge: number | null; coverage: number | null },
  weights: CompositeWeights = DEFAULT_WEIGHTS,
): number | null {
  let total = 0;
  let weight = 0;
  for (const key of ['nli', 'judge', 'coverage'] as const) {
    const value = scores[key];
    if (value === null) continue;
    total += weights[key] * value;
    weight += weights[key];
  }
  return weight === 0 ? null : total / weight;
}
