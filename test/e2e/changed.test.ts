/**
 * The local flow of a prompt change, as a user runs it: `assay run` twice on two suites, edit
 * one sub-judge prompt, `assay run --changed`. Only the suite that reads the prompt runs again,
 * the provider (the real OpenAI SDK against the HTTP fake) sees only the changed sub-judge's
 * calls, and the new report compares with the previous run.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, suiteInput, tempDir } from '../helpers.js';

const exec = promisify(execFile);
const GOLD_CSV = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');

let fake: VendorFake;
beforeAll(async () => {
  // The instructions travel in the system message, the texts under judgement in the user's.
  fake = await startVendorFake(({ systemText, promptText: data }) => {
    const promptText = `${systemText}\n${data}`;
    if (promptText.includes('nonsense detector')) return { text: 'SCORE: 0\nREASON: coherent' };
    if (promptText.includes('meaning-change detector')) return { text: 'SEVERITY: 0\nREASONING: same' };
    if (promptText.includes('text quality assessor')) {
      const strict = promptText.includes('STRICT MODE') && promptText.includes('breaks, when');
      return {
        text: strict ? 'IMPROVEMENT: 0\nREASONING: style only' : 'IMPROVEMENT: 2\nREASONING: fixes an error',
      };
    }
    return undefined;
  });
});
afterAll(() => fake.close());

describe('assay run --changed', { timeout: 120_000 }, () => {
  it('re-runs the suite whose prompt changed, pays only for the changed calls, and compares', async () => {
    const dir = await tempDir('assay-changed-');
    await copyFile(GOLD_CSV, join(dir, 'gold.csv'));
    await mkdir(join(dir, 'prompts', 'custom'), { recursive: true });
    const promptPath = join(dir, 'prompts', 'custom', 'quality.md');
    const original = await readFile(join(REPO, 'prompts', 'gec', 'modular', 'quality-feedback.md'), 'utf8');
    await writeFile(promptPath, original);
    const common = { dataset: { path: 'gold.csv' }, backends: ['openai:gpt-4o-mini'] };
    await writeFile(
      join(dir, 'modular.suite.json'),
      JSON.stringify(
        suiteInput({
          ...common,
          name: 'local-modular',
          method: 'modular',
          prompts: { quality: 'custom/quality.md' },
        }),
      ),
    );
    await writeFile(
      join(dir, 'baseline.suite.json'),
      JSON.stringify(suiteInput({ ...common, name: 'local-baseline' })),
    );
    const env = { ...process.env, ...fake.env, ASSAY_CACHE_DIR: join(dir, 'cache') };
    const assay = (...args: string[]) =>
      exec(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args, '--no-progress'], { cwd: dir, env });

    await assay('run', 'modular.suite.json');
    await assay('run', 'baseline.suite.json');
    const nothing = await assay('run', '--changed');
    expect(nothing.stdout).toMatch(/local-modular .*prompts unchanged/);
    expect(nothing.stdout).toMatch(/local-baseline .*prompts unchanged/);

    fake.reset();
    await writeFile(
      promptPath,
      `${original}\nSTRICT MODE: a change that only adds a comma is not an improvement.\n`,
    );
    const changed = await assay('run', '--changed');

    expect(changed.stdout).toMatch(/local-baseline .*prompts unchanged/);
    expect(changed.stdout).toMatch(/local-modular .*changed since local-modular-\w+: custom\/quality\.md/);
    expect(changed.stdout).toMatch(
      /compared with local-modular-\w+: accuracy -0\.083 .*flipped: fixed 0, broken 1, changed 0/,
    );
    expect(fake.requests).toHaveLength(12);
    expect(fake.requests.every((r) => r.systemText.includes('STRICT MODE'))).toBe(true);

    // Run folders (the runs folder also holds the leaderboard's leaderboard.jsonl).
    const runs = (await readdir(join(dir, 'runs'), { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(runs.filter((r) => r.startsWith('local-modular-'))).toHaveLength(2);
    const reports = await Promise.all(
      runs.map(
        async (r) => JSON.parse(await readFile(join(dir, 'runs', r, 'report.json'), 'utf8')) as Report,
      ),
    );
    const latest = reports.find((r) => r.comparison !== undefined)!;
    expect(latest.suite).toBe('local-modular');
    expect(latest.cost).toMatchObject({ calls: 36, cachedCalls: 24 });
    expect(latest.cost.savedUsd).toBeGreaterThan(0);
    const text = await readFile(join(dir, 'runs', latest.runId, 'comparison.txt'), 'utf8');
    expect(text).toMatch(/style only/);
    expect(text).toMatch(/fixes an error/);
  });
});
