/**
 * `assay score --results`: another tool's results file (promptfoo's results.json, OpenAI Evals
 * output items) scored as Assay's own results, with the figures pinned by hand from the fixtures
 * (see test/fixtures/tool-results/README.md for their verdicts).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { REPO, tempDir } from '../helpers.js';

const FIXTURES = join(REPO, 'test', 'fixtures', 'tool-results');
const noKeys = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k)));

const assay = (cwd: string, ...args: string[]) =>
  promisify(execFile)(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args], {
    cwd,
    env: { ...noKeys, ASSAY_CACHE_DIR: join(cwd, 'cache') },
  });

/** The report.json of the variant run whose folder name has `variant`. */
async function variantReport(out: string, variant: string): Promise<Report> {
  const folder = (await readdir(out)).find((name) => name.includes(`.${variant}-`));
  if (!folder) throw new Error(`no run folder for ${variant} in ${out}`);
  return JSON.parse(await readFile(join(out, folder, 'report.json'), 'utf8')) as Report;
}

interface SweepJson {
  baseline: string;
  variants: {
    name: string;
    comparison?: {
      paired: number;
      scores: {
        pass: {
          coverage: { base: number; candidate: number };
          deltas: { passRate: { delta: number; ci: [number, number]; pValue: number } };
          mcnemarPValue: number;
          flipped: { fixed: number; broken: number };
        };
      };
    };
  }[];
}

const sweepOf = async (out: string) =>
  JSON.parse(await readFile(join(out, 'sweep.json'), 'utf8')) as SweepJson;

// Wilson's interval with a continuity correction, worked out by hand (z = 1.959964):
// 3/4 → [0.2194, 0.9868]; 1/4 → [0.0132, 0.7806]; 2/4 → [0.0919, 0.9081]; 4/5 → [0.2988, 0.9895];
// 0/2 → [0, 0.8021].
const close = (ci: readonly number[] | undefined, lo: number, hi: number) => {
  expect(ci).toBeDefined();
  expect(ci![0]).toBeCloseTo(lo, 4);
  expect(ci![1]).toBeCloseTo(hi, 4);
};

describe('assay score --results', { timeout: 180_000 }, () => {
  it('a promptfoo results.json with repeats: pass rate, pass^k and flip rate per prompt, and the paired comparison', async () => {
    const dir = await tempDir('assay-score-results-');
    const run = await assay(
      dir,
      'score',
      '--results',
      join(FIXTURES, 'promptfoo-repeats.json'),
      '--out',
      'out',
      '--no-progress',
    );
    const screen = run.stdout;
    expect(screen).toContain(
      'scoring: 24 promptfoo results of promptfoo-repeats.json: 2 configurations, 4 tests, up to 3 repeats a test, 1 error',
    );
    expect(screen).toMatch(
      /terse +0\.750 \[0\.219, 0\.987\] +4 +0 +1 +0\.333 \[0\.000, 1\.000\] \(n 3\) +0\.250/,
    );
    expect(screen).toMatch(
      /verbose +0\.250 \[0\.013, 0\.781\] +4 +0 +0 +0\.250 \[0\.000, 0\.750\] \(n 4\) +0\.250/,
    );
    expect(screen).toContain('pass^3 0.333');

    const out = join(dir, 'out');
    const terse = await variantReport(out, 'terse');
    // Each item is a test; its value the majority of its three repeats: P, P, F, P.
    expect(terse.counts).toMatchObject({ items: 4, scored: 4, failed: 0 });
    expect(terse.scores.pass!.metrics.passRate).toMatchObject({ value: 0.75, n: 4 });
    close(terse.scores.pass!.metrics.passRate!.ci, 0.2194, 0.9868);
    const reliability = terse.scores.pass!.reliability!;
    expect(reliability.repeats).toBe(3);
    // Repeats disagree on test 1 only (test 3's two values agree): 1 of 4.
    expect(reliability.flipRate).toBe(0.25);
    // Per test: 1, 2/3, 0, 2/2 passing; pass^3 over the three tests with three values: 1, 0, 0;
    // pass@3: 1, 1, 0; test 3 lost a repeat to the error.
    expect(reliability.passes).toMatchObject({
      k: 3,
      passRate: { value: (1 + 2 / 3 + 0 + 1) / 4, n: 4 },
      passAllK: { value: 1 / 3, n: 3 },
      passAnyK: { value: 2 / 3, n: 3 },
      short: 1,
    });
    const verbose = await variantReport(out, 'verbose');
    expect(verbose.scores.pass!.metrics.passRate).toMatchObject({ value: 0.25, n: 4 });
    close(verbose.scores.pass!.metrics.passRate!.ci, 0.0132, 0.7806);
    expect(verbose.scores.pass!.reliability!.passes).toMatchObject({
      passAllK: { value: 0.25, n: 4 },
      passAnyK: { value: 0.5, n: 4 },
      short: 0,
    });

    // verbose against terse on the same four tests: 0.25 − 0.75; tests 1 and 3 broken, none
    // fixed: McNemar's exact p = 2 × 0.5² = 0.5.
    const sweep = await sweepOf(out);
    expect(sweep.baseline).toBe('terse');
    const comparison = sweep.variants.find((v) => v.name === 'verbose')!.comparison!;
    expect(comparison.paired).toBe(4);
    const pass = comparison.scores.pass;
    expect(pass.deltas.passRate.delta).toBeCloseTo(-0.5, 12);
    expect(pass.deltas.passRate.ci[0]).toBeLessThan(-0.5);
    expect(pass.deltas.passRate.ci[1]).toBeGreaterThan(-0.5);
    expect(pass.mcnemarPValue).toBeCloseTo(0.5, 12);
    expect(pass.flipped).toMatchObject({ fixed: 0, broken: 2 });

    // The errored repeat is kept: test 3's second repeat has no value, with the error in results.
    const folder = (await readdir(out)).find((name) => name.includes('.terse-'))!;
    const csv = await readFile(join(out, folder, 'labeled.csv'), 'utf8');
    const test3 = csv.split('\n').find((line) => line.startsWith('3,4,'))!;
    // Repeats r1, r2, r3: the second errored (no value), its rows and its error kept.
    expect(test3).toContain(',true,given,true,,true,');
    expect(test3).toContain('"results.results[6], results.results[14], results.results[22]"');
    expect(test3).toContain('results.results[14]: API error 500: upstream timed out');
  });

  it('OpenAI Evals output items: an errored item is a failed item with its reason, not a fail', async () => {
    const dir = await tempDir('assay-score-results-');
    const run = await assay(
      dir,
      'score',
      '--results',
      join(FIXTURES, 'openai-evals-output-items.jsonl'),
      '--out',
      'out',
      '--no-progress',
    );
    expect(run.stdout).toMatch(/run_base +0\.500 \[0\.092, 0\.908\] +4 +1 +1/);
    expect(run.stdout).toMatch(/run_new +0\.800 \[0\.299, 0\.989\] +5 +0 +0/);
    const out = join(dir, 'out');
    const base = await variantReport(out, 'run_base');
    expect(base.counts).toMatchObject({
      items: 5,
      scored: 4,
      failed: 1,
      errors: 1,
      byFailure: { provider: 1 },
    });
    expect(base.scores.pass!.metrics.passRate).toMatchObject({ value: 0.5, n: 4 });
    close(base.scores.pass!.metrics.passRate!.ci, 0.0919, 0.9081);
    expect(base.scores.pass!.reliability).toBeUndefined();
    const folder = (await readdir(out)).find((name) => name.includes('.run_base-'))!;
    expect(await readFile(join(out, folder, 'errors.txt'), 'utf8')).toContain(
      'failure: provider: Rate limit reached for gpt-4o-mini',
    );
    const fresh = await variantReport(out, 'run_new');
    expect(fresh.scores.pass!.metrics.passRate).toMatchObject({ value: 0.8, n: 5 });
    close(fresh.scores.pass!.metrics.passRate!.ci, 0.2988, 0.9895);

    // Paired on items 1–4 (item 5 has no verdict in run_base): 0.5 → 0.75, item 3 fixed, McNemar
    // p = 1; the coverage shows run_base's error: 4/5 against 5/5.
    const pass = (await sweepOf(out)).variants.find((v) => v.name === 'run_new')!.comparison!.scores.pass;
    expect(pass.deltas.passRate.delta).toBeCloseTo(0.25, 12);
    expect(pass.mcnemarPValue).toBe(1);
    expect(pass.flipped).toMatchObject({ fixed: 1, broken: 0 });
    expect(pass.coverage).toMatchObject({ base: 0.8, candidate: 1 });
  });

  it("promptfoo's published export: a configuration per provider, every test failed", async () => {
    const dir = await tempDir('assay-score-results-');
    const run = await assay(
      dir,
      'score',
      '--results',
      join(FIXTURES, 'promptfoo-sample-export.json'),
      '--format',
      'promptfoo',
      '--out',
      'out',
      '--no-progress',
    );
    expect(run.stdout).toContain('2 configurations, 2 tests, 0 errors');
    expect(run.stdout).toMatch(/openai:gpt-5 +0\.000 \[0\.000, 0\.802\] +2 +0 +0/);
    expect(run.stdout).toMatch(/openai:gpt-5-mini +0\.000 \[0\.000, 0\.802\] +2 +0 +0/);
    const out = join(dir, 'out');
    // promptIdx 0 (gpt-5) is the baseline though its rows come second in the file.
    expect((await sweepOf(out)).baseline).toBe('openai-gpt-5');
    const mini = await variantReport(out, 'openai-gpt-5-mini');
    expect(mini.counts).toMatchObject({ items: 2, scored: 2, failed: 0 });
    expect(mini.scores.pass!.metrics.passRate).toMatchObject({ value: 0, n: 2 });
    close(mini.scores.pass!.metrics.passRate!.ci, 0, 0.8021);
    expect(mini.predictions).toBe(
      'verdicts from promptfoo-sample-export.json (promptfoo), config openai:gpt-5-mini',
    );
  });

  it('a file of verdicts scored with --task verdicts: a blank verdict is no output, not a fail', async () => {
    const dir = await tempDir('assay-score-results-');
    await writeFile(join(dir, 'v.csv'), 'id,input,verdict,reason\n1,a,pass,\n2,b,fail,too long\n3,c,,\n');
    const run = await assay(
      dir,
      'score',
      '--task',
      'verdicts',
      '--predictions',
      'v.csv',
      '--out',
      'out',
      '--no-progress',
    );
    expect(run.stdout).toContain('prediction column "verdict" of v.csv');
    const report = JSON.parse(await readFile(join(dir, 'out', 'report.json'), 'utf8')) as Report;
    expect(report.counts).toMatchObject({ items: 3, scored: 2, failed: 1, byFailure: { no_output: 1 } });
    expect(report.scores.pass!.metrics.passRate).toMatchObject({ value: 0.5, n: 2 });
  });

  it('a malformed results file: the error names the file, the row and the field, and nothing is written', async () => {
    const dir = await tempDir('assay-score-results-');
    const text = await readFile(join(FIXTURES, 'promptfoo-repeats.json'), 'utf8');
    const doc = JSON.parse(text) as { results: { results: Record<string, unknown>[] } };
    delete doc.results.results[5]!.provider;
    await writeFile(join(dir, 'broken.json'), JSON.stringify(doc));
    const failed = await assay(dir, 'score', '--results', 'broken.json', '--out', 'out').catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toContain(
      'broken.json: result 6 (results.results[5]): field provider is missing',
    );
    expect(existsSync(join(dir, 'out'))).toBe(false);
  });
});
