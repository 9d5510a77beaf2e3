import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { runSuite } from '../../../cli/local-run.js';
import { scoringRun } from '../../../cli/score.js';
import {
  bootstrapAllowed,
  type ClassificationMetrics,
  proportionInterval,
} from '../../../shared/lib/metrics/index.js';
import { EXAMPLE_DATA, REPO, tempDir } from '../../helpers.js';

const run = promisify(execFile);
const FIXTURES = join(REPO, 'test', 'fixtures', 'score');
const assay = (args: string[]) =>
  run(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args], { cwd: REPO });

async function score(flags: Parameters<typeof scoringRun>[0]) {
  const { suite, suiteDir, dataset } = await scoringRun(flags);
  const { outcome } = await runSuite(suite, suiteDir, dataset, {
    outDir: await tempDir(),
    cachePath: join(await tempDir(), 'cache.jsonl'),
  });
  if (outcome.status !== 'written') throw new Error('not aggregated');
  return outcome.report;
}

/**
 * The metrics written then, with what reports changed since: the positive class's name (its
 * precision, recall and F1 were there already, and unchanged), and the intervals — a proportion's
 * is Wilson's with a continuity correction (binary accuracy has one now), and a bootstrap interval
 * is kept only from its figure's minimum number of items on. A bootstrap interval's resamples are
 * now drawn as confusion matrices (the same distribution as resampled rows, other draws), so its
 * ends are compared apart, to within what 1,000 resamples vary by ({@link bootstrapEnds}).
 */
function withPositiveClass(metrics: {
  n: number;
  errors: number;
  accuracy: number;
  binary: { accuracy: number; positive: Record<string, unknown> };
  ci: Record<string, unknown>;
}): unknown {
  const n = metrics.n - metrics.errors;
  const booted = Object.entries(metrics.ci).filter(([key]) => key !== 'accuracy' && bootstrapAllowed(key, n));
  return {
    ...metrics,
    binary: { ...metrics.binary, positive: { label: 'TP/TN', ...metrics.binary.positive } },
    ci: {
      accuracy: proportionInterval(Math.round(metrics.accuracy * n), n),
      binaryAccuracy: proportionInterval(Math.round(metrics.binary.accuracy * n), n),
      ...Object.fromEntries(booted.map(([key]) => [key, expect.any(Array)])),
    },
  };
}

/** Each bootstrap interval of `actual` has the ends of `before`'s to within 0.02 (here ±0.12 wide). */
function bootstrapEnds(actual: { ci: Record<string, unknown> }, before: { ci: Record<string, unknown> }) {
  const booted = Object.keys(actual.ci).filter((key) => key !== 'accuracy' && key !== 'binaryAccuracy');
  expect(booted.length).toBeGreaterThan(0);
  for (const key of booted) {
    const [low, high] = actual.ci[key] as [number, number];
    const [lowThen, highThen] = before.ci[key] as [number, number];
    expect(Math.abs(low - lowThen), `${key}'s lower end`).toBeLessThan(0.02);
    expect(Math.abs(high - highThen), `${key}'s upper end`).toBeLessThan(0.02);
  }
}

describe('assay score', () => {
  it('reproduces hand-computed metrics, with a missing prediction as an Error row', async () => {
    const report = await score({
      gold: join(FIXTURES, 'gold.csv'),
      predictions: join(FIXTURES, 'predictions.csv'),
    });
    // Rows used (idx 6 has no prediction → no_output, excluded): 7 pairs, 5 correct (0,1,3,5,7).
    const m = report.metrics as ClassificationMetrics;
    expect(m.n).toBe(7);
    expect(m.errors).toBe(1);
    expect(m.accuracy).toBeCloseTo(5 / 7, 12);
    // TP: P 2/3 R 2/3; FP1: 1/1; FP2: P 1 R 1/2; FP3: P 1/2 R 1 → F1 2/3, 1, 2/3, 2/3.
    expect(m.perClass.TP).toMatchObject({ precision: 2 / 3, recall: 2 / 3, support: 3 });
    expect(m.perClass.FP2!.f1).toBeCloseTo(2 / 3, 12);
    expect(m.macroF1).toBeCloseTo(0.75, 12);
    // Binary (TP,TN positive): positive F1 2/3, negative P 3/4 R 3/4 → F1 3/4; macro = 17/24.
    expect(m.binary!.accuracy).toBeCloseTo(5 / 7, 12);
    expect(m.binary!.f1).toBeCloseTo(17 / 24, 12);
    // po = 5/7, pe = (3·3 + 1·1 + 2·1 + 1·2)/49 = 2/7 → kappa = (3/7)/(5/7) = 0.6.
    expect(m.kappa).toBeCloseTo(0.6, 12);
    expect(m.confusion.FP2).toEqual({ FP1: 0, FP2: 1, FP3: 0, TP: 1 });
    // idx 9 has no gold row: reported, not dropped.
    expect(report.counts).toMatchObject({
      items: 9,
      scored: 7,
      failed: 2,
      invalidRows: 1,
      errors: 1,
      byFailure: { no_output: 1, invalid_row: 1 },
    });
    expect(report.scores.label!.unscored).toEqual({ no_output: 1, invalid_row: 1 });
    // No model was called: no backends, not simulated, latency n/a.
    expect(report).toMatchObject({ backends: [], simulated: false, latencyMs: { p50: null } });
  });

  it('gives the figures Assay gave before task families on the AQUA English set (same predictions)', async () => {
    const before = JSON.parse(await readFile(join(FIXTURES, 'aqua-en-report-v1.json'), 'utf8'));
    const report = await score({
      gold: join(EXAMPLE_DATA, 'gold_tp_fp3_fp2_fp1_en.csv'),
      predictions: join(FIXTURES, 'aqua-en-predictions.csv'),
    });
    expect(report.metrics).toEqual(withPositiveClass(before.metrics));
    bootstrapEnds(report.metrics as unknown as { ci: Record<string, unknown> }, before.metrics);
    expect(report.counts).toEqual(before.counts);
  });

  it('loads the AQUA gold files unedited through the CLI, and refuses to score a gold file against itself', async () => {
    const out = await tempDir();
    const gold = join(EXAMPLE_DATA, 'gold_en.csv');
    const failed = await assay([
      'score',
      '--gold',
      gold,
      '--predictions',
      gold,
      '--out',
      out,
      '--no-progress',
    ]).then(
      () => undefined,
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain('cannot tell which column of gold_en.csv holds the predictions');
    expect(failed?.stderr).toContain('"label" is the gold column of gold_en.csv');
    expect(failed?.stderr).toContain('--pred-column');
    // Naming the gold column as the prediction of the same file is refused too.
    const named = await assay([
      'score',
      '--predictions',
      gold,
      '--pred-column',
      'label',
      '--out',
      out,
      '--no-progress',
    ]).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(named?.code).toBe(1);
    expect(named?.stderr).toContain('--pred-column label is the gold column of gold_en.csv');
  }, 60_000);

  it("never scores a run's labeled.csv gold column against the gold, and says which columns it read", async () => {
    const dir = await tempDir();
    // The layout of a run's labeled.csv: the gold copied as `gold`, the judge's label as `label`.
    const labeled = join(dir, 'labeled.csv');
    await writeFile(
      labeled,
      [
        '\uFEFFidx,row,src,tgt,gold,status,failure,label,label.by,reason,output',
        '0,1,I has a cat.,I have a cat.,TP,scored,,TP,sim:x,,',
        '1,2,She go home.,She goes home.,TP,scored,,FP1,sim:x,,',
        '2,3,We was late.,We were late.,FP2,scored,,FP2,sim:x,,',
        '3,4,It are fine.,It is fine.,FP3,scored,,TP,sim:x,,',
      ].join('\r\n'),
    );
    const gold = join(dir, 'gold.csv');
    await writeFile(
      gold,
      'idx,src,tgt,label\n0,I has a cat.,I have a cat.,TP\n1,She go home.,She goes home.,TP\n2,We was late.,We were late.,FP2\n3,It are fine.,It is fine.,FP3\n',
    );
    const refused = await assay([
      'score',
      '--gold',
      gold,
      '--predictions',
      labeled,
      '--out',
      join(dir, 'a'),
      '--no-progress',
    ]).then(
      () => undefined,
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(refused?.code).toBe(1);
    expect(refused?.stderr).toContain('cannot tell which column of labeled.csv holds the predictions');
    expect(refused?.stderr).toContain('"gold", "label" are there but never taken for the prediction');
    expect(refused?.stderr).toContain('--pred-column');

    const { stdout } = await assay([
      'score',
      '--gold',
      gold,
      '--predictions',
      labeled,
      '--pred-column',
      'label',
      '--out',
      join(dir, 'b'),
      '--no-progress',
    ]);
    expect(stdout).toContain(
      'scoring: prediction column "label" of labeled.csv against gold column "label" of gold.csv, joined on "idx"',
    );
    // Two of four right (rows 0 and 2), not the 1.000 of the gold against itself.
    const report = JSON.parse(await readFile(join(dir, 'b', 'report.json'), 'utf8'));
    expect(report.metrics.accuracy).toBeCloseTo(2 / 4, 12);
  }, 60_000);

  it("scores a declared judge's given answers without an API key (no model is called)", async () => {
    const dir = await tempDir();
    const replies = parse(await readFile(join(EXAMPLE_DATA, 'replies.csv'), 'utf8'), {
      columns: true,
    }) as { id: string; human: string }[];
    // Every reply labeled by its gold, except the first, labeled rude.
    const rows = replies.map((r, i) => `${r.id},${i === 0 ? 'rude' : r.human}`);
    const predictions = join(dir, 'predictions.csv');
    await writeFile(predictions, `id,pred\n${rows.join('\n')}\n`);
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k)));
    const { stdout } = await run(
      process.execPath,
      [
        join(REPO, 'bin', 'assay.mjs'),
        'score',
        '--suite',
        join(REPO, 'examples', 'reply-tone.suite.json'),
        '--gold',
        join(EXAMPLE_DATA, 'replies.csv'),
        '--predictions',
        predictions,
        '--out',
        join(dir, 'out'),
        '--no-progress',
      ],
      { cwd: REPO, env },
    );
    expect(stdout).toContain(
      'prediction column "pred" of predictions.csv against gold column "human" of replies.csv',
    );
    expect(stdout).toContain(`${replies.length} scored, 0 failed`);
    const report = JSON.parse(await readFile(join(dir, 'out', 'report.json'), 'utf8'));
    expect(report.metrics.accuracy).toBeCloseTo((replies.length - 1) / replies.length, 12);
    expect(report.cost.calls).toBe(0);
  }, 60_000);

  it('with nothing scored, says n/a (null in report.json), never 0', async () => {
    const dir = await tempDir();
    const predictions = join(dir, 'bad.csv');
    await writeFile(predictions, 'idx,pred\n0,maybe\n1,perhaps\n');
    const out = join(dir, 'out');
    // Nothing scored ends the command with an error, after the report is written.
    const failed = await assay([
      'score',
      '--gold',
      join(FIXTURES, 'gold.csv'),
      '--predictions',
      predictions,
      '--out',
      out,
      '--no-progress',
    ]).then(
      () => undefined,
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain('nothing was scored: all 8 items failed');
    const stdout = failed?.stdout ?? '';
    expect(stdout).toContain('0 scored, 8 failed');
    expect(stdout).toMatch(
      /label: accuracy n\/a {2}macro F1 n\/a {2}binary macro F1 n\/a {2}F1 of TP\/TN n\/a {2}Cohen's kappa n\/a {2}\(n 0, unscored 8\)/,
    );
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
    expect(report.metrics).toMatchObject({
      n: 0,
      accuracy: null,
      macroF1: null,
      kappa: null,
      binary: { f1: null, positive: { label: 'TP/TN', f1: null } },
    });
    expect(report.scores.label.metrics.accuracy).toEqual({ value: null, n: 0 });
    expect(report.scores.label.metrics.positiveF1).toEqual({ value: null, n: 0, name: 'F1 of TP/TN' });
    expect(report.scores.label.unscored).toEqual({ parse: 2, no_output: 6 });
    expect(await readFile(join(out, 'report.txt'), 'utf8')).toMatch(/accuracy +n\/a/);
  }, 60_000);

  it('says clearly which file is missing, without a stack trace', async () => {
    const out = await tempDir();
    const failed = assay([
      'score',
      '--gold',
      'missing.csv',
      '--predictions',
      join(FIXTURES, 'predictions.csv'),
      '--out',
      out,
    ]);
    await expect(failed).rejects.toMatchObject({ code: 1 });
    const { stderr } = await failed.catch((e: { stderr: string }) => e);
    expect(stderr).toContain('missing.csv: no such file; give the gold file (.csv or .jsonl)');
    expect(stderr).not.toMatch(/\bat .*\.(ts|js):\d+/);
  }, 60_000);
});
