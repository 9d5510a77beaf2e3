import type { FailureKind, Item } from '../../core/model.js';
import { renderPrompt } from '../../prompts/prompts.js';
import type { Completion, CompletionRequest, LlmProvider } from '../../providers/types.js';
import type { ItemDetails, ScoreContext, ScoreOutcome } from '../types.js';
import { alignedText, type EditSpan, editSpans, formatSpans } from './edits.js';
import { type GecLabel, JUDGE_LABELS, languageName, normalizeLabel } from './labels.js';
import type { Parsed } from './parsers.js';

/** One GEC item as every method sees it: the pair, its edit spans, and the prompt variables. */
export interface GecCase {
  item: Item;
  ctx: ScoreContext;
  /** Prompt role → path, for this suite. */
  paths: Record<string, string>;
  labels: readonly GecLabel[];
  gold?: GecLabel;
  lang: string;
  spans: EditSpan[];
  /** Every placeholder any GEC prompt may use (the seeds' names and ours). */
  vars: Record<string, string>;
}

export function gecCase(item: Item, ctx: ScoreContext, paths: Record<string, string>): GecCase {
  const { src = '', tgt = '', aligned, lang = ctx.suite.dataset.lang } = item.input;
  const spans = editSpans(src, tgt, aligned);
  const language = languageName(lang);
  const alignedSentence = alignedText(src, tgt, aligned);
  const labels = JUDGE_LABELS[ctx.suite.judge];
  return {
    item,
    ctx,
    paths,
    labels,
    gold: normalizeLabel(item.gold),
    lang,
    spans,
    vars: {
      language,
      src,
      tgt,
      original: src,
      suggested: tgt,
      text: tgt,
      aligned: alignedSentence,
      edit: formatSpans(spans),
      labels: labels.map((l) => `"${l}"`).join(' | '),
    },
  };
}

/** The text of a prompt role, rendered with the case's variables (plus `extra`). */
export function render(c: GecCase, role: string, extra: Record<string, string> = {}): string {
  const path = c.paths[role];
  const snapshot = path === undefined ? undefined : c.ctx.prompts[path];
  if (!snapshot) throw new Error(`prompt role ${role} has no file in this run`);
  return renderPrompt(snapshot.text, { ...c.vars, ...extra }, path);
}

/** The request every GEC call starts from: the suite's parameters, the backend's model. */
export function baseRequest(c: GecCase, provider: LlmProvider, prompt: string): CompletionRequest {
  return {
    model: modelOf(provider),
    prompt,
    temperature: c.ctx.suite.params.temperature,
    maxTokens: c.ctx.suite.params.maxTokens,
  };
}

/** `openai:gpt-4o-mini` → `gpt-4o-mini` (provider ids are already resolved from aliases). */
export function modelOf(provider: LlmProvider): string {
  return provider.id.slice(provider.id.indexOf(':') + 1);
}

export interface Failure {
  kind: FailureKind;
  message: string;
}

export type Asked<T> = { ok: true; value: T } | { ok: false; failure: Failure; raw?: string };

/**
 * One question to a model with one bounded repair pass: the answer is parsed; if it cannot be,
 * the model sees its own answer and the problem once (`repairPrompt`), and the second answer
 * is final. Refusals and truncations are failures of their own kind, not wrong answers.
 */
export async function ask<T>(
  c: GecCase,
  stage: string,
  provider: LlmProvider,
  request: CompletionRequest,
  parse: (text: string) => Parsed<T>,
  repairPrompt: (problem: string) => string,
): Promise<Asked<T>> {
  const first = await c.ctx.call(stage, provider, request);
  const refusal = refused(first);
  if (refusal) return refusal;
  const parsed = parse(first.text);
  if (parsed.ok) return parsed;

  const second = await c.ctx.call(repairStage(stage), provider, {
    ...request,
    history: [
      ...(request.history ?? []),
      { role: 'user', content: request.prompt },
      { role: 'assistant', content: first.text },
    ],
    prompt: repairPrompt(parsed.problem),
  });
  const secondRefusal = refused(second);
  if (secondRefusal) return secondRefusal;
  const repaired = parse(second.text);
  if (repaired.ok) return repaired;
  const truncated = first.finishReason === 'length' || second.finishReason === 'length';
  return {
    ok: false,
    failure: {
      kind: truncated ? 'truncated' : 'parse',
      message: `${stage}: unparseable answer after one repair: ${repaired.problem}`,
    },
    raw: `${first.text}\n--- repair ---\n${second.text}`,
  };
}

/** Where a stage's repair calls are booked: `classify` → `repair` (the seeds' name), else `<stage>.repair`. */
export function repairStage(stage: string): string {
  return stage === 'classify' ? 'repair' : `${stage}.repair`;
}

export function refused(completion: Completion): { ok: false; failure: Failure; raw: string } | undefined {
  if (completion.finishReason !== 'refusal' && completion.finishReason !== 'content_filter') return undefined;
  return {
    ok: false,
    failure: { kind: 'refusal', message: `the model declined (${completion.finishReason})` },
    raw: completion.text,
  };
}

/** A failed `ask` as the item's outcome. */
export function failedOutcome(
  asked: { failure: Failure; raw?: string },
  details?: ItemDetails,
): ScoreOutcome {
  return { status: 'failed', failure: asked.failure, raw: asked.raw, ...(details ? { details } : {}) };
}
