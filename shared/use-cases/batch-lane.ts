/**
 * The batch lane: a run's model calls go through the vendors' batch APIs (half price, answers
 * within a day) instead of one synchronous call each, and end in the same results, the same
 * cache entries and the same metrics as the synchronous lane.
 *
 * How. Families call models from inside `solve`/`score`, possibly several dependent calls per
 * item (a later stage's prompt depends on an earlier answer), so the lane cannot know the
 * requests up front. It runs rounds instead:
 *   1. every pending item is scored by the ordinary `scoreItem`, with each backend wrapped in a
 *      {@link DeferringProvider}: a call whose answer is already known (collected from a batch)
 *      returns it; a call the cache answers never reaches the provider; any other call records
 *      its request and throws {@link DeferredCall}, which `scoreItem` passes up without
 *      recording a result — the item is simply tried again next round;
 *   2. the round's recorded requests (one per cache key: identical calls are asked once; the
 *      parallel calls of a stage, e.g. an ensemble's votes, all in the same round) are
 *      packed per backend and model into batches, the custom id naming run (in the batch's
 *      label), item row and stage; the batch ids go to the run's ledger before anything waits;
 *   3. the batches are polled until done and their answers collected; a request the batch
 *      could not answer (failed, expired, cancelled, a batch that could not be submitted) is
 *      marked for the synchronous lane, where the next round calls it directly;
 *   4. the deferred items run again: each gets one stage further per round, so a family with k
 *      dependent calls finishes in k rounds. Items that finish record their result as usual.
 * Answers reach `scoreItem` through the provider, so `callModel` caches and costs them exactly
 * as a synchronous answer (billed at the batch price, `batchSavedUsd` keeping the discount).
 * A stopped run resumes: the ledger's batches are collected again (polled if still running)
 * before the first round, so nothing is submitted twice.
 */

import { packBatches } from '../lib/providers/batch.js';
import { cacheKey } from '../lib/providers/call.js';
import { type Sleep, withRetry } from '../lib/providers/retry.js';
import { RunNotFoundError } from '../model/errors.js';
import type { ItemMessage, ItemResult, RunRecord } from '../model/model.js';
import type { BatchApi, BatchStatus, Completion, CompletionRequest, LlmProvider } from '../model/provider.js';
import type { BatchLedger, BatchStore, LedgerBatch, RunStore, WaitingCall } from '../ports/ports.js';
import { DeferredCall, type ScoreItemDeps, scoreItem } from './score-item.js';
export type BatchEvent =
  | { type: 'submitted'; batchId: string; backend: string; requests: number; round: number }
  | { type: 'submit_failed'; backend: string; requests: number; error: string }
  | { type: 'polled'; batchId: string; backend: string; status: string; finished?: number; total?: number }
  | { type: 'collected'; batchId: string; backend: string; answered: number; toSync: number }
  | { type: 'round'; round: number; items: number; deferred: number };

export interface BatchLaneOptions {
  /** The ordinary scoring dependencies (with the run record). */
  deps: ScoreItemDeps & { run: RunRecord };
  messages: readonly ItemMessage[];
  /** Runs `work` over items with the shell's concurrency. */
  each(items: readonly ItemMessage[], work: (message: ItemMessage) => Promise<void>): Promise<void>;
  ledger: BatchLedger;
  pollIntervalMs: number;
  sleep?: Sleep;
  onResult?: (result: ItemResult) => void;
  onBatch?: (event: BatchEvent) => void;
  /**
   * Rounds after which whatever still waits goes to the synchronous lane (a guard: no family
   * has this many dependent stages). Default 20.
   */
  maxRounds?: number;
}

/** Waits until every call in `started` has settled, including calls started meanwhile. */
async function settled(started: Promise<unknown>[]): Promise<void> {
  for (let seen = 0; seen < started.length; ) {
    const batch = started.slice(seen);
    seen = started.length;
    await Promise.allSettled(batch);
  }
}

/** A custom id every vendor accepts (`[A-Za-z0-9_-]{1,64}`): item row, stage, and the call's key. */
export function customIdOf(row: number, stage: string, key: string): string {
  return `r${row}-${stage.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 24)}-${key.slice(0, 16)}`;
}

/** The waiting call a deferred call stands for, named for its item. */
export function waitingCallOf(call: DeferredCall, row: number): WaitingCall {
  return {
    key: call.key,
    backend: call.backend,
    customId: customIdOf(row, call.stage, call.key),
    request: call.request,
  };
}

export interface SubmitOptions {
  /** The provider of a backend (with its batch API). */
  providerFor(backend: string): LlmProvider;
  /** Names the batches at the vendor (the run id, the round). */
  label: string;
  maxAttempts: number;
  sleep?: Sleep;
  /** At most this many requests per batch, below the vendor's own limit. */
  maxRequests?: number;
}

/** What submitting a set of calls did: the batches made, and the calls no batch took. */
export interface Submitted {
  batches: { batchId: string; backend: string; calls: WaitingCall[] }[];
  refused: { backend: string; calls: WaitingCall[]; error: string }[];
}

/** Packs calls per backend and model into batches (each within the vendor's size) and submits them. */
export async function submitCalls(calls: readonly WaitingCall[], options: SubmitOptions): Promise<Submitted> {
  const groups = new Map<string, WaitingCall[]>();
  for (const call of calls) {
    const group = `${call.backend}\u0000${call.request.model}`;
    const list = groups.get(group);
    if (list) list.push(call);
    else groups.set(group, [call]);
  }
  const out: Submitted = { batches: [], refused: [] };
  for (const list of groups.values()) {
    const backend = list[0]!.backend;
    const api = options.providerFor(backend).batch!;
    for (const chunk of packBatches(list, api, options.maxRequests)) {
      try {
        const batchId = await withRetry(() => api.submit(chunk, options.label), {
          maxAttempts: options.maxAttempts,
          sleep: options.sleep,
        });
        out.batches.push({ batchId, backend, calls: chunk });
      } catch (error) {
        out.refused.push({
          backend,
          calls: chunk,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }
  return out;
}

/**
 * Asks the vendor about a batch once. While it runs: its status only. Once done: each call's
 * outcome by key — its answer (the batch's wait as its latency), or `sync` when the batch did
 * not answer it (failed, expired, cancelled).
 */
export async function pollBatch(
  api: BatchApi,
  batch: { batchId: string; submittedAt: string },
  calls: readonly WaitingCall[],
  retry: { maxAttempts: number; sleep?: Sleep },
): Promise<{ status: BatchStatus; outcomes?: Map<string, Completion | 'sync'> }> {
  const status = await withRetry(() => api.status(batch.batchId), retry);
  if (!status.done) return { status };
  const results = await withRetry(() => api.results(batch.batchId, calls), retry);
  const waited = Math.max(0, Date.now() - Date.parse(batch.submittedAt));
  const byId = new Map(results.map((o) => [o.customId, o]));
  const outcomes = new Map<string, Completion | 'sync'>();
  for (const call of calls) {
    const outcome = byId.get(call.customId);
    outcomes.set(call.key, outcome?.ok ? { ...outcome.completion, latencyMs: waited } : 'sync');
  }
  return { status, outcomes };
}

/** What the lane knows between rounds. */
interface LaneState {
  /**
   * Answers collected from batches, by cache key. Kept for the whole lane, not one round: an
   * item re-run from its first stage must find every earlier answer again even when the LLM
   * cache does not hold it (a suite with `run.cache: false`, an answer that was cut short).
   */
  answers: Map<string, Completion>;
  /** Calls the batches could not answer: made synchronously from now on. */
  sync: Set<string>;
  /** Past `maxRounds`: every call is synchronous. */
  syncAll: boolean;
}

/**
 * A backend as the batch lane sees it: known answers are returned, calls the batch API cannot
 * take (no batch API, a simulator, a failed batch request) are made synchronously, the rest are
 * deferred to the next batch.
 */
class DeferringProvider implements LlmProvider {
  readonly id: string;
  readonly simulated: boolean;
  readonly endpoint?: string;

  constructor(
    private readonly inner: LlmProvider,
    private readonly backend: string,
    private readonly lane: LaneState,
    /**
     * Hears every deferred call, also those of parallel calls (`Promise.all` over sub-judges)
     * whose rejection the item never surfaces: they all go into this round's batches.
     */
    private readonly onDefer: (call: DeferredCall) => void,
  ) {
    this.id = inner.id;
    this.simulated = inner.simulated;
    this.endpoint = inner.endpoint;
  }

  async complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const key = cacheKey(this.inner, request);
    const answer = this.lane.answers.get(key);
    if (answer) return answer;
    const batchable = this.inner.batch?.accepts(request) && !this.lane.sync.has(key) && !this.lane.syncAll;
    if (!batchable) return this.inner.complete(request, signal);
    const deferred = new DeferredCall(key, request, this.backend);
    this.onDefer(deferred);
    throw deferred;
  }
}

/** Scores `messages` through vendor batches, round by round, until every item has its result. */
export async function runBatchLane(options: BatchLaneOptions): Promise<void> {
  const { deps, ledger } = options;
  const run = deps.run;
  const maxRounds = options.maxRounds ?? 20;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const retry = { maxAttempts: deps.maxAttempts ?? run.suite.run.maxAttempts, sleep };
  const lane: LaneState = { answers: new Map(), sync: new Set(), syncAll: false };
  /** Scoring deps for one item of a round: its calls are tracked, its deferred calls heard with its row. */
  const depsFor = (
    row: number,
    heard: { call: DeferredCall; row: number }[],
    started: Promise<unknown>[],
  ): ScoreItemDeps => ({
    ...deps,
    onCallStarted: (pending) => started.push(pending),
    providerFor: (backend, r) =>
      new DeferringProvider(deps.providerFor(backend, r), backend, lane, (call) => heard.push({ call, row })),
  });

  // A resumed run: collect what its earlier batches answered (polling those still running).
  const earlier = await ledger.list();
  let round = earlier.reduce((max, b) => Math.max(max, b.round), 0);
  if (earlier.length > 0) await collect(earlier);

  let pending = options.messages;
  while (pending.length > 0) {
    round += 1;
    lane.syncAll = round > maxRounds;
    const deferred = new Set<ItemMessage>();
    const heard: { call: DeferredCall; row: number }[] = [];
    await options.each(pending, async (message) => {
      const started: Promise<unknown>[] = [];
      try {
        const { result } = await scoreItem(depsFor(message.item.row, heard, started), message);
        options.onResult?.(result);
      } catch (error) {
        if (!(error instanceof DeferredCall)) throw error;
        deferred.add(message);
        // The item's other calls of this stage (parallel votes) are heard once they settle.
        await settled(started);
      }
    });
    const calls = new Map<string, WaitingCall>();
    for (const { call, row } of heard)
      if (!calls.has(call.key)) calls.set(call.key, waitingCallOf(call, row));
    options.onBatch?.({ type: 'round', round, items: pending.length, deferred: deferred.size });
    if (deferred.size === 0) break;
    await collect(await submit([...calls.values()], round));
    // Items keep their order: each round is the previous one's deferred items.
    pending = options.messages.filter((m) => deferred.has(m));
  }

  /** Submits a round's calls and records each batch in the ledger; calls no batch took go synchronous. */
  async function submit(calls: WaitingCall[], n: number): Promise<LedgerBatch[]> {
    const { batches, refused } = await submitCalls(calls, {
      providerFor: (backend) => deps.providerFor(backend, run),
      label: `assay ${run.runId} round ${n}`,
      maxAttempts: retry.maxAttempts,
      sleep,
    });
    for (const { backend, calls: lost, error } of refused) {
      // No batch, no loss: these calls are made synchronously next round.
      for (const call of lost) lane.sync.add(call.key);
      options.onBatch?.({ type: 'submit_failed', backend, requests: lost.length, error });
    }
    const submitted: LedgerBatch[] = [];
    for (const { batchId, backend, calls: entries } of batches) {
      const batch = { batchId, backend, round: n, submittedAt: new Date().toISOString(), entries };
      await ledger.add(batch);
      submitted.push(batch);
      options.onBatch?.({ type: 'submitted', batchId, backend, requests: entries.length, round: n });
    }
    return submitted;
  }

  /** Polls the batches until each is done, then takes its answers (or sends its calls to the sync lane). */
  async function collect(batches: LedgerBatch[]): Promise<void> {
    let open = batches;
    while (open.length > 0) {
      const still: LedgerBatch[] = [];
      for (const batch of open) {
        const api = deps.providerFor(batch.backend, run).batch!;
        const { status, outcomes } = await pollBatch(api, batch, batch.entries, retry);
        options.onBatch?.({ type: 'polled', batchId: batch.batchId, backend: batch.backend, ...status });
        if (!outcomes) {
          still.push(batch);
          continue;
        }
        let answered = 0;
        for (const [key, outcome] of outcomes) {
          if (outcome === 'sync') lane.sync.add(key);
          else {
            lane.answers.set(key, outcome);
            answered += 1;
          }
        }
        options.onBatch?.({
          type: 'collected',
          batchId: batch.batchId,
          backend: batch.backend,
          answered,
          toSync: outcomes.size - answered,
        });
      }
      open = still;
      if (open.length > 0) await sleep(options.pollIntervalMs);
    }
  }
}

/**
 * A backend as a worker of the batch lane on AWS sees it: the answer a batch gave is returned;
 * a call the batches could not answer (or cannot take) is made synchronously; any other call
 * throws {@link DeferredCall}, and {@link scoreOrWait} records the wait.
 */
class WaitingProvider implements LlmProvider {
  readonly id: string;
  readonly simulated: boolean;
  readonly endpoint?: string;

  constructor(
    private readonly inner: LlmProvider,
    private readonly backend: string,
    private readonly store: BatchStore,
    private readonly runId: string,
    /** Hears every deferred call, also parallel ones the item does not surface (see DeferringProvider). */
    private readonly onDefer: (call: DeferredCall) => void,
  ) {
    this.id = inner.id;
    this.simulated = inner.simulated;
    this.endpoint = inner.endpoint;
  }

  async complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    if (!this.inner.batch?.accepts(request)) return this.inner.complete(request, signal);
    const key = cacheKey(this.inner, request);
    const state = await this.store.callState(this.runId, key);
    if (state?.state === 'answered') return state.completion;
    if (state?.state === 'sync') return this.inner.complete(request, signal);
    const deferred = new DeferredCall(key, request, this.backend);
    this.onDefer(deferred);
    throw deferred;
  }
}

/**
 * Scores an item in the batch lane (the AWS worker): as `scoreItem`, except that calls whose
 * answers must come from a batch record that the item waits for them and return `waiting` (the
 * message is done with; the poller sends it again when the answers are in). `body` is the
 * item's queue message as it will be sent again.
 */
export async function scoreOrWait(
  deps: ScoreItemDeps,
  store: BatchStore,
  message: ItemMessage,
  body: string,
): Promise<Awaited<ReturnType<typeof scoreItem>> | { waiting: DeferredCall }> {
  for (;;) {
    const heard: DeferredCall[] = [];
    const started: Promise<unknown>[] = [];
    const waitDeps: ScoreItemDeps = {
      ...deps,
      onCallStarted: (pending) => started.push(pending),
      providerFor: (backend, run) =>
        new WaitingProvider(deps.providerFor(backend, run), backend, store, run.runId, (call) =>
          heard.push(call),
        ),
    };
    try {
      return await scoreItem(waitDeps, message);
    } catch (error) {
      if (!(error instanceof DeferredCall)) throw error;
      // The item's other calls of this stage (parallel votes) wait too, once they settle.
      await settled(started);
      let ready = false;
      const keys = new Set<string>();
      for (const call of heard) {
        if (keys.has(call.key)) continue;
        keys.add(call.key);
        const state = await store.wait(
          message.runId,
          message.item.id,
          waitingCallOf(call, message.item.row),
          body,
        );
        // Answered (or sent to the sync lane) between the look and the wait: score again now.
        if (state.state === 'answered' || state.state === 'sync') ready = true;
      }
      if (!ready) return { waiting: error };
    }
  }
}

export interface AdvanceBatchesDeps {
  store: BatchStore;
  runStore: RunStore;
  /** The provider of a run's backend. */
  providerFor(backend: string, run: RunRecord): LlmProvider;
  /** Sends item queue messages again (the items whose calls were answered). */
  resend(bodies: readonly string[]): Promise<void>;
  /** Batches hold at most this many requests (the store keeps each batch's calls as items). */
  maxRequests?: number;
  log?: (message: string, fields: Record<string, unknown>) => void;
}

/**
 * One pass of the scheduled poller (AWS): submits the calls workers recorded since the last
 * pass, polls every open batch once, and for each finished one stores the answers (or marks
 * the calls for the synchronous lane) and sends the waiting items again.
 */
export async function advanceBatches(
  deps: AdvanceBatchesDeps,
): Promise<{ submitted: number; refused: number; closed: number; woken: number }> {
  const log = deps.log ?? (() => {});
  const tally = { submitted: 0, refused: 0, closed: 0, woken: 0 };
  const runs = new Map<string, RunRecord>();
  const runOf = async (runId: string) => {
    let run = runs.get(runId);
    if (!run) {
      run = await deps.runStore.getRun(runId);
      if (!run) throw new RunNotFoundError(runId, `batch lane: run ${runId} not found`);
      runs.set(runId, run);
    }
    return run;
  };

  for (const { runId, mark } of await deps.store.runsWithWaitingCalls()) {
    const run = await runOf(runId);
    const calls = await deps.store.waitingCalls(runId);
    const { batches, refused } = await submitCalls(calls, {
      providerFor: (backend) => deps.providerFor(backend, run),
      label: `assay ${runId}`,
      maxAttempts: run.suite.run.maxAttempts,
      maxRequests: deps.maxRequests,
    });
    for (const batch of batches) {
      const open = {
        runId,
        batchId: batch.batchId,
        backend: batch.backend,
        submittedAt: new Date().toISOString(),
      };
      await deps.store.addBatch(
        open,
        batch.calls.map((c) => c.key),
      );
      tally.submitted += 1;
      log('batch submitted', { ...open, requests: batch.calls.length });
    }
    for (const { backend, calls: lost, error } of refused) {
      // Closed at once with every call synchronous: the waiting items are sent again and call directly.
      const open = {
        runId,
        batchId: `refused-${Date.now()}`,
        backend,
        submittedAt: new Date().toISOString(),
      };
      await deps.store.addBatch(
        open,
        lost.map((c) => c.key),
      );
      const bodies = await deps.store.closeBatch(open, new Map(lost.map((c) => [c.key, 'sync' as const])));
      await deps.resend(bodies);
      tally.refused += lost.length;
      tally.woken += bodies.length;
      log('batch not accepted: its calls go synchronous', { runId, backend, requests: lost.length, error });
    }
    await deps.store.clearMark(runId, mark);
  }

  for (const open of await deps.store.openBatches()) {
    const run = await runOf(open.runId);
    const api = deps.providerFor(open.backend, run).batch!;
    const calls = await deps.store.batchCalls(open);
    const { status, outcomes } = await pollBatch(api, open, calls, {
      maxAttempts: run.suite.run.maxAttempts,
    });
    if (!outcomes) {
      log('batch running', { ...open, ...status });
      continue;
    }
    const bodies = await deps.store.closeBatch(open, outcomes);
    await deps.resend(bodies);
    tally.closed += 1;
    tally.woken += bodies.length;
    const toSync = [...outcomes.values()].filter((o) => o === 'sync').length;
    log('batch collected', { ...open, answered: outcomes.size - toSync, toSync, itemsWoken: bodies.length });
  }
  return tally;
}
