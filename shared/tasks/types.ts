import type { FailureKind, Item, ItemResult, PromptSnapshot } from '../core/model.js';
import type { Suite } from '../core/suite.js';
import type { Completion, CompletionRequest, LlmProvider } from '../providers/types.js';

/** What a task may do while scoring one item: call models (cached, retried, costed) by stage. */
export interface ScoreContext {
  suite: Suite;
  prompts: Record<string, PromptSnapshot>;
  /** The suite's backends, resolved, in suite order. */
  backends: LlmProvider[];
  /** Calls a model; spend is booked to `stage` of the current item. */
  call(stage: string, provider: LlmProvider, request: CompletionRequest): Promise<Completion>;
}

export type ScoreOutcome =
  | { status: 'scored'; prediction: string; reason?: string; score?: number }
  | { status: 'failed'; failure: { kind: FailureKind; message: string }; raw?: string };

export type ParsedRow = { item: Item } | { error: string; id?: string };

export interface Task {
  readonly name: string;
  /** Prompt role → file path under prompts/ for this suite (method defaults, then suite overrides). */
  promptPaths(suite: Suite): Record<string, string>;
  /** Every prompt path any method of this task can use by default (checked at load). */
  defaultPromptPaths(): string[];
  /** Placeholders each prompt role may use; anything else in a prompt file is a load-time error. */
  readonly placeholders: Record<string, readonly string[]>;
  parseRow(record: Record<string, string>, row: number, suite: Suite): ParsedRow;
  score(item: Item, ctx: ScoreContext): Promise<ScoreOutcome>;
  /** Task-specific metrics for report.json `metrics`. */
  metrics(results: ItemResult[]): Record<string, unknown>;
}
