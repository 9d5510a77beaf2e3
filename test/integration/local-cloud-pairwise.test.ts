/**
 * A pairwise judge in both shells: the example suite (the simulator as its backend) gives the
 * same verdicts, the same position figures and the same report text locally and in the cloud
 * shell on moto. Each item is two calls, one per order.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PairwiseFigures } from '../../shared/families/judge/pairwise.js';
import { REPO, snapshotEnv, tempDir } from '../helpers.js';
import { runSuiteInBothShells } from './both-shells.js';

afterAll(snapshotEnv());

const EXAMPLES = join(REPO, 'examples');

describe('a pairwise judge in the cloud shell', () => {
  it('asks each item in both orders and reports the same figures as the local shell', {
    timeout: 180_000,
  }, async () => {
    const dir = await tempDir('assay-cloud-pairwise-');
    await mkdir(join(dir, 'data'));
    await mkdir(join(dir, 'prompts'));
    await copyFile(join(EXAMPLES, 'data', 'preferences.csv'), join(dir, 'data', 'preferences.csv'));
    await copyFile(join(EXAMPLES, 'prompts', 'preference.md'), join(dir, 'prompts', 'preference.md'));
    const suite = JSON.parse(await readFile(join(EXAMPLES, 'pairwise-preference.suite.json'), 'utf8'));
    delete suite.$schema;
    suite.backends = ['sim:gpt-4o-mini'];
    const suitePath = join(dir, 'pairwise.suite.json');
    await writeFile(suitePath, JSON.stringify(suite));

    const { localReport, cloudReport } = await runSuiteInBothShells({ dir, suitePath });

    expect(localReport?.counts).toMatchObject({ items: 49, scored: 49, failed: 0 });
    expect(cloudReport?.counts).toEqual(localReport?.counts);
    // Two calls an item: one per order.
    expect(localReport?.cost.calls).toBe(98);
    expect(cloudReport?.cost.calls).toBe(98);
    const local = localReport?.metrics.pairwise as PairwiseFigures;
    expect(local.items).toBe(49);
    expect(local.firstPositionWinRate.value).toBeGreaterThan(0.5);
    expect(cloudReport?.metrics.pairwise).toEqual(local);
    expect(cloudReport?.scores).toEqual(localReport?.scores);
    const text = await readFile(join(dir, 'cloud', 'report.txt'), 'utf8');
    expect(text).toContain('first-position win rate');
  });
});
