/**
 * A budget holds under concurrency: each call reserves the most it may cost before it is sent,
 * so eight workers cannot all pass the check at once and overshoot. And a model without a price
 * is never free to a budget: a run with a budget refuses it before any call, unless the suite
 * prices it; a run without one shows its cost as unpriced, never $0. Through the CLI, the real
 * OpenAI SDK against the local HTTP fake of the API.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDED_PRICES, maxCostOf } from '../../shared/lib/providers/pricing.js';
import type { Report } from '../../shared/model/report.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, suiteInput, tempDir } from '../helpers.js';

const GERMAN = join(REPO, 'examples', 'data', 'gold_de.csv');
/** Every answer bills the most output a request allows, so each call costs about its reservation. */
const MAX_TOKENS = 400;

let fake: VendorFake;
beforeAll(async () => {
  fake = await startVendorFake(async () => {
    // A moment per answer, so the eight workers have calls in flight together.
    await new Promise((resolve) => setTimeout(resolve, 5));
    return { text: '{"label":"TP"}', usage: { output: MAX_TOKENS } };
  });
});
afterAll(() => fake.close());

async function assayIn(dir: string, suite: Record<string, unknown>, ...args: string[]) {
  await writeFile(join(dir, 'suite.json'), JSON.stringify(suiteInput(suite)));
  const env = { ...process.env, ...fake.env, ASSAY_CACHE_DIR: join(dir, 'cache') };
  return promisify(execFile)(
    process.execPath,
    [
      join(REPO, 'bin', 'assay.mjs'),
      'run',
      'suite.json',
      '--out',
      join(dir, 'run'),
      '--no-progress',
      ...args,
    ],
    { cwd: dir, env },
  ).then(
    (out) => ({ code: 0, ...out }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

const reportOf = async (dir: string) =>
  JSON.parse(await readFile(join(dir, 'run', 'report.json'), 'utf8')) as Report;

describe('a budget under concurrency', { timeout: 180_000 }, () => {
  it('never spends more than the budget plus one call: the German GEC run at concurrency 8', async () => {
    const dir = await tempDir('assay-reserve-');
    // Room for three or so calls: eight workers checking only what was spent would send eight.
    const budgetUsd = 0.001;
    const out = await assayIn(dir, {
      name: 'reserve-de',
      judge: 'edit',
      dataset: { path: GERMAN, lang: 'de' },
      backends: ['openai:gpt-4o-mini'],
      params: { maxTokens: MAX_TOKENS },
      run: { concurrency: 8, sample: { n: 40, seed: 1 }, budgetUsd, cache: false },
    });
    expect(out.code, out.stderr).toBe(0);
    const report = await reportOf(dir);
    // The largest call of the run: a prompt longer than any of its items' (about 500 tokens), the most output.
    const oneCall = maxCostOf(EMBEDDED_PRICES, 'openai:gpt-4o-mini', {
      prompt: 'x'.repeat(2_400),
      maxTokens: MAX_TOKENS,
    }).usd;
    expect(report.cost.totalUsd).toBeGreaterThan(0);
    expect(report.cost.totalUsd).toBeLessThanOrEqual(budgetUsd + oneCall);
    // The budget stopped the run well before its 40 items (each call costs about $0.0003).
    expect(report.counts.byFailure.budget ?? 0).toBeGreaterThan(30);
    expect(report.counts.items).toBe(40);
    expect(report.cost.priced).toBe(true);
  });
});

describe('a model without a price', { timeout: 180_000 }, () => {
  const unpriced = {
    name: 'unpriced',
    judge: 'edit',
    dataset: { path: GERMAN, lang: 'de' },
    backends: ['openai:my-finetune-unpriced'],
  };

  it('is refused by a run with a budget before any call, naming it and how to price it', async () => {
    const dir = await tempDir('assay-unpriced-');
    const before = fake.requests.length;
    const out = await assayIn(dir, { ...unpriced, run: { sample: { n: 4, seed: 1 }, budgetUsd: 1 } });
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain('openai:my-finetune-unpriced');
    expect(out.stderr).toContain('run.prices');
    expect(out.stderr).toContain('--prices');
    expect(fake.requests.length).toBe(before);
  });

  it('runs under a budget once the suite prices it (run.prices), at that price', async () => {
    const dir = await tempDir('assay-unpriced-');
    const prices = { models: { 'openai:my-finetune-unpriced': { input: 1, output: 2 } } };
    const out = await assayIn(dir, { ...unpriced, run: { sample: { n: 4, seed: 1 }, budgetUsd: 1, prices } });
    expect(out.code, out.stderr).toBe(0);
    const report = await reportOf(dir);
    expect(report.cost.priced).toBe(true);
    // Four calls, each at least 400 output tokens at $2 per 1M.
    expect(report.cost.totalUsd).toBeGreaterThanOrEqual(4 * 400 * 2e-6);
  });

  it('shows as unpriced, never $0, in a run without a budget', async () => {
    const dir = await tempDir('assay-unpriced-');
    const out = await assayIn(dir, { ...unpriced, run: { sample: { n: 4, seed: 1 } } });
    expect(out.code, out.stderr).toBe(0);
    const report = await reportOf(dir);
    expect(report.cost.priced).toBe(false);
    expect(report.cost.unpriced).toEqual(['openai:my-finetune-unpriced']);
    expect(out.stdout).toContain('unpriced');
    expect(out.stdout).not.toMatch(/Cost \$0(\.0+)?\b/);
    const text = await readFile(join(dir, 'run', 'report.txt'), 'utf8');
    expect(text).toContain('unpriced (openai:my-finetune-unpriced)');

    // report.html, in a real browser: the cost tiles say unpriced.
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    });
    try {
      const page = await browser.newPage();
      await page.goto(pathToFileURL(join(dir, 'run', 'report.html')).href);
      await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
      expect(await page.textContent('[data-testid="cost"] .tile-value')).toBe('unpriced');
      expect(await page.textContent('[data-testid="cost"] .tile-label')).toContain(
        'openai:my-finetune-unpriced',
      );
    } finally {
      await browser.close();
    }
  });
});
