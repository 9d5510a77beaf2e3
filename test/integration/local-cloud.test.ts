/**
 * `assay cloud` as a user runs it: moto starts, the suite and dataset are uploaded, the
 * pipeline runs to a report in the bucket, the files come down to a folder, moto stops.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runLocalCloud } from '../../cli/cloud/local-cloud.js';
import { REPORT_FILES } from '../../shared/reports/files.js';
import { REPO, snapshotEnv, tempDir } from '../helpers.js';

afterAll(snapshotEnv());

describe('runLocalCloud', () => {
  it('runs an example suite with --simulate: upload, pipeline, report in the bucket, downloaded', {
    timeout: 120_000,
  }, async () => {
    process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
    // No key is needed: --simulate stands a simulator in for each backend.
    for (const name of Object.keys(process.env)) if (name.endsWith('_API_KEY')) delete process.env[name];
    const dir = await tempDir('assay-local-cloud-');
    const suitePath = join(REPO, 'examples', 'reply-tone.suite.json');
    const { size } = await stat(join(REPO, 'examples', 'data', 'replies.csv'));
    const lines: string[] = [];

    const result = await runLocalCloud({
      suitePath,
      simulate: true,
      outDir: join(dir, 'out'),
      onLog: (line) => lines.push(line),
    });

    expect(result.reportUri).toBe(`s3://assay-local/reports/reply-tone/${result.runId}/`);
    expect(result.runId).toMatch(/^reply-tone-[0-9a-f]{12}$/);
    expect(result.report).toMatchObject({
      task: 'judge',
      backends: ['sim:gpt-4o-mini'],
      simulated: true,
      counts: { items: 48, scored: 48, failed: 0 },
      scores: { label: { kind: 'label', n: 48 } },
    });
    // The judge's prompt came from the suite's own prompts/ folder.
    expect(Object.keys(result.report!.prompts)).toContain('tone.md');
    expect((await readdir(join(dir, 'out'))).sort()).toEqual([...REPORT_FILES].sort());
    expect(lines).toContain(
      `uploaded datasets/reply-tone/data/replies.csv (${size} bytes): the S3 notification starts the run`,
    );
    expect(lines.filter((l) => /^\s+worker\s/.test(l)).length).toBeGreaterThan(0);
    // What the table served: every result a conditional put of its own, each a unit or more.
    const puts = result.tableServed?.PutItem;
    expect(puts?.requests).toBeGreaterThanOrEqual(48);
    expect(puts?.write).toBeGreaterThanOrEqual(puts!.requests);
    expect(lines.at(-1)).toBe('stopping moto_server');
    const endpoint = /moto_server on (\S+);/.exec(lines.join('\n'))?.[1];
    await expect(fetch(`${endpoint}/moto-api/`)).rejects.toThrow(); // stopped
  });
});
