/**
 * Results larger than a DynamoDB item through the AWS handlers on moto (upload → ingest → worker
 * → DynamoDB and S3 → aggregate), against the local shell on the same suite and dataset: each
 * row's stored result is the same in both (the same fields cut the same way, the same `storage`
 * failure for the row too large to store), none dead-letters, and the one whose JSON is still over
 * 400 KB once cut fits its item deflated and is read back whole.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { uploadFolder } from '../../cli/cloud/local-cloud.js';
import { runLocal } from '../../cli/local-run.js';
import { LocalRunStore } from '../../shared/adapters/local/local-run-store.js';
import { datasetUploadKey, PROMPT_PREFIX, RESULTS_PREFIX, suiteKey } from '../../shared/lib/layout/bucket.js';
import { resultPk, resultSk, slotOf } from '../../shared/lib/layout/table.js';
import type { ItemResult } from '../../shared/model/model.js';
import type { Report } from '../../shared/model/report.js';
import { DYNAMO_ITEM_BYTES, resultBytes } from '../../shared/model/result-size.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { tempDir } from '../helpers.js';
import { LARGE_ROWS, largeDataset, writeLargeSuite } from './large-result-data.js';
import { pipelineStack } from './pipeline-stack.js';

const SUITE = 'large-result';
const stack = pipelineStack('large-result', {
  withoutApiKeys: true,
  resources: { itemsVisibilityTimeout: 5 },
  workerBatchSize: 2,
  workerConcurrency: 2,
});
let dir: string;
let suitePath: string;

beforeAll(async () => {
  const { blobs, poller } = stack();
  dir = await tempDir('assay-large-result-');
  suitePath = await writeLargeSuite(dir, SUITE, ['sim:gpt-4o-mini']);
  await uploadFolder(blobs, join(dir, 'prompts'), PROMPT_PREFIX);
  await poller.drain({ only: ['ingest'] });
}, 120_000);

/** A result as both shells should hold it: all but the run it is of and when it finished. */
function comparable({ runId: _run, finishedAt: _at, ...rest }: ItemResult) {
  return rest;
}

async function byItem(results: AsyncIterable<ItemResult>): Promise<Map<string, ItemResult>> {
  const map = new Map<string, ItemResult>();
  for await (const result of results) map.set(result.itemId, result);
  return map;
}

describe('results larger than a DynamoDB item, in both shells', { timeout: 150_000 }, () => {
  it('stores each row the same in both shells, the dense one deflated in its item, and dead-letters none', async () => {
    const { clients, res, blobs, poller, runStore } = stack();
    const local = await runLocal({
      suitePath,
      outDir: join(dir, 'local'),
      cachePath: join(dir, 'cache.jsonl'),
      env: {},
    });
    if (local.outcome.status !== 'written') throw new Error('the local run was not aggregated');
    const localResults = await byItem(
      new LocalRunStore(join(dir, 'local'), { checkSuite: validateSuite }).results(
        local.outcome.report.runId,
      ),
    );

    await blobs.put(suiteKey(SUITE), await readFile(suitePath, 'utf8'), 'application/json');
    await poller.drain({ only: ['ingest'] });
    await blobs.put(datasetUploadKey(SUITE, 'data.jsonl'), largeDataset());
    let reportKey: string | undefined;
    await poller.runUntil(
      async () => {
        reportKey = (await blobs.list(`reports/${SUITE}/`)).find((key) => key.endsWith('/report.json'));
        return reportKey !== undefined;
      },
      { timeoutMs: 120_000 },
    );
    const report = JSON.parse(new TextDecoder().decode(await blobs.get(reportKey!))) as Report;
    const cloudResults = await byItem(runStore.results(report.runId));

    expect([...cloudResults.keys()].sort()).toEqual([...LARGE_ROWS].sort());
    expect(report.counts).toEqual(local.outcome.report.counts);
    for (const id of LARGE_ROWS) {
      const cloud = cloudResults.get(id)!;
      expect(cloud.failure?.kind, id).not.toBe('dead_letter');
      expect(comparable(cloud), id).toEqual(comparable(localResults.get(id)!));
    }
    expect(cloudResults.get('wide')!.status).toBe('scored');
    expect(cloudResults.get('dense')!.status).toBe('scored');
    expect(cloudResults.get('many')!.failure).toMatchObject({
      kind: 'storage',
      message: expect.stringMatching(/KB over the 1024 KB a stored result may hold/),
    });

    // The dense row's JSON passes an item's 400 KB, deflated it fits: its item holds it, as the wide row's does.
    const dense = cloudResults.get('dense')!;
    expect(resultBytes(dense)).toBeGreaterThan(DYNAMO_ITEM_BYTES);
    const item = async (result: ItemResult) =>
      (
        await clients.doc.send(
          new GetCommand({
            TableName: res.table,
            Key: {
              pk: resultPk(report.runId, 0, slotOf(result.row)),
              sk: resultSk(result.row, result.itemId),
            },
          }),
        )
      ).Item!;
    const denseItem = await item(dense);
    expect(denseItem.resultRef).toBeUndefined();
    expect(denseItem.result).toBeInstanceOf(Uint8Array);
    expect((denseItem.result as Uint8Array).byteLength).toBeLessThan(DYNAMO_ITEM_BYTES);
    expect(await blobs.list(`${RESULTS_PREFIX}${report.runId}/`)).toEqual([]);
    expect((await item(cloudResults.get('wide')!)).result).toBeInstanceOf(Uint8Array);
  });
});
