import { z } from 'zod';
import { encoderIdProblem } from '../../lib/encoders/registry.js';
import { commonSuiteShape } from '../../model/suite-base.js';

/**
 * Summarization faithfulness, after the legal summarization benchmark: models summarize
 * documents (or the dataset gives the summaries), and each summary is scored against a
 * reference — a reference summary, or the document itself — by a harsh LLM judge, an NLI
 * contradiction score and an embedding coverage score, combined into a composite.
 */
const weight = z.number().min(0).max(1);

export const summarizationBlock = z
  .object({
    against: z
      .enum(['reference', 'document'])
      .default('reference')
      .describe(
        'What a summary is checked against: `reference` (a reference summary column, the ground truth) or `document` (the source document itself, as in SummEdits).',
      ),
    embedder: z
      .string()
      .default('openai:text-embedding-3-small')
      .describe(
        'Sentence embedder of the coverage score: `openai:<model>`, `gemini:<model>`, `onnx:<folder or s3://bucket/prefix>` (e.g. an all-MiniLM-L6-v2 export) or `sim:embed`.',
      ),
    nli: z
      .string()
      .default('llm')
      .describe(
        'NLI model of the contradiction score: `onnx:<folder or s3://bucket/prefix>` (an MNLI cross-encoder, e.g. nli-deberta-v3-xsmall), `llm` (the judge backend asked which reference sentences the summary contradicts) or `sim:nli`.',
      ),
    weights: z
      .object({ nli: weight, judge: weight, coverage: weight })
      .strict()
      .optional()
      .describe(
        "Composite weights (normalised over the scores present). Default by `against`: with `reference`, 0.35 NLI, 0.40 judge, 0.25 coverage; with `document`, 0.35 NLI, 0.40 judge and coverage 0 (a summary covers a small share of a document's sentences by design, so coverage sits near 0 whatever the summary's quality; it is still reported on its own).",
      ),
    thresholds: z
      .object({ nli: weight, judge: weight, coverage: weight, composite: weight })
      .partial()
      .strict()
      .default({})
      .describe(
        'Per score, the value at or above which a summary counts as faithful (balanced accuracy against binary human labels, fixed/broken in comparisons). Defaults: nli 1 (nothing contradicted), judge 0.75, coverage 0.5, composite 0.75.',
      ),
  })
  .strict();

export type SummarizationBlock = z.infer<typeof summarizationBlock>;

export const summarizationShape = {
  summarization: summarizationBlock
    .prefault({})
    .describe('What summaries are checked against, and with which models.'),
};

export const summarizationColumns = {
  document: z.string().optional().describe('Document column (default `document`, then `doc`, `text`).'),
  reference: z
    .string()
    .optional()
    .describe(
      'Reference summary column, for `against: reference` (default `reference`, then `ground_truth`).',
    ),
};

export const summarizationSuiteSchema = z
  .object({ ...commonSuiteShape('summarization', summarizationColumns), ...summarizationShape })
  .strict();
export type SummarizationSuite = z.infer<typeof summarizationSuiteSchema>;

/** Cross-field checks of a summarization suite. */
export function checkSummarizationSuite(
  suite: SummarizationSuite,
  issue: (path: (string | number)[], message: string) => void,
): void {
  const { embedder, nli, weights } = suite.summarization;
  const embedProblem = encoderIdProblem('embed', embedder);
  if (embedProblem) issue(['summarization', 'embedder'], embedProblem);
  if (nli !== 'llm') {
    const nliProblem = encoderIdProblem('nli', nli);
    if (nliProblem) issue(['summarization', 'nli'], `${nliProblem}, or llm`);
  }
  if (weights && weights.nli + weights.judge + weights.coverage === 0)
    issue(['summarization', 'weights'], 'at least one weight must be above 0');
  if (suite.dataset.columns.output === undefined && suite.backends.length === 0)
    issue(['backends'], 'needs a summarizer and a judge, or dataset.columns.output to score given summaries');
}
