import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeRun } from '../../model/codec.js';
import { SweepExistsError, SweepNotFoundError } from '../../model/errors.js';
import { entryOfReport, entryProblem } from '../../model/leaderboard-entry.js';
import type { RunRecord } from '../../model/model.js';
import type { LeaderboardEntry, Report } from '../../model/report.js';
import type { SuiteCheck } from '../../model/suite-base.js';
import { decodeSweep, type SweepRecord, type SweepStatus } from '../../model/sweep-record.js';
import type { Leaderboard, SweepStore } from '../../ports/ports.js';
import { FolderBlobStore } from './folder-blob-store.js';
import { JsonLinesWriter, readJsonLines } from './jsonl.js';
import { findRunFolders } from './local-run-history.js';

const RECORD = 'sweep-record.json';

/** The last record write under each root in this process: the next one waits for it. */
const writesUnder = new Map<string, Promise<void>>();

/**
 * The sweeps of the local shell: a folder per sweep beside the run folders (`runs/<sweepId>/`),
 * holding its record and its report files. With `oneSweep`, the root is one sweep's own folder
 * (a sweep run with `--out`): its record and report files sit in the root itself, beside its
 * variants' run folders. One process runs a sweep at a time.
 */
export class LocalSweepStore implements SweepStore {
  private readonly folder: FolderBlobStore;
  private readonly oneSweep: boolean;

  constructor(
    readonly root: string,
    options: { oneSweep?: boolean } = {},
  ) {
    this.folder = new FolderBlobStore(root);
    this.oneSweep = options.oneSweep === true;
  }

  /** The folder of a sweep: its record and report files. */
  dirOf(sweepId: string): string {
    return this.oneSweep ? this.root : join(this.root, sweepId);
  }

  async createSweep(sweep: SweepRecord): Promise<void> {
    return this.exclusive(async () => {
      if (await this.getSweep(sweep.sweepId)) throw new SweepExistsError(sweep.sweepId);
      await this.save(sweep);
    });
  }

  async getSweep(sweepId: string): Promise<SweepRecord | undefined> {
    const body = await this.folder.get(this.recordKey(sweepId));
    if (!body) return undefined;
    const sweep = decodeSweep(JSON.parse(new TextDecoder().decode(body)), join(this.dirOf(sweepId), RECORD));
    // One sweep's folder that holds another sweep (the folder used again for a different one).
    return sweep.sweepId === sweepId ? sweep : undefined;
  }

  async sweepsOf(runId: string): Promise<string[]> {
    if (this.oneSweep) {
      const body = await this.folder.get(RECORD);
      if (!body) return [];
      const sweep = decodeSweep(JSON.parse(new TextDecoder().decode(body)), join(this.root, RECORD));
      return sweep.variants.some((v) => v.runId === runId) ? [sweep.sweepId] : [];
    }
    const entries = await readdir(this.root, { withFileTypes: true }).catch(() => []);
    const ids: string[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const sweep = await this.getSweep(entry.name).catch(() => undefined);
      if (sweep?.variants.some((v) => v.runId === runId)) ids.push(sweep.sweepId);
    }
    return ids.sort();
  }

  async claimSweep(sweepId: string): Promise<boolean> {
    return this.exclusive(async () => {
      const sweep = await this.getSweep(sweepId);
      if (sweep?.status !== 'running') return false;
      await this.save({ ...sweep, status: 'aggregating' });
      return true;
    });
  }

  async setSweepStatus(sweepId: string, status: SweepStatus, finishedAt?: string): Promise<void> {
    return this.exclusive(async () => {
      const sweep = await this.getSweep(sweepId);
      if (!sweep) throw new SweepNotFoundError(sweepId);
      await this.save({ ...sweep, status, ...(finishedAt ? { finishedAt } : {}) });
    });
  }

  /**
   * Runs a read-then-write of a record alone among the stores of this root in this process,
   * so a create or a claim happens for exactly one caller, as a conditional write does.
   */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const before = writesUnder.get(this.root) ?? Promise.resolve();
    const mine = before.then(work, work);
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    writesUnder.set(this.root, settled);
    void settled.then(() => {
      if (writesUnder.get(this.root) === settled) writesUnder.delete(this.root);
    });
    return mine;
  }

  private recordKey(sweepId: string): string {
    return this.oneSweep ? RECORD : `${sweepId}/${RECORD}`;
  }

  private async save(sweep: SweepRecord): Promise<void> {
    await this.folder.put(this.recordKey(sweep.sweepId), `${JSON.stringify(sweep, null, 2)}\n`);
  }
}

/** The file under the runs folder where the local leaderboard keeps its entries. */
export const LEADERBOARD_FILE = 'leaderboard.jsonl';

/**
 * The local leaderboard: `leaderboard.jsonl` in the runs folder, a line per recorded entry
 * (a later line for the same run replaces an earlier one), kept by every run that finishes
 * there. Finished run folders at or below the root (see `findRunFolders`) that were never
 * recorded — runs from before the file was kept, folders copied in — are read from their
 * report.json, so the board shows every finished run it can find.
 */
export class LocalLeaderboard implements Leaderboard {
  /** What the last `entries()` found: run folders, and those finished with a report. */
  private found?: { folders: number; finished: number };
  readonly path: string;
  private readonly writer: JsonLinesWriter;

  constructor(
    readonly root: string,
    /** The suite check of each run record read (the registry's, from the composition root). */
    private readonly checkSuite: SuiteCheck,
    private readonly onSkip: (dir: string, reason: string) => void = (dir, reason) =>
      console.warn(`assay: skipping run folder ${dir}: ${reason}`),
  ) {
    this.path = join(root, LEADERBOARD_FILE);
    this.writer = new JsonLinesWriter(this.path, () => mkdir(root, { recursive: true }));
  }

  async record(entry: LeaderboardEntry): Promise<void> {
    await this.writer.append(entry);
  }

  async entries(): Promise<LeaderboardEntry[]> {
    const byRun = new Map<string, LeaderboardEntry>();
    for (const entry of await readJsonLines<LeaderboardEntry>(this.path)) {
      // A line of another shape (edited by hand, or by another program) is left out, named.
      const problem = entryProblem(entry);
      if (problem) this.onSkip(this.path, `an entry of the wrong shape: ${problem}`);
      else byRun.set(entry.runId, entry);
    }
    const folders = await findRunFolders(this.root);
    let finished = 0;
    for (const dir of folders) {
      const path = join(dir, 'run.json');
      let run: RunRecord;
      try {
        run = decodeRun(JSON.parse(await readFile(path, 'utf8')), path, this.checkSuite);
      } catch (error) {
        this.onSkip(dir, (error as Error).message);
        continue;
      }
      if (run.status !== 'done') continue;
      if (byRun.has(run.runId)) {
        finished += 1;
        continue;
      }
      const text = await readFile(join(dir, 'report.json'), 'utf8').catch(() => undefined);
      if (!text) continue;
      // A report.json that is cut short or of another shape leaves its folder out, named.
      let entry: LeaderboardEntry;
      try {
        const report = JSON.parse(text) as Report | null;
        if (report?.status === 'incomplete') continue;
        entry = entryOfReport(report);
      } catch (error) {
        this.onSkip(
          dir,
          error instanceof SyntaxError
            ? `report.json is not JSON: ${error.message}`
            : (error as Error).message,
        );
        continue;
      }
      byRun.set(run.runId, entry);
      finished += 1;
    }
    this.found = { folders: folders.length, finished };
    return [...byRun.values()];
  }

  /** Where the last `entries()` looked and what it found, for the screen. */
  searched(): string {
    const { folders, finished } = this.found ?? { folders: 0, finished: 0 };
    return `leaderboard: looked in ${this.root} and below: ${folders} run folder${folders === 1 ? '' : 's'}, ${finished} finished with a report\n`;
  }
}
