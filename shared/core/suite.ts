import { z } from 'zod';
import { FAMILIES, familyNames, taskFor } from '../tasks/registry.js';
import { type BaseSuite, commonSuiteShape, SuiteError } from './suite-base.js';

export { type BaseSuite, SuiteError } from './suite-base.js';

/**
 * A suite: what to evaluate, with what, and how. Versioned (`version: 1`) and validated here,
 * once. The schema is a union discriminated on `task`, composed from the task registry: each
 * family contributes its block and dataset column roles; the common keys are in suite-base.ts.
 * The JSON Schema in `schemas/suite.schema.json` is generated from this for editors.
 */

function familySchema(family: (typeof FAMILIES)[number]) {
  return z
    .object({ ...commonSuiteShape(family.name, family.suite.columns), ...family.suite.shape })
    .strict()
    .describe(family.description);
}

const [first, ...rest] = FAMILIES.map(familySchema);

export const suiteSchema = z.discriminatedUnion('task', [first!, ...rest]).superRefine((suite, ctx) => {
  taskFor(suite).suite.check?.(suite as BaseSuite, (path, message) =>
    ctx.addIssue({ code: 'custom', path, message }),
  );
});

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
