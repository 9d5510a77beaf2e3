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

/** Method-specific facts about one item (sub-scores, the escalation path, votes…), kept as JSON. */
export type ItemDetails = Record<string, unknown>;

export type ScoreOutcome =
  | { status: 'scored'; prediction: string; reason?: string; score?: number; details?: ItemDetails }
  | {
      status: 'failed';
      failure: { kind: FailureKind; message: string };
      raw?: string;
      details?: ItemDetails;
    };

export type ParsedRow = { item: Item } | { error: string; id?: string };

export interface Task {
  readonly name: string;
  /** Prompt role → file path under prompts/ for this suite (method defaults, then suite overrides). */
  promptPaths(suite: Suite): Record<string, string>;
  /** The default role → prompt file map of every method variant (each checked by a test). */
  defaultPromptSets(): Record<string, string>[];
  /**
   * Placeholders each prompt role may use; anything else in a prompt file is a load-time error.
   * A role `family.key` (e.g. `grammar.de`) is looked up as `family`; `null` marks a data file
   * (a corpus) that is versioned like a prompt but is not a template.
   */
  readonly placeholders: Record<string, readonly string[] | null>;
  parseRow(record: Record<string, string>, row: number, suite: Suite): ParsedRow;
  score(item: Item, ctx: ScoreContext): Promise<ScoreOutcome>;
  /** Task-specific metrics for report.json `metrics` (`method`: the method's own figures). */
  metrics(results: ItemResult[], suite: Suite): Record<string, unknown>;
}
