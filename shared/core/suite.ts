import { z } from 'zod';
import { FUSIONS } from '../tasks/gec/fusion.js';
import { GEC_LABELS } from '../tasks/gec/labels.js';
import { RISK_FLAGS } from '../tasks/gec/router.js';

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

/** The single-prompt methods, which escalation and ensembles run on each backend. */
export const SINGLE_PROMPT_METHODS = ['legacy', 'baseline'] as const;
export const METHODS = [...SINGLE_PROMPT_METHODS, 'modular', 'agent', 'escalation', 'ensemble'] as const;
export type Method = (typeof METHODS)[number];

const baseMethod = z
  .enum(SINGLE_PROMPT_METHODS)
  .default('baseline')
  .describe('The single-prompt method each backend runs.');

export const modularSchema = z
  .object({
    fusion: z
      .enum(FUSIONS)
      .default('cascade')
      .describe(
        '`cascade` (nonsense, meaning, quality) or `tp_fp3` (meaning, quality, pair correctness). The report also re-fuses with the other rule set when its sub-scores are present.',
      ),
  })
  .strict();

export const agentSchema = z
  .object({
    maxSteps: z
      .number()
      .int()
      .min(1)
      .max(20)
      .default(6)
      .describe('Model turns before the agent must answer; one more turn asks for the Final Answer.'),
  })
  .strict();

export const escalationSchema = z
  .object({
    base: baseMethod,
    router: z
      .enum(['deterministic', 'llm'])
      .default('deterministic')
      .describe(
        "`llm`: the small model classifies and decides routing in one JSON answer (the seeds' legacy router).",
      ),
    escalateLabels: z
      .array(z.enum([...GEC_LABELS, 'Error']))
      .default(['FP1', 'FP2', 'Error'])
      .describe('Small-model labels that send the item to the expert.'),
    escalateFlags: z
      .array(z.enum(RISK_FLAGS))
      .default(['number_change', 'proper_noun_change', 'long_rewrite_risk'])
      .describe('Router risk flags that send the item to the expert.'),
  })
  .strict();

export const ensembleSchema = z
  .object({
    base: baseMethod,
    weights: z
      .array(z.number().nonnegative())
      .optional()
      .describe('One weight per backend, in `backends` order (default: all 1).'),
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
    method: z.enum(METHODS).describe('Judge method.'),
    modular: modularSchema.optional().describe('Options of the `modular` method.'),
    agent: agentSchema.optional().describe('Options of the `agent` method.'),
    escalation: escalationSchema
      .optional()
      .describe(
        'Options of the `escalation` method: backends are ordered small → large; the last one also finalizes when answers disagree.',
      ),
    ensemble: ensembleSchema.optional().describe('Options of the weighted `ensemble` method.'),
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
          .describe('Stop calling providers once spend reaches this.'),
      })
      .strict()
      .default({ concurrency: 8, maxAttempts: 5, cache: true }),
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
  .strict()
  .superRefine((suite, ctx) => {
    for (const block of ['modular', 'agent', 'escalation', 'ensemble'] as const) {
      if (suite[block] !== undefined && suite.method !== block) {
        ctx.addIssue({
          code: 'custom',
          path: [block],
          message: `options for method ${block}, but method is ${suite.method}`,
        });
      }
    }
    if ((suite.method === 'escalation' || suite.method === 'ensemble') && suite.backends.length < 2) {
      ctx.addIssue({
        code: 'custom',
        path: ['backends'],
        message: `${suite.method} needs at least two backends`,
      });
    }
    const weights = suite.ensemble?.weights;
    if (weights && weights.length !== suite.backends.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['ensemble', 'weights'],
        message: `${weights.length} weights for ${suite.backends.length} backends`,
      });
    }
    if (weights?.every((w) => w === 0)) {
      ctx.addIssue({
        code: 'custom',
        path: ['ensemble', 'weights'],
        message: 'at least one weight must be positive',
      });
    }
  });

export type Suite = z.infer<typeof suiteSchema>;
export type ModularOptions = z.infer<typeof modularSchema>;
export type AgentOptions = z.infer<typeof agentSchema>;
export type EscalationOptions = z.infer<typeof escalationSchema>;
export type EnsembleOptions = z.infer<typeof ensembleSchema>;

type MethodOptions = {
  modular: ModularOptions;
  agent: AgentOptions;
  escalation: EscalationOptions;
  ensemble: EnsembleOptions;
};

/** Suites are not changed once parsed: their options are worked out once, not per item. */
const optionsBySuite = new WeakMap<Suite, MethodOptions>();

/** A method's options with their defaults filled (the suite may omit the block). */
export function methodOptions(suite: Suite): MethodOptions {
  let options = optionsBySuite.get(suite);
  if (!options) {
    options = {
      modular: modularSchema.parse(suite.modular ?? {}),
      agent: agentSchema.parse(suite.agent ?? {}),
      escalation: escalationSchema.parse(suite.escalation ?? {}),
      ensemble: ensembleSchema.parse(suite.ensemble ?? {}),
    };
    optionsBySuite.set(suite, options);
  }
  return options;
}
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
