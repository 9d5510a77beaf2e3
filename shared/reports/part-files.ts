import type { AnyTaskFamily } from '../family/types.js';
import type { ItemResult } from '../model/model.js';
import type { Report } from '../model/report.js';
import type { BlobPiece, BlobStore } from '../ports/ports.js';
import { taskFor } from '../registry/registry.js';
import {
  csvHeader,
  ItemFiles,
  pageTitle,
  putFiles,
  renderText,
  resultView,
  type SectionName,
  sectionHeading,
} from './files.js';
import { ITEM_TABLE_ROWS, ItemColumns } from './html/columns.js';
import { runPageAround, scriptSafeJson } from './html/render.js';
import type { FileLayout } from './layout.js';

/**
 * The report files of a run aggregated in parts: each part's item files are written on their
 * own (its labeled.csv rows, its blocks of each section of errors.txt and correct.txt, its
 * stretch of every column of report.html's item table), then the run's files are composed of
 * them in part order (`BlobStore.compose`: S3 copies the large stretches inside S3) with what
 * only the whole run knows: labeled.csv's header, the sections' counts, the page around the
 * table. The files are the ones one pass writes (see files.ts), but for report.html's item
 * table, whose columns are kept as their parts' segments (`{"s": [...]}`, which the page reads
 * as one column).
 *
 * The item table holds the run's first `ITEM_TABLE_ROWS` items, as one pass's does. A part is
 * told how many of the run's results come before it (`before`), and its table takes its results
 * only while fewer than the cap come before them: the part that crosses the cap stops its table
 * there, and a part that starts at or past the cap writes no table at all (its results are still
 * in every other file). The assembly joins the tables of the leading parts, those with fewer than
 * the cap items before them, which then hold exactly the first `ITEM_TABLE_ROWS` items. A part
 * not told `before` takes its own first `ITEM_TABLE_ROWS` results, as if it started the run: a
 * segment cannot be cut once written, so a page joined of such parts shows every row of its
 * leading parts and can hold more than the cap (its `n` says how many; the page states it).
 */

const SECTIONS: readonly SectionName[] = ['failed', 'unscored', 'wrong', 'correct'];

/** What a part's item files are, for the run's files to be composed of them. */
export interface PartFilesIndex {
  part: number;
  /** The part's results. */
  items: number;
  /** Its labeled.csv rows (no header). */
  labeled: string;
  /** Its blocks of each section, and how many. */
  sections: Record<SectionName, { key: string; count: number }>;
  /**
   * Its item table: every column's JSON, one after another in one object, each at [start, end),
   * and the table's `rows` (the part's first results, fewer than `items` where the run's table
   * reached its cap; absent: every result of the part). None when the part starts past the cap.
   */
  table?: { key: string; rows?: number; columns: [name: string, start: number, end: number][] };
}

/**
 * Writes a part's item files to `keyOf(<name>)` (scratch objects) from its results in report
 * order, as the run's files need them: `layout` is the whole run's (the input columns, the
 * number scorers' gold), `runItems` the whole run's result count (how much text a table cell
 * keeps). `before` is how many of the run's results come before the part's, `tableRows` the
 * table's cap (default `ITEM_TABLE_ROWS`): the part's item table takes its results while fewer
 * than the cap come before them, and is not written at all when the part starts at or past the
 * cap (without `before`, the table takes the part's first `tableRows`: see the module's comment).
 */
export async function writePartFiles(
  store: BlobStore,
  keyOf: (name: string) => string,
  part: number,
  results: AsyncIterable<ItemResult>,
  family: AnyTaskFamily,
  suite: Parameters<AnyTaskFamily['scorers']>[0],
  layout: FileLayout,
  runItems: number,
  { before, tableRows = ITEM_TABLE_ROWS }: { before?: number; tableRows?: number } = {},
): Promise<PartFilesIndex> {
  const view = resultView(family, suite, layout);
  const files = await ItemFiles.open(family, suite, view, layout, runItems, {
    part: true,
    table: { cap: tableRows, before: before ?? 0 },
  });
  try {
    const labeled = keyOf('labeled.csv');
    await store.putStream(labeled, files.labeled('', results), 'text/csv; charset=utf-8');
    const items = files.added;
    const sections = {} as PartFilesIndex['sections'];
    for (const name of SECTIONS) {
      const key = keyOf(`${name}.txt`);
      await store.putStream(key, files.sections[name].read(), 'text/plain; charset=utf-8');
      sections[name] = { key, count: files.sections[name].count };
    }
    // A part that starts at or past the cap has no row in the run's table.
    if (before !== undefined && before >= tableRows) return { part, items, labeled, sections };
    // The table's columns one after another, each made safe for the page's script element.
    const table = {
      key: keyOf('table.json'),
      rows: files.items.rows,
      columns: [] as NonNullable<PartFilesIndex['table']>['columns'],
    };
    const encoder = new TextEncoder();
    await store.putStream(
      table.key,
      (async function* () {
        let at = 0;
        for (const name of files.items.names()) {
          const start = at;
          for (const piece of files.items.columnJson(name)) {
            const bytes = encoder.encode(scriptSafeJson(piece));
            at += bytes.length;
            yield bytes;
          }
          table.columns.push([name, start, at]);
        }
      })(),
      'application/json',
    );
    return { part, items, labeled, sections, table };
  } finally {
    await files.close();
  }
}

/**
 * Composes the run's report files from its parts' (in part order) and writes report.json and
 * report.txt last, so that a reader who finds report.json finds every other file too. Returns
 * the keys written. report.html's item table is joined of the leading parts' tables, those with
 * fewer than `tableRows` (default `ITEM_TABLE_ROWS`) items before them.
 */
export async function assembleReportFiles(
  store: BlobStore,
  prefix: string,
  report: Report,
  parts: readonly PartFilesIndex[],
  suite: Parameters<AnyTaskFamily['scorers']>[0],
  layout: FileLayout,
  { tableRows = ITEM_TABLE_ROWS }: { tableRows?: number } = {},
): Promise<string[]> {
  const family = taskFor(report);
  const view = resultView(family, suite, layout);
  const primary = view.primary;
  const ordered = [...parts].sort((a, b) => a.part - b.part);
  // The files are composed at once (each of its pieces); report.json and report.txt after them.
  const files: [name: string, pieces: BlobPiece[], type: string][] = [];
  files.push([
    'labeled.csv',
    [
      `\uFEFF${csvHeader(layout.inputColumns(), view, layout.keptColumns())}\r\n`,
      ...ordered.map((p) => ({ key: p.labeled })),
    ],
    'text/csv; charset=utf-8',
  ]);
  const section = (name: SectionName): BlobPiece[] => [
    sectionHeading(
      name,
      ordered.reduce((n, p) => n + p.sections[name].count, 0),
      primary,
    ),
    ...ordered.map((p) => ({ key: p.sections[name].key })),
  ];
  files.push([
    'errors.txt',
    [...section('failed'), ...section('unscored'), ...section('wrong')],
    'text/plain; charset=utf-8',
  ]);
  files.push(['correct.txt', section('correct'), 'text/plain; charset=utf-8']);

  // The page around the item table, whose every column is its leading parts' segments.
  const runItems = ordered.reduce((n, p) => n + p.items, 0);
  const shown = tableParts(ordered, tableRows);
  const { columns: _columns, ...meta } = new ItemColumns(
    family,
    suite,
    view,
    report.counts.items,
    (name) => layout.binary(name),
    undefined,
    layout.allInputColumns(),
    { cap: tableRows },
  ).table();
  const { before, after } = runPageAround(pageTitle(report), report as unknown as Record<string, unknown>, {
    ...meta,
    n: shown.reduce((n, p) => n + p.rows, 0),
    total: runItems,
  });
  const names = shown[0]?.table.columns.map(([name]) => name) ?? [];
  const pieces: BlobPiece[] = [before];
  names.forEach((name, c) => {
    pieces.push(`${c > 0 ? ',' : ''}${JSON.stringify(name)}:{"s":[`);
    shown.forEach((p, i) => {
      const [own, start, end] = p.table.columns[c]!;
      if (own !== name) throw new Error(`part ${p.part}'s table has column ${own} where part 0 has ${name}`);
      if (i > 0) pieces.push(',');
      pieces.push({ key: p.table.key, start, end });
    });
    pieces.push(']}');
  });
  pieces.push(after);
  files.push(['report.html', pieces, 'text/html; charset=utf-8']);
  await Promise.all(files.map(([name, pieces, type]) => store.compose(`${prefix}${name}`, pieces, type)));
  const keys = files.map(([name]) => `${prefix}${name}`);

  keys.unshift(
    ...(await putFiles(store, prefix, {
      'report.txt': [renderText(report), 'text/plain; charset=utf-8'],
      'report.json': [`${JSON.stringify(report, null, 2)}\n`, 'application/json'],
    })),
  );
  return keys;
}

/** A part whose table is part of the run's item table. */
interface TablePart {
  part: number;
  items: number;
  rows: number;
  table: NonNullable<PartFilesIndex['table']>;
}

/**
 * The parts whose tables make the run's item table, in part order: each part with fewer than
 * `cap` of the run's items before it (the first part always). Every one but the last holds all
 * its results, so the rows joined are the run's first items, with no gap.
 */
function tableParts(ordered: readonly PartFilesIndex[], cap: number): TablePart[] {
  const shown: TablePart[] = [];
  let before = 0;
  for (const p of ordered) {
    if (shown.length > 0 && before >= cap) break;
    if (!p.table) throw new Error(`part ${p.part} has no item table, with ${before} items before it`);
    const last = shown.at(-1);
    if (last && last.rows < last.items)
      throw new Error(
        `part ${last.part}'s table stops before its last result, and part ${p.part} follows it`,
      );
    shown.push({ part: p.part, items: p.items, rows: p.table.rows ?? p.items, table: p.table });
    before += p.items;
  }
  return shown;
}
