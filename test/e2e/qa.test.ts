/**
 * QA as a user runs it: the physics study's comparison (base vs fine-tuned) as a sweep with
 * `--simulate`, and a results file in the study's own layout graded with `assay score --task qa`:
 * the answers its LLM grader scored 0 although they were right are decided 1 by the fast path.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { QaFigures } from '../../shared/families/qa/report.js';
import type { ItemResult } from '../../shared/model/model.js';
import type { Report } from '../../shared/model/report.js';
import type { SweepReport } from '../../shared/sweeps/sweep.js';
import { assayCli, REPO, tempDir } from '../helpers.js';

async function folders(dir: string, prefix: string): Promise<string[]> {
  return (await readdir(dir)).filter((d) => d.startsWith(prefix)).map((d) => join(dir, d));
}

describe('QA, end to end', { timeout: 120_000 }, () => {
  it('--sample: the screen counts the sampled items, not the rows of the dataset', async () => {
    const dir = await tempDir('assay-qa-sample-');
    // 30 rows, 10 of them without a key (invalid): a sample of 5 is 5 items on screen.
    const rows = Array.from({ length: 30 }, (_, i) =>
      JSON.stringify({
        id: String(i),
        question: `What is ${i} + 1?`,
        answer: i % 3 === 0 ? '' : String(i + 1),
      }),
    );
    await writeFile(join(dir, 'q.jsonl'), `${rows.join('\n')}\n`);
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify({
        version: 1,
        name: 'qa-sample',
        task: 'qa',
        dataset: { path: 'q.jsonl' },
        qa: { type: 'numeric', tolerance: 0 },
        backends: ['openai:gpt-4o-mini'],
      }),
    );
    const { stderr } = await assayCli(
      ['run', join(dir, 'suite.json'), '--simulate', '--sample', '5', '--runs', join(dir, 'runs')],
      dir,
    );
    expect(stderr).toMatch(/^5 items sampled \(seed 1\)/m);
    expect(stderr).not.toMatch(/\b(15|30) items\b/);
    expect(stderr).toMatch(/ 5\/5 100%/);
  });

  it('the physics study as a sweep: base vs fine-tuned, by question type, fast path and grader', async () => {
    const dir = await tempDir('assay-qa-');
    const runs = join(dir, 'runs');
    const { stdout } = await assayCli(
      ['run', 'examples/physics-qa.suite.json', '--simulate', '--runs', runs, '--no-progress'],
      dir,
    );
    expect(stdout).toContain('Assay sweep — physics-qa (qa), 2 variants');
    const [sweepDir] = await folders(runs, 'physics-qa-sweep-');
    const sweep = JSON.parse(await readFile(join(sweepDir!, 'sweep.json'), 'utf8')) as SweepReport;
    expect(sweep.variants.map((v) => v.name).sort()).toEqual(['base', 'fine-tuned']);
    expect(sweep.variants.find((v) => v.name === 'fine-tuned')!.comparison?.paired).toBe(50);

    const [baseDir] = await folders(runs, 'physics-qa.base-');
    const report = JSON.parse(await readFile(join(baseDir!, 'report.json'), 'utf8')) as Report;
    const qa = report.metrics.qa as QaFigures;
    expect(Object.entries(qa.byType).map(([type, f]) => [type, f.items])).toEqual([
      ['explanation', 15],
      ['mcq', 19],
      ['numeric', 16],
    ]);
    expect(qa.decided.fast + qa.decided.llm + qa.decided.unscored).toBe(50);
    expect(qa.decided.llm).toBeGreaterThanOrEqual(15);
    expect(qa.savedUsd).toBeGreaterThan(0);
    // The example audits the grader on every item the fast path decided.
    expect(qa.audit?.n).toBe(qa.decided.fast);
    expect(qa.audit?.kappa).not.toBeNull();
    // The fast path's decisions by rule add up to its count.
    expect(Object.values(qa.fastBy).reduce((a, b) => a + b, 0)).toBe(qa.decided.fast);
    expect(Object.keys(report.scores)).toEqual(['score', 'llm']);
    const text = await readFile(join(baseDir!, 'report.txt'), 'utf8');
    expect(text).toMatch(/Score by question type/);
    expect(text).toMatch(/Decided by the fast path \d+, by the LLM grader \d+/);
    expect(text).toMatch(/ {2}the fast path by rule: [a-z-]+ \d+/);
    expect(text).toMatch(
      /Audit: the LLM grader on the \d+ items the fast path decided: agreement \d\.\d{3}, Cohen's kappa/,
    );
  });

  it("grades a results file in the study's layout, one run per configuration, compared", async () => {
    const dir = await tempDir('assay-qa-score-');
    const out = join(dir, 'out');
    const { stdout } = await assayCli(
      [
        'score',
        '--task',
        'qa',
        '--predictions',
        join(REPO, 'test/fixtures/qa/seed-results.csv'),
        '--out',
        out,
        '--no-progress',
      ],
      dir,
    );
    expect(stdout).toContain('score-qa.base: 8 scored');
    expect(stdout).toContain('score-qa.finetuned: 8 scored');
    expect(stdout).toMatch(/finetuned: 8 paired items/);

    const [baseDir] = await folders(out, 'score-qa.base-');
    const results = (await readFile(join(baseDir!, 'results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ItemResult);
    const byQuestion = new Map(results.map((r) => [r.itemId, r.scores.score]));
    // Scored 0 by the study's LLM grader; right, and decided without one here.
    expect(byQuestion.get('10')).toMatchObject({ value: 1, decidedBy: 'fast:letter' });
    expect(byQuestion.get('5')).toMatchObject({ value: 1, decidedBy: 'fast:final-number' });
    // Wrong, and said so: 9.8 where the key is 4.9.
    expect(byQuestion.get('11')).toMatchObject({ value: 0 });
    // An explanation needs the LLM grader, and this run has none: unscored, with the reason.
    expect(byQuestion.get('3')).toMatchObject({ unscored: { kind: 'provider' } });
  });
});
