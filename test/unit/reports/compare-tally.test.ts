/**
 * A comparison tallied from the pairs of two runs gives what the comparison of both runs'
 * results in memory gave (the reference, `compare-reference.ts`), for label, number and pass
 * scorers, runs with repeats and runs of different samples: in one pass, streamed, and from
 * parts of the runs tallied apart, saved as bytes, loaded back and merged in order — every
 * count, interval, p-value, noise floor and flipped item equal, only the cost to within its last
 * bits. The runs are the example suites', run in-process on the simulator.
 */
import { deserialize, serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { ItemResult } from '../../../shared/model/model.js';
import {
  type Comparison,
  ComparisonTally,
  compareRuns,
  type PairingStats,
  pairs,
  pairsOf,
  type RunSide,
} from '../../../shared/reports/compare-runs.js';
import {
  type ComparedScenario,
  comparedRuns,
  differences,
  exampleRun,
  inPart,
  rowCuts,
  streamOf,
} from './compare-fixtures.js';
import { referenceCompareRuns } from './compare-reference.js';

const SCENARIOS: ComparedScenario[] = [
  { name: 'judge labels', suite: 'reply-tone', candidate: { backends: ['openai:gpt-4o'] } },
  {
    name: 'GEC labels',
    suite: 'quickstart',
    base: { sample: { n: 80, seed: 7 } },
    candidate: { sample: { n: 80, seed: 7 }, backends: ['openai:gpt-4o'] },
  },
  {
    name: 'a score and a pass at its threshold',
    suite: 'answer-helpfulness',
    candidate: { backends: ['anthropic:claude-sonnet-4-5'] },
  },
  {
    name: 'scores against a binary gold',
    suite: 'summedits',
    base: { sample: { n: 100, seed: 7 } },
    candidate: { sample: { n: 100, seed: 7 }, backends: ['openai:gpt-4o'] },
  },
  {
    name: 'cleanup: numbers and passes',
    suite: 'dictation-cleanup',
    candidate: { backends: ['openai:gpt-4o'] },
  },
  { name: 'QA', suite: 'mmlu-physics', candidate: { backends: ['openai:gpt-4o'] } },
  {
    name: 'labels, run.repeats 3 against a run without',
    suite: 'reply-tone',
    base: { repeats: 3 },
    candidate: { backends: ['openai:gpt-4o'] },
  },
  {
    name: 'scores, run.repeats 3 against run.repeats 2',
    suite: 'answer-helpfulness',
    base: { repeats: 3 },
    candidate: { repeats: 2, backends: ['anthropic:claude-sonnet-4-5'] },
  },
  {
    name: 'samples of the dataset that differ: items in one run only',
    suite: 'quickstart',
    base: { sample: { n: 80, seed: 7 } },
    candidate: { sample: { n: 80, seed: 8 }, backends: ['openai:gpt-4o'] },
  },
];

/** The tally of two runs' results streamed side by side. */
async function streamed(
  base: RunSide,
  candidate: RunSide,
  options: { stats: PairingStats; sameRows?: boolean },
): Promise<ComparisonTally> {
  const tally = new ComparisonTally(base.run, candidate.run);
  for await (const pair of pairs(streamOf(base.results), streamOf(candidate.results), {
    onRead: (side, result) => tally.read(side, result),
    ...options,
  }))
    tally.add(pair.base, pair.candidate, pair.outOfWindow);
  return tally;
}

/** The tally of some results of each run, saved as bytes and read back. */
function partTally(base: RunSide, candidate: RunSide, b: ItemResult[], c: ItemResult[]): ComparisonTally {
  const tally = new ComparisonTally(base.run, candidate.run);
  for (const pair of pairsOf(b, c, { onRead: (side, result) => tally.read(side, result) }))
    tally.add(pair.base, pair.candidate, pair.outOfWindow);
  return ComparisonTally.fromBytes(base.run, candidate.run, tally.toBytes());
}

/** Each part of both runs (the same rows in each) tallied apart, then merged in order. */
function mergedParts(base: RunSide, candidate: RunSide, bounds: number[]): Comparison {
  const parts = bounds
    .slice(1)
    .map((_, i) =>
      partTally(base, candidate, inPart(base.results, bounds, i), inPart(candidate.results, bounds, i)),
    );
  const [whole, ...rest] = parts;
  for (const part of rest) whole!.merge(part);
  return whole!.comparison();
}

describe('a comparison tallied from the pairs of two runs', () => {
  it.each(SCENARIOS)(
    '$name: what both runs in memory gave, in one pass, streamed or in parts',
    async (scenario) => {
      const { base, candidate } = await comparedRuns(scenario);
      const expected = referenceCompareRuns(base, candidate);
      const primary = expected.scores[expected.primaryScorer]!;
      expect(primary.n).toBeGreaterThan(10);
      expect(Object.values(expected.scores).some((s) => s.flipped.length > 0)).toBe(true);
      if (scenario.base?.repeats)
        expect(Object.values(expected.scores).some((s) => s.noise !== undefined)).toBe(true);
      if (scenario.base?.sample?.seed !== scenario.candidate.sample?.seed)
        expect(expected.items.onlyBase * expected.items.onlyCandidate).toBeGreaterThan(0);

      // One pass: the same comparison to the last bit, keys in the same order.
      expect(differences(compareRuns(base, candidate), expected)).toEqual([]);
      expect(JSON.stringify(compareRuns(base, candidate))).toBe(JSON.stringify(expected));

      // Streamed side by side: every item pairs at once, or waits for a partner it never finds
      // (samples that differ), unless the runs say they have the same rows (the same dataset
      // version): then nothing waits.
      const stats: PairingStats = { waiting: 0, mostWaiting: 0, outOfWindow: 0 };
      const tally = await streamed(base, candidate, { stats });
      expect(differences(tally.comparison(), expected)).toEqual([]);
      const oneSided = expected.items.onlyBase + expected.items.onlyCandidate;
      expect(stats).toEqual({ waiting: 0, mostWaiting: oneSided, outOfWindow: 0 });
      const sameRows = await streamed(base, candidate, { stats, sameRows: true });
      expect(differences(sameRows.comparison(), expected)).toEqual([]);
      expect(stats).toEqual({ waiting: 0, mostWaiting: 0, outOfWindow: 0 });

      // Saved and read back: the same state, the same comparison.
      const bytes = tally.toBytes();
      const loaded = ComparisonTally.fromBytes(base.run, candidate.run, bytes);
      expect(deserialize(loaded.toBytes())).toStrictEqual(deserialize(bytes));
      expect(differences(loaded.comparison(), expected)).toEqual([]);

      const rows = [...base.results, ...candidate.results].map((r) => r.row);
      for (const [how, bounds] of rowCuts(rows)) {
        const merged = mergedParts(base, candidate, bounds);
        expect({ how, differences: differences(merged, expected, true) }).toEqual({ how, differences: [] });
      }
    },
  );

  it('holds its pairs in typed columns of a few bytes each', async () => {
    const { base, candidate } = await comparedRuns(SCENARIOS[0]!);
    const tally = new ComparisonTally(base.run, candidate.run);
    for (const pair of pairsOf(base.results, candidate.results, {
      onRead: (side, result) => tally.read(side, result),
    }))
      tally.add(pair.base, pair.candidate);
    const state = deserialize(tally.toBytes()) as {
      scorers: Record<string, { rows: ArrayLike<number>; columns: ArrayLike<number>[] }>;
    };
    const label = state.scorers.label!;
    // Label codes in a byte each, the base rows in four.
    expect(label.columns.map((c) => c.constructor.name)).toEqual(Array(4).fill('Uint8Array'));
    expect(label.rows.constructor.name).toMatch(/^(Uint8Array|Int32Array)$/);
  });

  it('reads only a tally of its own two runs and version', async () => {
    const base = await exampleRun('reply-tone');
    const candidate = { ...base, run: { ...base.run, runId: 'candidate' } };
    const bytes = new ComparisonTally(base.run, candidate.run).toBytes();
    expect(() => ComparisonTally.fromBytes(candidate.run, base.run, bytes)).toThrow(
      new RegExp(
        `a comparison tally of ${base.run.runId} → candidate, read for candidate → ${base.run.runId}`,
      ),
    );
    expect(() => ComparisonTally.fromBytes(base.run, candidate.run, serialize({ version: 0 }))).toThrow(
      /a comparison tally of version 0; this Assay reads version 4/,
    );
    const other = new ComparisonTally(base.run, { ...candidate.run, runId: 'another' });
    expect(() => new ComparisonTally(base.run, candidate.run).merge(other)).toThrow(/cannot merge/);
  });
});
