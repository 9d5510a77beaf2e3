/**
 * A `dataset.extract` pattern that JavaScript's backtracking engine takes hours on
 * (`^((?:[A-Z]+[0-9]*)+)$` on a 40-character gold that almost matches) runs in linear time in
 * both shells: `assay run` and the AWS handlers on moto read the same rows the same way, the
 * row it does not match invalid with the reason, every other row scored on its extracted gold.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXAMPLE_DATA, snapshotEnv, tempDir } from '../helpers.js';
import { runSuiteInBothShells } from './both-shells.js';

afterAll(snapshotEnv());

describe('a hostile extract pattern in both shells', () => {
  it('reads every row at once, the almost-matching gold an invalid row', { timeout: 180_000 }, async () => {
    const dir = await tempDir('assay-hostile-aws-');
    const lines = (await readFile(join(EXAMPLE_DATA, 'gold_tp_fp3_fp2_fp1_en.csv'), 'utf8')).split('\n');
    // A row like the others, its gold 40 capitals and one character the pattern refuses.
    const hostile = `99,"A sentence.","A sentence.",${'A'.repeat(40)}!,s99,essay`;
    await writeFile(join(dir, 'gold.csv'), `${[...lines.slice(0, 13), hostile].join('\n')}\n`);
    const suitePath = join(dir, 'hostile.suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'hostile',
        task: 'gec',
        judge: 'feedback',
        method: 'baseline',
        dataset: { path: 'gold.csv', extract: { gold: '^((?:[A-Z]+[0-9]*)+)$' } },
        backends: ['sim:gold'],
      }),
    );

    const { localReport, cloudReport } = await runSuiteInBothShells({ dir, suitePath });

    expect(localReport?.counts).toMatchObject({ items: 13, invalidRows: 1, scored: 12 });
    expect(cloudReport?.counts).toEqual(localReport?.counts);
  });
});
