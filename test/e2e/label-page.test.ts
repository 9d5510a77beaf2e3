/**
 * `assay label` end to end in a real browser (headless Chromium driven by playwright-core): a
 * judge suite whose dataset has gold on half its rows is run, `assay label` chooses items
 * without gold and writes label.html, a person answers them with the keyboard (with an undo and
 * a skip), the progress survives a reload, the exported CSV is captured, and a second run that
 * points `dataset.goldFile` at that CSV takes its labels as gold. Hostile ids (`=1+1`,
 * `@SUM(1)`, `fine;=2`) are exported with the product's formula guard and still merge, and
 * progress another page wrote into the storage (unknown items, labels outside the set, forged
 * undo steps) is dropped on load.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LabelPageData } from '../../shared/reports/html/types.js';
import { assayCli, EXAMPLE_DATA, REPO, tempDir } from '../helpers.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The example replies (24 of them) with the human label blanked on every other row. */
async function partialDataset(dir: string): Promise<void> {
  const lines = (await readFile(join(EXAMPLE_DATA, 'replies.csv'), 'utf8')).trimEnd().split('\n');
  const kept = [lines[0]!];
  for (const [i, line] of lines.slice(1, 25).entries()) {
    // The label is the last field, and no label holds a comma.
    kept.push(i % 2 === 1 ? line.replace(/,(polite|neutral|rude)$/, ',') : line);
  }
  await writeFile(join(dir, 'replies.csv'), `${kept.join('\n')}\n`);
}

function suiteJson(dataset: Record<string, unknown>): string {
  return JSON.stringify({
    version: 1,
    name: 'tone-labels',
    task: 'judge',
    dataset: { path: 'replies.csv', columns: { gold: 'human' }, partialGold: true, ...dataset },
    judge: { prompt: 'prompts/tone.md', labels: ['polite', 'neutral', 'rude'] },
    backends: ['sim:gpt-4o-mini'],
    run: { repeats: 3 },
  });
}

describe.skipIf(!existsSync(CHROMIUM))(
  'assay label: the labelling page in a browser',
  { timeout: 240_000 },
  () => {
    let browser: Browser;
    let dir: string;
    let labelPage: string;
    let labelOut: string;
    let html: string;
    let data: LabelPageData;
    const suitePath = () => join(dir, 'tone.suite.json');
    const runs = () => join(dir, 'runs');
    beforeAll(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM });
      dir = await tempDir('assay-label-');
      await mkdir(join(dir, 'prompts'));
      await copyFile(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
      await partialDataset(dir);
      await writeFile(suitePath(), suiteJson({}));
      await assayCli(['run', suitePath(), '--runs', runs(), '--no-progress'], dir);
      labelPage = join(dir, 'label.html');
      ({ stdout: labelOut } = await assayCli(
        ['label', suitePath(), '--n', '5', '--runs', runs(), '--out', labelPage, '--seed', '4'],
        dir,
      ));
      html = await readFile(labelPage, 'utf8');
      const embedded = /<script type="application\/json" id="assay-data">([\s\S]*?)<\/script>/.exec(
        html,
      )![1]!;
      data = (JSON.parse(embedded) as { kind: string; label: LabelPageData }).label;
    });
    afterAll(async () => {
      await browser?.close();
    });

    /** What the page shows now: the item on the card, whether its verdict shows, the progress line. */
    /**
     * Waits until the browser process's local storage holds what the page saved under `key`:
     * a renderer hands its writes on asynchronously, so a reload sent at once may find the
     * storage as it was (DevTools reads the browser's copy, which a reloaded page reads).
     */
    async function savedByBrowser(page: Page, key: string): Promise<void> {
      const saved = await page.evaluate((k) => localStorage.getItem(k), key);
      expect(saved).not.toBeNull();
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('DOMStorage.enable');
      const held = async () => {
        const { entries } = await cdp.send('DOMStorage.getDOMStorageItems', {
          storageId: { securityOrigin: 'file://', isLocalStorage: true },
        });
        return entries.find(([k]) => k === key)?.[1] ?? null;
      };
      await expect.poll(held).toBe(saved);
      await cdp.detach();
    }

    async function seen(page: Page) {
      return {
        item: await page.getAttribute('[data-testid=card]', 'data-item-id'),
        verdictShown: await page.isVisible('[data-testid=card] [data-testid=verdict]'),
        answer: (await page.$('[data-testid=card] [data-testid=answer]'))
          ? await page.textContent('[data-testid=card] [data-testid=answer]')
          : null,
        progress: await page.textContent('[data-testid=progress]'),
      };
    }

    it('labels with the keyboard, exports id,label,p, and a run merges the CSV as gold', async () => {
      expect(labelOut).toMatch(/12 items without gold \(12 with gold, 0 without a verdict/);
      expect(labelOut).toMatch(/chose 5 to label/);
      expect(labelOut).toMatch(/repeats: 12 items/);
      expect(html).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'none'/);
      const ids = data.items.map((item) => item.id);
      expect(ids).toHaveLength(5);

      const page = await browser.newPage({ acceptDownloads: true });
      const errors: string[] = [];
      const violations: string[] = [];
      const requests: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      page.on('request', (request) => requests.push(request.url()));
      await page.exposeFunction('reportViolation', (directive: string) => violations.push(directive));
      await page.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (e) =>
          (window as unknown as { reportViolation: (d: string) => void }).reportViolation(
            e.effectiveDirective,
          ),
        );
      });
      await page.goto(pathToFileURL(labelPage).href);
      await page.waitForSelector('body[data-ready="true"]');
      expect(await page.textContent('body')).toContain('1 / p');
      // The rubric the judge had, its own prompt first and open, as the run saw it.
      const tone = await readFile(join(REPO, 'examples', 'prompts', 'tone.md'), 'utf8');
      expect(await page.textContent('[data-testid=rubric] details[open] summary')).toBe('tone.md');
      expect(await page.textContent('[data-testid=rubric] details[open] pre')).toBe(tone);

      // The judge's verdict is not shown before an answer.
      expect(await seen(page)).toMatchObject({ item: ids[0], verdictShown: false, answer: null });
      await page.keyboard.press('1'); // polite, by its digit
      expect(await page.textContent('[data-testid=last]')).toContain(
        `Item ${ids[0]}: you said polite; the judge said`,
      );
      expect(await seen(page)).toMatchObject({ item: ids[1], verdictShown: false });
      await page.keyboard.press('r'); // rude, by its letter…
      await page.keyboard.press('u'); // …undone: back on the item, unanswered
      expect(await seen(page)).toMatchObject({ item: ids[1], verdictShown: false, answer: null });
      await page.keyboard.press('n'); // neutral
      await page.keyboard.press('s'); // skip the third
      expect(await seen(page)).toMatchObject({
        item: ids[3],
        progress: '2 labelled, 1 skipped, 2 to go (of 5)',
      });
      await page.keyboard.press('ArrowLeft');
      expect(await seen(page)).toMatchObject({ item: ids[2], verdictShown: false, answer: 'skipped' });
      await page.keyboard.press('ArrowLeft');
      expect(await seen(page)).toMatchObject({ item: ids[1], verdictShown: true, answer: 'you: neutral' });
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('3'); // rude
      expect(await seen(page)).toMatchObject({
        item: ids[4],
        progress: '3 labelled, 1 skipped, 1 to go (of 5)',
      });

      // The progress is kept by the browser: a reload finds it (once the browser holds what the
      // page saved: the page's writes reach it in the background).
      await savedByBrowser(page, data.storageKey);
      await page.reload();
      await page.waitForSelector('body[data-ready="true"]');
      expect(await seen(page)).toMatchObject({
        item: ids[4],
        progress: '3 labelled, 1 skipped, 1 to go (of 5)',
      });

      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.click('[data-testid=export]'),
      ]);
      const csvPath = join(dir, 'labels.csv');
      await download.saveAs(csvPath);
      const csv = await readFile(csvPath, 'utf8');
      // p: the chance the item was chosen times the share of the page labelled (3 of 5).
      const p = (id: string) =>
        String(Number((data.items.find((item) => item.id === id)!.p * (3 / 5)).toPrecision(12)));
      expect(csv).toBe(
        [
          'id,label,p',
          `${ids[0]},polite,${p(ids[0]!)}`,
          `${ids[1]},neutral,${p(ids[1]!)}`,
          `${ids[3]},rude,${p(ids[3]!)}`,
          '',
        ].join('\n'),
      );
      expect(errors).toEqual([]);
      expect(violations).toEqual([]);
      // Nothing but the page itself (and the CSV's blob) was ever fetched.
      expect(requests.filter((url) => !url.startsWith('file:') && !url.startsWith('blob:'))).toEqual([]);
      await page.close();

      // A run with the CSV as gold takes the three labels: those items now have gold.
      await writeFile(suitePath(), suiteJson({ goldFile: csvPath }));
      await assayCli(['run', suitePath(), '--runs', runs(), '--no-progress'], dir);
      const folders = (await readdir(runs(), { withFileTypes: true })).filter((e) => e.isDirectory());
      expect(folders).toHaveLength(2);
      const gold = new Map<string, string | undefined>();
      let report: { scores: Record<string, { ppi?: { nLabelled?: number } }> } | undefined;
      for (const folder of folders) {
        const run = JSON.parse(await readFile(join(runs(), folder.name, 'run.json'), 'utf8')) as {
          suite: { dataset: { goldFile?: string } };
        };
        if (!run.suite.dataset.goldFile) continue;
        const lines = (await readFile(join(runs(), folder.name, 'results.jsonl'), 'utf8')).trim().split('\n');
        for (const line of lines) {
          const result = JSON.parse(line) as { itemId: string; gold?: string };
          gold.set(result.itemId, result.gold);
        }
        report = JSON.parse(await readFile(join(runs(), folder.name, 'report.json'), 'utf8'));
      }
      expect(gold.size).toBe(24);
      expect([gold.get(ids[0]!), gold.get(ids[1]!), gold.get(ids[2]!), gold.get(ids[3]!)]).toEqual([
        'polite',
        'neutral',
        undefined,
        'rude',
      ]);
      expect([...gold.values()].filter((g) => g !== undefined)).toHaveLength(15);
      expect(report?.scores.label?.ppi?.nLabelled).toBe(15);
    });

    it('still labels and exports when the browser blocks storage, and says progress is not saved', async () => {
      const page = await browser.newPage({ acceptDownloads: true });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.addInitScript(() => {
        Object.defineProperty(window, 'localStorage', {
          get() {
            throw new DOMException('storage is blocked', 'SecurityError');
          },
        });
      });
      await page.goto(pathToFileURL(labelPage).href);
      await page.waitForSelector('body[data-ready="true"]');
      expect(await page.textContent('[data-testid=storage]')).toMatch(/does not let the page save progress/);
      await page.keyboard.press('2');
      expect(await page.textContent('[data-testid=progress]')).toBe('1 labelled, 0 skipped, 4 to go (of 5)');
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.click('[data-testid=export]'),
      ]);
      const csvPath = join(dir, 'blocked.csv');
      await download.saveAs(csvPath);
      expect(await readFile(csvPath, 'utf8')).toBe(
        `id,label,p\n${data.items[0]!.id},neutral,${Number((data.items[0]!.p * (1 / 5)).toPrecision(12))}\n`,
      );
      expect(errors).toEqual([]);
      await page.close();
    });

    it('says what is missing when the suite has no run', async () => {
      const empty = join(dir, 'no-runs');
      await expect(assayCli(['label', suitePath(), '--runs', empty], dir)).rejects.toMatchObject({
        stderr: expect.stringMatching(/suite tone-labels has no run in .*no-runs\/: run it first/),
      });
    });
  },
);

/** Six replies without gold, three of them with ids a spreadsheet would run as formulas. */
const HOSTILE_IDS = ['=1+1', '@SUM(1)', 'fine;=2', 'r4', 'r5', 'r6'];

describe.skipIf(!existsSync(CHROMIUM))(
  'assay label: hostile ids and a rewritten storage',
  { timeout: 240_000 },
  () => {
    let browser: Browser;
    let dir: string;
    let labelPage: string;
    let data: LabelPageData;
    const suitePath = () => join(dir, 'hostile.suite.json');
    const runs = () => join(dir, 'runs');
    const suite = (dataset: Record<string, unknown>) =>
      JSON.stringify({
        version: 1,
        name: 'hostile-labels',
        task: 'judge',
        dataset: { path: 'replies.csv', columns: { gold: 'human' }, partialGold: true, ...dataset },
        judge: { prompt: 'prompts/tone.md', labels: ['polite', 'neutral', 'rude'] },
        backends: ['sim:gpt-4o-mini'],
      });
    beforeAll(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM });
      dir = await tempDir('assay-label-hostile-');
      await mkdir(join(dir, 'prompts'));
      await copyFile(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
      const rows = HOSTILE_IDS.map((id, i) => `"${id}",Where is order ${i}?,It shipped.,`);
      await writeFile(join(dir, 'replies.csv'), `id,customer_message,reply,human\n${rows.join('\n')}\n`);
      await writeFile(suitePath(), suite({}));
      await assayCli(['run', suitePath(), '--runs', runs(), '--no-progress'], dir);
      labelPage = join(dir, 'label.html');
      await assayCli(['label', suitePath(), '--n', '6', '--runs', runs(), '--out', labelPage], dir);
      const html = await readFile(labelPage, 'utf8');
      const embedded = /<script type="application\/json" id="assay-data">([\s\S]*?)<\/script>/.exec(
        html,
      )![1]!;
      data = (JSON.parse(embedded) as { label: LabelPageData }).label;
    });
    afterAll(async () => {
      await browser?.close();
    });

    it('drops stored answers it did not make, and exports ids with the formula guard that still merge', async () => {
      const ids = data.items.map((item) => item.id);
      expect([...ids].sort()).toEqual([...HOSTILE_IDS].sort());
      const [first, second, third, fourth, fifth] = ids as [string, string, string, string, string];
      // What another page opened from disk could have written under this page's key.
      const forged = {
        answers: {
          [first]: { label: 'polite' },
          [second]: { label: 'evil' },
          'not-an-item': { label: 'rude' },
          [third]: { label: 'neutral', extra: '=1+1' },
          [fourth]: { skip: true },
          [fifth]: 'rude',
        },
        history: [
          { id: fifth, before: { label: 'evil' } },
          { id: 'not-an-item', before: null },
          { id: first, before: null },
        ],
        at: 99,
      };
      const page = await browser.newPage({ acceptDownloads: true });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.addInitScript(
        ([key, value]) => {
          if (!sessionStorage.getItem('forged')) {
            localStorage.setItem(key!, value!);
            sessionStorage.setItem('forged', '1');
          }
        },
        [data.storageKey, JSON.stringify(forged)],
      );
      await page.goto(pathToFileURL(labelPage).href);
      await page.waitForSelector('body[data-ready="true"]');
      // Kept: the first item's label and the fourth's skip; the position outside the page is reset.
      expect(await page.textContent('[data-testid=progress]')).toBe('1 labelled, 1 skipped, 4 to go (of 6)');
      expect(await page.getAttribute('[data-testid=card]', 'data-item-id')).toBe(first);
      expect(await page.textContent('body')).not.toContain('evil');
      // Only the undo step that passed the check is there: it takes the first label back, then nothing.
      await page.keyboard.press('u');
      expect(await page.textContent('[data-testid=progress]')).toBe('0 labelled, 1 skipped, 5 to go (of 6)');
      await page.keyboard.press('u');
      expect(await page.textContent('[data-testid=last]')).toBe('Nothing to undo.');

      // Label every item (the skipped fourth too, by moving onto it).
      const labelled = new Map<string, string>();
      for (let i = 0; i < ids.length; i += 1) {
        const at = await page.getAttribute('[data-testid=card]', 'data-item-id');
        const label = ['polite', 'neutral', 'rude'][i % 3]!;
        await page.keyboard.press(String((i % 3) + 1));
        labelled.set(at!, label);
      }
      expect(await page.textContent('[data-testid=progress]')).toBe('6 labelled, 0 skipped, 0 to go (of 6)');
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.click('[data-testid=export]'),
      ]);
      const csvPath = join(dir, 'labels.csv');
      await download.saveAs(csvPath);
      const csv = await readFile(csvPath, 'utf8');
      expect(csv).not.toContain('evil');
      const guarded: Record<string, string> = {
        '=1+1': "'=1+1",
        '@SUM(1)': "'@SUM(1)",
        'fine;=2': `"fine;'=2"`,
      };
      for (const id of ids) expect(csv).toContain(`\n${guarded[id] ?? id},${labelled.get(id)},`);
      // No cell, nor any part a spreadsheet splitting on ; or , would make a cell, starts a formula.
      expect(csv).not.toMatch(/(^|[\n,;])\s*[=@+]/);
      expect(errors).toEqual([]);
      await page.close();

      // The guard comes off when the file is read back as gold: every item gets its label.
      await writeFile(suitePath(), suite({ goldFile: csvPath }));
      await assayCli(['run', suitePath(), '--runs', runs(), '--no-progress'], dir);
      const folders = (await readdir(runs(), { withFileTypes: true })).filter((e) => e.isDirectory());
      const gold = new Map<string, string | undefined>();
      for (const folder of folders) {
        const run = JSON.parse(await readFile(join(runs(), folder.name, 'run.json'), 'utf8')) as {
          suite: { dataset: { goldFile?: string } };
        };
        if (!run.suite.dataset.goldFile) continue;
        const lines = (await readFile(join(runs(), folder.name, 'results.jsonl'), 'utf8')).trim().split('\n');
        for (const line of lines) {
          const result = JSON.parse(line) as { itemId: string; gold?: string };
          gold.set(result.itemId, result.gold);
        }
      }
      expect(Object.fromEntries(gold)).toEqual(Object.fromEntries(labelled));
    });
  },
);
