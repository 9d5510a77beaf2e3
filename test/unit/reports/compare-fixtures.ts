/**
 * Runs to compare, for the comparison's tests: an example suite run twice in-process on the
 * simulator, the second time with other backends (the simulator's noise depends on the model,
 * so some items flip), and how two comparisons differ.
 */
import { join } from 'node:path';
import { runLocal } from '../../../cli/local-run.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { mulberry32 } from '../../../shared/lib/metrics/index.js';
import type { ItemResult } from '../../../shared/model/model.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import type { RunSide } from '../../../shared/reports/compare-runs.js';
import { reportOrder } from '../../../shared/reports/report.js';
import { REPO, tempDir } from '../../helpers.js';

/** How one of the two runs is made. */
export interface RunMaking {
  backends?: string[];
  sample?: { n: number; seed: number };
  repeats?: number;
}

export interface ComparedScenario {
  name: string;
  suite: string;
  base?: RunMaking;
  candidate: RunMaking;
}

/** An example suite run on the simulator: its run record and its results in report order. */
export async function exampleRun(suite: string, making: RunMaking = {}): Promise<RunSide> {
  const dir = await tempDir('assay-compare-');
  const { run, outDir } = await runLocal({
    suitePath: join(REPO, 'examples', `${suite}.suite.json`),
    simulate: true,
    fresh: true,
    env: {},
    outDir: join(dir, 'run'),
    cachePath: join(dir, 'cache.jsonl'),
    ...(making.backends ? { backends: making.backends } : {}),
    ...(making.sample ? { sample: making.sample } : {}),
    ...(making.repeats ? { repeats: making.repeats } : {}),
  });
  const results: ItemResult[] = [];
  for await (const result of new LocalRunStore(outDir, { checkSuite: validateSuite }).results(run.runId))
    results.push(result);
  return { run, results: reportOrder(results) };
}

export async function comparedRuns(
  scenario: ComparedScenario,
): Promise<{ base: RunSide; candidate: RunSide }> {
  return {
    base: await exampleRun(scenario.suite, scenario.base),
    candidate: await exampleRun(scenario.suite, scenario.candidate),
  };
}

/**
 * The only figures a comparison merged from parts may give other than one pass's: each run's
 * cost, a running floating-point sum per part, rounded apart before the parts are added: equal
 * to within their last bits (a relative 1e-12; the delta relative to the larger cost).
 */
function costTolerance(path: string, root: unknown): number | undefined {
  const cost = (root as { cost?: { base: number; candidate: number } } | undefined)?.cost;
  if (!cost) return undefined;
  if (path === 'cost.base' || path === 'cost.candidate') return 1e-12;
  if (path === 'cost.delta') return 1e-12 * Math.max(Math.abs(cost.base), Math.abs(cost.candidate));
  return undefined;
}

/**
 * Where `actual` differs from `expected` (values, array lengths, keys and their order); with
 * `tolerant`, the costs may differ in their last bits (see `costTolerance`).
 */
export function differences(actual: unknown, expected: unknown, tolerant = false): string[] {
  const walk = (a: unknown, e: unknown, path: string): string[] => {
    if (typeof e === 'number' && typeof a === 'number') {
      if (Object.is(a, e)) return [];
      const tolerance = tolerant ? costTolerance(path, expected) : undefined;
      if (tolerance === undefined) return [`${path}: ${a} ≠ ${e}`];
      const scale = path === 'cost.delta' ? 1 : Math.max(Math.abs(a), Math.abs(e));
      return Math.abs(a - e) <= tolerance * scale ? [] : [`${path}: ${a} ≠ ${e} (beyond ${tolerance})`];
    }
    if (Array.isArray(e) && Array.isArray(a)) {
      if (a.length !== e.length) return [`${path}: ${a.length} items ≠ ${e.length}`];
      return e.flatMap((value, i) => walk(a[i], value, path ? `${path}.${i}` : `${i}`));
    }
    if (e && a && typeof e === 'object' && typeof a === 'object') {
      const keys = Object.keys(e);
      if (Object.keys(a).join() !== keys.join())
        return [`${path}: keys ${Object.keys(a).join()} ≠ ${keys.join()}`];
      return keys.flatMap((key) =>
        walk(
          (a as Record<string, unknown>)[key],
          (e as Record<string, unknown>)[key],
          path ? `${path}.${key}` : key,
        ),
      );
    }
    return Object.is(a, e) ? [] : [`${path}: ${String(a)} ≠ ${String(e)}`];
  };
  return walk(actual, expected, '');
}

/**
 * Ways to cut two runs into parts by row, the same cuts in both (each part: the rows from one
 * cut to the next): empty parts at both ends, parts of one row, halves, seeded random cuts.
 * Each way is a list of row boundaries; a part holds the rows `[boundary[i], boundary[i + 1])`.
 */
export function rowCuts(rows: readonly number[]): [string, number[]][] {
  const sorted = [...new Set(rows)].sort((a, b) => a - b);
  const first = sorted[0]!;
  const end = sorted.at(-1)! + 1;
  const random = mulberry32(sorted.length);
  const randomCuts = (count: number) =>
    Array.from({ length: count }, () => sorted[Math.floor(random() * sorted.length)]!);
  const bounds = (cuts: number[]) => [first, ...[...cuts].sort((a, b) => a - b), end];
  return [
    ['one part', bounds([])],
    ['an empty part first and last', bounds([first, end])],
    ['parts of one row', bounds(sorted.slice(1, 12))],
    ['halves', bounds([sorted[Math.floor(sorted.length / 2)]!])],
    ...[1, 2, 3].map((k): [string, number[]] => [`random ${k}`, bounds(randomCuts(1 + k * 2))]),
  ];
}

/** The results of part `i` of a cut (see `rowCuts`). */
export const inPart = (results: readonly ItemResult[], bounds: readonly number[], i: number) =>
  results.filter((r) => r.row >= bounds[i]! && r.row < bounds[i + 1]!);

/** Results as a stream. */
export async function* streamOf(results: readonly ItemResult[]): AsyncGenerator<ItemResult> {
  yield* results;
}
