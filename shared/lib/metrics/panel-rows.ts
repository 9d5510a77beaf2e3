/**
 * The rows a judge panel's figures are computed from, gathered one item at a time and
 * mergeable: a run tallied in parts gives the figures one pass gives. Each item keeps its gold
 * and each judge's label as codes into one table of labels (a judge's column holds code + 1,
 * 0 when it gave no label); a judge first seen after some items has no label on those. The
 * figures are those of {@link panelAgreement} over the items in order, so the bootstrap
 * intervals are the same.
 */
import type { PanelSummary } from '../../model/report.js';
import { type PanelItem, type PanelLabel, panelAgreement } from './panel.js';
import { codeOf, type NumberArray, NumberColumn } from './stats.js';

/** {@link PanelRows} saved. */
export interface PanelRowsState {
  source: string;
  labels: string[];
  judges: string[];
  gold: NumberArray;
  /** Per judge, in `judges` order: each item's label code + 1, 0 for none. */
  votes: NumberArray[];
}

const NONE = 0;

export class PanelRows {
  private readonly labels: string[] = [];
  private readonly codes = new Map<string, number>();
  private readonly judges: string[] = [];
  private gold = new NumberColumn();
  private votes: NumberColumn[] = [];

  /** @param source Where the judges come from (`ensemble backends`), shown with the figures. */
  constructor(readonly source: string) {}

  get items(): number {
    return this.gold.length;
  }

  /** The next item: its gold, and each judge's label (undefined or null: none). */
  add(gold: string, labels: Readonly<Record<string, PanelLabel>>): void {
    for (const judge of Object.keys(labels)) this.column(judge);
    this.gold.push(codeOf(this.labels, this.codes, gold));
    this.judges.forEach((judge, j) => {
      const label = Object.hasOwn(labels, judge) ? labels[judge] : undefined;
      this.votes[j]!.push(
        label === undefined || label === null ? NONE : codeOf(this.labels, this.codes, String(label)) + 1,
      );
    });
  }

  /** Appends `later`, the rows of the items right after this one's; its codes and judges are mapped into these. */
  merge(later: PanelRows): void {
    const before = this.items;
    const codes = later.labels.map((label) => codeOf(this.labels, this.codes, label));
    for (const judge of later.judges) this.column(judge);
    for (const code of later.gold.values()) this.gold.push(codes[code]!);
    this.judges.forEach((judge, j) => {
      const from = later.judges.indexOf(judge);
      const column = this.votes[j]!;
      if (from < 0) {
        for (let i = 0; i < later.items; i += 1) column.push(NONE);
        return;
      }
      for (const vote of later.votes[from]!.values())
        column.push(vote === NONE ? NONE : codes[vote - 1]! + 1);
    });
    if (this.gold.length !== before + later.items) throw new RangeError('PanelRows: merge lost items');
  }

  toState(): PanelRowsState {
    return {
      source: this.source,
      labels: [...this.labels],
      judges: [...this.judges],
      gold: this.gold.toState(),
      votes: this.votes.map((column) => column.toState()),
    };
  }

  static fromState(state: PanelRowsState): PanelRows {
    const rows = new PanelRows(state.source);
    for (const label of state.labels) codeOf(rows.labels, rows.codes, label);
    rows.judges.push(...state.judges);
    rows.gold = NumberColumn.fromState(state.gold);
    rows.votes = state.votes.map((column) => NumberColumn.fromState(column));
    return rows;
  }

  /** The items as {@link panelAgreement} reads them. */
  panelItems(): PanelItem[] {
    const gold = this.gold.values();
    const votes = this.votes.map((column) => column.values());
    return Array.from(gold, (code, i) => {
      const labels: Record<string, PanelLabel> = Object.create(null);
      this.judges.forEach((judge, j) => {
        const vote = votes[j]![i]!;
        if (vote !== NONE) labels[judge] = this.labels[vote - 1]!;
      });
      return { gold: this.labels[code]!, labels };
    });
  }

  /** report.json `panel`; null without two judges or without an item. */
  figures(): PanelSummary | null {
    if (this.judges.length < 2 || this.items === 0) return null;
    return { source: this.source, ...panelAgreement(this.panelItems(), { judges: this.judges }) };
  }

  /** A judge's column, made (with no label on the items so far) the first time it is seen. */
  private column(judge: string): NumberColumn {
    let j = this.judges.indexOf(judge);
    if (j < 0) {
      j = this.judges.push(judge) - 1;
      const column = new NumberColumn();
      for (let i = 0; i < this.gold.length; i += 1) column.push(NONE);
      this.votes.push(column);
    }
    return this.votes[j]!;
  }
}
