import { z } from 'zod';

/**
 * A suite: what to evaluate, with what, and how. Versioned (`version: 1`) and validated here,
 * once; the JSON Schema in `schemas/suite.schema.json` is generated from this for editors.
 */

const columnsSchema = z
  .object({
    id: z.string().optional().describe('Column holding a stable item id (default: `id`, then `idx`).'),
    src: z.string().optional().describe('Original sentence column (default `src`).'),
    tgt: z.string().optional().describe('Suggested sentence column (default `tgt`).'),
    aligned: z
      .string()
      .optional()
      .describe('Edit-span column like `They{ have to=> must} deal` (default `aligned`).'),
    lang: z.string().optional().describe('Language column (default `lang`; else `dataset.lang`).'),
    gold: z
      .string()
      .optional()
      .describe(
        'Gold label column (default: the first of `gold`, `label`, `tp_fp_label`, `judge_label`, `pred_specialized`).',
      ),
  })
  .strict();

export const datasetSchema = z
  .object({
    path: z
      .string()
      .min(1)
      .describe('Dataset file, relative to the suite file (locally) or the bucket key (AWS).'),
    format: z.enum(['csv', 'jsonl']).optional().describe('Default: from the file extension.'),
    columns: columnsSchema.default({}),
    lang: z.string().default('en').describe('Language passed to prompts when the row has none.'),
    maxFieldChars: z
      .number()
      .int()
      .positive()
      .default(20_000)
      .describe('Longer fields make the row invalid.'),
  })
  .strict();

export const suiteSchema = z
  .object({
    $schema: z.string().optional(),
    version: z.literal(1),
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'letters, digits, dot, dash, underscore')
      .describe('Suite name: report folder and run ids derive from it.'),
    description: z.string().optional(),
    dataset: datasetSchema,
    task: z.literal('gec').describe('Task family.'),
    judge: z.enum(['feedback', 'edit']).default('feedback'),
    method: z.enum(['legacy', 'baseline']).describe('Judge method.'),
    backends: z
      .array(z.string().min(1))
      .min(1)
      .describe('Provider ids `vendor:model` or aliases; the first is the judge for single-backend methods.'),
    prompts: z
      .record(z.string(), z.string())
      .default({})
      .describe('Overrides of the method prompt files: role → path under prompts/.'),
    params: z
      .object({
        temperature: z.number().min(0).max(2).default(0),
        maxTokens: z.number().int().positive().default(400),
        structuredOutput: z
          .boolean()
          .default(true)
          .describe('Use native json_schema / tool / responseSchema modes.'),
      })
      .strict()
      .default({ temperature: 0, maxTokens: 400, structuredOutput: true }),
    run: z
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
        budgetUsd: z
          .number()
          .positive()
          .optional()
          .describe('Stop calling providers once spend reaches this.'),
      })
      .strict()
      .default({ concurrency: 8, maxAttempts: 5 }),
    sim: z
      .object({
        noise: z.number().min(0).max(1).default(0.2).describe('Share of simulated answers that are wrong.'),
        latencyMs: z.number().int().min(0).default(20),
        seed: z.number().int().default(7),
      })
      .strict()
      .default({ noise: 0.2, latencyMs: 20, seed: 7 })
      .describe('Simulator settings, used only for `sim:` backends.'),
  })
  .strict();

export type Suite = z.infer<typeof suiteSchema>;
export type SuiteInput = z.input<typeof suiteSchema>;

export class SuiteError extends Error {
  override readonly name = 'SuiteError';
}

/** Parses suite JSON text; every problem is reported with its path. */
export function parseSuite(text: string, source: string): Suite {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new SuiteError(`${source}: not valid JSON (${(error as Error).message})`, { cause: error });
  }
  const parsed = suiteSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  - ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new SuiteError(`${source}: invalid suite\n${problems.join('\n')}`);
  }
  return parsed.data;
}

/** The JSON Schema published for editors. */
export function suiteJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(suiteSchema, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>;
}
