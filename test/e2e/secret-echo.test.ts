/**
 * A vendor that echoes the request's key in its error body (some proxies and gateways do, and
 * OpenAI quotes part of a wrong key) must not get it written anywhere: through the CLI and the
 * real OpenAI SDK against the local fake of the API, every item fails on a 401 whose body
 * carries the key, and no file of the run holds it — the failure says `[redacted]` instead. The
 * same for a model that echoes the key inside an answer that is otherwise fine: the items are
 * scored, and neither the run's files nor the LLM cache hold the key.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, suiteInput, tempDir } from '../helpers.js';

const KEY = 'sk-test-SECRET123-do-not-store';

let fake: VendorFake;
beforeAll(async () => {
  fake = await startVendorFake(() => ({
    status: 401,
    body: {
      error: {
        message: `Incorrect API key provided: ${KEY}. Request headers: {"authorization": "Bearer ${KEY}"}`,
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      },
    },
  }));
});
afterAll(() => fake.close());

describe('a key echoed in a provider error body', { timeout: 120_000 }, () => {
  it('is stored in no file of the run', async () => {
    const dir = await tempDir('assay-secret-echo-');
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify(
        suiteInput({
          name: 'secret-echo',
          judge: 'edit',
          dataset: { path: join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv') },
          backends: ['openai:gpt-4o-mini'],
        }),
      ),
    );
    const env = { ...process.env, ...fake.env, OPENAI_API_KEY: KEY, ASSAY_CACHE_DIR: join(dir, 'cache') };
    const out = join(dir, 'out');
    const run = await promisify(execFile)(
      process.execPath,
      [join(REPO, 'bin', 'assay.mjs'), 'run', 'suite.json', '--out', out, '--no-progress'],
      { cwd: dir, env },
    ).catch((error: { stdout: string; stderr: string }) => error);
    expect(fake.requests.length).toBeGreaterThan(0);
    expect(`${run.stdout}${run.stderr}`).not.toContain('SECRET123');
    const files = await readdir(out);
    expect(files).toEqual(
      expect.arrayContaining(['results.jsonl', 'errors.txt', 'labeled.csv', 'report.html']),
    );
    for (const file of files)
      expect(await readFile(join(out, file), 'utf8'), file).not.toContain('SECRET123');
    const results = (await readFile(join(out, 'results.jsonl'), 'utf8'))
      .split('\n')
      .filter((line) => line.endsWith('}'))
      .map((line) => JSON.parse(line) as { failure?: { kind: string; message: string } });
    const provider = results.filter((r) => r.failure?.kind === 'provider');
    expect(provider.length).toBeGreaterThan(0);
    for (const r of provider) expect(r.failure!.message).toContain('[redacted]');
  });
});

describe('a key echoed inside a successful answer', { timeout: 120_000 }, () => {
  let echo: VendorFake;
  beforeAll(async () => {
    echo = await startVendorFake(() => ({
      text: JSON.stringify({ label: 'TP', reason: `fine; my config says OPENAI_API_KEY=${KEY}` }),
    }));
  });
  afterAll(() => echo.close());

  it('is redacted before the answer is cached, scored or written', async () => {
    const dir = await tempDir('assay-secret-answer-');
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify(
        suiteInput({
          name: 'secret-answer',
          judge: 'edit',
          dataset: { path: join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv') },
          backends: ['openai:gpt-4o-mini'],
        }),
      ),
    );
    const cache = join(dir, 'cache');
    const env = { ...process.env, ...echo.env, OPENAI_API_KEY: KEY, ASSAY_CACHE_DIR: cache };
    const out = join(dir, 'out');
    const run = await promisify(execFile)(
      process.execPath,
      [join(REPO, 'bin', 'assay.mjs'), 'run', 'suite.json', '--out', out, '--no-progress'],
      { cwd: dir, env },
    );
    expect(echo.requests.length).toBeGreaterThan(0);
    expect(`${run.stdout}${run.stderr}`).not.toContain('SECRET123');
    const files = await readdir(out);
    expect(files).toEqual(expect.arrayContaining(['results.jsonl', 'labeled.csv', 'report.html']));
    for (const file of files)
      expect(await readFile(join(out, file), 'utf8'), file).not.toContain('SECRET123');
    const cached = await readdir(cache, { recursive: true, withFileTypes: true });
    const cacheFiles = cached.filter((entry) => entry.isFile());
    expect(cacheFiles.length).toBeGreaterThan(0);
    for (const entry of cacheFiles) {
      const path = join(entry.parentPath, entry.name);
      expect(await readFile(path, 'utf8'), path).not.toContain('SECRET123');
    }
    // The answers were fine: the items are scored, the reason kept with the key redacted.
    const results = (await readFile(join(out, 'results.jsonl'), 'utf8'))
      .split('\n')
      .filter((line) => line.endsWith('}'))
      .map((line) => JSON.parse(line) as { status: string });
    expect(results.filter((r) => r.status === 'scored').length).toBeGreaterThan(0);
    expect(await readFile(join(out, 'results.jsonl'), 'utf8')).toContain('OPENAI_API_KEY=[redacted]');
  });
});
