/**
 * The transcript-cleanup metrics on small cases computed by hand, including a malformed
 * pass-1 answer, an empty pass-2 answer and a missing cleaned_text.
 */
import { describe, expect, it } from 'vitest';
import {
  classifyEdits,
  exactMatch,
  iMeanRates,
  itemFigures,
  levenshtein,
  norm,
  similarity,
  spellingAccuracy,
  tokenF1,
  wordErrorRate,
  words,
} from '../../../shared/families/cleanup/metrics.js';

describe('norm and words', () => {
  it('normalises with NFKC, lower case, one space per whitespace run, trimmed; punctuation kept', () => {
    expect(norm('  Hello\tWORLD ,\n ok ')).toBe('hello world , ok');
    expect(norm('Ｈｅｌｌｏ ﬁne')).toBe('hello fine');
  });

  it('drops every punctuation character before splitting', () => {
    expect(words("Hello, world! It's OK.")).toEqual(['hello', 'world', 'its', 'ok']);
    expect(words(' — , ')).toEqual([]);
  });
});

describe('item figures', () => {
  it('Levenshtein: kitten → sitting is 3', () => {
    expect(levenshtein([...'kitten'], [...'sitting'])).toBe(3);
    expect(levenshtein([], ['a', 'b'])).toBe(2);
  });

  it('similarity is 1 − lev / max length over normalised code points; 1 for two empties; 0 unparsed', () => {
    expect(similarity('Kitten', 'sitting')).toBeCloseTo(1 - 3 / 7, 12);
    expect(similarity('  A ', 'a')).toBe(1);
    expect(similarity('', '')).toBe(1);
    expect(similarity(undefined, 'a')).toBe(0);
  });

  it('exact match compares normalised text; 0 when the answer did not parse', () => {
    expect(exactMatch('Hello   World', 'hello world')).toBe(1);
    expect(exactMatch('Hello world.', 'hello world')).toBe(0);
    expect(exactMatch(undefined, '')).toBe(0);
  });

  it('token F1 as in SQuAD, counting repeated words once each', () => {
    // common 3, precision 3/3, recall 3/4: F1 = 2·1·0.75 / 1.75 = 6/7.
    expect(tokenF1('The cat sat.', 'the cat sat down')).toBeCloseTo(6 / 7, 12);
    // "the the cat" vs "the cat": common 2, precision 2/3, recall 1: F1 = 0.8.
    expect(tokenF1('the the cat', 'the cat')).toBeCloseTo(0.8, 12);
    expect(tokenF1('', '')).toBe(1);
    expect(tokenF1('', 'a')).toBe(0);
  });

  it('word error rate against the reference; n/a when the reference has no words', () => {
    expect(wordErrorRate('the cat sat', 'the cat sat down')).toBe(0.25);
    expect(wordErrorRate('a b c', 'a x')).toBe(1); // substitute x→b, insert c: 2 / 2
    expect(wordErrorRate('', '')).toBe(0);
    expect(wordErrorRate('a b', '')).toBeNull();
  });

  it('a clean answer: every figure 1, hybrid 1', () => {
    const f = itemFigures({ cleaned: 'Go right.', draftValid: true }, 'go right.');
    expect(f).toMatchObject({
      parseValid: 1,
      exactMatch: 1,
      similarity: 1,
      contractCompliance: 1,
      tokenF1: 1,
      wer: 0,
    });
    expect(f.hybrid).toBeCloseTo(1, 12);
  });

  it('a malformed pass-1 answer breaks the contract only: hybrid 0.4 + 0.2 + 0.3 = 0.9', () => {
    const f = itemFigures({ cleaned: 'Go right.', draftValid: false }, 'go right.');
    expect(f).toMatchObject({ parseValid: 1, exactMatch: 1, similarity: 1, contractCompliance: 0 });
    expect(f.hybrid).toBeCloseTo(0.9, 12);
  });

  it('an empty pass-2 answer parses but says nothing: hybrid 0.4', () => {
    const f = itemFigures({ cleaned: '  ', draftValid: true }, 'hi there');
    expect(f).toMatchObject({
      parseValid: 1,
      exactMatch: 0,
      similarity: 0,
      contractCompliance: 0,
      tokenF1: 0,
      wer: 1,
    });
    expect(f.hybrid).toBeCloseTo(0.4, 12);
  });

  it('a missing cleaned_text is not parse_valid: everything 0, the word error rate 1', () => {
    expect(itemFigures({ draftValid: true }, 'hi there')).toEqual({
      parseValid: 0,
      exactMatch: 0,
      similarity: 0,
      contractCompliance: 0,
      tokenF1: 0,
      wer: 1,
      hybrid: 0,
    });
  });

  it('hybrid weighs a near miss: lev("go lift", "go left") = 1 of 7, so 0.4 + 0.3 × 6/7 + 0.1', () => {
    const f = itemFigures({ cleaned: 'Go lift', draftValid: true }, 'go left');
    expect(f.similarity).toBeCloseTo(6 / 7, 12);
    expect(f.exactMatch).toBe(0);
    expect(f.hybrid).toBeCloseTo(0.4 + (0.3 * 6) / 7 + 0.1, 12);
  });
});

describe('tagged rates', () => {
  it('I mean: a literal use removed is a false positive, a correction kept a false negative', () => {
    const rates = iMeanRates([
      { tags: ['i_mean:literal'], cleaned: 'I mean it, this is great.' },
      { tags: ['i_mean:literal'], cleaned: 'This is great.' },
      { tags: ['i_mean:correction'], cleaned: 'Go right.' },
      { tags: ['i_mean:correction'], cleaned: 'Go left, I mean right.' },
      { tags: ['i_mean:correction'], cleaned: 'Turn right.' },
      { tags: [], cleaned: 'i mean nothing' },
    ]);
    expect(rates.literalFalsePositiveRate).toBe(0.5);
    expect(rates.correctionFalseNegativeRate).toBeCloseTo(1 / 3, 12);
    expect(iMeanRates([])).toEqual({ literalFalsePositiveRate: null, correctionFalseNegativeRate: null });
  });

  it('spelling: the expected token, normalised without punctuation, among the cleaned words', () => {
    expect(
      spellingAccuracy([
        { tags: ['spelling'], cleaned: 'Call Kowalski.', spellingExpected: 'Kowalski' },
        { tags: ['spelling'], cleaned: 'Call Kovalsky.', spellingExpected: 'Kowalski' },
        { tags: ['spelling'], cleaned: "Ask Mr. O'Brien", spellingExpected: "O'Brien" },
        { tags: [], cleaned: 'x', spellingExpected: 'y' },
      ]),
    ).toBeCloseTo(2 / 3, 12);
    expect(spellingAccuracy([])).toBeNull();
  });
});

describe('classifyEdits', () => {
  it('counts filler removals, resolved self-repairs and content changes', () => {
    expect(classifyEdits('Um so I think uh we should go', 'I think we should go')).toEqual({
      fillerRemoved: 2,
      selfRepairResolved: 0,
      contentChanged: 0,
    });
    expect(
      classifyEdits(
        'From which Norse leader I mean countries did the Normans come',
        'From which countries did the Normans come?',
      ),
    ).toEqual({ fillerRemoved: 0, selfRepairResolved: 1, contentChanged: 0 });
    expect(classifyEdits('The meeting is on Monday', 'The meeting is on Tuesday.')).toEqual({
      fillerRemoved: 0,
      selfRepairResolved: 0,
      contentChanged: 1,
    });
    expect(classifyEdits('Send it to Bob', 'Send it')).toEqual({
      fillerRemoved: 0,
      selfRepairResolved: 0,
      contentChanged: 1,
    });
    expect(classifyEdits('Same words.', 'same words')).toEqual({
      fillerRemoved: 0,
      selfRepairResolved: 0,
      contentChanged: 0,
    });
  });
});
