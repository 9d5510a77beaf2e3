import { describe, expect, it } from 'vitest';
import { judgeFamily } from '../../../shared/families/judge/task.js';
import type { AnyTaskFamily, Scorer } from '../../../shared/family/types.js';
import { type ItemResult, storedFieldLength } from '../../../shared/model/model.js';
import { renderScorer } from '../../../shared/reports/files.js';
import { scoreFigures } from '../../../shared/reports/report.js';
import { storedInput } from '../../../shared/use-cases/score-item.js';

/** A family with one scorer of each kind over a text output, its length given by `outputLength`. */
const family = {
  scorers: (): Record<string, Scorer> => ({
    score: { kind: 'number', description: '', score: () => ({ kind: 'number', value: 0 }) },
    pass: {
      kind: 'pass',
      description: '',
      score: () => ({ kind: 'pass', value: true }),
      target: (item) => item.gold === '1',
    },
    tone: { kind: 'label', description: '', score: () => ({ kind: 'label', value: 'x' }) },
  }),
  primaryScorer: () => 'score',
  outputLength: (output: unknown) => (output as { text: string }).text.length,
} as unknown as AnyTaskFamily;

function result(itemId: string, text: string | undefined, score: number, gold: '0' | '1'): ItemResult {
  return {
    itemId,
    row: Number(itemId),
    status: text === undefined ? 'failed' : 'scored',
    gold,
    input: {},
    ...(text === undefined ? {} : { output: { text } }),
    scores:
      text === undefined
        ? {}
        : {
            score: { kind: 'number', value: score },
            pass: { kind: 'pass', value: score >= 0.5 },
            tone: { kind: 'label', value: 'calm' },
          },
    ...(text === undefined ? { failure: { kind: 'parse', message: 'no answer' } } : {}),
    stages: {},
  } as unknown as ItemResult;
}

describe('length bias in the report', () => {
  const results = [
    result('1', 'aa', 0.2, '0'),
    result('2', 'aaaa', 0.4, '1'),
    result('3', 'aaaaaa', 0.9, '1'),
    result('4', 'aaaaaaaa', 0.7, '1'),
    result('5', undefined, 0, '0'),
  ];
  const { scores } = scoreFigures(family, {} as never, results);

  it("sets each scored item's output length against its score, overall and by gold class", () => {
    // Lengths 2, 4, 6, 8 against 0.2, 0.4, 0.9, 0.7: ranks 1 2 3 4 vs 1 2 4 3 → ρ = 1 − 6·2/(4·15) = 0.8.
    expect(scores.score!.bias!.length!.spearman).toBeCloseTo(0.8, 12);
    expect(scores.score!.bias!.length!.n).toBe(4);
    // The number scorer has no gold here; the pass scorer's gold is true for items 2–4.
    expect(scores.score!.bias!.length!.byGold).toEqual({});
    // Passes 0 0 1 1 against lengths 2 4 6 8: ranks 1.5 1.5 3.5 3.5 vs 1 2 3 4 → ρ = 4/√(4·5).
    expect(scores.pass!.bias!.length!.spearman).toBeCloseTo(4 / Math.sqrt(20), 12);
    // Gold true (items 2–4): passes 0 1 1 (ranks 1 2.5 2.5) vs lengths 4 6 8 → ρ = 1.5/√(2·1.5).
    expect(scores.pass!.bias!.length!.byGold).toEqual({
      false: { spearman: null, n: 1 },
      true: { spearman: expect.closeTo(1.5 / Math.sqrt(3), 12), n: 3 },
    });
  });

  it('leaves out label scorers whose labels have no declared order', () => {
    expect(scores.tone!.bias).toBeUndefined();
  });

  it('gives report.txt one line', () => {
    const lines = renderScorer('pass', scores.pass!, false);
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^ {4}length bias ρ\s+0\.894\s+n 4 {3}by gold: false n\/a \(n 1\), true 0\.866 \(n 3\)$/,
      ),
    );
  });

  it('is absent for a family without an output length', () => {
    const { outputLength: _, ...bare } = family as unknown as Record<string, unknown>;
    const figures = scoreFigures(bare as unknown as AnyTaskFamily, {} as never, results);
    expect(figures.scores.score!.bias).toBeUndefined();
  });
});

describe('output lengths of the families', () => {
  it("a judge's: the column its prompt reads last, at its full length when the result keeps it cut", () => {
    const long = 'x'.repeat(20_000);
    const input = storedInput({ context: 'short', reply: long });
    expect(input.reply!.length).toBeLessThan(long.length);
    expect(storedFieldLength(input.reply!)).toBe(20_000);
    expect(judgeFamily.outputLength!({ score: 1 }, input)).toBe(20_000);
    expect(judgeFamily.outputLength!({ score: 1 }, { context: 'abc', reply: 'hello' })).toBe(5);
  });
});
