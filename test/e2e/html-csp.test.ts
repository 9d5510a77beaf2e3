/**
 * The HTML report's Content-Security-Policy in a real browser (headless Chromium driven by
 * playwright-core): the page's own script and styles run by their hashes, and markup planted in
 * a copy of the page (an inline event handler, a script element, a style element and a style
 * attribute, as a hostile label or output would try to smuggle in) does not, while the report
 * still draws. The same copy without the policy runs every planted piece, so the test can fail.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assayCli, tempDir } from '../helpers.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** What an attacker plants right after `<body>`: each piece marks the body if it runs. */
const PLANTED = [
  '<img src="x" onerror="document.body.dataset.pwnedHandler = \'1\'">',
  '<script>document.body.dataset.pwnedScript = "1"</script>',
  '<style>body { --pwned-style: 1; }</style>',
  '<p id="planted-attr" style="--pwned-attr: 1">planted</p>',
].join('\n');

/** What ran of the planted pieces, read after the page drew itself. */
interface Outcome {
  handler: string | null;
  script: string | null;
  style: string;
  attr: string;
}

describe.skipIf(!existsSync(CHROMIUM))('the HTML report policy in a browser', { timeout: 240_000 }, () => {
  let browser: Browser;
  let dir: string;
  let html: string;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM });
    dir = await tempDir('assay-csp-');
    const out = join(dir, 'run');
    await assayCli(
      ['run', 'examples/quickstart.suite.json', '--simulate', '--out', out, '--no-progress'],
      dir,
    );
    html = await readFile(join(out, 'report.html'), 'utf8');
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Writes `text` as a page, opens it, waits until the report drew itself, reports what ran. */
  async function open(name: string, text: string) {
    const file = join(dir, name);
    await writeFile(file, text);
    const page = await browser.newPage();
    const violations: string[] = [];
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.exposeFunction('reportViolation', (directive: string) => violations.push(directive));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) =>
        (window as unknown as { reportViolation: (d: string) => void }).reportViolation(e.effectiveDirective),
      );
    });
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
    // The broken image's error event fires on its own schedule: give it a moment.
    await page.waitForTimeout(300);
    const outcome: Outcome = await page.evaluate(() => ({
      handler: document.body.dataset.pwnedHandler ?? null,
      script: document.body.dataset.pwnedScript ?? null,
      style: getComputedStyle(document.body).getPropertyValue('--pwned-style').trim(),
      attr: getComputedStyle(document.getElementById('planted-attr') as HTMLElement)
        .getPropertyValue('--pwned-attr')
        .trim(),
    }));
    const metrics = await page.$$eval('[data-metric]', (all) => all.length);
    const canvases = await page.$$eval('canvas', (all) => all.length);
    await page.close();
    return { outcome, violations, errors, metrics, canvases };
  }

  it('the policy names the page script and styles by hash, with no unsafe-inline', () => {
    const policy = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
    expect(policy).toBeDefined();
    expect(policy).not.toContain('unsafe-inline');
    expect(policy).toMatch(/script-src 'sha256-[A-Za-z0-9+/]+=*'/);
    expect(policy).toMatch(/style-src 'sha256-[A-Za-z0-9+/]+=*'/);
  });

  it('planted handlers, scripts and styles do not run; the report still draws', async () => {
    const planted = html.replace('<body>', `<body>\n${PLANTED}`);
    expect(planted).not.toBe(html);
    const { outcome, violations, errors, metrics, canvases } = await open('planted.html', planted);
    expect(outcome).toEqual({ handler: null, script: null, style: '', attr: '' });
    expect(new Set(violations)).toEqual(
      new Set(['script-src-attr', 'script-src-elem', 'style-src-elem', 'style-src-attr', 'img-src']),
    );
    expect(errors).toEqual([]);
    expect(metrics).toBeGreaterThan(0);
    expect(canvases).toBeGreaterThan(0);
  });

  it('without the policy the same planted markup runs (what the policy stops)', async () => {
    const open_ = html.replace(/<meta http-equiv="Content-Security-Policy"[^>]*>/, '');
    expect(open_).not.toBe(html);
    const { outcome } = await open('unguarded.html', open_.replace('<body>', `<body>\n${PLANTED}`));
    expect(outcome).toEqual({ handler: '1', script: '1', style: '1', attr: '1' });
  });
});
