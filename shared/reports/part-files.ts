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
import { ItemColumns } from './html/columns.js';
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
  /** Its item table: every column's JSON, one after another in one object, each at [start, end). */
  table: { key: string; columns: [name: string, start: number, end: number][] };
}

/**
 * Writes a part's item files to `keyOf(<name>)` (scratch objects) from its results in report
 * order, as the run's files need them: `layout` is the whole run's (the input columns, the
 * number scorers' gold), `runItems` the whole run's result count (how much text a table cell
 * keeps).
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
): Promise<PartFilesIndex> {
  const view = resultView(family, suite, layout);
  const files = await ItemFiles.open(family, suite, view, layout, runItems, { part: true });
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
    // The table's columns one after another, each made safe for the page's script element.
    const table = { key: keyOf('table.json'), columns: [] as PartFilesIndex['table']['columns'] };
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
 * the keys written.
 */
export async function assembleReportFiles(
  store: BlobStore,
  prefix: string,
  report: Report,
  parts: readonly PartFilesIndex[],
  suite: Parameters<AnyTaskFamily['scorers']>[0],
  layout: FileLayout,
): Promise<string[]> {
  const family = taskFor(report);
  const view = resultView(family, suite, layout);
  const primary = view.primary;
  const ordered = [...parts].sort((a, b) => a.part - b.part);
  const keys: string[] = [];
  const compose = async (name: string, pieces: BlobPiece[], type: string) => {
    await store.compose(`${prefix}${name}`, pieces, type);
    keys.push(`${prefix}${name}`);
  };
  await compose(
    'labeled.csv',
    [
      `\uFEFF${csvHeader(layout.inputColumns(), view, layout.keptColumns())}\r\n`,
      ...ordered.map((p) => ({ key: p.labeled })),
    ],
    'text/csv; charset=utf-8',
  );
  const section = (name: SectionName): BlobPiece[] => [
    sectionHeading(
      name,
      ordered.reduce((n, p) => n + p.sections[name].count, 0),
      primary,
    ),
    ...ordered.map((p) => ({ key: p.sections[name].key })),
  ];
  await compose(
    'errors.txt',
    [...section('failed'), ...section('unscored'), ...section('wrong')],
    'text/plain; charset=utf-8',
  );
  await compose('correct.txt', section('correct'), 'text/plain; charset=utf-8');

  // The page around the item table, whose every column is its parts' segments.
  const runItems = ordered.reduce((n, p) => n + p.items, 0);
  const { columns: _columns, ...meta } = new ItemColumns(
    family,
    suite,
    view,
    report.counts.items,
    (name) => layout.binary(name),
    undefined,
    layout.allInputColumns(),
  ).table();
  const { before, after } = runPageAround(pageTitle(report), report as unknown as Record<string, unknown>, {
    ...meta,
    n: runItems,
  });
  const names = ordered[0]?.table.columns.map(([name]) => name) ?? [];
  const pieces: BlobPiece[] = [before];
  names.forEach((name, c) => {
    pieces.push(`${c > 0 ? ',' : ''}${JSON.stringify(name)}:{"s":[`);
    ordered.forEach((p, i) => {
      const [own, start, end] = p.table.columns[c]!;
      if (own !== name) throw new Error(`part ${p.part}'s table has column ${own} where part 0 has ${name}`);
      if (i > 0) pieces.push(',');
      pieces.push({ key: p.table.key, start, end });
    });
    pieces.push(']}');
  });
  pieces.push(after);
  await compose('report.html', pieces, 'text/html; charset=utf-8');

  keys.unshift(
    ...(await putFiles(store, prefix, {
      'report.txt': [renderText(report), 'text/plain; charset=utf-8'],
      'report.json': [`${JSON.stringify(report, null, 2)}\n`, 'application/json'],
    })),
  );
  return keys;
}
