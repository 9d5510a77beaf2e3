/**
 * A pairwise judge whose verdicts the dataset gives in both orders (JudgeBench's layout: the
 * pair as shown, then swapped), run as a user runs it: `assay run` with no backend and no key.
 * The verdict, accuracy and position figures are those worked out by hand below.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PairwiseFigures } from '../../shared/families/judge/pairwise.js';
import type { Report } from '../../shared/model/report.js';
import { assayCli, tempDir } from '../helpers.js';

const PROMPT = `Which answer is better?

<question>
{question}
</question>

<first_answer>
{response_a}
</first_answer>

<second_answer>
{response_b}
</second_answer>
`;

// Answer A is the longer in every row. The second verdict is as the swapped order shows the
// pair: there A is the answer shown first, the dataset's B.
//   p1 A | B  → A, A: consistent A (gold A, right)
//   p2 B | A  → B, B: consistent B (gold B, right)
//   p3 A | A  → A, B: inconsistent (gold A)
//   p4 tie | tie: consistent tie (gold tie, right)
//   p5 A | B  → A, A: consistent A (gold B, wrong)
//   p6 tie | B → tie, A: inconsistent (gold A)
const DATA = `id,question,response_a,response_b,preference,verdict_ab,verdict_ba
p1,Q1,a long answer one,short,A,A,B
p2,Q2,a long answer two,short,B,B,A
p3,Q3,a long answer three,short,A,A,A
p4,Q4,a long answer four,short,tie,tie,tie
p5,Q5,a long answer five,short,B,A,B
p6,Q6,a long answer six,short,A,tie,B
`;

async function folder(inconsistent?: string): Promise<string> {
  const dir = await tempDir('assay-pairwise-given-');
  await mkdir(join(dir, 'prompts'));
  await writeFile(join(dir, 'prompts', 'pref.md'), PROMPT);
  await writeFile(join(dir, 'data.csv'), DATA);
  const suite = {
    version: 1,
    name: 'pairwise-given',
    task: 'judge',
    dataset: {
      path: 'data.csv',
      columns: { gold: 'preference', output: ['verdict_ab', 'verdict_ba'] },
    },
    judge: {
      prompt: 'prompts/pref.md',
      pairwise: ['response_a', 'response_b'],
      ...(inconsistent ? { inconsistent } : {}),
    },
    backends: [],
  };
  await writeFile(join(dir, 'eval.suite.json'), JSON.stringify(suite));
  return dir;
}

const run = async (dir: string) => {
  const { stdout } = await assayCli(
    ['run', join(dir, 'eval.suite.json'), '--out', join(dir, 'run'), '--no-progress'],
    dir,
  );
  const report = JSON.parse(await readFile(join(dir, 'run', 'report.json'), 'utf8')) as Report;
  const text = await readFile(join(dir, 'run', 'report.txt'), 'utf8');
  const labeled = await readFile(join(dir, 'run', 'labeled.csv'), 'utf8');
  return { stdout, report, text, labeled };
};

describe('pairwise verdicts given in both orders, end to end', { timeout: 120_000 }, () => {
  it('are scored as a judge asked in both orders: verdict, accuracy and position figures', async () => {
    const { stdout, report, text, labeled } = await run(await folder());
    expect(stdout).toContain('pairwise-given: 6 scored, 0 failed');
    expect(stdout).toContain('predictions from data.csv (columns verdict_ab, verdict_ba)');
    // Right: p1, p2, p4; the inconsistent p3 and p6 become ties against gold A.
    expect(report.scores.label!.metrics.accuracy!.value).toBeCloseTo(3 / 6, 10);
    const p = report.metrics.pairwise as PairwiseFigures;
    expect(p).toMatchObject({
      orders: 'given',
      inconsistent: 'tie',
      items: 6,
      consistentItems: 4,
      inconsistentItems: 2,
      // Non-tie answers as shown: p1 A,B  p2 B,A  p3 A,A  p5 A,B  p6 B — 9, 5 of them the first shown.
      answers: { firstShown: 5, secondShown: 4, tie: 3 },
    });
    expect(p.positionConsistency.value).toBeCloseTo(4 / 6, 10);
    expect(p.firstPositionWinRate).toMatchObject({ n: 9 });
    expect(p.firstPositionWinRate.value).toBeCloseTo(5 / 9, 10);
    // The longer answer (A) wins: p1 twice, p3 once, p5 twice, p6 once — 6 of 9.
    expect(p.longerAnswerWinRate.value).toBeCloseTo(6 / 9, 10);
    expect(text).toContain('both orders given (verdict_ab, verdict_ba), inconsistent → tie');
    expect(text).toContain(
      "Pairwise: each item's verdicts given by the dataset in both orders (95% bootstrap CI over items)",
    );
    expect(text).toContain('(4 of 6 items the same after the swap; 2 inconsistent, counted as tie)');
    // Each row keeps both verdicts as given: p3's, the first shown both times.
    expect(labeled).toContain('"order A,B: A; order B,A: A (= B)"');
  });

  it('fail the inconsistent items when the suite says so, leaving them out of accuracy', async () => {
    const { stdout, report } = await run(await folder('fail'));
    expect(stdout).toContain('pairwise-given: 4 scored, 2 failed');
    // Of p1, p2, p4 and p5 only p5 is wrong.
    expect(report.scores.label!.metrics.accuracy).toMatchObject({ value: 0.75, n: 4 });
    expect(report.metrics.pairwise).toMatchObject({ orders: 'given', items: 6, inconsistentItems: 2 });
  });
});
