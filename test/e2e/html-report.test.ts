/**
 * The HTML reports as a person sees them, in a real browser (headless Chromium driven by
 * playwright-core): a run's report.html, a sweep's sweep.html, a comparison's comparison.html
 * and the leaderboard page, each written by the CLI binary and opened from disk. Each page
 * shows the run's own figures (equal to the JSON files), draws its charts, narrows its item
 * table to the errors.txt count, opens an item's details, and makes no request but its own file.
 *
 * With ASSAY_SCREENSHOTS=<dir> set, it also saves a screenshot of each page there (docs/images).
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assayCli, REPO, tempDir } from '../helpers.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOTS = process.env.ASSAY_SCREENSHOTS ? resolve(REPO, process.env.ASSAY_SCREENSHOTS) : undefined;

/** How report.txt and the page write a figure: three decimals. */
const fixed = (value: number) => value.toFixed(3);

/** Opens `file` from disk; every request the page makes is recorded. */
async function open(
  browser: Browser,
  file: string,
): Promise<{ page: Page; requests: string[]; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  await page.goto(pathToFileURL(file).href);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  return { page, requests, errors };
}

/** Canvases the charts drew, with their sizes. */
async function canvases(page: Page): Promise<{ width: number; height: number }[]> {
  return page.$$eval('canvas', (all) =>
    all.map((c) => ({ width: c.getBoundingClientRect().width, height: c.getBoundingClientRect().height })),
  );
}

async function screenshot(page: Page, name: string): Promise<void> {
  if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, name), fullPage: false });
}

/** The count a heading of errors.txt states, e.g. `# Wrong by label (57)`. */
function sectionCounts(text: string): number {
  return [...text.matchAll(/^# .*\((\d+)\)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/**
 * A folder `dir/name` holding the tone judge's prompt, `data.csv` (the example replies' lines as
 * `rows` makes them: the header first) and a suite of the tone judge on it (`extra` merged in).
 */
async function toneFolder(
  dir: string,
  name: string,
  rows: (lines: string[]) => string[],
  extra: Record<string, unknown> = {},
): Promise<{ data: string; suite: string }> {
  const data = join(dir, name);
  await mkdir(join(data, 'prompts'), { recursive: true });
  await copyFile(join(REPO, 'examples', 'prompts', 'tone.md'), join(data, 'prompts', 'tone.md'));
  const lines = (await readFile(join(REPO, 'examples', 'data', 'replies.csv'), 'utf8'))
    .split(/\r?\n/)
    .filter((line) => line !== '');
  await writeFile(join(data, 'data.csv'), `${rows(lines).join('\n')}\n`);
  const suite = join(data, `${name}.suite.json`);
  await writeFile(
    suite,
    JSON.stringify({
      version: 1,
      name,
      task: 'judge',
      dataset: { path: 'data.csv', columns: { gold: 'human' } },
      judge: { prompt: 'prompts/tone.md', labels: ['polite', 'neutral', 'rude'] },
      backends: ['openai:gpt-4o-mini'],
      ...extra,
    }),
  );
  return { data, suite };
}

describe.skipIf(!existsSync(CHROMIUM))('HTML reports in a browser', { timeout: 240_000 }, () => {
  let browser: Browser;
  let dir: string;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM });
    dir = await tempDir('assay-html-');
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("a run's report.html: header, figures equal to report.json, charts, the errors filter, an item's details, no network", async () => {
    const out = join(dir, 'quickstart');
    await assayCli(
      ['run', 'examples/quickstart.suite.json', '--simulate', '--out', out, '--no-progress'],
      REPO,
    );
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
    const errorsTxt = await readFile(join(out, 'errors.txt'), 'utf8');
    const html = await readFile(join(out, 'report.html'), 'utf8');
    // One self-contained file: inline classic scripts only, nothing fetched.
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html).not.toMatch(/type="module"/);
    expect(html).not.toMatch(/<link[^>]+href=/);

    const { page, requests, errors } = await open(browser, join(out, 'report.html'));
    expect(errors).toEqual([]);
    expect(await page.textContent('[data-testid="run-id"]')).toBe(report.runId);
    expect(await page.textContent('body')).toContain('SIMULATED');
    for (const [metric, m] of Object.entries(
      report.scores.label.metrics as Record<string, { value: number }>,
    )) {
      expect(await page.textContent(`[data-metric="label.${metric}"]`)).toBe(fixed(m.value));
    }
    // The two F1 figures of the binary view are named apart: the macro of both classes, and the
    // positive class's own F1 under its name.
    const names = await page.$$eval('table.metrics tbody tr td:first-child', (tds) =>
      tds.map((td) => td.textContent),
    );
    expect(names).toEqual(expect.arrayContaining(['binary macro F1', 'F1 of TP/TN']));
    expect(names).not.toContain('binary f1');
    expect(await page.textContent('body')).toContain('Binary view: the positive class against the rest');
    // Labels keep their case wherever they head a table (the distribution's, the per-class one).
    const shown = await page.innerText('#app');
    expect(shown).toMatch(/\bFP3\b/);
    expect(shown).not.toMatch(/\bfp[123]\b/);
    expect(await page.textContent('[data-testid="items"] .tile-value')).toBe(String(report.counts.items));
    // The label scorer's confusion matrix, cell by cell as report.json has it.
    const confusion = report.scores.label.tables.confusion as Record<string, Record<string, number>>;
    const cells = await page.$$eval('.heatmap tbody td', (tds) => tds.map((td) => Number(td.textContent)));
    expect(cells).toEqual(Object.values(confusion).flatMap((row) => Object.values(row)));
    // The latency histogram is drawn.
    const drawn = await canvases(page);
    expect(drawn.length).toBeGreaterThan(0);
    for (const c of drawn) expect(c.width * c.height).toBeGreaterThan(0);

    // Every item is in the table's data; only the visible rows are in the document.
    expect(await page.getAttribute('[data-testid="shown-count"]', 'data-count')).toBe(
      String(report.counts.items),
    );
    expect(await page.$$eval('.vt-spacer .vt-row', (rows) => rows.length)).toBeLessThan(60);
    await page.selectOption('.show-filter', 'errors');
    const errorCount = sectionCounts(errorsTxt);
    expect(errorCount).toBeGreaterThan(0);
    expect(await page.getAttribute('[data-testid="shown-count"]', 'data-count')).toBe(String(errorCount));
    const badges = await page.$$eval('.vt-spacer .vt-row .badge', (b) => [
      ...new Set(b.map((x) => x.textContent)),
    ]);
    expect(badges).toEqual(['wrong']);
    await screenshot(page, 'report-run.png');

    // A row opens the item's details: its inputs, gold, output and scores.
    const firstId = await page.textContent('.vt-spacer .vt-row .vt-cell:nth-child(2)');
    await page.click('.vt-spacer .vt-row');
    await page.waitForSelector('aside.detail:not([hidden])');
    expect(await page.getAttribute('aside.detail', 'data-item')).toBe(firstId);
    const detail = await page.textContent('aside.detail');
    const results = (await readFile(join(out, 'results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const item = results.find((r) => r.itemId === firstId)!;
    expect(detail).toContain(`gold${item.gold}`);
    expect(detail).toContain(String(item.scores.label.value));
    expect(detail).toContain(item.scores.label.decidedBy);
    for (const value of Object.values(item.input as Record<string, string>)) expect(detail).toContain(value);
    // One score row per scorer, its reason in the column styled as one; the model calls by stage.
    expect(await page.$$eval('aside.detail td.why', (cells) => cells.length)).toBe(
      Object.keys(item.scores).length,
    );
    expect(detail).toContain('stages (model calls)');
    await screenshot(page, 'report-item.png');

    // Search narrows to the item searched for; a slice by gold to that gold's items.
    await page.keyboard.press('Escape');
    await page.selectOption('.show-filter', 'all');
    await page.fill('.search', item.itemId);
    await page.waitForFunction(
      (n) => document.querySelector('[data-testid="shown-count"]')?.getAttribute('data-count') !== n,
      String(report.counts.items),
    );
    expect(await page.textContent('.vt-spacer .vt-row .vt-cell:nth-child(2)')).toBe(item.itemId);
    expect(requests).toEqual([pathToFileURL(join(out, 'report.html')).href]);
  });

  it("a run aggregated in parts (the local cloud's): its item table, kept in segments, reads as one pass's", async () => {
    const one = join(dir, 'one-pass');
    const parted = join(dir, 'in-parts');
    await assayCli(
      ['run', 'examples/quickstart.suite.json', '--simulate', '--out', one, '--no-progress'],
      dir,
    );
    // Chunks of 8 KB: the 65 KB dataset is ingested in parts, and aggregated a part at a time.
    await assayCli(['cloud', 'examples/quickstart.suite.json', '--simulate', '--out', parted], dir, {
      ASSAY_INGEST_CHUNK_BYTES: '8000',
      ASSAY_AGGREGATE_IN_PARTS_FROM: '0',
    });
    expect(await readFile(join(parted, 'report.html'), 'utf8')).toContain('{"s":[');
    const report = JSON.parse(await readFile(join(parted, 'report.json'), 'utf8'));
    const errorCount = sectionCounts(await readFile(join(parted, 'errors.txt'), 'utf8'));
    expect(errorCount).toBeGreaterThan(0);

    /** What a person sees of the table: its count, and the ids of its first rows, then the errors'. */
    const seen = async (file: string) => {
      const { page, requests, errors } = await open(browser, file);
      expect(errors).toEqual([]);
      expect(requests).toHaveLength(1);
      const ids = () =>
        page.$$eval('.vt-spacer .vt-row .vt-cell:nth-child(2)', (c) => c.map((x) => x.textContent));
      const all = {
        count: await page.getAttribute('[data-testid="shown-count"]', 'data-count'),
        ids: await ids(),
      };
      await page.selectOption('.show-filter', 'errors');
      const wrong = {
        count: await page.getAttribute('[data-testid="shown-count"]', 'data-count'),
        ids: await ids(),
      };
      await page.click('.vt-spacer .vt-row');
      await page.waitForSelector('aside.detail:not([hidden])');
      const detail = await page.textContent('aside.detail');
      await page.close();
      return { all, wrong, detail };
    };
    const [whole, joined] = [await seen(join(one, 'report.html')), await seen(join(parted, 'report.html'))];
    expect(joined.all.count).toBe(String(report.counts.items));
    expect(joined.wrong.count).toBe(String(errorCount));
    expect(joined.all.ids.length).toBeGreaterThan(5);
    expect(joined.all.ids).toEqual(whole.all.ids);
    expect(joined.wrong).toEqual(whole.wrong);
    expect(joined.detail).toContain('stages (model calls)');
  });

  it("items labelled by several annotators: the scorer's section shows the human ceiling of report.json", async () => {
    const out = join(dir, 'annotated');
    await assayCli(
      ['run', 'examples/reply-tone.suite.json', '--simulate', '--out', out, '--no-progress'],
      REPO,
    );
    // Three annotators per item: the gold twice (the second one blank on every fifth item) and
    // a label the item's neighbour has on every third.
    const log = join(out, 'results.jsonl');
    const lines = (await readFile(log, 'utf8')).trim().split('\n');
    const golds = lines.map((line) => (JSON.parse(line) as { gold?: string }).gold ?? '');
    const annotated = lines.map((line, i) => {
      const record = JSON.parse(line) as { itemId?: string; gold?: string; annotations?: string[] };
      if (!record.itemId || record.gold === undefined) return line;
      const other = i % 3 === 0 ? (golds[i + 1] ?? golds[0]!) : record.gold;
      record.annotations = [record.gold, i % 5 === 0 ? '' : record.gold, other];
      return JSON.stringify(record);
    });
    await writeFile(log, `${annotated.join('\n')}\n`);
    await assayCli(['report', out], REPO);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
    const ceiling = report.scores.label.humanAgreement;
    expect(ceiling).toMatchObject({ annotators: 3, level: 'nominal' });
    expect(ceiling.items).toBe(report.counts.items);
    const txt = await readFile(join(out, 'report.txt'), 'utf8');
    expect(txt).toMatch(
      /the judge agrees with the annotators (more|less|as much) (than|as) they agree with each other/,
    );

    const { page, requests, errors } = await open(browser, join(out, 'report.html'));
    expect(errors).toEqual([]);
    for (const key of ['alpha', 'pairwiseAgreement', 'judgeAgreement', 'judgeAlpha'])
      expect(await page.textContent(`[data-metric="label.humanAgreement.${key}"]`)).toBe(
        fixed(ceiling[key].value),
      );
    // The sentence compares the judge's alpha against the annotators with theirs among themselves.
    const sentence = await page.textContent('[data-scorer="label"] [data-testid="human-ceiling"]');
    expect(sentence).toContain(
      `(Krippendorff's alpha ${fixed(ceiling.judgeAlpha.value)} vs ${fixed(ceiling.alpha.value)})`,
    );
    expect(requests).toHaveLength(1);
  });

  it("a sliced run: the slices table shows report.json's figures and filters the items by a value", async () => {
    // The tone judge's replies with a column the suite names only in `slices`.
    const subsets = ['Natural', 'Synthetic', 'Natural', ''];
    const { data, suite } = await toneFolder(
      dir,
      'sliced',
      (lines) => [`${lines[0]},subset`, ...lines.slice(1).map((line, i) => `${line},${subsets[i % 4]}`)],
      { slices: ['subset'] },
    );
    const out = join(data, 'out');
    await assayCli(['run', suite, '--simulate', '--out', out, '--no-progress'], data);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
    const natural = report.slices.subset.Natural;
    expect(natural.n).toBeGreaterThan(0);

    const { page, requests, errors } = await open(browser, join(out, 'report.html'));
    expect(errors).toEqual([]);
    const table = page.locator('[data-slice-column="subset"]');
    expect(await table.locator('tbody tr').count()).toBe(3);
    const accuracy = natural.metrics.accuracy;
    expect(await page.textContent('[data-metric="subset=Natural.accuracy"]')).toBe(
      `${fixed(accuracy.value)} [${fixed(accuracy.ci[0])}, ${fixed(accuracy.ci[1])}]`,
    );
    // "show items" filters the item table to the value's items.
    await page.click('[data-slice="subset=Natural"]');
    await page.waitForFunction(
      (n) => document.querySelector('[data-testid="shown-count"]')?.getAttribute('data-count') === String(n),
      natural.n,
    );
    expect(await page.inputValue('select[aria-label="slice value"]')).toBe('"Natural"');
    // The same filter by hand: the items without a value.
    await page.selectOption('select[aria-label="slice value"]', '"(none)"');
    await page.waitForFunction(
      (n) => document.querySelector('[data-testid="shown-count"]')?.getAttribute('data-count') === String(n),
      report.slices.subset['(none)'].n,
    );
    expect(requests).toHaveLength(1);
  });

  it('a simulated run with an invalid row says SIMULATED, not MIXED: an item nothing answered is no real answer', async () => {
    // The tone judge's replies, one of them with a label the suite does not have.
    const { data, suite } = await toneFolder(dir, 'invalid-row', (lines) => {
      expect(lines[0]!.endsWith(',human')).toBe(true);
      return [lines[0]!, lines[1]!.replace(/,[^,]*$/, ',sarcastic'), ...lines.slice(2)];
    });
    const out = join(data, 'out');
    await assayCli(['run', suite, '--simulate', '--out', out, '--no-progress'], data);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
    expect(report.counts.byFailure.invalid_row).toBe(1);
    expect(report.simulated).toBe(true);

    const { page, errors } = await open(browser, join(out, 'report.html'));
    expect(errors).toEqual([]);
    const banner = await page.textContent('.banner-sim');
    expect(banner).toBe(report.notice);
    expect(await page.innerText('#app')).not.toContain('MIXED');
  });

  it("a pairwise judge's figures read as figures: each with its CI and n, not a dump of its keys", async () => {
    const out = join(dir, 'pairwise');
    await assayCli(
      ['run', 'examples/pairwise-preference.suite.json', '--simulate', '--out', out, '--no-progress'],
      REPO,
    );
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
    const consistency = report.metrics.pairwise.positionConsistency;
    const { page, errors } = await open(browser, join(out, 'report.html'));
    expect(errors).toEqual([]);
    const row = page.locator('tr', { has: page.locator('b', { hasText: /^position consistency$/ }) });
    expect(await row.locator('td').nth(1).innerText()).toBe(
      `${fixed(consistency.value)} [${fixed(consistency.ci[0])}, ${fixed(consistency.ci[1])}] · n ${consistency.n}`,
    );
    // No figure is shown as its parts.
    expect(await page.locator('.figure b', { hasText: /^value$/ }).count()).toBe(0);
  });

  it('a number scorer against a binary gold draws its ROC curve', async () => {
    const out = join(dir, 'summedits');
    await assayCli(
      ['run', 'examples/summedits.suite.json', '--simulate', '--out', out, '--no-progress'],
      REPO,
    );
    const { page, requests, errors } = await open(browser, join(out, 'report.html'));
    expect(errors).toEqual([]);
    const captions = await page.$$eval('figcaption', (f) => f.map((x) => x.textContent));
    expect(captions).toContain('ROC curve against the binary gold');
    for (const c of await canvases(page)) expect(c.width * c.height).toBeGreaterThan(0);
    expect(requests).toHaveLength(1);
  });

  it("a sweep's sweep.html and a comparison's comparison.html show their JSON's figures", async () => {
    const out = join(dir, 'sweep');
    await assayCli(
      ['run', 'examples/physics-qa.suite.json', '--simulate', '--out', out, '--no-progress'],
      REPO,
    );
    const sweep = JSON.parse(await readFile(join(out, 'sweep.json'), 'utf8'));
    const { page, requests, errors } = await open(browser, join(out, 'sweep.html'));
    expect(errors).toEqual([]);
    expect(await page.textContent('[data-testid="sweep-id"]')).toBe(sweep.sweepId);
    for (const v of sweep.variants) {
      expect(await page.textContent(`[data-variant="${v.name}"]`)).toBe(fixed(v.rankValue.value));
    }
    // "Against the baseline": every row has a cell under each heading, the figures under theirs.
    const against = await page.evaluate(() => {
      const section = [...document.querySelectorAll('section')].find((s) =>
        s.querySelector('h2')?.textContent?.startsWith('Against the baseline'),
      );
      const table = section?.querySelector('table');
      if (!table) return null;
      return {
        headers: [...table.querySelectorAll('thead th')].map((th) => th.textContent),
        rows: [...table.querySelectorAll('tbody tr')].map((tr) =>
          [...tr.querySelectorAll('td')].map((td) => td.textContent),
        ),
      };
    });
    const expected = (
      sweep.variants as {
        name: string;
        comparison?: {
          scores: Record<string, { coverage?: { delta: number }; deltas: Record<string, { delta: number }> }>;
        };
      }[]
    ).flatMap((v) =>
      Object.values(v.comparison?.scores ?? {}).flatMap((sc) =>
        // Each scorer's coverage first, then its deltas over the items both scored.
        [...(sc.coverage ? [sc.coverage] : []), ...Object.values(sc.deltas)].map((d) => ({
          variant: v.name,
          ...d,
        })),
      ),
    );
    expect(expected.length).toBeGreaterThan(0);
    expect(against).not.toBeNull();
    expect(against!.rows).toHaveLength(expected.length);
    for (const row of against!.rows) expect(row).toHaveLength(against!.headers.length);
    const column = (name: string) => against!.headers.indexOf(name);
    const signedText = (n: number) => `${n >= 0 ? '+' : ''}${fixed(n)}`;
    expect(against!.rows.map((row) => row[column('variant')])).toEqual(expected.map((d) => d.variant));
    expect(against!.rows.map((row) => row[column('Δ')])).toEqual(expected.map((d) => signedText(d.delta)));

    // The gate requires no variant here: its last sentence names those not promoted, not in green.
    const notPromoted = (sweep.variants as { name: string; verdict: string }[])
      .filter((v) => v.verdict === 'not promoted')
      .map((v) => v.name);
    expect(sweep.gate.required).toEqual([]);
    expect(notPromoted.length).toBeGreaterThan(0);
    const outcome = page.locator('[data-testid="gate-outcome"]');
    expect(await outcome.textContent()).toBe(
      `No variant was required to pass the gate; not promoted: ${notPromoted.join(', ')}.`,
    );
    expect(await outcome.getAttribute('class')).not.toBe('good');

    const drawn = await canvases(page);
    expect(drawn).toHaveLength(1);
    expect(drawn[0]!.width * drawn[0]!.height).toBeGreaterThan(0);
    expect(requests).toEqual([pathToFileURL(join(out, 'sweep.html')).href]);
    await screenshot(page, 'report-sweep.png');

    const [base, candidate] = sweep.variants.map((v: { runId: string }) => join(out, v.runId));
    expect(await readdir(out)).toEqual(
      expect.arrayContaining(sweep.variants.map((v: { runId: string }) => v.runId)),
    );
    const cmp = join(dir, 'cmp');
    await assayCli(['compare', base, candidate, '--out', cmp], REPO);
    const comparison = JSON.parse(await readFile(join(cmp, 'comparison.json'), 'utf8'));
    const opened = await open(browser, join(cmp, 'comparison.html'));
    expect(opened.errors).toEqual([]);
    const body = await opened.page.textContent('body');
    expect(body).toContain(comparison.base.runId);
    expect(body).toContain(comparison.candidate.runId);
    for (const [name, s] of Object.entries(
      comparison.scores as Record<string, { deltas: Record<string, { delta: number }>; flipped: unknown[] }>,
    )) {
      for (const [metric, d] of Object.entries(s.deltas)) {
        const text = await opened.page.textContent(`[data-metric="${name}.${metric}"]`);
        expect(Number(text)).toBeCloseTo(d.delta, 3);
      }
      expect(await opened.page.textContent(`[data-testid="flipped-${name}"]`)).toContain(
        `Flipped items (${s.flipped.length})`,
      );
    }
    expect(opened.requests).toEqual([pathToFileURL(join(cmp, 'comparison.html')).href]);
    await screenshot(opened.page, 'report-comparison.png');

    const board = join(dir, 'leaderboard.html');
    await assayCli(['leaderboard', '--runs', out, '--html', board], REPO);
    const lb = await open(browser, board);
    expect(lb.errors).toEqual([]);
    const text = await lb.page.textContent('body');
    for (const v of sweep.variants) expect(text).toContain(v.runId);
    expect(lb.requests).toHaveLength(1);
    // Every point's label of every chart lies inside its plot: none is cut at an edge.
    for (const p of [page, lb.page]) {
      const charts = await p.$$eval('.chart[data-label-spans]', (all) =>
        all.map((c) => ({ spans: JSON.parse(c.dataset.labelSpans!), width: Number(c.dataset.plotWidth) })),
      );
      expect(charts.length).toBeGreaterThan(0);
      for (const { spans, width } of charts)
        for (const [from, to] of spans as [number, number][]) {
          expect(from).toBeGreaterThanOrEqual(0);
          expect(to).toBeLessThanOrEqual(width + 0.5);
        }
    }
  });
});
