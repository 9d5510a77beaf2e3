/**
 * Self-preference in the report's score tally: the producer read from the row's kept columns
 * (or an input), the judge from the backend that decided the score or the suite's one backend,
 * which scorers it applies to, and the figures of a tally in parts equal to one pass.
 */
import { deserialize, serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { AnyTaskFamily, Scorer } from '../../../shared/family/types.js';
import { selfPreference } from '../../../shared/lib/metrics/self-preference.js';
import type { ItemResult } from '../../../shared/model/model.js';
import { ScoreTally } from '../../../shared/reports/report.js';
import { judgeOf, producerOf, selfPreferenceOptions } from '../../../shared/reports/self-preference-tally.js';

type SuiteLike = { backends: string[]; dataset: { columns: Record<string, string | undefined> } };
const SUITE: SuiteLike = { backends: ['sim:claude-haiku-4-5'], dataset: { columns: { producer: 'model' } } };

function result(
  row: number,
  producer: string | undefined,
  score: number | undefined,
  gold: string,
): ItemResult {
  return {
    schemaVersion: 2,
    runId: 'r',
    itemId: `i${row}`,
    row,
    status: score === undefined ? 'failed' : 'scored',
    gold,
    input: { answer: 'text' },
    ...(producer === undefined ? {} : { columns: { model: producer } }),
    scores:
      score === undefined
        ? {}
        : {
            score: { kind: 'number', value: score, decidedBy: 'sim:claude-haiku-4-5' },
            tone: { kind: 'label', value: 'calm' },
          },
    ...(score === undefined ? { failure: { kind: 'parse', message: 'no answer' } } : {}),
    stages: {},
    simulated: true,
    finishedAt: '',
  } as ItemResult;
}

const family = {
  scorers: (): Record<string, Scorer> => ({
    score: {
      kind: 'number',
      description: '',
      score: () => ({ kind: 'number', value: 0 }),
      target: (item) => Number(item.gold),
    },
    tone: { kind: 'label', description: '', score: () => ({ kind: 'label', value: 'x' }) },
  }),
  primaryScorer: () => 'score',
} as unknown as AnyTaskFamily;

describe('who produced and who judged', () => {
  it('reads the producer from the kept columns, else an input; blank is none', () => {
    expect(producerOf(result(1, ' gpt-4o ', 3, '3'), 'model')).toBe('gpt-4o');
    expect(producerOf({ ...result(1, undefined, 3, '3'), input: { model: 'claude-3' } }, 'model')).toBe(
      'claude-3',
    );
    expect(producerOf(result(1, '  ', 3, '3'), 'model')).toBeUndefined();
  });

  it("takes the backend that decided the score, else the suite's one backend for the run's own outputs", () => {
    const two = { ...SUITE, backends: ['openai:gpt-4o', 'anthropic:claude-haiku-4-5'] } as never;
    const decided = (by: string) =>
      ({
        ...result(1, 'x', 3, '3'),
        scores: { score: { kind: 'number', value: 3, decidedBy: by } },
      }) as ItemResult;
    expect(judgeOf(decided('openai:gpt-4o'), 'score', two)).toBe('openai:gpt-4o');
    expect(judgeOf(decided('weighted vote (a, b)'), 'score', two)).toBeUndefined();
    expect(judgeOf(decided('fast-path'), 'score', SUITE as never)).toBe('sim:claude-haiku-4-5');
    const given = { ...SUITE, dataset: { columns: { producer: 'model', output: 'verdict' } } } as never;
    expect(judgeOf(decided('given (verdict)'), 'score', given)).toBeUndefined();
  });

  it('applies to numbers and passes, and to labels with positive labels or an ordinal order', () => {
    expect(selfPreferenceOptions('number')).toEqual({});
    expect(selfPreferenceOptions('pass')).toEqual({});
    expect(selfPreferenceOptions('label', { labelOrder: ['a', 'b'] })).toBeUndefined();
    expect(selfPreferenceOptions('label', { labelOrder: ['bad', 'good'], ordinal: true })).toEqual({
      labelOrder: ['bad', 'good'],
    });
    expect(selfPreferenceOptions('label', { positive: ['TP'] })).toEqual({ positive: ['TP'] });
  });
});

describe('bias.selfPreference in the score tally', () => {
  const producers = ['anthropic:claude-3-5-sonnet', 'openai:gpt-4o', 'gemini-2.5-pro'];
  const results = Array.from({ length: 30 }, (_, i) =>
    result(
      i + 1,
      i === 4 ? undefined : producers[i % 3],
      i === 9 ? undefined : 1 + (i % 5),
      String(1 + ((i * 7) % 5)),
    ),
  );
  const tallyOf = (part: ItemResult[]) => {
    const tally = new ScoreTally(family, SUITE as never);
    for (const r of part) tally.add(r);
    return tally;
  };

  it("gives the scorer's figures; a label scorer with no direction has none", () => {
    const { scores } = tallyOf(results).figures();
    const bias = scores.score!.bias!.selfPreference!;
    const kept = results.filter((_, i) => i !== 4);
    expect(bias).toEqual({
      column: 'model',
      noProducer: 1,
      noJudge: 0,
      ...selfPreference(
        kept.map((r) => ({
          producer: r.columns!.model!,
          judge: 'sim:claude-haiku-4-5',
          verdict: r.scores.score?.value as number | undefined,
          gold: Number(r.gold),
        })),
      ),
    });
    // The judge is an Anthropic model: its own family is the Anthropic producer's 10 items, one
    // of which failed (no verdict, skipped); the other families' 19 (one has no producer).
    expect(bias.byProducer.anthropic).toMatchObject({ n: 9, ownFamily: 9 });
    expect(bias.selfPreference).toMatchObject({ own: { n: 9 }, other: { n: 19 } });
    expect(bias.skipped).toBe(1);
    expect(scores.tone!.bias).toBeUndefined();
  });

  it('merges saved parts into the figures of one pass', () => {
    const whole = tallyOf(results).figures().scores.score!.bias;
    const first = new ScoreTally(
      family,
      SUITE as never,
      deserialize(serialize(tallyOf(results.slice(0, 13)).toState())),
    );
    first.merge(
      new ScoreTally(family, SUITE as never, deserialize(serialize(tallyOf(results.slice(13)).toState()))),
    );
    expect(first.figures().scores.score!.bias).toEqual(whole);
  });

  it('is absent without a producer column', () => {
    const tally = new ScoreTally(family, { ...SUITE, dataset: { columns: {} } } as never);
    for (const r of results) tally.add(r);
    expect(tally.figures().scores.score!.bias).toBeUndefined();
  });
});
