import { z } from 'zod';
import { ANSWER_MATCHES } from '../../lib/metrics/answer-match.js';
import type { TemplateFormat } from '../../lib/prompts/prompts.js';
import { commonSuiteShape } from '../../model/suite-base.js';

/**
 * QA evaluation, after the physics QA study: a model under test answers questions (or the
 * dataset gives its answers), and graders score them against the key — `mcq` (the option),
 * `numeric` (within a tolerance) and `explanation` (a rubric from 0 to 1) — with a
 * deterministic fast path in front of the MCQ and numeric graders.
 */
export const qaBlock = z
  .object({
    type: z
      .enum(['mcq', 'numeric', 'explanation', 'text'])
      .optional()
      .describe(
        'The type of every question, for a dataset without a type column (MMLU: mcq; SciBench: numeric; TruthfulQA, SQuAD: text).',
      ),
    template: z
      .enum(['chat', 'mistral'] satisfies TemplateFormat[])
      .default('chat')
      .describe(
        "How the model under test is asked: `chat` (a plain instruction) or `mistral` (the study's `[INST] … [/INST]` instruction format, sent as raw text; the format's markers — [INST], [/INST], <s>, </s>… — are neutralised in questions and contexts).",
      ),
    context: z
      .boolean()
      .default(false)
      .describe(
        'Give the model the retrieved context of each item (dataset column `context`): the RAG configuration.',
      ),
    tolerance: z
      .number()
      .min(0)
      .max(1)
      .default(0.05)
      .describe(
        'Relative tolerance of numeric answers (0.05 = ±5%; 0 = exact match); a `tolerance` column overrides it per item.',
      ),
    fastPath: z
      .boolean()
      .default(true)
      .describe(
        'Decide unambiguous MCQ and numeric answers without the LLM grader (the option letter, the final number); the rest go to it.',
      ),
    match: z
      .enum(ANSWER_MATCHES)
      .default('normalized')
      .describe(
        "How a `text` answer matches an acceptable answer: `exact` (the same text, trimmed), `normalized` (the same after SQuAD's normalisation: case, punctuation, articles and spacing ignored), `contains` (the normalised answer holds an acceptable one as whole words), `f1` (SQuAD's token F1, from 0 to 1). Over a set of acceptable answers the best match counts.",
      ),
    answerSeparator: z
      .string()
      .min(1)
      .optional()
      .describe(
        'What separates the answers in a cell of the key (or the incorrect answers) holding several, as TruthfulQA\'s CSV writes them (`;`). Without it such a cell is one answer unless it is a JSON array (`["Paris", "the city of Paris"]`), which is always read as several.',
      ),
    audit: z
      .boolean()
      .default(false)
      .describe(
        "Also ask the LLM grader about the items the fast path decided (scorer `llm`), and report its agreement with the fast path (Cohen's kappa, disagreements listed): a check of the grader itself.",
      ),
  })
  .strict();

export type QaBlock = z.infer<typeof qaBlock>;

export const qaShape = {
  qa: qaBlock.prefault({}).describe('How questions are asked and graded.'),
};

export const qaColumns = {
  question: z.string().optional().describe('Question column (default `question`, then `problem_text`).'),
  type: z.string().optional().describe('Question type column: mcq, numeric or explanation (default `type`).'),
  options: z
    .union([z.array(z.string()).min(2), z.string()])
    .optional()
    .describe(
      'MCQ options: their columns in letter order (e.g. ["A","B","C","D"]; an empty one is no option), or one column holding them as a list (["…", "…"], lettered A, B, … in order); default: options listed in the question, `(A) … (B) …`.',
    ),
  context: z.string().optional().describe('Retrieved context column, for `qa.context` (default `context`).'),
  tolerance: z.string().optional().describe('Per-item numeric tolerance column (default `tolerance`).'),
  unit: z.string().optional().describe("The key's unit, when apart from it (default `unit`)."),
  incorrect: z
    .string()
    .optional()
    .describe(
      'Incorrect answers of a `text` question (TruthfulQA\'s "Incorrect Answers"; default `incorrect_answers`): a JSON array, or texts between `qa.answerSeparator`. An answer then scores only when it matches an acceptable answer better than any incorrect one.',
    ),
};

export const qaSuiteSchema = z.object({ ...commonSuiteShape('qa', qaColumns), ...qaShape }).strict();
export type QaSuite = z.infer<typeof qaSuiteSchema>;

/** Cross-field checks of a QA suite. */
export function checkQaSuite(
  suite: QaSuite,
  issue: (path: (string | number)[], message: string) => void,
): void {
  const given = suite.dataset.columns.output !== undefined;
  if (!given && suite.backends.length === 0) {
    issue(
      ['backends'],
      'needs the model under test (and a grader), or dataset.columns.output to grade given answers',
    );
  }
}
