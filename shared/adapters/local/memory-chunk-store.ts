import type { ChunkClaim, ChunkStore } from '../../ports/ports.js';

/**
 * The chunk store in memory. The local shell reads a dataset in one pass and keeps its ids in
 * the run's own index, so it needs none; this one serves the chunked ingest where no table is
 * at hand (its unit tests, the capacity model's checks), under the same contract as the
 * DynamoDB store.
 */
export class MemoryChunkStore implements ChunkStore {
  private readonly chunks = new Map<string, { leaseUntil?: number; handed: number; done: boolean }>();
  private readonly ids = new Map<string, Map<string, number>>();

  constructor(private readonly now: () => number = Date.now) {}

  async claimChunk(runId: string, chunk: number, leaseMs: number): Promise<ChunkClaim> {
    const key = `${runId}#${chunk}`;
    const state = this.chunks.get(key) ?? { handed: 0, done: false };
    if (state.done) return { claimed: false, why: 'done' };
    const now = this.now();
    if (state.leaseUntil !== undefined && state.leaseUntil > now) return { claimed: false, why: 'held' };
    this.chunks.set(key, { ...state, leaseUntil: now + leaseMs });
    return { claimed: true, handed: state.handed };
  }

  async chunkProgress(runId: string, chunk: number, handed: number, done = false): Promise<void> {
    const key = `${runId}#${chunk}`;
    const state = this.chunks.get(key) ?? { handed: 0, done: false };
    this.chunks.set(key, { ...state, handed, done: state.done || done });
  }

  async claimIds(runId: string, ids: readonly { id: string; row: number }[]): Promise<Map<string, number>> {
    let held = this.ids.get(runId);
    if (!held) {
      held = new Map();
      this.ids.set(runId, held);
    }
    const earlier = new Map<string, number>();
    for (const { id, row } of ids) {
      const first = held.get(id);
      if (first === undefined) held.set(id, row);
      else if (first !== row) earlier.set(id, first);
    }
    return earlier;
  }
}
