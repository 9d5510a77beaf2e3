/**
 * A run compared with the previous one as the aggregation in parts does it: each part of the
 * comparison tallied from the same part of both runs and the tallies merged, when the runs have
 * the same parts; else both whole runs streamed side by side; results sorted first when a store
 * gives them in the order they were recorded; the previous run found without holding its results.
 */
import { describe, expect, it } from 'vitest';
import { StoredDataError } from '../../../shared/model/codec.js';
import { type ItemResult, partOf, type RunRecord } from '../../../shared/model/model.js';
import type { RunHistory } from '../../../shared/ports/ports.js';
import {
  COMPARABLE_LOOKBACK,
  comparableByParts,
  comparableRun,
  comparedPart,
  comparisonOfParts,
  comparisonOfRuns,
  comparisonTallyOfPart,
} from '../../../shared/reports/compare-parts.js';
import { ComparisonTally, type RunSide } from '../../../shared/reports/compare-runs.js';
import { comparedRuns, differences } from './compare-fixtures.js';
import { referenceCompareRuns } from './compare-reference.js';

interface Stored {
  run: RunRecord;
  results: ItemResult[];
}

/**
 * Runs of one suite, newest first, as a history that reads results by part (or, with
 * `wholeOnly`, ignores the part, as a history that cannot read by part would), in report order
 * or in a shuffled "recorded" order; it notes every read.
 */
class MemoryHistory implements RunHistory {
  readonly reads: string[] = [];
  /** Results handed out, by run. */
  readonly handed = new Map<string, number>();

  constructor(
    private readonly runs: Stored[],
    private readonly options: { wholeOnly?: boolean; recorded?: boolean } = {},
  ) {}

  async getRun(runId: string) {
    return this.runs.find((r) => r.run.runId === runId)?.run;
  }

  async previousRun(suiteName: string, runId: string) {
    const at = this.runs.findIndex((r) => r.run.runId === runId);
    return this.runs.slice(at + 1).find((r) => r.run.suiteName === suiteName && r.run.status === 'done')?.run;
  }

  async latestRun(suiteName: string) {
    return this.runs.find((r) => r.run.suiteName === suiteName)?.run;
  }

  async *results(runId: string, part?: number): AsyncGenerator<ItemResult> {
    this.reads.push(part === undefined || this.options.wholeOnly ? `${runId}` : `${runId}#${part}`);
    const stored = this.runs.find((r) => r.run.runId === runId)!;
    const results = this.options.recorded ? recordedOrder(stored.results) : stored.results;
    for (const result of results) {
      if (part !== undefined && !this.options.wholeOnly && (result.part ?? 0) !== part) continue;
      this.handed.set(runId, (this.handed.get(runId) ?? 0) + 1);
      yield result;
    }
  }
}

/** The results in a fixed order other than report order: odd positions first, then even ones, reversed. */
const recordedOrder = (results: readonly ItemResult[]) => [
  ...results.filter((_, i) => i % 2 === 1),
  ...results.filter((_, i) => i % 2 === 0).reverse(),
];

/** A run's results cut into parts by row: part k holds the rows from `bounds[k]` on. */
function inParts(side: RunSide, bounds: readonly number[]): Stored {
  const partAt = (row: number) => bounds.filter((start) => row >= start).length - 1;
  return { run: side.run, results: side.results.map((r) => ({ ...r, ...partOf(partAt(r.row)) })) };
}

/** Each part's tally, saved as bytes and read back (as the aggregation keeps them between invocations). */
async function partTallies(history: MemoryHistory, base: RunRecord, candidate: RunRecord, parts: number) {
  return Promise.all(
    Array.from({ length: parts }, async (_, part) => {
      const tally = await comparisonTallyOfPart(history, base, candidate, part);
      return ComparisonTally.fromBytes(base, candidate, tally.toBytes());
    }),
  );
}

describe('a comparison in parts', async () => {
  const runs = await comparedRuns({
    name: 'labels',
    suite: 'reply-tone',
    candidate: { backends: ['openai:gpt-4o'] },
  });
  const { base } = runs;
  // The same upload of the dataset (a fresh local run gives each run a version of its own).
  const candidate = {
    ...runs.candidate,
    run: { ...runs.candidate.run, datasetVersion: base.run.datasetVersion },
  };
  const expected = referenceCompareRuns(base, candidate);
  const rows = base.results.map((r) => r.row);
  const bounds = [rows[0]!, rows[10]!, rows[11]!, rows[25]!];

  it('runs of the same dataset may be compared by parts, whatever its version', () => {
    expect(base.run.datasetVersion).toBeDefined();
    expect(comparableByParts(base.run, candidate.run)).toBe(true);
    expect(comparableByParts(base.run, { ...candidate.run, datasetVersion: 'another' })).toBe(true);
    expect(comparableByParts(base.run, { ...candidate.run, datasetKey: 'datasets/other.csv' })).toBe(false);
  });

  it('merges the parts of a dataset uploaded again (another version, the same rows)', async () => {
    const again = {
      ...inParts(candidate, bounds),
      run: { ...candidate.run, datasetVersion: 'uploaded again' },
    };
    const history = new MemoryHistory([again, inParts(base, bounds)]);
    const tallies = await partTallies(history, base.run, again.run, bounds.length);
    const comparison = await comparisonOfParts(history, base.run, again.run, tallies);
    expect(differences(comparison, referenceCompareRuns(base, again), true)).toEqual([]);
    expect(history.reads.filter((read) => !read.includes('#'))).toEqual([]);
  });

  it('merges the tallies of the parts when the runs have the same parts, reading each part once', async () => {
    const history = new MemoryHistory([inParts(candidate, bounds), inParts(base, bounds)]);
    const tallies = await partTallies(history, base.run, candidate.run, bounds.length);
    const comparison = await comparisonOfParts(history, base.run, candidate.run, tallies);
    expect(differences(comparison, expected, true)).toEqual([]);
    // No whole run read: each part of each run once, and the part after the last (there is none).
    expect(history.reads.filter((read) => !read.includes('#'))).toEqual([]);
    expect(history.reads.sort()).toEqual(
      [base, candidate].flatMap((side) => [0, 1, 2, 3, 4].map((p) => `${side.run.runId}#${p}`)).sort(),
    );
  });

  it('streams both whole runs when their parts differ, or a row is in one run only, or a run has more parts', async () => {
    const otherBounds = [rows[0]!, rows[12]!, rows[25]!];
    // This run without the last part's rows: its three parts are the previous run's first three.
    const shorter = { ...candidate, results: candidate.results.filter((r) => r.row < bounds[3]!) };
    // This run without a scored row inside its third part: the part's rows span the same stretch.
    const gap = candidate.results.find(
      (r) => r.row > bounds[2]! && r.row < bounds[3]! && r.status === 'scored',
    )!.row;
    const holed = { ...candidate, results: candidate.results.filter((r) => r.row !== gap) };
    const cases: [string, Stored, Stored, number][] = [
      ['parts that differ', inParts(base, bounds), inParts(candidate, otherBounds), 3],
      ['a row in one run only', inParts(base, bounds), inParts(holed, bounds), 4],
      ['a part more in the previous run', inParts(base, bounds), inParts(shorter, bounds), 3],
    ];
    for (const [why, previous, run, parts] of cases) {
      const history = new MemoryHistory([run, previous]);
      const tallies = await partTallies(history, previous.run, run.run, parts);
      const comparison = await comparisonOfParts(history, previous.run, run.run, tallies);
      // One pass over both whole runs: the reference's figures to the last bit.
      const reference = referenceCompareRuns(previous, run);
      expect({ why, differences: differences(comparison, reference) }).toEqual({ why, differences: [] });
      expect({ why, whole: history.reads.filter((read) => !read.includes('#')).sort() }).toEqual({
        why,
        whole: [previous.run.runId, run.run.runId].sort(),
      });
      // Its parts span the same rows: the part after them, in the previous run, says they differ.
      if (why === 'a part more in the previous run')
        expect(history.reads).toContain(`${previous.run.runId}#3`);
    }
    expect(referenceCompareRuns(base, shorter).items.onlyBase).toBeGreaterThan(0);
  });

  it('never pairs an item edited between the runs: its parts are not merged, and it counts as changed', async () => {
    // A dataset uploaded again with three rows edited in place (the same id and row, another input).
    const edited = new Set(
      candidate.results
        .filter((r) => r.status === 'scored')
        .map((r) => r.itemId)
        .slice(3, 6),
    );
    const again = {
      run: { ...candidate.run, datasetVersion: 'edited' },
      results: candidate.results.map((r) =>
        edited.has(r.itemId) ? { ...r, input: { ...r.input, edited: 'yes' }, inputDigest: undefined } : r,
      ),
    };
    const history = new MemoryHistory([inParts(again, bounds), inParts(base, bounds)]);
    const tallies = await partTallies(history, base.run, again.run, bounds.length);
    const comparison = await comparisonOfParts(history, base.run, again.run, tallies);
    expect(comparison.items).toMatchObject({ changed: 3, onlyBase: 0, onlyCandidate: 0 });
    expect(comparison.items.paired).toBe(expected.items.paired - 3);
    for (const s of Object.values(comparison.scores))
      for (const f of s.flipped) expect(edited.has(f.itemId)).toBe(false);
    expect(differences(comparison, referenceCompareRuns(base, again))).toEqual([]);
    // Both whole runs streamed: the parts did not pair fully.
    expect(history.reads.filter((read) => !read.includes('#')).sort()).toEqual(
      [base.run.runId, again.run.runId].sort(),
    );
  });

  it('sorts results a store gives in the order they were recorded', async () => {
    const history = new MemoryHistory([inParts(candidate, bounds), inParts(base, bounds)], {
      recorded: true,
    });
    expect(differences(await comparisonOfRuns(history, base.run, candidate.run), expected)).toEqual([]);
    const tallies = await partTallies(history, base.run, candidate.run, bounds.length);
    const merged = await comparisonOfParts(history, base.run, candidate.run, tallies);
    expect(differences(merged, expected, true)).toEqual([]);
  });

  it("takes this run's results when they are at hand", async () => {
    const history = new MemoryHistory([{ ...base, run: candidate.run, results: [] }, base]);
    const comparison = await comparisonOfRuns(history, base.run, candidate.run, {
      results: async function* () {
        yield* candidate.results;
      },
    });
    expect(differences(comparison, expected)).toEqual([]);
  });

  it('refuses a history that does not read results by part', async () => {
    const history = new MemoryHistory([inParts(candidate, bounds), inParts(base, bounds)], {
      wholeOnly: true,
    });
    await expect(comparisonTallyOfPart(history, base.run, candidate.run, 1)).rejects.toThrow(
      /asked for part 1 of run .*, got a result of part 0 .*: the history must read results by part/,
    );
  });

  it('holds a compared part of each result: no output, details or raw text, and the same cost', () => {
    const result: ItemResult = {
      ...candidate.results[0]!,
      raw: 'raw',
      details: { big: 'x'.repeat(1000) },
      stages: {
        judge: {
          calls: 1,
          cachedCalls: 0,
          costUsd: 0.1,
          latencyMs: 5,
          usage: { input: 1, output: 1, cached: 0 },
        },
        repair: {
          calls: 1,
          cachedCalls: 0,
          costUsd: 0.2,
          latencyMs: 5,
          usage: { input: 1, output: 1, cached: 0 },
        },
      },
      part: 3,
    };
    const part = comparedPart(result);
    expect(part).not.toHaveProperty('output');
    expect(part).not.toHaveProperty('details');
    expect(part).not.toHaveProperty('raw');
    expect(part).toMatchObject({ itemId: result.itemId, row: result.row, part: 3, scores: result.scores });
    expect(Object.values(part.stages).map((s) => s.costUsd)).toEqual([0.1 + 0.2]);
  });
});

describe('comparableRun', async () => {
  const { base, candidate } = await comparedRuns({
    name: 'labels',
    suite: 'reply-tone',
    candidate: { backends: ['openai:gpt-4o'] },
  });
  const run = candidate.run;
  const earlier = (runId: string, changes: Partial<RunRecord> = {}): RunRecord => ({
    ...base.run,
    runId,
    status: 'done',
    ...changes,
  });
  const failed = (results: ItemResult[]) =>
    results.map(
      (r): ItemResult => ({
        ...r,
        status: 'failed',
        failure: { kind: 'provider', message: 'down' },
        scores: {},
      }),
    );

  it('finds the newest earlier run on the same dataset that scored something, reading up to its first scored result', async () => {
    const history = new MemoryHistory([
      { run, results: candidate.results },
      { run: earlier('other-dataset', { datasetKey: 'other.csv' }), results: base.results },
      { run: earlier('scored-nothing'), results: failed(base.results) },
      { run: earlier('running', { status: 'running' }), results: base.results },
      { run: earlier('good'), results: base.results },
      { run: earlier('older'), results: base.results },
    ]);
    expect(await comparableRun(history, run)).toEqual({ run: earlier('good') });
    expect(history.handed.get('good')).toBe(1);
    expect(history.handed.get('scored-nothing')).toBe(base.results.length);
    expect(history.handed.get('other-dataset')).toBeUndefined();
  });

  it('never picks a run of the other kind: a simulated run is not compared with a real one, nor the other way', async () => {
    const real = { ...run, simulated: false };
    const simulated = { ...run, simulated: true };
    const history = (latest: RunRecord) =>
      new MemoryHistory([
        { run: latest, results: candidate.results },
        { run: earlier('real', { simulated: false }), results: base.results },
        { run: earlier('simulated', { simulated: true }), results: base.results },
        { run: earlier('older real', { simulated: false }), results: base.results },
      ]);
    expect(await comparableRun(history(simulated), simulated)).toEqual({
      run: earlier('simulated', { simulated: true }),
    });
    expect(await comparableRun(history(real), real)).toEqual({ run: earlier('real', { simulated: false }) });
    const onlyReal = new MemoryHistory([
      { run: simulated, results: candidate.results },
      { run: earlier('real', { simulated: false }), results: base.results },
    ]);
    expect(await comparableRun(onlyReal, simulated)).toBeUndefined();
  });

  it('says why the results of the run found cannot be read', async () => {
    const broken = new MemoryHistory([
      { run, results: candidate.results },
      { run: earlier('broken'), results: base.results },
    ]);
    broken.results = async function* () {
      yield* [];
      throw new StoredDataError('results.jsonl line 1: not a result');
    };
    expect(await comparableRun(broken, run)).toEqual({
      run: earlier('broken'),
      error: 'results.jsonl line 1: not a result',
    });
  });

  it(`looks back ${COMPARABLE_LOOKBACK} runs at most`, async () => {
    const others = Array.from({ length: COMPARABLE_LOOKBACK }, (_, i) => ({
      run: earlier(`other-${i}`, { datasetKey: 'other.csv' }),
      results: base.results,
    }));
    const history = new MemoryHistory([
      { run, results: candidate.results },
      ...others,
      { run: earlier('good'), results: base.results },
    ]);
    expect(await comparableRun(history, run)).toBeUndefined();
  });
});
