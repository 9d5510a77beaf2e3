/**
 * The capacity model (bench/cloud/model/) at a small size: a few hundred items through the
 * stack's real handlers over the simulated AWS. Its figures are simulated (service and LLM
 * latencies on the simulated clock), but the CPU each invocation spends, measured on this
 * machine, takes simulated time too: so the tests check the report's shape and the relations
 * its figures must keep, never a figure that depends on the machine's speed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { type Deployment, synthesizeDeployment } from '../../../bench/cloud/model/deployment.js';
import type { RunFigures } from '../../../bench/cloud/model/figures.js';
import { FUNCTIONS } from '../../../bench/cloud/model/figures.js';
import { type CloudModelReport, runModel } from '../../../bench/cloud/model/model.js';
import {
  ingestRateAt,
  partsAt,
  projectGrowth,
  projectRamp,
  projectScaled,
  projectTail,
  tableUnits,
} from '../../../bench/cloud/model/projection.js';
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
    expect(report.goals.map((g) => g.goal)).toHaveLength(11);
    expect(report.sustainedItemsPerSecond).toBeCloseTo(ITEMS / report.wallSeconds!, 0);
    expect(report.fleet).toMatchObject({ mode: 'standard', peakConcurrency: expect.any(Number) });
    expect(report.tablePeak).toMatchObject({
      wru: expect.any(Number),
      rru: expect.any(Number),
      quota: { wru: 40_000 },
    });
    for (const f of Object.values(report.keyFamilies)) {
      expect(f.peakOfferedWruPerSecond).toBeGreaterThanOrEqual(f.peakWruPerSecond);
      expect(f.refused).toBe(0);
    }
    // The worker's calls go through the LLM cache and the rate limiter, as a vendor's would.
    expect(Object.keys(report.keyFamilies)).toEqual(expect.arrayContaining(['CACHE', 'LIMIT']));
    expect(report.llm.calls).toBeGreaterThanOrEqual(ITEMS);
  });

  it('ramps the items mapping from 5 lanes, 300 more a minute, as standard mode does', () => {
    // From 5 lanes, adding 5 a second: never more than that many at once by the run's end.
    expect(report.fleet.scaling).toEqual({ initial: 5, perMinute: 300, concurrency: CONCURRENCY });
    expect(report.fleet.peakWorkerConcurrency).toBeLessThanOrEqual(5 + 5 * Math.ceil(report.wallSeconds!));
    expect(report.fleet.peakWorkerConcurrency).toBeLessThanOrEqual(CONCURRENCY);
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
    const report = await model({ partitionLimits: { writeUnitsPerSecond: 10, readUnitsPerSecond: 3000 } });
    expect(report.throttled).toBeGreaterThan(0);
    expect(report.hottestKey!.peakWruPerSecond).toBeGreaterThan(0);
    const goal = (start: string) => report.goals.find((g) => g.goal.startsWith(start))!;
    expect(goal('nothing refused').pass).toBe(false);
    expect(report.projection['1000000'].withinLimits).toBe(false);
    expect(report.projection['1000000'].reasons.join(' ')).toMatch(/refused/);
    // What a key was asked is counted beyond what it could take.
    const busiest = Object.values(report.keyFamilies).sort((a, b) => b.refused - a.refused)[0]!;
    expect(busiest.refused).toBeGreaterThan(0);
    expect(busiest.peakOfferedWruPerSecond).toBeGreaterThan(10);
    // Throttled calls are retried by the product: the run still ends with every item once.
    expect(report.report.everyItemOnce).toBe(true);
  });
});

describe('capacity model against a table that cannot keep up', () => {
  it('says no: the table refuses what is offered above its throughput, and the projection is not within limits', async () => {
    const limits = { ...deployment.limits, warmWriteUnitsPerSecond: 40, tableWriteQuota: 40 };
    const report = await model({ deployment: { ...deployment, limits } });
    expect(report.tablePeak.quota.wru).toBe(40);
    expect(report.tablePeak.refused).toBeGreaterThan(0);
    expect(report.tablePeak.takenWru).toBeLessThanOrEqual(40);
    expect(report.tablePeak.wru).toBeGreaterThan(report.tablePeak.takenWru);
    for (const size of ['1000000', '10000000'] as const) {
      expect(report.projection[size].withinLimits).toBe(false);
      expect(report.projection[size].reasons.join(' ')).toMatch(/refused/);
    }
    expect(report.goals.find((g) => g.goal.startsWith('the table-wide peak'))?.pass).toBe(false);
    expect(report.report.everyItemOnce).toBe(true);
  });
});

describe('ingest projected to a larger file', () => {
  // 10,000 items in 2.8 MB read in 256 KB ranges: 11 ranges, all at once (reserved 20).
  const run = {
    items: 10_000,
    basis: { datasetBytes: 2_800_000, chunkBytes: 262_144 },
    stages: { ingestItemsPerSecond: 11_000 },
    fleet: { reserved: { ingest: 20 }, accountConcurrency: 1000 },
  } as unknown as RunFigures;

  it('reads more ranges at once, up to its reserved concurrency, each at the rate the run measured a range', () => {
    // 1,000 items a range a second; 100,000 items are 28 MB, 107 ranges: 20 at once.
    expect(ingestRateAt(run, 100_000)?.rate).toBe(20_000);
    // The run's own size: as measured.
    expect(ingestRateAt(run, 10_000)?.rate).toBe(11_000);
    // 2,000 items are 560 KB, 3 ranges.
    expect(ingestRateAt(run, 2_000)?.rate).toBe(3_000);
    expect(
      ingestRateAt({ ...run, stages: { ingestItemsPerSecond: null } } as unknown as RunFigures, 10),
    ).toBeNull();
  });
});

describe('a per-batch figure that grew between two sizes, projected', () => {
  it('grows with the log of the items: the largest of more batches', () => {
    const small = { items: 50_000 } as unknown as RunFigures;
    const large = { items: 100_000 } as unknown as RunFigures;
    const pick = (r: RunFigures) => (r.items === 50_000 ? 10 : 20);
    // 20 + (20 − 10) / ln 2 × ln(10,000,000 / 100,000) = 20 + 14.427 × 4.605 = 86.44.
    const at10M = projectGrowth('per batch', 10_000_000, large, small, pick, true);
    expect(at10M.value).toBeCloseTo(86.44, 2);
    expect(at10M.rule).toMatch(/log of the items/);
    // A figure that did not grow by a quarter stays the largest measured.
    expect(projectGrowth('per batch', 10_000_000, large, small, () => 20, true).value).toBe(20);
  });
});

describe('a per-run figure replayed on more parts than the runs had, projected', () => {
  const at = (parts: number, items: number, peakHeapMb: number) => ({
    parts,
    items,
    durationS: 1,
    peakHeapMb,
    peakTmpMb: 0,
  });
  const measured = { value: 60, rule: 'measured' };
  it('draws a line through the two replays with the most parts, in the results they stand for', () => {
    // 120 + (120 − 100) / (800,000 − 400,000) × (10,000,000 − 800,000) = 120 + 460 = 580.
    const projected = projectScaled(
      [at(16, 400_000, 100), at(32, 800_000, 120)],
      10_000_000,
      'peakHeapMb',
      measured,
    );
    expect(projected.value).toBeCloseTo(580, 6);
    expect(projected.rule).toMatch(/replayed on 16 and 32 parts \(400,000 and 800,000 results/);
  });
  it('never goes below the larger replay, nor below what the runs project', () => {
    const falling = [at(16, 400_000, 130), at(32, 800_000, 120)];
    expect(projectScaled(falling, 10_000_000, 'peakHeapMb', measured).value).toBe(130);
    const runs = { value: 900, rule: 'a line through 60,000 and 100,000 items' };
    const above = projectScaled(falling, 10_000_000, 'peakHeapMb', runs);
    expect(above.value).toBe(900);
    expect(above.rule).toMatch(/below the runs' \(a line through 60,000 and 100,000 items\): theirs/);
  });
});

describe('the aggregation after the last result, projected stage by stage', () => {
  // 100,000 items in 28 MB read in 2 MB chunks: 14 parts, over 20 aggregate lanes one wave.
  const kinds = (reduce: number, assemble: number) => ({
    'aggregate:run': { growth: 'per run', maxDurationS: 0.5 },
    'aggregate:tally': { growth: 'per part', maxDurationS: 3 },
    'aggregate:reduce': { growth: 'per run', maxDurationS: reduce },
    'aggregate:files': { growth: 'per part', maxDurationS: 4 },
    'aggregate:assemble': { growth: 'per run', maxDurationS: assemble },
  });
  const runOf = (items: number, reduce: number, assemble: number, tailS: number) =>
    ({
      items,
      basis: {
        datasetBytes: 280 * items,
        chunkBytes: 2 * 1024 * 1024,
        aggregateInParts: true,
        tailS,
        aggregateLanes: 20,
      },
      lambda: { aggregate: { byKind: kinds(reduce, assemble) } },
    }) as unknown as RunFigures;
  const small = runOf(50_000, 1, 3, 15);
  const large = runOf(100_000, 2, 6, 20);

  it('counts the parts a run has: a chunk of bytes each, at most 50,000 rows', () => {
    expect(partsAt(large, 100_000)).toBe(14);
    // 2.8 GB over 2 MB chunks: 1,336 parts.
    expect(partsAt(large, 10_000_000)).toBe(1_336);
    // Chunks of 64 MB would hold 240,000 rows: parts of 50,000 rows instead.
    expect(partsAt({ ...large, basis: { ...large.basis, chunkBytes: 64 * 1024 * 1024 } }, 10_000_000)).toBe(
      200,
    );
  });

  it('adds the per-run steps’ growth and the per-part steps’ waves to the measured tail', () => {
    // At 1M items: 134 parts over 20 lanes, 7 waves (the run had 1): 6 more of tally (3 s) and
    // of files (4 s) = 42 s; reduce on a line through 1 s and 2 s: 2 + 900,000 / 50,000 × 1 =
    // 20 s (+18); assemble 6 + 18 × 3 = 60 s (+54); the run's claim did not grow. 20 + 42 + 18
    // + 54 = 134 s.
    const tail = projectTail(large, small, 1_000_000);
    expect(tail.value).toBeCloseTo(134, 6);
    expect(tail.rule).toMatch(/134 parts over 20 lanes: 7 waves, 1 in the run/);
    // At the run's own size: as measured.
    expect(projectTail(large, small, 100_000).value).toBe(20);
    expect(
      projectTail({ ...large, basis: { ...large.basis, tailS: null } }, small, 1_000_000).value,
    ).toBeNull();
  });
});

describe('the table shared by ingest and the workers, projected', () => {
  // 20,000 items; ingest queues 4,000 a second, claiming 1 WRU a row; scoring takes 2 WRU an
  // item more; the fleet (100 lanes from the start) could score 5,000 a second; the table is
  // warm at 10,000 WRU/s, planned to 80 %: 8,000.
  const run = {
    items: 20_000,
    itemsPerSecond: 2_000,
    basis: { datasetBytes: 1_000_000, chunkBytes: 2_000_000 },
    stages: { ingestItemsPerSecond: 4_000, workerFleetItemsPerSecond: 5_000 },
    fleet: {
      reserved: { ingest: 20 },
      accountConcurrency: 1000,
      scaling: { initial: 100, perMinute: 1000, concurrency: 100 },
    },
    keyFamilies: { IDS: { writeUnits: 20_000, readUnits: 0 } },
    perItem: { dynamoWriteUnits: 3, dynamoReadUnits: 0 },
    tablePeak: { warm: { wru: 10_000, rru: 10_000, declared: true }, quota: { wru: 40_000, rru: 40_000 } },
  } as unknown as RunFigures;

  it("splits the units between ingest's claims and the items scored", () => {
    expect(tableUnits(run)).toEqual({ ingest: { wru: 1, rru: 0 }, worker: { wru: 2, rru: 0 } });
  });

  it('gives the workers what ingest leaves of the table while it reads, and the whole table after', () => {
    const ramp = projectRamp(run, 20_000);
    // Seconds 0-4: ingest queues 4,000 (4,000 WRU); the workers score (8,000 − 4,000) / 2 =
    // 2,000 a second: 10,000 by the end of second 4. Seconds 5-6: 8,000 / 2 = 4,000 a second,
    // 18,000. Second 7: the last 2,000. Eight seconds; the median second scored 2,000.
    expect(ramp.seconds).toBe(8);
    expect(ramp.steady).toBe(2_000);
    expect(ramp.setBy).toMatch(/the table's throughput .* beside ingest's 1 WRU a row/);
    // The fleet (5,000) offered more than the table's 80 % in seven of those seconds.
    expect(ramp.reasons.join(' ')).toMatch(/more than 80 % of what it serves for 7 s/);
  });
});

describe('capacity model in provisioned mode', () => {
  it('starts the items mapping with its minimum pollers, ten invocations each', async () => {
    const mappings = deployment.mappings.map((m) =>
      m.fn === 'worker' ? { ...m, mode: 'provisioned' as const, minPollers: 2, maxPollers: 4 } : m,
    );
    const report = await model({ deployment: { ...deployment, mappings } });
    expect(report.fleet.mode).toBe('provisioned');
    expect(report.fleet.scaling).toEqual({ initial: 20, perMinute: 1000, concurrency: 40 });
    expect(report.fleet.peakWorkerConcurrency).toBeGreaterThan(5);
    expect(report.fleet.peakWorkerConcurrency).toBeLessThanOrEqual(40);
    expect(report.report.everyItemOnce).toBe(true);
  });
});

describe('capacity model with a worker timeout its batches outrun', () => {
  // The records come back after the items queue's visibility timeout (30 simulated minutes):
  // hours of simulated time, most of it long polls; 26 s on a quiet machine.
  it('ends those invocations at the timeout, as Lambda does, and their records come back and are scored once', {
    timeout: 300_000,
  }, async () => {
    // A batch ends with its slowest call: at 100 ms median, batches of up to 100 take about
    // 0.5 s, so a 0.5 s timeout ends many of them.
    const worker = { ...deployment.functions.worker, timeoutS: 0.5 };
    const items = 100;
    const report = await model({
      items,
      deployment: { ...deployment, functions: { ...deployment.functions, worker } },
    });
    expect(report.lambda.worker.errors).toBeGreaterThan(0);
    expect(report.lambda.worker.firstError).toMatch(/Task timed out after 0\.50 seconds/);
    const goal = report.goals.find((g) => g.goal.startsWith('every invocation within 80'));
    expect(goal?.pass).toBe(false);
    expect(report.report).toMatchObject({ status: 'complete', items, everyItemOnce: true });
    expect((report.report.scored ?? 0) + (report.report.failed ?? 0)).toBe(items);
  });
});

describe('capacity model aggregating in parts', () => {
  let report: CloudModelReport;
  beforeAll(async () => {
    // Small chunks, and the aggregation in parts from the first result: a few parts of 300 items.
    const functions = structuredClone(deployment.functions);
    functions.ingest.env.ASSAY_INGEST_CHUNK_BYTES = '16384';
    functions.aggregate.env.ASSAY_AGGREGATE_IN_PARTS_FROM = '0';
    report = await model({ deployment: { ...deployment, functions } });
  });

  it('replays the assembly on 32 and 64 parts too, its largest part repeated, apart from its own figures', () => {
    const assemble = report.lambda.aggregate.byKind['aggregate:assemble']!;
    const own = assemble.calibrated.filter((c) => c.scaled === undefined);
    expect(own).toHaveLength(1);
    expect(own[0]!.error).toBeUndefined();
    expect(assemble.scaled?.map((s) => s.parts)).toEqual([32, 64]);
    const [fewer, more] = assemble.scaled!;
    // Each part past the run's own holds as many results as its largest.
    const parts = report.lambda.aggregate.byKind['aggregate:tally']!.invocations;
    expect(parts).toBeGreaterThan(1);
    expect(parts).toBeLessThan(32);
    expect((more!.items - fewer!.items) / 32).toBeGreaterThanOrEqual(ITEMS / parts);
    expect(fewer!.items).toBeGreaterThan(ITEMS);
    expect(assemble.calibrated.filter((c) => c.scaled).every((c) => c.error === undefined)).toBe(true);
    // The projection of the assembly is drawn through them.
    const check = report.projection['10000000'].checks.find((c) => c.what === 'aggregate:assemble /tmp, MB');
    expect(check?.rule).toMatch(/replayed on 32 and 64 parts/);
  });
});
