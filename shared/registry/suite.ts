import { z } from 'zod';
import { GateSyntaxError, parseCondition, parseMetric, sequencedCondition } from '../lib/gate.js';
import { type BaseSuite, commonSuiteShape, SuiteError } from '../model/suite-base.js';
import { allVariants, type Variant, variantOverlay } from '../model/variants.js';
import { FAMILIES, familyNames, taskFor } from './registry.js';

export { type BaseSuite, SuiteError } from '../model/suite-base.js';

/**
 * A suite: what to evaluate, with what, and how. Versioned (`version: 1`) and validated here,
 * once. The schema is a union discriminated on `task`, composed from the task registry: each
 * family contributes its block and dataset column roles; the common keys are in suite-base.ts.
 * The JSON Schema in `schemas/suite.schema.json` is generated from this for editors.
 */

function familySchema(family: (typeof FAMILIES)[number]) {
  return z
    .object({
      ...commonSuiteShape(family.name, family.suite.columns, {
        placeholders: family.suite.placeholderColumns ?? false,
        severalOutputs: family.suite.severalOutputs ?? false,
      }),
      ...family.suite.shape,
    })
    .strict()
    .describe(family.description);
}

const [first, ...rest] = FAMILIES.map(familySchema);

export const suiteSchema = z.discriminatedUnion('task', [first!, ...rest]).superRefine((suite, ctx) => {
  const issue = (path: (string | number)[], message: string) =>
    ctx.addIssue({ code: 'custom', path, message });
  const variants = allVariants(suite);
  // A sweep's own suite need not be runnable (its variants bring the backends, say): each variant's is.
  if (variants.length === 0) taskFor(suite).suite.check?.(suite as BaseSuite, issue);
  checkSweep(suite as BaseSuite, variants, issue);
  const { partialGold, goldFile } = (suite as BaseSuite).dataset;
  if ((partialGold || goldFile) && !PARTIAL_GOLD_TASKS.has(suite.task))
    issue(
      ['dataset', partialGold ? 'partialGold' : 'goldFile'],
      `task ${suite.task} scores each item against its gold, so every row needs one: partial gold is for the tasks whose scorers judge without it (${[...PARTIAL_GOLD_TASKS].join(', ')})`,
    );
});

/** Tasks whose scorers give a value on an item without gold (a judge's label or score). */
const PARTIAL_GOLD_TASKS = new Set(['judge', 'summarization']);

/** A sweep's variants each make a valid suite, with distinct names; the baseline and gate name real variants. */
function checkSweep(
  suite: BaseSuite,
  variants: Variant[],
  issue: (path: (string | number)[], message: string) => void,
): void {
  const names = variants.map((v) => v.name);
  if (variants.length === 0) {
    for (const key of ['baseline', 'gate', 'rankBy'] as const) {
      if (suite[key] !== undefined) issue([key], 'needs variants (or a matrix) to compare');
    }
    return;
  }
  if (variants.length < 2) issue(['variants'], 'a sweep needs at least two variants');
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) issue(['variants'], `two variants are named ${name}`);
    seen.add(name);
  }
  if (suite.baseline !== undefined && !names.includes(suite.baseline))
    issue(['baseline'], `no variant is named ${suite.baseline} (variants: ${names.join(', ')})`);
  const baseline = suite.baseline ?? names[0];
  const required = suite.gate?.required;
  for (const name of Array.isArray(required) ? required : []) {
    if (!names.includes(name)) issue(['gate', 'required'], `no variant is named ${name}`);
    if (name === baseline)
      issue(['gate', 'required'], `${name} is the baseline: the gate promotes the others over it`);
  }
  // A gate with a typo fails here, before any variant is paid for.
  const syntax = (path: (string | number)[], read: () => unknown) => {
    try {
      read();
    } catch (error) {
      if (!(error instanceof GateSyntaxError)) throw error;
      issue(path, error.message);
    }
  };
  for (const [i, text] of (suite.gate?.conditions ?? []).entries()) {
    syntax(['gate', 'conditions', i], () =>
      suite.gate?.sequential ? sequencedCondition(parseCondition(text)) : parseCondition(text),
    );
  }
  if (suite.rankBy !== undefined) syntax(['rankBy'], () => parseMetric(suite.rankBy!));
  variants.forEach((variant, i) => {
    const parsed = suiteSchema.safeParse(variantOverlay(suite, variant));
    if (parsed.success) return;
    for (const problem of parsed.error.issues) {
      issue(
        [
          i < (suite.variants?.length ?? 0) ? 'variants' : 'matrix',
          variant.name,
          ...problem.path.filter((p): p is string | number => typeof p !== 'symbol'),
        ],
        problem.message,
      );
    }
  });
}

/** The suites of a sweep's variants, validated, in order; empty when the suite has no variants. */
export function variantSuites(suite: Suite): { variant: Variant; suite: Suite }[] {
  return allVariants(suite).map((variant) => ({
    variant,
    suite: validateSuite(variantOverlay(suite, variant), `${suite.name} variant ${variant.name}`),
  }));
}

/** A validated suite of any family. Core code reads only the common keys. */
export type Suite = z.infer<typeof suiteSchema> & BaseSuite;
export type SuiteInput = z.input<typeof suiteSchema>;

function problems(error: z.ZodError): string {
  return error.issues.map((i) => `  - ${i.path.join('.') || '(root)'}: ${i.message}`).join('\n');
}

/** Validates a parsed suite object; every problem is reported with its path. */
export function validateSuite(raw: unknown, source: string): Suite {
  const task = (raw as { task?: unknown } | null)?.task;
  if (typeof task !== 'string' || !familyNames().includes(task)) {
    throw new SuiteError(
      `${source}: invalid suite\n  - task: ${task === undefined ? 'missing' : JSON.stringify(task)}; expected one of ${familyNames().join(', ')}`,
    );
  }
  const parsed = suiteSchema.safeParse(raw);
  if (!parsed.success) throw new SuiteError(`${source}: invalid suite\n${problems(parsed.error)}`);
  return parsed.data as Suite;
}

/** Parses suite JSON text; every problem is reported with its path. */
export function parseSuite(text: string, source: string): Suite {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new SuiteError(`${source}: not valid JSON (${(error as Error).message})`, { cause: error });
  }
  return validateSuite(raw, source);
}

/** The JSON Schema published for editors. */
export function suiteJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(suiteSchema, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>;
}

/** Every published JSON Schema by file name: the suite's, and each family's own formats. */
export function publishedSchemas(): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = { 'suite.schema.json': suiteJsonSchema() };
  for (const family of FAMILIES) {
    for (const [name, schema] of Object.entries(family.schemas ?? {})) {
      out[`${family.name}.${name}.schema.json`] = z.toJSONSchema(schema, {
        io: 'input',
        target: 'draft-2020-12',
      }) as Record<string, unknown>;
    }
  }
  return out;
}
