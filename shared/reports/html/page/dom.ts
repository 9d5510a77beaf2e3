/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/** Small DOM and number-formatting helpers of the report page (a classic script in the browser). */
import { metricDisplayName } from '../../../model/metrics.js';
import type { Column } from '../types.js';

type Child = Node | string | number | null | undefined | false;

/** An element with attributes (`on<event>` functions become listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, unknown> | null = null,
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value as EventListener);
    } else if (key === 'style' && typeof value === 'object') Object.assign(el.style, value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** A number with `digits` decimals; n/a when there is none (a metric with no data). */
export function num(value: unknown, digits = 3): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'n/a';
  if (Number.isInteger(value) && Math.abs(value) >= 1000) return value.toLocaleString('en');
  return value.toFixed(digits);
}

export function usd(value: unknown): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'n/a';
  if (value === 0) return '$0';
  return Math.abs(value) < 0.01 ? `$${value.toPrecision(3)}` : `$${value.toFixed(4)}`;
}

export function ms(value: unknown): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'n/a';
  return value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`;
}

export function signed(value: unknown, digits = 3): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'n/a';
  return `${value >= 0 ? '+' : ''}${value.toFixed(digits)}`;
}

export function pValue(value: unknown): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'n/a';
  return value < 0.001 ? '<0.001' : value.toFixed(3);
}

/** A metric's name as report.txt gives it (the metric table's), or its camelCase spelt out. */
export function metricName(name: string): string {
  return metricDisplayName(name);
}

/** Rows in a column. */
function lengthOf<T>(column: Column<T>): number {
  if (Array.isArray(column)) return column.length;
  if ('s' in column) return column.s.reduce((n, segment) => n + lengthOf(segment), 0);
  return column.c.length;
}

/** Reads row `i` of a column. */
export function reader<T>(column: Column<T> | undefined): (i: number) => T | null {
  if (!column) return () => null;
  if (Array.isArray(column)) return (i) => column[i] ?? null;
  if ('s' in column) {
    // A table written in parts: find the segment holding row i (its first row by binary search).
    const reads = column.s.map((segment) => reader(segment));
    const starts: number[] = [];
    let at = 0;
    for (const segment of column.s) {
      starts.push(at);
      at += lengthOf(segment);
    }
    return (i) => {
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid]! <= i) lo = mid;
        else hi = mid - 1;
      }
      return starts.length === 0 ? null : reads[lo]!(i - starts[lo]!);
    };
  }
  const { d, c } = column;
  return (i) => d[c[i]!] ?? null;
}

/** The distinct values of a column and how often each occurs; undefined when there are more than `max`. */
export function distinct<T>(
  column: Column<T> | undefined,
  n: number,
  max: number,
): Map<T | null, number> | undefined {
  const counts = new Map<T | null, number>();
  if (!column) return undefined;
  const read = reader(column);
  if (!Array.isArray(column) && 'd' in column && column.d.length > max) return undefined;
  for (let i = 0; i < n; i += 1) {
    const v = read(i);
    counts.set(v, (counts.get(v) ?? 0) + 1);
    if (counts.size > max) return undefined;
  }
  return counts;
}

/** A figure with its 95% interval drawn as a bar on [min, max]. */
export function ciBar(
  value: number | null,
  ci: [number, number] | null | undefined,
  min: number,
  max: number,
): HTMLElement {
  const span = max - min || 1;
  const at = (v: number) => `${Math.max(0, Math.min(100, ((v - min) / span) * 100))}%`;
  const bar = h('span', {
    class: 'ci-bar',
    title: ci ? `95% CI ${ciText(ci)}` : 'no interval',
  });
  if (ci && Number.isFinite(ci[0]) && Number.isFinite(ci[1])) {
    bar.append(
      h('span', {
        class: 'ci-range',
        style: { left: at(ci[0]), width: `calc(${at(ci[1])} - ${at(ci[0])})` },
      }),
    );
  }
  if (value !== null && Number.isFinite(value))
    bar.append(h('span', { class: 'ci-point', style: { left: at(value) } }));
  return bar;
}

/** A table of rows (cells are text or nodes); `cellClass` gives the cells of a column a class. */
export function table(
  headers: string[],
  rows: Child[][],
  className = 'grid',
  cellClass: readonly (string | undefined)[] = [],
): HTMLTableElement {
  return h(
    'table',
    { class: className },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        headers.map((x) => h('th', null, x)),
      ),
    ),
    h(
      'tbody',
      null,
      rows.map((row) =>
        h(
          'tr',
          null,
          row.map((cell, k) => h('td', cellClass[k] ? { class: cellClass[k] } : null, cell)),
        ),
      ),
    ),
  );
}

/** Any JSON value as nested tables: objects of objects as a matrix, other objects as key/value rows. */
export function anyTable(value: unknown, depth = 0): Node {
  if (value === null || value === undefined) return document.createTextNode('n/a');
  if (typeof value === 'number') return document.createTextNode(num(value, Number.isInteger(value) ? 0 : 3));
  if (typeof value !== 'object') return document.createTextNode(String(value));
  if (depth > 3) return h('code', null, JSON.stringify(value));
  if (Array.isArray(value)) {
    if (value.every((v) => v === null || typeof v !== 'object')) {
      return document.createTextNode(
        value.map((v) => (typeof v === 'number' ? num(v) : String(v))).join(', '),
      );
    }
    const flat = (v: unknown) =>
      v !== null &&
      typeof v === 'object' &&
      !Array.isArray(v) &&
      Object.values(v).every((x) => x === null || typeof x !== 'object');
    if (value.every(flat)) {
      const keys = [...new Set(value.flatMap((v) => Object.keys(v as object)))];
      return table(
        keys.map(metricName),
        value.map((v) => keys.map((key) => anyTable((v as Record<string, unknown>)[key], depth + 1))),
      );
    }
    return h(
      'div',
      null,
      value.map((v) => anyTable(v, depth + 1)),
    );
  }
  if (isFigure(value)) return figureCell(value);
  const entries = Object.entries(value as Record<string, unknown>);
  const inner = entries.map(([, v]) => v);
  const isMatrix =
    entries.length > 1 &&
    inner.every(
      (v) =>
        v &&
        typeof v === 'object' &&
        !Array.isArray(v) &&
        Object.values(v).every((x) => x === null || typeof x !== 'object'),
    );
  if (isMatrix) {
    const keys = [...new Set(inner.flatMap((v) => Object.keys(v as object)))];
    return table(
      ['', ...keys],
      entries.map(([k, v]) => [
        h('b', null, k),
        ...keys.map((key) => anyTable((v as Record<string, unknown>)[key], depth + 1)),
      ]),
    );
  }
  return table(
    ['', ''],
    entries.map(([k, v]) => [h('b', null, metricName(k)), anyTable(v, depth + 1)]),
    'grid kv',
  );
}

/** A figure as report.json gives one (`MetricValue`): its value, with its CI, n or the reason it has none. */
type Figure = { value: number | null; n?: number; ci?: [number, number] | null; reason?: string };
const FIGURE_KEYS = new Set(['value', 'n', 'ci', 'reason', 'name', 'method']);

function isFigure(value: object): value is Figure {
  const v = value as Record<string, unknown>;
  return (
    'value' in v &&
    (v.value === null || typeof v.value === 'number') &&
    Object.keys(v).every((key) => FIGURE_KEYS.has(key))
  );
}

/** A 95% CI as the page writes it, `[0.700, 0.900]`; `missing` when there is none. */
export function ciText(ci: readonly [number, number] | null | undefined, missing = 'n/a'): string {
  return ci ? `[${num(ci[0])}, ${num(ci[1])}]` : missing;
}

/** A figure with its CI, `0.812 [0.700, 0.900]`, or the value alone when it has none. */
export function withCi(value: number | null, ci: readonly [number, number] | null | undefined): string {
  return ci ? `${num(value)} ${ciText(ci)}` : num(value);
}

/** `0.812 [0.700, 0.900] · n 40`, or the reason a figure has no value. */
function figureCell(f: Figure): Node {
  const parts = [withCi(f.value, f.ci)];
  if (f.n !== undefined) parts.push(`· n ${f.n}`);
  if (f.reason && (f.value === null || !f.ci)) parts.push(`(${f.reason})`);
  return document.createTextNode(parts.join(' '));
}

export function section(title: string, ...children: (Child | Child[])[]): HTMLElement {
  return h('section', null, h('h2', null, title), ...children);
}

export function banner(kind: 'sim' | 'warn' | 'bad', text: string): HTMLElement {
  return h('div', { class: `banner banner-${kind}`, role: 'alert' }, text);
}
