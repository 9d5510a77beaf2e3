/**
 * `assay cloud` on a suite in the batch lane: the local cloud runs the batch poller as the
 * EventBridge schedule would, so the run reaches its report through an OpenAI batch (the
 * vendor fake), and the report shows the discount.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runLocalCloud } from '../../cli/cloud/local-cloud.js';
import { startVendorFake } from '../fakes/vendor-fake.js';
import { EXAMPLE_DATA, snapshotEnv, tempDir } from '../helpers.js';

afterAll(snapshotEnv());

it('runs a batch-lane suite through the local cloud to its report, at the batch price', {
  timeout: 120_000,
}, async () => {
  const fake = await startVendorFake();
  try {
    process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
    Object.assign(process.env, fake.env);
    const dir = await tempDir('assay-cloud-batch-');
    const suitePath = join(dir, 'batch.suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'cloud-batch',
        dataset: { path: join(EXAMPLE_DATA, 'gold_tp_fp3_fp2_fp1_en.csv'), lang: 'en' },
        task: 'gec',
        judge: 'feedback',
        method: 'baseline',
        backends: ['openai:gpt-4o-mini'],
        run: { lane: 'batch', batchPollSeconds: 0.2, sample: { n: 10, seed: 2 } },
      }),
    );
    const lines: string[] = [];
    const result = await runLocalCloud({ suitePath, outDir: join(dir, 'out'), onLog: (l) => lines.push(l) });

    expect(result.report).toMatchObject({ counts: { items: 10, scored: 10 }, simulated: false });
    expect(fake.batches).toHaveLength(1);
    expect(fake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toEqual([]);
    expect(result.report!.cost.batch).toMatchObject({ calls: 10, discount: 0.5 });
    expect(lines.some((l) => /batch-poller submitted 1/.test(l))).toBe(true);
  } finally {
    await fake.close();
  }
});
