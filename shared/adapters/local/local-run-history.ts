import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeRun } from '../../model/codec.js';
import { RunNotFoundError } from '../../model/errors.js';
import type { ItemResult, RunRecord } from '../../model/model.js';
import type { SuiteCheck } from '../../model/suite-base.js';
import type { RunHistory } from '../../ports/ports.js';
import { LocalRunStore } from './local-run-store.js';

/**
 * The runs of the local shell: one folder per run (`run.json`, `results.jsonl`) side by side
 * under a root (`runs/` by default). Scanned on each question; a root holds hundreds of runs,
 * not millions. A folder whose run.json cannot be read is left out, and `onSkip` says why.
 */
export class LocalRunHistory implements RunHistory {
  constructor(
    readonly root: string,
    /** The suite check of each run record read (the registry's, from the composition root). */
    private readonly checkSuite: SuiteCheck,
    private readonly onSkip: (dir: string, reason: string) => void = (dir, reason) =>
      console.warn(`assay: skipping run folder ${dir}: ${reason}`),
  ) {}

  /** Every run under the root, newest first (by start time, then run id). */
  async runs(): Promise<{ run: RunRecord; dir: string }[]> {
    const entries = await readdir(this.root, { withFileTypes: true }).catch(() => []);
    const runs: { run: RunRecord; dir: string }[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const dir = join(this.root, entry.name);
      const path = join(dir, 'run.json');
      const text = await readFile(path, 'utf8').catch(() => undefined);
      if (!text) continue;
      try {
        runs.push({ run: decodeRun(JSON.parse(text), path, this.checkSuite), dir });
      } catch (error) {
        this.onSkip(dir, (error as Error).message);
      }
    }
    return runs.sort(
      (a, b) => b.run.startedAt.localeCompare(a.run.startedAt) || b.run.runId.localeCompare(a.run.runId),
    );
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    return (await this.runs()).find(({ run }) => run.runId === runId)?.run;
  }

  async previousRun(suiteName: string, runId: string): Promise<RunRecord | undefined> {
    const runs = await this.runs();
    const current = runs.find((r) => r.run.runId === runId)?.run;
    // "Before" a run it does not know means nothing: the same refusal as any other history's.
    if (!current) throw new RunNotFoundError(runId, `run ${runId} not found in ${this.root}`);
    return runs.find(
      ({ run }) =>
        run.suiteName === suiteName &&
        run.runId !== runId &&
        run.status === 'done' &&
        run.startedAt <= current.startedAt,
    )?.run;
  }

  async latestRun(suiteName: string): Promise<RunRecord | undefined> {
    return (await this.runs()).find(({ run }) => run.suiteName === suiteName)?.run;
  }

  async *results(runId: string, part?: number): AsyncIterable<ItemResult> {
    const found = (await this.runs()).find(({ run }) => run.runId === runId);
    if (!found) throw new RunNotFoundError(runId, `run ${runId} not found in ${this.root}`);
    yield* new LocalRunStore(found.dir, { checkSuite: this.checkSuite }).results(runId, part);
  }
}

/** How deep below a folder `findRunFolders` looks. */
export const RUN_SEARCH_DEPTH = 6;

/**
 * The run folders (holding a run.json) at or below `root`, however they were placed (`--out`
 * anywhere, a sweep's runs folder…), sorted by path. A run folder is not searched further;
 * hidden folders, node_modules and symbolic links are skipped.
 */
export async function findRunFolders(root: string, maxDepth = RUN_SEARCH_DEPTH): Promise<string[]> {
  const found: string[] = [];
  async function visit(dir: string, depth: number): Promise<void> {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    if (entries.some((e) => e.isFile() && e.name === 'run.json')) {
      found.push(dir);
      return;
    }
    if (depth >= maxDepth) return;
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      await visit(join(dir, entry.name), depth + 1);
    }
  }
  await visit(root, 0);
  return found.sort();
}
