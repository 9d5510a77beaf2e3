/**
 * A run's possible injections as a running tally: how many items a row's data flagged
 * (`ItemResult.injection`), and the first few by id and row, in report order. It keeps a count
 * and a short list, never the results, and merges part by part like the rest of the report.
 */
import type { ItemResult } from '../model/model.js';
import { INJECTION_LISTED, type InjectionSummary } from '../model/report.js';

export type InjectionTallyState = InjectionSummary;

export class InjectionTally {
  private items = 0;
  private listed: InjectionSummary['listed'] = [];

  /** A tally of no result, or the one `toState` saved (absent in tallies saved before flags were counted). */
  constructor(state?: InjectionTallyState) {
    if (state) {
      this.items = state.items;
      this.listed = [...state.listed];
    }
  }

  add(result: ItemResult): void {
    if (!result.injection?.length) return;
    this.items += 1;
    if (this.listed.length < INJECTION_LISTED) {
      const fields = [...new Set(result.injection.map((sign) => sign.field))];
      this.listed.push({ id: result.itemId, row: result.row, fields });
    }
  }

  /** Appends the tally of the results right after this one's. */
  merge(later: InjectionTally): void {
    this.items += later.items;
    this.listed.push(...later.listed.slice(0, INJECTION_LISTED - this.listed.length));
  }

  toState(): InjectionTallyState {
    return { items: this.items, listed: [...this.listed] };
  }

  /** The report's `injection`, or undefined when no item was flagged. */
  summary(): InjectionSummary | undefined {
    return this.items === 0 ? undefined : this.toState();
  }
}

/** What a run's possible injections are, after the heading report.txt and the page give it. */
export function injectionMessage(summary: InjectionSummary): string {
  const shown = summary.listed.map((item) => `${item.id} (row ${item.row}: ${item.fields.join(', ')})`);
  const more = summary.items - summary.listed.length;
  return `${summary.items} item${summary.items === 1 ? '' : 's'} whose data reads like a verdict or an instruction to the model (check their scores): ${shown.join(', ')}${more > 0 ? `, and ${more} more` : ''}`;
}

/** report.txt's line for a run's possible injections (none when no item was flagged). */
export function injectionLines(summary: InjectionSummary | undefined): string[] {
  return summary ? [`possible injection: ${injectionMessage(summary)}`] : [];
}
