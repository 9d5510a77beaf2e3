/**
 * The HTML report pages: one self-contained file each (run, sweep, comparison, leaderboard).
 * The data is embedded as JSON, the page script (with its chart library) and styles inline as
 * a classic script and a style element; a Content-Security-Policy forbids every network
 * request, so the page opens from disk (file://) with nothing installed.
 */
import { createHash } from 'node:crypto';
import { PAGE_SCRIPT, PAGE_STYLE } from './page-assets.generated.js';
import { COLUMN_JSON, type ItemTable, type PageData } from './types.js';

/** The page script exactly as it stands between its script tags (no `</script` inside it). */
const SCRIPT_TEXT = PAGE_SCRIPT.replace(/<\/script/gi, '<\\/script');

/** A CSP source allowing one inline element whose text is exactly `text`. */
export const cspHash = (text: string) =>
  `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The policy of every page: the page's own script and style element run (by their hashes), and
 * nothing else: no other inline script, no inline event handler, no `style=` attribute in the
 * markup (the script sets styles through element.style, which a policy does not restrict), and
 * no request of any kind leaves the page. The JSON data element is not a script, so needs none.
 */
const POLICY = [
  "default-src 'none'",
  `script-src ${cspHash(SCRIPT_TEXT)}`,
  `style-src ${cspHash(PAGE_STYLE)}`,
  'img-src data: blob:',
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Text made safe inside a script element: no `<` (so no `</script>`), no line separators. */
function scriptSafe(json: string): string {
  return json
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** `{"key":value,…}` of an object's entries, as JSON.stringify writes it, each value by `value`. */
function* objectJson(
  entries: [string, unknown][],
  value: (key: string, v: unknown) => Iterable<string>,
): Generator<string> {
  let first = true;
  yield '{';
  for (const [key, v] of entries) {
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    yield `${first ? '' : ','}${JSON.stringify(key)}:`;
    yield* value(key, v);
    first = false;
  }
  yield '}';
}

/**
 * The page data's JSON, as `JSON.stringify(data)` writes it, in pieces: a run page's item table
 * one column at a time, so that a run of a million items never has its whole table's JSON (or
 * every column built) at once.
 */
function* dataJson(data: PageData): Generator<string> {
  yield* objectJson(Object.entries(data), function* (key, v) {
    if (!(data.kind === 'run' && key === 'items')) return yield JSON.stringify(v);
    yield* objectJson(Object.entries(v as object), function* (tableKey, tableValue) {
      if (tableKey !== 'columns') return yield JSON.stringify(tableValue);
      // Each column read (and built) only when it is written; by its pieces when the table has them.
      const columns = tableValue as ItemTable['columns'] & {
        [COLUMN_JSON]?: (name: string) => Iterable<string>;
      };
      const pieces = columns[COLUMN_JSON];
      yield* objectJson(
        Object.keys(columns).map((name) => [name, name]),
        (name) => pieces?.(name) ?? [JSON.stringify(columns[name])],
      );
    });
  });
}

/** The whole page for `data`, titled `title`, in pieces (see {@link renderPage}). */
export function* renderPageChunks(title: string, data: PageData): Generator<string> {
  yield [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${POLICY}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${PAGE_STYLE}</style>`,
    '</head><body>',
    '<div id="app"><p class="loading">Loading the report…</p></div>',
    '<noscript>This report draws itself with JavaScript; report.txt has the same figures as text.</noscript>',
    '<script type="application/json" id="assay-data">',
  ].join('\n');
  for (const piece of dataJson(data)) yield scriptSafe(piece);
  yield ['</script>', `<script>${SCRIPT_TEXT}</script>`, '</body></html>', ''].join('\n');
}

/** What stands for a run page's columns while the text around them is made (never in a page). */
const COLUMNS_HOLE = '\u0000assay:columns\u0000';

/**
 * A run page in two halves around its item table's columns: the page is `before`, then the
 * columns as JSON object members (`"<name>":<column>,…`, each made script-safe), then `after`.
 * A run aggregated in parts writes its columns a part at a time and joins them between these.
 */
export function runPageAround(
  title: string,
  report: Record<string, unknown>,
  items: Omit<ItemTable, 'columns'>,
): { before: string; after: string } {
  // A table whose one column is the hole: its member is cut out, the braces around it kept.
  const page = renderPage(title, {
    kind: 'run',
    report,
    items: { ...items, columns: { [COLUMNS_HOLE]: [] } },
  });
  const hole = scriptSafe(`${JSON.stringify(COLUMNS_HOLE)}:[]`);
  const at = page.indexOf(hole);
  if (at < 0 || page.indexOf(hole, at + 1) >= 0)
    throw new Error('the run page has no single place for its columns');
  return { before: page.slice(0, at), after: page.slice(at + hole.length) };
}

/** A piece of a page's embedded JSON, made safe inside its script element. */
export function scriptSafeJson(json: string): string {
  return scriptSafe(json);
}

/** The whole page for `data`, titled `title`. */
export function renderPage(title: string, data: PageData): string {
  return [...renderPageChunks(title, data)].join('');
}

/** The inlined script and styles, in bytes (the page weight before any data). */
export function assetBytes(): number {
  return Buffer.byteLength(PAGE_SCRIPT) + Buffer.byteLength(PAGE_STYLE);
}
