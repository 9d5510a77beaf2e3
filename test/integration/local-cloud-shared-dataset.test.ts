/**
 * `assay cloud` on a suite whose dataset path is a shared bucket key (`datasets/shared/…`, not
 * the suite's own `datasets/<name>/` folder): that upload starts no run of the suite, so the
 * dataset goes up first and the suite's upload starts the run on it, as `assay run` runs it.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { datasetUploadStartsRun } from '../../cli/cloud/local-cloud.js';
import { snapshotEnv, tempDir } from '../helpers.js';
import { runInBothShells } from './both-shells.js';

afterAll(snapshotEnv());

describe('assay cloud on a suite whose dataset is a shared datasets/ key', () => {
  it('tells which uploads start a run of the suite', () => {
    expect(datasetUploadStartsRun('demo', 'datasets/demo/gold.csv')).toBe(true);
    expect(datasetUploadStartsRun('demo', 'datasets/demo/sub/gold.csv')).toBe(true);
    expect(datasetUploadStartsRun('demo', 'datasets/shared/gold.csv')).toBe(false);
    expect(datasetUploadStartsRun('demo', 'datasets/gold.csv')).toBe(false);
  });

  it('uploads the dataset, then the suite, and writes the report', { timeout: 120_000 }, async () => {
    const { localReport, cloudReport, lines } = await runInBothShells({
      dir: await tempDir('assay-cloud-shared-'),
      rows: 10,
      dataFile: join('datasets', 'shared', 'gold.csv'),
      suiteFile: 'shared-data.suite.json',
      name: 'shared-data',
      datasetPath: 'datasets/shared/gold.csv',
    });

    expect(localReport?.counts).toMatchObject({ items: 10, failed: 0 });
    expect(cloudReport?.counts).toEqual(localReport?.counts);
    expect(lines).toContain(
      'uploaded suites/shared-data.json: the S3 notification starts the run on datasets/shared/gold.csv',
    );
  });
});
