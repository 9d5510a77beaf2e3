/**
 * The RunStore contract: what ingest, the workers and the aggregator rely on, held by the
 * local store (a folder per run) and the DynamoDB store alike.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DynamoRunStore } from '../../../shared/adapters/aws/dynamo-run-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import {
  ConflictError,
  NotFoundError,
  RunExistsError,
  RunNotFoundError,
} from '../../../shared/model/errors.js';
import type { RunStore } from '../../../shared/ports/ports.js';
import { tempDir } from '../../helpers.js';
import { awsStack, budgetFailure, collect, fresh, result, runRecord } from './fixtures.js';

const aws = awsStack('contract-run-store');

/** The store that holds `runId` (the local store keeps one run per folder). */
type StoreFor = (runId: string) => Promise<RunStore>;

const adapters: [string, () => StoreFor][] = [
  [
    'local',
    () => {
      const root = tempDir('assay-contract-runs-');
      return async (runId) => new LocalRunStore(join(await root, runId));
    },
  ],
  [
    'dynamodb',
    () => async () => new DynamoRunStore({ client: aws().clients.doc, tableName: aws().res.table }),
  ],
];

describe.each(adapters)('RunStore contract: %s', { timeout: 60_000 }, (_name, make) => {
  const storeFor = make();

  it('creates a run once: the second create throws RunExistsError (a ConflictError) and the first record stays', async () => {
    const id = fresh('create');
    const s = await storeFor(id);
    const run = runRecord(id);
    await s.createRun(run);
    const error = await s.createRun({ ...run, status: 'running' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RunExistsError);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ runId: id, permanent: false, retryable: false });
    expect(await s.getRun(id)).toEqual(run);
    expect(await s.counters(id)).toEqual({ done: 0, failed: 0, spentUsd: 0 });
  });

  it('reads a run that does not exist as undefined', async () => {
    const id = fresh('ghost');
    const s = await storeFor(id);
    expect(await s.getRun(id)).toBeUndefined();
    expect(await s.counters(id)).toBeUndefined();
  });

  it('refuses every write to a run that does not exist with RunNotFoundError', async () => {
    const id = fresh('ghost');
    const s = await storeFor(id);
    const refusals = [
      () => s.recordResult(result(id, 'a')),
      () => s.setTotal(id, 1, 0),
      () => s.setStatus(id, 'done'),
      () => s.resultIds(id),
      () => collect(s.results(id)),
    ];
    for (const refused of refusals) {
      const error = await (refused as () => Promise<unknown>)().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RunNotFoundError);
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as RunNotFoundError).runId).toBe(id);
    }
    expect(await s.getRun(id)).toBeUndefined();
  });

  it('counts a redelivered result once, and failed results as failed, with the money spent', async () => {
    const id = fresh('idem');
    const s = await storeFor(id);
    await s.createRun(runRecord(id));
    const first = await s.recordResult(result(id, 'a'));
    const again = await s.recordResult(
      result(id, 'a', { scores: { label: { kind: 'label', value: 'FP1' } } }),
    );
    const failed = await s.recordResult(
      result(id, 'b', { status: 'failed', failure: { kind: 'parse', message: 'no label' } }),
    );

    expect(first).toEqual({ recorded: true, counters: { done: 1, failed: 0, spentUsd: 0.0001 } });
    expect(again).toEqual({ recorded: false, counters: { done: 1, failed: 0, spentUsd: 0.0001 } });
    expect(failed).toEqual({ recorded: true, counters: { done: 1, failed: 1, spentUsd: 0.0002 } });
    const stored = await collect(s.results(id));
    expect(stored.map((r) => r.itemId).sort()).toEqual(['a', 'b']);
    expect(stored.find((r) => r.itemId === 'a')).toEqual(result(id, 'a'));
    expect(new Set(await s.resultIds(id))).toEqual(new Set(['a', 'b']));
  });

  it('replaces a budget failure once (a resumed run), moving its counter and spend', async () => {
    const id = fresh('budget');
    const s = await storeFor(id);
    await s.createRun(runRecord(id));
    expect((await s.recordResult(budgetFailure(id, 'a'))).counters).toEqual({
      done: 0,
      failed: 1,
      spentUsd: 0,
    });
    expect(new Set(await s.resultIds(id))).toEqual(new Set());

    expect((await s.recordResult(result(id, 'a'))).recorded).toBe(true);
    expect((await s.recordResult(result(id, 'a'))).recorded).toBe(false);
    expect(await s.counters(id)).toEqual({ done: 1, failed: 0, spentUsd: 0.0001 });
    expect(new Set(await s.resultIds(id))).toEqual(new Set(['a']));
    expect(await collect(s.results(id))).toEqual([result(id, 'a')]);
  });

  it('setTotal moves an ingesting run to running; set again, it leaves a later status be', async () => {
    const id = fresh('total');
    const s = await storeFor(id);
    await s.createRun(runRecord(id));
    await s.recordResult(result(id, 'a'));

    expect(await s.setTotal(id, 3, 1)).toEqual({ done: 1, failed: 0, total: 3, spentUsd: 0.0001 });
    expect(await s.getRun(id)).toMatchObject({ status: 'running', total: 3, invalidRows: 1 });
    await s.setStatus(id, 'aggregating');
    expect(await s.setTotal(id, 3, 1)).toEqual({ done: 1, failed: 0, total: 3, spentUsd: 0.0001 });
    expect((await s.getRun(id))?.status).toBe('aggregating');
  });

  it('claims aggregation once, and only when every item has its result', async () => {
    const id = fresh('claim');
    const s = await storeFor(id);
    await s.createRun(runRecord(id));
    await s.recordResult(result(id, 'a'));
    expect(await s.claimAggregation(id)).toBe(false); // no total yet
    await s.setTotal(id, 2, 0);
    expect(await s.claimAggregation(id)).toBe(false); // 1 of 2
    await s.recordResult(result(id, 'b', { status: 'failed' }));

    const claims = await Promise.all([s.claimAggregation(id), s.claimAggregation(id)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await s.claimAggregation(id)).toBe(false);
    expect((await s.getRun(id))?.status).toBe('aggregating');
    // Given back (the aggregation failed), it can be claimed again.
    await s.setStatus(id, 'running');
    expect(await s.claimAggregation(id)).toBe(true);
    await s.setStatus(id, 'done', '2025-01-01T00:09:00.000Z');
    expect(await s.claimAggregation(id)).toBe(false);
    expect(await s.getRun(id)).toMatchObject({ status: 'done', finishedAt: '2025-01-01T00:09:00.000Z' });
  });

  it('claims a complete run still marked ingesting (the last result raced the total)', async () => {
    const id = fresh('ingesting');
    const s = await storeFor(id);
    await s.createRun(runRecord(id, { total: 1 }));
    await s.recordResult(result(id, 'a'));
    expect((await s.getRun(id))?.status).toBe('ingesting');

    expect(await s.claimAggregation(id)).toBe(true);
    expect(await s.claimAggregation(id)).toBe(false);
  });

  it('a claim of a run that does not exist loses', async () => {
    const id = fresh('ghost');
    expect(await (await storeFor(id)).claimAggregation(id)).toBe(false);
  });
});
