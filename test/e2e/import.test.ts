/**
 * `assay import` through the CLI binary, on published examples of each format (copied into
 * test/fixtures/import with their attribution): the suite folder it writes runs with
 * `assay run`, what it cannot import is listed with its reason, and `--check` reproduces a
 * deterministic grader's grades or fails naming the items that flipped.
 */
import { spawnSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assayCli, REPO, tempDir } from '../helpers.js';

const FIXTURES = join(REPO, 'test', 'fixtures', 'import');

/** The CLI's exit code and output, whether it failed or not. */
async function assay(args: string[], dir: string) {
  try {
    const { stdout, stderr } = await assayCli(args, dir);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** util-linux `script`: the command under a pseudo-terminal, as a user's shell runs it. */
const HAS_SCRIPT = /util-linux/.test(spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout ?? '');

const json = async (path: string) => JSON.parse(await readFile(path, 'utf8'));

describe('assay import', () => {
  it('imports an openai/evals registry file (Match, Includes, FuzzyMatch): one suite per eval, each runs', async () => {
    const dir = await tempDir();
    const out = join(dir, 'basic');
    const imported = await assay(
      ['import', join(FIXTURES, 'openai-evals-registry/registry/evals/test-basic.yaml'), '--out', out],
      dir,
    );
    expect(imported.code, imported.stderr).toBe(0);
    const match = await json(join(out, 'test-match.suite.json'));
    expect(match.checks.checks).toEqual([
      expect.objectContaining({ type: 'match', how: 'starts-with', values: ['{ideal}'] }),
    ]);
    const fuzzy = await json(join(out, 'test-fuzzy-match.suite.json'));
    expect(fuzzy.checks.checks[0]).toMatchObject({ type: 'match', how: 'fuzzy' });
    // A sample's list of acceptable answers is kept as a list.
    const rows = (await readFile(join(out, 'data/test-fuzzy-match.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(JSON.parse(rows[1].ideal)).toEqual(['Season 11', '11']);
    const ran = await assay(
      [
        'run',
        join(out, 'test-includes.suite.json'),
        '--simulate',
        '--out',
        join(dir, 'run'),
        '--no-progress',
      ],
      dir,
    );
    expect(ran.code, ran.stderr).toBe(0);
    const report = await json(join(dir, 'run', 'report.json'));
    expect(report.counts.scored).toBe(3);
    expect(Object.keys(report.scores)).toEqual(['pass', 'includes']);
  });

  it('imports a model-graded registry eval with its spec: the choices, their scores, the answer prompt', async () => {
    const dir = await tempDir();
    const out = join(dir, 'logic');
    const imported = await assay(
      ['import', join(FIXTURES, 'openai-evals-registry/registry/evals/logic.yaml'), '--out', out],
      dir,
    );
    expect(imported.code, imported.stderr).toBe(0);
    const suite = await json(join(out, 'logic-fact.suite.json'));
    // The spec says `classify` (how the choice is read); the eval's cot_classify picks the appended instructions.
    expect(suite.checks.checks[0]).toMatchObject({
      type: 'model',
      choices: ['A', 'B', 'C', 'D', 'E'],
      choiceScores: { A: 0.5, B: 0.75, C: 1, D: 0, E: 0.75 },
      evalType: 'classify',
    });
    const prompt = await readFile(join(out, 'prompts', suite.checks.checks[0].prompt), 'utf8');
    expect(prompt).toContain('[Submission]: <output>{output}</output>');
    expect(prompt).toContain('Then print only a single choice from "A" or "B" or "C" or "D" or "E"');
    const ran = await assay(
      ['run', join(out, 'logic-fact.suite.json'), '--simulate', '--out', join(dir, 'run'), '--no-progress'],
      dir,
    );
    expect(ran.code, ran.stderr).toBe(0);
  });

  it('imports a promptfoo config: per-test assertions as checks with `when`, code assertions refused with the reason', async () => {
    const dir = await tempDir();
    const out = join(dir, 'pf');
    const imported = await assay(
      ['import', join(FIXTURES, 'promptfoo/simple-test/promptfooconfig.yaml'), '--out', out],
      dir,
    );
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toMatch(/NOT IMPORTED: assertion javascript: a javascript assertion runs code/);
    expect(imported.stdout).toMatch(/NOT IMPORTED: assertion python:/);
    expect(imported.stdout).toMatch(/NOT IMPORTED: assertion similar:/);
    const suite = await json(join(out, 'promptfoo.suite.json'));
    const types = suite.checks.checks.map((c: { type: string; name: string }) => `${c.name}:${c.type}`);
    // One check per assertion kind and place in its test: the last test's icontains (from an
    // assertion template) is the same check as the second test's, with its own value.
    expect(types).toEqual(['equals:equals', 'icontains:contains', 'is_json:json', 'llm_rubric:model']);
    const rows = (await readFile(join(out, 'data.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => r.icontains_value)).toEqual(['', 'grub', '', '', 'arrr']);
    expect(suite.checks.checks[0].when).toBe('equals_value');
    // An assertion without a value is marked on the tests that have it: is-json only on the third.
    expect(suite.checks.checks[2].when).toBe('is_json_value');
    expect(rows.map((r) => r.is_json_value)).toEqual(['', '', 'yes', '', '']);
    // Two prompts, one provider: a sweep of two variants.
    expect(suite.variants.map((v: { name: string }) => v.name)).toEqual([
      'prompt1_openai_gpt_4_1_mini',
      'prompt2_openai_gpt_4_1_mini',
    ]);
    const ran = await assay(
      ['run', join(out, 'promptfoo.suite.json'), '--simulate', '--out', join(dir, 'run'), '--no-progress'],
      dir,
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(/2 variants/);
  });

  it('--check on a promptfoo results file: contains reproduces every grade; cost and latency are listed as not imported', async () => {
    const dir = await tempDir();
    const out = join(dir, 'riddles');
    const checked = await assay(
      [
        'import',
        join(FIXTURES, 'promptfoo/results/sample-export.json'),
        '--out',
        out,
        '--check',
        '--simulate',
      ],
      dir,
    );
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toMatch(/NOT IMPORTED: assertion cost:/);
    expect(checked.stdout).toMatch(/contains: REPRODUCED — 2 of 2 grades the same/);
    expect(checked.stdout).toMatch(/llm_rubric \(model\): agreement .*, 0 of 4 flipped/);
    expect(checked.stdout).toMatch(/SIMULATED/);
    const [parity] = await json(join(out, 'check', 'parity.json'));
    const contains = parity.parity.find((p: { check: string }) => p.check === 'contains');
    expect(contains).toMatchObject({
      deterministic: true,
      reproduced: true,
      compared: 2,
      notCompared: 0,
      flipped: [],
    });
    // The riddle without a contains assertion: not applicable there, not a pass and not a shortfall.
    const [run] = (await readdir(join(out, 'check'))).filter((f) => !f.endsWith('.json'));
    const report = await json(join(out, 'check', run!, 'report.json'));
    expect(report.scores.contains.unscored).toEqual({ not_applicable: 2 });
    expect(report.scores.contains.metrics.passRate).toMatchObject({ value: 1, n: 2 });
    expect(report.scores.pass.n).toBe(4);
  });

  it('--check fails when a deterministic grader does not reproduce: the published OpenAI Evals example compares the input', async () => {
    const dir = await tempDir();
    const out = join(dir, 'headlines');
    const checked = await assay(
      [
        'import',
        join(FIXTURES, 'openai-evals-api/news-headlines/eval.json'),
        '--output-items',
        join(FIXTURES, 'openai-evals-api/news-headlines/output_items.json'),
        '--out',
        out,
        '--check',
      ],
      dir,
    );
    expect(checked.code).toBe(1);
    expect(checked.stdout).toMatch(/String_check: NOT REPRODUCED — 0 of 1 grades the same/);
    expect(checked.stdout).toMatch(
      /5: given pass, now fail \("Stock Markets Rally After Positive Economic Data Released" is not "Markets"\)/,
    );
    expect(checked.stderr).toMatch(
      /not reproduced by the imported checks: external_data_eval\.suite\.json: String_check/,
    );
  });

  it('imports an OpenAI Evals definition with its items and the run that answers them', async () => {
    const dir = await tempDir();
    const out = join(dir, 'tickets');
    const base = join(FIXTURES, 'openai-evals-api/it-ticket-categorization');
    const imported = await assay(
      [
        'import',
        join(base, 'eval.json'),
        '--items',
        join(base, 'items.jsonl'),
        '--run',
        join(base, 'run_create.json'),
        '--out',
        out,
      ],
      dir,
    );
    expect(imported.code, imported.stderr).toBe(0);
    const suite = await json(join(out, 'it_ticket_categorization.suite.json'));
    expect(suite.backends).toEqual(['openai:gpt-4.1']);
    expect(suite.checks.checks).toEqual([
      expect.objectContaining({ type: 'equals', input: '{output}', value: '{correct_label}', not: false }),
    ]);
    expect(await readFile(join(out, 'prompts/answer.md'), 'utf8')).toContain(
      '<ticket_text>{ticket_text}</ticket_text>',
    );
    // Without the run or outputs there is no one to answer: a clear error, nothing written.
    const none = await assay(
      ['import', join(base, 'eval.json'), '--items', join(base, 'items.jsonl'), '--out', join(dir, 'x')],
      dir,
    );
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(
      /3 items have no output: give the run's output items \(--output-items\) or the run's definition \(--run\)/,
    );
    // Importing again over the folder refuses before writing.
    const again = await assay(
      [
        'import',
        join(base, 'eval.json'),
        '--items',
        join(base, 'items.jsonl'),
        '--run',
        join(base, 'run_create.json'),
        '--out',
        out,
      ],
      dir,
    );
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already exist: import into a new folder/);
  });

  it('refuses a file of no known format with the formats it reads', async () => {
    const dir = await tempDir();
    const file = join(REPO, 'package.json');
    const result = await assay(['import', file, '--out', join(dir, 'x')], dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/no testing_criteria/);
  });

  it.skipIf(!HAS_SCRIPT)('runs under a terminal: the same folder, the same parity verdict', async () => {
    const dir = await tempDir();
    const out = join(dir, 'riddles');
    const quote = (a: string) => `'${a.replaceAll("'", `'\\''`)}'`;
    const command = [
      process.execPath,
      join(REPO, 'bin', 'assay.mjs'),
      'import',
      join(FIXTURES, 'promptfoo/results/sample-export.json'),
      '--out',
      out,
      '--check',
      '--simulate',
    ];
    const ran = spawnSync('script', ['-qec', command.map(quote).join(' '), '/dev/null'], {
      cwd: dir,
      encoding: 'utf8',
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k))),
        ASSAY_CACHE_DIR: join(dir, 'cache'),
        TERM: 'xterm',
      },
    });
    expect(ran.status, ran.stdout).toBe(0);
    expect(ran.stdout).toMatch(/contains: REPRODUCED — 2 of 2 grades the same/);
    expect((await json(join(out, 'check', 'parity.json')))[0].parity[0]).toMatchObject({
      check: 'contains',
      reproduced: true,
    });
  });
});
