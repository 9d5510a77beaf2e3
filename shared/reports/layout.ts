import type { AnyTaskFamily, Scorer } from '../family/types.js';
import type { ScoreRow } from '../lib/metrics/index.js';
import type { ItemResult } from '../model/model.js';
import type { ResultSource } from '../model/report-order.js';

/** The gold target a scorer compares a result with (from the result's gold and input). */
export function targetReader(scorer: Pick<Scorer, 'target'>): (result: ItemResult) => ScoreRow['target'] {
  return (result) =>
    scorer.target?.({ id: result.itemId, row: result.row, input: result.input, gold: result.gold });
}

/** A {@link FileLayout} saved: the input columns met so far, and what each number scorer's gold looked like. */
export interface FileLayoutState {
  usable: string[];
  any: string[];
  /** Every input column met, invalid rows' included (the HTML item table shows them all). */
  all: string[];
  anyUsable: boolean;
  /** The dataset's other columns results kept (`ItemResult.columns`), in first-seen order. */
  kept?: string[];
  numbers: { name: string; seen: boolean; binary: boolean }[];
}

/**
 * What the item files need to know of the whole run before their first line, gathered one
 * result at a time: the input columns (first-seen order; invalid rows' raw records only if
 * nothing else) and, per number scorer, whether its gold is a binary label (see `binaryTargets`).
 * A run tallied in parts merges the parts' layouts in order (see `merge`).
 */
export class FileLayout {
  private readonly usable = new Set<string>();
  /** The invalid rows' columns, met before the first usable result (none are gathered after it). */
  private readonly any = new Set<string>();
  /** Every input column met, in first-seen order, invalid rows' included. */
  private readonly all = new Set<string>();
  private anyUsable = false;
  /** The dataset's other columns the results keep, in first-seen order. */
  private readonly kept = new Set<string>();
  private readonly numbers: {
    name: string;
    target: ReturnType<typeof targetReader>;
    seen: boolean;
    binary: boolean;
  }[];

  /** `family` and `suite` name the number scorers; without them, only the input columns are gathered. */
  constructor(family?: AnyTaskFamily, suite?: Parameters<AnyTaskFamily['scorers']>[0]) {
    this.numbers = Object.entries(family && suite ? family.scorers(suite) : {})
      .filter(([, scorer]) => scorer.kind === 'number')
      .map(([name, scorer]) => ({ name, target: targetReader(scorer), seen: false, binary: true }));
  }

  /** The layout of results read from a source (when the report was built without one). */
  static async of(
    family: AnyTaskFamily,
    suite: Parameters<AnyTaskFamily['scorers']>[0],
    results: ResultSource,
  ): Promise<FileLayout> {
    const layout = new FileLayout(family, suite);
    for await (const result of results()) layout.add(result);
    return layout;
  }

  add(result: ItemResult): void {
    const keys = Object.keys(result.input);
    for (const key of keys) this.all.add(key);
    if (result.columns) for (const key of Object.keys(result.columns)) this.kept.add(key);
    if (result.failure?.kind !== 'invalid_row') {
      this.anyUsable = true;
      for (const key of keys) this.usable.add(key);
    } else if (!this.anyUsable) for (const key of keys) this.any.add(key);
    for (const scorer of this.numbers) {
      const target = scorer.target(result);
      if (typeof target !== 'number') continue;
      scorer.seen = true;
      if (target !== 0 && target !== 1) scorer.binary = false;
    }
  }

  /**
   * Appends `later`, the layout of the results that come after this one's (the same family and
   * suite): the columns keep their first-seen order over both, as one pass gives it.
   */
  merge(later: FileLayout): void {
    for (const key of later.usable) this.usable.add(key);
    for (const key of later.all) this.all.add(key);
    for (const key of later.kept) this.kept.add(key);
    // Invalid rows' columns count only until a usable result: `later`'s, only if this part has none.
    if (!this.anyUsable) for (const key of later.any) this.any.add(key);
    this.anyUsable ||= later.anyUsable;
    for (const scorer of this.numbers) {
      const other = later.numbers.find((s) => s.name === scorer.name);
      if (!other) continue;
      scorer.seen ||= other.seen;
      scorer.binary &&= other.binary;
    }
  }

  inputColumns(): string[] {
    return [...(this.anyUsable ? this.usable : this.any)];
  }

  /** Every input column met, invalid rows' included, in first-seen order. */
  allInputColumns(): string[] {
    return [...this.all];
  }

  /** The dataset's other columns the results keep (`ItemResult.columns`), in first-seen order. */
  keptColumns(): string[] {
    return [...this.kept];
  }

  /** Whether a number scorer's gold is a binary label (false for other kinds). */
  binary(name: string): boolean {
    return this.numbers.some((s) => s.name === name && s.seen && s.binary);
  }

  toState(): FileLayoutState {
    return {
      usable: [...this.usable],
      any: [...this.any],
      all: [...this.all],
      anyUsable: this.anyUsable,
      ...(this.kept.size > 0 ? { kept: [...this.kept] } : {}),
      numbers: this.numbers.map(({ name, seen, binary }) => ({ name, seen, binary })),
    };
  }

  static fromState(
    family: AnyTaskFamily | undefined,
    suite: Parameters<AnyTaskFamily['scorers']>[0] | undefined,
    state: FileLayoutState,
  ): FileLayout {
    const layout = new FileLayout(family, suite);
    for (const key of state.usable) layout.usable.add(key);
    for (const key of state.any) layout.any.add(key);
    for (const key of state.all) layout.all.add(key);
    for (const key of state.kept ?? []) layout.kept.add(key);
    layout.anyUsable = state.anyUsable;
    for (const scorer of layout.numbers) {
      const saved = state.numbers.find((s) => s.name === scorer.name);
      if (saved) Object.assign(scorer, { seen: saved.seen, binary: saved.binary });
    }
    return layout;
  }
}
