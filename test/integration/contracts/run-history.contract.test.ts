/**
 * The RunHistory contract: what report comparisons and prompt-change re-runs rely on, held by
 * the local history (run folders side by side) and the DynamoDB store (its suite index).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DynamoRunStore } from '../../../shared/adapters/aws/dynamo-run-store.js';
import { LocalRunHistory } from '../../../shared/adapters/local/local-run-history.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { RunNotFoundError } from '../../../shared/model/errors.js';
import type { RunRecord } from '../../../shared/model/model.js';
import type { RunHistory, RunStore } from '../../../shared/ports/ports.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { tempDir } from '../../helpers.js';
import { awsStack, collect, fresh, result, runRecord } from './fixtures.js';

const aws = awsStack('contract-run-history');

/** A history, and the store each of its runs is written through. */
interface Runs {
  history: RunHistory;
  storeFor(runId: string): RunStore;
}

const adapters: [string, () => Promise<Runs>][] = [
  [
    'local',
    async () => {
      const root = await tempDir('assay-contract-history-');
      return {
        history: new LocalRunHistory(root, validateSuite),
        storeFor: (runId) => new LocalRunStore(join(root, runId)),
      };
    },
  ],
  [
    'dynamodb',
    async () => {
      const store = new DynamoRunStore({ client: aws().clients.doc, tableName: aws().res.table });
      return { history: store, storeFor: () => store };
    },
  ],
];

const at = (minute: number) => `2025-02-01T00:${String(minute).padStart(2, '0')}:00.000Z`;

async function add(runs: Runs, run: RunRecord, status?: RunRecord['status']): Promise<void> {
  const store = runs.storeFor(run.runId);
  await store.createRun(run);
  if (status) await store.setStatus(run.runId, status, status === 'done' ? at(59) : undefined);
}

describe.each(adapters)('RunHistory contract: %s', { timeout: 60_000 }, (_name, make) => {
  it('previousRun: the newest earlier run of the suite that is done; latestRun: the newest whatever its status', async () => {
    const runs = await make();
    const suite = fresh('suite');
    const id = (n: string) => `${suite}-${n}`;
    await add(runs, runRecord(id('a'), { suiteName: suite, startedAt: at(1) }), 'done');
    await add(runs, runRecord(id('b'), { suiteName: suite, startedAt: at(2) }), 'running');
    await add(runs, runRecord(id('c'), { suiteName: suite, startedAt: at(3) }));
    await add(runs, runRecord(id('other'), { suiteName: `${suite}-other`, startedAt: at(2) }), 'done');

    expect((await runs.history.previousRun(suite, id('c')))?.runId).toBe(id('a')); // b is not done
    await runs.storeFor(id('b')).setStatus(id('b'), 'done', at(6));
    expect(await runs.history.previousRun(suite, id('c'))).toMatchObject({
      runId: id('b'),
      status: 'done',
      finishedAt: at(6),
    });
    expect(await runs.history.previousRun(suite, id('a'))).toBeUndefined();

    await add(runs, runRecord(id('d'), { suiteName: suite, startedAt: at(4), datasetVersion: 'etag:7' }));
    expect(await runs.history.latestRun(suite)).toMatchObject({
      runId: id('d'),
      status: 'ingesting',
      datasetVersion: 'etag:7',
    });
    expect(await runs.history.latestRun(fresh('nobody'))).toBeUndefined();
  });

  it('previousRun and results of a run it does not know are RunNotFoundError', async () => {
    const runs = await make();
    const suite = fresh('suite');
    await add(runs, runRecord(`${suite}-a`, { suiteName: suite, startedAt: at(1) }), 'done');
    await expect(runs.history.previousRun(suite, `${suite}-ghost`)).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(collect(runs.history.results(`${suite}-ghost`))).rejects.toBeInstanceOf(RunNotFoundError);
  });

  it('reads back a run and its results; a run it does not know is undefined', async () => {
    const runs = await make();
    const id = fresh('read');
    const run = runRecord(id);
    await add(runs, run);
    await runs.storeFor(id).recordResult(result(id, 'x'));
    expect(await runs.history.getRun(id)).toEqual(run);
    expect(await collect(runs.history.results(id))).toEqual([result(id, 'x')]);
    expect(await runs.history.getRun(fresh('ghost'))).toBeUndefined();
  });
});
