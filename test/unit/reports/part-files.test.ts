/**
 * A run's report files written a part at a time and composed are the files one pass writes:
 * labeled.csv, errors.txt, correct.txt, report.json and report.txt byte for byte, and report.html
 * the same page but for its item table's columns, kept as their parts' segments, which the page
 * reads as the same values row by row. The results are example suites' own, run in-process on
 * the simulator, cut into parts of every shape (an empty part, a part of one result).
 */
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { taskFor } from '../../../shared/registry/registry.js';
import { writeReportFiles } from '../../../shared/reports/files.js';
import { assembleReportFiles, writePartFiles } from '../../../shared/reports/part-files.js';
import { ReportTally, reportOrder } from '../../../shared/reports/report.js';
import { simulatedExampleRun } from '../../example-run.js';
import { tempDir } from '../../helpers.js';
import { pageData, plainColumns, text } from './page-data.js';

const AT = '2026-01-01T00:00:00.000Z';

async function exampleRun(suite: string, sample?: number) {
  const { run, results } = await simulatedExampleRun(`${suite}.suite.json`, sample);
  return { run, results: reportOrder(results) };
}

describe('report files written in parts', () => {
  for (const [suite, sample] of [
    ['reply-tone', undefined],
    ['quickstart', 90],
    ['physics-qa', undefined],
  ] as const) {
    it(`are the files one pass writes (${suite})`, { timeout: 60_000 }, async () => {
      const { run, results } = await exampleRun(suite, sample);
      const family = taskFor(run.suite);
      const tally = new ReportTally(run, family);
      for (const result of results) tally.add(result);
      const report = await tally.report(AT);
      const store = new FolderBlobStore(await tempDir('assay-part-files-out-'));
      await writeReportFiles(store, 'one/', report, results, run.suite, tally.layout);

      // Cuts: an empty first part, a part of one result, and the rest in three.
      const n = results.length;
      const cuts = [0, 0, 1, Math.floor(n / 3), Math.floor((2 * n) / 3), n];
      const parts = [];
      for (let p = 0; p + 1 < cuts.length; p += 1) {
        const slice = results.slice(cuts[p], cuts[p + 1]);
        parts.push(
          await writePartFiles(
            store,
            (name) => `scratch/${p}/${name}`,
            p,
            (async function* () {
              yield* slice;
            })(),
            family,
            run.suite,
            tally.layout,
            report.counts.items,
          ),
        );
      }
      await assembleReportFiles(store, 'parts/', report, parts.reverse(), run.suite, tally.layout);

      for (const file of ['labeled.csv', 'errors.txt', 'correct.txt', 'report.json', 'report.txt'])
        expect(await text(store, `parts/${file}`), file).toBe(await text(store, `one/${file}`));
      const [whole, joined] = [
        pageData(await text(store, 'one/report.html')),
        pageData(await text(store, 'parts/report.html')),
      ];
      expect(joined.report).toEqual(whole.report);
      const { columns: _a, ...wholeMeta } = whole.items;
      const { columns: _b, ...joinedMeta } = joined.items;
      expect(joinedMeta).toEqual(wholeMeta);
      expect(Object.keys(joined.items.columns)).toEqual(Object.keys(whole.items.columns));
      expect(plainColumns(joined.items)).toEqual(plainColumns(whole.items));
      expect((await text(store, 'parts/report.html')).length).toBeGreaterThan(10_000);
    });
  }
});
