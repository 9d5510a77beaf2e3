import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { IdIndex, IdSet } from '../../lib/id-index.js';
import { decodeResult, decodeRun } from '../../model/codec.js';
import { ConflictError, RunExistsError, RunNotFoundError } from '../../model/errors.js';
import {
  type ItemResult,
  type RunCounters,
  type RunRecord,
  type RunStatus,
  resultCost,
} from '../../model/model.js';
import type { SuiteCheck } from '../../model/suite-base.js';
import type { ActiveRun, BudgetHolder, PartClosing, RecordOutcome, RunStore } from '../../ports/ports.js';
import { JsonLinesWriter, jsonLines } from './jsonl.js';

/** A result a resumed run replaces: the budget stopped it before it was scored. */
/** Dollar sums are floating point: a reservation this close to the budget still fits. */
const BUDGET_EPSILON = 1e-12;

const replaceable = (result: ItemResult | undefined) => result?.failure?.kind === 'budget';

/**
 * What the store keeps of an item's result in memory: its state in the low two bits, and the
 * log line holding it above them (one number per item, not the result).
 */
const SCORED = 0;
const FAILED = 1;
const BUDGET = 2;
const entryOf = (result: ItemResult, line: number) =>
  line * 4 + (replaceable(result) ? BUDGET : result.status === 'scored' ? SCORED : FAILED);
const stateOf = (entry: number) => entry % 4;
const lineOf = (entry: number) => Math.floor(entry / 4);

/**
 * A run in a folder: `run.json` (the record) and `results.jsonl`, an append-only log with one
 * result per line. Reopening the folder replays the log (each line checked by the result
 * codec), which is what makes a killed run resumable; a torn last line (killed mid-write) is
 * dropped, any other bad line is an error with its line number. A later line for the same
 * item replaces an earlier `budget` failure. One process owns a run folder at a time.
 *
 * Memory stays small whatever the run's size: per item, only its state and the line of its
 * result (and the cost of a `budget` failure a resume may replace); `results()` streams the
 * log back from the file, skipping the lines that are no item's current result (kept as line
 * numbers: a replaced `budget` failure, a duplicate in the log). Once the run is claimed for
 * aggregation no result comes until it is given back, so the item index is let go while the
 * report is written (a million items' ids are tens of MB) and rebuilt from the log if needed again.
 */
export class LocalRunStore implements RunStore {
  private run?: RunRecord;
  private counts: RunCounters = { done: 0, failed: 0, spentUsd: 0 };
  /**
   * Item id → its entry (state and log line), held compactly: a run may have a million items.
   * Undefined while the run is claimed for aggregation (see `index`).
   */
  private byItem: IdIndex | undefined;
  /** Log lines that are no item's current result: `results()` skips them. */
  private readonly stale = new Set<number>();
  /** Items with a result: the lines `results()` yields. */
  private items = 0;
  /** The cost of each `budget` failure: taken off the counters when a resume replaces it. */
  private readonly budgetCost = new Map<string, number>();
  /** Lines in the log so far: the next result goes on line `lines + 1`. */
  private lines = 0;
  /**
   * The budget reservations of items in progress in this process, by item id, and their sum:
   * a reservation lives only as long as the process (a run reopened starts with none).
   */
  private readonly holds = new Map<string, number>();
  private held = 0;
  /** The parts ingest has closed, with their rows and invalid rows, and how many parts there are once known. */
  private readonly closed = new Map<number, { rows: number; invalidRows: number }>();
  private parts: number | undefined;
  /** When this process's claim on the run's aggregation lapses (none after the folder is reopened). */
  private leaseUntil: number | undefined;
  /** When the run entered its status, as far as this process knows (it opened the folder then, or set it). */
  private statusSince: number;
  /** What the watchdog saw last. */
  private watched: { progress: number; since: number } | undefined;
  /** Why this process stopped the run (see `stop`). */
  private stopReason: string | undefined;
  /** The first read of the folder (every call waits for it), and a read of the log under way. */
  private loading: Promise<void> | undefined;
  private replaying: Promise<IdIndex> | undefined;
  private readonly log: JsonLinesWriter;

  constructor(
    readonly dir: string,
    private readonly options: { checkSuite?: SuiteCheck; now?: () => number } = {},
  ) {
    this.log = new JsonLinesWriter(join(dir, 'results.jsonl'));
    this.statusSince = (options.now ?? Date.now)();
  }

  private get runPath() {
    return join(this.dir, 'run.json');
  }

  private get logPath() {
    return join(this.dir, 'results.jsonl');
  }

  private load(): Promise<void> {
    this.loading ??= (async () => {
      const runText = await readFile(this.runPath, 'utf8').catch(() => undefined);
      if (!runText) return;
      this.run = decodeRun(JSON.parse(runText), this.runPath, this.options.checkSuite);
      await this.replay(this.run);
    })();
    return this.loading;
  }

  /** The item index, read again from the log when it was let go for an aggregation. */
  private async index(run: RunRecord): Promise<IdIndex> {
    return this.byItem ?? (await this.replay(run));
  }

  /** Reads the log from the start (once, however many ask at a time): the counters, the item index, the stale lines. */
  private replay(run: RunRecord): Promise<IdIndex> {
    this.replaying ??= this.readLog(run).finally(() => {
      this.replaying = undefined;
    });
    return this.replaying;
  }

  private async readLog(run: RunRecord): Promise<IdIndex> {
    this.counts = { done: 0, failed: 0, spentUsd: 0, total: run.total };
    const index = new IdIndex();
    this.stale.clear();
    this.budgetCost.clear();
    this.items = 0;
    const tally = { lines: 0 };
    const log = jsonLines(
      this.logPath,
      (value, line) => decodeResult(value, `${this.logPath} line ${line}`),
      tally,
    );
    for await (const { value: result, line } of log)
      if (!this.remember(index, result, line)) this.stale.add(line);
    this.lines = tally.lines;
    this.byItem = index;
    return index;
  }

  /** Counts a result read from (or written to) log line `line`, unless the item already has a final one. */
  private remember(index: IdIndex, result: ItemResult, line: number): boolean {
    const earlier = index.get(result.itemId);
    if (earlier !== undefined && stateOf(earlier) !== BUDGET) return false;
    if (earlier === undefined) this.items += 1;
    else {
      this.counts.failed -= 1;
      this.counts.spentUsd -= this.budgetCost.get(result.itemId) ?? 0;
      this.budgetCost.delete(result.itemId);
      this.stale.add(lineOf(earlier));
    }
    const entry = entryOf(result, line);
    index.set(result.itemId, entry);
    if (stateOf(entry) === BUDGET) this.budgetCost.set(result.itemId, resultCost(result));
    this.count(this.counts, result, 1);
    return true;
  }

  private count(counters: RunCounters, result: ItemResult, sign: 1 | -1): void {
    if (result.status === 'scored') counters.done += sign;
    else counters.failed += sign;
    counters.spentUsd += sign * resultCost(result);
  }

  private async saveRun(): Promise<void> {
    const temp = `${this.runPath}.tmp`;
    await writeFile(temp, `${JSON.stringify(this.run, null, 2)}\n`);
    await rename(temp, this.runPath);
  }

  async createRun(run: RunRecord): Promise<void> {
    await this.load();
    if (this.run) {
      if (this.run.runId !== run.runId)
        throw new ConflictError(`${this.dir} holds run ${this.run.runId}, not ${run.runId}`);
      throw new RunExistsError(run.runId, `run ${run.runId} exists already in ${this.dir}`);
    }
    await mkdir(this.dir, { recursive: true });
    this.run = { ...run };
    this.byItem = new IdIndex();
    this.counts = {
      done: 0,
      failed: 0,
      spentUsd: 0,
      ...(run.total === undefined ? {} : { total: run.total }),
    };
    await this.saveRun();
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    await this.load();
    if (!this.run || this.run.runId !== runId) return undefined;
    return { ...this.run };
  }

  private need(runId: string) {
    if (!this.run || this.run.runId !== runId)
      throw new RunNotFoundError(runId, `run ${runId} not found in ${this.dir}`);
    return this.run;
  }

  async counters(runId: string): Promise<RunCounters | undefined> {
    await this.load();
    if (!this.run || this.run.runId !== runId) return undefined;
    return { ...this.counts };
  }

  async spent(runId: string): Promise<number> {
    await this.load();
    this.need(runId);
    return this.counts.spentUsd;
  }

  async reserve(runId: string, holder: BudgetHolder, usd: number, budgetUsd: number): Promise<boolean> {
    await this.load();
    this.need(runId);
    // Checked and taken in one step of this process: nothing else reserves in between.
    if (this.counts.spentUsd + this.held + usd > budgetUsd + BUDGET_EPSILON) return false;
    this.hold(holder.itemId, usd);
    return true;
  }

  async settleReservation(
    runId: string,
    holder: BudgetHolder,
    reservedUsd: number,
    actualUsd: number,
  ): Promise<void> {
    await this.load();
    this.need(runId);
    this.hold(holder.itemId, actualUsd - reservedUsd);
  }

  async reserved(runId: string): Promise<number> {
    await this.load();
    this.need(runId);
    return this.held;
  }

  private hold(itemId: string, usd: number): void {
    const now = (this.holds.get(itemId) ?? 0) + usd;
    this.held += usd;
    if (now > BUDGET_EPSILON) this.holds.set(itemId, now);
    else {
      // Nothing left held: `held` already lost this hold's last part.
      this.holds.delete(itemId);
      if (this.holds.size === 0) this.held = 0;
    }
  }

  /** Lets go of what the item holds: its spend is now the recorded result's. */
  private release(itemId: string): void {
    this.held -= this.holds.get(itemId) ?? 0;
    this.holds.delete(itemId);
    if (this.holds.size === 0) this.held = 0;
  }

  /**
   * Counts the part's rows; once the last part is known and every part is closed, the run's
   * total and invalid rows are set (in run.json) and an ingesting run is running.
   */
  async closePart(runId: string, part: number, closing: PartClosing): Promise<{ complete: boolean }> {
    await this.load();
    const run = this.need(runId);
    this.closed.set(part, { rows: closing.rows.length, invalidRows: closing.invalidRows });
    if (closing.last) this.parts = part + 1;
    const parts = this.parts;
    if (parts !== undefined && [...Array(parts).keys()].every((p) => this.closed.has(p))) {
      const all = [...this.closed].filter(([p]) => p < parts).map(([, c]) => c);
      run.total = all.reduce((n, c) => n + c.rows, 0);
      run.invalidRows = all.reduce((n, c) => n + c.invalidRows, 0);
      this.counts.total = run.total;
      if (run.status === 'ingesting') run.status = 'running';
      await this.saveRun();
    }
    return { complete: this.complete() };
  }

  /** Every result is in: the total is known (every part closed) and reached. */
  private complete(): boolean {
    const { done, failed, total } = this.counts;
    return total !== undefined && done + failed >= total;
  }

  async recordResult(result: ItemResult): Promise<RecordOutcome> {
    await this.load();
    const index = await this.index(this.need(result.runId));
    // In the same step as the result's cost is counted: the item's spend is never in neither.
    this.release(result.itemId);
    if (!this.remember(index, result, this.lines + 1)) return { recorded: false, complete: this.complete() };
    this.lines += 1;
    const complete = this.complete();
    await this.log.append(result);
    return { recorded: true, complete };
  }

  /** One after the other: a local run's results are lines of one file. */
  async recordResults(results: readonly ItemResult[]): Promise<RecordOutcome[]> {
    const outcomes: RecordOutcome[] = [];
    for (const result of results) outcomes.push(await this.recordResult(result));
    return outcomes;
  }

  async resultIds(runId: string, part?: number): Promise<IdSet> {
    await this.load();
    const index = await this.index(this.need(runId));
    const ids = new IdSet();
    if (part !== undefined) {
      for await (const result of this.results(runId, part))
        if (result.failure?.kind !== 'budget') ids.add(result.itemId);
      return ids;
    }
    for (const [id, entry] of index.entries()) if (stateOf(entry) !== BUDGET) ids.add(id);
    return ids;
  }

  /** Streams each item's current result from the log (of one part, if given), in log order. */
  async *results(runId: string, part?: number): AsyncIterable<ItemResult> {
    await this.load();
    this.need(runId);
    let yielded = 0;
    for await (const { value, line } of jsonLines(this.logPath, (v, n) =>
      decodeResult(v, `${this.logPath} line ${n}`),
    )) {
      if (this.stale.has(line)) continue;
      yielded += 1;
      if (part === undefined || (value.part ?? 0) === part) yield value;
    }
    if (yielded !== this.items)
      throw new Error(
        `${this.logPath}: the log holds ${yielded} of the run's ${this.items} results; was it edited while the run was open?`,
      );
  }

  async claimAggregation(runId: string, leaseMs: number): Promise<boolean> {
    await this.load();
    // No run, no claim: the same answer as any other store's (a claim is a conditional write).
    if (!this.run || this.run.runId !== runId) return false;
    const run = this.run;
    const now = (this.options.now ?? Date.now)();
    // A complete run may still be marked `ingesting` when its last result raced the total; an
    // aggregation of this process holds the run for its lease, one of a process that ended
    // (the folder was opened again) holds it no more.
    const open = run.status === 'running' || run.status === 'ingesting';
    const lapsed = run.status === 'aggregating' && (this.leaseUntil === undefined || this.leaseUntil <= now);
    if ((!open && !lapsed) || !this.complete()) return false;
    if (run.status !== 'aggregating') this.statusSince = now;
    run.status = 'aggregating';
    this.leaseUntil = now + leaseMs;
    await this.saveRun();
    // No result comes while the run is aggregated: the index is read again if one does.
    this.byItem = undefined;
    return true;
  }

  async holdAggregation(runId: string, leaseMs: number): Promise<boolean> {
    await this.load();
    if (this.run?.runId !== runId || this.run.status !== 'aggregating') return false;
    const now = (this.options.now ?? Date.now)();
    this.leaseUntil = now + leaseMs;
    this.statusSince = now;
    return true;
  }

  async partCount(runId: string): Promise<number> {
    await this.load();
    this.need(runId);
    return this.parts ?? Math.max(1, ...[...this.closed.keys()].map((part) => part + 1));
  }

  /** The folder's run while it is not done (its status times are this process's). */
  async activeRuns(): Promise<ActiveRun[]> {
    await this.load();
    const run = this.run;
    if (!run || run.status === 'done') return [];
    const { done, failed } = this.counts;
    return [
      {
        runId: run.runId,
        status: run.status,
        statusSince: this.statusSince,
        ...(run.status === 'aggregating' && this.leaseUntil !== undefined
          ? { leaseUntil: this.leaseUntil }
          : {}),
        complete: this.complete(),
        progress: done + failed + (run.total ?? 0),
        ...(this.watched ? { watched: this.watched } : {}),
      },
    ];
  }

  async noteProgress(runId: string, progress: number, since: number): Promise<void> {
    await this.load();
    this.need(runId);
    this.watched = { progress, since };
  }

  /** Stops the run for this process (the one that owns the folder); a reopened folder runs again. */
  async stop(runId: string, reason: string): Promise<void> {
    await this.load();
    this.need(runId);
    this.stopReason ??= reason;
  }

  async stopped(runId: string): Promise<string | undefined> {
    await this.load();
    this.need(runId);
    return this.stopReason;
  }

  async setStatus(runId: string, status: RunStatus, finishedAt?: string): Promise<void> {
    await this.load();
    const run = this.need(runId);
    if (run.status !== status) this.statusSince = (this.options.now ?? Date.now)();
    run.status = status;
    if (finishedAt) run.finishedAt = finishedAt;
    if (status !== 'aggregating') this.leaseUntil = undefined;
    await this.saveRun();
  }
}
