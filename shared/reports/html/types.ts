/**
 * The data an HTML report page embeds (as JSON in the page): what the Node side writes and the
 * browser script reads. Item tables are columnar: one array per column, long repeated strings
 * stored once (see {@link Column}).
 */

/**
 * A column of values: an array, or a dictionary and one code per row (`d[c[i]]`), or the
 * segments of a table written in parts (`s`: the parts' columns, one after another).
 */
export type Column<T> = T[] | { d: T[]; c: number[] } | { s: Column<T>[] };

/**
 * On an item table's `columns` (not enumerable, so JSON never sees it): a column's JSON in
 * pieces, the same text as `JSON.stringify(columns[name])` without building the column's array.
 */
export const COLUMN_JSON: unique symbol = Symbol('column JSON');

/**
 * How an item appears in errors.txt / correct.txt: `failed` (no output), `unscored` (a scorer
 * could not score it), `wrong` or `right` by the primary scorer, `undecided` (no gold to decide).
 */
export type ItemCategory = 'failed' | 'unscored' | 'wrong' | 'right' | 'undecided';

export interface ItemTable {
  /** Rows in the table: the run's first `n` items in report order. */
  n: number;
  /**
   * The run's items. More than `n` when the run is larger than the table's cap: the page says
   * so above the table (labeled.csv and errors.txt have every item).
   */
  total: number;
  /** Characters a text cell keeps; longer texts are cut (the run's files have them whole). */
  textLimit: number;
  inputs: string[];
  scorers: { name: string; kind: string; binaryGold: boolean; threshold: number | null }[];
  primary: string;
  /** The suite's slice columns: each item's value is in the column `slice:<name>` (`(none)` for none). */
  slices?: string[];
  /**
   * Columns by name: `id`, `row`, `status`, `category`, `failure`, `failureMessage`, `gold`,
   * `output`, `cost`, `latency`, `simulated`, `details`, `raw`, `stages`, `input:<name>`, and per
   * scorer `score:<name>` (value or null), `by:<name>` (what decided it), `why:<name>`
   * (explanation or unscored message), `unscored:<name>` (unscored kind or null), `target:<name>`.
   */
  columns: Record<string, Column<string | number | boolean | null>>;
}

/** One key a person presses to give a label on the labelling page. */
export interface LabelChoice {
  /** The label as the gold column takes it (what the exported CSV writes). */
  value: string;
  /** Its digit key (1–9), when it is one of the first nine labels. */
  digit?: string;
  /** Its letter key: the label's first letter, when no other label shares it and it is not u or s. */
  letter?: string;
  /** A word shown beside it (pass or fail for a score against a threshold). */
  hint?: string;
}

/** An item chosen for a person's label, with what the judge said (shown once the person answered). */
export interface LabelPageItem {
  id: string;
  row: number;
  /** Its probability of being chosen for a label (the CSV's `p`, the weight 1/p). */
  p: number;
  /** How unsure the judge was (see label-uncertainty.ts); null when the run showed nothing. */
  uncertainty: number | null;
  signal: string | null;
  /** The item's input fields, in the family's order, as the run kept them. */
  inputs: [string, string][];
  verdict: {
    value: string;
    explanation?: string;
    decidedBy?: string;
    /** The repeats' values, or the judges' votes (`backend: label`), as text. */
    evidence?: string[];
  };
}

/** The labelling page: items chosen from a run for a person's labels (`assay label`). */
export interface LabelPageData {
  runId: string;
  suiteName: string;
  task: string;
  simulated: boolean;
  /** What progress in the browser's storage is saved under: the run and the chosen items. */
  storageKey: string;
  /** The scorer whose verdict is checked, and the labels a person chooses from. */
  scorer: string;
  labels: LabelChoice[];
  /** How the items were chosen: candidates, budget, seed, floor, and the evidence used. */
  selection: {
    candidates: number;
    budget: number;
    seed: number;
    floor: number;
    /** Items per kind of evidence; empty when the run had none (uniform sampling). */
    signals: Record<string, number>;
    uniform: boolean;
    note: string;
  };
  items: LabelPageItem[];
  /** The prompts the judge was given (its rubric first), as the run saw them: what a person labels by. */
  rubric?: { path: string; text: string }[];
}

export type PageData =
  | { kind: 'label'; label: LabelPageData }
  | { kind: 'run'; report: Record<string, unknown>; items: ItemTable }
  | { kind: 'sweep'; sweep: Record<string, unknown> }
  | { kind: 'comparison'; comparison: Record<string, unknown> }
  | { kind: 'leaderboard'; tables: Record<string, unknown>[] };
