import { z } from 'zod';
import { type Parsed, parseAnswer } from '../../family/answer.js';
import { type Asked, ask, baseRequest } from '../../family/ask.js';
import type { LlmProvider } from '../../model/provider.js';
import { type GecCase, render } from './case.js';
import type { GecLabel } from './labels.js';
import { canonicalLabel, parseLabelText } from './parsers.js';
import { gecHint } from './simulate.js';

export interface Verdict {
  label: GecLabel;
  reason: string;
}

/** A label field that forgives `"fp 2"`, `"**TP**"` and the AQUA prompts' `classification` key. */
export function labelField(labels: readonly GecLabel[]) {
  return z
    .string()
    .transform((v) => canonicalLabel(v))
    .refine((v): v is GecLabel => v !== undefined && labels.includes(v), {
      message: `label must be one of ${labels.join(', ')}`,
    });
}

/**
 * `build` memoised per label set. A zod schema is costly to build and to parse with the first
 * time (it compiles a parser of its own): each label set gets one, reused by every item.
 */
export function perLabelSet<T>(
  build: (labels: readonly GecLabel[]) => T,
): (labels: readonly GecLabel[]) => T {
  const built = new Map<string, T>();
  return (labels) => {
    const key = labels.join('\n');
    let value = built.get(key);
    if (value === undefined) {
      value = build(labels);
      built.set(key, value);
    }
    return value;
  };
}

const verdictSchema = perLabelSet(buildVerdictSchema);

function buildVerdictSchema(labels: readonly GecLabel[]) {
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
    c.ctx,
    stage,
    provider,
    {
      ...baseRequest(c.ctx, provider, render(c, role, extraVars)),
      jsonSchema: c.ctx.suite.params.structuredOutput ? verdictJsonSchema(c.labels) : undefined,
      simulation: gecHint(c, provider, { answer: 'classify', stage }),
    },
    (text) => readVerdict(text, schema, c.labels),
    (problem) => render(c, 'repair', { problem }),
  );
}

/** A line that names the answer: `Label: FP2`, `**Final Answer:** TP - …`, `classification = fp 3`. */
const ANSWER_LINE = /^[\s>*_#`-]*(?:final\s*answer|label|classification|answer)[*_`"\s]*[:：=]/im;

/**
 * The JSON answer; failing that, a labelled answer line (models that ignore the JSON
 * instruction often write `Label: FP2`), which saves a repair call. Free prose without such a
 * line is not guessed at ("not TP but FP2" must not read as TP): it goes to the repair pass.
 */
function readVerdict(text: string, schema: z.ZodType<Verdict>, labels: readonly GecLabel[]): Parsed<Verdict> {
  const json = parseAnswer(text, schema);
  if (json.ok || !ANSWER_LINE.test(text)) return json;
  const line = parseLabelText(text, labels);
  return line.ok ? line : json;
}
