/**
 * The family report tallies of qa, summarization and cleanup are fed their results one at a time,
 * once, and keep running figures: on small hand-checked cases, the figures they give.
 */
import { describe, expect, it } from 'vitest';
import { cleanupFamily } from '../../../shared/families/cleanup/task.js';
import { qaFamily } from '../../../shared/families/qa/task.js';
import { summarizationFamily } from '../../../shared/families/summarization/task.js';
import type { AnyTaskFamily } from '../../../shared/family/types.js';
import type { ItemResult, Score } from '../../../shared/model/model.js';
import { validateSuite } from '../../../shared/registry/suite.js';

const suiteOf = (task: string, backends: string[], extra: Record<string, unknown> = {}) =>
  validateSuite(
    { version: 1, name: `${task}-hooks`, task, dataset: { path: 'd.jsonl' }, backends, ...extra },
    'report hook test',
  );

/** The results as a stream that can be read only once, counting what was read. */
function once(results: readonly ItemResult[]) {
  const read = { count: 0, started: false };
  const stream = {
    async *[Symbol.asyncIterator]() {
      if (read.started) throw new Error('the stream was read twice');
      read.started = true;
      for (const result of results) {
        read.count += 1;
        yield result;
      }
    },
  };
  return { stream, read };
}

async function section(family: AnyTaskFamily, suite: unknown, results: readonly ItemResult[]) {
  const { stream, read } = once(results);
  const tally = family.reportTally!(suite as never)!;
  for await (const result of stream) tally.add(result);
  const out = await tally.section();
  expect(read.count).toBe(results.length);
  return out.metrics!;
}

const stage = (latencyMs: number, costUsd = 0) => ({
  calls: 1,
  cachedCalls: 0,
  costUsd,
  latencyMs,
  usage: { input: 1, output: 1, cached: 0 },
});

function base(i: number, input: Record<string, string>): ItemResult {
  return {
    schemaVersion: 2,
    runId: 'r',
    itemId: `i${i}`,
    row: i,
    status: 'scored',
    input,
    scores: {},
    stages: {},
    simulated: false,
    finishedAt: 't',
  };
}

const invalid = (i: number): ItemResult => ({
  ...base(i, {}),
  status: 'failed',
  failure: { kind: 'invalid_row', message: `row ${i}: bad` },
});

describe('qa report hook', () => {
  const fast = (value: number): Score => ({ kind: 'number', value, decidedBy: 'fast:letter' });
  const graded = (value: number): Score => ({ kind: 'number', value, decidedBy: 'sim:grader' });
  const qa = (i: number, type: string, score: Score | undefined, llm?: Score, gradeUsd = 0): ItemResult => ({
    ...base(i, { question: `q${i}`, type }),
    gold: 'B',
    output: { answer: `answer ${i}` },
    scores: { ...(score ? { score } : {}), ...(llm ? { llm } : {}) },
    stages: gradeUsd > 0 ? { grade: stage(1, gradeUsd) } : {},
  });

  it('by type, decided by whom, saved, and the audit, from one pass', async () => {
    const results = [
      qa(1, 'mcq', fast(1), graded(1), 0.002),
      qa(2, 'mcq', fast(0), graded(0.9), 0.002),
      qa(3, 'numeric', fast(1), graded(0.2), 0.002),
      qa(4, 'numeric', graded(0.25), graded(0.25), 0.004),
      // An answer the grader could not score: counted by type, not in the mean.
      qa(5, 'numeric', { kind: 'number', unscored: { kind: 'parse', message: 'no' } }),
      invalid(6),
    ];
    const { qa: figures } = (await section(
      qaFamily,
      suiteOf('qa', ['sim:a', 'sim:g'], { qa: { audit: true } }),
      results,
    )) as { qa: Record<string, unknown> };
    // mcq: 1 and 0 → mean 0.5 over 2; numeric: 1 and 0.25 → 0.625 over 2 of 3 items.
    expect(figures.byType).toMatchObject({
      mcq: { items: 2, score: { value: 0.5, n: 2 } },
      numeric: { items: 3, score: { value: 0.625, n: 2 } },
    });
    expect(figures.decided).toEqual({ fast: 3, llm: 1, matched: 0, unscored: 1, fastShare: 0.75 });
    expect(figures.fastBy).toEqual({ letter: 3 });
    // Four grading calls cost $0.010: $0.0025 a call, × 3 fast items.
    expect(figures.savedUsd).toBeCloseTo(0.0075, 12);
    // Fast vs grader on the three fast items: (1,1) agree, (0,1) and (1,0) disagree.
    expect(figures.audit).toMatchObject({
      n: 3,
      agreement: 1 / 3,
      disagreements: [
        { itemId: 'i2', row: 2, fast: 0, llm: 1, answer: 'answer 2' },
        { itemId: 'i3', row: 3, fast: 1, llm: 0, answer: 'answer 3' },
      ],
    });
  });
});

describe('summarization report hook', () => {
  const judge = (factualErrors: string[], hedgingDetected: boolean, keyOmissions: string[]): Score => ({
    kind: 'number',
    value: 0.5,
    details: { factualErrors, hedgingDetected, keyOmissions },
  });
  const nli = (value: number): Score => ({ kind: 'number', value });
  const summary = (i: number, scores: Record<string, Score>): ItemResult => ({
    ...base(i, { document: `d${i}` }),
    output: { summary: `s${i}` },
    scores,
  });

  it("the judge's findings and the NLI contradictions, as rates and means", async () => {
    const results = [
      summary(1, { judge: judge(['a', 'b'], true, ['k']), nli: nli(1) }),
      summary(2, { judge: judge([], false, []), nli: nli(0.5) }),
      summary(3, { judge: judge(['c'], false, ['k', 'l', 'm']) }),
      summary(4, { judge: { kind: 'number', unscored: { kind: 'parse', message: 'no' } } }),
      invalid(5),
    ];
    const { summarization } = await section(
      summarizationFamily,
      suiteOf('summarization', ['openai:gpt-4o-mini', 'anthropic:claude-opus-4-5']),
      results,
    );
    // Judged 3: errors in 2 (3 errors in all), hedging in 1, 4 omissions; NLI: 1 of 2 below 1.
    expect(summarization).toEqual({
      judged: 3,
      factualErrorRate: 2 / 3,
      meanFactualErrors: 1,
      hedgingRate: 1 / 3,
      meanKeyOmissions: 4 / 3,
      contradictionRate: 0.5,
    });
  });

  it('null, never 0, with nothing judged', async () => {
    const { summarization } = await section(
      summarizationFamily,
      suiteOf('summarization', ['openai:gpt-4o-mini', 'anthropic:claude-opus-4-5']),
      [invalid(1)],
    );
    expect(summarization).toEqual({
      judged: 0,
      factualErrorRate: null,
      meanFactualErrors: null,
      hedgingRate: null,
      meanKeyOmissions: null,
      contradictionRate: null,
    });
  });
});

describe('cleanup report hook', () => {
  const cleaned = (
    i: number,
    text: string,
    hybrid: number,
    ms: [number, number],
    input: Record<string, string>,
  ): ItemResult => ({
    ...base(i, { tags: '[]', ...input }),
    gold: 'Go right.',
    output: { cleaned: text, decisions: [], draftValid: true, problems: [] },
    scores: { hybrid: { kind: 'number', value: hybrid } },
    stages: { draft: stage(ms[0]), audit: stage(ms[1]) },
  });

  it('tagged rates, latency per pass, edits, heuristics and the combined ranking', async () => {
    const fixture = JSON.stringify({ words: [{ w: 'go', startMs: 0, endMs: 1 }], required: ['go right'] });
    const results: ItemResult[] = [
      // A literal "I mean" the cleanup removed: a false positive.
      cleaned(1, 'Go right.', 1, [100, 200], {
        transcript: 'um go right',
        tags: '["i_mean:literal"]',
        heuristics: fixture,
      }),
      // A corrective "I mean" resolved, and the spelled name found.
      cleaned(2, 'Go left Smith.', 0.4, [300, 400], {
        transcript: 'go left smith',
        tags: '["i_mean:correction","spelling"]',
        spelling_expected: 'Smith',
      }),
      // No output: outside every figure but the hybrid's unscored.
      {
        ...base(3, { transcript: 'x', tags: '["spelling"]', spelling_expected: 'x' }),
        status: 'failed',
        failure: { kind: 'parse', message: 'no' },
        scores: { hybrid: { kind: 'number', unscored: { kind: 'parse', message: 'no' } } },
        stages: { draft: stage(5000) },
      },
      invalid(4),
    ];
    const { cleanup } = (await section(cleanupFamily, suiteOf('cleanup', ['vllm:mistral']), results)) as {
      cleanup: Record<string, Record<string, unknown>>;
    };
    expect(cleanup.iMean).toEqual({ literalFalsePositiveRate: 1, correctionFalseNegativeRate: 0 });
    expect(cleanup.spellingAccuracy).toBe(1);
    // Two items: p50 halfway, p95 at 0.95 of the way (the failed item's 5 s is not counted).
    expect(cleanup.latencyMs).toEqual({
      draft: { p50: 200, p95: 290, mean: 200, max: 300 },
      audit: { p50: 300, p95: 390, mean: 300, max: 400 },
      total: { p50: 500, p95: 680, mean: 500, max: 700 },
    });
    expect(cleanup.edits).toEqual({
      fillerRemoved: 1,
      selfRepairResolved: 0,
      contentChanged: 0,
      contentChangeRate: 0,
    });
    // The fixture item is cleaned exactly; hybrid mean 0.7: 0.7 × 0.7 + 0.3 × 1.
    expect(cleanup.heuristic).toMatchObject({ items: 1, exactMatchRate: 1, combined: 1 });
    expect(cleanup.heuristicWeight).toBe(0.3);
    expect(cleanup.combinedRanking).toBeCloseTo(0.79, 12);
  });
});
