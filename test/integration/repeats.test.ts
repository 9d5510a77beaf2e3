/**
 * Repeats in both shells: a suite with `run.repeats: 3` scored through `assay run`'s local shell
 * and through the cloud shell's Lambda handlers on moto gives the same reliability block (flip
 * rate, alpha and its CI, noise floors), the same repeat values and the same cost.
 */
import { describe, expect, it } from 'vitest';
import { snapshotEnv, tempDir } from '../helpers.js';
import { runInBothShells } from './both-shells.js';

const restore = snapshotEnv();

describe('run.repeats in the local and the cloud shell', () => {
  it('gives the same reliability block in both shells', { timeout: 180_000 }, async () => {
    try {
      const { localReport, cloudReport } = await runInBothShells({
        dir: await tempDir('assay-repeats-shells-'),
        rows: 30,
        dataFile: 'gold.csv',
        suiteFile: 'repeats.suite.json',
        name: 'repeats',
        datasetPath: 'gold.csv',
        run: { repeats: 3 },
      });
      const local = localReport!.scores.label!;
      const cloud = cloudReport!.scores.label!;
      expect(local.reliability).toMatchObject({ repeats: 3, n: 30 });
      // 30 items: below alpha's 200, the interval is withheld in both shells alike, and says why.
      expect(local.reliability!.alpha.ci).toBeUndefined();
      expect(local.reliability!.alpha.reason).toBe('too few items for an interval (n 30 < 200)');
      expect(local.reliability!.flipRate).toBeGreaterThan(0);
      expect(cloud.reliability).toEqual(local.reliability);
      expect(cloud.metrics).toEqual(local.metrics);
      expect(cloudReport!.cost.calls).toBe(localReport!.cost.calls);
      expect(cloudReport!.cost.totalUsd).toBe(localReport!.cost.totalUsd);
    } finally {
      restore();
    }
  });
});
