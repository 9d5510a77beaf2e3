/**
 * `assay cloud` takes the suites `assay run` takes: a dataset path that leaves the suite's
 * folder (`../gold.csv`, relative to the suite file) runs in the local cloud too, on every row.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runLocalCloud } from '../../cli/cloud/local-cloud.js';
import { runLocal } from '../../cli/local-run.js';
import { EXAMPLE_DATA, snapshotEnv, tempDir } from '../helpers.js';

afterAll(snapshotEnv());

describe('assay cloud on a suite whose dataset sits outside its folder', () => {
  it('uploads the dataset where ingest looks for it and writes the report', {
    timeout: 120_000,
  }, async () => {
    process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
    for (const name of Object.keys(process.env)) if (name.endsWith('_API_KEY')) delete process.env[name];
    const dir = await tempDir('assay-cloud-path-');
    const gold = (await readFile(join(EXAMPLE_DATA, 'gold_tp_fp3_fp2_fp1_en.csv'), 'utf8'))
      .split('\n')
      .slice(0, 13)
      .join('\n');
    await writeFile(join(dir, 'gold.csv'), `${gold}\n`);
    await mkdir(join(dir, 'suites'));
    const suitePath = join(dir, 'suites', 'outside.suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'outside',
        task: 'gec',
        judge: 'feedback',
        method: 'baseline',
        dataset: { path: '../gold.csv' },
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
    expect(localReport?.counts).toMatchObject({ items: 12, failed: 0 });
    expect(cloud.report?.counts).toEqual(localReport?.counts);
    expect(lines.join('\n')).toContain('uploaded datasets/outside/gold.csv');
  });
});
