/**
 * A sequential gate as a user runs it: `assay run` on the example sweep with `--simulate` stops
 * the clearly worse variant early; sweep.json gives its verdict, the items it used and the calls
 * it saved; every dataset item still ends as exactly one result; running it again resumes the
 * same runs and settles at the same item.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SweepReport } from '../../shared/sweeps/sweep.js';
import { AQUA_FILES, assayCli, tempDir } from '../helpers.js';

const ITEMS = AQUA_FILES['gold_tp_fp3_fp2_fp1_en.csv'];

async function sweepIn(runs: string): Promise<{ dir: string; report: SweepReport }> {
  const dirs = (await readdir(runs)).filter((d) => d.includes('-sweep-'));
  expect(dirs).toHaveLength(1);
  const dir = join(runs, dirs[0]!);
  return { dir, report: JSON.parse(await readFile(join(dir, 'sweep.json'), 'utf8')) as SweepReport };
}

async function resultsOf(
  runDir: string,
): Promise<{ itemId: string; failure?: { kind: string; message: string } }[]> {
  const text = await readFile(join(runDir, 'results.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

describe('a sequential gate, end to end', { timeout: 180_000 }, () => {
  it('stops the clearly worse variant early, says what it saved, and keeps one result per item', async () => {
    const dir = await tempDir('assay-sequential-');
    const runs = join(dir, 'runs');
    const args = ['run', 'examples/gec-sequential.suite.json', '--simulate', '--runs', runs, '--no-progress'];
    const { stdout } = await assayCli(args, dir);
    expect(stdout).toMatch(/noisy: NOT PROMOTED\n {4}sequential: REJECT settled after \d+ items/);

    const { dir: sweepDir, report } = await sweepIn(runs);
    expect(report.gate?.sequential).toEqual({ alpha: 0.05, seed: 1 });
    const noisy = report.variants.find((v) => v.name === 'noisy')!;
    expect(noisy.verdict).toBe('not promoted');
    expect(noisy.sequential).toMatchObject({ verdict: 'reject', alpha: 0.05, items: ITEMS });
    const s = noisy.sequential!;
    expect(s.itemsUsed).toBeLessThan(ITEMS);
    expect(s.itemsUsed + s.itemsSkipped).toBe(ITEMS);
    expect(s.callsSaved).toBeGreaterThan(0);
    expect(s.costSavedUsd).toBeGreaterThan(0);
    expect(s.settledAfter).toBeLessThanOrEqual(s.itemsUsed);
    expect(noisy.counts).toMatchObject({ items: ITEMS, scored: s.itemsUsed });
    // The baseline is scored in full and judged by no gate.
    const base = report.variants.find((v) => v.name === 'gpt-4o-mini')!;
    expect(base).toMatchObject({ verdict: 'baseline', counts: { items: ITEMS, scored: ITEMS } });
    expect(base.sequential).toBeUndefined();

    // Every dataset item ends as exactly one result; the spared ones say why, no model called.
    const runDir = join(runs, (await readdir(runs)).find((d) => d.startsWith('gec-sequential-en.noisy-'))!);
    const results = await resultsOf(runDir);
    expect(results).toHaveLength(ITEMS);
    expect(new Set(results.map((r) => r.itemId)).size).toBe(ITEMS);
    const spared = results.filter((r) => r.failure?.kind === 'gate_settled');
    expect(spared).toHaveLength(s.itemsSkipped);
    expect(spared[0]!.failure!.message).toMatch(
      /^the sequential gate settled: reject after \d+ of 256 items/,
    );

    const html = await readFile(join(sweepDir, 'sweep.html'), 'utf8');
    expect(html).toContain('sequential-gate');
    expect(await readFile(join(sweepDir, 'sweep.txt'), 'utf8')).toContain(
      `${s.itemsSkipped} items not called: ${s.callsSaved} model calls`,
    );

    // Again: the same runs resume (nothing new is called) and the verdict settles at the same item.
    const folders = (await readdir(runs)).sort();
    await assayCli(args, dir);
    expect((await readdir(runs)).sort()).toEqual(folders);
    const again = (await sweepIn(runs)).report.variants.find((v) => v.name === 'noisy')!;
    expect(again.sequential).toEqual(noisy.sequential);
    expect(await resultsOf(runDir)).toHaveLength(ITEMS);
  });
});
