/**
 * The ports the core drives. Adapters live in `adapters/local` (a folder, an in-process pool,
 * an append-only log, memory) and `adapters/aws` (S3, SQS, DynamoDB). The core imports nothing
 * else. What the use-cases rely on from each port is a contract suite run over every adapter
 * of the port (`test/integration/contracts/<port>.contract.test.ts`).
 */

import type { RateLimit, RateNeed } from '../model/limits.js';
import type { ItemMessage, ItemResult, RunCounters, RunRecord, RunStatus } from '../model/model.js';
import type { Completion, CompletionRequest } from '../model/provider.js';
import type { LeaderboardEntry } from '../model/report.js';
import type { SweepRecord, SweepStatus } from '../model/sweep-record.js';

export interface BlobStore {
  /** Undefined when the object does not exist. */
  get(key: string): Promise<Uint8Array | undefined>;
  put(key: string, body: Uint8Array | string, contentType?: string): Promise<void>;
  /**
   * Writes an object from chunks as they are produced (a report file of a million rows) without
   * holding it whole; readers see the object only once it is complete.
   */
  putStream(key: string, body: AsyncIterable<Uint8Array | string>, contentType?: string): Promise<void>;
  list(prefix: string): Promise<string[]>;
  /**
   * Streams an object's bytes from `start` (default 0) to its end, without holding them, with
   * its whole size and a version that changes whenever it is replaced (S3: its ETag); undefined
   * when it does not exist. Given the `version` an earlier read returned, throws
   * `BlobChangedError` if the object was replaced since: a reader in chunks reads one version.
   * With `end` (exclusive), the body stops there (a store may send more: a reader takes only
   * what it asked for); `size` is still the whole object's.
   */
  read(
    key: string,
    options?: { start?: number; end?: number; version?: string },
  ): Promise<BlobRead | undefined>;
  /**
   * Writes `key` as the pieces one after another: text, bytes, or (a stretch of) an object the
   * store holds (`end` exclusive), without passing the objects' bytes through the caller (S3
   * copies large stretches inside the service). Readers see the object only once it is whole.
   * A piece naming an object that does not exist throws `NotFoundError`, and nothing is written.
   */
  compose(key: string, pieces: readonly BlobPiece[], contentType?: string): Promise<void>;
}

/** A piece of an object {@link BlobStore.compose} writes. */
export type BlobPiece = string | Uint8Array | { key: string; start?: number; end?: number };

/** What {@link BlobStore.read} gives. */
export interface BlobRead {
  /** The whole object's size, bytes. */
  size: number;
  version: string;
  /** The bytes from the start asked for to the end. */
  body: AsyncIterable<Uint8Array>;
}

export interface WorkQueue {
  /** At-least-once delivery of item messages. Large items may travel by reference. */
  sendItems(messages: ItemMessage[]): Promise<void>;
}

/** What recording a result did to the run. */
export interface RecordOutcome {
  /** False when this item already had a result (a redelivery): nothing was counted. */
  recorded: boolean;
  /**
   * True when the run has all its results now: every part of it closed by ingest, and every
   * result of each recorded. The caller then asks for the run's aggregation (several callers
   * may see it; aggregation is claimed). A redelivery reports it too, so that a crash between
   * recording and asking cannot strand a run.
   */
  complete: boolean;
}

/** A read-only set of item ids: what a run store answers for the ids with a final result. */
export interface ItemIdSet extends Iterable<string> {
  has(id: string): boolean;
  readonly size: number;
}

/**
 * What ingest hands over when it has handed on every row of a part of the dataset: every item
 * of it sent, every invalid row of it recorded.
 */
export interface PartClosing {
  /** The row of every result the part will hold (items sent and invalid rows recorded). */
  rows: ArrayLike<number>;
  /** How many of those rows are invalid rows. */
  invalidRows: number;
  /** This part ends the dataset: the run has `part + 1` parts. */
  last?: boolean;
}

/**
 * A run's record and results. A run comes in parts: ingest hands on the dataset a part at a
 * time (the whole dataset in one part when it is read in one go), and closes each part once
 * every row of it is handed on, saying which rows its results will have; the run is complete
 * when the last part is known and every part has all its results. A store may keep each
 * part's results apart (DynamoDB spreads them over many partition keys).
 */
/** Who holds a budget reservation: an item of the run (its row places it, on DynamoDB). */
export interface BudgetHolder {
  itemId: string;
  row: number;
}

export interface RunStore {
  /**
   * Creates the run record. A second create of the same runId changes nothing and throws
   * `RunExistsError` (a `ConflictError`): the first record stays.
   */
  createRun(run: RunRecord): Promise<void>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /**
   * The run's counters (done, failed, the total once every part is closed, money spent);
   * undefined when the run does not exist. On DynamoDB this reads every counter of the run:
   * for status and reports, not for every item (a budget check reads {@link spent}).
   */
  counters(runId: string): Promise<RunCounters | undefined>;
  /**
   * Money the recorded results of the run spent, as a refused call reports it: a store may give
   * a figure up to a second old (DynamoDB caches it per process), and other processes' results
   * once they have flushed them ({@link flushSpend}), never one that forgets a result this
   * process recorded.
   */
  spent(runId: string): Promise<number>;
  /**
   * Reserves `usd` of a run's budget for a model call the item `holder` is about to send:
   * refused (false, nothing reserved) when the budget has no room for it. Concurrent
   * reservations never pass the budget together, whatever process makes them, and a refusal
   * comes only when the budget is (nearly) used. The local store checks what the recorded
   * results spent, plus every reservation held, plus `usd`, refusing none while there is room.
   * DynamoDB leases the budget to each process in blocks and reserves from the process's block
   * (see dynamo-budget-ledger.ts): a process refused may leave unused less than one call, plus
   * what other processes hold unspent of their blocks, and what a process that stopped had
   * leased and not spent (at most one block) is lost to the run, never spent twice.
   */
  reserve(runId: string, holder: BudgetHolder, usd: number, budgetUsd: number): Promise<boolean>;
  /**
   * After the call: the holder's reservation of `reservedUsd` becomes `actualUsd` (what the
   * call cost; 0 when it failed or cost the item nothing), held until the holder's result is
   * recorded. What the call did not spend is room again (DynamoDB: in this process's block); what
   * it cost beyond its reservation is taken even past the budget (a settlement is never
   * refused), so a run spends at most its budget plus what its reservations underestimated.
   * {@link recordResult} releases whatever the item holds. On the local store a reservation
   * never settled (its attempt died) is released then too; on DynamoDB the money stays spent
   * from the block of the process that reserved it.
   */
  settleReservation(
    runId: string,
    holder: BudgetHolder,
    reservedUsd: number,
    actualUsd: number,
  ): Promise<void>;
  /**
   * What the run's items hold reserved now (calls in flight, and spend not yet recorded), as
   * this process knows it: the local store is one process; on DynamoDB, the reservations this
   * process made.
   */
  reserved(runId: string): Promise<number>;
  /**
   * Writes the item's result (in its part, `result.part`) only if it has none yet — or has a
   * `budget` failure, which a resumed run replaces — and counts it in the same atomic step, so
   * a redelivered message never double-counts. Says whether the run is complete now.
   */
  recordResult(result: ItemResult): Promise<RecordOutcome>;
  /**
   * {@link recordResult} for many results at once, each with its own outcome (in order): a store
   * may count them in fewer writes. A run they complete says so on at least one of them.
   */
  recordResults(results: readonly ItemResult[]): Promise<RecordOutcome[]>;
  /**
   * Ingest has handed on every row of `part`: its results will have exactly `closing.rows`.
   * Idempotent (a part closed again with the same rows changes nothing). Says whether the run
   * is complete now (its items may all have finished before this).
   */
  closePart(runId: string, part: number, closing: PartClosing): Promise<{ complete: boolean }>;
  /**
   * Item ids whose result is final (resume skips them; `budget` failures are not final), of
   * one part or of the whole run: a compact set, as a run may have a million items (a `Set`
   * will do for a small store).
   */
  resultIds(runId: string, part?: number): Promise<ItemIdSet>;
  /**
   * The results of one part or of the whole run, streamed. A store that keeps parts apart
   * gives them in report order (by part, then row, then item id); the local log gives them in
   * the order they were recorded.
   */
  results(runId: string, part?: number): AsyncIterable<ItemResult>;
  /**
   * Moves a complete run to `aggregating` if nobody holds it: true for exactly one caller. The
   * claim is a lease of `leaseMs`: a run left `aggregating` by an aggregation that died is
   * claimed again once its lease has run out (a store whose runs live in one process, whose
   * aggregation cannot outlive it, may treat every earlier claim as lapsed once reopened).
   */
  claimAggregation(runId: string, leaseMs: number): Promise<boolean>;
  /**
   * Renews the claim on a run being aggregated (each step of a run aggregated in parts does):
   * its lease runs `leaseMs` from now, and its status counts as new (the watchdog sees a live
   * aggregation, not a stuck run). False when the run is not `aggregating`.
   */
  holdAggregation(runId: string, leaseMs: number): Promise<boolean>;
  setStatus(runId: string, status: RunStatus, finishedAt?: string): Promise<void>;
  /** How many parts the run has: every part's number once the last is known, else those begun (at least 1). */
  partCount(runId: string): Promise<number>;
  /** The runs not `done` yet, as the watchdog looks at them. */
  activeRuns(): Promise<ActiveRun[]>;
  /** Records the progress the watchdog saw on a run, and since when it has been that. */
  noteProgress(runId: string, progress: number, since: number): Promise<void>;
  /**
   * Stops the run: from now on its items that have no result end as failed `stopped` without a
   * model call (the workers look at {@link stopped}), and the run completes and is reported as
   * usual. The first reason stays; stopping again changes nothing. Throws `RunNotFoundError`.
   * A store without it cannot stop runs (the local shell stops with its process).
   */
  stop?(runId: string, reason: string): Promise<void>;
  /**
   * Why the run was stopped, or undefined while it runs on. A store may answer from a cache a
   * few seconds old (DynamoDB: per process), so items already started may still be scored.
   */
  stopped?(runId: string): Promise<string | undefined>;
  /**
   * Money the results recorded on this UTC day spent, across every run of the store (the
   * deploy's daily limit is checked against it); a store may give a figure a few seconds old,
   * never one that forgets what this process recorded. A store without it has no daily limit.
   */
  spentToday?(): Promise<number>;
  /**
   * Adds what this process's results spent and it has not added yet to what {@link spent} and
   * {@link spentToday} read elsewhere (DynamoDB: one write per run and per day, not one per
   * result); a worker calls it after each batch. Until then only this process sees that spend.
   * A store without it has every result's spend in those figures as soon as it is recorded.
   */
  flushSpend?(): Promise<void>;
}

/** A run not finished yet, as the watchdog sees it (times in epoch ms). */
export interface ActiveRun {
  runId: string;
  status: RunStatus;
  /** When the run entered its status. */
  statusSince: number;
  /** While a claim holds its aggregation: when the claim lapses. */
  leaseUntil?: number;
  /** Every part closed, every result in: the run is ready to aggregate. */
  complete: boolean;
  /** What grows while the run moves: results recorded and rows ingest handed on. */
  progress: number;
  /** The progress the watchdog saw last ({@link RunStore.noteProgress}), and since when. */
  watched?: { progress: number; since: number };
}

/** What taking a chunk of a run's ingest gave: the chunk to work on (and how far an earlier holder got), or why not. */
export type ChunkClaim =
  | {
      claimed: true /** Rows an earlier holder of the chunk handed on already (0 the first time). */;
      handed: number;
    }
  /** Another holder's lease is live, or the chunk is done: nothing to do. */
  | { claimed: false; why: 'held' | 'done' };

/**
 * The ingest of a large dataset, a chunk at a time and in order (AWS: one invocation a chunk,
 * each starting the next): who holds each chunk and how far it got, so that a chunk whose
 * holder died is taken up again and redone without handing its rows on twice; and which row
 * first had each item id, so that a duplicate id is found whichever chunks its rows are in.
 */
export interface ChunkStore {
  /**
   * Takes `chunk` of the run's ingest for `leaseMs`: refused while another holder's lease is
   * live, and once the chunk is done; taken again once a lease has lapsed (its holder died).
   */
  claimChunk(runId: string, chunk: number, leaseMs: number): Promise<ChunkClaim>;
  /** Records how many of the chunk's rows are handed on; `done` once all of them are. */
  chunkProgress(runId: string, chunk: number, handed: number, done?: boolean): Promise<void>;
  /** Gives the chunk up without finishing it (its holder waits for others): anyone may take it now. */
  releaseChunk(runId: string, chunk: number): Promise<void>;
  /**
   * Claims each item id for its row and `chunk`, for the run: the lowest row that claims an id
   * holds it, in whatever order the chunks claim (they may claim at the same time). Gives back
   * the ids a lower row holds (with that row, as found: a still lower row may take it later),
   * and the higher rows this claim took an id from (with their chunk): those rows are
   * duplicates, which the chunk that holds them must hear of (see {@link noteDuplicates}). A row
   * claiming again (a chunk done again) keeps its claim. Ids are distinct within a call.
   */
  claimIds(runId: string, chunk: number, ids: readonly { id: string; row: number }[]): Promise<IdClaims>;
  /** Records rows of `chunk` whose id a lower row holds: the chunk reads them before handing on. */
  noteDuplicates(runId: string, chunk: number, rows: readonly { id: string; row: number }[]): Promise<void>;
  /** The rows of `chunk` noted as duplicates, by any chunk (in no order). */
  duplicatesIn(runId: string, chunk: number): Promise<{ id: string; row: number }[]>;
  /** The row that holds each id now (ids nobody claimed are absent). */
  holders(runId: string, ids: readonly string[]): Promise<Map<string, number>>;
  /**
   * Marks `chunk`'s ids claimed (its duplicates noted), with whether the dataset ends in it
   * (the chunks after it hand nothing on) and the task that hands its rows on, for whoever
   * finds it waiting (see {@link waitingTask}).
   */
  idsClaimed(runId: string, chunk: number, mark: { ended: boolean; task: string }): Promise<void>;
  /** Whether every chunk before `chunk` has claimed its ids, and whether one of them ended the dataset. */
  claimedBefore(runId: string, chunk: number): Promise<{ claimed: boolean; ended: boolean }>;
  /** The task of a chunk whose ids are claimed and whose rows are not all handed on yet; else undefined. */
  waitingTask(runId: string, chunk: number): Promise<string | undefined>;
}

/** What claiming a chunk's item ids found (see `ChunkStore.claimIds`). */
export interface IdClaims {
  /** Ids a lower row holds: this chunk's row of each is a duplicate of that row. */
  earlier: Map<string, number>;
  /** Higher rows, of later chunks, this claim took an id from. */
  displaced: { id: string; row: number; chunk: number }[];
}

export interface LlmCache {
  get(key: string): Promise<Completion | undefined>;
  put(key: string, completion: Completion): Promise<void>;
}

/** Earlier runs of a suite: what a report compares with, and what a prompt change re-runs. */
export interface RunHistory {
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** The newest finished (`done`) run of the suite that started before `runId`. */
  previousRun(suiteName: string, runId: string): Promise<RunRecord | undefined>;
  /** The newest run of the suite, whatever its status. */
  latestRun(suiteName: string): Promise<RunRecord | undefined>;
  /** A run's results, of one part or all (as `RunStore.results`). */
  results(runId: string, part?: number): AsyncIterable<ItemResult>;
}

/**
 * Which suites read which prompt files, kept current as suites are ingested (AWS: a prompt
 * upload re-runs the suites that read it). The local shell keeps none: `assay run --changed`
 * compares each suite's prompt files with its latest run folder's snapshot; the memory index
 * serves the ingest use-case without a table.
 */
export interface PromptIndex {
  /** Replaces the set of prompt paths (under prompts/) that `suiteName` reads. */
  setSuitePrompts(suiteName: string, paths: readonly string[]): Promise<void>;
  /** Names of the suites that read `path`. */
  suitesUsing(path: string): Promise<string[]>;
}

/**
 * Called by the worker use-case when done + failed reaches total (and by ingest when the run
 * was complete first). A request may arrive more than once: aggregation is claimed
 * (`RunStore.claimAggregation`, `SweepStore.claimSweep`), so a second does nothing. AWS: a
 * message on the aggregate queue; locally: a request the runner takes when its queue drains.
 */
export interface AggregateTrigger {
  trigger(runId: string): Promise<void>;
  /** Asks for a sweep's aggregation (ingest, when every variant run was already done). */
  triggerSweep(sweepId: string): Promise<void>;
}

/**
 * Asks for a step of a run aggregated a part at a time (each step its own invocation on AWS):
 * the aggregate queue's, beside {@link AggregateTrigger}. A step may arrive more than once: each
 * is held with a lease and marked done (`ChunkStore`), so a second does nothing.
 */
export interface StepTrigger {
  triggerStep(step: AggregationStep): Promise<void>;
}

/**
 * A step of a run aggregated a part at a time: each part's tally, the reduction of the tallies
 * into the report, each part's item files, and the files of the run composed of the parts'.
 */
export type AggregationStep = (
  | { runId: string; step: 'tally'; part: number }
  | { runId: string; step: 'reduce' }
  | { runId: string; step: 'files'; part: number }
  | { runId: string; step: 'assemble' }
) & {
  /**
   * Sent by the run's claim, or by a step so sent: found done, it asks for the steps after it
   * again, so that a run whose steps stopped (one lost to the dead-letter queue) goes on when
   * it is claimed again.
   */
  resume?: true;
};

/** Sweeps: which runs make each, and who aggregates it (once). */
export interface SweepStore {
  /**
   * Stores the record. A second create of the same sweepId changes nothing and throws
   * `SweepExistsError` (a `ConflictError`): the first record stays.
   */
  createSweep(sweep: SweepRecord): Promise<void>;
  getSweep(sweepId: string): Promise<SweepRecord | undefined>;
  /** The sweeps a run is a variant of (a run may serve several: the same variant in an edited sweep). */
  sweepsOf(runId: string): Promise<string[]>;
  /** Moves the sweep from `running` to `aggregating`; true for exactly one caller. */
  claimSweep(sweepId: string): Promise<boolean>;
  setSweepStatus(sweepId: string, status: SweepStatus, finishedAt?: string): Promise<void>;
}

/** The finished runs, a line each, for `assay leaderboard`. */
export interface Leaderboard {
  /** Adds or replaces the run's entry. */
  record(entry: LeaderboardEntry): Promise<void>;
  /** Every entry, in no particular order. */
  entries(): Promise<LeaderboardEntry[]>;
}

/**
 * A stretch of one shard's refill that a lease hands to one container: units (requests or
 * tokens) arrive at `perMs` from `from` until `to` (epoch ms), and refill left unused beyond
 * `burst` units is lost, as in any bucket. No two leases of a shard overlap.
 */
export interface LeaseSpan {
  from: number;
  to: number;
  perMs: number;
  burst: number;
}

/** What one lease hands out: a span per limited axis, from one shard. */
export interface Lease {
  shard: number;
  /**
   * When the shard handed it out (epoch ms, on the shard state's clock): the holder keeps the
   * refill that arrived while the lease was on its way (see `Holdings.add`).
   */
  at?: number;
  requests?: LeaseSpan;
  tokens?: LeaseSpan;
}

/** What a container asks a shard for. */
export interface LeaseAsk {
  shard: number;
  /** Requests and tokens the stretch must cover (each limited axis). */
  want: RateNeed;
  /** How long this container has been turned away before this ask (ms; 0 if it was not). */
  waitedMs: number;
}

/**
 * A lease; or how long (ms) until the shard has room for one (then nothing was taken), and how
 * long the containers that leased from it lately had been turned away first (a running
 * average): a crowd spreads its next asks over that, not over the shard's own wait alone.
 */
export type LeaseAnswer = { lease: Lease } | { waitMs: number; crowdMs: number };

/**
 * Token buckets of provider+model rate limits (`lib/providers/rate-limit/`): in memory for one
 * process, in DynamoDB for a fleet of workers that must share one budget.
 */
export interface RateLimitStore {
  /**
   * One process's way in: takes `need` from the bucket `key` (sized by `limit`) when it has
   * enough now and returns 0; otherwise takes nothing and returns the milliseconds until it will
   * have.
   */
  take(key: string, limit: RateLimit, need: RateNeed): Promise<number>;
  /**
   * A fleet's way in: the bucket `key` is split into `shardsFor(limit)` shards, each holding an
   * equal part of `limit` (held to the stricter of it and a learned limit). Hands out the next
   * stretch of shard `ask.shard`'s refill long enough to cover `ask.want` on every limited axis,
   * moves the shard past it (even into the future) and folds `ask.waitedMs` into its running
   * average; a shard already handed out `LEASE_AHEAD_MS` or more ahead hands out nothing and
   * says how long until it is not (`lease.ts` in `lib/providers/rate-limit/`).
   */
  lease(key: string, limit: RateLimit, ask: LeaseAsk): Promise<LeaseAnswer>;
  /**
   * Records the limit the vendor reported for `key` (its response headers): from then on every
   * take and lease of that bucket is held to the stricter of the limit it is given and this one,
   * whoever takes. With `debt`, the bucket (each shard its part) is lowered to hold no more than
   * its burst less `debt` (calls already sent that the vendor counts), sized by `limit`.
   */
  learn?(key: string, learned: RateLimit, limit: RateLimit, debt?: RateNeed): Promise<void>;
  /** The limit recorded by {@link learn} for `key`, if any (a fresh worker starts from it). */
  learned?(key: string): Promise<RateLimit | undefined>;
}

/** A model call waiting for a vendor batch (the batch lane on AWS). */
export interface WaitingCall {
  /** The call's cache key: identical calls of a run wait once. */
  key: string;
  /** The backend as the suite names it. */
  backend: string;
  customId: string;
  request: CompletionRequest;
}

/** Where a call of the batch lane stands. */
export type BatchCallState =
  | { state: 'waiting' }
  | { state: 'submitted'; batchId: string }
  | { state: 'answered'; completion: Completion }
  /** The batch could not answer it: it is made synchronously. */
  | { state: 'sync' };

/** A batch submitted for a run, as the scheduled poller sees it. */
export interface OpenBatch {
  runId: string;
  batchId: string;
  backend: string;
  submittedAt: string;
}

/**
 * The batch lane across processes (AWS): workers record the calls items wait for, a scheduled
 * poller submits them in batches, collects the answers and wakes the waiting items. The local
 * shell runs the lane in rounds inside one process and needs only a {@link BatchLedger}; the
 * memory store serves a worker and a poller in one process under the same contract.
 * Wake-ups are never lost: a worker records its wait before it reads the call's state, and
 * the poller stores a call's outcome before it reads who waits.
 */
export interface BatchStore {
  /**
   * Records that the item whose queue message is `body` waits for `call` (the first wait also
   * records the call as `waiting`), then returns the call's state as it is now.
   */
  wait(runId: string, itemId: string, call: WaitingCall, body: string): Promise<BatchCallState>;
  /** The call's state (strongly consistent); undefined when no item ever waited for it. */
  callState(runId: string, key: string): Promise<BatchCallState | undefined>;
  /**
   * Runs with calls recorded but not yet in a batch, each with the mark that says so (a new
   * mark each time a call is recorded).
   */
  runsWithWaitingCalls(): Promise<{ runId: string; mark: string }[]>;
  /**
   * Clears the run's mark once its waiting calls were submitted, unless a call recorded since
   * marked the run again (then the next pass sees it). A pass that stops before this leaves the
   * mark, and the next pass submits what is still waiting.
   */
  clearMark(runId: string, mark: string): Promise<void>;
  /** The run's calls recorded but not yet in a batch. */
  waitingCalls(runId: string): Promise<WaitingCall[]>;
  /** Records a submitted batch and moves its calls from `waiting` to `submitted`. */
  addBatch(batch: OpenBatch, keys: readonly string[]): Promise<void>;
  openBatches(): Promise<OpenBatch[]>;
  /** The calls a batch holds. */
  batchCalls(batch: OpenBatch): Promise<WaitingCall[]>;
  /**
   * Stores each call's outcome (its answer, or `sync`), closes the batch, and returns the
   * queue messages of the items that waited for those calls, to send again.
   */
  closeBatch(batch: OpenBatch, outcomes: ReadonlyMap<string, Completion | 'sync'>): Promise<string[]>;
}

/** One submitted batch, as the run's ledger keeps it. */
export interface LedgerBatch {
  batchId: string;
  /** The backend as the suite names it (what `providerFor` builds). */
  backend: string;
  round: number;
  submittedAt: string;
  entries: WaitingCall[];
}

/**
 * Where a run of the in-process batch lane (the local shell) keeps the batches it submitted,
 * written before the run waits on them, so a killed run polls the same batches when it resumes.
 * Local only: on AWS the lane spans a fleet of workers and a scheduled poller, whose shared
 * state (calls, waiting items, open batches) is the {@link BatchStore}; a run there has no
 * process that would read a ledger back.
 */
export interface BatchLedger {
  /** Every batch added, in the order they were added. */
  list(): Promise<LedgerBatch[]>;
  add(batch: LedgerBatch): Promise<void>;
}
