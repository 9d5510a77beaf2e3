import { randomUUID } from 'node:crypto';
import type { Completion } from '../../model/provider.js';
import type { BatchCallState, BatchStore, OpenBatch, WaitingCall } from '../../ports/ports.js';

/** A recorded call: what it asks, and where it stands. */
interface StoredCall {
  call: WaitingCall;
  state: BatchCallState;
}

/**
 * The batch lane's state in memory, for workers and a poller that share one process. The local
 * shell needs none: its batch lane runs in rounds inside the run and keeps only the batches it
 * submitted (a {@link BatchLedger}, `batches.jsonl`). This store holds the same contract as the
 * DynamoDB one (the lane on AWS), so the lane's worker and poller can run without a table, and
 * lists come back in the same order (by run, then by call key or batch id).
 */
export class MemoryBatchStore implements BatchStore {
  /** Calls by run, then by key. */
  private readonly calls = new Map<string, Map<string, StoredCall>>();
  /** Items waiting, by run, then by call key: item id → its queue message. */
  private readonly waits = new Map<string, Map<string, Map<string, string>>>();
  /** Runs with calls recorded since their mark was last cleared: run → mark. */
  private readonly marks = new Map<string, string>();
  /** Open batches by run and batch id. */
  private readonly open = new Map<string, OpenBatch>();

  async wait(runId: string, itemId: string, call: WaitingCall, body: string): Promise<BatchCallState> {
    const waits = inner(inner(this.waits, runId), call.key);
    waits.set(itemId, body);
    const calls = inner(this.calls, runId);
    if (!calls.has(call.key)) {
      calls.set(call.key, { call: copy(call), state: { state: 'waiting' } });
      this.marks.set(runId, randomUUID());
    }
    return copy(calls.get(call.key)!.state);
  }

  async callState(runId: string, key: string): Promise<BatchCallState | undefined> {
    const stored = this.calls.get(runId)?.get(key);
    return stored ? copy(stored.state) : undefined;
  }

  async runsWithWaitingCalls(): Promise<{ runId: string; mark: string }[]> {
    return [...this.marks].sort(([a], [b]) => compare(a, b)).map(([runId, mark]) => ({ runId, mark }));
  }

  async clearMark(runId: string, mark: string): Promise<void> {
    // Marked again by a call recorded meanwhile: the next pass submits it.
    if (this.marks.get(runId) === mark) this.marks.delete(runId);
  }

  async waitingCalls(runId: string): Promise<WaitingCall[]> {
    return this.callsOf(runId, (stored) => stored.state.state === 'waiting');
  }

  async addBatch(batch: OpenBatch, keys: readonly string[]): Promise<void> {
    this.open.set(openKey(batch), { ...batch });
    const calls = this.calls.get(batch.runId);
    for (const key of keys) {
      const stored = calls?.get(key);
      if (stored?.state.state === 'waiting') stored.state = { state: 'submitted', batchId: batch.batchId };
    }
  }

  async openBatches(): Promise<OpenBatch[]> {
    return [...this.open].sort(([a], [b]) => compare(a, b)).map(([, batch]) => ({ ...batch }));
  }

  async batchCalls(batch: OpenBatch): Promise<WaitingCall[]> {
    return this.callsOf(
      batch.runId,
      (stored) => stored.state.state === 'submitted' && stored.state.batchId === batch.batchId,
    );
  }

  async closeBatch(batch: OpenBatch, outcomes: ReadonlyMap<string, Completion | 'sync'>): Promise<string[]> {
    const calls = this.calls.get(batch.runId) ?? new Map<string, StoredCall>();
    for (const [key, outcome] of outcomes) {
      const stored = calls.get(key);
      // A batch holds recorded calls only: an outcome for any other key has nobody to wake.
      if (!stored) continue;
      stored.state =
        outcome === 'sync' ? { state: 'sync' } : { state: 'answered', completion: copy(outcome) };
    }
    const bodies = new Set<string>();
    const waits = this.waits.get(batch.runId);
    for (const key of outcomes.keys()) {
      for (const body of waits?.get(key)?.values() ?? []) bodies.add(body);
      waits?.delete(key);
    }
    this.open.delete(openKey(batch));
    return [...bodies];
  }

  private callsOf(runId: string, keep: (stored: StoredCall) => boolean): WaitingCall[] {
    return [...(this.calls.get(runId) ?? [])]
      .filter(([, stored]) => keep(stored))
      .sort(([a], [b]) => compare(a, b))
      .map(([, stored]) => copy(stored.call));
  }
}

function inner<K, V>(outer: Map<string, Map<K, V>>, key: string): Map<K, V> {
  let map = outer.get(key);
  if (!map) {
    map = new Map();
    outer.set(key, map);
  }
  return map;
}

const openKey = (batch: OpenBatch) => `${batch.runId}#${batch.batchId}`;

/** Code-unit order, as the table sorts its keys. */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What the store hands out is a copy, as a read from a table is: callers cannot change what it holds. */
const copy = <T>(value: T): T => structuredClone(value);
