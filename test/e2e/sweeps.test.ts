/**
 * Sweeps as a user runs them: `assay run` on the example sweeps with `--simulate` (no key)
 * writes a run per variant and the sweep report; a required gate that fails makes the command
 * exit 1 and say why (for CI jobs); running the sweep again resumes it; `assay leaderboard`
 * lists every run of the runs folder.
 */
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LeaderboardTable } from '../../shared/reports/leaderboard.js';
import type { SweepReport } from '../../shared/sweeps/sweep.js';
import { assayCli, REPO, tempDir } from '../helpers.js';

const assay = assayCli;

async function sweepIn(runs: string): Promise<{ dir: string; report: SweepReport }> {
  const dirs = (await readdir(runs)).filter((d) => d.includes('-sweep-'));
  expect(dirs).toHaveLength(1);
  const dir = join(runs, dirs[0]!);
  return { dir, report: JSON.parse(await readFile(join(dir, 'sweep.json'), 'utf8')) as SweepReport };
}

describe('sweeps, end to end', { timeout: 180_000 }, () => {
  it('the GEC backends sweep: a run per variant, ranked, gated; again, it resumes; stricter, it exits 1', async () => {
    const dir = await tempDir('assay-sweep-');
    const runs = join(dir, 'runs');
    const args = ['run', 'examples/gec-backends.suite.json', '--simulate', '--runs', runs, '--no-progress'];
    const { stdout } = await assay(args, dir);

    expect(stdout).toContain('Assay sweep — gec-backends-en (gec), 3 variants');
    expect(stdout).toContain('SIMULATED');
    expect(stdout).toContain('Every required variant passed the gate.');
    const { dir: sweepDir, report } = await sweepIn(runs);
    expect((await readdir(sweepDir)).sort()).toEqual([
      'sweep-record.json',
      'sweep.html',
      'sweep.json',
      'sweep.txt',
    ]);
    expect(report).toMatchObject({
      baseline: 'gpt-4o-mini',
      rankBy: { metric: 'accuracy', better: 'higher' },
    });
    expect(report.variants).toHaveLength(3);
    for (const v of report.variants) {
      expect(v.counts).toMatchObject({ items: 256, scored: 256 });
      expect(v.rankValue?.ci).toHaveLength(2);
      expect(v.per10kUsd).toBeGreaterThan(0);
      expect(v.latencyMs.p50).toBeGreaterThan(0);
      if (v.name === 'gpt-4o-mini') expect(v).toMatchObject({ verdict: 'baseline' });
      else {
        expect(v.verdict).toBe('promoted');
        expect(v.comparison?.paired).toBe(256);
        // The suite's three conditions, and the coverage guard: every variant scored every item.
        expect(v.gate?.conditions.map((c) => [c.condition, c.passed]).slice(3)).toEqual([
          ['coverage not below the baseline (implicit)', true],
        ]);
        expect(v.gate?.conditions.map((c) => c.passed)).toEqual([true, true, true, true]);
      }
    }
    // Ranks follow the figure, best first; the cheapest of the best is on the Pareto front.
    const values = report.variants.map((v) => v.rankValue!.value!);
    expect(values).toEqual([...values].sort((a, b) => b - a));
    expect(report.variants[0]!.rank).toBe(1);
    const cheapest = [...report.variants].sort((a, b) => a.per10kUsd! - b.per10kUsd!)[0]!;
    expect(cheapest.pareto).toBe(true);
    const runFolders = (await readdir(runs)).filter((d) => d.startsWith('gec-backends-en.'));
    expect(runFolders).toHaveLength(3);

    // The same command again resumes every run and rebuilds the same sweep.
    await assay(args, dir);
    expect((await readdir(runs)).filter((d) => d.startsWith('gec-backends-en.'))).toEqual(runFolders);
    const again = await sweepIn(runs);
    expect(again.report.sweepId).toBe(report.sweepId);
    expect(again.report.variants.map((v) => v.rankValue)).toEqual(report.variants.map((v) => v.rankValue));

    // A stricter required gate: the command fails and says which variant and condition.
    const strict = JSON.parse(await readFile(join(REPO, 'examples', 'gec-backends.suite.json'), 'utf8'));
    strict.name = 'gec-backends-strict';
    strict.dataset.path = join(REPO, 'examples', strict.dataset.path);
    strict.gate.conditions = ['accuracy >= baseline', 'cost per 10k <= 3'];
    await writeFile(join(dir, 'strict.suite.json'), JSON.stringify(strict));
    const failed = await assay(
      [
        'run',
        join(dir, 'strict.suite.json'),
        '--simulate',
        '--runs',
        join(dir, 'strict-runs'),
        '--no-progress',
      ],
      dir,
    ).then(
      () => undefined,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stdout).toContain('REQUIRED GATE FAILED for claude-haiku-4-5');
    expect(failed?.stderr).toMatch(/required gate failed for .*claude-haiku-4-5/);
    expect(failed?.stderr).toMatch(/claude-haiku-4-5: cost per 10k <= 3: cost per 10k \d+\.\d+ fails <= 3/);
  });

  it('a sweep with --out: its runs and report in that folder, resumed there, compared there; leaderboard and --changed read it', async () => {
    const dir = await tempDir('assay-sweep-out-');
    const out = join(dir, 'out');
    const args = [
      'run',
      'examples/reply-tone-prompts.suite.json',
      '--simulate',
      '--out',
      out,
      '--no-progress',
    ];
    const { stdout } = await assay(args, dir);
    const runFolders = (await readdir(out)).filter((d) => d.startsWith('reply-tone-prompts.'));
    expect(runFolders.map((d) => d.replace(/-[0-9a-f]+$/, ''))).toEqual([
      'reply-tone-prompts.v1',
      'reply-tone-prompts.v2',
    ]);
    expect((await readdir(out)).filter((d) => !runFolders.includes(d))).toEqual([
      'leaderboard.jsonl',
      'sweep-record.json',
      'sweep.html',
      'sweep.json',
      'sweep.txt',
    ]);
    for (const run of runFolders) expect(stdout).toContain(join(out, run));
    expect(stdout).toContain(`sweep report: ${join(out, 'sweep.txt')} (and sweep.html, sweep.json)`);
    const report = JSON.parse(await readFile(join(out, 'sweep.json'), 'utf8')) as SweepReport;
    expect(report.variants.map((v) => v.runId).sort()).toEqual(runFolders);

    // Again: the same runs resume (nothing scored twice) and the same sweep is rebuilt.
    await assay(args, dir);
    expect((await readdir(out)).filter((d) => d.startsWith('reply-tone-prompts.'))).toEqual(runFolders);
    for (const run of runFolders) {
      const results = await readFile(join(out, run, 'results.jsonl'), 'utf8');
      expect(results.trim().split('\n')).toHaveLength(48);
    }
    const again = JSON.parse(await readFile(join(out, 'sweep.json'), 'utf8')) as SweepReport;
    expect(again.sweepId).toBe(report.sweepId);

    // The folder is a runs folder like any: the leaderboard and --changed read it.
    const board = await assay(['leaderboard', '--runs', out], dir);
    for (const run of runFolders) expect(board.stdout).toContain(run);
    const changed = await assay(
      ['run', '--changed', '--runs', out, 'examples/reply-tone-prompts.suite.json'],
      dir,
    );
    expect(changed.stdout).toMatch(
      /reply-tone-prompts \(.*\): prompts unchanged since reply-tone-prompts\.v/,
    );

    // A fresh sweep into the same folder: each variant's report compares with its previous run.
    await assay([...args, '--fresh'], dir);
    const fresh = JSON.parse(await readFile(join(out, 'sweep.json'), 'utf8')) as SweepReport;
    expect(fresh.sweepId).not.toBe(report.sweepId);
    for (const variant of fresh.variants) {
      expect(runFolders).not.toContain(variant.runId);
      const runReport = JSON.parse(await readFile(join(out, variant.runId, 'report.json'), 'utf8')) as {
        comparison?: { baseRunId: string };
      };
      const previous = report.variants.find((v) => v.name === variant.name)!.runId;
      expect(runReport.comparison?.baseRunId).toBe(previous);
    }
  });

  it('the prompt-version sweep, then assay leaderboard lists the runs of both sweeps', async () => {
    const dir = await tempDir('assay-sweep-lb-');
    const runs = join(dir, 'runs');
    await assay(
      ['run', 'examples/reply-tone-prompts.suite.json', '--simulate', '--runs', runs, '--no-progress'],
      dir,
    );
    await assay(
      [
        'run',
        'examples/gec-backends.suite.json',
        '--simulate',
        '--sample',
        '40',
        '--runs',
        runs,
        '--no-progress',
      ],
      dir,
    );

    const { stdout } = await assay(['leaderboard', '--runs', runs], dir);
    expect(stdout).toContain('SIMULATED: every run here was answered by the simulator');
    for (const suite of ['reply-tone-prompts.v1', 'reply-tone-prompts.v2', 'gec-backends-en.gpt-4o-mini']) {
      expect(stdout).toContain(suite);
    }
    expect(stdout).toMatch(/tone-v2\.md@[0-9a-f]{7}/);
    const { stdout: json } = await assay(
      ['leaderboard', '--runs', runs, '--json', '--dataset', 'replies.csv'],
      dir,
    );
    const { tables } = JSON.parse(json) as { tables: LeaderboardTable[] };
    expect(tables).toHaveLength(1);
    expect(tables[0]!.entries.map((e) => e.suite).sort()).toEqual([
      'reply-tone-prompts.v1',
      'reply-tone-prompts.v2',
    ]);
    expect(tables[0]!.rankedBy).toBe('accuracy');
    expect(tables[0]!.entries[0]!.metrics.accuracy?.ci).toHaveLength(2);
  });

  it('a gate that requires no variant: the end names the variants not promoted, claims no success; one line per prompt change', async () => {
    const dir = await tempDir('assay-sweep-none-');
    await mkdir(join(dir, 'prompts'));
    for (const file of ['tone.md', 'tone-v2.md'])
      await copyFile(join(REPO, 'examples', 'prompts', file), join(dir, 'prompts', file));
    const suite = JSON.parse(await readFile(join(REPO, 'examples', 'reply-tone-prompts.suite.json'), 'utf8'));
    suite.name = 'reply-tone-none-required';
    suite.dataset.path = join(REPO, 'examples', suite.dataset.path);
    // The simulator ties the two prompt versions, so v2 is not strictly better: not promoted.
    suite.gate = { conditions: ['kappa > baseline'] };
    await writeFile(join(dir, 'none.suite.json'), JSON.stringify(suite));
    const out = join(dir, 'out');
    const { stdout } = await assay(
      ['run', join(dir, 'none.suite.json'), '--simulate', '--out', out, '--no-progress'],
      dir,
    );
    const report = JSON.parse(await readFile(join(out, 'sweep.json'), 'utf8')) as SweepReport;
    expect(report.gate).toMatchObject({ required: [], failedRequired: [] });
    expect(report.variants.find((v) => v.name === 'v2')?.verdict).toBe('not promoted');

    const text = await readFile(join(out, 'sweep.txt'), 'utf8');
    for (const shown of [stdout, text]) {
      expect(shown).toContain('required: none');
      expect(shown).not.toContain('Every required variant passed the gate.');
      expect(shown).toContain('No variant was required to pass the gate; not promoted: v2.');
    }
    // v2 uses tone-v2.md where v1 uses tone.md: one change, one line.
    const changes = text.split('\n').filter((line) => /^\s*prompt (changed|added|dropped):/.test(line));
    expect(changes).toEqual(['    prompt changed: tone.md → tone-v2.md']);
  });
});
