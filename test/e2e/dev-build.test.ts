/**
 * A development clone never runs stale code: bin/assay.mjs builds dist/ when it is missing,
 * and again when a source is newer than the build.
 */
import { existsSync } from 'node:fs';
import { cp, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, runAsUser, tempDir } from '../helpers.js';

describe('bin in a development clone', { timeout: 120_000 }, () => {
  it('builds dist/ when missing and again after a source changes', async () => {
    const clone = await tempDir('assay-clone-');
    for (const part of ['bin', 'cli', 'shared', 'functions', 'scripts', 'package.json']) {
      await cp(join(REPO, part), join(clone, part), { recursive: true });
    }
    await symlink(join(REPO, 'node_modules'), join(clone, 'node_modules'), 'dir');
    const help = () => runAsUser(process.execPath, [join(clone, 'bin', 'assay.mjs'), '--help'], clone);

    const first = await help();
    expect(first.code).toBe(0);
    expect(existsSync(join(clone, 'dist', 'main.js'))).toBe(true);
    expect(first.stdout).toContain('Run LLM judges and graders');

    const main = join(clone, 'cli', 'main.ts');
    const text = await readFile(main, 'utf8');
    await writeFile(main, text.replace('Run LLM judges and graders', 'Edited just now: run LLM judges'));
    const second = await help();
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('Edited just now: run LLM judges');
  });
});
