import { z } from 'zod';

/**
 * The keys every suite has, whatever its task family: dataset, backends, prompt overrides,
 * generation parameters, run settings, simulator settings. A family adds its own block (and
 * dataset column roles); `suite.ts` composes the families' suites into one schema. Families
 * import this module, never `suite.ts`.
 */

/** Column roles every family understands. */
const commonColumns = {
  id: z.string().optional().describe('Column holding a stable item id (default: `id`, then `idx`).'),
  gold: z.string().optional().describe('Gold (reference) column; each family has its defaults.'),
  output: z
    .string()
    .optional()
    .describe(
      'Column holding a pre-generated output to score (another tool, an earlier run): no model is called to produce it, only the scorers run.',
    ),
  explanation: z
    .string()
    .optional()
    .describe('With `output`: the column explaining it (default `reason`, then `judge_reason`).'),
};

export function datasetSchema<C extends z.ZodRawShape>(columns: C) {
  return z
    .object({
      path: z
        .string()
        .min(1)
        .describe('Dataset file, relative to the suite file (locally) or the bucket key (AWS).'),
      format: z.enum(['csv', 'jsonl']).optional().describe('Default: from the file extension.'),
      columns: z
        .object({ ...commonColumns, ...columns })
        .strict()
        // Every column role is optional, so an empty mapping is valid.
        .default({} as never)
        .describe('Dataset column for each role, where the file uses other names.'),
      lang: z.string().default('en').describe('Language passed to prompts when the row has none.'),
      maxFieldChars: z
        .number()
        .int()
        .positive()
        .default(20_000)
        .describe('Longer fields make the row invalid.'),
    })
    .strict();
}

export const paramsSchema = z
  .object({
    temperature: z.number().min(0).max(2).default(0),
    maxTokens: z.number().int().positive().default(400),
    structuredOutput: z
      .boolean()
      .default(true)
      .describe('Use native json_schema / tool / responseSchema modes.'),
  })
  .strict()
  .default({ temperature: 0, maxTokens: 400, structuredOutput: true });

export const runSettingsSchema = z
  .object({
    concurrency: z.number().int().min(1).max(256).default(8),
    maxAttempts: z
      .number()
      .int()
      .min(1)
      .max(10)
      .default(5)
      .describe('Per provider call, retryable errors only.'),
    sample: z
      .object({ n: z.number().int().positive(), seed: z.number().int().default(1) })
      .strict()
      .optional()
      .describe('Reproducible random sample of the dataset.'),
    cache: z
      .boolean()
      .default(true)
      .describe(
        'Answer identical calls (provider, model, parameters, rendered messages) from the LLM cache shared by all runs and suites. false: always call.',
      ),
    budgetUsd: z
      .number()
      .positive()
      .optional()
      .describe(
        'No provider call starts once the run has spent this much; the items left fail as `budget`, and running again with a higher budget resumes them.',
      ),
  })
  .strict()
  .default({ concurrency: 8, maxAttempts: 5, cache: true });

export const simSettingsSchema = z
  .object({
    noise: z.number().min(0).max(1).default(0.2).describe('Share of simulated answers that are wrong.'),
    latencyMs: z.number().int().min(0).default(20),
    seed: z.number().int().default(7),
  })
  .strict()
  .default({ noise: 0.2, latencyMs: 20, seed: 7 })
  .describe('Simulator settings, used only for `sim:` backends.');

/** The common keys of a suite of family `task` (with its extra dataset column roles). */
export function commonSuiteShape<T extends string, C extends z.ZodRawShape = Record<never, never>>(
  task: T,
  columns: C = {} as C,
) {
  return {
    $schema: z.string().optional(),
    version: z.literal(1),
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'letters, digits, dot, dash, underscore')
      .describe('Suite name: report folder and run ids derive from it.'),
    description: z.string().optional(),
    dataset: datasetSchema(columns),
    task: z.literal(task).describe('Task family.'),
    backends: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'Provider ids `vendor:model` or aliases; the first is the judge for single-backend methods. May be empty when the dataset gives the outputs and no scorer calls a model.',
      ),
    prompts: z
      .record(z.string(), z.string())
      .default({})
      .describe('Overrides of the family prompt files: role → path under prompts/.'),
    params: paramsSchema,
    run: runSettingsSchema,
    sim: simSettingsSchema,
  };
}

const baseSuiteSchema = z.object({ ...commonSuiteShape('task', {}), task: z.string() });

/** What core code knows of any suite: the common keys. Families extend it with their block. */
export type BaseSuite = z.infer<typeof baseSuiteSchema>;

export class SuiteError extends Error {
  override readonly name = 'SuiteError';
}
