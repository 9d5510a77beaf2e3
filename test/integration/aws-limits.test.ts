/**
 * The AWS shell within DynamoDB's limits, on moto with the limits enforced (scripts/moto_serial.py):
 * - a table whose partitions take one write unit a second throttles nearly every write a run
 *   makes, and still every item ends as exactly one result without a message going back to
 *   the queue: the workers wait and try again, with jitter, instead of handing paid answers
 *   back (or to the dead-letter queue);
 * - an aggregation that dies after claiming its run leaves it `aggregating`; its trigger comes
 *   back (its invocation never finished), and once the claim's lease has lapsed, that trigger
 *   claims the run again and writes the report.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { partitionStats, setPartitionLimits } from '../../cli/cloud/moto.js';
import type { SqsFunctionHandler } from '../../cli/cloud/poller.js';
import { suiteKey } from '../../shared/lib/layout/bucket.js';
import { KEY_PREFIXES } from '../../shared/lib/layout/table.js';
import type { Report } from '../../shared/model/report.js';
import { REPO, suiteInput } from '../helpers.js';
import { pipelineStack } from './pipeline-stack.js';

/** 12 usable rows of the AQUA English gold set and 2 that cannot be used. */
const GOLD_CSV = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');
/**
 * How long a claim on a run's aggregation holds it here, ms: shorter than the aggregate
 * queue's visibility timeout (2 s here), as on AWS (a lease of the function's timeout and a
 * minute, a visibility of six timeouts), so a trigger that comes back finds the claim lapsed.
 */
const LEASE_MS = 500;

/** What the poller invokes for the aggregate queue; a test may put a dying aggregator in front. */
let aggregate: SqsFunctionHandler;
const stack = pipelineStack('limits', {
  env: { ASSAY_AGGREGATION_LEASE_MS: String(LEASE_MS) },
  // A failed invocation's messages come back after a second or two.
  resources: { visibilityTimeouts: { items: 1, aggregate: 2, events: 1 } },
  workerBatchSize: 5,
  workerConcurrency: 3,
  wrap: (functions) => {
    aggregate = functions.aggregate;
    return { ...functions, aggregate: (event, context) => aggregate(event, context) };
  },
  prompts: [join(REPO, 'prompts')],
});

/** Uploads the suite and the fixture, and drives the pipeline until the suite's report is written. */
async function runSuite(name: string): Promise<Report> {
  const { blobs, poller } = stack();
  await blobs.put(suiteKey(name), JSON.stringify(suiteInput({ name })), 'application/json');
  await poller.drain({ only: ['ingest'] });
  await blobs.put(`datasets/${name}/data.csv`, await readFile(GOLD_CSV));
  let key: string | undefined;
  await poller.runUntil(async () => {
    key = (await blobs.list(`reports/${name}/`)).find((k) => k.endsWith('/report.json'));
    return key !== undefined;
  });
  return JSON.parse(new TextDecoder().decode(await blobs.get(key!))) as Report;
}

describe('the AWS shell within DynamoDB limits', { timeout: 120_000 }, () => {
  it('records every result on a throttled table without handing a message back', async () => {
    const { moto, res, runStore, invocations } = stack();
    // The result partitions take one write unit a second: every result's second write (its
    // count, after its 2-unit put) is refused at first.
    await setPartitionLimits(moto.endpoint, {
      table: res.table,
      keyPrefix: KEY_PREFIXES.results,
      writeUnitsPerSecond: 1,
    });
    const from = invocations.length;
    let report: Report;
    try {
      report = await runSuite('throttled');
    } finally {
      await setPartitionLimits(moto.endpoint, { table: res.table, keyPrefix: '', writeUnitsPerSecond: 1000 });
    }
    const stats = await partitionStats(moto.endpoint, res.table);
    expect(stats.throttledRequests.write).toBeGreaterThan(10);
    expect(report.counts).toMatchObject({ items: 14, scored: 12, failed: 2, invalidRows: 2 });
    // No worker handed an item back: the throttled writes waited in the worker.
    const workers = invocations.slice(from).filter((i) => i.functionName === 'worker');
    expect(workers.length).toBeGreaterThan(0);
    expect(workers.filter((i) => i.failed > 0 || i.error !== undefined)).toEqual([]);
    expect(invocations.slice(from).filter((i) => i.functionName === 'dead-letter')).toEqual([]);
    const results = [];
    for await (const result of runStore.results(report.runId)) results.push(result);
    expect(new Set(results.map((r) => r.itemId)).size).toBe(14);
  });

  it('takes up an aggregation that died holding its run once the claim has lapsed', async () => {
    const { functions, runStore, invocations } = stack();
    // The first aggregator to come claims the run and dies (its invocation never finishes: its
    // trigger stays on the queue and comes back); the real one follows.
    let died: string | undefined;
    aggregate = async (event, context) => {
      if (!died) {
        const runId = JSON.parse(event.Records[0]!.body).runId as string;
        if (await runStore.claimAggregation(runId, LEASE_MS)) {
          died = runId;
          throw new Error('the aggregator died');
        }
      }
      return functions.aggregate(event, context);
    };
    const report = await runSuite('killed-aggregation');
    expect(died).toBe(report.runId);
    expect(report.counts).toMatchObject({ items: 14, scored: 12 });
    expect(await runStore.getRun(report.runId)).toMatchObject({ status: 'done' });
    const aggregations = invocations.filter((i) => i.functionName === 'aggregate');
    expect(
      aggregations.some((i) => i.error instanceof Error && i.error.message === 'the aggregator died'),
    ).toBe(true);
  });
});
