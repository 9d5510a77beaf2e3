/**
 * The simulator on items without gold answers from a latent truth fixed by the item id, with
 * the same noise as on gold items, and says so; so a simulated run with partial gold has a
 * truth the prediction-powered interval can cover.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runLocal } from '../../../cli/local-run.js';
import { latentGold, simulateJudge } from '../../../shared/families/judge/simulate.js';
import { seededRandom } from '../../../shared/lib/providers/sim.js';
import type { Report } from '../../../shared/model/report.js';
import { tempDir } from '../../helpers.js';

describe('the judge simulator on an item without gold', () => {
  it('answers its latent label, fixed by its id, with the gold items’ noise, and says so', () => {
    const labels = ['a', 'b', 'c'];
    let right = 0;
    const seen = new Set<string>();
    for (let i = 0; i < 300; i += 1) {
      const item = `u${i}`;
      const latent = latentGold(item, { labels });
      expect(latentGold(item, { labels })).toBe(latent);
      seen.add(latent);
      const answer = JSON.parse(
        simulateJudge({ family: 'judge', item, labels, fields: {} }, seededRandom(item), 0.2),
      ) as { label: string; reason: string };
      if (answer.label === latent) right += 1;
      expect(answer.reason).toMatch(/no gold: drawn with noise from its latent label/);
    }
    // 1 − noise of the answers are the latent label, as for gold items.
    expect(right / 300).toBeGreaterThan(0.72);
    expect(right / 300).toBeLessThan(0.88);
    expect(seen).toEqual(new Set(labels));
    // A range: a whole number on a whole-number range, always in it.
    for (let i = 0; i < 50; i += 1) {
      const v = Number(latentGold(`s${i}`, { range: [1, 5] }));
      expect(Number.isInteger(v) && v >= 1 && v <= 5).toBe(true);
    }
  });

  it('gives a pairwise item its latent preference in the order shown', () => {
    const labels = ['A', 'B', 'tie'];
    for (let i = 0; i < 40; i += 1) {
      const item = `p${i}`;
      const latent = latentGold(item, { labels });
      const inOrder = (order: 'ab' | 'ba') =>
        JSON.parse(
          simulateJudge(
            { family: 'judge', item, labels, fields: {}, pairwise: { order, positionBias: 0 } },
            seededRandom(`${item}${order}`),
            0,
          ),
        ).label as string;
      expect(inOrder('ab')).toBe(latent);
      expect(inOrder('ba')).toBe(latent === 'A' ? 'B' : latent === 'B' ? 'A' : 'tie');
    }
  });
});

describe('a simulated run with partial gold', () => {
  it('gives a PPI interval covering the share of the simulated world’s truth', {
    timeout: 60_000,
  }, async () => {
    const dir = await tempDir('assay-sim-latent-');
    await mkdir(join(dir, 'prompts'), { recursive: true });
    await writeFile(
      join(dir, 'prompts', 'judge.md'),
      'Is this reply helpful?\n\n<reply>\n{reply}\n</reply>\n',
    );
    // 600 items; gold on every fifth, given by the same rule as the latent truth (so the
    // dataset's gold and the simulator's latent labels are one world).
    const labels = ['yes', 'no'];
    const ids = Array.from({ length: 600 }, (_, i) => `item-${i}`);
    const truth = ids.map((id) => latentGold(id, { labels }));
    const rows = ids.map((id, i) => `${id},reply ${i},${i % 5 === 0 ? truth[i] : ''}`);
    await writeFile(join(dir, 'data.csv'), `id,reply,human\n${rows.join('\n')}\n`);
    const suitePath = join(dir, 'suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'sim-latent',
        task: 'judge',
        dataset: { path: 'data.csv', columns: { gold: 'human' }, partialGold: true },
        judge: { prompt: 'prompts/judge.md', labels, positive: ['yes'] },
        backends: ['sim:gpt-4o-mini'],
        sim: { noise: 0.2, latencyMs: 0, seed: 7 },
      }),
    );
    const { outDir } = await runLocal({
      suitePath,
      fresh: true,
      env: {},
      outDir: join(dir, 'run'),
      cachePath: join(dir, 'cache.jsonl'),
    });
    const report = JSON.parse(await readFile(join(outDir, 'report.json'), 'utf8')) as Report;
    const ppi = report.scores.label!.ppi!;
    expect(ppi).toMatchObject({ nLabelled: 120, nUnlabelled: 480, estimator: 'ppi++' });
    const share = truth.filter((t) => t === 'yes').length / truth.length;
    expect(share).toBeGreaterThanOrEqual(ppi.ci![0]);
    expect(share).toBeLessThanOrEqual(ppi.ci![1]);
    // The judge is informative on the unlabelled items: it agrees with their latent truth as
    // often as with the gold (1 − noise), so λ is well above 0 and the interval narrower than
    // the labels alone.
    const results = (await readFile(join(outDir, 'results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as { itemId?: string; gold?: string; scores?: { label?: { value?: string } } },
      )
      .filter((r) => r.itemId !== undefined && r.gold === undefined);
    expect(results).toHaveLength(480);
    const agree = results.filter((r) => r.scores?.label?.value === latentGold(r.itemId!, { labels })).length;
    expect(agree / results.length).toBeGreaterThan(0.74);
    expect(ppi.lambda!).toBeGreaterThan(0.3);
    expect(ppi.ci![1] - ppi.ci![0]).toBeLessThan(ppi.classical.ci![1] - ppi.classical.ci![0]);
  });
});
