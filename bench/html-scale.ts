/**
 * The HTML report at scale: a 10K-row GEC run (simulator, zero latency) replicated into a
 * 100,000-item run folder, its reports rebuilt (report.html among them), then the page opened
 * from disk in headless Chromium: file size, the inlined assets' weight, time to the first
 * drawn page, time for the errors filter, a search, a sort and a scroll to the last row, the
 * rows in the document while scrolling (the table is virtualised), and the requests made.
 *
 *   npm run bench:html [-- --rows 100000] [--dir TMP] [--chromium /usr/bin/chromium]
 *
 * Writes bench/results/html-scale.json.
 */
import { mkdir, mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { assetBytes } from '../shared/reports/html/render.js';
import { ROOT } from './parts/data.js';
import { replicatedRun, runPart } from './parts/spawn.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    dir: { type: 'string' },
    chromium: { type: 'string', default: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' },
  },
});
const rows = Number(values.rows);
const dir = values.dir ?? (await mkdtemp(join(tmpdir(), 'assay-html-scale-')));
const out = await replicatedRun(dir, rows, 'html');
// Rebuilds every report file of the run (into reports-again/ beside it), report.html included.
const aggregated = await runPart<{ ms: number }>(
  'local-scale',
  ['--mode', 'report', '--rows', String(rows), '--dir', dir, '--out', out],
  { timeoutMs: 600_000 },
);
if (!aggregated.value) throw new Error(`the report of ${rows} results failed: ${aggregated.error}`);
const reports = join(dir, 'reports-again');
const file = join(reports, 'report.html');
const report = JSON.parse(await readFile(join(reports, 'report.json'), 'utf8'));
const errorsTxt = await readFile(join(reports, 'errors.txt'), 'utf8');
const errorCount = [...errorsTxt.matchAll(/^# .*\((\d+)\)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);

const browser = await chromium.launch({ executablePath: values.chromium });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => errors.push(e.message));
  const opened = performance.now();
  await page.goto(pathToFileURL(file).href, { timeout: 120_000 });
  await page.waitForSelector('body[data-ready="true"]', { timeout: 120_000 });
  const firstRenderMs = performance.now() - opened;
  const drawMs = Number(await page.getAttribute('body', 'data-drawn-ms'));
  const count = () => page.getAttribute('[data-testid="shown-count"]', 'data-count');

  /** Runs `action`, then waits until the shown count is `expected` (or changes); the time taken. */
  async function timed(
    action: () => Promise<void>,
    expected?: string,
  ): Promise<{ ms: number; shown: number }> {
    const before = await count();
    const started = performance.now();
    await action();
    await page.waitForFunction(
      ([b, e]) => {
        const c = document.querySelector('[data-testid="shown-count"]')?.getAttribute('data-count');
        return e === undefined ? c !== b : c === e;
      },
      [before, expected] as const,
      { timeout: 60_000 },
    );
    return { ms: Math.round(performance.now() - started), shown: Number(await count()) };
  }
  const filter = await timed(
    () => page.selectOption('.show-filter', 'errors').then(() => undefined),
    String(errorCount),
  );
  const all = await timed(() => page.selectOption('.show-filter', 'all').then(() => undefined), String(rows));
  const search = await timed(() => page.fill('.search', '99999'));
  await timed(() => page.fill('.search', ''), String(rows));
  const sortStarted = performance.now();
  await page.click('.vt-head .vt-cell:nth-child(3)');
  await page.waitForFunction(() => document.querySelector('.vt-head [aria-sort="ascending"]') !== null);
  const sortMs = Math.round(performance.now() - sortStarted);
  const scrollStarted = performance.now();
  await page.$eval('.vt-viewport', (v) => {
    v.scrollTop = v.scrollHeight;
  });
  await page.waitForFunction(() => {
    const spacer = document.querySelector('.vt-spacer');
    const last = spacer?.lastElementChild as HTMLElement | null;
    return last !== null && last !== undefined && Number.parseFloat(last.style.top) > 28 * 90_000;
  });
  const scrollMs = Math.round(performance.now() - scrollStarted);
  const rowsInDocument = await page.$$eval('.vt-spacer .vt-row', (r) => r.length);
  const openStarted = performance.now();
  // The last row is in view at the end (the rows above it include a few drawn out of view).
  await page.locator('.vt-spacer .vt-row').last().click();
  await page.waitForSelector('aside.detail:not([hidden])');
  const detailMs = Math.round(performance.now() - openStarted);

  const size = (await stat(file)).size;
  const result = {
    rows,
    items: report.counts.items,
    fileMb: Math.round((size / 1024 / 1024) * 10) / 10,
    assetsKb: Math.round(assetBytes() / 1024),
    textLimit: JSON.parse(
      (await readFile(file, 'utf8')).match(/"textLimit":(\d+)/)?.[0].replace('"textLimit":', '') ?? 'null',
    ),
    reportFilesMs: aggregated.value.ms,
    reportFilesPeakRssMb: aggregated.peakRssMb,
    firstRenderMs: Math.round(firstRenderMs),
    drawMs,
    errorsFilter: { ...filter, expected: errorCount },
    showAllMs: all.ms,
    search,
    sortMs,
    scrollToEndMs: scrollMs,
    rowsInDocument,
    openDetailMs: detailMs,
    requests: requests.length,
    pageErrors: errors,
    chromium: browser.version(),
    measuredAt: new Date().toISOString(),
  };
  if (filter.shown !== errorCount)
    throw new Error(`the errors filter shows ${filter.shown}, errors.txt has ${errorCount}`);
  await mkdir(join(ROOT, 'bench', 'results'), { recursive: true });
  await writeFile(join(ROOT, 'bench', 'results', 'html-scale.json'), `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await browser.close();
}
