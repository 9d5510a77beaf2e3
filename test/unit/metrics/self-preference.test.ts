/**
 * Self-preference: the judge's error (verdict − gold) on its own model family's outputs against
 * other families', by hand; and the model family behind an id.
 */
import { describe, expect, it } from 'vitest';
import {
  familyOf,
  numericVerdict,
  type SelfPreferenceItem,
  selfPreference,
} from '../../../shared/lib/metrics/self-preference.js';

const JUDGE = 'openai:gpt-4o';

/**
 * Eight outputs on a 1–5 scale, judged by an OpenAI model:
 *
 *   producer                                     family     judge gold error
 *   openai:gpt-4o-mini                           openai      5     4    +1
 *   gpt-4o                                       openai      4     4     0
 *   openai:gpt-4.1                               openai      5     3    +2
 *   openrouter:openai/o3-mini                    openai      3     2    +1
 *   anthropic:claude-3-5-sonnet-20241022         anthropic   3     4    −1
 *   anthropic.claude-3-5-haiku-20241022-v1:0     anthropic   4     4     0
 *   gemini-2.5-pro                               google      2     3    −1
 *   us.amazon.nova-lite-v1:0                     amazon      4     4     0
 */
const ITEMS: SelfPreferenceItem[] = [
  ['openai:gpt-4o-mini', 5, 4],
  ['gpt-4o', 4, 4],
  ['openai:gpt-4.1', 5, 3],
  ['openrouter:openai/o3-mini', 3, 2],
  ['anthropic:claude-3-5-sonnet-20241022', 3, 4],
  ['anthropic.claude-3-5-haiku-20241022-v1:0', 4, 4],
  ['gemini-2.5-pro', 2, 3],
  ['us.amazon.nova-lite-v1:0', 4, 4],
].map(([producer, verdict, gold]) => ({
  producer: producer as string,
  judge: JUDGE,
  verdict: verdict as number,
  gold: gold as number,
}));

describe('self-preference of one judge, by hand', () => {
  const figures = selfPreference(ITEMS);

  it('compares the mean error on its own family with that on the others', () => {
    // Own: errors 1, 0, 2, 1 → mean 1. Other: −1, 0, −1, 0 → mean −0.5. 1 − (−0.5) = 1.5.
    const pref = figures.selfPreference!;
    expect(pref.value).toBeCloseTo(1.5, 12);
    expect(pref.own).toEqual({ n: 4, error: 1 });
    expect(pref.other).toEqual({ n: 4, error: -0.5 });
    // Every own error is ≥ 0 and every other ≤ 0, so no resample gives a negative difference;
    // the largest possible is 2 − (−1) = 3.
    expect(pref.ci![0]).toBeGreaterThanOrEqual(0);
    expect(pref.ci![1]).toBeLessThanOrEqual(3);
    expect(pref.ci![1]).toBeGreaterThan(pref.ci![0]);
    expect(figures.items).toBe(8);
    expect(figures.skipped).toBe(0);
  });

  it('gives n, the judge mean, the gold mean and the error by producer family', () => {
    expect(Object.keys(figures.byProducer)).toEqual(['amazon', 'anthropic', 'google', 'openai']);
    const openai = figures.byProducer.openai!;
    expect(openai).toMatchObject({ n: 4, ownFamily: 4 });
    expect(openai.judge).toMatchObject({ value: 17 / 4, n: 4 }); // (5 + 4 + 5 + 3) / 4
    expect(openai.gold).toMatchObject({ value: 13 / 4, n: 4 }); // (4 + 4 + 3 + 2) / 4
    expect(openai.error).toMatchObject({ value: 1, n: 4 });
    const anthropic = figures.byProducer.anthropic!;
    expect(anthropic).toMatchObject({ n: 2, ownFamily: 0 });
    expect(anthropic.judge.value).toBe(3.5);
    expect(anthropic.gold.value).toBe(4);
    expect(anthropic.error.value).toBe(-0.5);
    expect(figures.byProducer.google!.error.value).toBe(-1);
    expect(figures.byProducer.amazon!.error.value).toBe(0);
    // The error's interval: errors 1, 0, 2, 1 resampled stay within [0, 2].
    const ci = openai.error.ci!;
    expect(ci[0]).toBeGreaterThanOrEqual(0);
    expect(ci[1]).toBeLessThanOrEqual(2);
    // One item: every resample is that item.
    expect(figures.byProducer.google!.error.ci).toEqual([-1, -1]);
  });

  it('has one judge family, equal to the whole', () => {
    expect(Object.keys(figures.byJudge)).toEqual(['openai']);
    const { skipped: _, byJudge: __, ...whole } = figures;
    expect(figures.byJudge.openai).toEqual(whole);
  });

  it('is the same for the same seed, and has no intervals when asked', () => {
    expect(selfPreference(ITEMS)).toEqual(figures);
    const bare = selfPreference(ITEMS, { bootstrap: false });
    expect(bare.selfPreference!.ci).toBeUndefined();
    expect(bare.selfPreference!.value).toBeCloseTo(1.5, 12);
    expect(bare.byProducer.openai!.error).toEqual({ value: 1, n: 4 });
  });
});

describe('self-preference edge cases', () => {
  it('is null when every output is of another family, or of its own', () => {
    const others = ITEMS.slice(4);
    expect(selfPreference(others).selfPreference).toBeNull();
    expect(selfPreference(ITEMS.slice(0, 4)).selfPreference).toBeNull();
    const none = selfPreference([]);
    expect(none).toMatchObject({ items: 0, skipped: 0, selfPreference: null, byProducer: {}, byJudge: {} });
  });

  it('scores pass verdicts as a pass rate and skips items without a verdict or gold', () => {
    // Claude judging: own (anthropic) passes 2 of 2 with gold 1 of 2 → error +0.5;
    // other (openai) passes 1 of 2 with gold 2 of 2 → error −0.5; difference 1.
    const items: SelfPreferenceItem[] = [
      { producer: 'claude-3-5-sonnet', judge: 'bedrock:anthropic.claude-3-haiku', verdict: true, gold: true },
      { producer: 'claude-3-opus', judge: 'bedrock:anthropic.claude-3-haiku', verdict: true, gold: false },
      { producer: 'gpt-4o', judge: 'bedrock:anthropic.claude-3-haiku', verdict: false, gold: true },
      { producer: 'gpt-4o', judge: 'bedrock:anthropic.claude-3-haiku', verdict: true, gold: true },
      { producer: 'gpt-4o', judge: 'bedrock:anthropic.claude-3-haiku', verdict: undefined, gold: true },
      { producer: 'gpt-4o', judge: 'bedrock:anthropic.claude-3-haiku', verdict: true, gold: null },
    ];
    const figures = selfPreference(items, { bootstrap: false });
    expect(figures.skipped).toBe(2);
    expect(figures.items).toBe(4);
    expect(figures.selfPreference).toEqual({
      value: 1,
      own: { n: 2, error: 0.5 },
      other: { n: 2, error: -0.5 },
    });
    expect(figures.byProducer.anthropic!.judge.value).toBe(1);
    expect(figures.byProducer.openai!.judge.value).toBe(0.5);
  });

  it('pools several judges, each item own or not by its judge, and splits them by judge family', () => {
    // GPT judges: own error +1 (1 vs 0), other 0. Claude judges: own 0, other −1 (0 vs 1).
    // Pooled: own errors +1, 0 → 0.5; other 0, −1 → −0.5; difference 1.
    const items: SelfPreferenceItem[] = [
      { producer: 'gpt-4o', judge: 'openai:gpt-4o', verdict: 'win', gold: 'loss' },
      { producer: 'claude-3-5-sonnet', judge: 'openai:gpt-4o', verdict: 'win', gold: 'win' },
      { producer: 'claude-3-5-sonnet', judge: 'anthropic:claude-sonnet-4-5', verdict: 'win', gold: 'win' },
      { producer: 'gpt-4o', judge: 'anthropic:claude-sonnet-4-5', verdict: 'loss', gold: 'win' },
    ];
    const figures = selfPreference(items, { positive: ['win'], bootstrap: false });
    expect(figures.selfPreference).toEqual({
      value: 1,
      own: { n: 2, error: 0.5 },
      other: { n: 2, error: -0.5 },
    });
    expect(figures.byJudge.openai!.selfPreference).toEqual({
      value: 1,
      own: { n: 1, error: 1 },
      other: { n: 1, error: 0 },
    });
    expect(figures.byJudge.anthropic!.selfPreference).toEqual({
      value: 1,
      own: { n: 1, error: 0 },
      other: { n: 1, error: -1 },
    });
    expect(figures.byProducer.openai!.ownFamily).toBe(1);
  });

  it('scores labels by their order or the positive ones, and refuses a label it cannot score', () => {
    expect(numericVerdict('good', { labelOrder: ['bad', 'ok', 'good'] })).toBe(2);
    expect(numericVerdict('win', { positive: ['win'] })).toBe(1);
    expect(numericVerdict('tie', { positive: ['win'] })).toBe(0);
    expect(() => numericVerdict('win')).toThrow(/give the positive labels or a label order/);
    expect(() => numericVerdict('great', { labelOrder: ['bad', 'good'] })).toThrow(/not in the label order/);
    expect(() =>
      selfPreference([{ producer: 'gpt-4o', judge: 'gpt-4o', verdict: Number.NaN, gold: 1 }]),
    ).toThrow(/item 0's verdict is not a finite number/);
    expect(() => selfPreference([{ producer: ' ', judge: 'gpt-4o', verdict: 1, gold: 1 }])).toThrow(/empty/);
  });
});

describe('familyOf', () => {
  it.each([
    ['openai:gpt-4o-mini', 'openai'],
    ['gpt-4o', 'openai'],
    ['o3-mini', 'openai'],
    ['openrouter:openai/o3', 'openai'],
    ['sim:gpt-4o', 'openai'],
    ['openai:my-fine-tune', 'openai'],
    ['anthropic:claude-3-5-sonnet-20241022', 'anthropic'],
    ['claude-3-5-sonnet', 'anthropic'],
    ['anthropic.claude-3-5-haiku-20241022-v1:0', 'anthropic'],
    ['bedrock:us.anthropic.claude-3-7-sonnet-20250219-v1:0', 'anthropic'],
    ['gemini-2.5-pro', 'google'],
    ['gemini:gemini-2.0-flash', 'google'],
    ['llama-3', 'meta'],
    ['ollama:llama3.1:8b', 'meta'],
    ['together:meta-llama/Llama-3-70b-chat-hf', 'meta'],
    ['bedrock:meta.llama3-70b-instruct-v1:0', 'meta'],
    ['us.amazon.nova-lite-v1:0', 'amazon'],
    ['amazon.titan-text-express-v1', 'amazon'],
    ['mistral.mistral-large-2402-v1:0', 'mistral'],
    ['openrouter:deepseek/deepseek-r1-distill-llama-70b', 'deepseek'],
    ['vllm:Qwen/Qwen2.5-7B-Instruct', 'qwen'],
    ['acme:widget-1', 'acme'],
    ['Human', 'human'],
    ['  Reference answer ', 'reference'],
  ])('%s → %s', (id, family) => {
    expect(familyOf(id)).toBe(family);
  });
});
