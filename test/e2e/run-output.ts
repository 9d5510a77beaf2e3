/**
 * Reading what `assay run --out` wrote, for the e2e tests: report.json, the lines of
 * results.jsonl, and report.html drawn in Chromium when the machine has it.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { ItemResult } from '../../shared/model/model.js';
import type { Report } from '../../shared/model/report.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Chromium, launched; undefined where it is not installed (the browser checks are skipped). */
export async function launchBrowser(): Promise<Browser | undefined> {
  return existsSync(CHROMIUM) ? chromium.launch({ executablePath: CHROMIUM }) : undefined;
}

export async function readReport(out: string): Promise<Report> {
  return JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as Report;
}

/** Every line of results.jsonl, in the file's order. */
export async function readResultLines(out: string): Promise<ItemResult[]> {
  const text = await readFile(join(out, 'results.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as ItemResult);
}

/** Opens a report.html from disk and waits until it is drawn; page errors are collected. */
export async function openPage(browser: Browser, file: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(pathToFileURL(file).href);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  return { page, errors };
}
