/**
 * `assay cloud` takes the suites `assay run` takes: a dataset path that leaves the suite's
 * folder (`../gold.csv`, relative to the suite file) runs in the local cloud too, on every row.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { snapshotEnv, tempDir } from '../helpers.js';
import { runInBothShells } from './both-shells.js';

afterAll(snapshotEnv());

describe('assay cloud on a suite whose dataset sits outside its folder', () => {
  it('uploads the dataset where ingest looks for it and writes the report', {
    timeout: 120_000,
  }, async () => {
    const { localReport, cloudReport, lines } = await runInBothShells({
      dir: await tempDir('assay-cloud-path-'),
      rows: 12,
      dataFile: 'gold.csv',
      suiteFile: join('suites', 'outside.suite.json'),
      name: 'outside',
      datasetPath: '../gold.csv',
    });

    expect(localReport?.counts).toMatchObject({ items: 12, failed: 0 });
    expect(cloudReport?.counts).toEqual(localReport?.counts);
    expect(lines.join('\n')).toContain('uploaded datasets/outside/gold.csv');
  });
});
