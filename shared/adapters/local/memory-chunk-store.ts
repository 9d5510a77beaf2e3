import type { ChunkClaim, ChunkStore, IdClaims } from '../../ports/ports.js';

interface ChunkState {
  leaseUntil?: number;
  handed: number;
  done: boolean;
  claimed?: { ended: boolean; task: string };
  duplicates: Map<number, string>;
}

/**
 * The chunk store in memory. The local shell reads a dataset in one pass and keeps its ids in
 * the run's own index, so it needs none; this one serves the chunked ingest where no table is
 * at hand (its unit tests, the capacity model's checks), under the same contract as the
 * DynamoDB store.
 */
export class MemoryChunkStore implements ChunkStore {
  private readonly chunks = new Map<string, ChunkState>();
  private readonly ids = new Map<string, Map<string, { row: number; chunk: number }>>();

  constructor(private readonly now: () => number = Date.now) {}

  private state(runId: string, chunk: number): ChunkState {
    const key = `${runId}#${chunk}`;
    let state = this.chunks.get(key);
    if (!state) {
      state = { handed: 0, done: false, duplicates: new Map() };
      this.chunks.set(key, state);
    }
    return state;
  }

  async claimChunk(runId: string, chunk: number, leaseMs: number): Promise<ChunkClaim> {
    const state = this.state(runId, chunk);
    if (state.done) return { claimed: false, why: 'done' };
    const now = this.now();
    if (state.leaseUntil !== undefined && state.leaseUntil > now) return { claimed: false, why: 'held' };
    state.leaseUntil = now + leaseMs;
    return { claimed: true, handed: state.handed };
  }

  async chunkProgress(runId: string, chunk: number, handed: number, done = false): Promise<void> {
    const state = this.state(runId, chunk);
    state.handed = handed;
    state.done ||= done;
  }

  async releaseChunk(runId: string, chunk: number): Promise<void> {
    this.state(runId, chunk).leaseUntil = undefined;
  }

  async claimIds(
    runId: string,
    chunk: number,
    ids: readonly { id: string; row: number }[],
  ): Promise<IdClaims> {
    let held = this.ids.get(runId);
    if (!held) {
      held = new Map();
      this.ids.set(runId, held);
    }
    const out: IdClaims = { earlier: new Map(), displaced: [] };
    for (const { id, row } of ids) {
      const holder = held.get(id);
      if (holder !== undefined && holder.row <= row) {
        if (holder.row < row) out.earlier.set(id, holder.row);
        continue;
      }
      held.set(id, { row, chunk });
      if (holder) out.displaced.push({ id, ...holder });
    }
    return out;
  }

  async noteDuplicates(
    runId: string,
    chunk: number,
    rows: readonly { id: string; row: number }[],
  ): Promise<void> {
    const { duplicates } = this.state(runId, chunk);
    for (const { id, row } of rows) duplicates.set(row, id);
  }

  async duplicatesIn(runId: string, chunk: number): Promise<{ id: string; row: number }[]> {
    return [...this.state(runId, chunk).duplicates].map(([row, id]) => ({ id, row }));
  }

  async holders(runId: string, ids: readonly string[]): Promise<Map<string, number>> {
    const held = this.ids.get(runId);
    const out = new Map<string, number>();
    for (const id of ids) {
      const holder = held?.get(id);
      if (holder) out.set(id, holder.row);
    }
    return out;
  }

  async idsClaimed(runId: string, chunk: number, mark: { ended: boolean; task: string }): Promise<void> {
    this.state(runId, chunk).claimed = { ...mark };
  }

  async claimedBefore(runId: string, chunk: number): Promise<{ claimed: boolean; ended: boolean }> {
    let claimed = true;
    let ended = false;
    for (let before = 0; before < chunk; before += 1) {
      const mark = this.chunks.get(`${runId}#${before}`)?.claimed;
      if (!mark) claimed = false;
      else ended ||= mark.ended;
    }
    return { claimed, ended };
  }

  async waitingTask(runId: string, chunk: number): Promise<string | undefined> {
    const state = this.chunks.get(`${runId}#${chunk}`);
    return state?.claimed && !state.done ? state.claimed.task : undefined;
  }
}
