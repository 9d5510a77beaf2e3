import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readVerdict } from '../../../shared/families/verdicts/task.js';
import {
  detectFormat,
  parseToolResults,
  ToolResultsError,
} from '../../../shared/lib/datasets/tool-results.js';
import { REPO } from '../../helpers.js';

const FIXTURES = join(REPO, 'test', 'fixtures', 'tool-results');
const fixture = (name: string) => readFile(join(FIXTURES, name), 'utf8');

describe('promptfoo results.json', () => {
  it('reads the published export: a row per prompt × provider × test, configurations by provider', async () => {
    const content = await fixture('promptfoo-sample-export.json');
    expect(detectFormat('results.json', content)).toBe('promptfoo');
    const results = parseToolResults('results.json', content);
    expect(results.format).toBe('promptfoo');
    // One prompt, two providers: the provider tells the configurations apart, in promptIdx order.
    expect(results.configs).toEqual(['openai:gpt-5', 'openai:gpt-5-mini']);
    expect(results.rows).toHaveLength(4);
    expect(results.rows[0]).toMatchObject({
      row: 1,
      where: 'results.results[0]',
      config: 'openai:gpt-5-mini',
      test: '0',
      // failureReason 1 (an assertion) with `error` set is a fail, not an error.
      verdict: 'fail',
      reason: 'Latency 5794ms is greater than threshold 3000ms',
      score: 0.75,
      latencyMs: 5794,
      costUsd: 0.00049925,
    });
    expect(JSON.parse(results.rows[0]!.input)).toEqual({
      riddle:
        'I speak without a mouth and hear without ears. I have no body, but I come alive with wind. What am I?',
    });
    expect(results.rows[1]).toMatchObject({ config: 'openai:gpt-5', test: '0', output: 'An echo.' });
    expect(results.rows.map((r) => r.test)).toEqual(['0', '0', '1', '1']);
    expect(results.rows.every((r) => r.verdict === 'fail')).toBe(true);
  });

  it('reads repeats, errors (failureReason 2) and configurations by prompt label', async () => {
    const results = parseToolResults('r.json', await fixture('promptfoo-repeats.json'));
    expect(results.configs).toEqual(['terse', 'verbose']);
    expect(results.rows).toHaveLength(24);
    const errors = results.rows.filter((r) => r.verdict === 'error');
    expect(errors).toEqual([
      expect.objectContaining({ config: 'terse', test: '3', reason: 'API error 500: upstream timed out' }),
    ]);
    const terse1 = results.rows.filter((r) => r.config === 'terse' && r.test === '1').map((r) => r.verdict);
    expect(terse1).toEqual(['pass', 'fail', 'pass']);
  });

  it('reads the version 2 summary: a provider as a string, tests by their vars', () => {
    const v2 = {
      version: 2,
      results: [
        {
          provider: 'openai:gpt-4o',
          prompt: { raw: 'Say {{x}}', label: 'say' },
          vars: { x: 'a' },
          success: true,
        },
        {
          provider: 'openai:gpt-4o',
          prompt: { raw: 'Say {{x}}', label: 'say' },
          vars: { x: 'b' },
          success: false,
        },
        {
          provider: 'openai:gpt-4o',
          prompt: { raw: 'Say {{x}}', label: 'say' },
          vars: { x: 'c' },
          success: false,
          error: 'connection refused',
        },
      ],
    };
    const content = JSON.stringify(v2);
    expect(detectFormat('old.json', content)).toBe('promptfoo');
    const results = parseToolResults('old.json', content);
    expect(results.rows.map((r) => r.verdict)).toEqual(['pass', 'fail', 'error']);
    expect(results.rows[2]!.reason).toBe('connection refused');
    expect(results.rows[0]!.test).toMatch(/^vars-[0-9a-f]{12}$/);
    expect(new Set(results.rows.map((r) => r.test)).size).toBe(3);
    expect(results.configs).toEqual(['openai:gpt-4o']);
  });

  it('names both prompt and provider when both vary', () => {
    const row = (label: string, provider: string) => ({
      provider: { id: provider },
      prompt: { label },
      testIdx: 0,
      success: true,
    });
    const results = parseToolResults(
      'x.json',
      JSON.stringify({ results: { version: 3, results: [row('p1', 'a'), row('p2', 'b')] } }),
    );
    expect(results.configs).toEqual(['p1 × a', 'p2 × b']);
  });

  it('refuses a malformed row, naming the file, the row and the field', () => {
    const bad = {
      results: {
        version: 3,
        results: [
          { provider: { id: 'a' }, prompt: { label: 'p' }, testIdx: 0, success: true },
          { provider: { id: 'a' }, prompt: { label: 'p' }, testIdx: 1, success: 'yes' },
        ],
      },
    };
    expect(() => parseToolResults('results.json', JSON.stringify(bad))).toThrow(ToolResultsError);
    expect(() => parseToolResults('results.json', JSON.stringify(bad))).toThrow(
      'results.json: result 2 (results.results[1]): field success is missing or not true/false',
    );
    const noProvider = { results: { version: 3, results: [{ prompt: { label: 'p' }, success: true }] } };
    expect(() => parseToolResults('r.json', JSON.stringify(noProvider))).toThrow(
      'r.json: result 1 (results.results[0]): field provider is missing',
    );
    expect(() => parseToolResults('r.json', '{"results": {"version": 3}}', 'promptfoo')).toThrow(
      'r.json: field results.results is missing or not a list',
    );
    expect(() => parseToolResults('r.json', '{"results": ', 'promptfoo')).toThrow('r.json: not JSON');
  });
});

describe('OpenAI Evals output items', () => {
  it('reads JSONL: a configuration per run, a test per data source item, an error apart', async () => {
    const content = await fixture('openai-evals-output-items.jsonl');
    const results = parseToolResults('items.jsonl', content);
    expect(results.format).toBe('openai-evals');
    expect(results.configs).toEqual(['run_base', 'run_new']);
    const base = results.rows.filter((r) => r.config === 'run_base');
    expect(base.map((r) => r.verdict)).toEqual(['pass', 'pass', 'fail', 'fail', 'error']);
    expect(base[2]).toMatchObject({
      where: 'line 3',
      test: '3',
      reason: 'failed: exact-match (score 0)',
      output: 'no idea',
      score: 0,
    });
    expect(base[4]!.reason).toBe('Rate limit reached for gpt-4o-mini');
    expect(JSON.parse(base[0]!.input)).toEqual({ question: 'question 1', answer: 'answer 1' });
  });

  it('reads the list endpoint’s JSON, and passes an item only when every grader passed', () => {
    const item = (id: number, passed: boolean[]) => ({
      object: 'eval.run.output_item',
      id: `oi_${id}`,
      run_id: 'run_1',
      eval_id: 'eval_1',
      datasource_item_id: id,
      datasource_item: {},
      status: passed.every(Boolean) ? 'pass' : 'fail',
      results: passed.map((p, g) => ({ name: `g${g}`, type: 'string_check', score: p ? 1 : 0, passed: p })),
      sample: {
        input: [],
        output: [{ role: 'assistant', content: 'hi' }],
        model: 'm',
        usage: {},
        error: null,
      },
    });
    const content = JSON.stringify({ object: 'list', data: [item(1, [true, true]), item(2, [true, false])] });
    expect(detectFormat('page.json', content)).toBe('openai-evals');
    const results = parseToolResults('page.json', content);
    expect(results.rows.map((r) => [r.where, r.verdict])).toEqual([
      ['data[0]', 'pass'],
      ['data[1]', 'fail'],
    ]);
    expect(results.rows[1]!.reason).toBe('failed: g1 (score 0)');
    expect(results.rows[1]!.score).toBe(0.5);
  });

  it('refuses a malformed item, naming the file, the item and the field', () => {
    const line = (extra: Record<string, unknown>) =>
      JSON.stringify({ run_id: 'r', datasource_item_id: 1, status: 'pass', results: [], ...extra });
    const content = `${line({})}\n${line({ results: [{ name: 'g', score: 1 }] })}\n`;
    expect(() => parseToolResults('items.jsonl', content)).toThrow(
      'items.jsonl: output item 2 (line 2): field results[0].passed is missing or not true/false',
    );
    expect(() => parseToolResults('items.jsonl', `${line({})}\n{oops\n`)).toThrow(
      'items.jsonl: line 2 is not JSON',
    );
    expect(() => parseToolResults('items.jsonl', line({ run_id: undefined }))).toThrow(
      'items.jsonl: output item 1 (line 1): field run_id is missing',
    );
    expect(() => parseToolResults('items.jsonl', line({ status: 'running' }))).toThrow(
      'field status is "running" and there are no grader results to decide',
    );
  });

  it('says when a file is neither format', () => {
    expect(detectFormat('x.json', '{"rows": []}')).toBeUndefined();
    expect(() => parseToolResults('x.json', '{"rows": []}')).toThrow(
      'x.json: not a promptfoo results.json nor OpenAI Evals output items',
    );
  });
});

describe('the verdicts task reads each repeat of a given output', () => {
  const given = {
    output: JSON.stringify([
      { verdict: 'pass', output: 'a' },
      { verdict: 'error', reason: 'timeout' },
      { verdict: 'fail', reason: 'wrong' },
    ]),
  };

  it('repeat i reads entry i; an error has no value, with its reason', () => {
    expect(readVerdict(given, 1)).toEqual({ ok: true, output: { pass: true, output: 'a' } });
    expect(readVerdict(given, 2)).toEqual({ ok: false, failure: { kind: 'provider', message: 'timeout' } });
    expect(readVerdict(given, 3)).toEqual({ ok: true, output: { pass: false, reason: 'wrong' } });
    expect(readVerdict(given, 4)).toMatchObject({ ok: false, failure: { kind: 'no_output' } });
  });

  it('reads a plain word as one verdict, and refuses anything else', () => {
    expect(readVerdict({ output: 'PASS' })).toEqual({ ok: true, output: { pass: true } });
    expect(readVerdict({ output: '0', explanation: 'bad' })).toEqual({
      ok: true,
      output: { pass: false, reason: 'bad' },
    });
    expect(readVerdict({ output: 'maybe' })).toMatchObject({ ok: false, failure: { kind: 'parse' } });
    expect(readVerdict({ output: '[{"verdict":"ok"}]' })).toMatchObject({
      ok: false,
      failure: { kind: 'parse' },
    });
    expect(readVerdict({})).toMatchObject({ ok: false, failure: { kind: 'no_output' } });
  });
});
