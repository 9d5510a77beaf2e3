import { z } from 'zod';
import type { LlmProvider } from '../../providers/types.js';
import { parseAnswer } from '../answer.js';
import { type Asked, ask, baseRequest, type GecCase, render } from './case.js';
import type { GecLabel } from './labels.js';
import { canonicalLabel } from './parsers.js';
import { simClassify } from './simulate.js';

export interface Verdict {
  label: GecLabel;
  reason: string;
}

/** A label field that forgives `"fp 2"`, `"**TP**"` and the seeds' `classification` key. */
export function labelField(labels: readonly GecLabel[]) {
  return z
    .string()
    .transform((v) => canonicalLabel(v))
    .refine((v): v is GecLabel => v !== undefined && labels.includes(v), {
      message: `label must be one of ${labels.join(', ')}`,
    });
}

function verdictSchema(labels: readonly GecLabel[]) {
  const label = labelField(labels);
  return z
    .object({ label: label.optional(), classification: label.optional(), reason: z.string().default('') })
    .refine((a) => a.label ?? a.classification, { message: 'label is missing' })
    .transform((a) => ({ label: (a.label ?? a.classification) as GecLabel, reason: a.reason }));
}

export function verdictJsonSchema(labels: readonly GecLabel[], extra: Record<string, unknown> = {}) {
  const properties = { label: { type: 'string', enum: [...labels] }, reason: { type: 'string' }, ...extra };
  return {
    name: 'gec_judgement',
    schema: { type: 'object', properties, required: Object.keys(properties), additionalProperties: false },
  };
}

/**
 * One single-prompt classification (the legacy and baseline methods, and every escalation and
 * ensemble stage): strict JSON, native structured output when the suite asks for it, one
 * repair pass.
 */
export function classify(
  c: GecCase,
  stage: string,
  provider: LlmProvider,
  role = 'classify',
  extraVars: Record<string, string> = {},
): Promise<Asked<Verdict>> {
  const schema = verdictSchema(c.labels);
  return ask(
    c,
    stage,
    provider,
    {
      ...baseRequest(c, provider, render(c, role, extraVars)),
      jsonSchema: c.ctx.suite.params.structuredOutput ? verdictJsonSchema(c.labels) : undefined,
      simulate: simClassify(c),
    },
    (text) => parseAnswer(text, schema),
    (problem) => render(c, 'repair', { problem }),
  );
}
