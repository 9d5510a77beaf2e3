/**
 * A run larger than report.html's item table in a real browser (headless Chromium driven by
 * playwright-core): the page says above the table how many of the run's items it shows and where
 * the rest are, the table holds only those, and the page's figures are the whole run's. A run
 * within the cap shows no such notice. The cap is made small (3 of 5 items) for the test.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../shared/adapters/local/folder-blob-store.js';
import { taskFor } from '../../shared/registry/registry.js';
import { writeReportFiles } from '../../shared/reports/files.js';
import { ReportTally, reportOrder } from '../../shared/reports/report.js';
import { simulatedExampleRun } from '../example-run.js';
import { tempDir } from '../helpers.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe.skipIf(!existsSync(CHROMIUM))('a capped item table in a browser', { timeout: 120_000 }, () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('says it shows the first 3 of 5 items, and shows those; a run within the cap says nothing', async () => {
    const dir = await tempDir('assay-html-cap-');
    const { run, results: read } = await simulatedExampleRun('quickstart.suite.json', 5);
    const results = reportOrder(read);
    const tally = new ReportTally(run, taskFor(run.suite));
    for (const r of results) tally.add(r);
    const report = await tally.report('2026-01-01T00:00:00.000Z');
    const store = new FolderBlobStore(join(dir, 'out'));
    await writeReportFiles(store, 'capped/', report, results, run.suite, tally.layout, { tableRows: 3 });
    await writeReportFiles(store, 'whole/', report, results, run.suite, tally.layout, { tableRows: 5 });

    const seen = async (file: string) => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(pathToFileURL(join(store.root, file)).href);
      await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
      const notice = await page.$('[data-testid="table-cap"]');
      const seenPage = {
        errors,
        notice: notice ? await notice.textContent() : null,
        count: await page.getAttribute('[data-testid="shown-count"]', 'data-count'),
        items: await page.textContent('[data-testid="items"] .tile-value'),
        ids: await page.$$eval('.vt-spacer .vt-row .vt-cell:nth-child(2)', (c) =>
          c.map((x) => x.textContent),
        ),
      };
      await page.close();
      return seenPage;
    };
    const capped = await seen('capped/report.html');
    expect(capped.errors).toEqual([]);
    expect(capped.notice).toContain('The table shows the first 3 of 5 items');
    expect(capped.notice).toContain('every item is in labeled.csv');
    expect(capped.count).toBe('3');
    expect(capped.ids).toHaveLength(3);
    // The count tile is the whole run's.
    expect(capped.items).toBe('5');

    const whole = await seen('whole/report.html');
    expect(whole.errors).toEqual([]);
    expect(whole.notice).toBeNull();
    expect(whole.count).toBe('5');
    expect(whole.ids.slice(0, 3)).toEqual(capped.ids);
  });
});
