/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * A virtualised table: only the rows in view (and a few either side) are in the document, so
 * 100,000 rows scroll as smoothly as 100. Rows have one fixed height; the rows shown are
 * `order` (indices into the data), which filters and sorts replace.
 */
import { h } from './dom.js';

export const ROW_HEIGHT = 28;
const OVERSCAN = 8;

export interface VirtualColumn {
  label: string;
  /** CSS grid track, e.g. `80px` or `minmax(120px, 2fr)`. */
  width: string;
  /** The cell of data row `i`. */
  cell(i: number): string | Node;
  /** What the column sorts by, when it sorts. */
  sortKey?: (i: number) => number | string | null;
}

export class VirtualTable {
  readonly element: HTMLElement;
  private readonly viewport: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly header: HTMLElement;
  private order: Uint32Array;
  private sortColumn = -1;
  private sortDescending = false;
  private pending = false;
  private readonly template: string;

  constructor(
    private readonly columns: VirtualColumn[],
    order: Uint32Array,
    private readonly onOpen: (i: number) => void,
    private readonly onSort?: () => void,
    height = 520,
  ) {
    this.order = order;
    this.template = columns.map((c) => c.width).join(' ');
    this.header = h(
      'div',
      { class: 'vt-row vt-head', role: 'row', style: { gridTemplateColumns: this.template } },
      columns.map((c, k) =>
        h(
          'div',
          {
            class: `vt-cell${c.sortKey ? ' sortable' : ''}`,
            role: 'columnheader',
            title: c.sortKey ? 'sort' : null,
            onclick: c.sortKey ? () => this.sortBy(k) : null,
          },
          c.label,
        ),
      ),
    );
    this.spacer = h('div', { class: 'vt-spacer' });
    this.viewport = h(
      'div',
      { class: 'vt-viewport', role: 'rowgroup', style: { height: `${height}px` } },
      this.spacer,
    );
    this.viewport.addEventListener('scroll', () => this.schedule());
    this.viewport.addEventListener('click', (event) => {
      const row = (event.target as HTMLElement).closest('.vt-row') as HTMLElement | null;
      if (row?.dataset.i) this.onOpen(Number(row.dataset.i));
    });
    this.viewport.addEventListener('keydown', (event) => {
      const row = (event.target as HTMLElement).closest('.vt-row') as HTMLElement | null;
      if (row?.dataset.i && (event.key === 'Enter' || event.key === ' ')) {
        event.preventDefault();
        this.onOpen(Number(row.dataset.i));
      }
    });
    this.element = h('div', { class: 'vt', role: 'table' }, this.header, this.viewport);
    this.setOrder(order);
  }

  /** The rows shown (data indices), in order; sorted by the current sort column. */
  setOrder(order: Uint32Array): void {
    this.order = order;
    if (this.sortColumn >= 0) this.applySort();
    this.spacer.style.height = `${this.order.length * ROW_HEIGHT}px`;
    this.viewport.scrollTop = 0;
    this.render();
  }

  get shown(): number {
    return this.order.length;
  }

  private sortBy(k: number): void {
    if (this.sortColumn === k) this.sortDescending = !this.sortDescending;
    else {
      this.sortColumn = k;
      this.sortDescending = false;
    }
    for (const [j, cell] of [...this.header.children].entries()) {
      cell.setAttribute('aria-sort', j === k ? (this.sortDescending ? 'descending' : 'ascending') : 'none');
    }
    this.applySort();
    this.render();
    this.onSort?.();
  }

  private applySort(): void {
    const key = this.columns[this.sortColumn]!.sortKey!;
    const keys = new Map<number, number | string | null>();
    for (const i of this.order) keys.set(i, key(i));
    const sign = this.sortDescending ? -1 : 1;
    this.order = Uint32Array.from(this.order).sort((a, b) => {
      const x = keys.get(a) ?? null;
      const y = keys.get(b) ?? null;
      // Rows without a value go last, whichever way.
      if (x === null || y === null) return x === y ? a - b : x === null ? 1 : -1;
      if (x < y) return -sign;
      if (x > y) return sign;
      return a - b;
    });
  }

  private schedule(): void {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.render();
    });
  }

  /** Puts the rows in view into the document, and only those. */
  render(): void {
    const top = this.viewport.scrollTop;
    const height = this.viewport.clientHeight || 520;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.order.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    const rows: HTMLElement[] = [];
    for (let k = first; k < last; k += 1) {
      const i = this.order[k]!;
      rows.push(
        h(
          'div',
          {
            class: `vt-row${k % 2 ? ' odd' : ''}`,
            role: 'row',
            tabindex: 0,
            'data-i': i,
            style: { top: `${k * ROW_HEIGHT}px`, gridTemplateColumns: this.template },
          },
          this.columns.map((c) => {
            const value = c.cell(i);
            return h(
              'div',
              {
                class: 'vt-cell',
                role: 'cell',
                title: typeof value === 'string' ? value.slice(0, 500) : null,
              },
              value,
            );
          }),
        ),
      );
    }
    this.spacer.replaceChildren(...rows);
  }
}
