/**
 * `assay cloud` as a user runs it: moto starts, the suite and dataset are uploaded, the
 * pipeline runs to a report in the bucket, the files come down to a folder, moto stops.
 */
import { copyFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runLocalCloud } from '../../cli/cloud/local-cloud.js';
import { REPORT_FILES } from '../../shared/reports/files.js';
import { REPO, snapshotEnv, tempDir } from '../helpers.js';

afterAll(snapshotEnv());

describe('runLocalCloud', () => {
  it('turns a dataset upload into a report in the bucket and downloads it', {
    timeout: 120_000,
  }, async () => {
    process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
    const dir = await tempDir('assay-local-cloud-');
    await copyFile(
      join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv'),
      join(dir, 'gold.csv'),
    );
    const suitePath = join(dir, 'cloud-test.suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'cloud-test',
        dataset: { path: 'gold.csv' },
        task: 'gec',
        method: 'baseline',
        backends: ['openai:gpt-4o-mini'],
      }),
    );
    const lines: string[] = [];

    const result = await runLocalCloud({
      suitePath,
      backends: ['sim:gold'],
      outDir: join(dir, 'out'),
      onLog: (line) => lines.push(line),
    });

    expect(result.reportUri).toBe(`s3://assay-local/reports/cloud-test/${result.runId}/`);
    expect(result.runId).toMatch(/^cloud-test-[0-9a-f]{12}$/);
    expect(result.report.counts).toMatchObject({ items: 14, scored: 12, failed: 2, invalidRows: 2 });
    expect(result.report.simulated).toBe(true);
    expect((await readdir(join(dir, 'out'))).sort()).toEqual([...REPORT_FILES].sort());
    expect(lines).toContain(
      'uploaded datasets/cloud-test/gold.csv (3632 bytes): the S3 notification starts the run',
    );
    expect(lines.filter((l) => /^\s+worker\s/.test(l)).length).toBeGreaterThan(0);
    expect(lines.at(-1)).toBe('stopping moto_server');
    const endpoint = /moto_server on (\S+);/.exec(lines.join('\n'))?.[1];
    await expect(fetch(`${endpoint}/moto-api/`)).rejects.toThrow(); // stopped

    await expect(runLocalCloud({ suitePath })).rejects.toThrow(/once per process/);
  });
});
