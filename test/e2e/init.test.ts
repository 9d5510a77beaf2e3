/**
 * `assay init` as a user runs it, through bin/assay.mjs in a fresh folder: the evaluation it
 * writes runs at once with --simulate, it never overwrites, and the small commands that load
 * nothing but commander (--version, --help) answer.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { familyNames } from '../../shared/registry/registry.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { REPO, tempDir } from '../helpers.js';

const noKeys = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k)));

/** `node bin/assay.mjs …` in `cwd`; resolves with the exit code instead of rejecting. */
async function assay(args: string[], cwd: string) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [join(REPO, 'bin', 'assay.mjs'), ...args],
      { cwd, env: { ...noKeys, ASSAY_CACHE_DIR: join(cwd, 'cache') } },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('assay init', { timeout: 120_000 }, () => {
  it('writes a declared judge into my-eval that runs with --simulate, and says what to edit next', async () => {
    const dir = await tempDir('assay-init-');
    const init = await assay(['init'], dir);
    expect(init.code).toBe(0);
    const written = ['my-eval/data.csv', 'my-eval/prompts/judge.md', 'my-eval/eval.suite.json'];
    for (const file of written) {
      expect(init.stdout).toContain(`  ${file}\n`);
      expect(existsSync(join(dir, file))).toBe(true);
    }
    // The next steps in order: prompt, labels, data, simulate, then a key.
    const order = [
      'prompts/judge.md',
      'judge.labels',
      'data.csv by your own rows',
      '--simulate',
      'OPENAI_API_KEY',
    ];
    const positions = order.map((s) => init.stdout.indexOf(s, init.stdout.indexOf('next:')));
    expect(positions.every((p) => p > 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);

    const suitePath = join(dir, 'my-eval', 'eval.suite.json');
    const suiteJson = JSON.parse(await readFile(suitePath, 'utf8')) as Record<string, unknown>;
    const suite = validateSuite(suiteJson, suitePath);
    expect(suite).toMatchObject({ name: 'my-eval', task: 'judge' });
    // Editors find the schema this Assay ships.
    expect(resolve(dir, 'my-eval', suiteJson.$schema as string)).toBe(
      join(REPO, 'schemas', 'suite.schema.json'),
    );

    const rows = (await readFile(join(dir, 'my-eval', 'data.csv'), 'utf8')).trim().split('\n');
    expect(rows[0]).toBe('id,question,reply,human_label');
    expect(rows.length - 1).toBeGreaterThanOrEqual(12);
    expect(rows.length - 1).toBeLessThanOrEqual(20);

    const run = await assay(
      ['run', 'my-eval/eval.suite.json', '--simulate', '--out', 'run', '--no-progress'],
      dir,
    );
    expect(run.stderr).not.toContain('assay:');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`my-eval: ${rows.length - 1} scored, 0 failed (0 invalid rows)`);
    const report = JSON.parse(await readFile(join(dir, 'run', 'report.json'), 'utf8')) as Report;
    expect(report).toMatchObject({
      task: 'judge',
      simulated: true,
      primaryScorer: 'label',
      scores: { label: { n: rows.length - 1 } },
    });
    expect(Object.keys((report.scores.label!.tables as { perClass: object }).perClass)).toEqual([
      'helpful',
      'partly',
      'unhelpful',
    ]);
  });

  it('gives the next commands as the user invokes assay: npx assay through npx, else assay', async () => {
    const dir = await tempDir('assay-init-npx-');
    // A shell's environment, not npm's: what npm sets for the test runner is left out.
    const shell = Object.fromEntries(Object.entries(noKeys).filter(([k]) => !/^npm_/i.test(k)));
    const init = (args: string[], env: NodeJS.ProcessEnv) =>
      promisify(execFile)(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args], { cwd: dir, env });
    const throughNpx = await init(['init', 'by-npx'], { ...shell, npm_command: 'exec' });
    expect(throughNpx.stdout).toContain('npx assay run by-npx/eval.suite.json --simulate');
    expect(throughNpx.stdout).toContain('then: npx assay run by-npx/eval.suite.json');
    expect(throughNpx.stdout).not.toMatch(/(?<!npx )assay run/);
    const plain = await init(['init', 'by-path'], shell);
    expect(plain.stdout).toContain(': assay run by-path/eval.suite.json --simulate');
  });

  it('refuses to overwrite: an existing file is kept and nothing else is written', async () => {
    const dir = await tempDir('assay-init-');
    await assay(['init', 'mine'], dir).then((r) => expect(r.code).toBe(0));
    await writeFile(join(dir, 'mine', 'data.csv'), 'id,question,reply,human_label\nx1,a,b,helpful\n');
    const again = await assay(['init', 'mine'], dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('not overwriting mine/data.csv');
    expect(await readFile(join(dir, 'mine', 'data.csv'), 'utf8')).toBe(
      'id,question,reply,human_label\nx1,a,b,helpful\n',
    );

    // A folder holding only the suite file: refused before the other two are written.
    await writeFile(join(dir, 'eval.suite.json'), '{}');
    const other = await assay(['init', '.'], dir);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('eval.suite.json');
    expect(existsSync(join(dir, 'data.csv'))).toBe(false);
    expect(existsSync(join(dir, 'prompts'))).toBe(false);
  });

  it('--version prints the package version; --help lists init; score --help names every task family', async () => {
    const dir = await tempDir('assay-version-');
    const { version } = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string };
    const v = await assay(['--version'], dir);
    expect(v).toMatchObject({ code: 0, stdout: `${version}\n` });
    const help = await assay(['--help'], dir);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^ {2}init \[dir\]/m);
    const score = await assay(['score', '--help'], dir);
    expect(score.stdout.replace(/\s+/g, ' ')).toContain(`task family (${familyNames().join(', ')};`);
  });
});
