/**
 * The package as a user gets it: `npm pack`, then `npm i <tarball>` in an empty folder with no
 * .npmrc (the npm cache is warm after `npm ci`, so nothing is fetched that was not already),
 * then the installed `assay`: --version, the README's links (each to a file the package ships),
 * init (its next steps saying `npx assay`), a simulated run of what init wrote, and the
 * message naming the optional ONNX runtime when a suite needs it.
 *
 * The install takes most of a minute on a loaded machine, so this file runs as a step of its
 * own (.ci/run): `ASSAY_PACKAGE_TEST=1 npx vitest run test/e2e/package.test.ts`.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { REPO, runAsUser, tempDir } from '../helpers.js';

describe.skipIf(!process.env.ASSAY_PACKAGE_TEST)('the packed package', { timeout: 180_000 }, () => {
  it('installs into an empty folder and runs: --version, init, run --simulate', async () => {
    const packDir = await tempDir('assay-pack-');
    const pack = await runAsUser('npm', ['pack', '--json', '--pack-destination', packDir], REPO);
    expect(pack.stderr.match(/^npm (warn|error).*$/gm) ?? []).not.toContainEqual(
      expect.stringMatching(/project config/),
    );
    expect(pack.code).toBe(0);
    const [packed] = JSON.parse(pack.stdout) as [{ filename: string; files: { path: string }[] }];
    const shipped = packed.files.map((f) => f.path);
    // The bundle and what it reads at run time ship; the TypeScript sources do not.
    // dist/container.js: the entry of `assay cloud`'s containers, with the functions it bundles.
    expect(shipped).toEqual(
      expect.arrayContaining(['bin/assay.mjs', 'dist/main.js', 'dist/container.js', 'package.json']),
    );
    for (const needed of ['templates/init/', 'prompts/', 'examples/', 'schemas/suite.schema.json']) {
      expect(shipped.some((p) => p.startsWith(needed))).toBe(true);
    }
    expect(shipped.filter((p) => p.endsWith('.ts'))).toEqual([]);

    const userDir = await tempDir('assay-install-');
    // A project of the user's own: npm installs here, not into a folder above.
    await writeFile(join(userDir, 'package.json'), '{ "private": true }\n');
    const install = await runAsUser(
      'npm',
      ['i', join(packDir, packed.filename), '--prefer-offline', '--no-audit', '--no-fund'],
      userDir,
    );
    expect(install.stderr).not.toMatch(/npm error/);
    expect(install.code).toBe(0);
    expect(existsSync(join(userDir, 'node_modules', 'assay', 'dist', 'main.js'))).toBe(true);
    // The optional peer is left to users of local ONNX models.
    expect(existsSync(join(userDir, 'node_modules', 'onnxruntime-node'))).toBe(false);

    const npx = (args: string[]) => runAsUser('npx', ['--no', '--', 'assay', ...args], userDir);
    const { version } = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string };
    expect(await npx(['--version'])).toMatchObject({ code: 0, stdout: `${version}\n` });

    // Every relative link of the README the package ships leads to a file it ships.
    const installed = join(userDir, 'node_modules', 'assay');
    const readme = await readFile(join(installed, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1]!.split('#')[0]!)
      .filter((target) => target !== '' && !/^[a-z][a-z0-9+.-]*:/i.test(target));
    expect(links.length).toBeGreaterThan(0);
    expect(links.filter((target) => !existsSync(join(installed, target)))).toEqual([]);

    const init = await npx(['init', 'my-eval']);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('my-eval/eval.suite.json');
    // The next steps give the command as the user typed it.
    expect(init.stdout).toContain('npx assay run my-eval/eval.suite.json --simulate');
    expect(init.stdout).not.toMatch(/(?<!npx )assay run/);
    const suite = JSON.parse(await readFile(join(userDir, 'my-eval', 'eval.suite.json'), 'utf8'));
    expect(suite.$schema).toBe('../node_modules/assay/schemas/suite.schema.json');
    expect(existsSync(join(userDir, 'my-eval', suite.$schema))).toBe(true);

    const simulated = await npx(['run', 'my-eval/eval.suite.json', '--simulate', '--no-progress']);
    expect(simulated.stderr).not.toContain('assay:');
    expect(simulated.code).toBe(0);
    expect(simulated.stdout).toMatch(/my-eval: 16 scored, 0 failed/);
    // The runs folder holds the run's folder and the leaderboard the run joined.
    const [runId] = (await readdir(join(userDir, 'runs'))).filter((name) => name !== 'leaderboard.jsonl');
    const runDir = join(userDir, 'runs', runId!);
    for (const file of ['report.json', 'report.txt', 'labeled.csv', 'errors.txt', 'correct.txt']) {
      expect(existsSync(join(runDir, file))).toBe(true);
    }
    const report = JSON.parse(await readFile(join(runDir, 'report.json'), 'utf8')) as Report;
    expect(report).toMatchObject({ task: 'judge', simulated: true, scores: { label: { n: 16 } } });

    // A suite with a local ONNX model, without the optional runtime: refused before any item,
    // naming what to install.
    await writeFile(
      join(userDir, 'onnx.suite.json'),
      JSON.stringify({
        version: 1,
        name: 'onnx-check',
        task: 'summarization',
        dataset: {
          path: 'node_modules/assay/examples/data/summedits-samsum.jsonl',
          columns: { document: 'doc', output: 'summary', gold: 'label' },
        },
        summarization: { against: 'document', nli: 'onnx:models/nli', embedder: 'sim:embed' },
        backends: ['sim:gpt-4o-mini'],
      }),
    );
    const onnx = await npx(['run', 'onnx.suite.json', '--out', 'onnx-run', '--no-progress']);
    expect(onnx.code).toBe(1);
    expect(onnx.stderr).toContain(
      'need onnxruntime-node, which is not installed: run `npm install onnxruntime-node@',
    );
    expect(existsSync(join(userDir, 'onnx-run', 'results.jsonl'))).toBe(false);
  });
});
