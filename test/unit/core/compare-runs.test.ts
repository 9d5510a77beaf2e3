import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import {
  type Comparison,
  compareRuns,
  comparisonSummary,
  type RunSide,
} from '../../../shared/reports/compare-runs.js';
import {
  COMPARISON_FILES,
  mcnemarReading,
  renderComparisonText,
  SCREEN_FLIPPED_LIMIT,
  writeComparisonFiles,
} from '../../../shared/reports/comparison.js';
import { reportOrder } from '../../../shared/reports/report.js';
import { writeRunReport } from '../../../shared/use-cases/aggregate-run.js';
import { REPO, suite, tempDir } from '../../helpers.js';

const exec = promisify(execFile);

function runRecord(
  runId: string,
  prompts: Record<string, string>,
  datasetKey = 'data.csv',
  runSuite = suite(),
): RunRecord {
  return {
    schemaVersion: 2,
    runId,
    suiteName: 'test-suite',
    suite: runSuite,
    prompts: Object.fromEntries(Object.entries(prompts).map(([path, hash]) => [path, { hash, text: path }])),
    status: 'done',
    total: 12,
    invalidRows: 1,
    startedAt: '2025-01-01T00:00:00.000Z',
    finishedAt: '2025-01-01T00:01:00.000Z',
    reportPrefix: '',
    datasetKey,
    simulated: false,
  };
}

interface Spec {
  id: string;
  row: number;
  gold?: string;
  /** A label, or 'Error' for a failed item. */
  pred?: string;
  /** A numeric judge's score. */
  score?: number;
  invalid?: boolean;
}

function result(runId: string, s: Spec, costUsd: number): ItemResult {
  const base: ItemResult = {
    schemaVersion: 2,
    runId,
    itemId: s.id,
    row: s.row,
    status: 'scored',
    input: { src: `src ${s.id}`, tgt: `tgt ${s.id}` },
    scores: {},
    stages: {},
    simulated: false,
    finishedAt: '2025-01-01T00:00:30.000Z',
  };
  if (s.gold !== undefined) base.gold = s.gold;
  if (s.score !== undefined) base.scores = { score: { kind: 'number', value: s.score, decidedBy: 'sim:x' } };
  if (s.invalid) {
    return {
      ...base,
      status: 'failed',
      failure: { kind: 'invalid_row', message: `row ${s.row}: missing column tgt` },
    };
  }
  base.stages = {
    classify: {
      calls: 1,
      cachedCalls: 0,
      costUsd,
      latencyMs: 100,
      usage: { input: 10, output: 5, cached: 0 },
    },
  };
  if (s.pred === 'Error') {
    return {
      ...base,
      status: 'failed',
      failure: { kind: 'parse', message: `${runId} could not parse ${s.id}` },
    };
  }
  if (s.pred !== undefined) {
    const explanation = `${runId} says ${s.pred} for ${s.id}`;
    base.output = { label: s.pred, reason: explanation };
    base.scores = { label: { kind: 'label', value: s.pred, explanation } };
  }
  return base;
}

// id, row, gold, base prediction, candidate prediction
const ITEMS: [string, number, string, string | undefined, string | undefined][] = [
  ['i1', 1, 'TP', 'TP', 'TP'], // both right
  ['i2', 2, 'FP1', 'FP1', 'FP1'], // both right
  ['i3', 3, 'FP2', 'FP3', 'FP2'], // fixed
  ['i4', 4, 'FP3', 'FP3', 'TP'], // broken
  ['i5', 5, 'TP', 'FP2', 'FP1'], // changed: wrong → differently wrong
  ['i6', 6, 'FP2', 'FP2', 'FP2'], // both right
  ['i7', 7, 'TP', 'Error', 'TP'], // changed: the base failed
  ['i8', 8, 'FP1', 'FP1', 'FP1'], // both right
  ['i9', 9, 'FP3', 'FP2', 'FP2'], // both wrong, the same way: not flipped
  ['i10', 10, 'TP', 'TP', 'TP'], // both right
  ['i12', 12, 'TP', 'TP', undefined], // only in base
  ['i13', 13, 'FP1', undefined, 'FP1'], // only in candidate
];

function sides(): { base: RunSide; candidate: RunSide } {
  const baseResults = ITEMS.filter(([, , , b]) => b !== undefined).map(([id, row, gold, pred]) =>
    result('run-base', { id, row, gold, pred }, 0.001),
  );
  const candidateResults = ITEMS.filter(([, , , , c]) => c !== undefined).map(([id, row, gold, , pred]) =>
    result('run-cand', { id, row, gold, pred }, 0.002),
  );
  // The same bad dataset row in both runs: never paired.
  baseResults.push(result('run-base', { id: 'row-11', row: 11, invalid: true }, 0));
  candidateResults.push(result('run-cand', { id: 'row-11', row: 11, invalid: true }, 0));
  return {
    base: {
      run: runRecord('run-base', { 'prompts/a.txt': 'aaa111', 'prompts/b.txt': 'bbb111' }),
      results: baseResults,
    },
    candidate: {
      run: runRecord('run-cand', {
        'prompts/a.txt': 'aaa222',
        'prompts/b.txt': 'bbb111',
        'prompts/c.txt': 'ccc111',
      }),
      // Completion order, not row order: the comparison must not depend on it.
      results: [...candidateResults].reverse(),
    },
  };
}

describe('compareRuns', () => {
  const { base, candidate } = sides();
  const c = compareRuns(base, candidate);

  it('pairs items on the id, leaving out invalid rows and one-sided items', () => {
    expect(c.items).toEqual({ paired: 10, onlyBase: 1, onlyCandidate: 1 });
    expect(c.base).toMatchObject({ runId: 'run-base', suite: 'test-suite', backends: ['sim:gold'] });
    expect(c.candidate.runId).toBe('run-cand');
  });

  it('compares the scorers both runs have, with the primary one named', () => {
    expect(Object.keys(c.scores)).toEqual(['label']);
    expect(c.primaryScorer).toBe('label');
    expect(c.scores.label!.kind).toBe('label');
  });

  it('computes the paired label metrics as counted by hand, over the items both runs scored', () => {
    // The base failed i7: it is left out of both sides, n = 9 (not the candidate's 10 against
    // the base's 9). Base right on i1 i2 i4 i6 i8 i10 → 6/9; candidate on i1 i2 i3 i6 i8 i10 → 6/9.
    const accuracy = c.scores.label!.deltas.accuracy!;
    expect(c.scores.label!.n).toBe(9);
    expect(accuracy.n).toBe(9);
    expect(accuracy.base).toBeCloseTo(6 / 9, 12);
    expect(accuracy.candidate).toBeCloseTo(6 / 9, 12);
    expect(accuracy.delta).toBe(0);
    expect(accuracy.interval).toBe('newcombe');
    expect(accuracy.ci[0]).toBeLessThan(0);
    expect(accuracy.ci[1]).toBeGreaterThan(0);
    expect(accuracy.pValue).toBe(1);
    expect(Object.keys(c.scores.label!.deltas)).toEqual([
      'accuracy',
      'macroF1',
      'binaryAccuracy',
      'binaryF1',
      'positiveF1',
      'kappa',
    ]);
    // Coverage: of the 10 paired items the base scored 9, the candidate 10.
    expect(c.scores.label!.coverage).toMatchObject({
      n: 10,
      base: 0.9,
      candidate: 1,
      scored: { base: 9, candidate: 10 },
    });
    expect(c.scores.label!.coverage!.delta).toBeCloseTo(0.1, 12);
  });

  it("counts McNemar's discordant items over the items both runs scored", () => {
    // Base right only: i4 → b = 1. Candidate right only: i3 → c = 1 (i7, which the base failed,
    // is not a pair of answers: it is in the coverage, not here).
    expect(c.scores.label!.mcnemar).toMatchObject({ b: 1, c: 1, method: 'exact', pValue: 1 });
    expect(mcnemarReading(c.scores.label!.mcnemar!)).toBe('no significant difference at 5%');
    expect(mcnemarReading({ b: 0, c: 12, pValue: 0.0005 })).toBe('candidate better (p=<0.001)');
    expect(mcnemarReading({ b: 9, c: 1, pValue: 0.021 })).toBe('base better (p=0.021)');
  });

  it('lists flipped items in row order with both reasons and a kind', () => {
    const flipped = c.scores.label!.flipped;
    expect(flipped.map((f) => [f.itemId, f.kind])).toEqual([
      ['i3', 'fixed'],
      ['i4', 'broken'],
      ['i5', 'changed'],
      ['i7', 'changed'],
    ]);
    const i3 = flipped[0]!;
    expect(i3).toMatchObject({
      row: 3,
      gold: 'FP2',
      input: { src: 'src i3', tgt: 'tgt i3' },
      base: { value: 'FP3', reason: 'run-base says FP3 for i3', status: 'scored' },
      candidate: { value: 'FP2', reason: 'run-cand says FP2 for i3', status: 'scored' },
    });
    expect(flipped[3]!.base).toEqual({
      value: '(parse)',
      reason: 'run-base could not parse i7',
      status: 'failed (parse)',
    });
  });

  it('reports changed and added prompts, and the cost of each side', () => {
    expect(c.promptChanges).toEqual([
      { path: 'prompts/a.txt', base: 'aaa111', candidate: 'aaa222' },
      { path: 'prompts/c.txt', candidate: 'ccc111' },
    ]);
    // 11 results with a model call on each side (the invalid row has none).
    expect(c.cost.base).toBeCloseTo(0.011, 12);
    expect(c.cost.candidate).toBeCloseTo(0.022, 12);
    expect(c.cost.delta).toBeCloseTo(0.011, 12);
  });

  it('gives the same numbers whatever order the results come in', () => {
    const shuffled = sides();
    shuffled.base.results.reverse();
    shuffled.candidate.results.reverse();
    expect(compareRuns(shuffled.base, shuffled.candidate)).toEqual(c);
  });

  it('summarises for report.json', () => {
    const s = comparisonSummary(c);
    expect(s).toMatchObject({
      baseRunId: 'run-base',
      paired: 10,
      scores: { label: { mcnemarPValue: 1, flipped: { fixed: 1, broken: 1, changed: 2 } } },
      promptChanges: c.promptChanges,
    });
    expect(s.scores.label!.deltas.accuracy!.delta).toBe(0);
    expect(s.scores.label!.coverage).toMatchObject({ n: 10, scored: { base: 9, candidate: 10 } });
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
  });

  it('renders the prompt change and the flipped reasons side by side', () => {
    const text = renderComparisonText(c);
    expect(text).toContain('run-base');
    expect(text).toContain('prompts/a.txt: aaa111 → aaa222');
    expect(text).toContain('prompts/c.txt: (none) → ccc111');
    expect(text).toContain('Items: 10 paired, 1 only in base, 1 only in candidate');
    expect(text).toContain('flipped items (4): 1 fixed, 1 broken, 2 changed');
    expect(text).toMatch(/accuracy\s+0\.667\s+0\.667\s+±0\.000/);
    expect(text).toContain('coverage (scored / paired items): base 9/10 (0.900), candidate 10/10 (1.000)');
    expect(text).toMatch(/b 1 \(base right only\), c 1 \(candidate right only\), p 1\.000 \(exact\)/);
    expect(text).toMatch(/Cost: base \$0\.0110\s+candidate \$0\.0220\s+Δ \+\$0\.0110/);
    // The two answers of a flipped item, on consecutive lines.
    expect(text).toMatch(
      /\[i3\] row 3 {2}gold=FP2 {2}fixed\n {2}src: src i3\n {2}tgt: tgt i3\n {2}base +FP3 +run-base says FP3 for i3\n {2}candidate +FP2 +run-cand says FP2 for i3\n/,
    );
    expect(text).toMatch(/ {2}base +\(parse\) +\[failed \(parse\)\] +run-base could not parse i7/);
    expect(text).not.toContain('[i9]');
  });

  it('writes comparison.json and comparison.txt', async () => {
    const dir = await tempDir();
    const keys = await writeComparisonFiles(new FolderBlobStore(dir), 'cmp/', c);
    expect(keys).toEqual(COMPARISON_FILES.map((f) => `cmp/${f}`));
    const json = JSON.parse(await readFile(join(dir, 'cmp', 'comparison.json'), 'utf8')) as Comparison;
    expect(json.items).toEqual(c.items);
    expect(await readFile(join(dir, 'cmp', 'comparison.txt'), 'utf8')).toBe(renderComparisonText(c));
  });

  it('compares a numeric judge by mean, MAE and Spearman, with no classification figures', () => {
    const numeric = validateSuite(
      {
        version: 1,
        name: 'helpfulness',
        task: 'judge',
        dataset: { path: 'answers.jsonl' },
        judge: { prompt: 'helpful.md', range: [1, 5] },
        backends: ['sim:x'],
      },
      'test',
    );
    const graded = (runId: string, scores: number[]): RunSide => ({
      run: runRecord(runId, {}, 'answers.jsonl', numeric),
      results: scores.map((score, i) =>
        result(runId, { id: `q${i}`, row: i + 1, gold: String([2, 3, 4, 5][i]), score }, 0),
      ),
    });
    // gold 2 3 4 5; base 1 3 3 5 (MAE (1+0+1+0)/4 = 0.5); candidate 2 3 4 4 (MAE 1/4 = 0.25)
    const g = compareRuns(graded('a', [1, 3, 3, 5]), graded('b', [2, 3, 4, 4]));
    const score = g.scores.score!;
    expect(score.kind).toBe('number');
    // Every figure against gold the run's report gives (the metric table's deltas); [1, 5] is ordinal.
    expect(Object.keys(score.deltas)).toEqual([
      'mean',
      'mae',
      'pearson',
      'spearman',
      'kendallTau',
      'weightedKappa',
      'withinOne',
    ]);
    expect(score.deltas.mean).toMatchObject({ n: 4, base: 3, candidate: 3.25, delta: 0.25 });
    expect(score.deltas.mae).toMatchObject({ base: 0.5, candidate: 0.25, delta: -0.25 });
    expect(score.mcnemar).toBeUndefined();
    // A score is right when it equals the gold: q0 and q2 become right, q3 stops being right.
    expect(score.flipped.map((f) => [f.itemId, f.kind])).toEqual([
      ['q0', 'fixed'],
      ['q2', 'fixed'],
      ['q3', 'broken'],
    ]);
    const text = renderComparisonText(g);
    expect(text).toMatch(/mean\s+3\.000\s+3\.250\s+\+0\.250/);
    expect(text).toMatch(/MAE\s+0\.500\s+0\.250\s+-0\.250/);
    expect(text).toMatch(/Spearman ρ/);
    expect(text).not.toMatch(/accuracy|macro F1|Cohen's kappa|McNemar/);
    expect(text).toMatch(/weighted kappa/);
  });

  it('has no label metrics without gold labels, but still lists changed labels', () => {
    const unlabelled = (runId: string, preds: string[]): RunSide => ({
      run: runRecord(runId, {}),
      results: preds.map((pred, i) => result(runId, { id: `u${i}`, row: i + 1, pred }, 0)),
    });
    const u = compareRuns(unlabelled('a', ['TP', 'FP1']), unlabelled('b', ['TP', 'FP2']));
    expect(u.scores.label!.deltas).toEqual({});
    expect(u.scores.label!.mcnemar).toBeUndefined();
    expect(u.scores.label!.flipped.map((f) => [f.itemId, f.kind, f.gold])).toEqual([
      ['u1', 'changed', undefined],
    ]);
    expect(renderComparisonText(u)).toContain('metrics: none');
  });
});

describe('assay compare', () => {
  async function writeRunFolder(dir: string, side: RunSide) {
    const store = new LocalRunStore(dir);
    await store.createRun(side.run);
    for (const r of side.results) await store.recordResult(r);
  }

  const cli = (args: string[]) =>
    exec(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args], { cwd: REPO });

  it('shows --limit flipped items per scorer on screen (20 by default) and writes them all', async () => {
    const root = await tempDir();
    const { base, candidate } = sides();
    await writeRunFolder(join(root, 'a'), base);
    await writeRunFolder(join(root, 'b'), candidate);
    const out = join(root, 'o');
    const { stdout } = await cli(['compare', join(root, 'a'), join(root, 'b'), '--out', out, '--limit', '1']);
    const blocks = (text: string) => text.split('\n').filter((line) => /^\[.+\] row \d+ /.test(line)).length;
    expect(stdout).toContain('flipped items (4)');
    expect(blocks(stdout)).toBe(1);
    expect(stdout).toContain(
      `… 3 more flipped items not shown (1 of 4): all of them in ${join(out, 'comparison.txt')}`,
    );
    const file = await readFile(join(out, 'comparison.txt'), 'utf8');
    expect(blocks(file)).toBe(4);
    expect(file).not.toContain('not shown');
    // Without --limit: 20 at most, and all four here.
    const all = await cli(['compare', join(root, 'a'), join(root, 'b')]);
    expect(blocks(all.stdout)).toBe(4);
    expect(SCREEN_FLIPPED_LIMIT).toBe(20);
    const c = compareRuns(base, candidate);
    expect(renderComparisonText(c, { limit: 2 })).toContain(
      '… 2 more flipped items not shown (2 of 4): all of them in comparison.txt with --out <dir>, or raise --limit',
    );
  }, 60_000);

  it('compares two run folders and writes the comparison files', async () => {
    const root = await tempDir();
    const { base, candidate } = sides();
    candidate.run.datasetKey = 'other.csv';
    await writeRunFolder(join(root, 'a'), base);
    await writeRunFolder(join(root, 'b'), candidate);
    const out = join(root, 'o');
    const { stdout, stderr } = await cli(['compare', join(root, 'a'), join(root, 'b'), '--out', out]);
    expect(stdout).toContain('flipped items (4)');
    expect(stdout).toContain('prompts/a.txt: aaa111 → aaa222');
    expect(stderr).toContain('warning: the runs used different datasets (data.csv vs other.csv)');
    expect(await readFile(join(out, 'comparison.txt'), 'utf8')).toBe(stdout);
    const written = JSON.parse(await readFile(join(out, 'comparison.json'), 'utf8')) as Comparison;
    expect(written.items).toEqual({ paired: 10, onlyBase: 1, onlyCandidate: 1 });
    expect(written.scores.label!.mcnemar).toMatchObject({ b: 1, c: 1 });

    const json = await cli(['compare', join(root, 'a'), join(root, 'b'), '--json']);
    expect(JSON.parse(json.stdout)).toEqual(written);
  }, 180_000);

  it('refuses a folder without run.json, and runs of different tasks', async () => {
    const root = await tempDir();
    const { base, candidate } = sides();
    await writeRunFolder(join(root, 'a'), base);
    await mkdir(join(root, 'empty'));
    await expect(cli(['compare', join(root, 'a'), join(root, 'empty')])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`not a run folder: ${join(root, 'empty')} (no run.json)`),
    });

    const judgeSuite = {
      version: 1,
      name: 'tone',
      task: 'judge',
      dataset: { path: 'x.csv' },
      judge: { prompt: 'tone.md', labels: ['polite', 'rude'] },
      backends: ['sim:x'],
    };
    const other = { ...candidate.run, suite: judgeSuite };
    await mkdir(join(root, 'judge'));
    await writeFile(join(root, 'judge', 'run.json'), JSON.stringify(other));
    await expect(cli(['compare', join(root, 'a'), join(root, 'judge')])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('cannot compare runs of different tasks: gec'),
    });

    // A run.json whose suite no longer validates says so, instead of being read half-way.
    await mkdir(join(root, 'old'));
    await writeFile(
      join(root, 'old', 'run.json'),
      JSON.stringify({ ...base.run, suite: { ...base.run.suite, task: 'qa' } }),
    );
    await expect(cli(['compare', join(root, 'a'), join(root, 'old')])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/run\.json: the run's suite does not validate with this Assay/),
    });
  }, 180_000);
});

describe('the comparison a report writes with the previous run', () => {
  it('is the comparison of the two runs’ whole results, byte for byte', async () => {
    const { base, candidate } = sides();
    // What a comparison does not read: outputs, details, raw text, spend over several stages.
    for (const r of [...base.results, ...candidate.results]) {
      r.details = { path: ['small', 'expert'], note: `details of ${r.itemId}` };
      r.raw = `raw text of ${r.itemId}`;
      r.stages.repair = {
        calls: 1,
        cachedCalls: 1,
        costUsd: 0.0003,
        savedUsd: 0.0001,
        latencyMs: 7,
        usage: { input: 3, output: 1, cached: 3 },
      };
    }
    const dir = await tempDir();
    const store = new LocalRunStore(dir);
    await store.createRun({ ...candidate.run, status: 'running' });
    // Stores give results in completion order, not report order.
    for (const r of [...candidate.results].reverse()) await store.recordResult(r);
    const history = {
      getRun: async () => base.run,
      previousRun: async () => base.run,
      latestRun: async () => base.run,
      results: async function* () {
        yield* [...base.results].reverse();
      },
    };
    const { report } = await writeRunReport(
      { runStore: store, reports: new FolderBlobStore(dir), history },
      candidate.run.runId,
    );
    const expected = compareRuns(
      { run: base.run, results: reportOrder(base.results) },
      { run: candidate.run, results: reportOrder(candidate.results) },
    );
    expect(expected.items.paired).toBe(10);
    expect(expected.cost.candidate).toBeGreaterThan(0);
    expect(await readFile(join(dir, 'comparison.json'), 'utf8')).toBe(
      `${JSON.stringify(expected, null, 2)}\n`,
    );
    expect(await readFile(join(dir, 'comparison.txt'), 'utf8')).toBe(renderComparisonText(expected));
    expect(report.comparison).toEqual(comparisonSummary(expected));
  });
});
