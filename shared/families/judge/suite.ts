import { z } from 'zod';
import { commonSuiteShape } from '../../model/suite-base.js';

/** What a pairwise judge's item becomes when its two orders disagree. */
export const INCONSISTENT_RULES = ['tie', 'first', 'fail'] as const;
export type InconsistentRule = (typeof INCONSISTENT_RULES)[number];

/**
 * A judge declared without code: a prompt file whose placeholders are dataset columns, and
 * the answer it must give — one of some labels, or a number in a range (with an optional pass
 * threshold) — plus, optionally, more answer fields as a JSON Schema.
 */
export const judgeBlock = z
  .object({
    prompt: z
      .string()
      .min(1)
      .describe(
        'The prompt file (`prompts/tone.md` or `tone.md`: prompts/ beside the suite first, then the shipped ones). Each {placeholder} is a dataset column, and must sit alone in a tag section: <reply>{reply}</reply>.',
      ),
    labels: z
      .array(z.string().min(1))
      .min(2)
      .optional()
      .describe('The answer is one of these labels (matched case-insensitively); gold must be one too.'),
    positive: z
      .array(z.string().min(1))
      .optional()
      .describe(
        "Labels that count as positive, for a binary view of positive vs the rest: binary accuracy, the binary macro F1 (the mean of both classes' F1) and the F1 of the positive class.",
      ),
    ordinal: z
      .boolean()
      .optional()
      .describe(
        "The answers are a scale from low to high. With `labels`: the labels in their declared order (bad, ok, good). With `range`: the numbers; without `ordinal`, a range with whole-number bounds and at least three points ([1, 5], not [0, 1]) is a scale and any other is not, and `ordinal: false` or `true` overrides that. A scale adds the quadratic weighted kappa against gold (a near miss costs less than a far one), and Krippendorff's alpha across repeats uses the ordinal distance.",
      ),
    range: z
      .tuple([z.number(), z.number()])
      .optional()
      .describe(
        "The answer is a number in [min, max]; gold is a number (a 0/1 gold is a binary human label). With whole-number bounds and at least three points ([1, 5]) the numbers are an ordinal scale unless `ordinal: false`: adds the quadratic weighted kappa against gold, and Krippendorff's alpha across repeats uses the ordinal distance. [0, 1] (a fraction, a probability) is not a scale unless `ordinal: true`.",
      ),
    threshold: z
      .number()
      .optional()
      .describe(
        'With `range`: a score at or above it passes (adds a `pass` scorer; gold passes at or above it too).',
      ),
    schema: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        'More answer fields: a JSON Schema `{"type": "object", "properties": {…}}` whose properties the judge must also give; they are kept with each result.',
      ),
    pairwise: z
      .tuple([z.string().min(1), z.string().min(1)])
      .optional()
      .describe(
        'A pairwise judge: the two dataset columns holding the answers compared ([A, B]). The judge answers A, B or tie, and each item is asked twice, in both orders; gold is a preference (A, B or tie). Replaces `labels` and `range`.',
      ),
    inconsistent: z
      .enum(INCONSISTENT_RULES)
      .optional()
      .describe(
        'With `pairwise`: the verdict of an item whose two orders disagree. `tie` (default): a tie; `first`: the verdict with the dataset order (A shown first); `fail`: the item fails as `inconsistent` (left out of accuracy and kappa, as every failed item).',
      ),
  })
  .strict();

export type JudgeBlock = z.infer<typeof judgeBlock>;

export const judgeShape = { judge: judgeBlock.describe('What the judge reads and answers.') };

export const judgeSuiteSchema = z
  .object({ ...commonSuiteShape('judge', {}, { placeholders: true, severalOutputs: true }), ...judgeShape })
  .strict();
export type JudgeSuite = z.infer<typeof judgeSuiteSchema>;

/** Cross-field checks of a judge suite. */
export function checkJudgeSuite(
  suite: JudgeSuite,
  issue: (path: (string | number)[], message: string) => void,
): void {
  const { labels, range, threshold, positive, schema, pairwise, inconsistent, ordinal } = suite.judge;
  if (pairwise) {
    if (labels !== undefined || range !== undefined)
      issue(['judge', 'pairwise'], 'a pairwise judge answers A, B or tie: give no `labels` or `range`');
    if (pairwise[0] === pairwise[1])
      issue(['judge', 'pairwise'], 'the two answers must come from two different columns');
  } else if ((labels === undefined) === (range === undefined)) {
    issue(['judge'], 'declare the answer: either `labels` or `range`, not both (or `pairwise`)');
  }
  if (inconsistent !== undefined && !pairwise)
    issue(['judge', 'inconsistent'], '`inconsistent` needs `pairwise`');
  if (labels && new Set(labels.map((l) => l.toLowerCase())).size !== labels.length) {
    issue(['judge', 'labels'], 'labels must differ (case-insensitively)');
  }
  if (positive && !labels) issue(['judge', 'positive'], '`positive` needs `labels`');
  if (ordinal !== undefined && !labels && !range)
    issue(['judge', 'ordinal'], '`ordinal` needs `labels` or `range`');
  for (const label of positive ?? []) {
    if (labels && !labels.includes(label)) issue(['judge', 'positive'], `${label} is not one of the labels`);
  }
  if (range && !(range[0] < range[1])) issue(['judge', 'range'], 'range must be [min, max] with min < max');
  if (threshold !== undefined && !range) issue(['judge', 'threshold'], '`threshold` needs `range`');
  if (threshold !== undefined && range && (threshold < range[0] || threshold > range[1])) {
    issue(['judge', 'threshold'], `threshold ${threshold} is outside the range [${range[0]}, ${range[1]}]`);
  }
  if (schema !== undefined) {
    const properties = schema.properties;
    if (schema.type !== 'object' || properties === null || typeof properties !== 'object') {
      issue(['judge', 'schema'], 'must be a JSON Schema of type object with properties');
    } else {
      for (const reserved of ['label', 'score', 'reason']) {
        if (reserved in properties)
          issue(['judge', 'schema', 'properties', reserved], `${reserved} is the judge's own field`);
      }
      try {
        z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
      } catch (error) {
        issue(['judge', 'schema'], `not a JSON Schema zod can read: ${(error as Error).message}`);
      }
    }
  }
  const { output } = suite.dataset.columns;
  if (Array.isArray(output)) {
    if (!pairwise)
      issue(
        ['dataset', 'columns', 'output'],
        "a list of output columns is a pairwise judge's verdicts in both orders: it needs `judge.pairwise`",
      );
    else if (output.length !== 2 || output[0] === output[1])
      issue(
        ['dataset', 'columns', 'output'],
        'a pairwise judge reads two different verdict columns: the pair as given (A shown first), then the pair swapped (B shown first)',
      );
  }
  if (output === undefined && suite.backends.length === 0) {
    issue(['backends'], 'needs a backend to judge with (or dataset.columns.output to score given answers)');
  }
}
