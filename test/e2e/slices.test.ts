/**
 * Slices as a user runs them: `assay run --simulate` on a judge suite that slices by a dataset
 * column it does not otherwise name (`subset`, neither an input nor the gold) writes each value's
 * metrics into report.json and a Slices section into report.txt; a comparison of two such runs
 * gives the per-value deltas.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { assayCli, REPO, tempDir } from '../helpers.js';

/**
 * The tone judge's 48 replies with a `subset` column (Natural, Synthetic, empty by turns), and a
 * suite slicing by it: its path.
 */
async function slicedSuite(
  dir: string,
  backends = ['openai:gpt-4o-mini'],
  file = 'sliced.suite.json',
): Promise<string> {
  await mkdir(join(dir, 'prompts'), { recursive: true });
  await copyFile(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
  const lines = (await readFile(join(REPO, 'examples', 'data', 'replies.csv'), 'utf8'))
    .split(/\r?\n/)
    .filter((line) => line !== '');
  const subsets = ['Natural', 'Synthetic', ''];
  const csv = [`${lines[0]},subset`, ...lines.slice(1).map((line, i) => `${line},${subsets[i % 3]}`)];
  await writeFile(join(dir, 'data.csv'), `${csv.join('\n')}\n`);
  const suite = join(dir, file);
  await writeFile(
    suite,
    JSON.stringify({
      version: 1,
      name: 'sliced-tone',
      task: 'judge',
      dataset: { path: 'data.csv', columns: { gold: 'human' } },
      judge: { prompt: 'prompts/tone.md', labels: ['polite', 'neutral', 'rude'] },
      backends,
      slices: ['subset'],
    }),
  );
  return suite;
}

describe('slices, end to end', { timeout: 180_000 }, () => {
  it('assay run --simulate reports each value of a column the suite does not otherwise name', async () => {
    const dir = await tempDir('assay-slices-');
    const suite = await slicedSuite(dir);
    const out = join(dir, 'out');
    await assayCli(['run', suite, '--simulate', '--out', out, '--no-progress'], dir);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as Report;
    const subset = report.slices!.subset!;
    expect(Object.keys(subset)).toEqual(['(none)', 'Natural', 'Synthetic']);
    for (const value of Object.values(subset)) {
      expect(value.n).toBe(16);
      expect(Object.keys(value.metrics)).toEqual(Object.keys(report.scores.label!.metrics));
      expect(value.metrics.accuracy!.ci).toHaveLength(2);
    }
    // The column is the row's as read, not an input of the prompt.
    const first = JSON.parse((await readFile(join(out, 'results.jsonl'), 'utf8')).split('\n')[0]!);
    expect(first.input.subset).toBeUndefined();

    const text = await readFile(join(out, 'report.txt'), 'utf8');
    expect(text).toContain(
      "Slices (label, per value of each column; 95% CI: Wilson's, continuity-corrected, for a proportion; the bootstrap for the rest)",
    );
    const accuracy = subset.Natural!.metrics.accuracy!;
    expect(text).toMatch(
      new RegExp(
        String.raw`\n    Natural\s+16\s+${accuracy.n}  ${accuracy.value!.toFixed(3)} \[${accuracy.ci![0].toFixed(3)}, ${accuracy.ci![1].toFixed(3)}\]`,
      ),
    );

    // Another model on the same items: the comparison has the paired delta per value.
    const other = join(dir, 'other');
    const otherSuite = await slicedSuite(dir, ['anthropic:claude-haiku-4-5'], 'other.suite.json');
    await assayCli(['run', otherSuite, '--simulate', '--out', other, '--no-progress'], dir);
    const cmp = join(dir, 'cmp');
    await assayCli(['compare', out, other, '--out', cmp], dir);
    const comparison = JSON.parse(await readFile(join(cmp, 'comparison.json'), 'utf8'));
    const slices = comparison.scores.label.slices.subset;
    expect(Object.keys(slices)).toEqual(['(none)', 'Natural', 'Synthetic']);
    expect(slices.Natural.n).toBe(16);
    expect(typeof slices.Natural.deltas.accuracy.delta).toBe('number');
    expect(await readFile(join(cmp, 'comparison.txt'), 'utf8')).toContain('slices by subset (accuracy');
  });
});
