import { describe, expect, it } from 'vitest';
import { falsify } from '../../../shared/families/summarization/simulate.js';
import type { SummarizationSuite } from '../../../shared/families/summarization/suite.js';
import { type SummaryOutput, summarizationFamily } from '../../../shared/families/summarization/task.js';
import type { TaskContext } from '../../../shared/family/types.js';
import type { NliPair } from '../../../shared/lib/encoders/types.js';
import { scorerFigures } from '../../../shared/lib/metrics/scores.js';
import { DeferredError } from '../../../shared/model/errors.js';
import type { Item, Score } from '../../../shared/model/model.js';
import type { Completion, CompletionRequest, LlmProvider } from '../../../shared/model/provider.js';
import { simulateSuite } from '../../../shared/registry/registry.js';
import { validateSuite } from '../../../shared/registry/suite.js';

const family = summarizationFamily as unknown as typeof summarizationFamily & {
  parseRow(
    record: Record<string, string>,
    row: number,
    suite: SummarizationSuite,
    prompts: object,
  ): ReturnType<typeof summarizationFamily.parseRow>;
};

function suiteOf(overrides: Record<string, unknown> = {}): SummarizationSuite {
  return validateSuite(
    {
      version: 1,
      name: 'sum',
      task: 'summarization',
      dataset: { path: 'd.jsonl' },
      backends: ['openai:gpt-4o-mini', 'anthropic:claude-opus-4-5'],
      ...overrides,
    },
    'test',
  ) as unknown as SummarizationSuite;
}

const parse = (record: Record<string, string>, suite = suiteOf()) =>
  family.parseRow(record, 1, suite as never, {});

const REFERENCE =
  'Marbury sued Madison in 1801. The Court held that § 13 of the Judiciary Act was void. Marshall wrote for the Court. No justice dissented.';
const JUDGED = {
  factual_accuracy: 2,
  completeness: 4,
  factual_errors: ['says 1803 for 1801'],
  hedging_detected: true,
  hedging_examples: ['it seems'],
  key_omissions: [],
  overall_assessment: 'A date is wrong.',
};

/** A context whose LLM answers from a script and whose encoders are given; every call recorded. */
function context(
  suite: SummarizationSuite,
  answers: string[],
  encoders: {
    embed?: (texts: readonly string[]) => number[][];
    nli?: (pairs: readonly NliPair[]) => number[];
  } = {},
) {
  const calls: { stage: string; provider: string; request: CompletionRequest }[] = [];
  const encoderCalls: { kind: string; stage: string; id: string; input: unknown }[] = [];
  const provider = (id: string) => ({ id, simulated: false }) as unknown as LlmProvider;
  const ctx: TaskContext<SummarizationSuite> = {
    suite,
    prompts: {},
    paths: summarizationFamily.promptPaths(suite as never),
    backends: suite.backends.map(provider),
    render: (role, vars) => `${role} ${JSON.stringify(vars)}`,
    call: async (stage, p, request) => {
      calls.push({ stage, provider: p.id, request });
      return { text: answers.shift() ?? '', finishReason: 'stop' } as Completion;
    },
    embed: async (stage, id, texts) => {
      encoderCalls.push({ kind: 'embed', stage, id, input: texts });
      if (!encoders.embed) throw new Error('embedder down');
      return encoders.embed(texts);
    },
    contradiction: async (stage, id, pairs) => {
      encoderCalls.push({ kind: 'nli', stage, id, input: pairs });
      if (!encoders.nli) throw new Error('nli down');
      return encoders.nli(pairs);
    },
  };
  return { ctx, calls, encoderCalls };
}

async function scoreAll(suite: SummarizationSuite, summary: string, ctx: TaskContext<SummarizationSuite>) {
  const { item } = parse({ id: 'm', document: 'the opinion', reference: REFERENCE, label: '0' }, suite) as {
    item: Item;
  };
  const output: SummaryOutput = { summary };
  const out: Record<string, Score | Error> = {};
  for (const [name, scorer] of Object.entries(summarizationFamily.scorers(suite as never))) {
    try {
      out[name] = await scorer.score(output, item, ctx as never);
    } catch (error) {
      out[name] = error as Error;
    }
  }
  return out;
}

describe('summarization rows', () => {
  it('reads document, reference and a 0/1 label; says what is missing or wrong', () => {
    expect(parse({ id: 'a', document: 'D', reference: 'R', label: '1' })).toEqual({
      item: { id: 'a', row: 1, input: { document: 'D', reference: 'R' }, gold: '1' },
    });
    expect(parse({ id: 'a', document: 'D' })).toMatchObject({ error: /missing or empty column reference/ });
    expect(parse({ id: 'a', document: 'D', reference: 'R', label: 'yes' })).toMatchObject({
      error: /label "yes" is not 1 \(faithful\) or 0/,
    });
    const againstDocument = suiteOf({ summarization: { against: 'document' } });
    expect(parse({ id: 'b', doc: 'Ann: hi.', label: '0' }, againstDocument)).toEqual({
      item: { id: 'b', row: 1, input: { document: 'Ann: hi.' }, gold: '0' },
    });
  });

  it('rejects encoders a kind cannot use, and a suite with nothing to score with', () => {
    expect(() => suiteOf({ summarization: { embedder: 'anthropic:claude' } })).toThrow(/embedder/);
    expect(() => suiteOf({ summarization: { nli: 'openai:text-embedding-3-small' } })).toThrow(/, or llm/);
    expect(() => suiteOf({ backends: [] })).toThrow(/needs a summarizer and a judge/);
  });
});

describe('summarization scorers', () => {
  it('judge: the strict JSON answer, repaired once when it has an extra key; (fa + completeness)/2 mapped to 0–1', async () => {
    const suite = suiteOf({ summarization: { nli: 'sim:nli', embedder: 'sim:embed' } });
    const { ctx, calls } = context(suite, [JSON.stringify({ ...JUDGED, score: 5 }), JSON.stringify(JUDGED)], {
      embed: (t) => t.map(() => [1, 0]),
      nli: (p) => p.map(() => 0),
    });
    const scores = await scoreAll(suite, 'Marbury sued Madison in 1803.', ctx);
    // ((2 + 4) / 2 − 1) / 4 = 0.5
    expect(scores.judge).toMatchObject({
      kind: 'number',
      value: 0.5,
      decidedBy: 'anthropic:claude-opus-4-5',
      explanation: 'A date is wrong.',
      details: { factualErrors: ['says 1803 for 1801'], hedgingDetected: true, keyOmissions: [] },
    });
    expect(calls.map((c) => `${c.stage}@${c.provider}`)).toEqual([
      'judge@anthropic:claude-opus-4-5',
      'judge.repair@anthropic:claude-opus-4-5',
    ]);
    expect(calls[0]!.request.prompt).toContain('"reference":"Marbury sued Madison in 1801.');
  });

  it('NLI by model: every reference sentence against every summary sentence, premise first', async () => {
    const suite = suiteOf({ summarization: { nli: 'onnx:models/nli', embedder: 'sim:embed' } });
    // Reference sentence 1 is contradicted (p 0.9 by summary sentence 2): 1 − 1/4 = 0.75.
    const { ctx, encoderCalls } = context(suite, [JSON.stringify(JUDGED)], {
      embed: (t) => t.map(() => [1, 0]),
      nli: (pairs) => pairs.map((_, i) => (i === 1 ? 0.9 : 0.2)),
    });
    const scores = await scoreAll(suite, 'Marbury sued. He sued in 1803.', ctx);
    expect(scores.nli).toMatchObject({
      value: 0.75,
      decidedBy: 'onnx:models/nli',
      details: { contradicted: ['Marbury sued Madison in 1801.'] },
    });
    const nliCall = encoderCalls.find((c) => c.kind === 'nli')!;
    expect(nliCall.input).toHaveLength(4 * 2);
    expect((nliCall.input as NliPair[])[1]).toEqual({
      premise: 'Marbury sued Madison in 1801.',
      hypothesis: 'He sued in 1803.',
    });
  });

  it('NLI by the judge (llm): the contradicted sentence numbers it names', async () => {
    const suite = suiteOf({ summarization: { embedder: 'sim:embed' } });
    const { ctx, calls } = context(
      suite,
      // The parts start side by side, NLI first: its call takes the first answer.
      ['{"contradicted": [1, 4], "reasoning": "date and dissent"}', JSON.stringify(JUDGED)],
      { embed: (t) => t.map(() => [1, 0]) },
    );
    const scores = await scoreAll(suite, 'Marbury sued in 1803. Two justices dissented.', ctx);
    expect(scores.nli).toMatchObject({ value: 0.5, decidedBy: 'llm:anthropic:claude-opus-4-5' });
    const nli = calls.find((c) => c.stage === 'nli')!;
    expect(nli.request.prompt).toContain('1. Marbury sued Madison in 1801.\\n2. The Court held that § 13');
  });

  it('coverage: reference sentences with a summary sentence at cosine ≥ 0.5', async () => {
    const suite = suiteOf({ summarization: { nli: 'sim:nli', embedder: 'openai:text-embedding-3-small' } });
    // Reference sentences 1 and 3 point where the summary sentence does: 2 of 4 covered.
    const vectors = [
      [1, 0],
      [0, 1],
      [0.8, 0.6],
      [-1, 0],
      [1, 0.1],
    ];
    const { ctx } = context(suite, [JSON.stringify(JUDGED)], {
      embed: () => vectors,
      nli: (p) => p.map(() => 0),
    });
    const scores = await scoreAll(suite, 'Marbury sued.', ctx);
    expect(scores.coverage).toMatchObject({ value: 0.5, decidedBy: 'openai:text-embedding-3-small' });
    // Composite by hand: 0.35·1 + 0.40·0.5 + 0.25·0.5 = 0.675.
    expect((scores.composite as { value: number }).value).toBeCloseTo(0.675, 12);
  });

  it('composite: a part that failed is left out and the weights renormalised; the part itself fails alone', async () => {
    const suite = suiteOf({ summarization: { nli: 'sim:nli', embedder: 'sim:embed' } });
    const { ctx } = context(suite, [JSON.stringify(JUDGED)], { nli: (p) => p.map(() => 0) });
    const scores = await scoreAll(suite, 'Marbury sued.', ctx);
    expect(scores.coverage).toBeInstanceOf(Error);
    // (0.35·1 + 0.40·0.5) / 0.75
    expect((scores.composite as { value: number }).value).toBeCloseTo(0.55 / 0.75, 12);
    expect(scores.nli).toMatchObject({ value: 1 });
  });

  it('composite: a part whose call waits (deferred to a batch) hands the item back, not an internal failure', async () => {
    const suite = suiteOf({ summarization: { nli: 'sim:nli', embedder: 'sim:embed' } });
    const { ctx } = context(suite, [], { nli: (p) => p.map(() => 0), embed: (t) => t.map(() => [1, 0]) });
    ctx.call = async () => {
      throw new DeferredError('the judge call waits for its batch');
    };
    const scores = await scoreAll(suite, 'Marbury sued.', ctx);
    expect(scores.judge).toBeInstanceOf(DeferredError);
    expect(scores.composite).toBeInstanceOf(DeferredError);
  });

  it('agreement with labels: each score thresholded where the suite says, by hand', () => {
    // nli scores 1, 1, 0.75, 0.5 for labels 1, 0, 0, 0. At the default threshold 1 (nothing
    // contradicted): predicted 1 1 0 0 → recall 1 on faithful, 2/3 on unfaithful → 0.8333.
    // AUC: the positive (1) beats 0.75 and 0.5 and ties 1 (half) → 2.5 / 3.
    const rows = [1, 1, 0.75, 0.5].map((value, i) => ({ value, target: [1, 0, 0, 0][i] }));
    const nli = summarizationFamily.scorers(suiteOf() as never).nli!;
    const { summary } = scorerFigures('number', rows, {
      ...nli.metrics,
      bootstrap: { iterations: 200, seed: 1 },
    });
    expect(summary.metrics.balancedAccuracy!.value).toBeCloseTo((1 + 2 / 3) / 2, 12);
    expect(summary.metrics.rocAuc!.value).toBeCloseTo(2.5 / 3, 12);
  });
});

describe('summarization under --simulate', () => {
  it('puts the simulator in for the family models too, in every variant', () => {
    const raw = {
      task: 'summarization',
      backends: ['openai:gpt-4o-mini'],
      summarization: { embedder: 'onnx:s3://b/minilm', nli: 'onnx:models/nli' },
      variants: [
        { name: 'v', options: { summarization: { embedder: 'gemini:gemini-embedding-001', nli: 'llm' } } },
      ],
    };
    expect(simulateSuite(raw)).toEqual({
      task: 'summarization',
      backends: ['sim:gpt-4o-mini'],
      summarization: { embedder: 'sim:embed', nli: 'sim:nli' },
      variants: [{ name: 'v', options: { summarization: { embedder: 'sim:embed', nli: 'llm' } } }],
    });
  });

  it('the simulated summarizer hallucinates by changing a fact', () => {
    expect(falsify('The Court decided 5 cases.')).toBe('The Court decided 8 cases.');
    expect(falsify('The Court did not rule.')).toBe('The Court did rule.');
    expect(falsify('Marshall was the Chief Justice.')).toBe('Marshall was not the Chief Justice.');
  });
});
