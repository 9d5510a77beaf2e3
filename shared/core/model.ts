import type { TokenUsage } from '../providers/types.js';
import type { Suite } from './suite.js';

/** One usable dataset row, as a task sees it. */
export interface Item {
  /** Stable id: the dataset's `id`/`idx` column, else a content hash. */
  id: string;
  /** 1-based data row number in the file (header excluded), for error messages. */
  row: number;
  /** Task input fields after column mapping (GEC: src, tgt, aligned?, lang?). */
  input: Record<string, string>;
  /** Gold label or reference answer, already validated against the task's label set. */
  gold?: string;
}

/** A dataset row that cannot be used: it becomes a failed result, never vanishes. */
export interface InvalidRow {
  row: number;
  id?: string;
  reason: string;
}

/** Why an item failed. `invalid_row` rows never reached a provider. */
export type FailureKind =
  | 'invalid_row'
  | 'parse' // the answer could not be parsed even after one repair pass
  | 'refusal'
  | 'truncated'
  | 'step_limit' // the agent used its steps and the extra turn without a Final Answer
  | 'provider' // permanent provider error, or transient ones that exhausted retries
  | 'dead_letter' // the message exhausted its receives on the queue
  | 'budget' // the run's budget stopped it before this item was scored
  | 'internal';

/** Per stage (e.g. `classify`, `repair`) spend of one item. */
export interface StageSpend {
  calls: number;
  cachedCalls: number;
  /** What the cache hits would have cost: the price paid when each answer was first bought. */
  savedUsd?: number;
  costUsd: number;
  latencyMs: number;
  usage: TokenUsage;
}

/** Exactly one per dataset item per run. */
export interface ItemResult {
  runId: string;
  itemId: string;
  row: number;
  status: 'scored' | 'failed';
  gold?: string;
  /** The predicted label (classification tasks); `Error` when the item failed after calls. */
  prediction?: string;
  /** Numeric score (graders), if the task has one. */
  score?: number;
  /** The judge's reason, or the failure reason. */
  reason?: string;
  failure?: { kind: FailureKind; message: string };
  /** Prompt file path → content hash of the prompts the run judged with. */
  prompts?: Record<string, string>;
  /** Method-specific facts (sub-scores, escalation path, votes…), for reports and offline re-fusion. */
  details?: Record<string, unknown>;
  /** Raw model text, kept when parsing failed. */
  raw?: string;
  /** Input fields echoed for labeled.csv / errors.txt. */
  input: Record<string, string>;
  stages: Record<string, StageSpend>;
  simulated: boolean;
  finishedAt: string;
}

export type RunStatus = 'ingesting' | 'running' | 'aggregating' | 'done' | 'failed';

export interface RunRecord {
  runId: string;
  suiteName: string;
  /** The validated suite as the run saw it. */
  suite: Suite;
  /** Prompt file path → content (the run's snapshot; workers never read prompts elsewhere). */
  prompts: Record<string, PromptSnapshot>;
  status: RunStatus;
  /** Items in the dataset (valid + invalid); undefined until ingest has read the whole dataset. */
  total?: number;
  invalidRows: number;
  startedAt: string;
  finishedAt?: string;
  /** Where the report files go, relative to the report BlobStore. */
  reportPrefix: string;
  /** Dataset location (for the report and for re-runs). */
  datasetKey: string;
  /** Which upload (or file content) of the dataset the run read: a re-evaluation reads the same. */
  datasetVersion?: string;
  simulated: boolean;
}

export interface PromptSnapshot {
  hash: string;
  text: string;
}

export interface RunCounters {
  done: number;
  failed: number;
  total?: number;
}

/** What travels on the items queue: one item of one run. */
export interface ItemMessage {
  runId: string;
  item: Item;
}
