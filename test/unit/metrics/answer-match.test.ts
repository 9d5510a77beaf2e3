/**
 * Answer matching against a set of acceptable answers: SQuAD's normalisation, exact match and
 * token F1, each the best over the set, worked by hand.
 */
import { describe, expect, it } from 'vitest';
import {
  bestMatch,
  matchOne,
  normalizeAnswer,
  readAnswerSet,
  tokenF1,
} from '../../../shared/lib/metrics/answer-match.js';

describe('answer normalisation', () => {
  it('drops case, punctuation, articles and extra spaces, as SQuAD does', () => {
    // Punctuation is removed, not spaced, as SQuAD's script does: Eiffel-Tower → eiffeltower.
    expect(normalizeAnswer('  The Eiffel-Tower,  in Paris! ')).toBe('eiffeltower in paris');
    expect(normalizeAnswer("Don't stop")).toBe('dont stop');
    expect(normalizeAnswer('An apple a day')).toBe('apple day');
    // Articles only as words: "theory" keeps its "the".
    expect(normalizeAnswer('the theory')).toBe('theory');
  });
});

describe('matching one reference', () => {
  it('by each rule', () => {
    expect(matchOne('exact', ' Paris ', 'Paris')).toBe(1);
    expect(matchOne('exact', 'paris', 'Paris')).toBe(0);
    expect(matchOne('normalized', 'the city of Paris.', 'City of paris')).toBe(1);
    expect(matchOne('contains', 'It is Paris, France.', 'paris')).toBe(1);
    // Whole words only: "par" is not in "paris".
    expect(matchOne('contains', 'It is Paris.', 'par')).toBe(0);
    // answer: "blue light does not penetrate" (5 words); reference: "because blue light does not
    // penetrate deeply" (7). Common 5: precision 1, recall 5/7, F1 = 2·(5/7)/(12/7) = 10/12.
    expect(
      tokenF1('blue light does not penetrate', 'Because blue light does not penetrate deeply'),
    ).toBeCloseTo(10 / 12, 12);
    expect(tokenF1('', '')).toBe(1);
    expect(tokenF1('the', 'Paris')).toBe(0);
  });
});

describe('the best match over a set of acceptable answers', () => {
  const set = ['Denver Broncos', 'the Broncos', 'Broncos win'];
  it('takes the maximum of exact match and of F1 over the set', () => {
    // EM: "broncos" equals the normalised "the Broncos" only.
    expect(bestMatch('normalized', 'Broncos', set)).toEqual({ value: 1, reference: 'the Broncos' });
    // F1 of "the Denver team": words [denver, team]. Against "denver broncos": common 1, P 1/2,
    // R 1/2 → 0.5; against "broncos": 0; against "broncos win": 0. Max 0.5.
    expect(bestMatch('f1', 'the Denver team', set)).toEqual({ value: 0.5, reference: 'Denver Broncos' });
    // F1 of "Broncos": against "denver broncos" P 1, R 1/2 → 2/3; against "broncos" → 1. Max 1.
    expect(bestMatch('f1', 'Broncos', set)!.value).toBe(1);
    expect(bestMatch('normalized', 'Panthers', set)).toEqual({ value: 0, reference: 'Denver Broncos' });
  });

  it('is undefined over an empty set, never 0', () => {
    expect(bestMatch('f1', 'anything', [])).toBeUndefined();
  });
});

describe('a cell holding a set of answers', () => {
  it('reads a JSON array or texts between a separator; any other cell is one answer', () => {
    expect(readAnswerSet('["Paris", "the city of Paris", ""]')).toEqual(['Paris', 'the city of Paris']);
    expect(readAnswerSet('[1, 2]')).toEqual(['1', '2']);
    expect(readAnswerSet('Nothing happens; You eat seeds ;', ';')).toEqual([
      'Nothing happens',
      'You eat seeds',
    ]);
    expect(readAnswerSet('Nothing happens; You eat seeds')).toEqual(['Nothing happens; You eat seeds']);
    expect(readAnswerSet('[citation needed]')).toEqual(['[citation needed]']);
    expect(readAnswerSet('[{"a": 1}]')).toEqual({ error: 'is a list whose entries are not all texts' });
    expect(readAnswerSet(' ; ', ';')).toEqual({ error: 'holds no answer' });
  });
});
