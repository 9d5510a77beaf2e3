/**
 * `assay run` of a judge whose items several annotators labelled, as a user runs it: a row whose
 * annotators tie is an invalid row for the judge yet its labels count among the annotators, and
 * a row whose gold is blank (no `partialGold`) is an invalid row with its reason, so the items
 * the metrics use are the items the report counts as scored.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assayCli, tempDir } from '../helpers.js';
import { readReport, readResultLines } from './run-output.js';

describe('the human ceiling, end to end', { timeout: 120_000 }, () => {
  it('a tie counts among the annotators, a blank gold is an invalid row with its reason', async () => {
    const dir = await tempDir('assay-e2e-ceiling-');
    await mkdir(join(dir, 'prompts'));
    await writeFile(join(dir, 'prompts', 'rate.md'), 'Is the reply polite?\n\n<reply>\n{reply}\n</reply>\n');
    // Six replies, two annotators: rows 1–4 agree, row 5 ties (yes / no), row 6 both blank.
    const rows = [
      ['yes', 'yes'],
      ['no', 'no'],
      ['yes', 'yes'],
      ['no', 'no'],
      ['yes', 'no'],
      ['', ''],
    ];
    await writeFile(
      join(dir, 'data.csv'),
      ['id,reply,w1,w2', ...rows.map(([a, b], i) => `r${i + 1},Reply ${i + 1}.,${a},${b}`)].join('\n'),
    );
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify({
        version: 1,
        name: 'ceiling',
        task: 'judge',
        dataset: { path: 'data.csv', columns: { gold: ['w1', 'w2'] } },
        judge: { prompt: 'prompts/rate.md', labels: ['yes', 'no'] },
        backends: ['openai:gpt-4o-mini'],
      }),
    );
    const out = join(dir, 'out');
    await assayCli(['run', join(dir, 'suite.json'), '--simulate', '--out', out, '--no-progress'], dir);
    const report = await readReport(out);
    expect(report.counts).toMatchObject({ items: 6, scored: 4, invalidRows: 2 });
    const results = await readResultLines(out);
    const failed = results.filter((r) => r.status === 'failed').sort((a, b) => a.row - b.row);
    expect(failed.map((r) => r.failure?.message)).toEqual([
      expect.stringMatching(/^row 5: the annotators tie/),
      'row 6: the gold (every annotator) is blank: a row without gold is invalid unless dataset.partialGold says some rows have none by design',
    ]);
    expect(failed[0]!.annotations).toEqual(['yes', 'no']);
    // The judge's metrics run over the four items with gold; the annotators' over five (the tie
    // included): pairwise agreement (4 · 1 + 0) / 5; alpha by hand, 10 values (5 yes, 5 no),
    // one disagreeing unit: 1 − 9 · 2 / (100 − 25 − 25) = 1 − 18 / 50 = 0.64.
    const label = report.scores.label!;
    expect(label.n).toBe(4);
    expect(label.metrics.accuracy!.n).toBe(4);
    const ceiling = label.humanAgreement!;
    expect(ceiling.items).toBe(5);
    expect(ceiling.pairwiseAgreement).toMatchObject({ value: 0.8, n: 5 });
    expect(ceiling.alpha.value).toBeCloseTo(0.64, 12);
    expect(ceiling.judgeAgreement.n).toBe(4);
    expect(await readFile(join(out, 'report.txt'), 'utf8')).toMatch(
      /the judge agrees with the annotators (more|less|as much) (than|as) they agree with each other \(Krippendorff's alpha/,
    );
  });
});
