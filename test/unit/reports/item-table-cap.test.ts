/**
 * report.html's item table holds at most a cap of items (ITEM_TABLE_ROWS): a larger run's page has
 * its first items in report order and says how many of how many, while labeled.csv, errors.txt,
 * correct.txt, report.json and report.txt keep every item. The run written in one pass and the run
 * written in parts (whose parts past the cap write no table) give the same page. The cap is made
 * small here (3 or 5 items) so that an example run on the simulator crosses it.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalAggregateTrigger } from '../../../shared/adapters/local/local-aggregate-trigger.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import { aggregationKey } from '../../../shared/lib/layout/bucket.js';
import type { Report } from '../../../shared/model/report.js';
import { taskFor } from '../../../shared/registry/registry.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { FileLayout, resultView, writeReportFiles } from '../../../shared/reports/files.js';
import { ITEM_TABLE_ROWS, ItemColumns, textLimitFor } from '../../../shared/reports/html/columns.js';
import { tableCapNotice } from '../../../shared/reports/html/page/items.js';
import type { Column } from '../../../shared/reports/html/types.js';
import {
  assembleReportFiles,
  type PartFilesIndex,
  writePartFiles,
} from '../../../shared/reports/part-files.js';
import { ReportTally, reportOrder } from '../../../shared/reports/report.js';
import { aggregationStep, type InPartsDeps } from '../../../shared/use-cases/aggregate-parts.js';
import { aggregateRun } from '../../../shared/use-cases/aggregate-run.js';
import { simulatedExampleRun } from '../../example-run.js';
import { suite, tempDir } from '../../helpers.js';
import { pageData, plainColumns, text } from './page-data.js';

const AT = '2026-01-01T00:00:00.000Z';
const ITEM_FILES = ['labeled.csv', 'errors.txt', 'correct.txt', 'report.json', 'report.txt'];

/** The quickstart example on the simulator, `sample` items of it: its record, results and report. */
async function exampleRun(sample: number) {
  const { run, results: read } = await simulatedExampleRun('quickstart.suite.json', sample);
  const results = reportOrder(read);
  const tally = new ReportTally(run, taskFor(run.suite));
  for (const result of results) tally.add(result);
  const report = await tally.report(AT);
  return { run, results, report, layout: tally.layout };
}

type Example = Awaited<ReturnType<typeof exampleRun>>;

/** How many values a column holds, whatever its encoding. */
function lengthOf(column: Column<unknown>): number {
  if (Array.isArray(column)) return column.length;
  if ('s' in column) return column.s.reduce((n, segment) => n + lengthOf(segment), 0);
  return column.c.length;
}

/** The data lines of labeled.csv (its header left out): one per item, each starting with its id. */
const csvLines = (csv: string) => csv.trimEnd().split('\r\n').slice(1);

/** The run written in one pass under `prefix`, its table capped at `tableRows`. */
async function onePass(store: FolderBlobStore, prefix: string, example: Example, tableRows?: number) {
  const { run, results, report, layout } = example;
  await writeReportFiles(
    store,
    prefix,
    report,
    results,
    run.suite,
    layout,
    tableRows === undefined ? {} : { tableRows },
  );
  return pageData(await text(store, `${prefix}report.html`));
}

/**
 * The run written in parts cut at `cuts` (result indexes) under `prefix`, each part told how many
 * results come before it unless `blind`: the parts' indexes and the page.
 */
async function inParts(
  store: FolderBlobStore,
  prefix: string,
  example: Example,
  cuts: number[],
  tableRows: number,
  { blind = false }: { blind?: boolean } = {},
) {
  const { run, results, report, layout } = example;
  const family = taskFor(run.suite);
  const parts: PartFilesIndex[] = [];
  for (let p = 0; p + 1 < cuts.length; p += 1) {
    const slice = results.slice(cuts[p], cuts[p + 1]);
    parts.push(
      await writePartFiles(
        store,
        (name) => `${prefix}scratch/${p}/${name}`,
        p,
        (async function* () {
          yield* slice;
        })(),
        family,
        run.suite,
        layout,
        report.counts.items,
        blind ? { tableRows } : { before: cuts[p]!, tableRows },
      ),
    );
  }
  await assembleReportFiles(store, prefix, report, [...parts].reverse(), run.suite, layout, { tableRows });
  return { parts, page: pageData(await text(store, `${prefix}report.html`)) };
}

describe("report.html's item table, capped", () => {
  it('is at most 100,000 items by default', () => {
    expect(ITEM_TABLE_ROWS).toBe(100_000);
  });

  it('in one pass: the first items only, the total in the page, every item in the other files', {
    timeout: 60_000,
  }, async () => {
    const example = await exampleRun(5);
    expect(example.results).toHaveLength(5);
    const store = new FolderBlobStore(await tempDir('assay-table-cap-out-'));
    const whole = await onePass(store, 'whole/', example);
    const capped = await onePass(store, 'capped/', example, 3);

    expect(whole.items.n).toBe(5);
    expect(whole.items.total).toBe(5);
    expect(tableCapNotice(whole.items)).toBeUndefined();
    expect(capped.items.n).toBe(3);
    expect(capped.items.total).toBe(5);
    // Every column holds three values, the first three items' in report order.
    for (const [name, column] of Object.entries(capped.items.columns))
      expect(lengthOf(column as Column<unknown>), name).toBe(3);
    expect(plainColumns(capped.items).id).toEqual(example.results.slice(0, 3).map((r) => r.itemId));
    expect(plainColumns(capped.items)).toEqual(
      Object.fromEntries(Object.entries(plainColumns(whole.items)).map(([name, v]) => [name, v.slice(0, 3)])),
    );
    expect(tableCapNotice(capped.items)).toBe(
      "The table shows the first 3 of 5 items (in report order); every item is in labeled.csv, every failed, unscored or wrong item in errors.txt. The filters, search and counts of the table cover its items; the figures above are the whole run's.",
    );
    // The page's figures are the whole run's.
    expect(capped.report).toEqual(whole.report);
    // The other files have every item, byte for byte as with no cap.
    for (const file of ITEM_FILES)
      expect(await text(store, `capped/${file}`), file).toBe(await text(store, `whole/${file}`));
    const labeled = csvLines(await text(store, 'capped/labeled.csv'));
    expect(labeled).toHaveLength(5);
    expect(labeled.map((line) => line.split(',')[0])).toEqual(example.results.map((r) => r.itemId));
  });

  it('in parts: the leading parts make exactly the capped table, and parts past the cap write none', {
    timeout: 60_000,
  }, async () => {
    const example = await exampleRun(12);
    const n = example.results.length;
    expect(n).toBe(12);
    const store = new FolderBlobStore(await tempDir('assay-table-cap-parts-'));
    const one = await onePass(store, 'one/', example, 5);
    expect(one.items.n).toBe(5);

    for (const cuts of [
      // An empty part, a part under the cap, one that crosses it, two past it.
      [0, 0, 3, 7, 9, n],
      // The first part alone is over the cap.
      [0, 8, n],
      // A part ends exactly at the cap.
      [0, 5, n],
    ]) {
      const prefix = `parts-${cuts.join('-')}/`;
      const { parts, page } = await inParts(store, prefix, example, cuts, 5);
      const label = cuts.join(',');
      for (const [p, index] of parts.entries()) {
        const before = cuts[p]!;
        if (before >= 5) {
          expect(index.table, `${label}: part ${p}`).toBeUndefined();
          expect(await store.get(`${prefix}scratch/${p}/table.json`), `${label}: part ${p}`).toBeUndefined();
        } else {
          expect(index.table?.rows, `${label}: part ${p}`).toBe(Math.min(index.items, 5 - before));
        }
      }
      expect(page.items.n, label).toBe(5);
      expect(page.items.total, label).toBe(12);
      const { columns: _a, ...meta } = page.items;
      const { columns: _b, ...oneMeta } = one.items;
      expect(meta, label).toEqual(oneMeta);
      for (const [name, column] of Object.entries(page.items.columns))
        expect(lengthOf(column as Column<unknown>), `${label}: ${name}`).toBe(5);
      expect(plainColumns(page.items), label).toEqual(plainColumns(one.items));
      expect(page.report, label).toEqual(one.report);
      expect(tableCapNotice(page.items), label).toContain('the first 5 of 12 items');
      for (const file of ITEM_FILES)
        expect(await text(store, `${prefix}${file}`), `${label}: ${file}`).toBe(
          await text(store, `one/${file}`),
        );
      expect(csvLines(await text(store, `${prefix}labeled.csv`))).toHaveLength(12);
    }
  });

  it('in parts not told where they start: each leading part whole, the count shown as it is', {
    timeout: 60_000,
  }, async () => {
    const example = await exampleRun(12);
    const store = new FolderBlobStore(await tempDir('assay-table-cap-blind-'));
    const one = await onePass(store, 'one/', example);
    // Parts of 3, 4 and 5: the first two have fewer than 5 items before them, and each is whole.
    const { parts, page } = await inParts(store, 'blind/', example, [0, 3, 7, 12], 5, { blind: true });
    expect(parts.map((p) => p.table?.rows)).toEqual([3, 4, 5]);
    expect(page.items.n).toBe(7);
    expect(page.items.total).toBe(12);
    for (const [name, column] of Object.entries(page.items.columns))
      expect(lengthOf(column as Column<unknown>), name).toBe(7);
    expect(plainColumns(page.items)).toEqual(
      Object.fromEntries(Object.entries(plainColumns(one.items)).map(([name, v]) => [name, v.slice(0, 7)])),
    );
    expect(tableCapNotice(page.items)).toContain('the first 7 of 12 items');
  });

  it('under the cap, in one pass and in parts: every item, and no notice', { timeout: 60_000 }, async () => {
    const example = await exampleRun(5);
    const store = new FolderBlobStore(await tempDir('assay-table-cap-under-'));
    const one = await onePass(store, 'one/', example, 5);
    const { page } = await inParts(store, 'parts/', example, [0, 2, 5], 5);
    for (const items of [one.items, page.items]) {
      expect(items.n).toBe(5);
      expect(items.total).toBe(5);
      expect(tableCapNotice(items)).toBeUndefined();
    }
    expect(plainColumns(page.items)).toEqual(plainColumns(one.items));
  });

  it("keeps a cell's text by the rows shown, not the run's items", () => {
    const s = suite();
    const family = taskFor(s);
    const layout = new FileLayout(family, s);
    const view = resultView(family, s, layout);
    const table = (items: number, cap?: number) =>
      new ItemColumns(family, s, view, items, () => false, undefined, undefined, cap ? { cap } : {}).table();
    expect(table(30_000).textLimit).toBe(textLimitFor(30_000));
    expect(table(30_000, 1_000).textLimit).toBe(textLimitFor(1_000));
    expect(textLimitFor(1_000)).toBeGreaterThan(textLimitFor(30_000));
    expect(table(10_000_000).textLimit).toBe(textLimitFor(ITEM_TABLE_ROWS));
  });
});

describe("a run aggregated in parts: each part's table starts where the parts before it end", () => {
  it('tells each part how many results come before it', { timeout: 60_000 }, async () => {
    const { run, results } = await exampleRun(12);
    const dir = await tempDir('assay-table-cap-steps-');
    const store = new LocalRunStore(join(dir, 'run'), { checkSuite: validateSuite });
    const bucket = new FolderBlobStore(join(dir, 'bucket'));
    await store.createRun({ ...run, status: 'ingesting', reportPrefix: 'reports/' });
    // Parts of 4, 4 and 4 results, by row.
    const rows = results.map((r) => r.row!).sort((a, b) => a - b);
    const partOf = (row: number) => Math.floor(rows.indexOf(row) / 4);
    for (const result of results) {
      const part = partOf(result.row!);
      await store.recordResult({ ...result, ...(part ? { part } : {}) });
    }
    for (let part = 0; part < 3; part += 1)
      await store.closePart(run.runId, part, {
        rows: rows.filter((row) => partOf(row) === part),
        invalidRows: 0,
        last: part === 2,
      });
    const trigger = new LocalAggregateTrigger();
    const steps = new MemoryChunkStore();
    const inPartsDeps = { scratch: bucket, steps, trigger, stepLeaseMs: 60_000 };
    const deps: InPartsDeps = { ...inPartsDeps, runStore: store, reports: bucket };
    await aggregateRun(
      { runStore: store, reports: bucket, leaseMs: 60_000, inParts: { ...inPartsDeps, fromResults: 0 } },
      run.runId,
    );
    const reducedKey = aggregationKey(run.runId, 'reduced.json');
    const queue = trigger.take();
    while (queue.length > 0) {
      const request = queue.shift()!;
      if (!('step' in request)) continue;
      if (request.step === 'files' && request.part === 0) {
        // The reduction handed on each part's count. Made to say the first part held a full
        // table's worth, the later parts are past the cap: their files have no table.
        const reduced = JSON.parse(await text(bucket, reducedKey)) as {
          report: Report;
          partItems?: number[];
        };
        expect(reduced.partItems).toEqual([4, 4, 4]);
        reduced.partItems = [ITEM_TABLE_ROWS, 4, 4];
        await bucket.put(reducedKey, JSON.stringify(reduced));
      }
      if (request.step === 'assemble') break;
      await aggregationStep(deps, request);
      queue.push(...trigger.take());
    }
    const index = async (part: number) =>
      JSON.parse(await text(bucket, aggregationKey(run.runId, `files/${part}.json`))) as PartFilesIndex;
    expect((await index(0)).table?.rows).toBe(4);
    expect((await index(1)).table).toBeUndefined();
    expect((await index(2)).table).toBeUndefined();
    expect((await index(2)).items).toBe(4);
    expect(await bucket.get(aggregationKey(run.runId, 'files/2/table.json'))).toBeUndefined();
  });
});
