/**
 * The automatic comparison after a run knows the dataset's content, as a user meets it: the
 * `assay` binary runs a suite on the simulator, five rows of its dataset are edited, and the
 * next run pairs only the items whose input and gold are unchanged, saying how many changed in
 * comparison.txt, comparison.json, comparison.html and report.json. `assay compare` of a
 * simulated run opens every output with the SIMULATED banner.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import type { Comparison } from '../../shared/reports/compare-runs.js';
import { assayCli, suiteInput, tempDir } from '../helpers.js';

const ROWS = 30;
const EDITED = new Set([2, 7, 13, 21, 28]);

/** A GEC dataset with an id column; `edited` rows have another correction than the first version. */
function dataset(edited: boolean): string {
  const lines = ['idx,src,tgt,label'];
  for (let i = 0; i < ROWS; i += 1) {
    const tgt =
      edited && EDITED.has(i) ? `She went to school on day ${i}.` : `She goes to school on day ${i}.`;
    lines.push(`${i},She go to school on day ${i}.,${tgt},${i % 3 === 0 ? 'FP3' : 'TP'}`);
  }
  return `${lines.join('\n')}\n`;
}

describe('the comparison with the previous run, after the dataset was edited', { timeout: 120_000 }, () => {
  let dir: string;
  let runs: string;
  /** The run before the edit, and the run folder of the one after it. */
  let first: string;
  let folder: string;

  beforeAll(async () => {
    dir = await tempDir('assay-edited-');
    runs = join(dir, 'runs');
    const suitePath = join(dir, 'edited.suite.json');
    await writeFile(suitePath, JSON.stringify(suiteInput({ name: 'edited', dataset: { path: 'data.csv' } })));
    const run = () => assayCli(['run', suitePath, '--simulate', '--no-progress', '--runs', runs], dir);

    await writeFile(join(dir, 'data.csv'), dataset(false));
    await run();
    first = (await readdir(runs))[0]!;
    await writeFile(join(dir, 'data.csv'), dataset(true));
    await run();
    const second = (await readdir(runs, { withFileTypes: true }))
      .filter((e) => e.isDirectory() && e.name !== first)
      .map((e) => e.name)[0]!;
    folder = join(runs, second);
  }, 120_000);

  it('pairs only the items whose input and gold are unchanged, and reports 5 changed', async () => {
    const comparison = JSON.parse(await readFile(join(folder, 'comparison.json'), 'utf8')) as Comparison;
    expect(comparison.base.runId).toBe(first);
    expect(comparison.items).toEqual({
      paired: ROWS - EDITED.size,
      onlyBase: 0,
      onlyCandidate: 0,
      changed: 5,
    });
    for (const s of Object.values(comparison.scores)) {
      expect(s.n).toBeLessThanOrEqual(ROWS - EDITED.size);
      for (const f of s.flipped) expect(EDITED.has(Number(f.itemId))).toBe(false);
    }
    const text = await readFile(join(folder, 'comparison.txt'), 'utf8');
    expect(text).toContain(
      `Items: ${ROWS - EDITED.size} paired, 0 only in base, 0 only in candidate, 5 changed`,
    );
    expect(text).toContain('Dataset changes: 5 changed, 0 added, 0 removed.');
    const html = await readFile(join(folder, 'comparison.html'), 'utf8');
    expect(html).toContain('"changed":5');
    const report = JSON.parse(await readFile(join(folder, 'report.json'), 'utf8')) as Report;
    expect(report.comparison).toMatchObject({
      baseRunId: first,
      paired: ROWS - EDITED.size,
      dataset: { added: 0, removed: 0, changed: 5 },
    });
    expect(await readFile(join(folder, 'report.txt'), 'utf8')).toContain(
      'dataset: 5 changed (another input or gold: not paired), 0 added, 0 removed',
    );
  });

  it('assay compare of simulated runs opens every output with the SIMULATED banner', async () => {
    const out = join(dir, 'compared');
    const shown = await assayCli(['compare', join(runs, first), folder, '--out', out], dir);
    expect(shown.stdout.split('\n').slice(0, 3)).toEqual([
      '*'.repeat(78),
      expect.stringMatching(/^SIMULATED: both runs were answered by the simulator/),
      '*'.repeat(78),
    ]);
    expect(await readFile(join(out, 'comparison.txt'), 'utf8')).toMatch(/^\*{78}\nSIMULATED: both runs/);
    expect(await readFile(join(out, 'comparison.html'), 'utf8')).toMatch(
      /"simulated":true,"notice":"SIMULATED: both runs/,
    );
    const json = JSON.parse((await assayCli(['compare', join(runs, first), folder, '--json'], dir)).stdout);
    expect(json).toMatchObject({ simulated: true, notice: expect.stringMatching(/^SIMULATED: both runs/) });
  });
});
