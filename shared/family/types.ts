/**
 * The task family interface: the unit of extension. A family lives in `tasks/<name>/` and is
 * one line in `registry/registry.ts`; nothing below the registry imports a family. Modelled on inspect_ai's
 * Task / Solver / Scorer split: a family maps rows to items, `solve`s an item (the model calls
 * that produce the output under evaluation) and names the scorers that turn output + target
 * into a {@link Score}; metrics follow each scorer's kind.
 */
import type { z } from 'zod';
import type { EncoderKind, NliPair } from '../lib/encoders/types.js';
import type { ScorerMetricOptions } from '../lib/metrics/scores.js';
import type { TemplateFormat } from '../lib/prompts/prompts.js';
import type {
  Failure,
  Item,
  ItemResult,
  PromptSnapshot,
  Score,
  ScoreKind,
  ScoreValue,
} from '../model/model.js';
import type { Completion, CompletionRequest, LlmProvider, SimHint } from '../model/provider.js';
import type { PanelSummary, Report } from '../model/report.js';
import type { BaseSuite } from '../model/suite-base.js';

/** What a family may do while solving or scoring one item: render its prompts and call models. */
export interface TaskContext<S extends BaseSuite = BaseSuite> {
  suite: S;
  /** The run's prompt snapshot (path → text). */
  prompts: Record<string, PromptSnapshot>;
  /** Prompt role → path for this suite. */
  paths: Record<string, string>;
  /** The suite's backends, resolved, in suite order. */
  backends: LlmProvider[];
  /**
   * A role's template with `vars` filled; data placeholders are escaped and cleared of the
   * template format's markers (see `renderPrompt`); `format`: the format the family sends the
   * prompt in, when the template's own text may not show it.
   */
  render(role: string, vars: Record<string, string>, format?: TemplateFormat): string;
  /** Calls a model (cached, retried, costed, within the run's budget); spend is booked to `stage`. */
  call(stage: string, provider: LlmProvider, request: CompletionRequest): Promise<Completion>;
  /** Embeds texts with the embedder `id` (`openai:…`, `gemini:…`, `onnx:…`, `sim:embed`); spend booked to `stage`. */
  embed(stage: string, id: string, texts: readonly string[]): Promise<number[][]>;
  /** The NLI model `id`'s probability that each premise contradicts its hypothesis; spend booked to `stage`. */
  contradiction(stage: string, id: string, pairs: readonly NliPair[]): Promise<number[]>;
}

/** What solving one item gave: an output to score, or why there is none. */
export type Solved<O> =
  | { ok: true; output: O; details?: Record<string, unknown> }
  | { ok: false; failure: Failure; raw?: string; details?: Record<string, unknown> };

export interface Scorer<O = unknown, S extends BaseSuite = BaseSuite> {
  readonly kind: ScoreKind;
  readonly description: string;
  /** The item's verdict: a value of `kind`, or unscored with a reason. May call models through ctx. */
  score(output: O, item: Item, ctx: TaskContext<S>): Score | Promise<Score>;
  /** The gold value the score is compared with, typed for the kind; undefined when the item has none. */
  target?(item: Item): ScoreValue | undefined;
  /** Label order, positive labels, pass threshold… for this scorer's metrics. */
  readonly metrics?: ScorerMetricOptions;
}

/** A prompt role of a family: the placeholders its template may use. */
export interface PromptRole {
  /**
   * Placeholders the template may use; `columns`: any dataset column (each is data); null: a
   * data file (a corpus) versioned like a prompt but not a template.
   */
  placeholders: readonly string[] | 'columns' | null;
  /**
   * Placeholders that carry untrusted text (dataset fields, model answers): escaped when
   * rendered, and each must sit alone in a tag section (`<original>{src}</original>`).
   */
  data?: readonly string[];
}

/**
 * A row as the family reads it: an item, or why it is not one, with its id when it has one and
 * its gold as the row gives it (kept in its failed result, so a report shows what it held).
 */
export type ParsedRow = { item: Item } | { error: string; id?: string; gold?: string };

/** Extra report.json figures and report.txt lines of a family (GEC: the method's own figures). */
export interface ReportSection {
  /** Merged into report.json `metrics`. */
  metrics?: Record<string, unknown>;
  /** report.json `panel`: the family's judges labelled each item (an ensemble's backends). */
  panel?: PanelSummary;
}

/**
 * A family's own figures as a running tally, fed a run's results one at a time in report order
 * (a run may hold millions: keep counts, sums and typed columns, never the results). A large
 * run is tallied in parts, each a stretch of consecutive results: each part's tally is saved
 * (`toState`), loaded back (the family's `reportTally(suite, state)`) and merged in order, and
 * the merged tally's section must be the one a single tally over every result gives.
 */
export interface FamilyReportTally {
  add(result: ItemResult): void;
  /** Appends `later`: a tally (of the same suite) of the results that come right after this one's. */
  merge(later: this): void;
  /** The whole state as plain data (objects, arrays, typed arrays): it is saved with the report's. */
  toState(): unknown;
  /** The figures, merged into the report. */
  section(): ReportSection | Promise<ReportSection>;
}

export interface TaskFamily<S extends BaseSuite = BaseSuite, O = unknown> {
  readonly name: string;
  readonly description: string;
  /** The family's suite block (beside the common keys) and its dataset column roles. */
  readonly suite: {
    shape: z.ZodRawShape;
    columns?: z.ZodRawShape;
    /** Cross-field checks; `issue` reports one problem at a path of the suite. */
    check?(suite: S, issue: (path: (string | number)[], message: string) => void): void;
    /** What `assay score --task <name>` uses when no suite is given; undefined: a suite is needed. */
    scoreDefaults?: Record<string, unknown>;
    /** Columns a predictions file may hold the output in, tried in order (`assay score`). */
    outputColumns?: readonly string[];
    /** Columns the gold is read from when the suite maps none, tried in order (`assay score` never takes it as the output). */
    goldColumns?: readonly string[];
    /** The gold is a rating on a number scale: several annotators' ratings are averaged by default (`dataset.goldAggregate`). */
    numericGold?(suite: S): boolean;
    /**
     * Roles whose column may hold an object or an array (a JSON, JSONL or Parquet row), which
     * the family reads as its JSON text. Any other column that holds one makes its row invalid.
     */
    jsonColumns?: readonly string[];
    /** The prompt's placeholders are dataset columns: `dataset.columns` may map each to the column it reads. */
    placeholderColumns?: boolean;
    /**
     * `dataset.columns.output` may name several columns, one output given in parts (a pairwise
     * judge's verdicts in both orders); the item carries each one's value (`given.outputs`).
     * The family's `check` says how many it reads.
     */
    severalOutputs?: boolean;
  };
  /** Short facts for report headers (GEC: judge and method). */
  config(suite: S): Record<string, string>;
  readonly roles: Record<string, PromptRole>;
  /** Prompt role → file path under prompts/ for this suite (family defaults, then suite overrides). */
  promptPaths(suite: S): Record<string, string>;
  /** The default role → file maps of every variant of the family (each checked by a test). */
  defaultPromptSets(): Record<string, string>[];
  /**
   * A dataset record as an item, or why it cannot be one (an invalid row, with the reason).
   * `prompts` is the run's snapshot, for families whose prompts name the columns they read.
   */
  parseRow(
    record: Record<string, string>,
    row: number,
    suite: S,
    prompts: Record<string, PromptSnapshot>,
  ): ParsedRow;
  /** The model calls that produce the output under evaluation. */
  solve(item: Item, ctx: TaskContext<S>): Promise<Solved<O>>;
  /**
   * A pre-generated output from the dataset (`dataset.columns.output`), instead of solving.
   * `sample` is the repeat being scored (1…k with `run.repeats`): an output that records several
   * repeats gives each its own.
   */
  readOutput(given: NonNullable<Item['given']>, item: Item, suite: S, sample?: number): Solved<O>;
  /** The scorers, by name; `primaryScorer` names the one whose figures are report.json `metrics`. */
  scorers(suite: S): Record<string, Scorer<O, S>>;
  primaryScorer(suite: S): string;
  /** What the simulator answers to a request this family made (`request.simulation`). */
  simulate(hint: SimHint, rng: () => number, noise: number): string;
  /**
   * What labeled.csv's `output` column and errors.txt show of an output; undefined: nothing
   * beyond the scores. Default: the output as text (JSON for objects).
   */
  outputText?(output: O): string | undefined;
  /**
   * The length in characters of the text under evaluation (the answer, summary or cleaned
   * text, or the judged column), which the report sets against each scorer's scores (report.json
   * `scores.<scorer>.bias.length`). `input` is the result's stored input (a long field is kept
   * cut: read its length with `storedFieldLength`). Absent or undefined: no length figures.
   */
  outputLength?(output: O, input: Record<string, string>): number | undefined;
  /** Formats of the family's own (cleanup: decision spans, heuristics fixtures), published as `schemas/<family>.<name>.schema.json`. */
  readonly schemas?: Record<string, z.ZodType>;
  /**
   * The embedders and NLI models the suite's scorers run (beside its LLM backends): each shell
   * builds them before the first item, so a missing key or model folder fails early.
   */
  encoders?(suite: S): { kind: EncoderKind; id: string }[];
  /**
   * The family's suite block (`suite[name]`, as written) under `--simulate`: every model it
   * names beyond `backends` replaced by its simulator.
   */
  simulateBlock?(block: Record<string, unknown>): Record<string, unknown>;
  /** The promotion gate a sweep of this family uses when its suite declares none. */
  defaultGate?(suite: S): { conditions: string[]; required: boolean | string[] };
  /**
   * Family figures beyond the scorers': a tally of no result, or the one a tally's `toState`
   * saved when `state` is given. Undefined: the suite has no figures of its own.
   */
  reportTally?(suite: S, state?: unknown): FamilyReportTally | undefined;
  /** report.txt lines for those figures. */
  reportText?(report: Report): string[];
}

/** A family as the registry holds it: its suite type erased to the common keys. */
export type AnyTaskFamily = TaskFamily<BaseSuite, unknown>;

/**
 * Registers a family: the one place its suite type is widened. Core code only ever hands a
 * family suites that passed that family's schema (the suite union is discriminated on `task`).
 */
export function defineFamily<S extends BaseSuite, O>(family: TaskFamily<S, O>): AnyTaskFamily {
  return family as unknown as AnyTaskFamily;
}
