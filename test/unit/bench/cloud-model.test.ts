/**
 * The capacity model (bench/cloud/model/) at a small size: a few hundred items through the
 * stack's real handlers over the simulated AWS. Its figures are simulated (service and LLM
 * latencies on the simulated clock), but the CPU each invocation spends, measured on this
 * machine, takes simulated time too: so the tests check the report's shape and the relations
 * its figures must keep, never a figure that depends on the machine's speed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { type Deployment, synthesizeDeployment } from '../../../bench/cloud/model/deployment.js';
import { FUNCTIONS } from '../../../bench/cloud/model/figures.js';
import { type CloudModelReport, runModel } from '../../../bench/cloud/model/model.js';
import { AWS_PRICES } from '../../../bench/parts/cost.js';

const ITEMS = 300;
const CONCURRENCY = 50;
const LLM_MS = 100;
const quiet = () => {};

let deployment: Deployment;
beforeAll(async () => {
  deployment = await synthesizeDeployment(CONCURRENCY);
});

const model = (extra: Partial<Parameters<typeof runModel>[0]> = {}) =>
  runModel({
    items: ITEMS,
    concurrency: CONCURRENCY,
    llmMs: LLM_MS,
    seed: 7,
    baselines: false,
    deployment,
    log: quiet,
    ...extra,
  });

describe('capacity model', () => {
  let report: CloudModelReport;
  beforeAll(async () => {
    report = await model();
  });

  it('reports every figure the JSON promises, for every function and both projections', () => {
    expect(report).toMatchObject({
      items: ITEMS,
      itemsPerSecond: expect.any(Number),
      wallSeconds: expect.any(Number),
      hottestKey: {
        key: expect.any(String),
        peakWruPerSecond: expect.any(Number),
        peakRruPerSecond: expect.any(Number),
      },
      throttled: 0,
      awsCostPer1MUsd: {
        dynamodb: expect.any(Number),
        lambda: expect.any(Number),
        sqs: expect.any(Number),
        s3: expect.any(Number),
        logs: expect.any(Number),
        total: expect.any(Number),
      },
      llmCostPer1MUsd: expect.any(Number),
    });
    for (const fn of FUNCTIONS) {
      expect(report.lambda[fn], fn).toMatchObject({
        timeoutS: expect.any(Number),
        memoryMb: expect.any(Number),
        tmpMb: expect.any(Number),
        invocations: expect.any(Number),
      });
      expect(report.lambda[fn].maxDurationS, fn).not.toBeNull();
      expect(report.lambda[fn].peakTmpMb, fn).not.toBeNull();
    }
    for (const size of ['1000000', '10000000'] as const)
      expect(report.projection[size]).toMatchObject({
        wallSeconds: expect.any(Number),
        awsCostUsd: expect.any(Number),
        withinLimits: expect.any(Boolean),
      });
    expect(report.goals.map((g) => g.goal)).toHaveLength(7);
  });

  it('gives every item exactly one result in the report and the table', () => {
    expect(report.report).toMatchObject({
      status: 'complete',
      items: ITEMS,
      resultItemsInTable: ITEMS,
      everyItemOnce: true,
    });
    expect((report.report.scored ?? 0) + (report.report.failed ?? 0)).toBe(ITEMS);
    expect(report.lambda.worker.records).toBeGreaterThanOrEqual(ITEMS);
  });

  it('keeps its figures consistent with one another and with the stand-ins’ accounting', () => {
    const ops = Object.values(report.dynamo.byOperation);
    expect(ops.reduce((n, op) => n + op.writeUnits, 0)).toBeCloseTo(report.dynamo.writeUnits, 0);
    expect(ops.reduce((n, op) => n + op.readUnits, 0)).toBeCloseTo(report.dynamo.readUnits, 0);
    expect(report.awsCostUsd.dynamodb).toBeCloseTo(
      report.dynamo.writeUnits * AWS_PRICES.dynamoWriteUnitUsd +
        report.dynamo.readUnits * AWS_PRICES.dynamoReadUnitUsd,
      5,
    );
    const { total, ...lines } = report.awsCostUsd;
    expect(Object.values(lines).reduce((a, b) => a + b, 0)).toBeCloseTo(total, 5);
    for (const [line, usd] of Object.entries(report.awsCostPer1MUsd))
      if (line !== 'secretsManager') expect(usd, line).toBeGreaterThan(0);
    expect(report.projection['10000000'].awsCostUsd).toBeCloseTo(
      10 * report.projection['1000000'].awsCostUsd,
      0,
    );
    expect(report.perItem.logBytes).toBeGreaterThan(0);
    // A batch of calls answered after at least half the mean latency cannot beat this.
    const batch = deployment.mappings.find((m) => m.fn === 'worker')!.batchSize;
    expect(report.itemsPerSecond).toBeGreaterThan(0);
    expect(report.itemsPerSecond).toBeLessThanOrEqual((CONCURRENCY * batch) / (LLM_MS / 1000));
    const t = report.timeline;
    expect(t.p5S!).toBeLessThanOrEqual(t.p50S!);
    expect(t.p95S!).toBeLessThanOrEqual(t.lastResultS!);
    expect(t.lastResultS!).toBeLessThanOrEqual(report.wallSeconds!);
    expect(report.lambda.worker.invocations).toBeGreaterThanOrEqual(Math.ceil(ITEMS / batch));
  });

  it('measures memory only with the container baseline: without it the goal cannot pass', () => {
    expect(report.lambda.worker.peakMemoryMb).toBeNull();
    expect(report.lambda.worker.byKind.worker?.peakHeapMb).toEqual(expect.any(Number));
    expect(report.goals.find((g) => g.goal.startsWith('every invocation'))?.pass).toBe(false);
  });
});

describe('capacity model under a hot partition key', () => {
  it('shows a key pushed past a lowered partition limit as the hottest key, and what was throttled', async () => {
    const report = await model({ partitionLimits: { writeUnitsPerSecond: 20, readUnitsPerSecond: 3000 } });
    expect(report.throttled).toBeGreaterThan(0);
    expect(report.hottestKey!.peakWruPerSecond).toBeGreaterThan(0);
    const goal = (start: string) => report.goals.find((g) => g.goal.startsWith(start))!;
    expect(goal('nothing throttled').pass).toBe(false);
    expect(report.projection['1000000'].withinLimits).toBe(false);
    expect(report.projection['1000000'].reasons.join(' ')).toMatch(/throttled/);
    // Throttled calls are retried by the product: the run still ends with every item once.
    expect(report.report.everyItemOnce).toBe(true);
  });
});
