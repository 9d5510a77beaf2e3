import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ItemResult } from '../../core/model.js';
import type { Suite } from '../../core/suite.js';
import { classificationMetrics } from '../../metrics/index.js';
import { renderPrompt } from '../../prompts/prompts.js';
import type { Completion, CompletionRequest, LlmProvider } from '../../providers/types.js';
import { parseAnswer } from '../answer.js';
import type { ParsedRow, ScoreOutcome, Task } from '../types.js';
import { alignedText, editSpans, formatSpans } from './edits.js';

/** Every label a GEC gold file may carry. */
export const GEC_LABELS = ['TP', 'FP1', 'FP2', 'FP3', 'TN', 'FN'] as const;
export type GecLabel = (typeof GEC_LABELS)[number];

/** What each judge kind may answer: the feedback judge sees an edit, so it has no TN/FN. */
export const JUDGE_LABELS: Record<Suite['judge'], readonly GecLabel[]> = {
  feedback: ['TP', 'FP1', 'FP2', 'FP3'],
  edit: GEC_LABELS,
};

const METHODS = ['legacy', 'baseline'] as const;
const JUDGES = ['feedback', 'edit'] as const;
const REPAIR_PROMPT = 'gec/common/repair.md';

/** Gold columns tried in order when the suite names none (the AQUA layouts). */
export const GOLD_COLUMNS = ['gold', 'label', 'tp_fp_label', 'judge_label', 'pred_specialized'] as const;

const LANGUAGE_NAMES: Record<string, string> = {
  en: 'English',
  de: 'German',
  ua: 'Ukrainian',
  uk: 'Ukrainian',
  es: 'Spanish',
  fr: 'French',
  it: 'Italian',
  pt: 'Portuguese',
  pl: 'Polish',
  nl: 'Dutch',
};

export function languageName(code: string): string {
  return LANGUAGE_NAMES[code.trim().toLowerCase()] ?? code;
}

/** Canonical label for a gold or predicted value (`' fp3 '` → `FP3`), or undefined. */
export function normalizeLabel(value: string | undefined): GecLabel | undefined {
  const upper = value?.trim().toUpperCase();
  return GEC_LABELS.find((label) => label === upper);
}

function answerSchema(labels: readonly GecLabel[]) {
  const label = z
    .string()
    .transform((v) => normalizeLabel(v.replace(/^\W+|\W+$/g, '')))
    .refine((v): v is GecLabel => v !== undefined && labels.includes(v), {
      message: `label must be one of ${labels.join(', ')}`,
    });
  // Models trained on the seeds' prompts answer `classification`; accept it as `label`.
  return z
    .object({ label: label.optional(), classification: label.optional(), reason: z.string().default('') })
    .refine((a) => a.label ?? a.classification, { message: 'label is missing' })
    .transform((a) => ({ label: (a.label ?? a.classification) as GecLabel, reason: a.reason }));
}

function answerJsonSchema(labels: readonly GecLabel[]) {
  return {
    name: 'gec_judgement',
    schema: {
      type: 'object',
      properties: { label: { type: 'string', enum: [...labels] }, reason: { type: 'string' } },
      required: ['label', 'reason'],
      additionalProperties: false,
    },
  };
}

function column(record: Record<string, string>, name: string | undefined, fallbacks: readonly string[]) {
  for (const key of name ? [name] : fallbacks) {
    const value = record[key];
    if (value !== undefined) return { key, value };
  }
  return undefined;
}

export const gecTask: Task = {
  name: 'gec',

  placeholders: {
    classify: ['language', 'src', 'tgt', 'aligned', 'edit'],
    repair: ['problem', 'labels'],
  },

  promptPaths(suite) {
    return { classify: `gec/${suite.judge}/${suite.method}.md`, repair: REPAIR_PROMPT, ...suite.prompts };
  },

  defaultPromptPaths() {
    return [
      ...JUDGES.flatMap((judge) => METHODS.map((method) => `gec/${judge}/${method}.md`)),
      REPAIR_PROMPT,
    ];
  },

  parseRow(record, row, suite): ParsedRow {
    const cols = suite.dataset.columns;
    const idCol = column(record, cols.id, ['id', 'idx']);
    const src = column(record, cols.src, ['src'])?.value;
    const tgt = column(record, cols.tgt, ['tgt'])?.value;
    const goldCol = column(record, cols.gold, GOLD_COLUMNS);
    const id = idCol?.value.trim() || undefined;
    const missing = [
      src === undefined && (cols.src ?? 'src'),
      tgt === undefined && (cols.tgt ?? 'tgt'),
      goldCol === undefined && (cols.gold ?? GOLD_COLUMNS.join('|')),
    ].filter(Boolean);
    if (missing.length > 0 || src === undefined || tgt === undefined || goldCol === undefined) {
      return { id, error: `missing column ${missing.join(', ')}` };
    }
    const gold = normalizeLabel(goldCol.value);
    if (!gold) {
      return {
        id,
        error: `unknown gold label ${JSON.stringify(goldCol.value)} in ${goldCol.key} (expected ${GEC_LABELS.join('/')})`,
      };
    }
    const tooLong = [src, tgt].some((v) => v.length > suite.dataset.maxFieldChars);
    if (tooLong) return { id, error: `field longer than ${suite.dataset.maxFieldChars} characters` };
    if (src.trim() === '') return { id, error: 'empty src' };
    const input: Record<string, string> = {
      src,
      tgt,
      lang: column(record, cols.lang, ['lang'])?.value || suite.dataset.lang,
    };
    const aligned = column(record, cols.aligned, ['aligned'])?.value;
    if (aligned) input.aligned = aligned;
    return {
      item: {
        id: id ?? createHash('sha256').update(`${src}\u0000${tgt}`).digest('hex').slice(0, 16),
        row,
        input,
        gold,
      },
    };
  },

  async score(item, ctx): Promise<ScoreOutcome> {
    const { suite, prompts } = ctx;
    const paths = this.promptPaths(suite);
    const labels = JUDGE_LABELS[suite.judge];
    const { src = '', tgt = '', aligned, lang = suite.dataset.lang } = item.input;
    const spans = editSpans(src, tgt, aligned);
    const prompt = renderPrompt(
      prompts[paths.classify!]!.text,
      {
        language: languageName(lang),
        src,
        tgt,
        aligned: alignedText(src, tgt, aligned),
        edit: formatSpans(spans),
      },
      paths.classify,
    );
    const provider = ctx.backends[0]!;
    const schema = answerSchema(labels);
    const request: CompletionRequest = {
      model: modelOf(provider),
      prompt,
      temperature: suite.params.temperature,
      maxTokens: suite.params.maxTokens,
      jsonSchema: suite.params.structuredOutput ? answerJsonSchema(labels) : undefined,
      simulate: (rng, noise) => simulatedAnswer(item.gold as GecLabel, labels, rng, noise),
    };
    const first = await ctx.call('classify', provider, request);
    const refusal = refused(first);
    if (refusal) return refusal;
    const parsed = parseAnswer(first.text, schema);
    if (parsed.ok) return { status: 'scored', prediction: parsed.value.label, reason: parsed.value.reason };

    // One repair pass: show the model its own answer and what was wrong with it.
    const repairText = renderPrompt(
      prompts[paths.repair!]!.text,
      { problem: parsed.problem, labels: labels.map((l) => `"${l}"`).join(' | ') },
      paths.repair,
    );
    const second = await ctx.call('repair', provider, {
      ...request,
      history: [
        { role: 'user', content: prompt },
        { role: 'assistant', content: first.text },
      ],
      prompt: repairText,
    });
    const secondRefusal = refused(second);
    if (secondRefusal) return secondRefusal;
    const repaired = parseAnswer(second.text, schema);
    if (repaired.ok)
      return { status: 'scored', prediction: repaired.value.label, reason: repaired.value.reason };
    const kind = first.finishReason === 'length' || second.finishReason === 'length' ? 'truncated' : 'parse';
    return {
      status: 'failed',
      failure: { kind, message: `unparseable answer after one repair: ${repaired.problem}` },
      raw: `${first.text}\n--- repair ---\n${second.text}`,
    };
  },

  metrics(results: ItemResult[]) {
    const pairs = results
      .filter((r) => r.gold !== undefined && r.failure?.kind !== 'invalid_row')
      .map((r) => ({ gold: r.gold!, pred: r.status === 'scored' ? r.prediction! : 'Error' }));
    return classificationMetrics(pairs);
  },
};

function refused(completion: Completion): ScoreOutcome | undefined {
  if (completion.finishReason !== 'refusal' && completion.finishReason !== 'content_filter') return undefined;
  return {
    status: 'failed',
    failure: { kind: 'refusal', message: `the model declined (${completion.finishReason})` },
    raw: completion.text,
  };
}

/** `openai:gpt-4o-mini` → `gpt-4o-mini` (provider ids are already resolved from aliases). */
export function modelOf(provider: LlmProvider): string {
  return provider.id.slice(provider.id.indexOf(':') + 1);
}

function simulatedAnswer(
  gold: GecLabel,
  labels: readonly GecLabel[],
  rng: () => number,
  noise: number,
): string {
  const wrong = labels.filter((l) => l !== gold);
  const right = labels.includes(gold) && rng() >= noise;
  const label = right || wrong.length === 0 ? gold : wrong[Math.floor(rng() * wrong.length)]!;
  return JSON.stringify({ label, reason: 'simulated answer (drawn from the gold label with noise)' });
}
