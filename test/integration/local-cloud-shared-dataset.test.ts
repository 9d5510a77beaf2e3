/**
 * `assay cloud` on a suite whose dataset path is a shared bucket key (`datasets/shared/…`, not
 * the suite's own `datasets/<name>/` folder): that upload starts no run of the suite, so the
 * dataset goes up first and the suite's upload starts the run on it, as `assay run` runs it.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { datasetUploadStartsRun, runLocalCloud } from '../../cli/cloud/local-cloud.js';
import { runLocal } from '../../cli/local-run.js';
import { EXAMPLE_DATA, snapshotEnv, tempDir } from '../helpers.js';

afterAll(snapshotEnv());

describe('assay cloud on a suite whose dataset is a shared datasets/ key', () => {
  it('tells which uploads start a run of the suite', () => {
    expect(datasetUploadStartsRun('demo', 'datasets/demo/gold.csv')).toBe(true);
    expect(datasetUploadStartsRun('demo', 'datasets/demo/sub/gold.csv')).toBe(true);
    expect(datasetUploadStartsRun('demo', 'datasets/shared/gold.csv')).toBe(false);
    expect(datasetUploadStartsRun('demo', 'datasets/gold.csv')).toBe(false);
  });

  it('uploads the dataset, then the suite, and writes the report', { timeout: 120_000 }, async () => {
    process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
    for (const name of Object.keys(process.env)) if (name.endsWith('_API_KEY')) delete process.env[name];
    const dir = await tempDir('assay-cloud-shared-');
    const gold = (await readFile(join(EXAMPLE_DATA, 'gold_tp_fp3_fp2_fp1_en.csv'), 'utf8'))
      .split('\n')
      .slice(0, 11)
      .join('\n');
    await mkdir(join(dir, 'datasets', 'shared'), { recursive: true });
    await writeFile(join(dir, 'datasets', 'shared', 'gold.csv'), `${gold}\n`);
    const suitePath = join(dir, 'shared-data.suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'shared-data',
        task: 'gec',
        judge: 'feedback',
        method: 'baseline',
        dataset: { path: 'datasets/shared/gold.csv' },
        backends: ['sim:gold'],
      }),
    );

    const local = await runLocal({
      suitePath,
      outDir: join(dir, 'local'),
      cachePath: join(dir, 'cache.jsonl'),
    });
    const lines: string[] = [];
    const cloud = await runLocalCloud({ suitePath, outDir: join(dir, 'cloud'), onLog: (l) => lines.push(l) });

    const localReport = local.outcome.status === 'written' ? local.outcome.report : undefined;
    expect(localReport?.counts).toMatchObject({ items: 10, failed: 0 });
    expect(cloud.report?.counts).toEqual(localReport?.counts);
    expect(lines).toContain(
      'uploaded suites/shared-data.json: the S3 notification starts the run on datasets/shared/gold.csv',
    );
  });
});
