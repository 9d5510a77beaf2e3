/**
 * `assay score` scores predictions made elsewhere: the screen, the report and the leaderboard
 * name where they come from, never a backend of the suite that was not called.
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { readRows } from '../../shared/lib/datasets/read.js';
import type { Report } from '../../shared/model/report.js';
import { REPO, suiteInput, tempDir } from '../helpers.js';

const GOLD_CSV = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');
const noKeys = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k)));

describe('assay score names the predictions it scores', { timeout: 120_000 }, () => {
  it('on screen, in the report and on the leaderboard, instead of the suite backend never called', async () => {
    const dir = await tempDir('assay-score-source-');
    const predictions: string[] = ['idx,pred'];
    for await (const row of readRows(createReadStream(GOLD_CSV), 'csv', {})) {
      if (row.record?.idx) predictions.push(`${row.record.idx},${row.record.tp_fp_label ?? 'TP'}`);
    }
    await writeFile(join(dir, 'tool-preds.csv'), `${predictions.join('\n')}\n`);
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify(
        suiteInput({
          name: 'scored-elsewhere',
          judge: 'edit',
          dataset: { path: GOLD_CSV },
          backends: ['openai:gpt-4o-mini'],
        }),
      ),
    );
    const assay = (...args: string[]) =>
      promisify(execFile)(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args], {
        cwd: dir,
        env: { ...noKeys, ASSAY_CACHE_DIR: join(dir, 'cache') },
      });
    const scored = await assay(
      'score',
      '--suite',
      'suite.json',
      '--gold',
      GOLD_CSV,
      '--predictions',
      'tool-preds.csv',
      '--out',
      'scored',
    );
    const screen = scored.stdout + scored.stderr;
    expect(screen).not.toContain('gpt-4o-mini');
    expect(screen).toContain('to score: predictions from tool-preds.csv (column pred)');
    const report = JSON.parse(await readFile(join(dir, 'scored', 'report.json'), 'utf8')) as Report;
    expect(report).toMatchObject({
      backends: [],
      predictions: 'predictions from tool-preds.csv (column pred)',
    });
    expect(await readFile(join(dir, 'scored', 'report.txt'), 'utf8')).toContain(
      'outputs: predictions from tool-preds.csv (column pred)',
    );

    const board = await assay('leaderboard', '--runs', '.');
    expect(board.stdout).not.toContain('gpt-4o-mini');
    expect(board.stdout).toContain('predictions from tool-preds.csv (column pred)');

    // Compared with a run of the suite's backend: each side says what answered it.
    await assay('run', 'suite.json', '--simulate', '--out', 'run', '--no-progress');
    await assay('compare', 'scored', 'run', '--out', 'cmp');
    const comparison = await readFile(join(dir, 'cmp', 'comparison.txt'), 'utf8');
    expect(comparison).toMatch(
      /^base {7}\S+ {3}started \S+ {3}outputs: predictions from tool-preds\.csv \(column pred\)$/m,
    );
    expect(comparison).toMatch(/^candidate {2}\S+ {3}started \S+ {3}backends: sim:gpt-4o-mini$/m);
  });
});
