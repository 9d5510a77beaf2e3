/**
 * What the DynamoDB run store writes per result, on moto: a counter never grows past 1 KB (a
 * slot's rows are counted in blocks), the spend sums take one write per flush instead of one per
 * result and see a redelivery once, and a result's body is stored deflated.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../shared/adapters/aws/clients.js';
import { DynamoRunStore, dynamoItemBytes } from '../../shared/adapters/aws/dynamo-run-store.js';
import {
  COUNT_BLOCK_ROWS,
  COUNT_PREFIX,
  countBlockOf,
  countSk,
  countSlotOf,
  KEY_PREFIXES,
  META_SK,
  RESULT_SLOTS,
  resultPk,
  resultSk,
  SPEC_SK,
} from '../../shared/lib/layout/table.js';
import { collect, fresh, result, runRecord } from './contracts/fixtures.js';
import {
  createTestResources,
  type Moto,
  motoClients,
  startMoto,
  TEST_CREDENTIALS,
  TEST_REGION,
  type TestResources,
  uniqueNames,
} from './moto.js';

let moto: Moto;
let res: TestResources;
let destroy: () => void;

beforeAll(async () => {
  moto = await startMoto();
  const clients = motoClients(moto.endpoint);
  res = await createTestResources(clients, uniqueNames('units'));
  destroy = () => {
    for (const client of Object.values(clients)) client.destroy();
  };
}, 120_000);

afterAll(async () => {
  destroy?.();
  await moto?.stop();
});

/** A write the store sent: its operation and the partition key it named. */
interface Sent {
  command: string;
  pk: string | undefined;
  sk?: string;
  consistent?: boolean;
}

/**
 * A store on its own client (a process of its own), the writes it sends, and a switch that
 * makes its next spend-shard write fail.
 */
function store(now: () => number, resultTtlDays?: number) {
  const dynamo = new DynamoDBClient({
    endpoint: moto.endpoint,
    region: TEST_REGION,
    credentials: TEST_CREDENTIALS,
  });
  const sent: Sent[] = [];
  const faults = { failNextRunSpend: false };
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      // A document client's key arrives as plain values or as DynamoDB's, by the step it is seen at.
      const input = args.input as {
        Key?: { pk?: string | { S?: string }; sk?: string | { S?: string } };
        ConsistentRead?: boolean;
      };
      const plain = (v: string | { S?: string } | undefined) => (typeof v === 'string' ? v : v?.S);
      const pk = plain(input.Key?.pk);
      const command = String(context.commandName);
      sent.push({ command, pk, sk: plain(input.Key?.sk), consistent: input.ConsistentRead });
      if (faults.failNextRunSpend && isUpdate(command) && pk?.startsWith(KEY_PREFIXES.spend)) {
        faults.failNextRunSpend = false;
        throw new Error('the network went away');
      }
      return next(args);
    },
    { step: 'initialize', name: 'recordWrites' },
  );
  const doc = createDocumentClient(dynamo);
  const s = new DynamoRunStore({
    client: doc,
    tableName: res.table,
    now,
    spentCacheMs: 0,
    daySpentCacheMs: 0,
    ...(resultTtlDays === undefined ? {} : { resultTtlDays }),
  });
  const spendWrites = () =>
    sent.filter(
      (w) =>
        isUpdate(w.command) &&
        (w.pk?.startsWith(KEY_PREFIXES.spend) || w.pk?.startsWith(KEY_PREFIXES.daySpend)),
    );
  return { s, doc, sent, faults, spendWrites, destroy: () => dynamo.destroy() };
}

const isUpdate = (command: string) => command === 'UpdateCommand' || command === 'UpdateItemCommand';

const budgeted = (runId: string) => {
  const run = runRecord(runId);
  return { ...run, suite: { ...run.suite, run: { ...run.suite.run, budgetUsd: 5 } } };
};

describe('DynamoRunStore: units per result', { timeout: 120_000 }, () => {
  it('counts consecutive rows in counters of COUNT_BLOCK_ROWS rows, each under 1 KB, and completes when every counter has its rows', async () => {
    const clock = () => Date.parse('2030-01-01T00:00:00Z');
    const { s, doc, destroy: done } = store(clock);
    const runId = fresh('blocks');
    await s.createRun(runRecord(runId));
    // Rows with eight-digit numbers (the largest a 10M-row dataset has): a full block of them,
    // and two rows in each of two later blocks whose counters live in the same slot's partition.
    const base = COUNT_BLOCK_ROWS * RESULT_SLOTS * 1221;
    const later = COUNT_BLOCK_ROWS * RESULT_SLOTS;
    const rows = [
      ...Array.from({ length: COUNT_BLOCK_ROWS }, (_, k) => base + k),
      base + later,
      base + later + 1,
      base + 2 * later,
      base + 2 * later + 1,
    ];
    expect(new Set(rows.map(countBlockOf)).size).toBe(3);
    expect(new Set(rows.map((row) => countSlotOf(countBlockOf(row)))).size).toBe(1);
    const last = rows.at(-1)!;
    for (let i = 0; i < rows.length - 1; i += 22)
      await Promise.all(
        rows
          .slice(i, Math.min(i + 22, rows.length - 1))
          .map((row) => s.recordResult(result(runId, `i${row}`, { row }))),
      );
    // A redelivery changes nothing.
    expect((await s.recordResult(result(runId, `i${rows[0]}`, { row: rows[0]! }))).recorded).toBe(false);
    expect(await s.closePart(runId, 0, { rows, invalidRows: 0, last: true })).toEqual({ complete: false });
    expect(await s.recordResult(result(runId, `i${last}`, { row: last }))).toEqual({
      recorded: true,
      complete: true,
    });
    expect(await s.counters(runId)).toMatchObject({ done: rows.length, failed: 0, total: rows.length });

    const { Items: counters = [] } = await doc.send(
      new QueryCommand({
        TableName: res.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :count)',
        ExpressionAttributeValues: {
          ':pk': resultPk(runId, 0, countSlotOf(countBlockOf(rows[0]!))),
          ':count': COUNT_PREFIX,
        },
      }),
    );
    expect(counters.map((c) => (c.rows as Set<number>).size)).toEqual([COUNT_BLOCK_ROWS, 2, 2]);
    for (const counter of counters) {
      expect(counter.complete).toBe(true);
      expect(dynamoItemBytes(counter)).toBeLessThan(1024);
    }
    done();
  });

  it("counts a batch's results in one write per block of rows it touches, and a batch holding a row counted before each on its own", async () => {
    const clock = () => Date.parse('2030-01-01T00:00:00Z');
    const { s, sent, destroy: done } = store(clock);
    const runId = fresh('batch-count');
    await s.createRun(runRecord(runId));
    const counterWrites = () =>
      sent.filter((w) => isUpdate(w.command) && w.pk?.startsWith(KEY_PREFIXES.results)).length;
    // 100 rows from the middle of block 0 into block 1: two counters, a write each.
    const rows = Array.from({ length: 100 }, (_, k) => 100 + k);
    expect(new Set(rows.map(countBlockOf)).size).toBe(2);
    const outcomes = await s.recordResults(rows.map((row) => result(runId, `i${row}`, { row })));
    expect(outcomes.every((o) => o.recorded)).toBe(true);
    expect(counterWrites()).toBe(2);
    expect(await s.counters(runId)).toMatchObject({ done: 100, failed: 0 });

    // A redelivered batch mixing counted rows with new ones: one refused write per block, then
    // each row on its own; each counted once.
    const before = counterWrites();
    const mixed = [98, 99, 100, 101, 228, 229].map((row) => result(runId, `i${row}`, { row }));
    expect((await s.recordResults(mixed)).map((o) => o.recorded)).toEqual([
      true,
      true,
      false,
      false,
      true,
      true,
    ]);
    expect(counterWrites() - before).toBe(1 + 4 + 1);
    expect(await s.counters(runId)).toMatchObject({ done: 104, failed: 0 });

    // One message delivered twice into the same batch: recorded and counted once.
    const twice = result(runId, 'i300', { row: 300 });
    expect((await s.recordResults([twice, twice])).map((o) => o.recorded).sort()).toEqual([false, true]);
    expect(await s.counters(runId)).toMatchObject({ done: 105, failed: 0 });
    done();
  });

  it("reads a run's definition (written once, never changed) with an eventually consistent read", async () => {
    const clock = () => Date.parse('2030-01-01T00:00:00Z');
    const writer = store(clock);
    const reader = store(clock);
    const runId = fresh('spec');
    await writer.s.createRun(runRecord(runId));
    expect((await reader.s.getRun(runId))?.suite.name).toBe(runRecord(runId).suite.name);
    const specReads = reader.sent.filter((w) => w.sk === SPEC_SK);
    expect(specReads.map((w) => w.consistent)).toEqual([false]);
    writer.destroy();
    reader.destroy();
  });

  it('looks again whether a run was stopped once its cache has lapsed: one read however many messages ask at once', async () => {
    let now = Date.parse('2030-01-01T00:00:00Z');
    const reader = store(() => now);
    const runId = fresh('stop-look');
    await reader.s.createRun(runRecord(runId));
    expect(await reader.s.stopped(runId)).toBeUndefined();
    const looks = () =>
      reader.sent.filter(
        (w) => (w.command === 'GetCommand' || w.command === 'GetItemCommand') && w.sk === META_SK,
      ).length;
    const before = looks();
    now += 6_000; // past the 5 s the store keeps a look
    const answers = await Promise.all(Array.from({ length: 50 }, () => reader.s.stopped(runId)));
    expect(answers.every((a) => a === undefined)).toBe(true);
    expect(looks() - before).toBe(1);
    reader.destroy();
  });

  it('adds a batch of results to the spend shards in one write per run and per day, each result once', async () => {
    // A day of its own: no other test adds to its shards.
    const clock = () => Date.parse('2030-02-03T10:00:00Z');
    const a = store(clock);
    const b = store(clock);
    const runId = fresh('flush');
    await a.s.createRun(budgeted(runId));
    const cost = 0.0001;
    for (let row = 0; row < 8; row += 1) await a.s.recordResult(result(runId, `i${row}`, { row }));

    // No spend write per result; the process sees its own spend, another process not yet.
    expect(a.spendWrites()).toEqual([]);
    expect(await a.s.spent(runId)).toBeCloseTo(8 * cost, 12);
    expect(await a.s.spentToday()).toBeCloseTo(8 * cost, 12);
    expect(await b.s.spent(runId)).toBe(0);
    expect(await b.s.spentToday()).toBe(0);

    await a.s.flushSpend();
    expect(a.spendWrites().map((w) => w.pk?.split('#')[0])).toEqual(['SPEND', 'DAYSPEND']);
    expect(await b.s.spent(runId)).toBeCloseTo(8 * cost, 12);
    expect(await b.s.spentToday()).toBeCloseTo(8 * cost, 12);
    // Not counted twice by the process that flushed it.
    expect(await a.s.spent(runId)).toBeCloseTo(8 * cost, 12);
    expect(await a.s.spentToday()).toBeCloseTo(8 * cost, 12);

    // A redelivered result, recorded by another process: nothing to add, nothing written.
    expect((await b.s.recordResult(result(runId, 'i3', { row: 3 }))).recorded).toBe(false);
    await b.s.flushSpend();
    await a.s.flushSpend();
    expect(b.spendWrites()).toEqual([]);
    expect(a.spendWrites()).toHaveLength(2);
    expect(await b.s.spent(runId)).toBeCloseTo(8 * cost, 12);
    a.destroy();
    b.destroy();
  });

  it('keeps what a failed flush did not write for the next flush', async () => {
    const clock = () => Date.parse('2030-02-04T10:00:00Z');
    const a = store(clock);
    const b = store(clock);
    const runId = fresh('flush-fails');
    await a.s.createRun(budgeted(runId));
    await a.s.recordResult(result(runId, 'i1', { row: 1 }));
    a.faults.failNextRunSpend = true;
    await expect(a.s.flushSpend()).rejects.toThrow(/the network went away/);
    // The day's write went through; the run's waits.
    expect(await b.s.spentToday()).toBeCloseTo(0.0001, 12);
    expect(await b.s.spent(runId)).toBe(0);
    expect(await a.s.spent(runId)).toBeCloseTo(0.0001, 12);
    await a.s.recordResult(result(runId, 'i2', { row: 2 }));
    await a.s.flushSpend();
    expect(await b.s.spent(runId)).toBeCloseTo(0.0002, 12);
    expect(await b.s.spentToday()).toBeCloseTo(0.0002, 12);
    a.destroy();
    b.destroy();
  });

  it("stores a result's JSON deflated, and reads results stored as JSON text too", async () => {
    const clock = () => Date.parse('2030-01-01T00:00:00Z');
    const { s, doc, destroy: done } = store(clock);
    const runId = fresh('deflated');
    await s.createRun(runRecord(runId));
    const long = result(runId, 'long', {
      row: 1,
      input: { src: 'the cat sat on the mat. '.repeat(40), tgt: 'b' },
    });
    await s.recordResult(long);
    const older = result(runId, 'older', { row: 2 });
    await doc.send(
      new PutCommand({
        TableName: res.table,
        Item: {
          pk: resultPk(runId, 0, 2),
          sk: resultSk(2, 'older'),
          type: 'result',
          status: 'scored',
          result: JSON.stringify(older),
        },
      }),
    );
    const { Items: [stored] = [] } = await doc.send(
      new QueryCommand({
        TableName: res.table,
        KeyConditionExpression: 'pk = :pk AND sk = :sk',
        ExpressionAttributeValues: { ':pk': resultPk(runId, 0, 1), ':sk': resultSk(1, 'long') },
      }),
    );
    expect(stored!.result).toBeInstanceOf(Uint8Array);
    expect((stored!.result as Uint8Array).byteLength).toBeLessThan(JSON.stringify(long).length / 3);
    expect(await collect(s.results(runId))).toEqual([long, older]);
    done();
  });

  it('writes a result and its counter with the ttl of the retention it is given, and none without one', async () => {
    const at = Date.parse('2030-01-01T00:00:00Z');
    const kept = store(() => at);
    const expiring = store(() => at, 90);
    const runId = fresh('ttl');
    await kept.s.createRun(runRecord(runId));
    await kept.s.recordResult(result(runId, 'kept', { row: 1 }));
    // A row of another block: a counter of its own.
    const other = COUNT_BLOCK_ROWS + 2;
    await expiring.s.recordResult(result(runId, 'expiring', { row: other }));
    const ttlOf = async (slot: number, sk: string) =>
      (
        await kept.doc.send(
          new QueryCommand({
            TableName: res.table,
            KeyConditionExpression: 'pk = :pk AND sk = :sk',
            ExpressionAttributeValues: { ':pk': resultPk(runId, 0, slot), ':sk': sk },
          }),
        )
      ).Items?.[0]?.ttl;
    expect(await ttlOf(1, resultSk(1, 'kept'))).toBeUndefined();
    expect(await ttlOf(other % RESULT_SLOTS, resultSk(other, 'expiring'))).toBe(at / 1000 + 90 * 86_400);
    const counterTtl = (row: number) => ttlOf(countSlotOf(countBlockOf(row)), countSk(countBlockOf(row)));
    expect(await counterTtl(1)).toBeUndefined();
    expect(await counterTtl(other)).toBe(at / 1000 + 90 * 86_400);
    kept.destroy();
    expiring.destroy();
  });
});
