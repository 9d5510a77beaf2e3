/**
 * An example suite run locally on the simulator, for the tests that need a real run's record
 * and results (its report files written again another way, in parts, capped…).
 */
import { join } from 'node:path';
import { runLocal } from '../cli/local-run.js';
import { LocalRunStore } from '../shared/adapters/local/local-run-store.js';
import type { ItemResult, RunRecord } from '../shared/model/model.js';
import { validateSuite } from '../shared/registry/suite.js';
import { REPO, tempDir } from './helpers.js';

/** `examples/<suiteFile>` run on the simulator (`sample` items of its dataset): its record and results, in the store's order. */
export async function simulatedExampleRun(
  suiteFile: string,
  sample?: number,
): Promise<{ run: RunRecord; results: ItemResult[] }> {
  const dir = await tempDir('assay-example-run-');
  const { run, outDir } = await runLocal({
    suitePath: join(REPO, 'examples', suiteFile),
    simulate: true,
    fresh: true,
    env: {},
    outDir: join(dir, 'run'),
    cachePath: join(dir, 'cache.jsonl'),
    ...(sample === undefined ? {} : { sample: { n: sample, seed: 7 } }),
  });
  const results: ItemResult[] = [];
  for await (const result of new LocalRunStore(outDir, { checkSuite: validateSuite }).results(run.runId))
    results.push(result);
  return { run, results };
}
