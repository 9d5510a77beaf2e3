/**
 * Summarization faithfulness, first parts: sentence splitting through legal citations and
 * abbreviations, and the score formulas on hand-computed cases.
 */
import { describe, expect, it } from 'vitest';
import {
  composite,
  cosine,
  coverageScore,
  judgeScore,
  nliScore,
} from '../../../shared/families/summarization/scores.js';
import { splitSentences } from '../../../shared/families/summarization/sentences.js';

describe('splitSentences', () => {
  it.each([
    [
      'Brown v. Board of Education, 347 U.S. 483 (1954), overruled Plessy. The Court was unanimous.',
      ['Brown v. Board of Education, 347 U.S. 483 (1954), overruled Plessy.', 'The Court was unanimous.'],
    ],
    [
      'Under 42 U.S.C. § 1983, a person may sue. Damages followed.',
      ['Under 42 U.S.C. § 1983, a person may sue.', 'Damages followed.'],
    ],
    ['See No. 12-345. The petition was denied.', ['See No. 12-345.', 'The petition was denied.']],
    ['Dr. Smith testified. Mr. Jones did not.', ['Dr. Smith testified.', 'Mr. Jones did not.']],
    [
      'J. Roberts wrote for the Court, joined by Thomas, J. and Alito, J.',
      ['J. Roberts wrote for the Court, joined by Thomas, J. and Alito, J.'],
    ],
    [
      'Cf. Smith v. Jones, 123 F.3d 456 (9th Cir. 1997). It was wrong! Was it? Yes.',
      ['Cf. Smith v. Jones, 123 F.3d 456 (9th Cir. 1997).', 'It was wrong!', 'Was it?', 'Yes.'],
    ],
    ['The N.L.R.B. Ordered a hearing.', ['The N.L.R.B. Ordered a hearing.']],
    ['He said "stop." Then he left.', ['He said "stop."', 'Then he left.']],
    ['  \n ', []],
  ])('%j', (text, sentences) => {
    expect(splitSentences(text)).toEqual(sentences);
  });
});

describe('faithfulness scores', () => {
  it('cosine: parallel 1, orthogonal 0, opposite −1; n/a for a zero vector', () => {
    expect(cosine([1, 2], [2, 4])).toBeCloseTo(1, 12);
    expect(cosine([1, 0], [0, 3])).toBe(0);
    expect(cosine([1, 1], [-1, -1])).toBeCloseTo(-1, 12);
    expect(cosine([0, 0], [1, 1])).toBeNull();
  });

  it('NLI: 1 − the share of reference sentences some summary sentence contradicts (p ≥ 0.5)', () => {
    // Reference sentence 1 contradicted (0.9), 2 not (0.49 below the threshold), 3 contradicted at exactly 0.5.
    expect(
      nliScore([
        [0.1, 0.9],
        [0.49, 0.2],
        [0.5, 0],
      ]),
    ).toBeCloseTo(1 / 3, 12);
    expect(nliScore([])).toBeNull();
  });

  it('coverage: the share of reference sentences with a summary sentence at cosine ≥ 0.5', () => {
    // r1 = s1 (1); r2 at 60° from s1 (cos 0.5) counts; r3 orthogonal to both summary sentences.
    const s1 = [1, 0, 0];
    const s2 = [1, 0, 0];
    expect(
      coverageScore(
        [
          [1, 0, 0],
          [0.5, Math.sqrt(3) / 2, 0],
          [0, 0, 1],
        ],
        [s1, s2],
      ),
    ).toBeCloseTo(2 / 3, 12);
    expect(coverageScore([], [s1])).toBeNull();
    expect(coverageScore([[1, 0, 0]], [])).toBe(0);
  });

  it('judge: accuracy 5 and completeness 3 → mean 4 → 0.75', () => {
    expect(judgeScore(5, 3)).toBe(0.75);
    expect(judgeScore(1, 1)).toBe(0);
    expect(judgeScore(5, 5)).toBe(1);
  });

  it('composite = 0.35·NLI + 0.40·judge + 0.25·coverage; weights renormalised over the scores there are', () => {
    // 0.35·0.8 + 0.4·0.75 + 0.25·0.6 = 0.28 + 0.3 + 0.15 = 0.73
    expect(composite({ nli: 0.8, judge: 0.75, coverage: 0.6 })).toBeCloseTo(0.73, 12);
    // Without an NLI score: (0.4·0.75 + 0.25·0.6) / 0.65 = 0.45 / 0.65
    expect(composite({ nli: null, judge: 0.75, coverage: 0.6 })).toBeCloseTo(0.45 / 0.65, 12);
    expect(composite({ nli: 1, judge: 0, coverage: 0 }, { nli: 1, judge: 1, coverage: 2 })).toBeCloseTo(
      0.25,
      12,
    );
    expect(composite({ nli: null, judge: null, coverage: null })).toBeNull();
  });
});
