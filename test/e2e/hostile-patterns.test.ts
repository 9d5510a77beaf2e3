/**
 * Patterns a user writes, run through the CLI: a `dataset.extract` pattern that JavaScript's
 * backtracking engine takes hours on (`^((?:a+)+)$` on a 40-character field that almost
 * matches) finishes at once, every row ending as one result; a pattern with a backreference,
 * which no linear-time engine runs, is refused when the suite loads, with the reason; a gate
 * condition full of spaces loads at once and gates the sweep; a suite name too long for the
 * file names made of it is refused with the limit. The vitest timeout is the bound.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ItemResult } from '../../shared/model/model.js';
import { REPO, runAsUser, tempDir } from '../helpers.js';

const FORTY = 'a'.repeat(40);

/** A judge suite on a JSONL dataset whose gold the suite extracts with `extract`. */
async function writeSuite(dir: string, extract: string, extra: Record<string, unknown> = {}) {
  const rows = [
    { id: 'r0', question: 'Is it answerable?', verdict: FORTY },
    { id: 'r1', question: 'Is this one?', verdict: `${FORTY}!` },
    { id: 'r2', question: 'And this?', verdict: 'a' },
  ];
  await writeFile(join(dir, 'data.jsonl'), `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
  await mkdir(join(dir, 'prompts'), { recursive: true });
  await writeFile(
    join(dir, 'prompts', 'judge.md'),
    'Is the question answerable?\n\n<question>\n{question}\n</question>\n',
  );
  const suitePath = join(dir, 'suite.json');
  await writeFile(
    suitePath,
    JSON.stringify({
      version: 1,
      name: 'hostile',
      task: 'judge',
      dataset: {
        path: 'data.jsonl',
        columns: { gold: 'verdict' },
        extract: { gold: extract },
        recode: { gold: { [FORTY]: 'yes', a: 'no' } },
      },
      judge: { prompt: 'prompts/judge.md', labels: ['yes', 'no'] },
      backends: ['openai:gpt-4o-mini'],
      ...extra,
    }),
  );
  return suitePath;
}

/** `assay run` as a user runs it, from the repository's binary. */
function run(suitePath: string, dir: string) {
  return runAsUser(
    process.execPath,
    [
      join(REPO, 'bin', 'assay.mjs'),
      'run',
      suitePath,
      '--simulate',
      '--runs',
      join(dir, 'runs'),
      '--no-progress',
    ],
    dir,
  );
}

describe('patterns a suite gives, through the CLI', { timeout: 60_000 }, () => {
  it('extracts with ^((?:a+)+)$ on 40-character fields at once; the row it does not match is invalid', async () => {
    const dir = await tempDir('assay-e2e-patterns-');
    const suitePath = await writeSuite(dir, '^((?:a+)+)$');
    const { code, stderr } = await run(suitePath, dir);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const [folder] = await readdir(join(dir, 'runs'));
    const results = (await readFile(join(dir, 'runs', folder!, 'results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ItemResult)
      .sort((a, b) => a.row - b.row);
    // Every row ends as exactly one result: scored on the extracted gold, or invalid with the reason.
    expect(results.map((r) => [r.status, r.gold ?? r.failure?.message])).toEqual([
      ['scored', 'yes'],
      ['failed', `row 2: gold "${FORTY}!" does not match dataset.extract.gold (^((?:a+)+)$)`],
      ['scored', 'no'],
    ]);
  });

  it('refuses a backreference in dataset.extract when the suite loads, saying why, and runs nothing', async () => {
    const dir = await tempDir('assay-e2e-patterns-');
    const suitePath = await writeSuite(dir, '(a)\\1');
    const { code, stdout, stderr } = await run(suitePath, dir);
    expect(code).not.toBe(0);
    expect(stdout).toBe('');
    expect(stderr).toContain(
      'dataset.extract.gold: the pattern uses a backreference (\\1): patterns are RE2 syntax and run in linear time, which rules out backreferences',
    );
    await expect(readdir(join(dir, 'runs'))).rejects.toThrow(/ENOENT/);
  });

  it('loads a sweep whose gate condition has 100,000 spaces inside words( … ), and gates on it', async () => {
    const dir = await tempDir('assay-e2e-patterns-');
    const spaces = ' '.repeat(100_000);
    const suitePath = await writeSuite(dir, '^(a+)$', {
      variants: [{ name: 'cold' }, { name: 'warm', params: { temperature: 0.5 } }],
      gate: { conditions: [`p50 latency where words(${spaces}question${spaces}) >= 1 < 1000000`] },
    });
    const { code, stdout, stderr } = await run(suitePath, dir);
    expect(stderr).not.toMatch(/gate condition|error/i);
    expect(code).toBe(0);
    // Read with its column trimmed, and evaluated on the items with at least one word in it.
    expect(stdout).toMatch(/: p50 latency where words\(question\) >= 1 [\d.]+ meets < 1000000\n/);
    expect(stdout).toContain('every variant was promoted');
  });

  it('refuses a suite name past 100 characters when the suite loads, saying why', async () => {
    const dir = await tempDir('assay-e2e-patterns-');
    const suitePath = await writeSuite(dir, '^(a+)$', { name: 'n'.repeat(300) });
    const { code, stderr } = await run(suitePath, dir);
    expect(code).not.toBe(0);
    expect(stderr).toContain('name: at most 100 characters: file names and S3 object keys are built from it');
    expect(stderr).not.toContain('ENAMETOOLONG');
  });
});
