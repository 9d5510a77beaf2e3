/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * Every item of a run: a virtualised table with search, filters (the errors of errors.txt, wrong,
 * right, failed or unscored by kind, a slice by a column's value) and sort; a row opens the
 * item's details: inputs, gold, output, each score and what decided it, cost, latency, stages,
 * the family's details and the raw answer when the run kept one. A run larger than the table's
 * cap has its first items in the table, and the section says so above it.
 */
import type { ItemTable } from '../types.js';
import { distinct, h, ms, num, reader, table, usd } from './dom.js';
import { type VirtualColumn, VirtualTable } from './virtual.js';

type Read = (i: number) => string | number | boolean | null;

const CATEGORY_TEXT: Record<string, string> = {
  failed: 'failed',
  unscored: 'unscored',
  wrong: 'wrong',
  right: 'right',
  undecided: 'no verdict',
};

function cellText(v: string | number | boolean | null): string {
  if (v === null) return '';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : num(v);
  return String(v);
}

function oneLine(v: string | number | boolean | null): string {
  return cellText(v).replace(/\s+/g, ' ').slice(0, 300);
}

/**
 * What the page says above a table that holds only the run's first items (undefined when it holds
 * every item): how many of how many, and where the rest are.
 */
export function tableCapNotice(t: Pick<ItemTable, 'n' | 'total'>): string | undefined {
  if (!(t.total > t.n)) return undefined;
  return `The table shows the first ${t.n.toLocaleString('en')} of ${t.total.toLocaleString('en')} items (in report order); every item is in labeled.csv, every failed, unscored or wrong item in errors.txt. The filters, search and counts of the table cover its items; the figures above are the whole run's.`;
}

export function itemsSection(t: ItemTable): HTMLElement {
  const col = (name: string): Read => reader(t.columns[name]);
  const id = col('id');
  const row = col('row');
  const category = col('category');
  const failure = col('failure');
  const gold = col('gold');
  const output = col('output');
  const cost = col('cost');
  const latency = col('latency');
  const inputs = t.inputs.map((name) => [name, col(`input:${name}`)] as const);
  const scorers = t.scorers.map((s) => ({
    ...s,
    value: col(`score:${s.name}`),
    by: col(`by:${s.name}`),
    why: col(`why:${s.name}`),
    unscored: col(`unscored:${s.name}`),
    target: col(`target:${s.name}`),
  }));

  // What the "show" filter offers, with counts.
  const counts = new Map<string, number>();
  const bump = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  for (let i = 0; i < t.n; i += 1) {
    const c = category(i) as string;
    bump(c);
    if (c === 'failed' || c === 'unscored' || c === 'wrong') bump('errors');
    if (c === 'failed') bump(`failed:${failure(i) ?? 'unknown'}`);
    for (const s of scorers) {
      const kind = s.unscored(i);
      if (kind !== null && c !== 'failed') bump(`unscored:${kind}`);
    }
  }
  const showOptions: [string, string][] = [['all', `all items (${t.n})`]];
  const add = (key: string, text: string) => {
    if (counts.has(key)) showOptions.push([key, `${text} (${counts.get(key)})`]);
  };
  add('errors', 'errors.txt: failed, unscored or wrong');
  add('wrong', `wrong by ${t.primary}`);
  add('right', `right by ${t.primary}`);
  add('undecided', 'no verdict (no gold)');
  for (const key of [...counts.keys()].filter((k) => k.startsWith('failed:')).sort())
    add(key, `failed: ${key.slice(7)}`);
  for (const key of [...counts.keys()].filter((k) => k.startsWith('unscored:')).sort())
    add(key, `unscored: ${key.slice(9)}`);

  // Columns one can slice by: those with few distinct values.
  const sliceable: { name: string; label: string; read: Read; values: Map<unknown, number> }[] = [];
  const candidates: [string, string, number?][] = [
    // The suite's slices first, as many values as the report's slices table shows.
    ...(t.slices ?? []).map((name): [string, string, number] => [`slice:${name}`, name, 101]),
    ['gold', 'gold'],
    ['status', 'status'],
    ['failure', 'failure'],
    ['simulated', 'simulated'],
    ...t.scorers.flatMap((s): [string, string][] => [
      [`score:${s.name}`, s.name],
      [`by:${s.name}`, `${s.name} decided by`],
      [`unscored:${s.name}`, `${s.name} unscored`],
    ]),
    ...t.inputs.map((name): [string, string] => [`input:${name}`, name]),
  ];
  for (const [name, label, max] of candidates) {
    if (name.startsWith('input:') && t.slices?.includes(name.slice(6))) continue;
    const values = distinct(t.columns[name], t.n, max ?? 40);
    const suiteSlice = name.startsWith('slice:');
    if (values && (values.size > 1 || (suiteSlice && values.size > 0)))
      sliceable.push({ name, label, read: col(name), values });
  }

  const columns: VirtualColumn[] = [
    { label: 'row', width: '60px', cell: (i) => cellText(row(i)), sortKey: (i) => row(i) as number },
    {
      label: 'id',
      width: 'minmax(70px, 1fr)',
      cell: (i) => cellText(id(i)),
      sortKey: (i) => id(i) as string,
    },
    {
      label: 'verdict',
      width: '86px',
      cell: (i) => {
        const c = category(i) as string;
        return h('span', { class: `badge badge-${c}` }, CATEGORY_TEXT[c] ?? c);
      },
      sortKey: (i) => category(i) as string,
    },
    {
      label: 'gold',
      width: 'minmax(60px, 1fr)',
      cell: (i) => oneLine(gold(i)),
      sortKey: (i) => gold(i) as string | null,
    },
    ...scorers.map(
      (s): VirtualColumn => ({
        label: s.name + (s.name === t.primary ? ' ★' : ''),
        width: 'minmax(70px, 1fr)',
        cell: (i) => {
          const v = s.value(i);
          return v === null ? h('span', { class: 'muted' }, `(${s.unscored(i) ?? '-'})`) : cellText(v);
        },
        sortKey: (i) => {
          const v = s.value(i);
          return typeof v === 'boolean' ? Number(v) : (v as number | string | null);
        },
      }),
    ),
    ...inputs.slice(0, 1).map(
      ([name, read]): VirtualColumn => ({
        label: name,
        width: 'minmax(140px, 3fr)',
        cell: (i) => oneLine(read(i)),
        sortKey: (i) => read(i) as string | null,
      }),
    ),
    {
      label: 'output',
      width: 'minmax(140px, 3fr)',
      cell: (i) => oneLine(output(i)),
      sortKey: (i) => output(i) as string | null,
    },
    { label: 'cost', width: '96px', cell: (i) => usd(cost(i)), sortKey: (i) => cost(i) as number | null },
    {
      label: 'latency',
      width: '76px',
      cell: (i) => ms(latency(i)),
      sortKey: (i) => latency(i) as number | null,
    },
  ];

  const shownCount = h('span', { class: 'shown-count', 'data-testid': 'shown-count' });
  const search = h('input', {
    type: 'search',
    placeholder: 'search id, inputs, gold, output…',
    'aria-label': 'search items',
    class: 'search',
  });
  const show = h(
    'select',
    { 'aria-label': 'show', class: 'show-filter' },
    showOptions.map(([value, text]) => h('option', { value }, text)),
  );
  const sliceColumn = h(
    'select',
    { 'aria-label': 'slice by column', class: 'slice-column' },
    h('option', { value: '' }, 'slice: none'),
    sliceable.map((s, k) => h('option', { value: String(k) }, `slice by ${s.label}`)),
  );
  const sliceValue = h('select', { 'aria-label': 'slice value', class: 'slice-value', disabled: true });

  const all = new Uint32Array(t.n);
  for (let i = 0; i < t.n; i += 1) all[i] = i;
  const detail = h('aside', { class: 'detail', hidden: true, 'aria-label': 'item details' });
  const vt = new VirtualTable(
    columns,
    all,
    (i) => openDetail(i),
    () => undefined,
  );

  function matches(i: number, filter: string): boolean {
    if (filter === 'all') return true;
    const c = category(i);
    if (filter === 'errors') return c === 'failed' || c === 'unscored' || c === 'wrong';
    if (filter.startsWith('failed:')) return c === 'failed' && (failure(i) ?? 'unknown') === filter.slice(7);
    if (filter.startsWith('unscored:')) {
      const kind = filter.slice(9);
      return c !== 'failed' && scorers.some((s) => s.unscored(i) === kind);
    }
    return c === filter;
  }

  function apply(): void {
    const filter = show.value;
    const query = search.value.trim().toLowerCase();
    const slice = sliceColumn.value === '' ? undefined : sliceable[Number(sliceColumn.value)];
    const sliceKey = sliceValue.value;
    const kept: number[] = [];
    for (let i = 0; i < t.n; i += 1) {
      if (!matches(i, filter)) continue;
      if (slice && JSON.stringify(slice.read(i)) !== sliceKey) continue;
      if (query) {
        let found =
          String(id(i)).toLowerCase().includes(query) || cellText(gold(i)).toLowerCase().includes(query);
        if (!found) found = cellText(output(i)).toLowerCase().includes(query);
        for (let k = 0; !found && k < inputs.length; k += 1)
          found = cellText(inputs[k]![1](i)).toLowerCase().includes(query);
        if (!found) continue;
      }
      kept.push(i);
    }
    vt.setOrder(Uint32Array.from(kept));
    shownCount.textContent = `${kept.length.toLocaleString('en')} of ${t.n.toLocaleString('en')} items`;
    shownCount.dataset.count = String(kept.length);
  }

  let timer: ReturnType<typeof setTimeout> | undefined;
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(apply, 150);
  });
  show.addEventListener('change', apply);
  sliceColumn.addEventListener('change', () => {
    const slice = sliceColumn.value === '' ? undefined : sliceable[Number(sliceColumn.value)];
    sliceValue.replaceChildren(
      ...(slice
        ? [...slice.values]
            .sort((a, b) => b[1] - a[1])
            .map(([v, n]) =>
              h(
                'option',
                { value: JSON.stringify(v) },
                `${v === null ? '(none)' : String(v).slice(0, 60)} (${n})`,
              ),
            )
        : []),
    );
    sliceValue.disabled = !slice;
    apply();
  });
  sliceValue.addEventListener('change', apply);

  // The slices table's "items" links: show the items of one value of a suite slice column.
  const showSlice = (event: Event) => {
    const { column, value } = (event as CustomEvent<{ column: string; value: string }>).detail;
    const k = sliceable.findIndex((s) => s.name === `slice:${column}`);
    if (k < 0) return;
    sliceColumn.value = String(k);
    sliceColumn.dispatchEvent(new Event('change'));
    sliceValue.value = JSON.stringify(value);
    show.value = 'all';
    apply();
    sliceColumn.scrollIntoView({ block: 'start' });
  };
  document.addEventListener('assay:slice', showSlice);

  function field(label: string, value: string | number | boolean | null, pre = true): HTMLElement | null {
    if (value === null || value === '') return null;
    return h(
      'div',
      { class: 'field' },
      h('h4', null, label),
      pre ? h('pre', null, cellText(value)) : h('div', null, cellText(value)),
    );
  }

  function jsonField(label: string, text: string | number | boolean | null): HTMLElement | null {
    if (text === null) return null;
    let shown = String(text);
    try {
      shown = JSON.stringify(JSON.parse(shown), null, 2);
    } catch {
      // a cut text: shown as it is
    }
    return field(label, shown);
  }

  function stagesTable(text: string | number | boolean | null): HTMLElement | null {
    if (typeof text !== 'string') return null;
    const stages = JSON.parse(text) as Record<
      string,
      {
        calls: number;
        cachedCalls: number;
        costUsd: number;
        latencyMs: number;
        usage: { input: number; output: number; cached: number };
      }
    >;
    return h(
      'div',
      { class: 'field' },
      h('h4', null, 'stages (model calls)'),
      table(
        ['stage', 'calls', 'cached', 'cost', 'latency', 'tokens in', 'out'],
        Object.entries(stages).map(([name, s]) =>
          [
            name,
            s.calls,
            s.cachedCalls,
            usd(s.costUsd),
            ms(s.latencyMs),
            s.usage?.input ?? '',
            s.usage?.output ?? '',
          ].map(String),
        ),
      ),
    );
  }

  function openDetail(i: number): void {
    const c = category(i) as string;
    const raw = col('raw')(i);
    const parts: (HTMLElement | null)[] = [
      h(
        'div',
        { class: 'detail-head' },
        h(
          'h3',
          null,
          `Item ${cellText(id(i))}`,
          ' ',
          h('span', { class: `badge badge-${c}` }, CATEGORY_TEXT[c] ?? c),
        ),
        h('button', { type: 'button', class: 'close', 'aria-label': 'close', onclick: closeDetail }, '×'),
      ),
      h(
        'p',
        { class: 'muted' },
        `row ${cellText(row(i))} · ${cellText(col('status')(i))} · cost ${usd(cost(i))} · latency ${ms(latency(i))}${col('simulated')(i) ? ' · simulated' : ''}`,
      ),
      col('failure')(i) !== null
        ? field(`failure: ${cellText(failure(i))}`, col('failureMessage')(i) ?? '(no message)')
        : null,
      ...inputs.map(([name, read]) => field(`input: ${name}`, read(i))),
      field('gold', gold(i)),
      field('output', output(i)),
      h(
        'div',
        { class: 'field' },
        h('h4', null, 'scores'),
        table(
          ['scorer', 'value', 'gold target', 'decided by', 'why'],
          scorers.map((s) => [
            s.name + (s.name === t.primary ? ' ★' : ''),
            s.value(i) === null ? `unscored (${cellText(s.unscored(i))})` : cellText(s.value(i)),
            cellText(s.target(i)),
            cellText(s.by(i)),
            cellText(s.why(i)),
          ]),
          'grid',
          [undefined, undefined, undefined, undefined, 'why'],
        ),
      ),
      stagesTable(col('stages')(i)),
      raw !== null
        ? field('raw model answer (kept because it could not be parsed)', raw)
        : h(
            'p',
            { class: 'note' },
            'The run keeps a raw model answer only when it could not be parsed; this item’s answer is shown parsed (output, scores, details).',
          ),
      jsonField("the family's details", col('details')(i)),
    ];
    detail.replaceChildren(...parts.filter((p): p is HTMLElement => p !== null));
    detail.hidden = false;
    detail.dataset.item = cellText(id(i));
    (detail.querySelector('.close') as HTMLElement).focus();
  }

  function closeDetail(): void {
    detail.hidden = true;
  }
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') closeDetail();
  });

  apply();
  const capped = tableCapNotice(t);
  return h(
    'section',
    { class: 'items' },
    h('h2', null, 'Items'),
    capped ? h('p', { class: 'note', 'data-testid': 'table-cap' }, capped) : null,
    h('div', { class: 'controls' }, search, show, sliceColumn, sliceValue, shownCount),
    t.textLimit < Number.POSITIVE_INFINITY
      ? h(
          'p',
          { class: 'note' },
          `Texts longer than ${t.textLimit.toLocaleString('en')} characters are cut in this page; labeled.csv and results.jsonl have them whole. Click a row for its details; click a heading to sort.`,
        )
      : null,
    vt.element,
    detail,
  );
}
