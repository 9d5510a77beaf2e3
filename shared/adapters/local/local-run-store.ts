import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ItemResult, RunCounters, RunRecord, RunStatus } from '../../core/model.js';
import type { RecordOutcome, RunStore } from '../../ports.js';
import { JsonLinesWriter, readJsonLines } from './jsonl.js';

/**
 * A run in a folder: `run.json` (the record and counters) and `results.jsonl`, an append-only
 * log with one result per line. Reopening the folder replays the log, which is what makes a
 * killed run resumable; a torn last line (killed mid-write) is ignored, not fatal.
 * One process owns a run folder at a time.
 */
export class LocalRunStore implements RunStore {
  private run?: RunRecord & { counters: RunCounters };
  private readonly byItem = new Map<string, ItemResult>();
  private loaded = false;
  private readonly log: JsonLinesWriter;

  constructor(readonly dir: string) {
    this.log = new JsonLinesWriter(join(dir, 'results.jsonl'));
  }

  private get runPath() {
    return join(this.dir, 'run.json');
  }

  private async load(): Promise<void> {
    if (this.loaded) return;
    this.loaded = true;
    const runText = await readFile(this.runPath, 'utf8').catch(() => undefined);
    if (!runText) return;
    this.run = JSON.parse(runText);
    // The last line of a killed run may be half written; that item simply runs again.
    for (const result of await readJsonLines<ItemResult>(join(this.dir, 'results.jsonl'))) {
      this.byItem.set(result.itemId, result);
    }
    this.run!.counters = this.countersFromLog();
  }

  private countersFromLog(): RunCounters {
    let done = 0;
    let failed = 0;
    for (const r of this.byItem.values()) {
      if (r.status === 'scored') done += 1;
      else failed += 1;
    }
    return { done, failed, total: this.run?.total };
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
    this.run = { ...run, counters: { done: 0, failed: 0 } };
    await this.saveRun();
    return true;
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    await this.load();
    if (!this.run || this.run.runId !== runId) return undefined;
    const { counters: _counters, ...record } = this.run;
    return record;
  }

  private need(runId: string) {
    if (!this.run || this.run.runId !== runId) throw new Error(`run ${runId} not found in ${this.dir}`);
    return this.run;
  }

  async setTotal(runId: string, total: number, invalidRows: number): Promise<RunCounters> {
    await this.load();
    const run = this.need(runId);
    run.total = total;
    run.invalidRows = invalidRows;
    run.counters.total = total;
    if (run.status === 'ingesting') run.status = 'running';
    await this.saveRun();
    return { ...run.counters };
  }

  async recordResult(result: ItemResult): Promise<RecordOutcome> {
    await this.load();
    const run = this.need(result.runId);
    if (this.byItem.has(result.itemId)) return { recorded: false, counters: { ...run.counters } };
    this.byItem.set(result.itemId, result);
    if (result.status === 'scored') run.counters.done += 1;
    else run.counters.failed += 1;
    const counters = { ...run.counters };
    await this.log.append(result);
    return { recorded: true, counters };
  }

  async resultIds(runId: string): Promise<Set<string>> {
    await this.load();
    this.need(runId);
    return new Set(this.byItem.keys());
  }

  async *results(runId: string): AsyncIterable<ItemResult> {
    await this.load();
    this.need(runId);
    yield* [...this.byItem.values()];
  }

  async claimAggregation(runId: string): Promise<boolean> {
    await this.load();
    const run = this.need(runId);
    const { done, failed, total } = run.counters;
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
