/**
 * A variant that fails more items is not promoted as better: `assay run` on the shipped sweep
 * whose two pairwise judges differ only in `inconsistent` (a tie, or a failure), through the
 * command's binary. The failing variant scores about half the pairs and is as accurate on them
 * as the baseline: its paired accuracy delta is 0 with McNemar p = 1, its coverage delta is
 * shown with its interval, the coverage guard fails it, it is off the Pareto front, and
 * `assay compare` of the two runs says the same.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Comparison } from '../../shared/reports/compare-runs.js';
import type { SweepReport } from '../../shared/sweeps/sweep.js';
import { assayCli, tempDir } from '../helpers.js';

describe('paired means paired, end to end', { timeout: 120_000 }, () => {
  it('the failing variant: not promoted, delta 0 on the items both scored, its coverage delta shown', async () => {
    const dir = await tempDir('assay-paired-');
    const out = join(dir, 'out');
    const { stdout } = await assayCli(
      ['run', 'examples/pairwise-failures.suite.json', '--simulate', '--out', out, '--no-progress'],
      dir,
    );
    const report = JSON.parse(await readFile(join(out, 'sweep.json'), 'utf8')) as SweepReport;
    const fail = report.variants.find((v) => v.name === 'fail')!;
    const tie = report.variants.find((v) => v.name === 'tie')!;
    expect(tie.coverage).toMatchObject({ value: 1, n: 49 });
    expect(fail.coverage!.value!).toBeLessThan(0.8);
    // Over its own scored items it ranks first — and says so — but it is not on the front.
    expect(report.rankBy.over).toMatch(/own scored items/);
    expect(fail.rank).toBe(1);
    expect(fail.pareto).toBe(false);

    const label = fail.comparison!.scores.label!;
    const coverage = label.coverage!;
    expect(coverage.n).toBe(49);
    expect(coverage.scored).toEqual({ base: 49, candidate: Math.round(fail.coverage!.value! * 49) });
    expect(coverage.delta).toBeCloseTo(fail.coverage!.value! - 1, 10);
    expect(coverage.ci[1]).toBeLessThan(0);
    expect(coverage.interval).toBe('newcombe');
    // On the items both scored the two judges gave the same verdicts: no difference at all.
    expect(label.deltas.accuracy).toMatchObject({ delta: 0, pValue: 1, interval: 'newcombe' });
    expect(label.mcnemarPValue).toBe(1);
    expect(label.deltas.accuracy!.ci[0]).toBeLessThan(0);
    expect(label.deltas.accuracy!.ci[1]).toBeGreaterThan(0);

    expect(fail.verdict).toBe('not promoted');
    expect(fail.gate!.failed).toEqual([
      'delta accuracy > 0 with p < 0.05',
      'coverage not below the baseline (implicit)',
    ]);
    expect(stdout).toContain('ranking and Pareto front over: each variant');
    expect(stdout).toMatch(/label: coverage \d+\/49 vs 49\/49 Δ -0\.\d+ \[-0\.\d+, -0\.\d+\]/);
    expect(stdout).toContain('lower coverage: fail scored fewer items than the baseline beyond chance');
    expect(stdout).toContain('FAIL  coverage not below the baseline (implicit)');

    // assay compare of the two runs: the same pairing, in the terminal's words.
    const runs = (await readdir(out)).filter((d) => d.startsWith('pairwise-failures.')).sort();
    const [failRun, tieRun] = runs.map((d) => join(out, d));
    const compared = await assayCli(['compare', tieRun!, failRun!, '--out', join(dir, 'cmp')], dir);
    expect(compared.stdout).toMatch(
      /coverage \(scored \/ paired items\): base 49\/49 \(1\.000\), candidate \d+\/49/,
    );
    expect(compared.stdout).toContain('the candidate scores fewer items beyond chance');
    expect(compared.stdout).toMatch(/accuracy\s+0\.\d+\s+0\.\d+\s+±0\.000/);
    const json = JSON.parse(await readFile(join(dir, 'cmp', 'comparison.json'), 'utf8')) as Comparison;
    expect(json.scores.label!.n).toBe(coverage.scored.candidate);
    expect(json.scores.label!.mcnemar).toMatchObject({ b: 0, c: 0, pValue: 1 });
  });
});
