/**
 * Fewer labels, as a user gets them from the CLI: the shipped example with gold on 300 of 2,000
 * items (`dataset.partialGold`) gives the prediction-powered share in report.json, report.txt and
 * report.html, equal to the figures worked out again from results.jsonl; its interval covers the
 * figure every label gives (the same data's fully labelled suite). A gold file (`dataset.goldFile`,
 * what `assay label` exports) merges as gold by id, its `p` weighing each label by 1/p; an id the
 * dataset does not have is refused, named.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activeMean, ppiMean } from '../../shared/lib/metrics/ppi.js';
import type { ItemResult } from '../../shared/model/model.js';
import { assayCli, REPO, tempDir } from '../helpers.js';
import { launchBrowser, openPage, readReport, readResultLines } from './run-output.js';

/** The item results of results.jsonl. */
const readResults = async (out: string) => (await readResultLines(out)).filter((r) => r.itemId !== undefined);

/** The judge's label of a result (undefined when it gave none). */
const judged = (r: ItemResult) => r.scores.label?.value as string | undefined;

/**
 * The PPI share of `label` worked out from the results themselves, by the array entry points:
 * PPI++, or with each label's probability `pOf` the active estimator.
 */
function shareFromResults(results: ItemResult[], label: string, pOf?: (r: ItemResult) => number) {
  const withGold = results.filter((r) => r.gold !== undefined);
  const rows = {
    gold: withGold.map((r) => (r.gold === label ? 1 : 0)),
    judge: withGold.map((r) => (judged(r) === label ? 1 : 0)),
    judgeUnlabelled: results.filter((r) => r.gold === undefined).map((r) => (judged(r) === label ? 1 : 0)),
  };
  return pOf ? activeMean({ ...rows, probabilities: withGold.map(pOf) }) : ppiMean(rows);
}

describe('fewer labels: prediction-powered estimates end to end', { timeout: 240_000 }, () => {
  let dir: string;
  let browser: Browser | undefined;
  beforeAll(async () => {
    dir = await tempDir('assay-ppi-');
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('the shipped example: 300 labels of 2,000, PPI in every report, covering the all-labels figure', async () => {
    const out = join(dir, 'partial');
    const { stdout } = await assayCli(
      ['run', 'examples/fewer-labels.suite.json', '--out', out, '--no-progress'],
      dir,
    );
    // The summary says the agreement figures are over the labelled items, of every item scored.
    expect(stdout).toContain('(n 300 of 2000 scored)');
    const report = await readReport(out);
    const ppi = report.scores.label!.ppi!;
    expect(ppi).toMatchObject({ quantity: 'share of unfaithful', nLabelled: 300, nUnlabelled: 1700 });
    // Agreement metrics over the labelled items only; every item scored (none is a failure).
    expect(report.counts).toMatchObject({ items: 2000, scored: 2000, failed: 0 });
    expect(report.scores.label!.metrics.accuracy!.n).toBe(300);

    const results = await readResults(out);
    const again = shareFromResults(results, 'unfaithful');
    expect(ppi.estimate).toBeCloseTo(again.estimate!, 12);
    expect(ppi.ci![0]).toBeCloseTo(again.ci![0], 12);
    expect(ppi.ci![1]).toBeCloseTo(again.ci![1], 12);
    expect(ppi.classical.estimate).toBeCloseTo(again.classical.estimate!, 12);
    expect(ppi.judgeOnly.estimate).toBeCloseTo(again.judgeOnly.estimate!, 12);
    expect(ppi.lambda).toBeCloseTo(again.lambda!, 12);
    // Narrower than the labels alone: worth more labels than it used.
    expect(ppi.ci![1] - ppi.ci![0]).toBeLessThan(ppi.classical.ci![1] - ppi.classical.ci![0]);
    expect(ppi.effectiveLabels!).toBeGreaterThan(300);
    // Each label's share; with two labels one is the other's complement.
    expect(ppi.byLabel!.unfaithful!.estimate).toBe(ppi.estimate);
    expect(ppi.byLabel!.faithful!.estimate! + ppi.estimate!).toBeCloseTo(1, 12);

    // The same data with a label on every item: its share lies in the PPI interval, and the
    // judge alone, biased, under-counts it.
    const all = join(dir, 'all');
    await assayCli(['run', 'examples/fewer-labels-all.suite.json', '--out', all, '--no-progress'], dir);
    const full = await readReport(all);
    expect(full.scores.label!.ppi).toBeUndefined();
    const support = full.scores.label!.tables!.perClass as Record<string, { support: number }>;
    const truth = support.unfaithful!.support / 2000;
    expect(truth).toBeGreaterThanOrEqual(ppi.ci![0]);
    expect(truth).toBeLessThanOrEqual(ppi.ci![1]);
    expect(ppi.judgeOnly.estimate!).toBeLessThan(truth);

    const txt = await readFile(join(out, 'report.txt'), 'utf8');
    expect(txt).toContain(
      'prediction-powered estimate of the share of unfaithful over all 2000 items (gold on 300',
    );
    expect(txt).toMatch(
      new RegExp(
        `PPI +${ppi.estimate!.toFixed(3)} +\\[${ppi.ci![0].toFixed(3)}, ${ppi.ci![1].toFixed(3)}\\] +worth ${Math.round(ppi.effectiveLabels!)} labels`,
      ),
    );
    expect(txt).toMatch(
      new RegExp(`classical +${ppi.classical.estimate!.toFixed(3)} .*the 300 labels alone`),
    );
    expect(txt).toMatch(new RegExp(`judge only +${ppi.judgeOnly.estimate!.toFixed(3)} .*BIASED`));

    if (!browser) return;
    const { page, errors } = await openPage(browser, join(out, 'report.html'));
    expect(errors).toEqual([]);
    const figure = page.locator('[data-scorer="label"] [data-testid="ppi"]');
    expect(await figure.isVisible()).toBe(true);
    const shown = async (key: string) => page.textContent(`[data-metric="label.ppi.${key}"]`);
    expect(await shown('estimate')).toBe(ppi.estimate!.toFixed(3));
    expect(await shown('classical')).toBe(ppi.classical.estimate!.toFixed(3));
    expect(await shown('judgeOnly')).toBe(ppi.judgeOnly.estimate!.toFixed(3));
    const text = (await figure.textContent()) ?? '';
    expect(text).toContain(`worth ${Math.round(ppi.effectiveLabels!)} labels`);
    expect(text).toContain('biased');
    // The three interval bars are drawn: PPI's and the classical one with a range, all with a point.
    expect(await figure.locator('.ci-range').count()).toBe(2);
    expect(await figure.locator('.ci-point').count()).toBe(3);
  });

  /** A suite in `dir` over the example's first `rows` answers, no gold in the dataset, gold from `goldFile`. */
  async function goldFileSuite(at: string, rows: number, goldFile: string): Promise<string> {
    await mkdir(join(at, 'prompts'), { recursive: true });
    await copyFile(
      join(REPO, 'examples', 'prompts', 'support-faithfulness.md'),
      join(at, 'prompts', 'support-faithfulness.md'),
    );
    const lines = (await readFile(join(REPO, 'examples', 'data', 'support-answers-2000.csv'), 'utf8'))
      .trim()
      .split('\n')
      .slice(0, rows + 1)
      // id,topic,answer,judge,human,human_all → the same without any gold.
      .map((line) => line.split(',').slice(0, 4).join(','));
    await writeFile(join(at, 'answers.csv'), `${lines.join('\n')}\n`);
    await writeFile(join(at, 'gold.csv'), goldFile);
    const suite = join(at, 'suite.json');
    await writeFile(
      suite,
      JSON.stringify({
        version: 1,
        name: 'gold-file',
        task: 'judge',
        dataset: { path: 'answers.csv', columns: { gold: 'human', output: 'judge' }, goldFile: 'gold.csv' },
        judge: {
          prompt: 'prompts/support-faithfulness.md',
          labels: ['faithful', 'unfaithful'],
          positive: ['unfaithful'],
        },
        backends: [],
      }),
    );
    return suite;
  }

  it('a gold file merges as gold by id, each label weighed by 1/p', async () => {
    const at = join(dir, 'gold-file');
    // Every fifth of the first 200 answers labelled: "unfaithful" on every third, chosen with
    // p 0.5 where the judge said unfaithful, else 0.1.
    const source = (await readFile(join(REPO, 'examples', 'data', 'support-answers-2000.csv'), 'utf8'))
      .trim()
      .split('\n')
      .slice(1, 201)
      .map((line) => line.split(','));
    const chosen = source.filter((_, i) => i % 5 === 0);
    const gold = [
      'id,label,p',
      ...chosen.map(([id, , , judge, , truth]) => `${id},${truth},${judge === 'unfaithful' ? 0.5 : 0.1}`),
      // A row left unlabelled in the file: skipped.
      `${source[1]![0]},,`,
    ].join('\n');
    const suite = await goldFileSuite(at, 200, `${gold}\n`);
    const out = join(at, 'out');
    await assayCli(['run', suite, '--out', out, '--no-progress'], at);
    const report = await readReport(out);
    const ppi = report.scores.label!.ppi!;
    expect(ppi).toMatchObject({ nLabelled: 40, nUnlabelled: 160 });
    const results = await readResults(out);
    const labelled = results.filter((r) => r.gold !== undefined);
    expect(labelled).toHaveLength(40);
    expect(labelled.every((r) => r.columns?.gold_p === '0.5' || r.columns?.gold_p === '0.1')).toBe(true);
    const again = shareFromResults(results, 'unfaithful', (r) => Number(r.columns!.gold_p));
    expect(ppi.estimator).toBe('active');
    expect(ppi.design).toMatchObject({ sample: 'non-random', chosen: 40, certain: 0 });
    expect(ppi.estimate).toBeCloseTo(again.estimate!, 12);
    expect(ppi.ci![1]).toBeCloseTo(again.ci![1], 12);
    expect(ppi.classical.estimate).toBeCloseTo(again.classical.estimate!, 12);
    // The weights matter: unweighted, the figures differ.
    expect(shareFromResults(results, 'unfaithful').classical.estimate).not.toBeCloseTo(
      ppi.classical.estimate!,
      6,
    );
  });

  it('a gold file with ids the dataset does not have is refused, naming them', async () => {
    const at = join(dir, 'stray-ids');
    const suite = await goldFileSuite(at, 20, 'id,label\na0001,faithful\nzz-1,faithful\nzz-2,unfaithful\n');
    const run = assayCli(['run', suite, '--out', join(at, 'out'), '--no-progress'], at);
    await expect(run).rejects.toMatchObject({
      stderr: expect.stringMatching(/gold\.csv: 2 ids are not in the dataset: "zz-1", "zz-2"/),
    });
  });
});
