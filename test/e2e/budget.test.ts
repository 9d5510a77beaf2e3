/**
 * A budget, as a user meets it: `assay run` stops calling once the run has spent its budget,
 * says so, and the same command with a higher budget resumes the same run, scoring only the
 * items the budget stopped.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { REPO, suiteInput, tempDir } from '../helpers.js';

const exec = promisify(execFile);

describe('run.budgetUsd', { timeout: 120_000 }, () => {
  it('stops the run at its budget, and a higher budget resumes the items it stopped', async () => {
    const dir = await tempDir('assay-budget-');
    const suitePath = join(dir, 'budget.suite.json');
    const write = (budgetUsd: number) =>
      writeFile(
        suitePath,
        JSON.stringify(
          suiteInput({
            name: 'budget',
            dataset: { path: join(REPO, 'examples', 'data', 'gold_tp_fp3_fp2_fp1_en.csv') },
            // A simulated gpt-4o is priced as gpt-4o: each answer costs a fraction of a cent.
            backends: ['sim:gpt-4o'],
            run: { concurrency: 1, sample: { n: 10, seed: 2 }, budgetUsd },
            sim: { latencyMs: 0 },
          }),
        ),
      );
    const run = () =>
      exec(
        process.execPath,
        [join(REPO, 'bin', 'assay.mjs'), 'run', suitePath, '--out', join(dir, 'run'), '--no-progress'],
        {
          cwd: dir,
          env: { ...process.env, ASSAY_CACHE_DIR: join(dir, 'cache') },
        },
      );
    const report = async () => JSON.parse(await readFile(join(dir, 'run', 'report.json'), 'utf8')) as Report;

    // A call reserves its most cost (about $0.005 for gpt-4o at 400 output tokens) and costs
    // about $0.0014: items run until what is spent leaves no room for the next reservation.
    await write(0.01);
    const first = await run();
    const stopped = await report();
    const budget = stopped.counts.byFailure.budget ?? 0;
    // One item at a time: items run while the budget has room for a call, the rest are stopped.
    expect(stopped.counts.scored).toBeGreaterThanOrEqual(1);
    expect(budget).toBeGreaterThanOrEqual(1);
    expect(stopped.counts.scored + budget).toBe(10);
    expect(stopped.cost.totalUsd).toBeLessThanOrEqual(0.01);
    expect(first.stdout).toContain(`!! ${budget} items were not scored: the run's budget was spent`);

    await write(1);
    const second = await run();
    const resumed = await report();
    expect(resumed.runId).toBe(stopped.runId);
    expect(resumed.counts).toMatchObject({ items: 10, scored: 10, failed: 0 });
    expect(second.stdout).toContain('budget: 10 scored, 0 failed');
    expect(second.stdout).not.toContain('were not scored');
    // Only the stopped items were paid for the second time round.
    expect(resumed.cost.calls).toBe(10);
  });
});
