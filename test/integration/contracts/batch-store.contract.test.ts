/**
 * The BatchStore contract: what the batch lane's workers (`scoreOrWait`) and its poller
 * (`advanceBatches`) rely on. A wait records the call once and says where it stands; a run is
 * marked while it has calls not yet in a batch, and a mark cleared by a pass that read an older
 * one stays; a batch moves only waiting calls; closing it stores each outcome and hands back
 * every waiting item's message once. In memory (one process) and in DynamoDB (the fleet)
 * alike. The local shell's own batch lane keeps a BatchLedger instead (see its contract).
 */
import { describe, expect, it } from 'vitest';
import { DynamoBatchStore } from '../../../shared/adapters/aws/dynamo-batch-store.js';
import { MemoryBatchStore } from '../../../shared/adapters/local/memory-batch-store.js';
import type { Completion } from '../../../shared/model/provider.js';
import type { BatchStore, OpenBatch, WaitingCall } from '../../../shared/ports/ports.js';
import { awsStack, fresh } from './fixtures.js';

const aws = awsStack('contract-batches');

const adapters: [string, () => Promise<BatchStore>][] = [
  ['memory', async () => new MemoryBatchStore()],
  ['dynamodb', async () => new DynamoBatchStore({ client: aws().clients.doc, tableName: aws().res.table })],
];

const BACKEND = 'openai:gpt-4o-mini';

const call = (key: string): WaitingCall => ({
  key,
  backend: BACKEND,
  customId: `r1-classify-${key}`,
  request: { model: 'gpt-4o-mini', system: 'Judge.', prompt: `is “${key}” right? é`, maxTokens: 20 },
});

const answer = (text: string): Completion => ({
  text,
  finishReason: 'stop',
  usage: { input: 10, output: 2, cached: 0 },
  costUsd: 0.00001,
  latencyMs: 5,
  cached: false,
  simulated: false,
  providerId: BACKEND,
});

const open = (runId: string, batchId: string): OpenBatch => ({
  runId,
  batchId,
  backend: BACKEND,
  submittedAt: '2026-01-01T00:00:00.000Z',
});

describe.each(adapters)('BatchStore contract: %s', { timeout: 60_000 }, (_name, make) => {
  const markOf = async (store: BatchStore, runId: string) =>
    (await store.runsWithWaitingCalls()).find((r) => r.runId === runId)?.mark;

  it('records a call once, however many items wait for it, and says where it stands', async () => {
    const store = await make();
    const runId = fresh('run');
    expect(await store.callState(runId, 'k1')).toBeUndefined();
    expect(await store.wait(runId, 'item-1', call('k1'), 'body-1')).toEqual({ state: 'waiting' });
    expect(await store.wait(runId, 'item-2', call('k1'), 'body-2')).toEqual({ state: 'waiting' });
    expect(await store.wait(runId, 'item-2', call('k0'), 'body-2')).toEqual({ state: 'waiting' });
    expect(await store.callState(runId, 'k1')).toEqual({ state: 'waiting' });
    // Whole, by key order; another run's calls are its own.
    expect(await store.waitingCalls(runId)).toEqual([call('k0'), call('k1')]);
    expect(await store.waitingCalls(fresh('other'))).toEqual([]);
    expect(await store.callState(fresh('other'), 'k1')).toBeUndefined();
  });

  it('marks a run with calls to submit; a clear with an older mark keeps it, a new call marks it again', async () => {
    const store = await make();
    const runId = fresh('run');
    expect(await markOf(store, runId)).toBeUndefined();
    await store.wait(runId, 'item-1', call('k1'), 'body-1');
    const first = await markOf(store, runId);
    expect(first).toBeDefined();

    // A call recorded after the poller read the mark: the mark changes, the clear does nothing.
    await store.wait(runId, 'item-2', call('k2'), 'body-2');
    const second = await markOf(store, runId);
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    await store.clearMark(runId, first!);
    expect(await markOf(store, runId)).toBe(second);
    await store.clearMark(runId, second!);
    expect(await markOf(store, runId)).toBeUndefined();

    // Another item waiting for a recorded call adds no call and marks nothing.
    await store.wait(runId, 'item-3', call('k2'), 'body-3');
    expect(await markOf(store, runId)).toBeUndefined();
  });

  it('moves only waiting calls into a batch, which stays open until closed', async () => {
    const store = await make();
    const runId = fresh('run');
    await store.wait(runId, 'item-1', call('k1'), 'body-1');
    await store.wait(runId, 'item-2', call('k2'), 'body-2');
    const b1 = open(runId, fresh('batch'));
    await store.addBatch(b1, ['k1', 'k2']);
    expect(await store.callState(runId, 'k1')).toEqual({ state: 'submitted', batchId: b1.batchId });
    expect(await store.waitingCalls(runId)).toEqual([]);
    expect(await store.batchCalls(b1)).toEqual([call('k1'), call('k2')]);
    expect((await store.openBatches()).filter((b) => b.runId === runId)).toEqual([b1]);

    // A call already in a batch stays there: a second batch naming it takes nothing.
    const b2 = open(runId, fresh('batch'));
    await store.addBatch(b2, ['k1']);
    expect(await store.callState(runId, 'k1')).toEqual({ state: 'submitted', batchId: b1.batchId });
    expect(await store.batchCalls(b2)).toEqual([]);
  });

  it("closes a batch: stores each outcome, hands back each waiting item's message once, and is no longer open", async () => {
    const store = await make();
    const runId = fresh('run');
    await store.wait(runId, 'item-1', call('k1'), 'body-1');
    await store.wait(runId, 'item-2', call('k1'), 'body-2');
    await store.wait(runId, 'item-2', call('k2'), 'body-2');
    await store.wait(runId, 'item-3', call('k3'), 'body-3');
    const batch = open(runId, fresh('batch'));
    await store.addBatch(batch, ['k1', 'k2']);

    const bodies = await store.closeBatch(
      batch,
      new Map<string, Completion | 'sync'>([
        ['k1', answer('TP')],
        ['k2', 'sync'],
      ]),
    );
    expect(bodies.sort()).toEqual(['body-1', 'body-2']);
    expect(await store.callState(runId, 'k1')).toEqual({ state: 'answered', completion: answer('TP') });
    expect(await store.callState(runId, 'k2')).toEqual({ state: 'sync' });
    expect(await store.callState(runId, 'k3')).toEqual({ state: 'waiting' });
    expect((await store.openBatches()).filter((b) => b.runId === runId)).toEqual([]);

    // An outcome for a call never recorded (nobody waits for it) records nothing.
    const stray = open(runId, fresh('batch'));
    await store.addBatch(stray, []);
    expect(await store.closeBatch(stray, new Map([['never-recorded', answer('FP1')]]))).toEqual([]);
    expect(await store.callState(runId, 'never-recorded')).toBeUndefined();
    expect(await store.waitingCalls(runId)).toEqual([call('k3')]);

    // An item that waits after the answer came learns it at once (and is scored now).
    expect(await store.wait(runId, 'item-4', call('k1'), 'body-4')).toEqual({
      state: 'answered',
      completion: answer('TP'),
    });
  });
});
