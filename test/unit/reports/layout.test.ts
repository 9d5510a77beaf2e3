/**
 * The report files' layout, gathered in parts and merged in order: the input columns in the
 * order one pass meets them (an invalid row's raw columns only while no usable result came), and
 * whether each number scorer's gold is a binary label.
 */
import { describe, expect, it } from 'vitest';
import { judgeFamily } from '../../../shared/families/judge/task.js';
import type { AnyTaskFamily } from '../../../shared/family/types.js';
import type { ItemResult } from '../../../shared/model/model.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { FileLayout } from '../../../shared/reports/files.js';

const suite = validateSuite(
  {
    version: 1,
    name: 'helpful',
    task: 'judge',
    dataset: { path: 'a.jsonl' },
    judge: { prompt: 'helpful.md', range: [0, 5], threshold: 3 },
    backends: ['sim:judge'],
  },
  'layout test',
);
const family = judgeFamily as AnyTaskFamily;

const result = (row: number, input: Record<string, string>, gold?: string): ItemResult => ({
  schemaVersion: 2,
  runId: 'r',
  itemId: `i${row}`,
  row,
  status: 'scored',
  input,
  ...(gold !== undefined ? { gold } : {}),
  scores: {},
  stages: {},
  simulated: false,
  finishedAt: 't',
});

const invalid = (row: number, input: Record<string, string>): ItemResult => ({
  ...result(row, input),
  status: 'failed',
  failure: { kind: 'invalid_row', message: 'bad' },
});

const RESULTS = [
  invalid(1, { line: '1', raw: 'x' }),
  invalid(2, { line: '2', other: 'y' }),
  result(3, { question: 'q', answer: 'a' }, '1'),
  invalid(4, { line: '4', stray: 'z' }),
  result(5, { question: 'q', context: 'c', answer: 'a' }),
  result(6, { answer: 'a', note: 'n' }, '0'),
  result(7, { question: 'q', answer: 'a' }, '4'),
];

function layoutOf(results: readonly ItemResult[]): FileLayout {
  const layout = new FileLayout(family, suite);
  for (const r of results) layout.add(r);
  return layout;
}

describe('FileLayout merged from parts', () => {
  it('is the layout of one pass, wherever the results are cut', () => {
    for (const n of [1, 2, 3, 5, 6, 7]) {
      const whole = layoutOf(RESULTS.slice(0, n));
      for (let cut = 0; cut <= n; cut += 1) {
        const merged = FileLayout.fromState(family, suite, layoutOf(RESULTS.slice(0, cut)).toState());
        merged.merge(FileLayout.fromState(family, suite, layoutOf(RESULTS.slice(cut, n)).toState()));
        expect({ n, cut, state: merged.toState() }).toEqual({ n, cut, state: whole.toState() });
        expect(merged.inputColumns()).toEqual(whole.inputColumns());
        expect(merged.binary('score')).toBe(whole.binary('score'));
      }
    }
  });

  it('lists the invalid rows’ columns only when nothing else came, and the gold as binary until a rating', () => {
    expect(layoutOf(RESULTS.slice(0, 2)).inputColumns()).toEqual(['line', 'raw', 'other']);
    expect(layoutOf(RESULTS).inputColumns()).toEqual(['question', 'answer', 'context', 'note']);
    expect(layoutOf(RESULTS.slice(0, 6)).binary('score')).toBe(true);
    expect(layoutOf(RESULTS).binary('score')).toBe(false);
    expect(layoutOf(RESULTS.slice(0, 2)).binary('score')).toBe(false);
  });
});
