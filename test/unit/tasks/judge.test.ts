import { describe, expect, it } from 'vitest';
import { answerJsonSchema, answerSchema, answerVars } from '../../../shared/families/judge/answer.js';
import { WITHIN_ONE } from '../../../shared/families/judge/metrics.js';
import { simulateJudge } from '../../../shared/families/judge/simulate.js';
import type { JudgeSuite } from '../../../shared/families/judge/suite.js';
import { judgeFamily } from '../../../shared/families/judge/task.js';
import { parseAnswer } from '../../../shared/family/answer.js';
import { seededRandom } from '../../../shared/lib/providers/sim.js';
import { SuiteError, validateSuite } from '../../../shared/registry/suite.js';

const judgeSuite = (judge: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  validateSuite(
    {
      version: 1,
      name: 'j',
      task: 'judge',
      dataset: { path: 'x.csv', columns: { gold: 'human' } },
      judge: { prompt: 'prompts/tone.md', ...judge },
      backends: ['sim:x'],
      ...extra,
    },
    'test suite',
  ) as unknown as JudgeSuite;

const TONE = judgeSuite({ labels: ['polite', 'neutral', 'rude'] });
const HELPFUL = judgeSuite({ range: [1, 5], threshold: 4 });
const PROMPT = {
  'tone.md': {
    hash: 'h',
    text: '<reply>\n{reply}\n</reply>\n<customer_message>\n{customer_message}\n</customer_message>',
  },
};

describe('a declared judge suite', () => {
  it('accepts labels or a range, with the pass threshold inside the range', () => {
    expect(TONE.judge.labels).toEqual(['polite', 'neutral', 'rude']);
    expect(HELPFUL.judge).toMatchObject({ range: [1, 5], threshold: 4 });
  });

  it('refuses both or neither answer kind, a threshold outside the range, and a broken extra schema', () => {
    expect(() => judgeSuite({ labels: ['a', 'b'], range: [1, 5] })).toThrow(/either `labels` or `range`/);
    expect(() => judgeSuite({})).toThrow(SuiteError);
    expect(() => judgeSuite({ range: [1, 5], threshold: 7 })).toThrow(/threshold 7 is outside the range/);
    expect(() => judgeSuite({ labels: ['a', 'A'] })).toThrow(/labels must differ/);
    expect(() =>
      judgeSuite({ labels: ['a', 'b'], schema: { type: 'object', properties: { label: {} } } }),
    ).toThrow(/label is the judge's own field/);
    expect(() => judgeSuite({ labels: ['a', 'b'] }, { backends: [] })).toThrow(
      /needs a backend to judge with/,
    );
  });
});

describe('judge rows', () => {
  it('reads the columns its prompt names, and a gold label matched case-insensitively', () => {
    const parsed = judgeFamily.parseRow(
      { id: 'r1', reply: 'Thanks!', customer_message: 'Hi', human: 'Polite', extra: 'x' },
      1,
      TONE,
      PROMPT,
    );
    expect(parsed).toEqual({
      item: { id: 'r1', row: 1, input: { reply: 'Thanks!', customer_message: 'Hi' }, gold: 'polite' },
    });
  });

  it('makes a row invalid when a prompt column is missing or the gold is not an answer', () => {
    expect(judgeFamily.parseRow({ reply: 'x', human: 'polite' }, 2, TONE, PROMPT)).toMatchObject({
      error: 'missing column customer_message (the prompt reads it)',
    });
    expect(
      judgeFamily.parseRow({ reply: 'x', customer_message: 'y', human: 'angry' }, 3, TONE, PROMPT),
    ).toMatchObject({
      error: 'gold "angry" is not one of polite, neutral, rude (column human)',
    });
    expect(
      judgeFamily.parseRow({ reply: 'x', customer_message: 'y', human: 'four' }, 3, HELPFUL, PROMPT),
    ).toMatchObject({
      error: 'gold "four" is not a number (column human)',
    });
  });

  it('keeps an item with an empty gold cell, without gold', () => {
    const parsed = judgeFamily.parseRow({ reply: 'x', customer_message: 'y', human: ' ' }, 4, TONE, PROMPT);
    expect(parsed).toMatchObject({ item: { row: 4 } });
    expect('item' in parsed && parsed.item.gold).toBeUndefined();
  });
});

describe('judge answers', () => {
  it('reads a label in any case, a score as a number or numeric string, and the extra fields', () => {
    expect(parseAnswer('{"label": "RUDE", "reason": "sarcasm"}', answerSchema(TONE.judge))).toEqual({
      ok: true,
      value: { label: 'rude', reason: 'sarcasm' },
    });
    expect(parseAnswer('Sure: {"score": "4", "reason": "good"}', answerSchema(HELPFUL.judge))).toEqual({
      ok: true,
      value: { score: 4, reason: 'good' },
    });
    const withFields = judgeSuite({
      range: [1, 5],
      schema: { type: 'object', properties: { issues: { type: 'array', items: { type: 'string' } } } },
    });
    expect(
      parseAnswer('{"score": 2, "reason": "r", "issues": ["wrong fact"]}', answerSchema(withFields.judge)),
    ).toEqual({
      ok: true,
      value: { score: 2, reason: 'r', fields: { issues: ['wrong fact'] } },
    });
  });

  it('says what is wrong with an answer outside the declared labels or range', () => {
    expect(parseAnswer('{"label": "angry"}', answerSchema(TONE.judge))).toEqual({
      ok: false,
      problem: 'label: label must be one of polite, neutral, rude',
    });
    expect(parseAnswer('{"score": 9, "reason": ""}', answerSchema(HELPFUL.judge))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('score must be a number from 1 to 5'),
    });
  });

  it('asks for native structured output with every field required', () => {
    expect(answerJsonSchema(TONE.judge).schema).toEqual({
      type: 'object',
      properties: {
        label: { type: 'string', enum: ['polite', 'neutral', 'rude'] },
        reason: { type: 'string' },
      },
      required: ['label', 'reason'],
      additionalProperties: false,
    });
    expect(answerVars(HELPFUL.judge)).toEqual({ min: '1', max: '5', fields: '' });
  });
});

describe('judge scorers', () => {
  it('a labels judge has one label scorer; a range judge a number scorer and, with a threshold, a pass scorer', () => {
    expect(Object.keys(judgeFamily.scorers(TONE as never))).toEqual(['label']);
    const scorers = judgeFamily.scorers(HELPFUL as never);
    expect(Object.fromEntries(Object.entries(scorers).map(([n, s]) => [n, s.kind]))).toEqual({
      score: 'number',
      pass: 'pass',
    });
    const item = { id: 'a', row: 1, input: {}, gold: '4' };
    expect(scorers.pass!.target!(item)).toBe(true);
    expect(scorers.score!.target!(item)).toBe(4);
  });

  it('an ordinal labels judge and an integer range are scales (weighted kappa, ordinal alpha)', () => {
    const quality = judgeSuite({ labels: ['bad', 'ok', 'good'], ordinal: true, positive: ['good'] });
    expect(judgeFamily.scorers(quality as never).label!.metrics).toEqual({
      labelOrder: ['bad', 'ok', 'good'],
      positive: ['good'],
      ordinal: true,
    });
    expect(judgeFamily.config(quality as never).answer).toBe('labels bad/ok/good (ordinal)');
    expect(judgeFamily.scorers(TONE as never).label!.metrics).not.toHaveProperty('ordinal');
    expect(judgeFamily.scorers(HELPFUL as never).score!.metrics).toEqual({
      threshold: 4,
      ordinal: true,
      extra: { withinOne: WITHIN_ONE },
    });
    const fractional = judgeSuite({ range: [0, 1.5] });
    expect(judgeFamily.scorers(fractional as never).score!.metrics).toEqual({});
  });

  it('refuses `ordinal` without labels or a range', () => {
    expect(() => judgeSuite({ pairwise: ['a', 'b'], ordinal: true })).toThrow(
      /`ordinal` needs `labels` or `range`/,
    );
  });
});

describe('the judge simulator', () => {
  it('answers the gold label or score most of the time, in the answer JSON', () => {
    const labels = Array.from({ length: 200 }, (_, i) =>
      JSON.parse(
        simulateJudge(
          { family: 'judge', item: `l${i}`, labels: ['a', 'b', 'c'], gold: 'b', fields: {} },
          seededRandom(`l${i}`),
          0.2,
        ),
      ),
    );
    const right = labels.filter((a) => a.label === 'b').length;
    expect(right / 200).toBeGreaterThan(0.7);
    expect(right / 200).toBeLessThan(0.9);
    const scores = Array.from({ length: 200 }, (_, i) =>
      JSON.parse(
        simulateJudge(
          { family: 'judge', item: `s${i}`, range: [1, 5], gold: '4', fields: {} },
          seededRandom(`s${i}`),
          0.2,
        ),
      ),
    );
    expect(scores.every((a) => Number.isInteger(a.score) && a.score >= 1 && a.score <= 5)).toBe(true);
    expect(scores.filter((a) => a.score === 4).length / 200).toBeGreaterThan(0.7);
  });
});
