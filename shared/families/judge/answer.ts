import { z } from 'zod';
import type { JsonSchemaSpec } from '../../model/provider.js';
import type { JudgeBlock } from './suite.js';

/** What a declared judge answers for one item. */
export interface JudgeOutput {
  label?: string;
  score?: number;
  reason: string;
  /** The extra answer fields the suite's `judge.schema` asks for. */
  fields?: Record<string, unknown>;
  /** The backend that judged, or `given` for an output from the dataset. */
  decidedBy: string;
  /** A pairwise judge's answers in each order, as shown (the label is the verdict from both). */
  orders?: { ab: 'A' | 'B' | 'tie'; ba: 'A' | 'B' | 'tie' };
}

/** A label as the suite declares it, matched case-insensitively and without decoration; else undefined. */
export function declaredLabel(labels: readonly string[], value: string): string | undefined {
  const wanted = value
    .trim()
    .replace(/^["'`*]+|["'`*.]+$/g, '')
    .toLowerCase();
  return labels.find((label) => label.toLowerCase() === wanted);
}

const TRUE = new Set(['true', 'yes', 'pass', 'consistent']);
const FALSE = new Set(['false', 'no', 'fail', 'inconsistent']);

/** A numeric gold value: a number, or a yes/no word as 1/0; undefined when it is neither. */
export function goldNumber(value: string): number | undefined {
  const text = value.trim().toLowerCase();
  if (TRUE.has(text)) return 1;
  if (FALSE.has(text)) return 0;
  const n = text === '' ? Number.NaN : Number(text);
  return Number.isFinite(n) ? n : undefined;
}

/** The extra fields' schema, read once per suite block. */
const extraSchemas = new WeakMap<JudgeBlock, z.ZodType | undefined>();

function extraSchema(judge: JudgeBlock): z.ZodType | undefined {
  if (!extraSchemas.has(judge)) {
    extraSchemas.set(
      judge,
      judge.schema && z.fromJSONSchema(judge.schema as Parameters<typeof z.fromJSONSchema>[0]),
    );
  }
  return extraSchemas.get(judge);
}

function extraProperties(judge: JudgeBlock): Record<string, unknown> {
  return (judge.schema?.properties as Record<string, unknown> | undefined) ?? {};
}

/** Built once per judge block (suites do not change once parsed): zod schemas are costly to build. */
const answerSchemas = new WeakMap<JudgeBlock, z.ZodType<Omit<JudgeOutput, 'decidedBy'>>>();

/** The answer's zod schema: the label or the score, a reason, and the extra fields. */
export function answerSchema(judge: JudgeBlock): z.ZodType<Omit<JudgeOutput, 'decidedBy'>> {
  let schema = answerSchemas.get(judge);
  if (!schema) {
    schema = buildAnswerSchema(judge);
    answerSchemas.set(judge, schema);
  }
  return schema;
}

function buildAnswerSchema(judge: JudgeBlock): z.ZodType<Omit<JudgeOutput, 'decidedBy'>> {
  const { labels, range } = judge;
  const reason = z.string().default('');
  const head = labels
    ? z.object({
        label: z
          .string()
          .transform((v) => declaredLabel(labels, v))
          .refine((v): v is string => v !== undefined, {
            message: `label must be one of ${labels.join(', ')}`,
          }),
        reason,
      })
    : z.object({
        score: z.coerce.number().refine((v) => range !== undefined && v >= range[0] && v <= range[1], {
          message: `score must be a number from ${range?.[0]} to ${range?.[1]}`,
        }),
        reason,
      });
  const extra = extraSchema(judge);
  return z.looseObject({}).transform((raw, ctx) => {
    const base = head.safeParse(raw);
    if (!base.success) {
      for (const issue of base.error.issues)
        ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
      return z.NEVER;
    }
    const out: Omit<JudgeOutput, 'decidedBy'> = { ...base.data };
    if (extra) {
      const fields = Object.fromEntries(Object.keys(extraProperties(judge)).map((k) => [k, raw[k]]));
      const checked = extra.safeParse(fields);
      if (!checked.success) {
        for (const issue of checked.error.issues)
          ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
        return z.NEVER;
      }
      out.fields = checked.data as Record<string, unknown>;
    }
    return out;
  });
}

/** The JSON Schema sent for native structured output: every field required, nothing else allowed. */
export function answerJsonSchema(judge: JudgeBlock): JsonSchemaSpec {
  const head = judge.labels
    ? { label: { type: 'string', enum: [...judge.labels] } }
    : { score: { type: 'number' } };
  const properties = { ...head, reason: { type: 'string' }, ...extraProperties(judge) };
  return {
    name: 'judge_answer',
    schema: { type: 'object', properties, required: Object.keys(properties), additionalProperties: false },
  };
}

/** The answer prompt's values: the labels or range, and the extra fields written out. */
export function answerVars(judge: JudgeBlock): Record<string, string> {
  const fields = Object.entries(extraProperties(judge))
    .map(([name, spec]) => {
      const s = spec as { type?: string; description?: string; enum?: unknown[] };
      const what = s.enum
        ? `one of ${s.enum.map((v) => JSON.stringify(v)).join(' | ')}`
        : (s.type ?? 'value');
      return `, "${name}": ${what}${s.description ? ` (${s.description})` : ''}`;
    })
    .join('');
  if (judge.labels) return { labels: judge.labels.map((l) => JSON.stringify(l)).join(' | '), fields };
  const [min, max] = judge.range!;
  return { min: String(min), max: String(max), fields };
}
