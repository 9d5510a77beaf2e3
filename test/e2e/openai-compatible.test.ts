/**
 * `openai-compatible:<service>/<model>` through the CLI as a user runs it: `assay run SUITE
 * --backend openai-compatible:local/llama-3` with `LOCAL_BASE_URL` pointing at the local fake
 * of the OpenAI API (the real openai SDK in the child process talks to it over HTTP). The
 * requests reach the fake with the model as the server names it and no key, the report names
 * the backend, and `run.limits` under `openai-compatible:local/*` holds the calls in flight to
 * its `concurrency`. Without `LOCAL_BASE_URL` the run stops, naming the variable.
 *
 * The fake counts the requests it holds at once: it holds each until the number a run may have
 * in flight has arrived (one that sends fewer would never be answered), so the peak it sees is
 * what the run sent at once (see `holdUntil`).
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { assayCli, REPO, tempDir } from '../helpers.js';

const ITEMS = 6;
const ANSWER = '{"label":"polite","reason":"fake"}';
let fake: VendorFake;
let dir: string;

/**
 * The fake's handler for one run: holds the requests until `release` are out at once (or every
 * item's has come), and keeps the peak. With `grace`, a full set is held that much longer
 * before it is answered, so a run that sends more than `release` at once has them arrive while
 * the set is still held and shows a higher peak; a run that keeps to `release` sends no more
 * until an answer comes, so it passes however long or short the wait is.
 */
function holdUntil(release: number, graceMs = 0) {
  const state = { out: 0, peak: 0, arrived: 0 };
  let held: (() => void)[] = [];
  const releaseAll = () => {
    for (const go of held) go();
    held = [];
  };
  fake.setHandler(async () => {
    state.arrived += 1;
    state.out += 1;
    state.peak = Math.max(state.peak, state.out);
    await new Promise<void>((resolve) => {
      held.push(resolve);
      if (state.arrived >= ITEMS || state.out > release) releaseAll();
      else if (state.out === release) {
        if (graceMs === 0) releaseAll();
        else setTimeout(releaseAll, graceMs);
      }
    });
    state.out -= 1;
    return { text: ANSWER };
  });
  return state;
}

async function writeSuite(name: string, run: Record<string, unknown>): Promise<string> {
  const path = join(dir, `${name}.suite.json`);
  await writeFile(
    path,
    JSON.stringify({
      version: 1,
      name,
      task: 'judge',
      dataset: { path: 'replies.csv', columns: { gold: 'human' } },
      judge: { prompt: 'prompts/tone.md', labels: ['polite', 'neutral', 'rude'] },
      backends: ['openai:gpt-4o-mini'],
      run: { concurrency: 8, cache: false, ...run },
    }),
  );
  return path;
}

const run = (suitePath: string, out: string, env: Record<string, string>) =>
  assayCli(
    ['run', suitePath, '--backend', 'openai-compatible:local/llama-3', '--out', out, '--no-progress'],
    dir,
    env,
  );

beforeAll(async () => {
  fake = await startVendorFake();
  dir = await tempDir('assay-compatible-');
  await mkdir(join(dir, 'prompts'));
  await copyFile(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
  const rows = Array.from({ length: ITEMS }, (_, i) => `r${i},Where is order ${i}?,It shipped today.,polite`);
  await writeFile(join(dir, 'replies.csv'), `id,customer_message,reply,human\n${rows.join('\n')}\n`);
});

afterAll(async () => {
  await fake?.close();
});

describe('openai-compatible:local/llama-3 through the CLI', { timeout: 240_000 }, () => {
  it('calls the server LOCAL_BASE_URL names, with the model as it knows it, and reports the backend', async () => {
    fake.reset();
    // No limit declared: all the items' calls go out at once (the run's concurrency is 8).
    const held = holdUntil(ITEMS);
    const out = join(dir, 'plain');
    await run(await writeSuite('plain', {}), out, { LOCAL_BASE_URL: `${fake.url}/v1` });

    expect(fake.requests).toHaveLength(ITEMS);
    for (const request of fake.requests) {
      expect(request.path).toBe('/v1/chat/completions');
      expect(request.model).toBe('llama-3');
      // No LOCAL_API_KEY: the placeholder the SDK needs, which a keyless server ignores.
      expect(request.headers.authorization).toBe('Bearer unused');
    }
    expect(held.peak).toBe(ITEMS);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as Report;
    expect(report.backends).toEqual(['openai-compatible:local/llama-3']);
    expect(report.counts).toMatchObject({ items: ITEMS, scored: ITEMS, failed: 0 });
    expect(await readFile(join(out, 'report.txt'), 'utf8')).toContain('openai-compatible:local/llama-3');
  });

  it('holds the calls in flight to the concurrency run.limits gives the service', async () => {
    fake.reset();
    const held = holdUntil(2, 150);
    const out = join(dir, 'limited');
    const suitePath = await writeSuite('limited', {
      limits: { 'openai-compatible:local/*': { concurrency: 2 } },
    });
    await run(suitePath, out, { LOCAL_BASE_URL: `${fake.url}/v1`, LOCAL_API_KEY: 'local-key' });

    expect(fake.requests).toHaveLength(ITEMS);
    expect(fake.requests[0]!.headers.authorization).toBe('Bearer local-key');
    expect(held.peak).toBe(2);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as Report;
    expect(report.counts).toMatchObject({ items: ITEMS, scored: ITEMS, failed: 0 });
  });

  it('without LOCAL_BASE_URL, stops before any call, naming the variable', async () => {
    fake.reset();
    const error = await run(await writeSuite('unset', {}), join(dir, 'unset'), {}).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(error?.code).not.toBe(0);
    expect(error?.stderr).toContain('openai-compatible:local/llama-3 needs LOCAL_BASE_URL');
    expect(fake.requests).toHaveLength(0);
  });
});
