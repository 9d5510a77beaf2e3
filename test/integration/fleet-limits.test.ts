/**
 * A declared rate limit on the AWS shell (moto_server, the real handlers driven by the local
 * poller, the OpenAI SDK against a fake that enforces the limit with 429 + retry-after): the
 * workers lease the calls from the fleet's bucket in the table, so the run loses nothing and
 * is barely refused, and the bucket's shard counts no more leases than calls.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteKey } from '../../shared/lib/layout/bucket.js';
import { LIMIT_SK, limitPk, limitShardPk } from '../../shared/lib/layout/table.js';
import type { Report } from '../../shared/model/report.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, suiteInput } from '../helpers.js';
import { pipelineStack } from './pipeline-stack.js';

/** 12 usable rows of the AQUA English gold set and 2 that cannot be used. */
const GOLD_CSV = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');
const RPM = 240; // 4 per second, a burst of 4

let fake: VendorFake;
beforeAll(async () => {
  fake = await startVendorFake(undefined, { rpm: RPM });
});
afterAll(async () => {
  await fake?.close();
});

const stack = pipelineStack('fleet-limits', {
  env: () => ({ OPENAI_API_KEY: 'test', OPENAI_BASE_URL: fake.env.OPENAI_BASE_URL }),
  // Two worker invocations at once, five records each, as two containers would take them.
  workerBatchSize: 5,
  workerConcurrency: 2,
  prompts: [join(REPO, 'prompts')],
});

describe('a declared rate limit on AWS', { timeout: 90_000 }, () => {
  it('holds every call to the bucket in the table: nothing lost, few 429s', async () => {
    const { clients, res, blobs, poller } = stack();
    const name = 'fleet-limited';
    const suite = suiteInput({
      name,
      backends: ['openai:gpt-4o-mini'],
      run: { concurrency: 8, cache: false, limits: { 'openai:gpt-4o-mini': { rpm: RPM } } },
    });
    await blobs.put(suiteKey(name), JSON.stringify(suite), 'application/json');
    await poller.drain({ only: ['ingest'] });
    fake.reset();
    await blobs.put(`datasets/${name}/data.csv`, await readFile(GOLD_CSV));

    let key: string | undefined;
    await poller.runUntil(async () => {
      key = (await blobs.list(`reports/${name}/`)).find((k) => k.endsWith('/report.json'));
      return key !== undefined;
    });
    const report = JSON.parse(new TextDecoder().decode(await blobs.get(key!))) as Report;

    expect(report.counts).toMatchObject({ items: 14, scored: 12, failed: 2, invalidRows: 2 });
    expect(fake.requests).toHaveLength(12);
    expect(fake.throttled).toBeLessThanOrEqual(2);
    const item = async (pk: string) =>
      (await clients.doc.send(new GetCommand({ TableName: res.table, Key: { pk, sk: LIMIT_SK } }))).Item;
    // 240 RPM is one shard. Each lease is a write and covers one call or more (the calls the
    // worker had waiting): never more leases than calls (those the vendor refused included).
    const shard = await item(limitShardPk('openai:gpt-4o-mini', 0));
    expect(shard?.version).toBeGreaterThanOrEqual(1);
    expect(shard?.version).toBeLessThanOrEqual(12 + fake.throttled);
    // No call took from the per-call bucket (nothing was learned either: the fake sends no limits).
    expect(await item(limitPk('openai:gpt-4o-mini'))).toBeUndefined();
  });
});
