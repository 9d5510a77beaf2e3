/**
 * The QA family: rows (the physics study's questions, MMLU-style option columns, bad rows),
 * the grading path (the fast path first, then the LLM grader, or unscored with the reason),
 * and the family's figures, hand-computed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fastGrade } from '../../../shared/families/qa/fast-path.js';
import { qaFigures } from '../../../shared/families/qa/report.js';
import type { QaSuite } from '../../../shared/families/qa/suite.js';
import { qaFamily } from '../../../shared/families/qa/task.js';
import type { TaskContext } from '../../../shared/family/types.js';
import type { Item, ItemResult, Score } from '../../../shared/model/model.js';
import type { Completion, CompletionRequest, LlmProvider } from '../../../shared/model/provider.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { EXAMPLE_DATA, NO_ENCODERS, REPO } from '../../helpers.js';

function qaSuite(overrides: Record<string, unknown> = {}): QaSuite {
  return validateSuite(
    {
      version: 1,
      name: 'qa-test',
      task: 'qa',
      dataset: { path: 'q.jsonl' },
      backends: ['sim:answerer', 'sim:grader'],
      ...overrides,
    },
    'qa test',
  ) as unknown as QaSuite;
}

const parse = (record: Record<string, string>, suite = qaSuite()) => qaFamily.parseRow(record, 1, suite, {});

describe('qa prompts that ship', () => {
  it('ask about any subject: physics is left to the suites about physics', () => {
    const dir = join(REPO, 'prompts', 'qa');
    const physical = readdirSync(dir).filter((file) => /physic/i.test(readFileSync(join(dir, file), 'utf8')));
    expect(physical).toEqual([]);
  });
});

describe('qa tolerance 0', () => {
  it('is an exact match, in the suite and per item', () => {
    expect(qaSuite({ qa: { tolerance: 0 } }).qa.tolerance).toBe(0);
    expect(() => qaSuite({ qa: { tolerance: -0.01 } })).toThrow();
    const parsed = parse({ question: 'How many?', type: 'numeric', answer: '12', tolerance: '0' });
    expect(parsed).toMatchObject({ item: { input: { tolerance: '0' } } });
    expect(fastGrade('numeric', '12', '12', { tolerance: 0 })).toMatchObject({ correct: true });
    expect(fastGrade('numeric', '12.01', '12', { tolerance: 0 })).toMatchObject({ correct: false });
  });
});

describe('qa rows', () => {
  it("reads every one of the physics study's 50 questions", () => {
    const lines = readFileSync(join(EXAMPLE_DATA, 'physics_questions_50.jsonl'), 'utf8').trim().split('\n');
    const parsed = lines.map((line, i) => {
      const q = JSON.parse(line) as Record<string, unknown>;
      return qaFamily.parseRow(
        Object.fromEntries(Object.entries(q).map(([k, v]) => [k, String(v)])),
        i + 1,
        qaSuite(),
        {},
      );
    });
    expect(parsed.filter((p) => 'error' in p)).toEqual([]);
    const first = parsed[0] as { item: Item };
    expect(first.item).toMatchObject({ id: '1', gold: 'C', input: { type: 'mcq' } });
  });

  it('reads MCQ options from columns (MMLU) and asks the question with them', () => {
    const suite = qaSuite({ dataset: { path: 'mmlu.csv', columns: { options: ['A', 'B', 'C', 'D'] } } });
    const parsed = parse(
      { question: 'Which is a vector?', A: 'Mass', B: 'Speed', C: 'Velocity', D: 'Energy', answer: 'C' },
      suite,
    );
    expect(parsed).toMatchObject({
      item: {
        gold: 'C',
        input: {
          type: 'mcq',
          options: JSON.stringify({ A: 'Mass', B: 'Speed', C: 'Velocity', D: 'Energy' }),
        },
      },
    });
  });

  it('never offers an empty option column, whose letter is then no key', () => {
    const suite = qaSuite({ dataset: { path: 'mmlu.csv', columns: { options: ['A', 'B', 'C', 'D'] } } });
    const row = { question: 'Which is a vector?', A: 'Mass', B: 'Velocity', C: '', D: 'Energy' };
    expect(parse({ ...row, answer: 'B' }, suite)).toMatchObject({
      item: { gold: 'B', input: { options: JSON.stringify({ A: 'Mass', B: 'Velocity', D: 'Energy' }) } },
    });
    expect(parse({ ...row, answer: 'C' }, suite)).toMatchObject({
      error: 'key "C" is not one of the options A, B, D',
    });
  });

  it('reads MCQ options from one list column, lettered in order', () => {
    const suite = qaSuite({ dataset: { path: 'q.jsonl', columns: { options: 'choices' } } });
    const row = {
      question: 'Which is a vector?',
      choices: '["Mass", "Velocity", "", "Energy"]',
      answer: 'B',
    };
    expect(parse(row, suite)).toMatchObject({
      item: {
        gold: 'B',
        input: { type: 'mcq', options: JSON.stringify({ A: 'Mass', B: 'Velocity', D: 'Energy' }) },
      },
    });
    expect(parse({ ...row, choices: 'Mass, Velocity' }, suite)).toMatchObject({
      error: 'column choices is not a list of options (a JSON array)',
    });
    expect(parse({ ...row, choices: '["only one"]' }, suite)).toMatchObject({
      error: 'column choices holds fewer than two options',
    });
  });

  it.each([
    [{ question: 'q', type: 'essay', answer: 'x' }, /type "essay" is not one of mcq, numeric, explanation/],
    [{ question: 'Pick: (A) a (B) b', type: 'mcq', answer: 'E' }, /key "E" is not one of the options A, B/],
    [{ question: 'How far?', type: 'numeric', answer: 'far' }, /key "far" is not a number/],
    [{ question: 'How far?', type: 'numeric', answer: '' }, /no key/],
    [{ type: 'numeric', answer: '3' }, /missing column question/],
    [{ question: 'q', type: 'numeric', answer: '3', tolerance: '5' }, /tolerance "5" is not in \[0, 1\]/],
    [
      { question: 'q', type: 'numeric', answer: '3', tolerance: '-0.1' },
      /tolerance "-0.1" is not in \[0, 1\]/,
    ],
  ])('makes a bad row invalid with the reason: %j', (record, reason) => {
    const parsed = parse(record as Record<string, string>);
    expect('error' in parsed && parsed.error).toMatch(reason);
  });

  it('needs the context column when the suite gives the model context', () => {
    const suite = qaSuite({ qa: { context: true } });
    expect(parse({ question: 'q', type: 'numeric', answer: '3' }, suite)).toMatchObject({
      error: expect.stringMatching(/missing column context/),
    });
    expect(parse({ question: 'q', type: 'numeric', answer: '3', context: 'c' }, suite)).toMatchObject({
      item: { input: { context: 'c' } },
    });
  });
});

/** A context whose models answer from a script; every call is recorded. */
function context(suite: QaSuite, answers: string[]) {
  const calls: { stage: string; provider: string; request: CompletionRequest }[] = [];
  const provider = (id: string) => ({ id, simulated: false }) as unknown as LlmProvider;
  const ctx: TaskContext<QaSuite> = {
    suite,
    prompts: {},
    paths: qaFamily.promptPaths(suite as never),
    backends: suite.backends.map(provider),
    ...NO_ENCODERS,
    render: (role, vars) => `${role} ${JSON.stringify(vars)}`,
    call: async (stage, p, request) => {
      calls.push({ stage, provider: p.id, request });
      return { text: answers.shift() ?? '', finishReason: 'stop' } as Completion;
    },
  };
  return { ctx, calls };
}

async function grade(answer: string, record: Record<string, string>, suite: QaSuite, replies: string[] = []) {
  const { item } = parse(record, suite) as { item: Item };
  const { ctx, calls } = context(suite, replies);
  const score = (await qaFamily
    .scorers(suite as never)
    .score!.score({ answer }, item, ctx as never)) as Score;
  return { score, calls };
}

const SLOPE = {
  question:
    'The slope of a velocity-time graph represents: (A) Displacement (B) Acceleration (C) Force (D) Momentum',
  type: 'mcq',
  answer: 'B',
};

describe('qa grading', () => {
  it('decides an unambiguous answer on the fast path, without a call', async () => {
    const { score, calls } = await grade(
      'The slope of a velocity-time graph represents: (B) Acceleration',
      SLOPE,
      qaSuite(),
    );
    expect(score).toEqual({
      kind: 'number',
      value: 1,
      decidedBy: 'fast:letter',
      explanation: 'read B; key B',
    });
    expect(calls).toEqual([]);
  });

  it('asks the grader (the last backend) about an ambiguous answer, with the key and its option text', async () => {
    const { score, calls } = await grade('Either (A) or (B).', SLOPE, qaSuite(), [
      '{"score": 0, "reasoning": "two options"}',
    ]);
    expect(score).toEqual({ kind: 'number', value: 0, decidedBy: 'sim:grader', explanation: 'two options' });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ stage: 'grade', provider: 'sim:grader' });
    expect(calls[0]!.request.prompt).toBe(
      `grade.mcq ${JSON.stringify({ predicted: 'Either (A) or (B).', reference: 'B (Acceleration)', tolerance: '5' })}`,
    );
  });

  it('sends every answer to the grader with the fast path off, and explanations always', async () => {
    const off = await grade('B', SLOPE, qaSuite({ qa: { fastPath: false } }), [
      '{"score": 1, "reasoning": "B"}',
    ]);
    expect(off.score).toMatchObject({ value: 1, decidedBy: 'sim:grader' });
    const explanation = await grade(
      'Accuracy is closeness to the truth.',
      { question: 'Accuracy vs precision?', type: 'explanation', answer: 'Accuracy: close to true value.' },
      qaSuite(),
      ['{"score": 0.5, "reasoning": "half"}'],
    );
    expect(explanation.score).toMatchObject({ value: 0.5 });
    expect(explanation.calls[0]!.request.prompt).toMatch(/^grade\.explanation /);
  });

  it('uses the per-item tolerance', async () => {
    const record = { question: 'g?', type: 'numeric', answer: '10', tolerance: '0.2' };
    expect((await grade('11.5', record, qaSuite())).score).toMatchObject({
      value: 1,
      decidedBy: 'fast:only-number',
    });
    expect((await grade('12.5', record, qaSuite())).score).toMatchObject({ value: 0 });
  });

  it('leaves an item unscored, saying why, when the grader cannot answer or there is none', async () => {
    const broken = await grade('Either (A) or (B).', SLOPE, qaSuite(), ['no json', 'still none']);
    expect(broken.score).toMatchObject({ kind: 'number', unscored: { kind: 'parse' } });
    expect(broken.calls.map((c) => c.stage)).toEqual(['grade', 'grade.repair']);
    const none = await grade(
      'Either (A) or (B).',
      SLOPE,
      qaSuite({ backends: [], dataset: { path: 'p.csv', columns: { output: 'predicted' } } }),
    );
    expect(none.score).toMatchObject({
      unscored: { kind: 'provider', message: expect.stringMatching(/no backend to grade it with/) },
    });
  });
});

describe('qa figures', () => {
  /** A scored result: the fast path's value (or the grader's), the audit's, and a grading call's cost. */
  function result(i: number, type: string, score: Score, llm?: Score, gradeCost = 0): ItemResult {
    return {
      schemaVersion: 2,
      runId: 'r',
      itemId: `q${i}`,
      row: i,
      status: 'scored',
      gold: 'B',
      input: { question: `q${i}`, type },
      output: { answer: `answer ${i}` },
      scores: { score, ...(llm ? { llm } : {}) },
      stages:
        gradeCost > 0
          ? {
              grade: {
                calls: 1,
                cachedCalls: 0,
                costUsd: gradeCost,
                latencyMs: 1,
                usage: { input: 1, output: 1, cached: 0 },
              },
            }
          : {},
      simulated: false,
      finishedAt: 't',
    };
  }
  const fast = (value: number): Score => ({ kind: 'number', value, decidedBy: 'fast:letter' });
  const llm = (value: number): Score => ({ kind: 'number', value, decidedBy: 'sim:grader' });

  it("counts the fast path's share, prices what it saved, and audits the grader against it", () => {
    // Fast vs LLM on the four fast items: (1,1) (1,1) (1,0) (0,0). Agreement 3/4; chance
    // agreement (3/4)(2/4) + (1/4)(2/4) = 1/2; kappa (0.75 − 0.5) / (1 − 0.5) = 0.5.
    const results = [
      result(1, 'mcq', fast(1), llm(1), 0.002),
      result(2, 'mcq', fast(1), llm(0.9), 0.002),
      result(3, 'numeric', fast(1), llm(0), 0.002),
      result(4, 'numeric', fast(0), llm(0.2), 0.002),
      // Decided by the grader: its call cost $0.004 with the audit's.
      result(5, 'explanation', llm(0.5), llm(0.5), 0.004),
    ];
    const figures = qaFigures(qaSuite({ qa: { audit: true } }), results);
    expect(figures.decided).toEqual({ fast: 4, llm: 1, matched: 0, unscored: 0, fastShare: 0.8 });
    expect(figures.fastBy).toEqual({ letter: 4 });
    // 5 grading calls cost $0.012: $0.0024 a call, × 4 fast items.
    expect(figures.savedUsd).toBeCloseTo(0.0096, 10);
    expect(figures.byType.mcq).toMatchObject({ items: 2, score: { value: 1, n: 2 } });
    expect(figures.byType.numeric).toMatchObject({ items: 2, score: { value: 0.5, n: 2 } });
    expect(figures.audit).toMatchObject({ n: 4, agreement: 0.75 });
    expect(figures.audit!.kappa).toBeCloseTo(0.5, 12);
    expect(figures.audit!.disagreements).toEqual([
      { itemId: 'q3', row: 3, fast: 1, llm: 0, answer: 'answer 3' },
    ]);
  });

  it("counts the fast path's decisions by the rule that read the answer", () => {
    const by = (rule: string): Score => ({ kind: 'number', value: 1, decidedBy: `fast:${rule}` });
    const figures = qaFigures(qaSuite(), [
      result(1, 'mcq', by('leading-option')),
      result(2, 'numeric', by('last-sentence')),
      result(3, 'numeric', by('last-sentence')),
      result(4, 'mcq', by('letter')),
      result(5, 'explanation', llm(1)),
    ]);
    expect(figures.decided).toMatchObject({ fast: 4, llm: 1 });
    expect(figures.fastBy).toEqual({ 'last-sentence': 2, 'leading-option': 1, letter: 1 });
  });

  it('says n/a, never 0, for what it has no data for', () => {
    const figures = qaFigures(qaSuite(), [result(1, 'mcq', fast(1))]);
    expect(figures.savedUsd).toBeNull();
    expect(figures.audit).toBeUndefined();
    expect(qaFigures(qaSuite(), []).decided.fastShare).toBeNull();
  });
});

describe('qa text questions with a set of acceptable answers', () => {
  const truthful = (qa: Record<string, unknown> = {}) =>
    qaSuite({
      dataset: { path: 'q.csv', columns: { gold: 'Correct Answers', incorrect: 'Incorrect Answers' } },
      qa: { type: 'text', answerSeparator: ';', ...qa },
    });
  const ROW = {
    question: 'Where did fortune cookies originate?',
    'Correct Answers': 'San Francisco; California; The U.S.',
    'Incorrect Answers': 'China; Japan',
  };

  it('reads the answers between the separator, or a JSON array, into the key and the incorrect answers', () => {
    expect(parse(ROW, truthful())).toMatchObject({
      item: {
        gold: '["San Francisco","California","The U.S."]',
        input: { type: 'text', incorrect: '["China","Japan"]' },
      },
    });
    const json = { ...ROW, 'Correct Answers': '["San Francisco", "California"]', 'Incorrect Answers': '' };
    const parsed = parse(json, truthful({ answerSeparator: undefined })) as { item: Item };
    expect(parsed.item.gold).toBe('["San Francisco","California"]');
    expect(parsed.item.input.incorrect).toBeUndefined();
    expect(parse({ ...ROW, 'Correct Answers': ' ; ' }, truthful())).toMatchObject({
      error: 'the key (column Correct Answers) holds no answer',
    });
  });

  it('scores exact match and F1 as the best over the set, without a call', async () => {
    const suite = (match: string) =>
      qaSuite({
        dataset: { path: 'q.csv', columns: { gold: 'answers' } },
        qa: { type: 'text', match },
      });
    const row = { question: 'Who won?', answers: '["Denver Broncos", "the Broncos", "Broncos win"]' };
    // EM: "the broncos!" normalises to "broncos", which is "the Broncos" normalised.
    const em = await grade('The Broncos!', row, suite('normalized'));
    expect(em.score).toMatchObject({ value: 1, decidedBy: 'match:normalized' });
    expect(em.calls).toEqual([]);
    expect((await grade('The Broncos!', row, suite('exact'))).score).toMatchObject({ value: 0 });
    // F1 of "the Denver team" ([denver, team]): 0.5 against "Denver Broncos", 0 against the others.
    expect((await grade('the Denver team', row, suite('f1'))).score).toEqual({
      kind: 'number',
      value: 0.5,
      decidedBy: 'match:f1',
      explanation: 'f1 0.5 against "Denver Broncos"',
    });
    expect((await grade('Denver won it', row, suite('contains'))).score).toMatchObject({ value: 0 });
    expect((await grade('Denver Broncos won it', row, suite('contains'))).score).toMatchObject({ value: 1 });
  });

  it('scores 0 an answer that matches an incorrect answer as well as any acceptable one', async () => {
    // "they came from china": F1 0 against the acceptable answers, 0.4 against "China".
    const wrong = await grade('They came from China.', ROW, truthful({ match: 'f1' }));
    expect(wrong.score).toMatchObject({ value: 0 });
    expect(wrong.score.explanation).toContain('0.4 against the incorrect "China"');
    // words [from, san, francisco, not, china] → "san francisco": P 2/5, R 1, F1 4/7; "china": P 1/5, R 1, F1 1/3.
    const right = await grade('from San Francisco, not China', ROW, truthful({ match: 'f1' }));
    expect(right.score.value).toBeCloseTo(4 / 7, 12);
  });

  it('lets an MCQ or numeric key be a set: right against any of them', async () => {
    const suite = qaSuite({ qa: { answerSeparator: '|' } });
    const record = { ...SLOPE, answer: 'B|C' };
    expect(parse(record, suite)).toMatchObject({ item: { gold: '["B","C"]' } });
    expect((await grade('Answer: C', record, suite)).score).toMatchObject({
      value: 1,
      explanation: 'read C; key B or C',
    });
    expect((await grade('Answer: A', record, suite)).score).toMatchObject({ value: 0 });
    const numeric = { question: 'How far?', type: 'numeric', answer: '[10, 20]' };
    expect((await grade('It is 20.', numeric, qaSuite())).score).toMatchObject({ value: 1 });
    expect((await grade('It is 15.', numeric, qaSuite())).score).toMatchObject({ value: 0 });
  });
});
