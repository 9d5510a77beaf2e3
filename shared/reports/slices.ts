/**
 * Slices: the primary scorer's metrics for each value of a dataset column the suite names in
 * `slices` (`"slices": ["subset", "lang"]`), computed by the same functions and bootstrap
 * settings as the whole run's, over the slice's rows in report order.
 *
 * A column keeps at most {@link MAX_SLICE_VALUES} values: the first ones in sort order. The rule
 * does not depend on the order the results come in, so a run tallied in parts keeps the same
 * values as one pass: a value among the first of the whole run is among the first of any part
 * that has it, and its rows, appended part after part, are the rows one pass would give. Items
 * of the values past the bound are counted under `(other)`, without metrics.
 */
import type { Scorer } from '../family/types.js';
import {
  LabelRows,
  type LabelRowsState,
  mergeRows,
  rowsFromState,
  type ScoreRow,
  scorerFigures,
  ValueRows,
  type ValueRowsState,
} from '../lib/metrics/index.js';
import { dict } from '../model/dict.js';
import type { ItemResult, ScoreKind } from '../model/model.js';
import { MAX_SLICE_VALUES, NO_VALUE, OTHER_VALUE, type SliceFigures } from '../model/report.js';

export { MAX_SLICE_VALUES, NO_VALUE, OTHER_VALUE } from '../model/report.js';

/** A result's value of a slice column: the dataset's column, else the suite's input of that name; "" for none. */
export function sliceValue(result: Pick<ItemResult, 'columns' | 'input'>, column: string): string {
  return result.columns?.[column] ?? result.input[column] ?? '';
}

/** The name a value is shown and keyed by: `(none)` for the empty value. */
export function shownValue(value: string): string {
  return value === '' ? NO_VALUE : value;
}

/** One column's tally saved: each kept value's item count and rows, and the items past the bound. */
export interface SliceColumnState {
  values: [value: string, items: number, rows: LabelRowsState | ValueRowsState][];
  other: number;
}

interface Kept {
  items: number;
  rows: LabelRows | ValueRows;
}

/** One slice column: the rows of each kept value (the first {@link MAX_SLICE_VALUES} in sort order). */
class SliceColumn {
  private readonly values = new Map<string, Kept>();
  /** Items whose value is past the bound. */
  private other = 0;

  constructor(
    private readonly kind: ScoreKind,
    state?: SliceColumnState,
  ) {
    if (!state) return;
    for (const [value, items, rows] of state.values)
      this.values.set(value, { items, rows: rowsFromState(rows) });
    this.other = state.other;
  }

  add(value: string, row: ScoreRow): void {
    let kept = this.values.get(value);
    if (!kept) {
      kept = this.keep(value, 1);
      if (!kept) return;
    }
    kept.items += 1;
    kept.rows.add(row);
  }

  /**
   * Makes room for `value` (with `items` items to come): undefined, and its items counted as
   * other, when the column is full of values that sort before it; else its new entry, the last
   * value in sort order given up to make room.
   */
  private keep(value: string, items: number): Kept | undefined {
    if (this.values.size >= MAX_SLICE_VALUES) {
      let last: string | undefined;
      for (const v of this.values.keys()) if (last === undefined || v > last) last = v;
      if (last === undefined || value > last) {
        this.other += items;
        return undefined;
      }
      this.other += this.values.get(last)!.items;
      this.values.delete(last);
    }
    const kept: Kept = { items: 0, rows: this.kind === 'label' ? new LabelRows() : new ValueRows(this.kind) };
    this.values.set(value, kept);
    return kept;
  }

  /** Appends `later`, the same column's tally of the results that come after. */
  merge(later: SliceColumn): void {
    this.other += later.other;
    for (const [value, { items, rows }] of later.values) {
      const kept = this.values.get(value) ?? this.keep(value, items);
      if (!kept) continue;
      kept.items += items;
      mergeRows(kept.rows, rows);
    }
  }

  toState(): SliceColumnState {
    return {
      values: Array.from(this.values, ([value, { items, rows }]) => [value, items, rows.toState()]),
      other: this.other,
    };
  }

  figures(scorer: Pick<Scorer, 'metrics'>): Record<string, SliceFigures> {
    // Keyed by the column's values, which are data: an object without a prototype (see `dict`).
    const out = dict<SliceFigures>();
    const sorted = [...this.values.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const value of sorted) {
      const { items, rows } = this.values.get(value)!;
      out[shownValue(value)] = {
        n: items,
        metrics: scorerFigures(this.kind, rows, scorer.metrics).summary.metrics,
      };
    }
    if (this.other > 0)
      out[OTHER_VALUE] = {
        n: this.other,
        metrics: {},
        note: `items whose value is past the first ${MAX_SLICE_VALUES} values of the column (in sort order): counted, not sliced`,
      };
    return out;
  }
}

/** A {@link SliceTally} saved: each column's, by column. */
export type SliceTallyState = Record<string, SliceColumnState>;

/**
 * The primary scorer's rows split by each slice column's value, fed the same rows as the
 * whole run's tally, in report order; tallies of consecutive parts merge into the whole's.
 */
export class SliceTally {
  private readonly columns = new Map<string, SliceColumn>();

  constructor(columns: readonly string[], kind: ScoreKind, state?: SliceTallyState) {
    for (const column of columns) this.columns.set(column, new SliceColumn(kind, state?.[column]));
  }

  get size(): number {
    return this.columns.size;
  }

  add(result: ItemResult, row: ScoreRow): void {
    for (const [column, tally] of this.columns) tally.add(sliceValue(result, column), row);
  }

  merge(later: SliceTally): void {
    for (const [column, tally] of this.columns) {
      const more = later.columns.get(column);
      if (more) tally.merge(more);
    }
  }

  toState(): SliceTallyState {
    return Object.fromEntries(Array.from(this.columns, ([column, tally]) => [column, tally.toState()]));
  }

  /** report.json `slices`: per column, per value, the item count and the primary scorer's metrics. */
  figures(scorer: Pick<Scorer, 'metrics'>): Record<string, Record<string, SliceFigures>> {
    return Object.fromEntries(Array.from(this.columns, ([column, tally]) => [column, tally.figures(scorer)]));
  }
}
