/**
 * The local sweep store in both layouts: a folder per sweep beside the run folders (the runs
 * folder), or one sweep's own folder (`assay run <sweep> --out DIR`) holding its record itself.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalSweepStore } from '../../../shared/adapters/local/local-sweeps.js';
import { SweepExistsError } from '../../../shared/model/errors.js';
import type { SweepRecord } from '../../../shared/model/sweep-record.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { prepareSweep } from '../../../shared/sweeps/sweep.js';
import { suiteInput, tempDir } from '../../helpers.js';

function record(name: string, runIds: string[]): SweepRecord {
  const suite = validateSuite(
    { ...suiteInput({ name }), variants: runIds.map((_, i) => ({ name: `v${i}` })) },
    'test sweep',
  );
  return prepareSweep(
    suite,
    runIds.map((runId, i) => ({ variant: `v${i}`, runId })),
    { datasetKey: 'data.csv', reportPrefix: '' },
  );
}

describe('local sweep store', () => {
  it('in a runs folder: a folder per sweep, found by its runs', async () => {
    const root = await tempDir('assay-sweeps-');
    const store = new LocalSweepStore(root);
    const a = record('a', ['a.v0-1', 'a.v1-2']);
    await store.createSweep(a);
    await expect(store.createSweep(a)).rejects.toBeInstanceOf(SweepExistsError);
    expect(store.dirOf(a.sweepId)).toBe(join(root, a.sweepId));
    expect(await readdir(join(root, a.sweepId))).toEqual(['sweep-record.json']);
    expect(await store.sweepsOf('a.v1-2')).toEqual([a.sweepId]);
    expect(await store.sweepsOf('other')).toEqual([]);
  });

  it("as one sweep's folder: the record in the folder itself, beside the variants' runs", async () => {
    const root = await tempDir('assay-sweep-out-');
    const store = new LocalSweepStore(root, { oneSweep: true });
    const a = record('a', ['a.v0-1', 'a.v1-2']);
    expect(await store.sweepsOf('a.v0-1')).toEqual([]);
    await store.createSweep(a);
    await expect(store.createSweep(a)).rejects.toBeInstanceOf(SweepExistsError);
    expect(store.dirOf(a.sweepId)).toBe(root);
    expect(await readdir(root)).toEqual(['sweep-record.json']);
    expect(await store.getSweep(a.sweepId)).toEqual(a);
    expect(await store.sweepsOf('a.v0-1')).toEqual([a.sweepId]);
    expect(await store.claimSweep(a.sweepId)).toBe(true);
    await store.setSweepStatus(a.sweepId, 'done', '2026-01-01T00:00:00.000Z');
    expect(await store.getSweep(a.sweepId)).toMatchObject({ status: 'done' });

    // The folder used again for another sweep: the old record is not taken for the new one.
    const b = record('b', ['b.v0-3', 'b.v1-4']);
    expect(await store.getSweep(b.sweepId)).toBeUndefined();
    await store.createSweep(b);
    expect(await store.getSweep(b.sweepId)).toMatchObject({ sweepId: b.sweepId, status: 'running' });
    expect(await store.getSweep(a.sweepId)).toBeUndefined();
    expect(await store.sweepsOf('a.v0-1')).toEqual([]);
    expect(await store.sweepsOf('b.v1-4')).toEqual([b.sweepId]);
  });
});
