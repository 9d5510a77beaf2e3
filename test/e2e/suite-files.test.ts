/**
 * A local run reads whatever files its suite names, but a file outside the suite's folder is
 * said on screen, by its real path: a dataset named by an absolute path elsewhere, and a prompt
 * inside the folder that is a symlink to a file outside it. The prompt is read, and its content
 * recorded, from the file the link points at.
 */
import { copyFile, mkdir, readFile, realpath, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { contentHash } from '../../shared/lib/prompts/prompts.js';
import { assayCli, REPO, suiteInput, tempDir } from '../helpers.js';

const GOLD = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');

async function run(dir: string, suite: Record<string, unknown>) {
  await writeFile(join(dir, 'suite.json'), JSON.stringify(suite));
  const out = join(dir, 'out');
  const { stderr } = await assayCli(['run', join(dir, 'suite.json'), '--out', out, '--no-progress'], dir);
  const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as {
    counts: { items: number };
    prompts: Record<string, string>;
  };
  return { stderr, report };
}

const warnings = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('warning: '));

describe("files outside a suite's folder, in a local run", { timeout: 120_000 }, () => {
  it('reads a dataset named by a path outside the folder, and says so with its real path', async () => {
    const dir = await tempDir('assay-outside-dataset-');
    const { stderr, report } = await run(dir, suiteInput({ name: 'outside-data', dataset: { path: GOLD } }));

    expect(report.counts.items).toBeGreaterThan(0);
    expect(warnings(stderr)).toEqual([
      `warning: dataset.path of suite outside-data reads ${await realpath(GOLD)}, outside the suite's folder`,
    ]);
  });

  it('says nothing of files inside the folder', async () => {
    const dir = await tempDir('assay-inside-dataset-');
    await copyFile(GOLD, join(dir, 'gold.csv'));
    const { stderr } = await run(dir, suiteInput({ name: 'inside-data', dataset: { path: 'gold.csv' } }));

    expect(warnings(stderr)).toEqual([]);
  });

  it('reads a prompt symlinked to a file outside by its real path, records that content, and says so', async () => {
    const dir = await tempDir('assay-prompt-link-');
    const elsewhere = await tempDir('assay-prompt-target-');
    const target = join(elsewhere, 'classify.md');
    // The shipped prompt with a line of its own, so its hash is the target's, not the shipped one's.
    const text = `${await readFile(join(REPO, 'prompts', 'gec', 'feedback', 'baseline.md'), 'utf8')}\n<!-- linked -->\n`;
    await writeFile(target, text);
    await mkdir(join(dir, 'prompts'));
    await symlink(target, join(dir, 'prompts', 'mine.md'));
    await copyFile(GOLD, join(dir, 'gold.csv'));

    const { stderr, report } = await run(
      dir,
      suiteInput({ name: 'linked-prompt', dataset: { path: 'gold.csv' }, prompts: { classify: 'mine.md' } }),
    );

    expect(warnings(stderr)).toEqual([
      `warning: prompts/mine.md reads ${await realpath(target)}, outside the suite's folder`,
    ]);
    expect(report.prompts['mine.md']).toBe(contentHash(text));
  });
});
