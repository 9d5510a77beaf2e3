import { z } from 'zod';
import { commonSuiteShape } from '../../model/suite-base.js';

/**
 * Checks of an output (`task: "checks"`): what other evaluation tools call assertions or
 * graders — exact and fuzzy string checks, patterns, JSON, edit distance, BLEU and ROUGE, and
 * rubric, label or choice questions to a grader model — declared in the suite, each a scorer of
 * its own, the item passing when every check passes. The output under check is given by the
 * dataset (`dataset.columns.output`) or asked of the first backend with `checks.prompt`.
 *
 * A check's texts (`value`, `reference`…) may name dataset columns as `{column}` and the output
 * as `{output}`.
 */

const common = {
  name: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_.-]*$/)
    .optional()
    .describe('The scorer name (default: the type, numbered when it repeats).'),
  not: z.boolean().default(false).describe("Passes when the check fails (promptfoo's `not-` forms)."),
  gold: z
    .string()
    .min(1)
    .optional()
    .describe(
      "A column holding this check's grade as another tool gave it (pass/fail, true/false, 1/0): the report then gives the check's agreement with it (`assay import --check`).",
    ),
  when: z
    .string()
    .min(1)
    .optional()
    .describe(
      "A column: where it is blank, the check does not apply (an imported test without this assertion): unscored there as not_applicable, left out of its pass rate and coverage and of the item's pass.",
    ),
  input: z
    .string()
    .default('{output}')
    .describe('The text checked (default the output, `{output}`); may name columns as `{column}`.'),
};

/** The similarity metrics a `similarity` check computes. */
export const SIMILARITY_METRICS = [
  'bleu',
  'bleu_promptfoo',
  'rouge_1',
  'rouge_2',
  'rouge_3',
  'rouge_4',
  'rouge_5',
  'rouge_l',
  'fuzzy_match',
] as const;

const text = z.string().describe('A text; `{column}` and `{output}` are filled in.');

const deterministic = [
  z
    .object({
      type: z.literal('equals'),
      value: text,
      ignoreCase: z.boolean().default(false),
      trim: z.boolean().default(false).describe('Compare with surrounding white space removed.'),
      ...common,
    })
    .strict(),
  z
    .object({
      type: z.literal('contains'),
      values: z
        .array(text)
        .min(1)
        .describe('The texts looked for; a value that is a JSON list of texts is each of them.'),
      mode: z.enum(['any', 'all']).default('any').describe('Pass when any (or all) of them are found.'),
      ignoreCase: z.boolean().default(false),
      ...common,
    })
    .strict(),
  z.object({ type: z.literal('starts-with'), value: text, ...common }).strict(),
  z
    .object({
      type: z.literal('regex'),
      pattern: z.string().min(1).describe('An RE2 pattern (linear time: no backreferences or lookaround).'),
      ignoreCase: z.boolean().default(false),
      ...common,
    })
    .strict(),
  z
    .object({
      type: z.literal('json'),
      mode: z
        .enum(['is', 'contains'])
        .default('is')
        .describe('`is`: the whole text is JSON; `contains`: some JSON object or array is in it.'),
      ...common,
    })
    .strict(),
  z
    .object({
      type: z.literal('levenshtein'),
      value: text,
      threshold: z.number().min(0).default(5).describe('Pass at this edit distance or less.'),
      ...common,
    })
    .strict(),
  z
    .object({
      type: z.literal('similarity'),
      metric: z
        .enum(SIMILARITY_METRICS)
        .describe(
          "BLEU (sentence level, up to 4-grams; `bleu_promptfoo`: with promptfoo's brevity penalty), ROUGE-N or ROUGE-L F1 over words, or the fuzzy-match ratio (1 − edit distance / the longer length, on normalised texts).",
        ),
      reference: text,
      threshold: z.number().min(0).max(1).describe('Pass at this score or more.'),
      ...common,
    })
    .strict(),
  z
    .object({
      type: z.literal('match'),
      values: z
        .array(text)
        .min(1)
        .describe(
          'Acceptable answers; a value that is a JSON list of texts (a column `["Paris", "paris, France"]`) is each of them.',
        ),
      how: z
        .enum(['starts-with', 'includes', 'fuzzy'])
        .describe(
          'openai/evals: `starts-with` (Match: the output starts with an answer), `includes` (Includes: an answer is in the output), `fuzzy` (FuzzyMatch: lower-cased, without punctuation or articles, either is in the other).',
        ),
      ignoreCase: z.boolean().default(false).describe('With `includes`: compare without case.'),
      ...common,
    })
    .strict(),
] as const;

export const deterministicCheck = z.discriminatedUnion('type', deterministic);
export type DeterministicCheck = z.infer<typeof deterministicCheck>;

/** A question to a grader model about the output. */
export const gradedCheck = z
  .object({
    type: z.literal('model'),
    prompt: z
      .string()
      .min(1)
      .describe(
        'The grader prompt file: its placeholders are dataset columns and `{output}`, each in a tag section.',
      ),
    backend: z
      .string()
      .optional()
      .describe("The grader: a backend of the suite, by id or model (default: the suite's last backend)."),
    labels: z.array(z.string().min(1)).min(2).optional().describe('The grader answers one of these labels.'),
    passing: z.array(z.string().min(1)).optional().describe('With `labels`: the labels that pass.'),
    range: z
      .tuple([z.number(), z.number()])
      .optional()
      .describe('The grader answers a number in [min, max].'),
    threshold: z.number().optional().describe('With `range`: pass at this score or more.'),
    choices: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        'The grader ends its answer with one of these choices (openai/evals model-graded classify), read by `evalType`; an answer naming none is the choice `__invalid__`.',
      ),
    choiceScores: z
      .record(z.string(), z.number())
      .optional()
      .describe(
        "With `choices`: each choice's score (missing: 0); the check passes at `threshold` or more (default 1).",
      ),
    evalType: z
      .enum(['cot_classify', 'classify_cot', 'classify'])
      .default('cot_classify')
      .describe(
        'With `choices`: where the choice stands — last line (`cot_classify`), first line (`classify_cot`) or the whole answer (`classify`).',
      ),
    ...common,
  })
  .strict();
export type GradedCheck = z.infer<typeof gradedCheck>;

/** A combination of checks' scores by a formula (OpenAI Evals' `multi`). */
export const formulaCheck = z
  .object({
    type: z.literal('formula'),
    checks: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.union([deterministicCheck, gradedCheck]))
      .describe('The checks combined, by the name the formula uses.'),
    formula: z
      .string()
      .min(1)
      .describe('Arithmetic of their scores: + - * / ( ), min, max, abs, floor, ceil, sqrt, exp, log.'),
    threshold: z.number().describe('Pass when the formula gives this or more.'),
    ...common,
  })
  .strict();

export const check = z.union([deterministicCheck, gradedCheck, formulaCheck]);
export type Check = z.infer<typeof check>;

export const checksBlock = z
  .object({
    prompt: z
      .string()
      .min(1)
      .optional()
      .describe(
        'The prompt the first backend answers (placeholders are dataset columns); not needed when the dataset gives the outputs.',
      ),
    checks: z.array(check).min(1).describe('The checks, each a scorer; an item passes when all pass.'),
    gold: z
      .string()
      .min(1)
      .optional()
      .describe('A column holding whether the item passed as another tool graded it: compared with `pass`.'),
  })
  .strict();
export type ChecksBlock = z.infer<typeof checksBlock>;

export const checksShape = { checks: checksBlock.describe('The output and the checks it must pass.') };

export const checksSuiteSchema = z
  .object({ ...commonSuiteShape('checks', {}, { placeholders: true }), ...checksShape })
  .strict();
export type ChecksSuite = z.infer<typeof checksSuiteSchema>;

/** The scorer names of a suite's checks, in order: a name given, else the type (numbered when it repeats). */
export function checkNames(checks: readonly Check[]): string[] {
  const counts = new Map<string, number>();
  for (const c of checks) if (!c.name) counts.set(c.type, (counts.get(c.type) ?? 0) + 1);
  const seen = new Map<string, number>();
  return checks.map((c) => {
    if (c.name) return c.name;
    const k = (seen.get(c.type) ?? 0) + 1;
    seen.set(c.type, k);
    return (counts.get(c.type) ?? 0) > 1 ? `${c.type}.${k}` : c.type;
  });
}

/** Cross-field checks of a checks suite. */
export function checkChecksSuite(
  suite: ChecksSuite,
  issue: (path: (string | number)[], message: string) => void,
): void {
  const given = suite.dataset.columns.output !== undefined;
  if (!given && !suite.checks.prompt)
    issue(['checks', 'prompt'], 'give the prompt the first backend answers, or dataset.columns.output');
  if (!given && suite.backends.length === 0) issue(['backends'], 'needs the backend that answers the prompt');
  const names = checkNames(suite.checks.checks);
  names.forEach((name, i) => {
    if (name === 'pass')
      issue(['checks', 'checks', i, 'name'], "`pass` is the name of the whole item's verdict");
    if (names.indexOf(name) !== i) issue(['checks', 'checks', i, 'name'], `two checks named ${name}`);
  });
  const graded = (c: Check, path: (string | number)[]) => {
    if (c.type === 'formula') {
      for (const [name, inner] of Object.entries(c.checks)) graded(inner, [...path, 'checks', name]);
      return;
    }
    if (c.type !== 'model') return;
    const answers = [c.labels, c.range, c.choices].filter((a) => a !== undefined).length;
    if (answers !== 1) issue(path, 'a model check answers one of: `labels`, `range` or `choices`');
    if (c.passing && !c.labels) issue([...path, 'passing'], '`passing` needs `labels`');
    for (const label of c.passing ?? [])
      if (c.labels && !c.labels.includes(label))
        issue([...path, 'passing'], `${label} is not one of the labels`);
    if (c.range && !(c.range[0] < c.range[1]))
      issue([...path, 'range'], 'range must be [min, max] with min < max');
    if (c.choiceScores && !c.choices) issue([...path, 'choiceScores'], '`choiceScores` needs `choices`');
    if (suite.backends.length === 0) issue(['backends'], 'a model check needs a backend to grade with');
  };
  for (const [i, c] of suite.checks.checks.entries()) graded(c, ['checks', 'checks', i]);
}
