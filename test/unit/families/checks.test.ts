/** The checks family's comparisons, choice reading, formulas and kappa, pinned by hand-computed values. */
import { describe, expect, it } from 'vitest';
import { deterministicVerdict } from '../../../shared/families/checks/deterministic.js';
import { parseFormula } from '../../../shared/families/checks/formula.js';
import { gradedVerdict, INVALID_CHOICE, readChoice } from '../../../shared/families/checks/graded.js';
import { PASS_KAPPA } from '../../../shared/families/checks/metrics.js';
import {
  checkChecksSuite,
  type DeterministicCheck,
  deterministicCheck,
  gradedCheck,
} from '../../../shared/families/checks/suite.js';
import { readGrade } from '../../../shared/families/checks/task.js';
import { bleu, fuzzyRatio, levenshtein, rougeL, rougeN } from '../../../shared/families/checks/text.js';
import { scorerCoverage } from '../../../shared/lib/gate.js';
import { normalizeAnswer } from '../../../shared/lib/metrics/answer-match.js';

const check = (input: Record<string, unknown>): DeterministicCheck => deterministicCheck.parse(input);
const pass = (c: Record<string, unknown>, vars: Record<string, string>) =>
  deterministicVerdict(check(c), vars).pass;

describe('text comparisons', () => {
  it('levenshtein: kitten → sitting is 3 edits', () => {
    expect(levenshtein('kitten', 'sitting')).toBe(3);
    expect(levenshtein('', 'abc')).toBe(3);
    expect(levenshtein('same', 'same')).toBe(0);
  });
  it('ROUGE-1 and ROUGE-2 F1 of "the cat sat" against "the cat ran": 2/3 and 1/2', () => {
    expect(rougeN('the cat sat', 'the cat ran', 1)).toBeCloseTo(2 / 3, 12);
    expect(rougeN('the cat sat', 'the cat ran', 2)).toBeCloseTo(1 / 2, 12);
    expect(rougeN('', 'the cat', 1)).toBe(0);
  });
  it('ROUGE-L F1 from the longest common subsequence: a b c d / a c d e share a c d, 3/4', () => {
    expect(rougeL('a b c d', 'a c d e')).toBeCloseTo(0.75, 12);
  });
  it("BLEU: 1 for the same text; 'the cat' against 'the cat sat' is e^(1 − 3/2) · 1e-7^0.5, promptfoo's e^(1 − 2/3) · 1e-7^0.5", () => {
    expect(bleu('the cat sat on the mat', ['The cat sat on the mat'])).toBeCloseTo(1, 12);
    // p1 = 2/2, p2 = 1/1, no 3- or 4-grams (each 1e-7): the geometric mean is 1e-7^(2/4).
    expect(bleu('the cat', ['the cat sat'])).toBeCloseTo(Math.exp(-0.5) * Math.sqrt(1e-7), 15);
    expect(bleu('the cat', ['the cat sat'], true)).toBeCloseTo(Math.exp(1 / 3) * Math.sqrt(1e-7), 15);
  });
  it("openai/evals' normalisation and the fuzzy ratio", () => {
    expect(normalizeAnswer('The quick, brown fox.')).toBe('quick brown fox');
    expect(fuzzyRatio('The Paris!', 'paris')).toBe(1);
    // "abcd" against "abxd": one edit in four.
    expect(fuzzyRatio('abcd', 'abxd')).toBeCloseTo(0.75, 12);
  });
});

describe('deterministic checks', () => {
  it('equals, with case and trim options; not turns it', () => {
    expect(pass({ type: 'equals', value: '{ideal}' }, { output: 'Paris', ideal: 'Paris' })).toBe(true);
    expect(pass({ type: 'equals', value: '{ideal}' }, { output: 'paris', ideal: 'Paris' })).toBe(false);
    expect(
      pass({ type: 'equals', value: '{ideal}', ignoreCase: true }, { output: 'paris', ideal: 'Paris' }),
    ).toBe(true);
    expect(pass({ type: 'equals', value: 'x', trim: true }, { output: ' x\n' })).toBe(true);
    expect(pass({ type: 'equals', value: 'x', not: true }, { output: 'x' })).toBe(false);
  });
  it('contains: a JSON list column is each of its texts, any or all', () => {
    const vars = { output: 'Bonjour le monde', words: '["bonjour", "salut"]' };
    expect(pass({ type: 'contains', values: ['{words}'], ignoreCase: true }, vars)).toBe(true);
    expect(pass({ type: 'contains', values: ['{words}'], ignoreCase: true, mode: 'all' }, vars)).toBe(false);
    expect(pass({ type: 'contains', values: ['{words}'] }, vars)).toBe(false);
  });
  it("match as openai/evals' classes: Match on the raw output, Includes a substring, FuzzyMatch either way after normalising", () => {
    expect(
      pass({ type: 'match', how: 'starts-with', values: ['{ideal}'] }, { output: 'time', ideal: '["time"]' }),
    ).toBe(true);
    // Match does not strip the output: a leading space misses.
    expect(
      pass(
        { type: 'match', how: 'starts-with', values: ['{ideal}'] },
        { output: ' time', ideal: '["time"]' },
      ),
    ).toBe(false);
    expect(
      pass({ type: 'match', how: 'includes', values: ['{ideal}'] }, { output: 'It was 2015.', ideal: '15' }),
    ).toBe(true);
    expect(pass({ type: 'match', how: 'includes', values: ['Paris'] }, { output: 'paris' })).toBe(false);
    const fuzzy = { type: 'match', how: 'fuzzy', values: ['{ideal}'] };
    expect(pass(fuzzy, { output: 'It is Millie Bobby Brown.', ideal: '["Millie Bobby Brown"]' })).toBe(true);
    expect(pass(fuzzy, { output: 'Season', ideal: '["Season 11"]' })).toBe(true);
    // Empty after normalising: equal only to another empty text.
    expect(pass(fuzzy, { output: 'The!', ideal: '["a"]' })).toBe(true);
    expect(pass(fuzzy, { output: '', ideal: '["x"]' })).toBe(false);
  });
  it('json: the whole text, or a value inside it', () => {
    expect(pass({ type: 'json' }, { output: ' {"a": [1, 2]} ' })).toBe(true);
    expect(pass({ type: 'json' }, { output: 'Here: {"a": 1}' })).toBe(false);
    expect(pass({ type: 'json', mode: 'contains' }, { output: 'Here: {"a": "}"} and more' })).toBe(true);
    expect(pass({ type: 'json', mode: 'contains' }, { output: 'no json { here' })).toBe(false);
  });
  it('regex runs in RE2 (a backreference is refused); levenshtein and similarity pass at their thresholds', () => {
    expect(pass({ type: 'regex', pattern: '^\\d{3}$' }, { output: '123' })).toBe(true);
    expect(pass({ type: 'regex', pattern: 'abc', ignoreCase: true }, { output: 'xABCx' })).toBe(true);
    expect(() => pass({ type: 'regex', pattern: '(a)\\1' }, { output: 'aa' })).toThrow(/backreference/);
    expect(pass({ type: 'levenshtein', value: 'sitting', threshold: 3 }, { output: 'kitten' })).toBe(true);
    expect(pass({ type: 'levenshtein', value: 'sitting', threshold: 2 }, { output: 'kitten' })).toBe(false);
    const sim = deterministicVerdict(
      check({ type: 'similarity', metric: 'rouge_1', reference: 'the cat ran', threshold: 0.6 }),
      {
        output: 'the cat sat',
      },
    );
    expect(sim).toMatchObject({ pass: true });
    expect(sim.score).toBeCloseTo(2 / 3, 12);
  });
});

describe('choices, formulas, grades and kappa', () => {
  it("reads a choice as openai/evals' get_choice does", () => {
    expect(readChoice('Let me think.\nThe answer is B.\nB', 'cot_classify', ['A', 'B'])).toBe('B');
    // Read from the last line up: the first line's A is reasoning, not the choice.
    expect(readChoice('A looks wrong.\n(B).', 'cot_classify', ['A', 'B'])).toBe('B');
    expect(readChoice('Yes\nbecause it rhymes', 'classify_cot', ['Yes', 'No'])).toBe('Yes');
    expect(readChoice('I cannot tell', 'classify', ['A', 'B'])).toBe(INVALID_CHOICE);
  });
  it('an answer naming no choice scores the lowest choice score', async () => {
    const c = gradedCheck.parse({
      type: 'model',
      prompt: 'g.md',
      choices: ['A', 'B'],
      choiceScores: { A: 1, B: 0.25 },
    });
    const ctx = {
      suite: { params: {} },
      backends: [{ id: 'sim:grader' }],
      render: () => 'prompt',
      call: async () => ({ text: 'no idea', finishReason: 'stop', usage: { input: 1, output: 1 } }),
    };
    const verdict = await gradedVerdict(c, { role: 'grader.x', item: '1', vars: {} }, ctx as never);
    expect(verdict).toEqual({ pass: false, score: 0.25, reason: `chose ${INVALID_CHOICE}` });
  });
  it('formulas: precedence, ^ to the right, functions; unknown names and broken ones refused', () => {
    expect(parseFormula('(a + b) / 2', ['a', 'b'])({ a: 1, b: 0 })).toBe(0.5);
    expect(parseFormula('a + b * 2', ['a', 'b'])({ a: 1, b: 3 })).toBe(7);
    expect(parseFormula('2 ^ 3 ^ 2', [])({})).toBe(512);
    expect(parseFormula('max(a, b) - min(a, b)', ['a', 'b'])({ a: 0.2, b: 0.7 })).toBeCloseTo(0.5, 12);
    expect(() => parseFormula('a + c', ['a'])).toThrow(/c is not one of the checks/);
    expect(() => parseFormula('a +', ['a'])).toThrow(/ends too early/);
    expect(() => parseFormula('eval(a)', ['a'])).toThrow(/unknown function eval/);
  });
  it('grades another tool gave: pass/fail words, blank, or neither', () => {
    expect([
      readGrade('PASS'),
      readGrade('false'),
      readGrade('1'),
      readGrade(' '),
      readGrade('maybe'),
    ]).toEqual([true, false, true, undefined, null]);
  });
  it("Cohen's kappa of passes: agreement 3/4 at chance 1/2 is 0.5; one verdict everywhere is null", () => {
    expect(PASS_KAPPA.value([1, 1, 0, 0], [1, 0, 0, 0])).toBeCloseTo(0.5, 12);
    expect(PASS_KAPPA.value([1, 1], [1, 1])).toBeNull();
    expect(PASS_KAPPA.value([], [])).toBeNull();
  });
  it('a suite is checked: an answer kind per model check, no check named pass', () => {
    const issues: string[] = [];
    checkChecksSuite(
      {
        dataset: { columns: { output: 'out' } },
        backends: [],
        checks: {
          checks: [
            { type: 'equals', name: 'pass', value: 'x', not: false, input: '{output}' },
            {
              type: 'model',
              prompt: 'g.md',
              labels: ['a', 'b'],
              range: [0, 1],
              not: false,
              input: '{output}',
            },
          ],
        },
      } as never,
      (path, message) => issues.push(`${path.join('.')}: ${message}`),
    );
    expect(issues).toEqual([
      "checks.checks.0.name: `pass` is the name of the whole item's verdict",
      'checks.checks.1: a model check answers one of: `labels`, `range` or `choices`',
      'backends: a model check needs a backend to grade with',
    ]);
  });

  it("a check's coverage leaves out the items it does not apply to, as it leaves out invalid rows", () => {
    // 2 scored, 1 unparseable, 2 not applicable: covered 2 of the 3 it applies to.
    expect(scorerCoverage({ n: 2, unscored: { parse: 1, not_applicable: 2 } })).toEqual({
      value: 2 / 3,
      n: 3,
    });
    expect(scorerCoverage({ n: 0, unscored: { not_applicable: 4 } })).toEqual({ value: null, n: 0 });
  });
});
