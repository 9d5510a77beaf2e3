import { createHash } from 'node:crypto';
import type { TokenUsage } from './provider.js';
import { storedFields } from './stored-text.js';
import type { BaseSuite as Suite } from './suite-base.js';

/** One usable dataset row, as a task family sees it. */
export interface Item {
  /** Stable id: the dataset's `id`/`idx` column, else a content hash. */
  id: string;
  /** 1-based data row number in the file (header excluded), for error messages. */
  row: number;
  /** Task input fields after column mapping (GEC: src, tgt, aligned?, lang). */
  input: Record<string, string>;
  /** Gold label or reference value, already validated by the family. */
  gold?: string;
  /**
   * A pre-generated output from the dataset (`dataset.columns.output`): the family reads it
   * instead of solving, and only the scorers run. `output` is undefined when the row has none.
   * When the suite names several output columns, `outputs` holds each one's value in the
   * suite's order ("" where the row has none) and `output` the first.
   */
  given?: { output?: string; outputs?: string[]; explanation?: string };
  /** The row's columns the suite names for no role, as read (see {@link ItemResult.columns}). */
  columns?: Record<string, string>;
  /** Several annotators' gold labels, in order (see {@link ItemResult.annotations}). */
  annotations?: string[];
}

/** A dataset row that cannot be used: it becomes a failed result, never vanishes. */
export interface InvalidRow {
  row: number;
  id?: string;
  reason: string;
}

/** Why an item (or one of its scores) has no value. `invalid_row` rows never reached a provider. */
export const FAILURE_KINDS = [
  'invalid_row',
  'no_output', // the dataset gives outputs, and this row has none
  'parse', // the answer could not be parsed even after one repair pass
  'refusal',
  'truncated',
  'step_limit', // the agent used its steps and the extra turn without a Final Answer
  'inconsistent', // a pairwise judge's verdict changed when the answers were swapped (and the suite fails such items)
  'provider', // permanent provider error, or transient ones that exhausted retries
  'dead_letter', // the message exhausted its receives on the queue
  'budget', // the run's budget stopped it before this item was scored
  'stopped', // the run was stopped (`assay cloud stop`, or an upload over a deploy limit) before this item was scored: no model was called
  'gate_settled', // a sequential gate settled the variant's verdict before this item's turn: no model was called
  'not_applicable', // a check that does not apply to this item (its `when` column is blank): nothing to count, and no failure
  'storage', // the result is larger than a stored result may be, even with its long texts cut (see result-size.ts)
  'internal',
] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

export interface Failure {
  kind: FailureKind;
  message: string;
}

/** What a score's value is: a label (string), a number, or a pass (boolean). Metrics follow the kind. */
export const SCORE_KINDS = ['label', 'number', 'pass'] as const;
export type ScoreKind = (typeof SCORE_KINDS)[number];
export type ScoreValue = string | number | boolean;

interface ScoreFacts {
  /** Why: the judge's reason, the grader's reasoning. */
  explanation?: string;
  /** What decided the value: a rule (`fast-path`, `meaning ≥ 3 → FP1`) or the backend that judged. */
  decidedBy?: string;
  /** What the scorer found beyond the value (a harsh judge's errors, omissions and hedging), as JSON. */
  details?: Record<string, unknown>;
  /**
   * A run with `run.repeats` k > 1: each repeat's value in repeat order (null: that repeat has
   * none). The value is their majority (labels, passes) or mean (numbers).
   */
  repeats?: (ScoreValue | null)[];
  /** The repeats' most frequent values tied: the value is the tied one the earliest repeat gave. */
  tie?: boolean;
}

/**
 * One scorer's verdict on one item. A scored value has the scorer's kind; an unscored one says
 * why (parse, refusal, provider…): metrics skip it and count it, never as a wrong answer.
 */
export type Score =
  | (ScoreFacts & { kind: 'label'; value: string })
  | (ScoreFacts & { kind: 'number'; value: number })
  | (ScoreFacts & { kind: 'pass'; value: boolean })
  | (ScoreFacts & { kind: ScoreKind; value?: undefined; unscored: Failure });

export type ScoredScore = Exclude<Score, { unscored: Failure }>;

export function isScored(score: Score | undefined): score is ScoredScore {
  return score !== undefined && !('unscored' in score);
}

/** Per stage (e.g. `classify`, `repair`) spend of one item. */
export interface StageSpend {
  calls: number;
  cachedCalls: number;
  /** What the cache hits would have cost: the price paid when each answer was first bought. */
  savedUsd?: number;
  /** Calls answered by a vendor batch (billed at the batch discount). */
  batchCalls?: number;
  /** What the batch discount took off those calls' synchronous price. */
  batchSavedUsd?: number;
  costUsd: number;
  /**
   * The models whose calls in this stage had no price (their cost is unknown, not 0): absent
   * when every call was priced (results written before this field existed were).
   */
  unpriced?: string[];
  latencyMs: number;
  usage: TokenUsage;
}

/** The version of stored results and run records; older ones are upgraded when read (see codec.ts). */
export const RESULT_SCHEMA_VERSION = 2;

/** Exactly one per dataset item per run. */
export interface ItemResult {
  schemaVersion: typeof RESULT_SCHEMA_VERSION;
  runId: string;
  itemId: string;
  row: number;
  /** `failed`: the item has no output (invalid row, solve failed, dead letter, budget); its scores are all unscored. */
  status: 'scored' | 'failed';
  gold?: string;
  /** Input fields echoed for labeled.csv / errors.txt. */
  input: Record<string, string>;
  /**
   * The dataset's other columns (those the suite does not name as inputs, gold or outputs), as
   * read: they travel with the item into results.jsonl and labeled.csv, and slice the report
   * (`slices`). Absent when the row has none.
   */
  columns?: Record<string, string>;
  /**
   * Several annotators' gold labels, in the order the suite names them, when the gold is given
   * by several (`columns.gold` a list, or a path ending in `*`); `gold` is their majority. An
   * annotator who left the row blank is an empty string.
   */
  annotations?: string[];
  /**
   * What the item was when it was scored: the digest of its input and gold ({@link inputDigest}).
   * A comparison pairs two runs' results of an item only when their digests agree. Absent from
   * results written before it was kept: it is worked out from their input and gold then.
   */
  inputDigest?: string;
  /** What the solve step produced (or the dataset gave), as JSON. */
  output?: unknown;
  /**
   * Scorer name → score. A scorer missing here is unscored for the result's failure (see
   * {@link scoreOf}), so failed results need not list every scorer.
   */
  scores: Record<string, Score>;
  failure?: Failure;
  /** Prompt file path → content hash of the prompts the run judged with. */
  prompts?: Record<string, string>;
  /** Family-specific facts (sub-scores, escalation path, votes…), for reports and offline re-fusion. */
  details?: Record<string, unknown>;
  /** Raw model text, kept when parsing failed. */
  raw?: string;
  /**
   * Signs that a data field of the row may try to steer the model (a verdict in the answer's
   * format, an instruction to the judge): the item is shown as a possible injection, whatever
   * its status. Absent when the row shows none.
   */
  injection?: InjectionSign[];
  stages: Record<string, StageSpend>;
  simulated: boolean;
  finishedAt: string;
  /**
   * Which part of the run the item came in (see {@link ItemMessage.part}); absent for part 0,
   * which is every item of a run ingested in one piece.
   */
  part?: number;
}

/** One sign of a possible injection: the input field it is in and what it looks like. */
export interface InjectionSign {
  field: string;
  /** `answer format`: a JSON verdict key; `verdict`: a verdict line or `ANSWER_WITH:`; `instruction`: words to the judge. */
  sign: 'answer format' | 'verdict' | 'instruction';
}

/**
 * A stored input field's length in characters: the whole text's for a field the result keeps
 * cut (`storedFields` keeps a long field as its opening, then `… [cut: <n> characters in all,
 * sha256:<digest>]`), else the field's own.
 */
export function storedFieldLength(value: string): number {
  const cut = /… \[cut: (\d+) characters in all, sha256:[0-9a-f]{16}\]$/.exec(value);
  return cut ? Number(cut[1]) : value.length;
}

/**
 * A digest of an item's content as its result keeps it: the input fields (a long field as the
 * result stores it, cut with the whole text's length and sha256) and the gold. Two results of
 * one item id with different digests are of a row edited between the runs, and are not paired.
 */
export function inputDigest(item: { input: Record<string, string>; gold?: string | undefined }): string {
  const fields = Object.keys(item.input)
    .sort()
    .map((key) => [key, item.input[key]]);
  return createHash('sha256')
    .update(JSON.stringify([fields, item.gold ?? null]))
    .digest('hex')
    .slice(0, 16);
}

/** A result's {@link inputDigest}: the one it carries, else worked out from its input and gold. */
export function digestOf(result: Pick<ItemResult, 'input' | 'gold' | 'inputDigest'>): string {
  return result.inputDigest ?? inputDigest(result);
}

/** A result's score for `scorer`; a failed result without one is unscored for its failure. */
export function scoreOf(result: ItemResult, scorer: string, kind: ScoreKind): Score {
  return (
    result.scores[scorer] ?? {
      kind,
      unscored: result.failure ?? { kind: 'internal', message: `no ${scorer} score recorded` },
    }
  );
}

/**
 * What a result spent: its stages' cost, summed in stage-name order so the total is the same
 * to the last bit in either shell, whatever order the stages were booked in.
 */
export function resultCost(result: Pick<ItemResult, 'stages'>): number {
  return Object.keys(result.stages)
    .sort()
    .reduce((total, stage) => total + result.stages[stage]!.costUsd, 0);
}

/** An item's end-to-end model time: every stage's latency summed; undefined when it called no model. */
export function resultLatencyMs(result: Pick<ItemResult, 'stages'>): number | undefined {
  const stages = Object.values(result.stages);
  return stages.length === 0 ? undefined : stages.reduce((total, stage) => total + stage.latencyMs, 0);
}

/** The failed result of an item that never got an output; its input kept as a scored result's is (`storedFields`). */
export function failedResult(
  base: Pick<ItemResult, 'runId' | 'itemId' | 'row' | 'input' | 'part'> & { gold?: string },
  failure: Failure,
  at: Date,
): ItemResult {
  const { part, ...rest } = base;
  const { input } = storedFields(base.input);
  return {
    schemaVersion: RESULT_SCHEMA_VERSION,
    ...rest,
    input,
    inputDigest: inputDigest({ input, gold: base.gold }),
    ...partOf(part),
    status: 'failed',
    failure,
    scores: {},
    stages: {},
    simulated: false,
    finishedAt: at.toISOString(),
  };
}

export type RunStatus = 'ingesting' | 'running' | 'aggregating' | 'done' | 'failed';

export interface RunRecord {
  schemaVersion: typeof RESULT_SCHEMA_VERSION;
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
  /**
   * Where the outputs come from when the dataset gives them instead of a model (`assay score`,
   * a suite mapping `dataset.columns.output`): `predictions from preds.csv (column pred)`.
   */
  predictions?: string;
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
  /** Money spent by the recorded results (what a budget is checked against). */
  spentUsd: number;
}

/** What travels on the items queue: one item of one run. */
export interface ItemMessage {
  runId: string;
  item: Item;
  /**
   * The part of the run the item belongs to: a stretch of the dataset's rows that ingest handed
   * on together (a dataset read in chunks has a part per chunk). The run store keeps a part's
   * results together, and a run is complete when every part is. Absent for part 0.
   */
  part?: number;
}

/** `{ part }` for a part other than 0 (part 0 is left out of messages and results). */
export function partOf(part: number | undefined): { part?: number } {
  return part ? { part } : {};
}
