/**
 * Declared rate limits against a vendor that enforces them: a loopback fake of the OpenAI API
 * that answers 429 + retry-after over 1,200 requests per minute. A run that declares the limit
 * (in the suite, or in ASSAY_LIMITS) paces itself and is barely refused; a run that declares
 * nothing is refused more, backs off (AIMD and retry-after) and still loses nothing.
 */
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocal } from '../../cli/local-run.js';
import type { Report } from '../../shared/model/report.js';
import { stampSendTimes, startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, tempDir } from '../helpers.js';

const RPM = 1200;
const ITEMS = 120;
let fake: VendorFake;
let dir: string;
let unstamp: (() => void) | undefined;

beforeAll(async () => {
  // Metered when each request was sent, not when this busy process got round to reading it.
  unstamp = stampSendTimes();
  // Each answer after 200 ms, as a model would take.
  fake = await startVendorFake(
    async () => {
      await delay(200);
      return { text: '{"label":"polite","reason":"fake"}' };
    },
    { rpm: RPM },
  );
  dir = await tempDir('assay-limits-');
  await mkdir(join(dir, 'prompts'));
  await copyFile(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
  const rows = Array.from({ length: ITEMS }, (_, i) => `r${i},Where is order ${i}?,It shipped today.,polite`);
  await writeFile(join(dir, 'replies.csv'), `id,customer_message,reply,human\n${rows.join('\n')}\n`);
});

afterAll(async () => {
  unstamp?.();
  await fake?.close();
});

async function run(name: string, run: Record<string, unknown>, env: Record<string, string> = {}) {
  const suitePath = join(dir, `${name}.suite.json`);
  await writeFile(
    suitePath,
    JSON.stringify({
      version: 1,
      name,
      task: 'judge',
      dataset: { path: 'replies.csv', columns: { gold: 'human' } },
      judge: { prompt: 'prompts/tone.md', labels: ['polite', 'neutral', 'rude'] },
      backends: ['openai:gpt-4o-mini'],
      run: { concurrency: 32, cache: false, ...run },
    }),
  );
  fake.reset();
  const { outcome } = await runLocal({
    suitePath,
    outDir: join(dir, name),
    env: { ...fake.env, ...env },
    cachePath: join(dir, 'cache.jsonl'),
  });
  if (outcome.status !== 'written') throw new Error('run not aggregated');
  return { report: outcome.report as Report, requests: fake.requests.length, throttled: fake.throttled };
}

describe('declared rate limits against a vendor that enforces them', { timeout: 60_000 }, () => {
  it('a limit declared in the suite: every item scored, few 429s', async () => {
    const { report, requests, throttled } = await run('declared', {
      limits: { 'gpt-4o-mini': { rpm: RPM } },
    });
    expect(report.counts).toMatchObject({ items: ITEMS, scored: ITEMS, failed: 0 });
    expect(requests).toBe(ITEMS);
    expect(throttled).toBeLessThanOrEqual(ITEMS * 0.1);
  });

  it('the same limit in ASSAY_LIMITS', async () => {
    const { report, throttled } = await run('from-env', {}, { ASSAY_LIMITS: `openai:gpt-4o-mini=${RPM}rpm` });
    expect(report.counts).toMatchObject({ items: ITEMS, scored: ITEMS, failed: 0 });
    expect(throttled).toBeLessThanOrEqual(ITEMS * 0.1);
  });

  it('no limit declared: refused more, backs off, loses nothing', async () => {
    // The fake's window is of real time: on a loaded machine a call can be refused more than
    // the default 5 attempts allow, so this run keeps the most the schema allows (what it tests
    // is that backing off loses nothing, not how few attempts it takes).
    const { report, throttled } = await run('undeclared', { maxAttempts: 10 });
    expect(report.counts).toMatchObject({ items: ITEMS, scored: ITEMS, failed: 0 });
    // 32 calls at once against a burst of 20: at least the first 12 are refused.
    expect(throttled).toBeGreaterThanOrEqual(12);
  });
});
