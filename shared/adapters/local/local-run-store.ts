import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeResult, decodeRun } from '../../core/codec.js';
import {
  type ItemResult,
  type RunCounters,
  type RunRecord,
  type RunStatus,
  resultCost,
} from '../../core/model.js';
import type { RecordOutcome, RunStore } from '../../ports.js';
import { JsonLinesWriter, readJsonLines } from './jsonl.js';

/** A result a resumed run replaces: the budget stopped it before it was scored. */
const replaceable = (result: ItemResult | undefined) => result?.failure?.kind === 'budget';

/**
 * A run in a folder: `run.json` (the record) and `results.jsonl`, an append-only log with one
 * result per line. Reopening the folder replays the log (each line checked by the result
 * codec), which is what makes a killed run resumable; a torn last line (killed mid-write) is
 * dropped, any other bad line is an error with its line number. A later line for the same
 * item replaces an earlier `budget` failure. One process owns a run folder at a time.
 */
export class LocalRunStore implements RunStore {
  private run?: RunRecord;
  private counts: RunCounters = { done: 0, failed: 0, spentUsd: 0 };
  private readonly byItem = new Map<string, ItemResult>();
  private loaded = false;
  private readonly log: JsonLinesWriter;

  constructor(readonly dir: string) {
    this.log = new JsonLinesWriter(join(dir, 'results.jsonl'));
  }

  private get runPath() {
    return join(this.dir, 'run.json');
  }

  private get logPath() {
    return join(this.dir, 'results.jsonl');
  }

  private async load(): Promise<void> {
    if (this.loaded) return;
    this.loaded = true;
    const runText = await readFile(this.runPath, 'utf8').catch(() => undefined);
    if (!runText) return;
    this.run = decodeRun(JSON.parse(runText), this.runPath);
    const results = await readJsonLines(this.logPath, (value, line) =>
      decodeResult(value, `${this.logPath} line ${line}`),
    );
    for (const result of results) {
      const earlier = this.byItem.get(result.itemId);
      if (earlier === undefined || replaceable(earlier)) this.byItem.set(result.itemId, result);
    }
    this.counts = this.countersFromLog();
  }

  private countersFromLog(): RunCounters {
    const counters: RunCounters = { done: 0, failed: 0, spentUsd: 0, total: this.run?.total };
    for (const r of this.byItem.values()) this.count(counters, r, 1);
    return counters;
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

  async createRun(run: RunRecord): Promise<boolean> {
    await this.load();
    if (this.run) {
      if (this.run.runId !== run.runId)
        throw new Error(`${this.dir} holds run ${this.run.runId}, not ${run.runId}`);
      return false;
    }
    await mkdir(this.dir, { recursive: true });
    this.run = { ...run };
    this.counts = { done: 0, failed: 0, spentUsd: 0 };
    await this.saveRun();
    return true;
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    await this.load();
    if (!this.run || this.run.runId !== runId) return undefined;
    return { ...this.run };
  }

  private need(runId: string) {
    if (!this.run || this.run.runId !== runId) throw new Error(`run ${runId} not found in ${this.dir}`);
    return this.run;
  }

  async counters(runId: string): Promise<RunCounters | undefined> {
    await this.load();
    if (!this.run || this.run.runId !== runId) return undefined;
    return { ...this.counts };
  }

  async setTotal(runId: string, total: number, invalidRows: number): Promise<RunCounters> {
    await this.load();
    const run = this.need(runId);
    run.total = total;
    run.invalidRows = invalidRows;
    this.counts.total = total;
    if (run.status === 'ingesting') run.status = 'running';
    await this.saveRun();
    return { ...this.counts };
  }

  async recordResult(result: ItemResult): Promise<RecordOutcome> {
    await this.load();
    this.need(result.runId);
    const earlier = this.byItem.get(result.itemId);
    if (earlier !== undefined && !replaceable(earlier))
      return { recorded: false, counters: { ...this.counts } };
    if (earlier) this.count(this.counts, earlier, -1);
    this.byItem.set(result.itemId, result);
    this.count(this.counts, result, 1);
    const counters = { ...this.counts };
    await this.log.append(result);
    return { recorded: true, counters };
  }

  async resultIds(runId: string): Promise<Set<string>> {
    await this.load();
    this.need(runId);
    return new Set([...this.byItem].filter(([, r]) => !replaceable(r)).map(([id]) => id));
  }

  async *results(runId: string): AsyncIterable<ItemResult> {
    await this.load();
    this.need(runId);
    yield* [...this.byItem.values()];
  }

  async claimAggregation(runId: string): Promise<boolean> {
    await this.load();
    const run = this.need(runId);
    const { done, failed, total } = this.counts;
    if (run.status !== 'running' || total === undefined || done + failed < total) return false;
    run.status = 'aggregating';
    await this.saveRun();
    return true;
  }

  async setStatus(runId: string, status: RunStatus, finishedAt?: string): Promise<void> {
    await this.load();
    const run = this.need(runId);
    run.status = status;
    if (finishedAt) run.finishedAt = finishedAt;
    await this.saveRun();
  }
}
