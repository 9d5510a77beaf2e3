/**
 * A suite or dataset path that is a folder, or names no file: the error names the file and
 * what was expected there, never a bare EISDIR or ENOENT.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { datasetFileOf, loadSuiteFile } from '../../../cli/local-run.js';
import { assayCli, suite, tempDir } from '../../helpers.js';

describe('input files', () => {
  it('a suite path that is a folder or missing: named, with what to give instead', async () => {
    const dir = await tempDir('assay-files-');
    await expect(loadSuiteFile(dir)).rejects.toThrow(`${dir} is a folder; give a suite file (*.suite.json)`);
    const missing = join(dir, 'nope.suite.json');
    await expect(loadSuiteFile(missing)).rejects.toThrow(
      `${missing}: no such file; give a suite file (*.suite.json)`,
    );
  });

  it('a dataset path that is a folder or missing: named, with the suite that points there', async () => {
    const dir = await tempDir('assay-files-');
    await mkdir(join(dir, 'data'));
    const folder = suite({ name: 'demo', dataset: { path: 'data' } });
    await expect(datasetFileOf(folder, dir)).rejects.toThrow(
      `dataset ${join(dir, 'data')} is a folder; give a dataset file (.csv or .jsonl) as dataset.path of suite demo`,
    );
    const missing = suite({ name: 'demo', dataset: { path: 'data/gold.csv' } });
    await expect(datasetFileOf(missing, dir)).rejects.toThrow(
      `dataset ${join(dir, 'data', 'gold.csv')}: no such file; give a dataset file`,
    );
    await writeFile(join(dir, 'data', 'gold.csv'), 'idx,src,tgt,label\n');
    await expect(datasetFileOf(missing, dir)).resolves.toMatchObject({ key: join(dir, 'data', 'gold.csv') });
  });

  it('assay run examples/ says the folder is no suite file', async () => {
    const dir = await tempDir('assay-files-');
    const failed = await assayCli(['run', 'examples/', '--simulate', '--no-progress'], dir).then(
      () => ({ stderr: '' }),
      (error: { stderr: string }) => error,
    );
    expect(failed.stderr).toContain('assay: examples/ is a folder; give a suite file (*.suite.json)');
    expect(failed.stderr).not.toContain('EISDIR');
  }, 60_000);
});
