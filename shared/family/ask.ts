/**
 * Asking a model a question whose answer must parse: the machinery every family composes
 * (GEC judges, user-declared judges, graders). One call, one bounded repair pass, and
 * refusals and truncations kept apart from wrong answers.
 */
import { splitInstructions } from '../lib/prompts/prompts.js';
import type { Failure } from '../model/model.js';
import type { Completion, CompletionRequest, LlmProvider } from '../model/provider.js';
import type { Parsed } from './answer.js';
import type { Solved, TaskContext } from './types.js';

export type Asked<T> = { ok: true; value: T } | { ok: false; failure: Failure; raw?: string };

/** `openai:gpt-4o-mini` → `gpt-4o-mini` (provider ids are already resolved from aliases). */
export function modelOf(provider: LlmProvider): string {
  return provider.id.slice(provider.id.indexOf(':') + 1);
}

/** How {@link baseRequest} sends a rendered prompt. */
export interface RequestOptions {
  /** Instructions of the family's own that come before the prompt's (cleanup's system prompts). */
  system?: string;
  /**
   * The prompt is already in the model's own instruction format (`[INST] … [/INST]`): sent
   * whole, as one text, to a completion endpoint (`CompletionRequest.rawCompletion`).
   */
  rawCompletion?: boolean;
}

/**
 * The request every call starts from: the suite's parameters, the backend's model, and the
 * rendered prompt as two messages (`splitInstructions`): its instructions (after
 * `options.system`) in the system message, its data sections alone in the user message, so
 * no dataset row shares a message with the instructions it might try to override.
 */
export function baseRequest(
  ctx: TaskContext,
  provider: LlmProvider,
  prompt: string,
  options: RequestOptions = {},
): CompletionRequest {
  const params = {
    model: modelOf(provider),
    temperature: ctx.suite.params.temperature,
    maxTokens: ctx.suite.params.maxTokens,
  };
  if (options.rawCompletion) return { ...params, prompt, rawCompletion: true };
  const split = splitInstructions(prompt);
  const system = [options.system, split.system].filter((part) => part !== undefined).join('\n\n');
  return { ...params, ...(system ? { system } : {}), prompt: split.prompt };
}

/**
 * One question to a model with one bounded repair pass: the answer is parsed; if it cannot be,
 * the model sees its own answer and the problem once (`repairPrompt`), and the second answer
 * is final. Refusals and truncations are failures of their own kind, not wrong answers.
 */
export async function ask<T>(
  ctx: TaskContext,
  stage: string,
  provider: LlmProvider,
  request: CompletionRequest,
  parse: (text: string) => Parsed<T>,
  repairPrompt: (problem: string) => string,
): Promise<Asked<T>> {
  const first = await ctx.call(stage, provider, request);
  const refusal = refused(first);
  if (refusal) return refusal;
  // The budget went to thinking: a repair with the same budget would end the same way.
  if (first.thinkingExhausted) return thinkingTruncated(stage, first);
  const parsed = parse(first.text);
  if (parsed.ok) return parsed;

  const second = await ctx.call(repairStage(stage), provider, {
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

/** An answer cut off while the model was still thinking, as a truncated answer (no repair). */
function thinkingTruncated(
  stage: string,
  completion: Completion,
): { ok: false; failure: Failure; raw: string } {
  return {
    ok: false,
    failure: {
      kind: 'truncated',
      message: `${stage}: the output budget was spent on thinking before any answer (${completion.usage.output} output tokens); raise params.maxTokens`,
    },
    raw: completion.text,
  };
}

/** Where a stage's repair calls are booked: `classify` → `repair` (the AQUA project's name), else `<stage>.repair`. */
export function repairStage(stage: string): string {
  return stage === 'classify' ? 'repair' : `${stage}.repair`;
}

/** A refusal or content-filter stop as a failed answer; undefined for any other completion. */
export function refused(completion: Completion): { ok: false; failure: Failure; raw: string } | undefined {
  if (completion.finishReason !== 'refusal' && completion.finishReason !== 'content_filter') return undefined;
  return {
    ok: false,
    failure: { kind: 'refusal', message: `the model declined (${completion.finishReason})` },
    raw: completion.text,
  };
}

/** A failed `ask` as a failed solve. */
export function failedSolve(
  asked: { failure: Failure; raw?: string },
  details?: Record<string, unknown>,
): Solved<never> {
  return { ok: false, failure: asked.failure, raw: asked.raw, ...(details ? { details } : {}) };
}
