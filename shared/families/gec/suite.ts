import { z } from 'zod';
import { commonSuiteShape } from '../../model/suite-base.js';
import { FUSIONS } from './fusion.js';
import { GEC_JUDGES, GEC_LABELS } from './labels.js';
import { RISK_FLAGS } from './router.js';

/** The GEC family's part of a suite: judge kind, method and the method's options block. */

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
        "`llm`: the small model classifies and decides routing in one JSON answer (the AQUA project's legacy router).",
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

/** Dataset column roles of a GEC dataset. */
export const gecColumns = {
  src: z.string().optional().describe('Original sentence column (default `src`).'),
  tgt: z.string().optional().describe('Suggested sentence column (default `tgt`).'),
  aligned: z
    .string()
    .optional()
    .describe('Edit-span column like `They{ have to=> must} deal` (default `aligned`).'),
  lang: z.string().optional().describe('Language column (default `lang`; else `dataset.lang`).'),
};

export const gecShape = {
  judge: z.enum(GEC_JUDGES).default('feedback'),
  method: z.enum(METHODS).describe('Judge method.'),
  modular: modularSchema.optional().describe('Options of the `modular` method.'),
  agent: agentSchema.optional().describe('Options of the `agent` method.'),
  escalation: escalationSchema
    .optional()
    .describe(
      'Options of the `escalation` method: backends are ordered small → large; the last one also finalizes when answers disagree.',
    ),
  ensemble: ensembleSchema.optional().describe('Options of the weighted `ensemble` method.'),
};

/** A GEC suite on its own (the registry composes it with the other families' suites). */
export const gecSuiteSchema = z.object({ ...commonSuiteShape('gec', gecColumns), ...gecShape }).strict();

export type GecSuite = z.infer<typeof gecSuiteSchema>;
export type ModularOptions = z.infer<typeof modularSchema>;
export type AgentOptions = z.infer<typeof agentSchema>;
export type EscalationOptions = z.infer<typeof escalationSchema>;
export type EnsembleOptions = z.infer<typeof ensembleSchema>;

/** Cross-field checks of a GEC suite. */
export function checkGecSuite(suite: GecSuite, issue: (path: (string | number)[], message: string) => void) {
  for (const block of ['modular', 'agent', 'escalation', 'ensemble'] as const) {
    if (suite[block] !== undefined && suite.method !== block) {
      issue([block], `options for method ${block}, but method is ${suite.method}`);
    }
  }
  const needed = suite.method === 'escalation' || suite.method === 'ensemble' ? 2 : 1;
  if (suite.dataset.columns.output === undefined && suite.backends.length < needed) {
    issue(
      ['backends'],
      needed === 2
        ? `${suite.method} needs at least two backends`
        : 'needs a backend to judge with (or dataset.columns.output to score given labels)',
    );
  }
  const weights = suite.ensemble?.weights;
  if (weights && weights.length !== suite.backends.length) {
    issue(['ensemble', 'weights'], `${weights.length} weights for ${suite.backends.length} backends`);
  }
  if (weights?.every((w) => w === 0)) {
    issue(['ensemble', 'weights'], 'at least one weight must be positive');
  }
}

type MethodOptions = {
  modular: ModularOptions;
  agent: AgentOptions;
  escalation: EscalationOptions;
  ensemble: EnsembleOptions;
};

/** Suites are not changed once parsed: their options are worked out once, not per item. */
const optionsBySuite = new WeakMap<GecSuite, MethodOptions>();

/** A method's options with their defaults filled (the suite may omit the block). */
export function methodOptions(suite: GecSuite): MethodOptions {
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
