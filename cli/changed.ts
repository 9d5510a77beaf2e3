import { readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { LocalRunHistory } from '../shared/adapters/local/local-run-history.js';
import { snapshotPrompts } from '../shared/lib/prompts/prompts.js';
import type { RunRecord } from '../shared/model/model.js';
import { isSweep } from '../shared/model/variants.js';
import { taskFor } from '../shared/registry/registry.js';
import { type Suite, variantSuites } from '../shared/registry/suite.js';
import { loadSuiteFile, promptStoreFor } from './local-run.js';

/** Folders never searched for suite files. */
const SKIP = new Set(['node_modules', '.git', 'runs', '.assay-cache', 'cdk.out']);

/** Every `*.suite.json` under `root`, sorted. */
export async function discoverSuites(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && !SKIP.has(entry.name) && !entry.name.startsWith('.'))
        await walk(join(dir, entry.name));
      else if (entry.isFile() && entry.name.endsWith('.suite.json')) found.push(join(dir, entry.name));
    }
  };
  await walk(resolve(root));
  return found.sort();
}

export type SuiteChange =
  | { status: 'changed'; suitePath: string; suite: Suite; latest: RunRecord; paths: string[] }
  | { status: 'unchanged' | 'never-run'; suitePath: string; suite: Suite; latest?: RunRecord };

/**
 * For each suite file: the prompt files (as the suite reads them now) whose content hash
 * differs from what the suite's latest run under `history` used, or that it did not read.
 */
export async function promptChanges(suitePaths: string[], history: LocalRunHistory): Promise<SuiteChange[]> {
  const changes: SuiteChange[] = [];
  for (const suitePath of suitePaths) {
    const suite = await loadSuiteFile(suitePath);
    // A sweep's runs are its variants': it changed when any variant's prompts did.
    const runsOf = isSweep(suite) ? variantSuites(suite).map((v) => v.suite) : [suite];
    const store = promptStoreFor(dirname(resolve(suitePath)));
    const changed = new Set<string>();
    let latest: RunRecord | undefined;
    for (const runSuite of runsOf) {
      const run = await history.latestRun(runSuite.name);
      if (!run) continue;
      if (!latest || run.startedAt > latest.startedAt) latest = run;
      const now = await snapshotPrompts(store, Object.values(taskFor(runSuite).promptPaths(runSuite)));
      for (const path of Object.keys(now)) if (run.prompts[path]?.hash !== now[path]!.hash) changed.add(path);
    }
    if (!latest) changes.push({ status: 'never-run', suitePath, suite });
    else if (changed.size > 0)
      changes.push({ status: 'changed', suitePath, suite, latest, paths: [...changed].sort() });
    else changes.push({ status: 'unchanged', suitePath, suite, latest });
  }
  return changes;
}
