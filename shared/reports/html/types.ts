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
  n: number;
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

export type PageData =
  | { kind: 'run'; report: Record<string, unknown>; items: ItemTable }
  | { kind: 'sweep'; sweep: Record<string, unknown> }
  | { kind: 'comparison'; comparison: Record<string, unknown> }
  | { kind: 'leaderboard'; tables: Record<string, unknown>[] };
