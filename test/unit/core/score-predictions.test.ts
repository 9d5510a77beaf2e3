import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { scorePredictions } from '../../../shared/core/score-predictions.js';
import { readRows } from '../../../shared/datasets/read.js';
import type { ClassificationMetrics } from '../../../shared/metrics/index.js';
import { EXTERNAL, REPO, tempDir } from '../../helpers.js';

const run = promisify(execFile);
const FIXTURES = join(REPO, 'test', 'fixtures', 'score');
const open = (path: string) => readRows(createReadStream(path), 'csv');

describe('assay score', () => {
  it('reproduces hand-computed metrics, with a missing prediction as an Error row', async () => {
    const { report } = await scorePredictions({
      gold: open(join(FIXTURES, 'gold.csv')),
      predictions: open(join(FIXTURES, 'predictions.csv')),
      goldPath: 'gold.csv',
      predictionsPath: 'predictions.csv',
    });
    // Rows used (idx 6 has no prediction → Error, excluded): 7 pairs, 5 correct (0,1,3,5,7).
    const m = report.metrics as ClassificationMetrics;
    expect(m.n).toBe(7);
    expect(m.errors).toBe(1);
    expect(m.accuracy).toBeCloseTo(5 / 7, 12);
    // TP: P 2/3 R 2/3; FP1: 1/1; FP2: P 1 R 1/2; FP3: P 1/2 R 1 → F1 2/3, 1, 2/3, 2/3.
    expect(m.perClass.TP).toMatchObject({ precision: 2 / 3, recall: 2 / 3, support: 3 });
    expect(m.perClass.FP2!.f1).toBeCloseTo(2 / 3, 12);
    expect(m.macroF1).toBeCloseTo(0.75, 12);
    // Binary (TP,TN positive): positive F1 2/3, negative P 3/4 R 3/4 → F1 3/4; macro = 17/24.
    expect(m.binary.accuracy).toBeCloseTo(5 / 7, 12);
    expect(m.binary.f1).toBeCloseTo(17 / 24, 12);
    // po = 5/7, pe = (3·3 + 1·1 + 2·1 + 1·2)/49 = 2/7 → kappa = (3/7)/(5/7) = 0.6.
    expect(m.kappa).toBeCloseTo(0.6, 12);
    expect(m.confusion.FP2).toEqual({ FP1: 0, FP2: 1, FP3: 0, TP: 1 });
    // idx 9 has no gold row: reported, not dropped.
    expect(report.counts).toMatchObject({ items: 9, scored: 7, failed: 2, invalidRows: 1, errors: 1 });
  });

  it('loads the AQUA gold files unedited through the CLI and scores a file against itself', async () => {
    const out = await tempDir();
    const gold = join(EXTERNAL, 'aqua', 'gold_en.csv');
    const { stdout } = await run(
      process.execPath,
      [join(REPO, 'bin', 'assay.mjs'), 'score', '--gold', gold, '--predictions', gold, '--out', out],
      { cwd: REPO },
    );
    expect(stdout).toContain('220 scored, 0 failed');
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
    expect(report.metrics).toMatchObject({ accuracy: 1, macroF1: 1, kappa: 1, binary: { f1: 1 } });
    expect(report.metrics.labels.sort()).toEqual(['FN', 'FP1', 'FP2', 'FP3', 'TN', 'TP']);
    for (const file of ['report.txt', 'labeled.csv', 'errors.txt', 'correct.txt']) {
      await expect(readFile(join(out, file), 'utf8')).resolves.toBeTruthy();
    }
  }, 60_000);
});
