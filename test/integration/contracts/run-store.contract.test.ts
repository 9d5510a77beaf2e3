/**
 * The RunStore contract: what ingest, the workers and the aggregator rely on, held by the
 * local store (a folder per run) and the DynamoDB store alike.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DynamoRunStore } from '../../../shared/adapters/aws/dynamo-run-store.js';
import { S3BlobStore } from '../../../shared/adapters/aws/s3-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import {
  ConflictError,
  NotFoundError,
  RunExistsError,
  RunNotFoundError,
} from '../../../shared/model/errors.js';
import { resultCost } from '../../../shared/model/model.js';
import type { RunStore } from '../../../shared/ports/ports.js';
import { tempDir } from '../../helpers.js';
import { awsStack, budgetFailure, collect, fresh, result, runRecord } from './fixtures.js';

const aws = awsStack('contract-run-store');

/** The store that holds `runId` (the local store keeps one run per folder). */
type StoreFor = (runId: string) => Promise<RunStore>;

/** The stores' clock: claims' leases are measured on it. */
const clock = { ms: Date.parse('2025-01-01T00:00:00.000Z') };
const now = () => clock.ms;

/** A run with a budget (DynamoDB keeps its spend in shards of its own). */
const plain = runRecord('any').suite;
const budgeted = { ...plain, run: { ...plain.run, budgetUsd: 1 } };
/** A budget a crowd of calls of a few cents each runs out of. */
const SMALL_BUDGET = 4;
const small = { ...plain, run: { ...plain.run, budgetUsd: SMALL_BUDGET } };

/** A seeded stream of numbers in [0, 1) (mulberry32), so that a failure can be replayed. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const adapters: [string, () => StoreFor][] = [
  [
    'local',
    () => {
      const root = tempDir('assay-contract-runs-');
      return async (runId) => new LocalRunStore(join(await root, runId), { now });
    },
  ],
  [
    'dynamodb',
    () => async () =>
      new DynamoRunStore({
        client: aws().clients.doc,
        tableName: aws().res.table,
        now,
        spentCacheMs: 0,
        // Results too large for an item go by reference to the bucket.
        blobs: new S3BlobStore({ client: aws().clients.s3, bucket: aws().res.bucket }),
      }),
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
      () => s.closePart(id, 0, { rows: [1], invalidRows: 0, last: true }),
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
      result(id, 'b', { row: 2, status: 'failed', failure: { kind: 'parse', message: 'no label' } }),
    );

    expect(first).toEqual({ recorded: true, complete: false });
    expect(again).toEqual({ recorded: false, complete: false });
    expect(failed).toEqual({ recorded: true, complete: false });
    expect(await s.counters(id)).toEqual({ done: 1, failed: 1, spentUsd: 0.0002 });
    expect(await s.spent(id)).toBeCloseTo(0.0002, 12);
    const stored = await collect(s.results(id));
    expect(stored.map((r) => r.itemId).sort()).toEqual(['a', 'b']);
    expect(stored.find((r) => r.itemId === 'a')).toEqual(result(id, 'a'));
    expect(new Set(await s.resultIds(id))).toEqual(new Set(['a', 'b']));
  });

  it('replaces a budget failure once (a resumed run), moving its counter and spend', async () => {
    const id = fresh('budget');
    const s = await storeFor(id);
    await s.createRun(runRecord(id, { suite: budgeted }));
    await s.recordResult(budgetFailure(id, 'a'));
    expect(await s.counters(id)).toEqual({ done: 0, failed: 1, spentUsd: 0 });
    expect(new Set(await s.resultIds(id))).toEqual(new Set());

    expect((await s.recordResult(result(id, 'a'))).recorded).toBe(true);
    expect((await s.recordResult(result(id, 'a'))).recorded).toBe(false);
    expect(await s.counters(id)).toEqual({ done: 1, failed: 0, spentUsd: 0.0001 });
    expect(await s.spent(id)).toBeCloseTo(0.0001, 12);
    expect(new Set(await s.resultIds(id))).toEqual(new Set(['a']));
    expect(await collect(s.results(id))).toEqual([result(id, 'a')]);
  });

  it('keeps a result larger than a DynamoDB item whole: read back as recorded, counted once, a budget failure of that size replaced', async () => {
    const id = fresh('large');
    const s = await storeFor(id);
    await s.createRun(runRecord(id, { suite: budgeted }));
    // 400,000 characters of three UTF-8 bytes each, drawn at random from 20,000: 1.2 MB, which
    // deflated is still past DynamoDB's 400 KB item.
    const draw = seeded(7);
    const huge = Array.from({ length: 400_000 }, () =>
      String.fromCharCode(0x4e00 + Math.floor(draw() * 20_000)),
    ).join('');
    const small = result(id, 'small', { row: 1 });
    const big = result(id, 'big', { row: 2, input: { src: huge, tgt: 'b' }, raw: huge });
    const late = result(id, 'late', { row: 3, input: { src: huge, tgt: 'c' } });
    await s.recordResult(small);
    expect((await s.recordResult(big)).recorded).toBe(true);
    // A redelivery of a large result records nothing, whatever it says now.
    const again = { ...big, finishedAt: '2025-01-01T00:09:00.000Z', input: { src: `${huge}!`, tgt: 'b' } };
    expect((await s.recordResult(again)).recorded).toBe(false);
    await s.recordResult({ ...budgetFailure(id, 'late'), row: 3, input: late.input });
    expect((await s.recordResult(late)).recorded).toBe(true);

    const counters = await s.counters(id);
    expect(counters).toMatchObject({ done: 3, failed: 0 });
    expect(counters?.spentUsd).toBeCloseTo(0.0003, 12);
    expect(new Set(await s.resultIds(id))).toEqual(new Set(['small', 'big', 'late']));
    expect(await collect(s.results(id))).toEqual([small, big, late]);
    expect(await collect(s.results(id, 0))).toEqual([small, big, late]);
  });

  it('reserves a budget: a reservation that would pass it is refused, and nothing is kept of it', async () => {
    const id = fresh('reserve');
    const s = await storeFor(id);
    await s.createRun(runRecord(id, { suite: budgeted }));
    expect(await s.reserve(id, { itemId: 'a', row: 1 }, 0.6, 1)).toBe(true);
    expect(await s.reserve(id, { itemId: 'b', row: 2 }, 0.5, 1)).toBe(false);
    expect(await s.reserved(id)).toBeCloseTo(0.6, 12);
    // What is left fits exactly.
    expect(await s.reserve(id, { itemId: 'b', row: 2 }, 0.4, 1)).toBe(true);
    expect(await s.reserved(id)).toBeCloseTo(1, 12);
    expect(await s.spent(id)).toBe(0);
  });

  it('never lets concurrent reservations pass the budget together', async () => {
    const id = fresh('reserve-race');
    const s = await storeFor(id);
    await s.createRun(runRecord(id, { suite: budgeted }));
    const granted = await Promise.all(
      Array.from({ length: 24 }, (_, i) => s.reserve(id, { itemId: `i${i}`, row: i }, 0.1, 1)),
    );
    // Ten fit: no more pass together, and none is refused while there is room.
    expect(granted.filter(Boolean)).toHaveLength(10);
    expect(await s.reserved(id)).toBeCloseTo(1, 9);
  });

  it('never lets concurrent reservations of any size pass the budget, and refuses only when it is nearly used', async () => {
    const id = fresh('reserve-crowd');
    const s = await storeFor(id);
    await s.createRun(runRecord(id, { suite: small }));
    const random = seeded(7);
    const largest = 0.05;
    const sizes = Array.from({ length: 200 }, () => 0.001 + random() * (largest - 0.001));
    const granted = await Promise.all(
      sizes.map((usd, i) => s.reserve(id, { itemId: `c${i}`, row: i }, usd, SMALL_BUDGET)),
    );
    const accepted = sizes.filter((_, i) => granted[i]).reduce((a, b) => a + b, 0);
    // The crowd asks for more than the budget: some are refused, but only once less than the
    // largest call is left.
    expect(granted.filter((g) => !g).length).toBeGreaterThan(0);
    expect(accepted).toBeLessThanOrEqual(SMALL_BUDGET + 1e-9);
    expect(accepted).toBeGreaterThanOrEqual(SMALL_BUDGET - largest);
    expect(await s.reserved(id)).toBeCloseTo(accepted, 9);

    // Each call cost at most what it reserved: what it did not spend is room again, and what
    // the run spends in the end never passes the budget.
    for (const [row, usd] of sizes.entries()) {
      if (!granted[row]) continue;
      const holder = { itemId: `c${row}`, row };
      const actual = usd * random();
      await s.settleReservation(id, holder, usd, actual);
      const recorded = result(id, holder.itemId, { row });
      const classify = { ...recorded.stages.classify!, costUsd: actual };
      await s.recordResult({ ...recorded, stages: { classify } });
    }
    expect(await s.reserved(id)).toBeCloseTo(0, 9);
    const spent = await s.spent(id);
    expect(spent).toBeLessThanOrEqual(SMALL_BUDGET + 1e-9);
    const left = SMALL_BUDGET - spent;
    expect(await s.reserve(id, { itemId: 'rest', row: 500 }, left, SMALL_BUDGET)).toBe(true);
    expect(await s.reserve(id, { itemId: 'late', row: 501 }, 0.001, SMALL_BUDGET)).toBe(false);
  });

  it('never refuses a settlement, even past the budget: later calls are refused', async () => {
    const id = fresh('settle-over');
    const s = await storeFor(id);
    await s.createRun(runRecord(id, { suite: budgeted }));
    const a = { itemId: 'a', row: 1 };
    expect(await s.reserve(id, a, 0.9, 1)).toBe(true);
    // The input was underestimated: the call cost more than the whole budget had left.
    await s.settleReservation(id, a, 0.9, 1.1);
    expect(await s.reserved(id)).toBeCloseTo(1.1, 12);
    expect(await s.reserve(id, { itemId: 'b', row: 2 }, 0.001, 1)).toBe(false);
  });

  it('settles a reservation to what the call cost, held until the result is recorded, which releases it', async () => {
    const id = fresh('settle');
    const s = await storeFor(id);
    await s.createRun(runRecord(id, { suite: budgeted }));
    const a = { itemId: 'a', row: 1 };
    expect(await s.reserve(id, a, 0.5, 1)).toBe(true);
    await s.settleReservation(id, a, 0.5, 0.0001);
    expect(await s.reserved(id)).toBeCloseTo(0.0001, 12);
    // The item's spend is held until its result is recorded, then it is spent.
    await s.recordResult(result(id, 'a'));
    expect(await s.reserved(id)).toBeCloseTo(0, 12);
    expect(await s.spent(id)).toBeCloseTo(0.0001, 12);
    expect(await s.reserve(id, { itemId: 'b', row: 2 }, 0.9999, 1)).toBe(true);
    expect(await s.reserve(id, { itemId: 'c', row: 3 }, 0.001, 1)).toBe(false);
  });

  it('releases what an attempt that died held once the result of its item is recorded', async () => {
    const id = fresh('settle-crash');
    const s = await storeFor(id);
    await s.createRun(runRecord(id, { suite: budgeted }));
    // An attempt reserved twice and died before settling; the item's redelivery then recorded it.
    expect(await s.reserve(id, { itemId: 'a', row: 1 }, 0.3, 1)).toBe(true);
    expect(await s.reserve(id, { itemId: 'a', row: 1 }, 0.2, 1)).toBe(true);
    expect(await s.reserve(id, { itemId: 'b', row: 2 }, 0.1, 1)).toBe(true);
    await s.recordResult(result(id, 'a'));
    expect(await s.reserved(id)).toBeCloseTo(0.1, 12);
    // A duplicate delivery's result releases what its attempt held too.
    await s.settleReservation(id, { itemId: 'a', row: 1 }, 0, 0.05);
    expect((await s.recordResult(result(id, 'a'))).recorded).toBe(false);
    expect(await s.reserved(id)).toBeCloseTo(0.1, 12);
  });

  it('closing the only part sets the total and starts the run; the result that completes it says so', async () => {
    const id = fresh('close');
    const s = await storeFor(id);
    await s.createRun(runRecord(id));
    await s.recordResult(result(id, 'a', { row: 1 }));

    expect(await s.closePart(id, 0, { rows: [1, 2, 3], invalidRows: 1, last: true })).toEqual({
      complete: false,
    });
    expect(await s.getRun(id)).toMatchObject({ status: 'running', total: 3, invalidRows: 1 });
    expect(await s.counters(id)).toEqual({ done: 1, failed: 0, total: 3, spentUsd: 0.0001 });
    expect((await s.recordResult(result(id, 'b', { row: 2 }))).complete).toBe(false);
    expect(await s.recordResult(result(id, 'c', { row: 3, status: 'failed' }))).toEqual({
      recorded: true,
      complete: true,
    });
    // A redelivery of any of them says so again (a crash between recording and asking).
    expect(await s.recordResult(result(id, 'a', { row: 1 }))).toEqual({ recorded: false, complete: true });
    // Closed again (a redelivered ingest): nothing counted twice, a later status left be.
    await s.setStatus(id, 'aggregating');
    expect(await s.closePart(id, 0, { rows: [1, 2, 3], invalidRows: 1, last: true })).toEqual({
      complete: true,
    });
    expect(await s.getRun(id)).toMatchObject({ status: 'aggregating', total: 3, invalidRows: 1 });
  });

  it('records a batch of results at once: each its own outcome in order, one recorded before not counted again, the run complete on one of them', async () => {
    const id = fresh('batch');
    const s = await storeFor(id);
    await s.createRun(runRecord(id));
    // More rows than one counter block and one counter write hold, on DynamoDB.
    const rows = Array.from({ length: 150 }, (_, row) => row);
    const results = rows.map((row) =>
      result(id, `i${row}`, { row, status: row % 10 === 0 ? 'failed' : 'scored' }),
    );
    await s.recordResult(results[5]!);
    expect(await s.closePart(id, 0, { rows, invalidRows: 0, last: true })).toEqual({ complete: false });

    const outcomes = await s.recordResults(results);
    expect(outcomes.map((o) => o.recorded)).toEqual(rows.map((row) => row !== 5));
    expect(outcomes.filter((o) => o.complete).length).toBeGreaterThanOrEqual(1);
    const counters = await s.counters(id);
    expect(counters).toMatchObject({ done: 135, failed: 15, total: 150 });
    expect(counters?.spentUsd).toBeCloseTo(
      results.reduce((sum, r) => sum + resultCost(r), 0),
      12,
    );
    // Again, all redelivered: nothing counted, the run still complete.
    const again = await s.recordResults(results.slice(0, 3));
    expect(again.map((o) => o.recorded)).toEqual([false, false, false]);
    expect(again.some((o) => o.complete)).toBe(true);
    expect(await s.counters(id)).toMatchObject({ done: 135, failed: 15, total: 150 });
  });

  it('a part closed after all its results came in completes the run', async () => {
    const id = fresh('late-close');
    const s = await storeFor(id);
    await s.createRun(runRecord(id));
    await s.recordResult(result(id, 'a', { row: 5 }));
    await s.recordResult(result(id, 'b', { row: 70 }));
    expect(await s.closePart(id, 0, { rows: [5, 70], invalidRows: 0, last: true })).toEqual({
      complete: true,
    });
    expect(await s.partCount(id)).toBe(1);
  });

  it('a run in parts is complete once its last part is known and every part has all its results', async () => {
    const id = fresh('parts');
    const s = await storeFor(id);
    await s.createRun(runRecord(id));
    const rows = { 0: [1, 2], 1: [3, 4, 5], 2: [6] } as Record<number, number[]>;
    const item = (part: number, row: number) => result(id, `i${row}`, { row, ...(part ? { part } : {}) });
    // Part 1 first, then its results; the last part closes before part 0.
    expect((await s.closePart(id, 1, { rows: rows[1]!, invalidRows: 0 })).complete).toBe(false);
    for (const row of rows[1]!) expect((await s.recordResult(item(1, row))).complete).toBe(false);
    expect((await s.getRun(id))?.total).toBeUndefined();
    expect((await s.closePart(id, 2, { rows: rows[2]!, invalidRows: 0, last: true })).complete).toBe(false);
    expect((await s.recordResult(item(2, 6))).complete).toBe(false);
    expect((await s.getRun(id))?.status).toBe('ingesting');
    for (const row of rows[0]!) expect((await s.recordResult(item(0, row))).complete).toBe(false);
    expect(await s.closePart(id, 0, { rows: rows[0]!, invalidRows: 0 })).toEqual({ complete: true });
    expect(await s.getRun(id)).toMatchObject({ status: 'running', total: 6, invalidRows: 0 });

    const all = await collect(s.results(id));
    expect(all.map((r) => r.row).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
    expect((await collect(s.results(id, 1))).map((r) => r.row).sort()).toEqual([3, 4, 5]);
    expect(new Set(await s.resultIds(id, 2))).toEqual(new Set(['i6']));
    expect(await s.partCount(id)).toBe(3);
    expect(await s.claimAggregation(id, 60_000)).toBe(true);
  });

  it('claims aggregation once, and only when every item has its result; a lapsed claim is taken again', async () => {
    const id = fresh('claim');
    const s = await storeFor(id);
    await s.createRun(runRecord(id));
    await s.recordResult(result(id, 'a', { row: 1 }));
    expect(await s.claimAggregation(id, 60_000)).toBe(false); // no part closed yet
    await s.closePart(id, 0, { rows: [1, 2], invalidRows: 0, last: true });
    expect(await s.claimAggregation(id, 60_000)).toBe(false); // 1 of 2
    await s.recordResult(result(id, 'b', { row: 2, status: 'failed' }));

    const claims = await Promise.all([s.claimAggregation(id, 60_000), s.claimAggregation(id, 60_000)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await s.claimAggregation(id, 60_000)).toBe(false);
    expect((await s.getRun(id))?.status).toBe('aggregating');
    // The aggregation died: once its lease has run out, the run is claimed again, once.
    clock.ms += 60_001;
    const retaken = await Promise.all([s.claimAggregation(id, 60_000), s.claimAggregation(id, 60_000)]);
    expect(retaken.filter(Boolean)).toHaveLength(1);
    // Given back (the aggregation failed), it can be claimed again at once.
    await s.setStatus(id, 'running');
    expect(await s.claimAggregation(id, 60_000)).toBe(true);
    await s.setStatus(id, 'done', '2025-01-01T00:09:00.000Z');
    clock.ms += 3_600_000;
    expect(await s.claimAggregation(id, 60_000)).toBe(false);
    expect(await s.getRun(id)).toMatchObject({ status: 'done', finishedAt: '2025-01-01T00:09:00.000Z' });
  });

  it('a claim held (renewed) does not lapse; a run not aggregated cannot be held', async () => {
    const id = fresh('hold');
    const s = await storeFor(id);
    await s.createRun(runRecord(id));
    expect(await s.holdAggregation(id, 60_000)).toBe(false); // not claimed
    await s.closePart(id, 0, { rows: [1], invalidRows: 0, last: true });
    await s.recordResult(result(id, 'a', { row: 1 }));
    expect(await s.claimAggregation(id, 60_000)).toBe(true);
    // Renewed before it lapses, the claim is not taken by another.
    clock.ms += 50_000;
    expect(await s.holdAggregation(id, 60_000)).toBe(true);
    clock.ms += 50_000;
    expect(await s.claimAggregation(id, 60_000)).toBe(false);
    clock.ms += 10_001;
    expect(await s.claimAggregation(id, 60_000)).toBe(true);
    await s.setStatus(id, 'done', '2025-01-01T00:09:00.000Z');
    expect(await s.holdAggregation(id, 60_000)).toBe(false);
    expect(await s.holdAggregation(fresh('ghost-hold'), 60_000)).toBe(false);
  });

  it('a claim of a run that does not exist loses', async () => {
    const id = fresh('ghost');
    expect(await (await storeFor(id)).claimAggregation(id, 60_000)).toBe(false);
  });
});

/**
 * On DynamoDB each process (a store) leases blocks of a run's budget from the run's ledger and
 * reserves calls from its own block: processes together never pass the budget, one write leases
 * many calls, and what a stopped process had leased is lost to the run, never more than a block.
 */
describe('RunStore budget on DynamoDB: processes lease it in blocks', { timeout: 60_000 }, () => {
  /** A process's store, counting the writes it sends to budget ledgers. */
  function processStore() {
    const writes = { ledger: 0 };
    const doc = aws().clients.doc;
    const client = {
      send(command: { input?: { Key?: { pk?: string } } }) {
        if (String(command.input?.Key?.pk ?? '').endsWith('#budget')) writes.ledger += 1;
        return doc.send(command as Parameters<typeof doc.send>[0]);
      },
    } as unknown as typeof doc;
    return {
      store: new DynamoRunStore({ client, tableName: aws().res.table, now, spentCacheMs: 0 }),
      writes,
    };
  }

  it('never lets processes pass the budget together, and refuses only once it is nearly used', async () => {
    const id = fresh('lease-fleet');
    const processes = [processStore(), processStore(), processStore()].map((p) => p.store);
    await processes[0]!.createRun(runRecord(id, { suite: budgeted }));
    const random = seeded(11);
    const largest = 0.01;
    const sizes = Array.from({ length: 300 }, () => 0.001 + random() * (largest - 0.001));
    const granted = await Promise.all(
      sizes.map((usd, i) => processes[i % 3]!.reserve(id, { itemId: `f${i}`, row: i }, usd, 1)),
    );
    const accepted = sizes.filter((_, i) => granted[i]).reduce((a, b) => a + b, 0);
    expect(granted.filter((g) => !g).length).toBeGreaterThan(0);
    expect(accepted).toBeLessThanOrEqual(1 + 1e-9);
    // Each process may keep less than one call of its block unused when it is refused.
    expect(accepted).toBeGreaterThanOrEqual(1 - 4 * largest);
    // A process knows what its own items hold.
    const held = await Promise.all(processes.map((p) => p.reserved(id)));
    expect(held.reduce((a, b) => a + b, 0)).toBeCloseTo(accepted, 9);
  });

  it('leases many calls with one write', async () => {
    const id = fresh('lease-block');
    const { store, writes } = processStore();
    await store.createRun(runRecord(id, { suite: { ...plain, run: { ...plain.run, budgetUsd: 100 } } }));
    const before = writes.ledger;
    for (let i = 0; i < 1_000; i += 1)
      expect(await store.reserve(id, { itemId: `b${i}`, row: i }, 0.0001, 100)).toBe(true);
    // A block is 64 calls' worth: 1,000 calls lease 16 times.
    expect(writes.ledger - before).toBe(16);
  });

  it('loses what a stopped process leased and did not spend: one block at most', async () => {
    const id = fresh('lease-lost');
    const stopped = processStore().store;
    await stopped.createRun(runRecord(id, { suite: budgeted }));
    expect(await stopped.reserve(id, { itemId: 'a', row: 1 }, 0.001, 1)).toBe(true);
    // The process stops holding its block; another fills the budget.
    const other = processStore().store;
    let taken = 0;
    for (let i = 0; await other.reserve(id, { itemId: `o${i}`, row: i }, 0.01, 1); i += 1) taken += 0.01;
    expect(taken).toBeLessThanOrEqual(1 - 0.001 + 1e-9);
    expect(taken).toBeGreaterThanOrEqual(1 - 0.005 - 0.01);
  });
});
