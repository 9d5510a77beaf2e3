/**
 * The judges' own reliability as a user gets it from `assay run --simulate`: the ensemble
 * example's three backends as a judge panel (report.json `panel`, report.txt, report.html), and
 * a judge suite whose dataset names each answer's producer (`dataset.columns.producer`): the
 * judge's verdicts against gold by producer family and its own-family bias
 * (`scores.<scorer>.bias.selfPreference`). Each figure is worked out again from results.jsonl.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { panelAgreement } from '../../shared/lib/metrics/panel.js';
import { selfPreference } from '../../shared/lib/metrics/self-preference.js';
import { compareReportOrder } from '../../shared/model/report-order.js';
import { assayCli, REPO, tempDir } from '../helpers.js';
import { launchBrowser, openPage, readReport, readResultLines } from './run-output.js';

/** results.jsonl in report order. */
const readResults = async (out: string) => (await readResultLines(out)).sort(compareReportOrder);

describe('judge panels and self-preference, end to end', { timeout: 240_000 }, () => {
  let dir: string;
  let browser: Browser | undefined;
  beforeAll(async () => {
    dir = await tempDir('assay-judges-');
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("the ensemble's backends as a panel: per-judge accuracy, pairs, n_eff in [1, k], majority against the best", async () => {
    const out = join(dir, 'ensemble');
    await assayCli(
      ['run', 'examples/gec-ensemble-de.suite.json', '--simulate', '--out', out, '--no-progress'],
      dir,
    );
    const report = await readReport(out);
    const panel = report.panel!;
    const judges = ['sim:gpt-4o-mini', 'sim:claude-haiku-4-5', 'sim:gemini-2.5-flash'];
    expect(panel.source).toBe('ensemble backends');
    expect(panel.judges).toEqual(judges);
    expect(panel.items).toBe(240);
    expect(panel.pairs).toHaveLength(3);
    const k = panel.effectiveJudges.k;
    expect(k).toBe(3);
    expect(panel.effectiveJudges.value).toBeGreaterThanOrEqual(1);
    expect(panel.effectiveJudges.value).toBeLessThanOrEqual(k);
    expect(panel.effectiveJudges.ci).toHaveLength(2);
    expect(panel.majorityVsBest!.ci).toHaveLength(2);
    expect(judges).toContain(panel.majorityVsBest!.bestJudge);

    // Each judge's accuracy is the one the method's figures give that backend alone.
    const members = (report.metrics.method as { accuracyVsCost: { policy: string; accuracy: number }[] })
      .accuracyVsCost;
    for (const judge of judges)
      expect(panel.accuracy[judge]!.value).toBeCloseTo(members.find((m) => m.policy === judge)!.accuracy, 12);

    // The whole panel again from each result's votes.
    const results = (await readResults(out)).filter((r) => r.gold !== undefined);
    const items = results.map((r) => ({
      gold: r.gold!,
      labels: Object.fromEntries(
        (r.details!.votes as { backend: string; label: string }[]).map((v) => [
          v.backend,
          v.label === 'Error' ? undefined : v.label,
        ]),
      ),
    }));
    expect(panel).toEqual({ source: 'ensemble backends', ...panelAgreement(items, { judges }) });

    const text = await readFile(join(out, 'report.txt'), 'utf8');
    expect(text).toContain(`Judge panel (ensemble backends): 3 judges on 240 items`);
    expect(text).toContain(`effective independent judges ${panel.effectiveJudges.value!.toFixed(3)}`);

    if (!browser) return;
    const { page, errors } = await openPage(browser, join(out, 'report.html'));
    expect(errors).toEqual([]);
    expect(await page.textContent('[data-metric="panel.effectiveJudges"]')).toBe(
      panel.effectiveJudges.value!.toFixed(3),
    );
    expect(await page.textContent('[data-metric="panel.majority"]')).toBe(panel.majority.value!.toFixed(3));
    for (const judge of judges)
      expect(await page.textContent(`[data-metric="panel.accuracy.${judge}"]`)).toBe(
        panel.accuracy[judge]!.value!.toFixed(3),
      );
    await page.close();
  });

  it("a producer column: the judge's verdicts by producer family and its own-family bias with a CI", async () => {
    // The shipped helpfulness answers, each credited to one of two producers; the judge is an
    // Anthropic model, so the Anthropic producer's answers are its own family's.
    const work = join(dir, 'producers');
    await mkdir(join(work, 'data'), { recursive: true });
    await mkdir(join(work, 'prompts'), { recursive: true });
    await copyFile(join(REPO, 'examples', 'prompts', 'helpful.md'), join(work, 'prompts', 'helpful.md'));
    const rows = (await readFile(join(REPO, 'examples', 'data', 'answers.jsonl'), 'utf8'))
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line, i) => ({
        ...JSON.parse(line),
        made_by: i % 2 === 0 ? 'anthropic:claude-3-5-sonnet' : 'openai:gpt-4o',
      }));
    await writeFile(join(work, 'data', 'answers.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n'));
    const suitePath = join(work, 'helpful-producers.suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'helpful-producers',
        task: 'judge',
        dataset: { path: 'data/answers.jsonl', columns: { gold: 'rating', producer: 'made_by' } },
        judge: { prompt: 'prompts/helpful.md', range: [1, 5], threshold: 4 },
        backends: ['anthropic:claude-haiku-4-5'],
      }),
    );
    const out = join(work, 'out');
    await assayCli(['run', suitePath, '--simulate', '--out', out, '--no-progress'], dir);
    const report = await readReport(out);

    for (const scorer of ['score', 'pass'] as const) {
      const bias = report.scores[scorer]!.bias!.selfPreference!;
      expect(bias.column).toBe('made_by');
      expect(bias).toMatchObject({ noProducer: 0, noJudge: 0, items: rows.length });
      expect(Object.keys(bias.byProducer)).toEqual(['anthropic', 'openai']);
      expect(bias.byProducer.anthropic).toMatchObject({ n: 20, ownFamily: 20 });
      expect(bias.byProducer.openai).toMatchObject({ n: 20, ownFamily: 0 });
      const pref = bias.selfPreference!;
      expect(pref.own.n).toBe(20);
      expect(pref.other.n).toBe(20);
      expect(pref.value).toBeCloseTo(pref.own.error - pref.other.error, 12);
      expect(pref.ci![0]).toBeLessThanOrEqual(pref.value);
      expect(pref.ci![1]).toBeGreaterThanOrEqual(pref.value);
    }

    // The number scorer's figures again from results.jsonl: the judge's score and the gold rating.
    const results = await readResults(out);
    const again = selfPreference(
      results.map((r) => ({
        producer: r.columns!.made_by!,
        judge: r.scores.score!.decidedBy!,
        verdict: r.scores.score?.value as number | undefined,
        gold: Number(r.gold),
      })),
    );
    expect(results[0]!.scores.score!.decidedBy).toBe('sim:claude-haiku-4-5');
    const { column, noProducer, noJudge, ...figures } = report.scores.score!.bias!.selfPreference!;
    expect({ column, noProducer, noJudge }).toEqual({ column: 'made_by', noProducer: 0, noJudge: 0 });
    expect(figures).toEqual(again);

    const text = await readFile(join(out, 'report.txt'), 'utf8');
    expect(text).toContain('self-preference (producer column made_by): 40 items with a verdict and gold');
    expect(text).toMatch(/own-family bias [+-]\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\]/);

    if (!browser) return;
    const { page, errors } = await openPage(browser, join(out, 'report.html'));
    expect(errors).toEqual([]);
    expect(await page.locator('[data-testid="self-preference"]').count()).toBe(2);
    const sentence = await page.textContent('[data-metric="score.bias.selfPreference"]');
    const value = report.scores.score!.bias!.selfPreference!.selfPreference!.value;
    expect(sentence).toContain(`Own-family bias ${value >= 0 ? '+' : ''}${value.toFixed(3)}`);
    await page.close();
  });
});
