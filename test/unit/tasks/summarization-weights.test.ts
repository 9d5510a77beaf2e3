/**
 * The composite's default weights follow `summarization.against`: coverage weighs 0.25 against a
 * reference summary and nothing against the document (a summary covers a small share of a
 * document's sentences by design), unless the suite sets `weights`. Composites by hand.
 */
import { describe, expect, it } from 'vitest';
import {
  compositeWeights,
  DEFAULT_WEIGHTS,
  defaultWeights,
} from '../../../shared/families/summarization/scores.js';
import type { SummarizationSuite } from '../../../shared/families/summarization/suite.js';
import { type SummaryOutput, summarizationFamily } from '../../../shared/families/summarization/task.js';
import type { TaskContext } from '../../../shared/family/types.js';
import type { Item } from '../../../shared/model/model.js';
import type { Completion, LlmProvider } from '../../../shared/model/provider.js';
import { validateSuite } from '../../../shared/registry/suite.js';

function suiteOf(summarization: Record<string, unknown>): SummarizationSuite {
  return validateSuite(
    {
      version: 1,
      name: 'sum',
      task: 'summarization',
      dataset: { path: 'd.jsonl' },
      backends: ['openai:gpt-4o-mini', 'anthropic:claude-opus-4-5'],
      summarization: { nli: 'sim:nli', embedder: 'sim:embed', ...summarization },
    },
    'test',
  ) as unknown as SummarizationSuite;
}

/** Four source sentences; the summary is close to the first only. */
const SOURCE = 'Ann asked Bob to lunch. Bob said yes. They argued about the place. They chose the cafe.';
const SUMMARY = 'Ann and Bob have lunch.';

/**
 * The three parts of one summary, fixed: the judge says 4 and 4 → ((4 + 4)/2 − 1)/4 = 0.75;
 * nothing contradicted → NLI 1; one of four source sentences covered → coverage 0.25.
 */
function context(suite: SummarizationSuite): TaskContext<SummarizationSuite> {
  const judged = {
    factual_accuracy: 4,
    completeness: 4,
    factual_errors: [],
    hedging_detected: false,
    hedging_examples: [],
    key_omissions: [],
    overall_assessment: 'Faithful.',
  };
  return {
    suite,
    prompts: {},
    paths: summarizationFamily.promptPaths(suite as never),
    backends: suite.backends.map((id) => ({ id, simulated: false }) as unknown as LlmProvider),
    render: (role, vars) => `${role} ${JSON.stringify(vars)}`,
    call: async () => ({ text: JSON.stringify(judged), finishReason: 'stop' }) as Completion,
    // Source sentences first, then the summary's: only the first source sentence is parallel to it.
    embed: async (_stage, _id, texts) =>
      texts.map((_, i) => (i === 0 || i === texts.length - 1 ? [1, 0] : [0, 1])),
    contradiction: async (_stage, _id, pairs) => pairs.map(() => 0),
  };
}

async function scoresOf(suite: SummarizationSuite): Promise<Record<string, number>> {
  const item: Item =
    suite.summarization.against === 'document'
      ? { id: 'a', row: 1, input: { document: SOURCE }, gold: '1' }
      : { id: 'a', row: 1, input: { document: 'the dialogue', reference: SOURCE }, gold: '1' };
  const output: SummaryOutput = { summary: SUMMARY };
  const ctx = context(suite);
  const out: Record<string, number> = {};
  for (const [name, scorer] of Object.entries(summarizationFamily.scorers(suite as never))) {
    const score = await scorer.score(output, item, ctx as never);
    out[name] = (score as { value: number }).value;
  }
  return out;
}

describe('the composite weights follow `against`', () => {
  it('default: coverage 0.25 against a reference summary, 0 against the document; the suite’s weights win', () => {
    expect(defaultWeights('reference')).toEqual({ nli: 0.35, judge: 0.4, coverage: 0.25 });
    expect(defaultWeights('document')).toEqual({ nli: 0.35, judge: 0.4, coverage: 0 });
    expect(compositeWeights({ against: 'document' })).toEqual({ nli: 0.35, judge: 0.4, coverage: 0 });
    const declared = { nli: 0.2, judge: 0.2, coverage: 0.6 };
    expect(compositeWeights({ against: 'document', weights: declared })).toEqual(declared);
    // A suite that sets no weights keeps none: the default is chosen from `against`.
    expect(suiteOf({ against: 'document' }).summarization.weights).toBeUndefined();
    expect(suiteOf({ against: 'document', weights: declared }).summarization.weights).toEqual(declared);
    expect(() => suiteOf({ weights: { nli: 0, judge: 0, coverage: 0 } })).toThrow(/at least one weight/);
  });

  it('against the document, a faithful summary reaches the 0.75 threshold: coverage is left out', async () => {
    const scores = await scoresOf(suiteOf({ against: 'document' }));
    expect(scores).toMatchObject({ nli: 1, judge: 0.75, coverage: 0.25 });
    // (0.35·1 + 0.40·0.75) / (0.35 + 0.40) = 0.65 / 0.75 = 0.8667; with coverage at 0.25 weight it
    // would be 0.35 + 0.30 + 0.0625 = 0.7125, below the composite's threshold of 0.75.
    expect(scores.composite).toBeCloseTo(0.65 / 0.75, 12);
    expect(scores.composite).toBeGreaterThanOrEqual(0.75);
  });

  it('against a reference summary the default keeps coverage: 0.35·1 + 0.40·0.75 + 0.25·0.25', async () => {
    const scores = await scoresOf(suiteOf({ against: 'reference' }));
    expect(scores).toMatchObject({ nli: 1, judge: 0.75, coverage: 0.25 });
    expect(scores.composite).toBeCloseTo(0.7125, 12);
  });

  it('weights the suite sets are used as they are, against the document too', async () => {
    const scores = await scoresOf(suiteOf({ against: 'document', weights: DEFAULT_WEIGHTS }));
    expect(scores.composite).toBeCloseTo(0.7125, 12);
  });

  it('the composite scorer says which weights it uses', () => {
    const described = (summarization: Record<string, unknown>) =>
      summarizationFamily.scorers(suiteOf(summarization) as never).composite!.description;
    expect(described({ against: 'document' })).toBe('0.35·NLI + 0.4·judge, over the scores there are');
    expect(described({ against: 'reference' })).toBe(
      '0.35·NLI + 0.4·judge + 0.25·coverage, over the scores there are',
    );
  });
});
