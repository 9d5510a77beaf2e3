/**
 * The checks family in both shells: the promptfoo example imported by `assay import` (given
 * outputs, a deterministic check and a grader model, the grades promptfoo gave as gold) gives
 * the same counts, scores and parity figures locally and in the cloud shell on moto.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, snapshotEnv, tempDir } from '../helpers.js';
import { runSuiteInBothShells } from './both-shells.js';

afterAll(snapshotEnv());

const EXAMPLES = join(REPO, 'examples');

describe('checks in the cloud shell', () => {
  it('scores every check as the local shell does', { timeout: 180_000 }, async () => {
    const dir = await tempDir('assay-cloud-checks-');
    await mkdir(join(dir, 'data'));
    await mkdir(join(dir, 'prompts'));
    await copyFile(
      join(EXAMPLES, 'data', 'promptfoo-riddles.jsonl'),
      join(dir, 'data', 'promptfoo-riddles.jsonl'),
    );
    await copyFile(join(EXAMPLES, 'prompts', 'riddles-rubric.md'), join(dir, 'prompts', 'riddles-rubric.md'));
    const suite = JSON.parse(await readFile(join(EXAMPLES, 'promptfoo-riddles.suite.json'), 'utf8'));
    suite.backends = ['sim:gpt-4o-mini'];
    suite.checks.checks[1].backend = 'sim:gpt-4o-mini';
    const suitePath = join(dir, 'riddles.suite.json');
    await writeFile(suitePath, JSON.stringify(suite));

    const { localReport, cloudReport } = await runSuiteInBothShells({ dir, suitePath });

    expect(localReport?.counts).toMatchObject({ items: 4, scored: 4, failed: 0 });
    expect(cloudReport?.counts).toEqual(localReport?.counts);
    // One grader call an item (the contains check needs none).
    expect(localReport?.cost.calls).toBe(4);
    expect(cloudReport?.cost.calls).toBe(4);
    expect(Object.keys(localReport?.scores ?? {})).toEqual(['pass', 'contains', 'llm_rubric']);
    // contains reproduces promptfoo's grades on the two tests that have it.
    expect(localReport?.scores.contains?.metrics.accuracy).toMatchObject({ value: 1, n: 2 });
    expect(cloudReport?.scores).toEqual(localReport?.scores);
  });
});
