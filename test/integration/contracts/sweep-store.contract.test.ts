/**
 * The SweepStore contract: what ingest and the sweep aggregation rely on, held by the local
 * store (a folder per sweep) and the DynamoDB store alike.
 */
import { describe, expect, it } from 'vitest';
import { DynamoSweepStore } from '../../../shared/adapters/aws/dynamo-sweeps.js';
import { LocalSweepStore } from '../../../shared/adapters/local/local-sweeps.js';
import {
  ConflictError,
  NotFoundError,
  SweepExistsError,
  SweepNotFoundError,
} from '../../../shared/model/errors.js';
import type { SweepRecord } from '../../../shared/model/sweep-record.js';
import type { SweepStore } from '../../../shared/ports/ports.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { prepareSweep } from '../../../shared/sweeps/sweep.js';
import { suiteInput, tempDir } from '../../helpers.js';
import { awsStack, fresh } from './fixtures.js';

const aws = awsStack('contract-sweeps');

const adapters: [string, () => Promise<SweepStore>][] = [
  ['local', async () => new LocalSweepStore(await tempDir('assay-contract-sweeps-'))],
  ['dynamodb', async () => new DynamoSweepStore({ client: aws().clients.doc, tableName: aws().res.table })],
];

function record(runIds: string[]): SweepRecord {
  const suite = validateSuite(
    { ...suiteInput({ name: fresh('sweep') }), variants: runIds.map((_, i) => ({ name: `v${i}` })) },
    'test sweep',
  );
  return prepareSweep(
    suite,
    runIds.map((runId, i) => ({ variant: `v${i}`, runId })),
    { datasetKey: 'data.csv', reportPrefix: '' },
  );
}

describe.each(adapters)('SweepStore contract: %s', { timeout: 60_000 }, (_name, make) => {
  it('creates a sweep once: the second create throws SweepExistsError (a ConflictError) and the first record stays', async () => {
    const sweeps = await make();
    const sweep = record([fresh('r'), fresh('r')]);
    await sweeps.createSweep(sweep);
    const error = await sweeps.createSweep({ ...sweep, status: 'done' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SweepExistsError);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ sweepId: sweep.sweepId, permanent: false, retryable: false });
    expect(await sweeps.getSweep(sweep.sweepId)).toEqual(sweep);
    expect(await sweeps.getSweep(fresh('ghost'))).toBeUndefined();
  });

  it('finds the sweeps a run is a variant of, sorted; a run of none has none', async () => {
    const sweeps = await make();
    const shared = fresh('shared');
    const [a, b] = [record([shared, fresh('r')]), record([fresh('r'), shared])];
    await sweeps.createSweep(a);
    await sweeps.createSweep(b);
    expect(await sweeps.sweepsOf(shared)).toEqual([a.sweepId, b.sweepId].sort());
    expect(await sweeps.sweepsOf(a.variants[1]!.runId)).toEqual([a.sweepId]);
    expect(await sweeps.sweepsOf(fresh('lonely'))).toEqual([]);
  });

  it('claims a running sweep once; given back, it can be claimed again; done, never', async () => {
    const sweeps = await make();
    const sweep = record([fresh('r'), fresh('r')]);
    await sweeps.createSweep(sweep);
    const claims = await Promise.all([sweeps.claimSweep(sweep.sweepId), sweeps.claimSweep(sweep.sweepId)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect((await sweeps.getSweep(sweep.sweepId))?.status).toBe('aggregating');

    await sweeps.setSweepStatus(sweep.sweepId, 'running');
    expect(await sweeps.claimSweep(sweep.sweepId)).toBe(true);
    await sweeps.setSweepStatus(sweep.sweepId, 'done', '2026-01-01T00:00:00.000Z');
    expect(await sweeps.claimSweep(sweep.sweepId)).toBe(false);
    expect(await sweeps.getSweep(sweep.sweepId)).toMatchObject({
      status: 'done',
      finishedAt: '2026-01-01T00:00:00.000Z',
    });
    expect(await sweeps.claimSweep(fresh('ghost'))).toBe(false);
  });

  it('refuses to set the status of a sweep that does not exist with SweepNotFoundError', async () => {
    const sweeps = await make();
    const id = fresh('ghost');
    const error = await sweeps.setSweepStatus(id, 'done').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SweepNotFoundError);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(await sweeps.getSweep(id)).toBeUndefined();
  });
});
