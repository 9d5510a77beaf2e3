import { z } from 'zod';
import { parseAnswer } from '../../family/answer.js';
import { ask, baseRequest, refused } from '../../family/ask.js';
import { contentId, readColumn } from '../../family/rows.js';
import { defineFamily, type Scorer, type Solved, type TaskContext } from '../../family/types.js';
import { simulatedEncoderId } from '../../lib/encoders/registry.js';
import { DeferredError } from '../../model/errors.js';
import type { Failure, Item, Score } from '../../model/model.js';
import type { JsonSchemaSpec } from '../../model/provider.js';
import { SummarizationTally, type SummarizationTallyState, summarizationReportText } from './report.js';
import { composite, compositeWeights, coverageScore, judgeScore, nliScore } from './scores.js';
import { splitSentences } from './sentences.js';
import { type SummarizationHint, simulateSummarization } from './simulate.js';
import {
  checkSummarizationSuite,
  type SummarizationSuite,
  summarizationColumns,
  summarizationShape,
} from './suite.js';

export interface SummaryOutput {
  summary: string;
}

/** The harsh judge's answer, exactly as its prompt asks for it. */
export const JUDGE_SCHEMA = z
  .object({
    factual_accuracy: z.number().min(1).max(5),
    completeness: z.number().min(1).max(5),
    factual_errors: z.array(z.string()),
    hedging_detected: z.boolean(),
    hedging_examples: z.array(z.string()),
    key_omissions: z.array(z.string()),
    overall_assessment: z.string(),
  })
  .strict();
export type JudgeAnswer = z.infer<typeof JUDGE_SCHEMA>;

const JUDGE_JSON_SCHEMA: JsonSchemaSpec = {
  name: 'summary_audit',
  schema: z.toJSONSchema(JUDGE_SCHEMA, { target: 'draft-2020-12' }) as Record<string, unknown>,
};

const NLI_SCHEMA = z.object({
  contradicted: z.array(z.number().int().min(1)),
  reasoning: z.string().optional(),
});

/** Where a summary counts as faithful, per score, unless the suite says otherwise. */
const DEFAULT_THRESHOLDS = { nli: 1, judge: 0.75, coverage: 0.5, composite: 0.75 };

function paths(suite: SummarizationSuite): Record<string, string> {
  return {
    summarize: 'summarization/summarize.md',
    judge: `summarization/judge-${suite.summarization.against}.md`,
    nli: 'summarization/nli.md',
    repair: 'summarization/repair.md',
  };
}

/** What a summary is checked against: the reference summary, or the document. */
const referenceOf = (item: Item) => item.input.reference ?? item.input.document!;
const labelOf = (item: Item) => (item.gold === undefined ? undefined : Number(item.gold));

/** The LLM backend that judges (and answers as NLI model with `nli: llm`): the suite's last. */
function judgeBackend(ctx: TaskContext<SummarizationSuite>) {
  const judge = ctx.backends.at(-1);
  if (!judge) throw new Error('the suite has no backend to judge summaries with');
  return judge;
}

function hint(
  stage: 'judge' | 'nli',
  item: Item,
  suite: SummarizationSuite,
  reference: string[],
  summary: string[],
): SummarizationHint {
  const label = labelOf(item);
  return {
    family: 'summarization',
    stage,
    item: item.id,
    against: suite.summarization.against,
    reference,
    summary,
    ...(label === undefined ? {} : { label }),
  };
}

/** The reference's sentences and the summary's, split once per output for every part. */
interface Sentences {
  reference: string[];
  summary: string[];
}

/** A reference without a sentence gives NLI and coverage nothing to count. */
const NO_REFERENCE_SENTENCE: Score = {
  kind: 'number',
  unscored: { kind: 'invalid_row', message: 'the reference has no sentence' },
};

async function judge(
  output: SummaryOutput,
  item: Item,
  ctx: TaskContext<SummarizationSuite>,
  sentences: Sentences,
): Promise<Score> {
  const backend = judgeBackend(ctx);
  const reference = referenceOf(item);
  const asked = await ask(
    ctx,
    'judge',
    backend,
    {
      ...baseRequest(ctx, backend, ctx.render('judge', { reference, summary: output.summary })),
      jsonSchema: ctx.suite.params.structuredOutput ? JUDGE_JSON_SCHEMA : undefined,
      simulation: hint('judge', item, ctx.suite, sentences.reference, sentences.summary),
    },
    (text) => parseAnswer(text, JUDGE_SCHEMA),
    (problem) => ctx.render('repair', { problem }),
  );
  if (!asked.ok) return { kind: 'number', unscored: asked.failure };
  const a = asked.value;
  return {
    kind: 'number',
    value: judgeScore(a.factual_accuracy, a.completeness),
    decidedBy: backend.id,
    explanation: a.overall_assessment,
    details: {
      factualAccuracy: a.factual_accuracy,
      completeness: a.completeness,
      factualErrors: a.factual_errors,
      hedgingDetected: a.hedging_detected,
      hedgingExamples: a.hedging_examples,
      keyOmissions: a.key_omissions,
    },
  };
}

/** 1 − the share of reference sentences some summary sentence contradicts. */
async function nli(
  output: SummaryOutput,
  item: Item,
  ctx: TaskContext<SummarizationSuite>,
  { reference, summary }: Sentences,
): Promise<Score> {
  const model = ctx.suite.summarization.nli;
  let matrix: number[][];
  let decidedBy = model;
  if (model === 'llm') {
    const backend = judgeBackend(ctx);
    decidedBy = `llm:${backend.id}`;
    const numbered = reference.map((s, i) => `${i + 1}. ${s}`).join('\n');
    const asked = await ask(
      ctx,
      'nli',
      backend,
      {
        ...baseRequest(ctx, backend, ctx.render('nli', { sentences: numbered, summary: output.summary })),
        simulation: hint('nli', item, ctx.suite, reference, summary),
      },
      (text) => parseAnswer(text, NLI_SCHEMA),
      (problem) => ctx.render('repair', { problem }),
    );
    if (!asked.ok) return { kind: 'number', unscored: asked.failure };
    const said = new Set(asked.value.contradicted);
    matrix = reference.map((_, r) => [said.has(r + 1) ? 1 : 0]);
  } else {
    const pairs = reference.flatMap((premise) => summary.map((hypothesis) => ({ premise, hypothesis })));
    const p = await ctx.contradiction('nli', model, pairs);
    matrix = reference.map((_, r) => p.slice(r * summary.length, (r + 1) * summary.length));
  }
  const value = nliScore(matrix);
  if (value === null) return NO_REFERENCE_SENTENCE;
  const contradicted = matrix.flatMap((row, r) => (row.some((x) => x >= 0.5) ? [reference[r]!] : []));
  return {
    kind: 'number',
    value,
    decidedBy,
    ...(contradicted.length > 0 ? { details: { contradicted } } : {}),
  };
}

/** The share of reference sentences some summary sentence is close to (cosine ≥ 0.5). */
async function coverage(
  ctx: TaskContext<SummarizationSuite>,
  { reference, summary }: Sentences,
): Promise<Score> {
  const id = ctx.suite.summarization.embedder;
  const vectors = await ctx.embed('coverage', id, [...reference, ...summary]);
  const value = coverageScore(vectors.slice(0, reference.length), vectors.slice(reference.length));
  if (value === null) return NO_REFERENCE_SENTENCE;
  return { kind: 'number', value, decidedBy: id };
}

type Part = 'nli' | 'judge' | 'coverage';

/**
 * The three scores of one output, each started once and run side by side: each scorer awaits
 * its part, and the composite combines those that settled (scorers run on the same output object).
 */
const computed = new WeakMap<SummaryOutput, Record<Part, Promise<Score>>>();

function parts(output: SummaryOutput, item: Item, ctx: TaskContext<SummarizationSuite>) {
  let found = computed.get(output);
  if (!found) {
    const sentences = {
      reference: splitSentences(referenceOf(item)),
      summary: splitSentences(output.summary),
    };
    found = {
      nli: nli(output, item, ctx, sentences),
      judge: judge(output, item, ctx, sentences),
      coverage: coverage(ctx, sentences),
    };
    // Each part's own scorer reports its failure; the composite only leaves it out.
    for (const score of Object.values(found)) score.catch(() => {});
    computed.set(output, found);
  }
  return found;
}

/** A part's value for the composite, or why there is none. */
async function settled(score: Promise<Score>): Promise<number | Failure> {
  try {
    const s = await score;
    return 'unscored' in s ? s.unscored : (s.value as number);
  } catch (error) {
    // Work that waits (a call gone to a batch) is no failure: the item is handed back whole.
    if (error instanceof DeferredError) throw error;
    return { kind: 'internal', message: error instanceof Error ? error.message : String(error) };
  }
}

function scorers(suite: SummarizationSuite): Record<string, Scorer<SummaryOutput, SummarizationSuite>> {
  const thresholds = { ...DEFAULT_THRESHOLDS, ...suite.summarization.thresholds };
  const target = (item: Item) => labelOf(item);
  const part = (name: Part, description: string): Scorer<SummaryOutput, SummarizationSuite> => ({
    kind: 'number',
    description,
    metrics: { threshold: thresholds[name] },
    target,
    score: (output, item, ctx) => parts(output, item, ctx)[name],
  });
  // The suite's weights, else the default for `against` (no coverage against a document).
  const weights = compositeWeights(suite.summarization);
  const weighed = (['nli', 'judge', 'coverage'] as const)
    .filter((name) => weights[name] > 0)
    .map((name) => `${weights[name]}·${name === 'nli' ? 'NLI' : name}`);
  return {
    composite: {
      kind: 'number',
      description: `${weighed.join(' + ')}, over the scores there are`,
      metrics: { threshold: thresholds.composite },
      target,
      score: async (output, item, ctx) => {
        const p = parts(output, item, ctx);
        const got = {
          nli: await settled(p.nli),
          judge: await settled(p.judge),
          coverage: await settled(p.coverage),
        };
        const num = (v: number | Failure) => (typeof v === 'number' ? v : null);
        const value = composite(
          { nli: num(got.nli), judge: num(got.judge), coverage: num(got.coverage) },
          compositeWeights(ctx.suite.summarization),
        );
        if (value === null) {
          // Every part with a weight failed (a part that scored weighs 0).
          const failures = Object.entries(got).flatMap(([name, v]) =>
            typeof v === 'number' ? [] : [{ name, failure: v }],
          );
          const why = failures.map(({ name, failure }) => `${name}: ${failure.message}`).join('; ');
          return {
            kind: 'number',
            unscored: { kind: failures[0]!.failure.kind, message: `no score to combine (${why})` },
          };
        }
        return { kind: 'number', value };
      },
    },
    nli: part('nli', '1 − the share of reference sentences a summary sentence contradicts (NLI)'),
    judge: part('judge', "the harsh judge's factual accuracy and completeness (1–5 each), mapped to 0–1"),
    coverage: part(
      'coverage',
      'the share of reference sentences a summary sentence is close to (cosine ≥ 0.5)',
    ),
  };
}

/**
 * Summarization faithfulness (`task: "summarization"`), after the legal summarization
 * benchmark: models summarize documents — or the dataset gives the summaries — and a harsh
 * LLM judge, an NLI contradiction score and an embedding coverage score rate each summary
 * against its reference; the composite ranks summarizers.
 */
export const summarizationFamily = defineFamily<SummarizationSuite, SummaryOutput>({
  name: 'summarization',
  description:
    'Summaries scored for faithfulness against a reference: a harsh LLM judge, NLI contradiction, embedding coverage, and their composite.',

  suite: {
    shape: summarizationShape,
    columns: summarizationColumns,
    check: checkSummarizationSuite,
    outputColumns: ['summary', 'output', 'prediction', 'generated_summary'],
    goldColumns: ['label'],
  },

  config: (suite) => ({
    against: suite.summarization.against,
    nli: suite.summarization.nli,
    embedder: suite.summarization.embedder,
  }),

  roles: {
    summarize: { placeholders: ['document'], data: ['document'] },
    judge: { placeholders: ['reference', 'summary'], data: ['reference', 'summary'] },
    nli: { placeholders: ['sentences', 'summary'], data: ['sentences', 'summary'] },
    repair: { placeholders: ['problem'], data: ['problem'] },
  },

  promptPaths: (suite) => ({ ...paths(suite), ...suite.prompts }),

  defaultPromptSets: () =>
    (['reference', 'document'] as const).map((against) =>
      paths({ summarization: { against } } as SummarizationSuite),
    ),

  encoders: (suite) => [
    { kind: 'embed', id: suite.summarization.embedder },
    ...(suite.summarization.nli === 'llm' ? [] : [{ kind: 'nli' as const, id: suite.summarization.nli }]),
  ],

  simulateBlock: (block) => ({
    ...block,
    embedder: simulatedEncoderId('embed', String(block.embedder ?? 'openai:text-embedding-3-small')),
    ...(block.nli === undefined || block.nli === 'llm'
      ? {}
      : { nli: simulatedEncoderId('nli', String(block.nli)) }),
  }),

  parseRow(record, row, suite) {
    const cols = suite.dataset.columns;
    const id = readColumn(record, cols.id, ['id'])?.value.trim() || undefined;
    const document = readColumn(record, cols.document, ['document', 'doc', 'text'])?.value;
    if (document === undefined || document.trim() === '')
      return { id, error: `missing or empty column ${cols.document ?? 'document'}` };
    const input: Record<string, string> = { document };
    if (suite.summarization.against === 'reference') {
      const reference = readColumn(record, cols.reference, ['reference', 'ground_truth'])?.value;
      if (reference === undefined || reference.trim() === '')
        return {
          id,
          error: `missing or empty column ${cols.reference ?? 'reference'} (summarization.against is reference; use "document" to check against the document)`,
        };
      input.reference = reference;
    }
    const labelText = readColumn(record, cols.gold, ['label'])?.value.trim();
    let gold: string | undefined;
    if (labelText) {
      if (labelText !== '0' && labelText !== '1')
        return { id, error: `label ${JSON.stringify(labelText)} is not 1 (faithful) or 0 (not)` };
      gold = labelText;
    }
    if (Object.values(input).some((v) => v.length > suite.dataset.maxFieldChars))
      return { id, error: `field longer than ${suite.dataset.maxFieldChars} characters` };
    return { item: { id: id ?? contentId(input), row, input, ...(gold === undefined ? {} : { gold }) } };
  },

  async solve(item, ctx): Promise<Solved<SummaryOutput>> {
    const backend = ctx.backends[0]!;
    const completion = await ctx.call('summarize', backend, {
      ...baseRequest(ctx, backend, ctx.render('summarize', { document: item.input.document! })),
      simulation: {
        family: 'summarization',
        stage: 'summarize',
        item: item.id,
        reference: splitSentences(referenceOf(item)),
      } satisfies SummarizationHint,
    });
    const refusal = refused(completion);
    if (refusal) return refusal;
    if (completion.text.trim() === '')
      return { ok: false, failure: { kind: 'parse', message: 'empty summary' } };
    return { ok: true, output: { summary: completion.text.trim() }, details: { model: backend.id } };
  },

  readOutput: (given) =>
    given.output === undefined || given.output.trim() === ''
      ? { ok: false, failure: { kind: 'no_output', message: 'no summary given for this item' } }
      : { ok: true, output: { summary: given.output.trim() } },

  scorers,

  primaryScorer: () => 'composite',

  outputText: (output) => output.summary,

  outputLength: (output) => output.summary?.length,

  simulate: simulateSummarization,

  reportTally: (_suite, state) => new SummarizationTally(state as SummarizationTallyState | undefined),

  reportText: summarizationReportText,
});
