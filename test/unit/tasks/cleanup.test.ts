/**
 * The cleanup family: rows, the two passes with their strict contracts (a malformed pass 1, an
 * empty pass 2, a missing cleaned_text), and the heuristics figures, hand-computed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { heuristicFigures } from '../../../shared/families/cleanup/metrics.js';
import type { CleanupOutput } from '../../../shared/families/cleanup/output.js';
import { cleanupFigures } from '../../../shared/families/cleanup/report.js';
import type { CleanupSuite } from '../../../shared/families/cleanup/suite.js';
import { cleanupFamily, strictJson } from '../../../shared/families/cleanup/task.js';
import type { TaskContext } from '../../../shared/family/types.js';
import type { Item, Score } from '../../../shared/model/model.js';
import type { Completion, CompletionRequest, LlmProvider } from '../../../shared/model/provider.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { EXAMPLE_DATA, NO_ENCODERS } from '../../helpers.js';

const suite = validateSuite(
  { version: 1, name: 'c', task: 'cleanup', dataset: { path: 'd.jsonl' }, backends: ['vllm:mistral'] },
  'cleanup test',
) as unknown as CleanupSuite;

const parse = (record: Record<string, string>) => cleanupFamily.parseRow(record, 1, suite as never, {});

describe('the cleanup default gate', () => {
  it('compares latency only where the run timed the outputs, never on outputs the dataset gives', () => {
    expect(cleanupFamily.defaultGate!(suite as never).conditions).toContainEqual(
      expect.stringMatching(/^p50 latency where words\(transcript\) >= \d+ < baseline$/),
    );
    const given = validateSuite(
      {
        version: 1,
        name: 'c',
        task: 'cleanup',
        dataset: { path: 'd.jsonl', columns: { output: 'cleaned' } },
        backends: ['vllm:mistral'],
      },
      'cleanup test',
    );
    expect(cleanupFamily.defaultGate!(given as never).conditions).toEqual([
      'parse_valid.passRate >= 0.99',
      'hybrid.mean >= baseline - 0.08',
    ]);
  });
});

describe('cleanup rows', () => {
  it('reads every example transcript', () => {
    const lines = readFileSync(join(EXAMPLE_DATA, 'dictation.jsonl'), 'utf8').trim().split('\n');
    const parsed = lines.map((line) => {
      const r = JSON.parse(line) as Record<string, unknown>;
      return parse(
        Object.fromEntries(
          Object.entries(r).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
        ),
      );
    });
    expect(parsed.filter((p) => 'error' in p)).toEqual([]);
    expect(parsed).toHaveLength(25);
  });

  it.each([
    [{ transcript: 'um hi' }, /missing column expected/],
    [{ transcript: 'x', expected: 'x', tags: '["spelling"]' }, /tagged spelling without spelling_expected/],
    [{ transcript: 'x', expected: 'x', tags: '[1, 2]' }, /tags: .* is not a JSON list of strings/],
    [{ transcript: 'x', expected: 'x', heuristics: '{"words": []}' }, /heuristics: words/],
    [{ transcript: 'x', expected: 'x', heuristics: 'nope' }, /heuristics is not JSON/],
  ])('makes a bad row invalid with the reason: %j', (record, reason) => {
    const parsed = parse(record as Record<string, string>);
    expect('error' in parsed && parsed.error).toMatch(reason);
  });
});

describe('strictJson', () => {
  it('takes one JSON object, a code fence around it allowed, and nothing from prose', () => {
    expect(strictJson('{"cleaned_text": "a"}')).toEqual({ cleaned_text: 'a' });
    expect(strictJson('```json\n{"cleaned_text": "a"}\n```')).toEqual({ cleaned_text: 'a' });
    expect(strictJson('Sure! {"cleaned_text": "a"}')).toBeUndefined();
    expect(strictJson('["a"]')).toBeUndefined();
  });
});

/** Runs both passes on one item with scripted answers; returns the output, the scores and the requests. */
async function cleanup(answers: string[], record: Record<string, string>) {
  const { item } = parse(record) as { item: Item };
  const requests: { stage: string; request: CompletionRequest }[] = [];
  const ctx: TaskContext<CleanupSuite> = {
    suite,
    prompts: {},
    paths: cleanupFamily.promptPaths(suite as never),
    backends: [{ id: 'vllm:mistral', simulated: false } as unknown as LlmProvider],
    ...NO_ENCODERS,
    render: (role, vars) => `${role} ${JSON.stringify(vars)}`,
    call: async (stage, _p, request) => {
      requests.push({ stage, request });
      return { text: answers.shift() ?? '', finishReason: 'stop' } as Completion;
    },
  };
  const solved = await cleanupFamily.solve(item, ctx as never);
  if (!solved.ok) throw new Error('cleanup items are always solved');
  const output = solved.output as CleanupOutput;
  const scores: Record<string, Score> = {};
  for (const [name, scorer] of Object.entries(cleanupFamily.scorers(suite as never))) {
    scores[name] = (await scorer.score(output, item, ctx as never)) as Score;
  }
  const value = (name: string) => (scores[name] as { value: unknown }).value;
  return { output, scores, value, requests };
}

const ROW = { transcript: 'um go left I mean right', expected: 'Go right.' };
const DRAFT = JSON.stringify({
  candidate_text: 'Go right.',
  decision_spans: [
    { action: 'remove_filler', source: 'um', result: '' },
    { action: 'resolve_repair', source: 'left I mean', result: '' },
  ],
});

describe('the two passes', () => {
  it('a clean run: the draft, then the audit of its candidate; every figure 1', async () => {
    const run = await cleanup([DRAFT, '{"cleaned_text": "Go right."}'], ROW);
    expect(run.requests.map((r) => r.stage)).toEqual(['draft', 'audit']);
    expect(run.requests[0]!.request.system).toBe('draft.system {}');
    expect(run.requests[1]!.request.prompt).toContain('"candidate":"Go right."');
    expect(run.output).toMatchObject({ cleaned: 'Go right.', draftValid: true, problems: [] });
    expect(run.output.decisions).toHaveLength(2);
    expect(run.value('hybrid')).toBeCloseTo(1, 12);
    expect([run.value('parse_valid'), run.value('exact_match'), run.value('contract_compliance')]).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('a malformed pass 1: the audit works from the transcript; contract broken, hybrid 0.9', async () => {
    const run = await cleanup(['Here you go: Go right.', '{"cleaned_text": "Go right."}'], ROW);
    expect(run.requests[1]!.request.prompt).toContain('"candidate":"um go left I mean right"');
    expect(run.output).toMatchObject({ draftValid: false, problems: ['pass 1: not a JSON object (stop)'] });
    expect(run.value('contract_compliance')).toBe(false);
    expect(run.value('parse_valid')).toBe(true);
    expect(run.value('hybrid')).toBeCloseTo(0.9, 12);
  });

  it('an empty pass 2: parse_valid, but no contract, no match: hybrid 0.4', async () => {
    const run = await cleanup([DRAFT, '{"cleaned_text": ""}'], ROW);
    expect(run.value('parse_valid')).toBe(true);
    expect(run.value('contract_compliance')).toBe(false);
    expect(run.value('similarity')).toBe(0);
    expect(run.value('hybrid')).toBeCloseTo(0.4, 12);
    expect(run.value('wer')).toBe(1);
  });

  it('a missing cleaned_text: not parse_valid, every figure 0, said why', async () => {
    const run = await cleanup([DRAFT, '{"text": "Go right."}'], ROW);
    expect(run.output.cleaned).toBeUndefined();
    expect(run.output.problems).toEqual(['pass 2: cleaned_text is missing or not a string']);
    expect(run.value('parse_valid')).toBe(false);
    expect(run.value('hybrid')).toBe(0);
    expect(run.scores.parse_valid).toMatchObject({
      explanation: 'pass 2: cleaned_text is missing or not a string',
    });
  });
});

describe('heuristic figures', () => {
  const fixture = {
    required: ['munich office'],
    forbidden: ['berlin', 'i mean'],
    minDecisions: 1,
    decisions: [{ action: 'resolve_repair', source: 'the berlin office I mean' }],
  };
  const expected = 'Send the invoice to the Munich office by Friday.';

  it('a cleanup that follows every rule and makes the expected decision: combined 1', () => {
    const f = heuristicFigures({
      fixture,
      expected,
      cleaned: expected,
      decisions: [
        { action: 'resolve_repair', source: 'the Berlin office, I mean' },
        { action: 'punctuate', source: 'friday' },
      ],
    });
    expect(f).toEqual({
      exactMatch: 1,
      tokenF1: 1,
      ruleMatch: 1,
      decisionsMatched: 1,
      decisionsMade: 2,
      decisionsExpected: 1,
      combined: 1,
    });
  });

  it('a cleanup that left the repair in: F1 18/23, one rule of four, combined 0.3·18/23 + 0.2·0.25', () => {
    const f = heuristicFigures({
      fixture,
      expected,
      cleaned: 'Send the invoice to the Berlin office, I mean the Munich office by Friday.',
      decisions: [],
    });
    expect(f.exactMatch).toBe(0);
    expect(f.tokenF1).toBeCloseTo(18 / 23, 12);
    expect(f.ruleMatch).toBe(0.25);
    expect(f.combined).toBeCloseTo((0.3 * 18) / 23 + 0.05, 12);
  });
});

describe('cleanup figures', () => {
  function result(
    i: number,
    cleaned: string,
    hybrid: number,
    ms: [number, number],
    input: Record<string, string>,
  ) {
    const stage = (latencyMs: number) => ({
      calls: 1,
      cachedCalls: 0,
      costUsd: 0,
      latencyMs,
      usage: { input: 1, output: 1, cached: 0 },
    });
    return {
      schemaVersion: 2 as const,
      runId: 'r',
      itemId: `i${i}`,
      row: i,
      status: 'scored' as const,
      gold: 'Go right.',
      input: { tags: '[]', ...input },
      output: { cleaned, decisions: [], draftValid: true, problems: [] },
      scores: { hybrid: { kind: 'number' as const, value: hybrid } },
      stages: { draft: stage(ms[0]), audit: stage(ms[1]) },
      simulated: false,
      finishedAt: 't',
    };
  }

  it('latency per pass, and the combined ranking (1 − w)·hybrid + w·heuristic', () => {
    const fixture = JSON.stringify({ words: [{ w: 'go', startMs: 0, endMs: 1 }], required: ['go right'] });
    const results = [
      result(1, 'Go right.', 1, [100, 200], { transcript: 'um go right', heuristics: fixture }),
      result(2, 'Go left.', 0.4, [300, 400], { transcript: 'go left' }),
    ];
    const figures = cleanupFigures(suite, results);
    // p50 with interpolation: draft (100, 300) → 200; audit (200, 400) → 300; total (300, 700) → 500.
    expect([figures.latencyMs.draft.p50, figures.latencyMs.audit.p50, figures.latencyMs.total.p50]).toEqual([
      200, 300, 500,
    ]);
    // The one fixture item is cleaned exactly: heuristic 1. Hybrid mean 0.7: 0.7 × 0.7 + 0.3 × 1.
    expect(figures.heuristic).toMatchObject({ items: 1, combined: 1 });
    expect(figures.combinedRanking).toBeCloseTo(0.79, 12);
    // "um" removed: a filler; item 2 changed nothing.
    expect(figures.edits).toEqual({
      fillerRemoved: 1,
      selfRepairResolved: 0,
      contentChanged: 0,
      contentChangeRate: 0,
    });
    // Without fixtures the weight is 0: the ranking is the hybrid mean.
    const plain = cleanupFigures(suite, [results[1]!]);
    expect(plain.heuristicWeight).toBe(0);
    expect(plain.combinedRanking).toBeCloseTo(0.4, 12);
  });
});

describe("an output's figures", () => {
  it('are read by every scorer from one computation, and follow the gold they are scored against', async () => {
    const run = await cleanup([DRAFT, '{"cleaned_text": "Go right."}'], ROW);
    expect(run.value('similarity')).toBe(1);
    const scorers = cleanupFamily.scorers({} as never);
    // The same output against another gold: "go left." is 4 edits from "go right." (9 characters).
    const other = { id: 'o', row: 2, input: {}, gold: 'Go left.' } as Item;
    const similarity = (await scorers.similarity!.score(run.output, other, {} as never)) as { value: number };
    expect(similarity.value).toBeCloseTo(1 - 4 / 9, 12);
    const exact = (await scorers.exact_match!.score(run.output, other, {} as never)) as { value: boolean };
    expect(exact.value).toBe(false);
  });
});
