/**
 * The n `assay run` prints on the terminal beside a scorer's headline figures is the n those
 * figures ran over (each metric's own `n` in report.json), whatever leaves items out of them: a
 * row whose gold is blank, or gold on some items only (`dataset.partialGold`).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { HEADLINE_METRICS } from '../../shared/model/report.js';
import { assayCli, tempDir } from '../helpers.js';
import { readReport } from './run-output.js';

const PROMPT = 'Rate the reply.\n\n<reply>\n{reply}\n</reply>\n';

/** Eight replies; `gold` gives each row's gold ('' for a blank). */
const csv = (gold: string[]) =>
  ['id,reply,human', ...gold.map((g, i) => `r${i + 1},Reply number ${i + 1}.,${g}`)].join('\n');

/**
 * Each headline line's n against report.json: the n printed is the n of the metrics shown, and
 * a metric over other items is printed with its own (`pass rate on 8`).
 */
async function expectScreenN(stdout: string, out: string): Promise<Record<string, number>> {
  const report = await readReport(out);
  const printed: Record<string, number> = {};
  for (const [name, s] of Object.entries(report.scores)) {
    const line = stdout.split('\n').find((l) => l.startsWith(`${name}: `));
    expect(line, name).toBeDefined();
    const n = Number(/\(n (\d+)/.exec(line!)![1]);
    printed[name] = n;
    const shown = HEADLINE_METRICS[s.kind].filter((metric) => s.metrics[metric] !== undefined);
    expect(shown.length, name).toBeGreaterThan(0);
    for (const metric of shown) {
      const own = s.metrics[metric]!.n;
      if (own !== n) expect(line, `${name}.${metric}`).toMatch(new RegExp(`, [^,()]+ on ${own}\\b`));
    }
    expect(
      shown.some((metric) => s.metrics[metric]!.n === n),
      `${name}: the n printed is no metric's`,
    ).toBe(true);
  }
  return printed;
}

describe('the n on screen is the n the metrics used', { timeout: 120_000 }, () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('assay-screen-n-');
    await mkdir(join(dir, 'prompts'), { recursive: true });
    await writeFile(join(dir, 'prompts', 'rate.md'), PROMPT);
  });

  const run = async (name: string, judge: object, dataset: object, gold: string[]) => {
    await writeFile(join(dir, `${name}.csv`), csv(gold));
    await writeFile(
      join(dir, `${name}.suite.json`),
      JSON.stringify({
        version: 1,
        name,
        task: 'judge',
        dataset: { path: `${name}.csv`, columns: { gold: 'human' }, ...dataset },
        judge: { prompt: 'prompts/rate.md', ...judge },
        backends: ['openai:gpt-4o-mini'],
      }),
    );
    const out = join(dir, name);
    const { stdout } = await assayCli(
      ['run', join(dir, `${name}.suite.json`), '--simulate', '--out', out, '--no-progress'],
      dir,
    );
    return { stdout, out };
  };

  it('a labels judge with one blank gold: the n printed is accuracy’s', async () => {
    const gold = ['good', 'bad', 'good', '', 'bad', 'good', 'bad', 'good'];
    const { stdout, out } = await run('blank', { labels: ['good', 'bad'] }, {}, gold);
    const printed = await expectScreenN(stdout, out);
    const report = await readReport(out);
    expect(printed.label).toBe(report.scores.label!.metrics.accuracy!.n);
    expect(printed.label).toBe(7);
  });

  it('a range judge with gold on five of eight (partialGold): agreement over 5, the pass rate over 8', async () => {
    const gold = ['4', '', '2', '5', '', '1', '3', ''];
    const { stdout, out } = await run(
      'partial',
      { range: [1, 5], threshold: 4 },
      { partialGold: true },
      gold,
    );
    const printed = await expectScreenN(stdout, out);
    expect(printed).toEqual({ score: 5, pass: 5 });
    expect(stdout).toMatch(/^score: .*\(n 5, mean on 8\b/m);
    expect(stdout).toMatch(/^pass: .*\(n 5, pass rate on 8\b/m);
  });
});
