import { describe, expect, it } from 'vitest';
import {
  goldPreference,
  itemCounts,
  type PairwiseFigures,
  pairwiseFigures,
  pairwiseReport,
  pairwiseReportText,
  pairwiseVerdict,
  swapBack,
  swappedInput,
} from '../../../shared/families/judge/pairwise.js';
import { type JudgeHint, SIM_POSITION_BIAS, simulateJudge } from '../../../shared/families/judge/simulate.js';
import type { JudgeSuite } from '../../../shared/families/judge/suite.js';
import { judgeFamily } from '../../../shared/families/judge/task.js';
import type { TaskContext } from '../../../shared/family/types.js';
import { seededRandom } from '../../../shared/lib/providers/sim.js';
import type { Item, ItemResult } from '../../../shared/model/model.js';
import type { Completion, CompletionRequest, LlmProvider } from '../../../shared/model/provider.js';
import type { Report } from '../../../shared/model/report.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { NO_ENCODERS } from '../../helpers.js';

const pairwiseSuite = (judge: Record<string, unknown> = {}) =>
  validateSuite(
    {
      version: 1,
      name: 'p',
      task: 'judge',
      dataset: { path: 'x.csv', columns: { gold: 'preference' } },
      judge: { prompt: 'prompts/preference.md', pairwise: ['response_a', 'response_b'], ...judge },
      backends: ['sim:x'],
    },
    'test suite',
  ) as unknown as JudgeSuite;

const PROMPT = {
  'preference.md': {
    hash: 'h',
    text: '<question>\n{question}\n</question>\n<first>\n{response_a}\n</first>\n<second>\n{response_b}\n</second>',
  },
};

const ROW = { id: 'p1', question: 'How?', response_a: 'Like this.', response_b: 'No idea.', preference: 'A' };

describe('a pairwise judge suite', () => {
  it('takes two answer columns and a rule for inconsistent items', () => {
    expect(pairwiseSuite({ inconsistent: 'fail' }).judge).toMatchObject({
      pairwise: ['response_a', 'response_b'],
      inconsistent: 'fail',
    });
  });

  it('refuses labels or a range beside it, one column twice, and the rule without pairwise', () => {
    expect(() => pairwiseSuite({ labels: ['A', 'B'] })).toThrow(/a pairwise judge answers A, B or tie/);
    expect(() => pairwiseSuite({ range: [1, 5] })).toThrow(/a pairwise judge answers A, B or tie/);
    expect(() => pairwiseSuite({ pairwise: ['r', 'r'] })).toThrow(/two different columns/);
    expect(() => pairwiseSuite({ inconsistent: 'maybe' })).toThrow();
    expect(() =>
      validateSuite(
        {
          version: 1,
          name: 'p',
          task: 'judge',
          dataset: { path: 'x.csv' },
          judge: { prompt: 'p.md', labels: ['a', 'b'], inconsistent: 'tie' },
          backends: ['sim:x'],
        },
        'test suite',
      ),
    ).toThrow(/`inconsistent` needs `pairwise`/);
  });
});

describe('pairwise gold and rows', () => {
  it('reads the preference spellings it maps, and nothing else', () => {
    const columns = ['response_a', 'response_b'] as const;
    for (const a of ['A', 'a', ' model_a ', 'Response_A', 'answer_a'])
      expect(goldPreference(a, columns)).toBe('A');
    for (const b of ['B', 'b', 'model_b', 'response_b', 'answer_b'])
      expect(goldPreference(b, columns)).toBe('B');
    for (const tie of ['tie', 'TIE', 'tie (bothbad)', 'draw'])
      expect(goldPreference(tie, columns)).toBe('tie');
    expect(goldPreference('left', ['left', 'right'])).toBe('A');
    expect(goldPreference('right', ['left', 'right'])).toBe('B');
    for (const other of ['1', '2', 'both', 'model_c', ''])
      expect(goldPreference(other, columns)).toBeUndefined();
  });

  it('makes a row with another gold invalid, naming the column', () => {
    const suite = pairwiseSuite();
    expect(judgeFamily.parseRow({ ...ROW, preference: 'model_a' }, 1, suite, PROMPT)).toEqual({
      item: {
        id: 'p1',
        row: 1,
        input: { question: 'How?', response_a: 'Like this.', response_b: 'No idea.' },
        gold: 'A',
      },
    });
    expect(judgeFamily.parseRow({ ...ROW, preference: 'first' }, 2, suite, PROMPT)).toMatchObject({
      id: 'p1',
      error: expect.stringMatching(/^gold "first" is not a preference \(A, B or tie.*\(column preference\)$/),
    });
  });

  it('makes every row invalid when the prompt does not show both answers', () => {
    const prompt = { 'preference.md': { hash: 'h', text: '<first>\n{response_a}\n</first>' } };
    expect(judgeFamily.parseRow(ROW, 1, pairwiseSuite(), prompt)).toMatchObject({
      error: 'the prompt preference.md does not read {response_b}, an answer the pairwise judge compares',
    });
  });

  it('says the verdicts were asked in both orders only when they were', () => {
    expect(judgeFamily.config(pairwiseSuite()).answer).toBe(
      'pairwise response_a vs response_b, both orders, inconsistent → tie',
    );
    const given = validateSuite(
      {
        version: 1,
        name: 'p',
        task: 'judge',
        dataset: { path: 'x.csv', columns: { gold: 'preference', output: 'verdict' } },
        judge: { prompt: 'prompts/preference.md', pairwise: ['response_a', 'response_b'] },
        backends: ['sim:x'],
      },
      'test suite',
    ) as unknown as JudgeSuite;
    expect(judgeFamily.config(given).answer).toBe('pairwise response_a vs response_b, the verdicts given');
  });

  it('reads placeholders of any case, each the column of that spelling', () => {
    const suite = pairwiseSuite({ pairwise: ['response_A', 'response_B'] });
    const prompt = {
      'preference.md': {
        hash: 'h',
        text: '<question>\n{Question}\n</question>\n<first>\n{response_A}\n</first>\n<second>\n{response_B}\n</second>',
      },
    };
    const row = {
      id: 'p1',
      Question: 'How?',
      response_A: 'Like this.',
      response_B: 'No idea.',
      preference: 'A',
    };
    expect(judgeFamily.parseRow(row, 1, suite, prompt)).toEqual({
      item: {
        id: 'p1',
        row: 1,
        input: { Question: 'How?', response_A: 'Like this.', response_B: 'No idea.' },
        gold: 'A',
      },
    });
  });
});

describe('the swap', () => {
  it('trades the two answer columns and maps an answer in the swapped order back', () => {
    expect(swappedInput({ q: 'Q', a: 'first', b: 'second' }, ['a', 'b'])).toEqual({
      q: 'Q',
      a: 'second',
      b: 'first',
    });
    expect([swapBack('A'), swapBack('B'), swapBack('tie')]).toEqual(['B', 'A', 'tie']);
  });

  it('keeps a verdict both orders agree on, and resolves a disagreement by the rule', () => {
    // B in the swapped order is the dataset's A: the orders agree on A.
    expect(pairwiseVerdict({ ab: 'A', ba: 'B' })).toEqual({ consistent: true, verdict: 'A' });
    expect(pairwiseVerdict({ ab: 'tie', ba: 'tie' }, 'fail')).toEqual({ consistent: true, verdict: 'tie' });
    // A in both orders: the first-shown answer won each time, a disagreement.
    expect(pairwiseVerdict({ ab: 'A', ba: 'A' })).toEqual({ consistent: false, verdict: 'tie' });
    expect(pairwiseVerdict({ ab: 'A', ba: 'A' }, 'tie')).toEqual({ consistent: false, verdict: 'tie' });
    expect(pairwiseVerdict({ ab: 'B', ba: 'tie' }, 'first')).toEqual({ consistent: false, verdict: 'B' });
    expect(pairwiseVerdict({ ab: 'B', ba: 'B' }, 'fail')).toEqual({ consistent: false, verdict: undefined });
  });
});

/** A context whose model answers each prompt by `answer`; every call is recorded. */
function context(suite: JudgeSuite, answer: (prompt: string) => string) {
  const calls: { stage: string; request: CompletionRequest }[] = [];
  const ctx: TaskContext<JudgeSuite> = {
    suite,
    prompts: {},
    paths: judgeFamily.promptPaths(suite as never),
    backends: [{ id: 'openai:gpt-4o-mini', simulated: false } as unknown as LlmProvider],
    ...NO_ENCODERS,
    render: (role, vars) => (role === 'judge' ? `first=${vars.response_a} second=${vars.response_b}` : role),
    call: async (stage, _p, request) => {
      calls.push({ stage, request });
      return { text: answer(request.prompt), finishReason: 'stop' } as Completion;
    },
  };
  return { ctx, calls };
}

const ITEM: Item = {
  id: 'p1',
  row: 1,
  input: { question: 'How?', response_a: 'good', response_b: 'bad' },
  gold: 'A',
};

/** A judge that prefers the answer `good` wherever it is shown. */
const fair = (prompt: string) =>
  JSON.stringify({ label: prompt.startsWith('first=good') ? 'A' : 'B', reason: 'good wins' });
/** A judge that always picks the answer shown first. */
const firstShown = () => '{"label": "a", "reason": "the first one"}';

describe('a pairwise item', () => {
  it('is asked twice, once per order, each with its own prompt; a consistent verdict stands', async () => {
    const { ctx, calls } = context(pairwiseSuite(), fair);
    const solved = await judgeFamily.solve(ITEM, ctx as never);
    expect(calls.map((c) => c.request.prompt.split('\n')[0])).toEqual([
      'first=good second=bad',
      'first=bad second=good',
    ]);
    expect(calls.map((c) => c.stage)).toEqual(['judge', 'judge']);
    expect(calls[0]!.request.simulation).toMatchObject({ pairwise: { order: 'ab' }, gold: 'A' });
    // In the swapped order the gold as shown is B.
    expect(calls[1]!.request.simulation).toMatchObject({ pairwise: { order: 'ba' }, gold: 'B' });
    expect(solved).toEqual({
      ok: true,
      output: {
        label: 'A',
        reason: 'good wins',
        orders: { ab: 'A', ba: 'B' },
        decidedBy: 'openai:gpt-4o-mini',
      },
      details: { pairwise: { ab: 'A', ba: 'B' } },
    });
    expect(judgeFamily.outputText!((solved as { output: unknown }).output)).toBe(
      'order A,B: A; order B,A: B (= A)',
    );
  });

  it('is a tie, the first order’s verdict or a failure when the orders disagree, as the suite says', async () => {
    const run = async (inconsistent?: string) =>
      judgeFamily.solve(
        ITEM,
        context(pairwiseSuite(inconsistent ? { inconsistent } : {}), firstShown).ctx as never,
      );
    expect(await run()).toMatchObject({ ok: true, output: { label: 'tie', orders: { ab: 'A', ba: 'A' } } });
    expect(await run('first')).toMatchObject({ ok: true, output: { label: 'A' } });
    expect(await run('fail')).toMatchObject({
      ok: false,
      failure: {
        kind: 'inconsistent',
        message: 'the two orders disagree: order A,B: A; order B,A: A (= B)',
      },
      details: { pairwise: { ab: 'A', ba: 'A' } },
    });
  });

  it('fails with the kind of the order that could not be read, after its repair pass', async () => {
    const { ctx, calls } = context(pairwiseSuite(), (prompt) =>
      prompt.startsWith('first=bad') || prompt === 'repair' ? '{"label": "C"}' : fair(prompt),
    );
    const solved = await judgeFamily.solve(ITEM, ctx as never);
    expect(solved).toMatchObject({
      ok: false,
      failure: { kind: 'parse', message: expect.stringMatching(/^order B,A: judge: unparseable answer/) },
    });
    expect(calls.map((c) => c.stage).sort()).toEqual(['judge', 'judge', 'judge.repair']);
  });

  it('lets the other order finish before a call that throws ends the item', async () => {
    const { ctx } = context(pairwiseSuite(), fair);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let finished = false;
    ctx.call = async (_stage, _p, request) => {
      if (request.prompt.startsWith('first=bad')) throw new Error('provider down');
      await gate;
      finished = true;
      return { text: fair(request.prompt), finishReason: 'stop' } as Completion;
    };
    let ended = false;
    const solving = judgeFamily.solve(ITEM, ctx as never).catch((error: Error) => {
      ended = true;
      return error;
    });
    await new Promise((resolve) => setImmediate(resolve));
    // The swapped order has thrown; the item waits for the dataset order's call.
    expect(ended).toBe(false);
    open();
    expect(((await solving) as Error).message).toBe('provider down');
    expect(finished).toBe(true);
  });

  it('scores the verdict as a label against the gold, with A, B and tie in order', () => {
    const scorers = judgeFamily.scorers(pairwiseSuite() as never);
    expect(Object.keys(scorers)).toEqual(['label']);
    expect(scorers.label!.metrics).toEqual({ labelOrder: ['A', 'B', 'tie'] });
    expect(judgeFamily.primaryScorer(pairwiseSuite() as never)).toBe('label');
  });

  it('reads a given verdict from the dataset in the gold spellings', () => {
    const suite = pairwiseSuite() as never;
    expect(judgeFamily.readOutput({ output: 'model_b' }, ITEM, suite)).toMatchObject({
      ok: true,
      output: { label: 'B' },
    });
    expect(judgeFamily.readOutput({ output: 'C' }, ITEM, suite)).toMatchObject({
      ok: false,
      failure: { kind: 'parse' },
    });
  });
});

/** A pairwise suite whose dataset gives the verdicts in both orders, a column each. */
const givenBothSuite = (
  judge: Record<string, unknown> = {},
  output: unknown = ['verdict_ab', 'verdict_ba'],
) =>
  validateSuite(
    {
      version: 1,
      name: 'p',
      task: 'judge',
      dataset: { path: 'x.csv', columns: { gold: 'preference', output } },
      judge: { prompt: 'prompts/preference.md', pairwise: ['response_a', 'response_b'], ...judge },
      backends: [],
    },
    'test suite',
  ) as unknown as JudgeSuite;

describe('verdicts the dataset gives in both orders', () => {
  it('are two output columns of a pairwise judge, and nothing else', () => {
    expect(givenBothSuite().dataset.columns.output).toEqual(['verdict_ab', 'verdict_ba']);
    expect(() => givenBothSuite({}, ['v1', 'v2', 'v3'])).toThrow(/two different verdict columns/);
    expect(() => givenBothSuite({}, ['v1', 'v1'])).toThrow(/two different verdict columns/);
    const labelsJudge = {
      version: 1,
      name: 'j',
      task: 'judge',
      dataset: { path: 'x.csv', columns: { output: ['v1', 'v2'] } },
      judge: { prompt: 'p.md', labels: ['a', 'b'] },
    };
    expect(() => validateSuite(labelsJudge, 'test suite')).toThrow(/it needs `judge.pairwise`/);
    // A family that reads one output refuses a list when the suite is read.
    const qa = {
      version: 1,
      name: 'q',
      task: 'qa',
      dataset: { path: 'x.csv', columns: { output: ['a1', 'a2'] } },
      backends: ['sim:grader'],
    };
    expect(() => validateSuite(qa, 'test suite')).toThrow(/dataset\.columns\.output/);
  });

  it('are said to be both orders, given, with the rule for inconsistent items', () => {
    expect(judgeFamily.config(givenBothSuite({ inconsistent: 'first' })).answer).toBe(
      'pairwise response_a vs response_b, both orders given (verdict_ab, verdict_ba), inconsistent → first',
    );
  });

  it('make the verdict as asking both orders does, the second read as the swapped order shows it', () => {
    const read = (outputs: string[], judge: Record<string, unknown> = {}) =>
      judgeFamily.readOutput(
        { output: outputs[0], outputs, explanation: 'why' },
        ITEM,
        givenBothSuite(judge) as never,
      );
    // A in the dataset order, B as the swapped order shows it: the dataset's A both times.
    expect(read(['A', 'b'])).toEqual({
      ok: true,
      output: {
        label: 'A',
        reason: 'why',
        orders: { ab: 'A', ba: 'B' },
        decidedBy: 'given (verdict_ab, verdict_ba)',
      },
      details: { pairwise: { ab: 'A', ba: 'B' } },
    });
    // The answer shown first wins both times: inconsistent, resolved by the rule.
    expect(read(['model_a', 'A'])).toMatchObject({
      ok: true,
      output: { label: 'tie', orders: { ab: 'A', ba: 'A' } },
    });
    expect(read(['A', 'A'], { inconsistent: 'first' })).toMatchObject({ ok: true, output: { label: 'A' } });
    expect(read(['A', 'A'], { inconsistent: 'fail' })).toEqual({
      ok: false,
      failure: { kind: 'inconsistent', message: 'the two orders disagree: order A,B: A; order B,A: A (= B)' },
      details: { pairwise: { ab: 'A', ba: 'A' } },
    });
  });

  it('fail an item with a blank or unreadable verdict in either order, naming the order and column', () => {
    const read = (outputs: string[]) => judgeFamily.readOutput({ outputs }, ITEM, givenBothSuite() as never);
    expect(read(['A', ''])).toEqual({
      ok: false,
      failure: { kind: 'no_output', message: 'no verdict given for order B,A (column verdict_ba)' },
    });
    expect(read(['first', 'B'])).toMatchObject({
      ok: false,
      failure: {
        kind: 'parse',
        message: expect.stringMatching(/^given \(order A,B, column verdict_ab\) "first" is not a preference/),
      },
    });
  });

  it('give the position figures, said to come from the dataset', async () => {
    const suite = givenBothSuite();
    const outputs = [
      ['A', 'B'],
      ['A', 'A'],
      ['tie', 'tie'],
    ];
    const results = outputs.map(([ab, ba], i) => {
      const solved = judgeFamily.readOutput({ outputs: [ab!, ba!] }, ITEM, suite as never) as {
        details: Record<string, unknown>;
      };
      return { ...result(i + 1, ab!, ba!, 10, 10), details: solved.details };
    });
    const { metrics } = await pairwiseReport(suite, results);
    expect(metrics!.pairwise).toMatchObject({
      orders: 'given',
      items: 3,
      consistentItems: 2,
      // Items 1 and 3 agree after the swap.
      positionConsistency: { value: 2 / 3, n: 3 },
      // Non-tie answers: A, B, A, A — three of four won by the answer shown first.
      firstPositionWinRate: { value: 0.75, n: 4 },
    });
    const text = pairwiseReportText({ metrics } as unknown as Report);
    expect(text[1]).toBe(
      "Pairwise: each item's verdicts given by the dataset in both orders (95% bootstrap CI over items)",
    );
    const asked = await pairwiseReport(pairwiseSuite(), results);
    expect(pairwiseReportText({ metrics: asked.metrics } as unknown as Report)[1]).toBe(
      'Pairwise: each item asked in both orders (95% bootstrap CI over items)',
    );
  });
});

/** A result with the two answers as shown and answers of the given lengths. */
function result(row: number, ab: string, ba: string, lengthA: number, lengthB: number): ItemResult {
  return {
    schemaVersion: 2,
    runId: 'r',
    itemId: `p${row}`,
    row,
    status: 'scored',
    input: { question: 'q', response_a: 'x'.repeat(lengthA), response_b: 'y'.repeat(lengthB) },
    scores: {},
    details: { pairwise: { ab, ba } },
    stages: {},
    simulated: false,
    finishedAt: '2026-01-01T00:00:00.000Z',
  };
}

describe('pairwise figures', () => {
  it('match a case worked by hand', async () => {
    const results = [
      // Agree on A (B as shown in the swapped order); A is longer and wins twice.
      result(1, 'A', 'B', 20, 10),
      // The first-shown answer wins both times: inconsistent. B is longer: it wins in the swapped order.
      result(2, 'A', 'A', 10, 20),
      // Tie both times: consistent, no decided answer.
      result(3, 'tie', 'tie', 5, 9),
      // B, then a tie: inconsistent; equal lengths say nothing about length.
      result(4, 'B', 'tie', 7, 7),
      // A failed item without both answers counts nowhere.
      { ...result(5, 'A', 'B', 1, 2), status: 'failed' as const, details: undefined },
    ];
    const { metrics } = await pairwiseReport(pairwiseSuite(), results);
    const p = metrics!.pairwise as PairwiseFigures;
    expect(p).toMatchObject({
      inconsistent: 'tie',
      items: 4,
      consistentItems: 2,
      inconsistentItems: 2,
      // Items 1 and 3 of 4 agree.
      positionConsistency: { value: 0.5, n: 4 },
      // Non-tie answers: 1:A,B 2:A,A 4:B — 5, of which 3 are A (shown first).
      firstPositionWinRate: { value: 0.6, n: 5 },
      // Non-tie answers between answers of different length: items 1 and 2, four answers, three won by the longer.
      longerAnswerWinRate: { value: 0.75, n: 4 },
      answers: { firstShown: 3, secondShown: 2, tie: 3 },
    });
    for (const m of [p.positionConsistency, p.firstPositionWinRate, p.longerAnswerWinRate]) {
      expect(m.ci![0]).toBeLessThanOrEqual(m.value!);
      expect(m.ci![1]).toBeGreaterThanOrEqual(m.value!);
    }
    const text = pairwiseReportText({ metrics } as unknown as Report).join('\n');
    expect(text).toContain('position consistency     0.500 [');
    expect(text).toContain('(2 of 4 items the same after the swap; 2 inconsistent, counted as tie)');
    expect(text).toContain('first-position win rate  0.600 [');
  });

  it('count an item failed as inconsistent, from the two answers it keeps', async () => {
    const failed = { ...result(1, 'A', 'A', 3, 4), status: 'failed' as const };
    const { metrics } = await pairwiseReport(pairwiseSuite({ inconsistent: 'fail' }), [failed]);
    expect(metrics!.pairwise).toMatchObject({
      inconsistent: 'fail',
      items: 1,
      inconsistentItems: 1,
      positionConsistency: { value: 0, n: 1 },
      firstPositionWinRate: { value: 1, n: 2 },
    });
    expect(pairwiseReportText({ metrics } as unknown as Report).join('\n')).toContain(
      '1 inconsistent, failed)',
    );
  });

  it('are null, not 0, without data', () => {
    const p = pairwiseFigures('tie', [], { firstShown: 0, secondShown: 0, tie: 0 });
    expect(p.positionConsistency).toEqual({ value: null, n: 0 });
    expect(p.firstPositionWinRate).toEqual({ value: null, n: 0 });
    expect(pairwiseReportText({ metrics: { pairwise: p } } as unknown as Report)).toEqual([
      '',
      'Pairwise: no item was answered in both orders (one verdict given by the dataset, or every item failed): no position figures',
    ]);
    // Ties only: consistent, but no answer won by either position.
    const ties = pairwiseFigures('tie', [itemCounts({ ab: 'tie', ba: 'tie' }, 1, 2)], {
      firstShown: 0,
      secondShown: 0,
      tie: 2,
    });
    expect(ties.positionConsistency).toMatchObject({ value: 1, n: 1 });
    expect(ties.firstPositionWinRate).toEqual({ value: null, n: 0 });
    expect(ties.longerAnswerWinRate).toEqual({ value: null, n: 0 });
  });

  it('are not computed for a judge that is not pairwise', async () => {
    const labels = validateSuite(
      {
        version: 1,
        name: 'j',
        task: 'judge',
        dataset: { path: 'x.csv' },
        judge: { prompt: 'p.md', labels: ['a', 'b'] },
        backends: ['sim:x'],
      },
      'test suite',
    ) as never;
    expect(judgeFamily.reportTally!(labels)).toBeUndefined();
    expect(pairwiseReportText({ metrics: {} } as unknown as Report)).toEqual([]);
  });
});

describe('the simulated pairwise judge', () => {
  it('leans to the answer shown first, seeded, so its first-position win rate is above 0.5', () => {
    const hint = (i: number, order: 'ab' | 'ba'): JudgeHint => {
      const gold = i % 2 === 0 ? 'A' : 'B';
      return {
        family: 'judge',
        item: `p${i}`,
        labels: ['A', 'B', 'tie'],
        gold: order === 'ab' ? gold : swapBack(gold),
        fields: {},
        pairwise: { order, positionBias: SIM_POSITION_BIAS },
      };
    };
    const answers: string[] = [];
    for (let i = 0; i < 400; i += 1) {
      for (const order of ['ab', 'ba'] as const) {
        const h = hint(i, order);
        const text = simulateJudge(h, seededRandom(JSON.stringify(h)), 0.2);
        answers.push((JSON.parse(text) as { label: string }).label);
      }
    }
    const first = answers.filter((a) => a === 'A').length;
    const decided = answers.filter((a) => a !== 'tie').length;
    // Gold is balanced between the positions: the bias alone moves the rate above one half.
    expect(first / decided).toBeGreaterThan(0.6);
    expect(first / decided).toBeLessThan(0.75);
    // The same hint, the same answer.
    const h = hint(7, 'ba');
    expect(simulateJudge(h, seededRandom('k'), 0.2)).toBe(simulateJudge(h, seededRandom('k'), 0.2));
    // Without a position bias it does not lean.
    const unbiased = (i: number, order: 'ab' | 'ba') => ({
      ...hint(i, order),
      pairwise: { order, positionBias: 0 },
    });
    const plain: string[] = [];
    for (let i = 0; i < 400; i += 1) {
      for (const order of ['ab', 'ba'] as const) {
        const u = unbiased(i, order);
        plain.push(
          (JSON.parse(simulateJudge(u, seededRandom(JSON.stringify(u)), 0.2)) as { label: string }).label,
        );
      }
    }
    const plainFirst = plain.filter((a) => a === 'A').length / plain.filter((a) => a !== 'tie').length;
    expect(Math.abs(plainFirst - 0.5)).toBeLessThan(0.05);
  });
});
