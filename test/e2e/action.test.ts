/**
 * The composite action (action.yml) as a GitHub runner runs it: its steps read from the file,
 * `${{ inputs.* }}` and `${{ steps.*.outputs.* }}` filled in, each `run:` script run by
 * `bash --noprofile --norc -eo pipefail` (GitHub's bash) in its working directory, with
 * GITHUB_OUTPUT (one file per step) and GITHUB_STEP_SUMMARY as temporary files. A step runs when
 * every step before it succeeded, or when its `if` is `always()`. The project is a folder whose
 * node_modules/.bin/assay is this repository's binary, so `npx --no-install assay` finds it and
 * the install step has nothing to do.
 */
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { REPO, tempDir } from '../helpers.js';
import { allNamed, parseXml } from '../xml.js';

const EXAMPLES = join(REPO, 'examples');

interface Step {
  name: string;
  id?: string;
  if?: string;
  shell: string;
  run: string;
  'working-directory'?: string;
  env?: Record<string, string>;
}

interface Action {
  inputs: Record<string, { required: string; default?: string }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: Step[] };
}

// YAML 1.2 as GitHub reads it, strict: a duplicate key or anything malformed throws.
const action = parseYaml(await readFile(join(REPO, 'action.yml'), 'utf8'), { uniqueKeys: true }) as Action;

/** The environment of a runner: no API key, no npm settings of the test's own npm. */
const runnerEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k) && !/^npm_/i.test(k)),
);

interface ActionRun {
  /** Whether the action failed (a step exited non-zero), and each step's exit code (null: not run). */
  failed: boolean;
  codes: Record<string, number | null>;
  outputs: Record<string, string>;
  summary: string;
  log: string;
}

/** Reads `name=value` lines (and `name<<EOF` blocks) of a GITHUB_OUTPUT file. */
function readOutputs(text: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heredoc = /^([\w-]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const end = lines.indexOf(heredoc[2]!, i + 1);
      outputs[heredoc[1]!] = lines.slice(i + 1, end).join('\n');
      i = end;
    } else if (line.includes('='))
      outputs[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
  }
  return outputs;
}

async function runAction(inputs: Record<string, string>, workspace: string): Promise<ActionRun> {
  for (const [name, input] of Object.entries(action.inputs))
    if (input.required === 'true' && inputs[name] === undefined) throw new Error(`input ${name} is required`);
  const values = Object.fromEntries(
    Object.entries(action.inputs).map(([name, input]) => [name, inputs[name] ?? input.default ?? '']),
  );
  const stepOutputs: Record<string, Record<string, string>> = {};
  const fill = (text: string) =>
    text.replace(/\$\{\{\s*([^}]*?)\s*\}\}/g, (_, expression: string) => {
      const input = /^inputs\.([\w-]+)$/.exec(expression);
      if (input) return values[input[1]!] ?? '';
      const output = /^steps\.([\w-]+)\.outputs\.([\w-]+)$/.exec(expression);
      if (output) return stepOutputs[output[1]!]?.[output[2]!] ?? '';
      throw new Error(`an expression this runner does not know: ${expression}`);
    });
  const runner = await tempDir('assay-runner-');
  const summaryFile = join(runner, 'step-summary.md');
  await writeFile(summaryFile, '');
  let failed = false;
  let log = '';
  const codes: ActionRun['codes'] = {};
  for (const [i, step] of action.runs.steps.entries()) {
    if (step.if !== undefined && step.if !== 'always()')
      throw new Error(`a condition this runner does not know: ${step.if}`);
    if (failed && step.if !== 'always()') {
      codes[step.name] = null;
      continue;
    }
    expect(step.shell).toBe('bash');
    const outputFile = join(runner, `output-${i}`);
    await writeFile(outputFile, '');
    const script = join(runner, `step-${i}.sh`);
    await writeFile(script, step.run);
    const ran = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', script], {
      cwd: resolve(workspace, fill(step['working-directory'] ?? '.')),
      env: {
        ...runnerEnv,
        ...Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, fill(v)])),
        GITHUB_OUTPUT: outputFile,
        GITHUB_STEP_SUMMARY: summaryFile,
        ASSAY_CACHE_DIR: join(runner, 'cache'),
      },
      encoding: 'utf8',
    });
    log += `## ${step.name}\n${ran.stdout}${ran.stderr}`;
    codes[step.name] = ran.status;
    if (ran.status !== 0) failed = true;
    if (step.id) stepOutputs[step.id] = readOutputs(await readFile(outputFile, 'utf8'));
  }
  const outputs = Object.fromEntries(
    Object.entries(action.outputs).map(([name, o]) => [name, fill(o.value)]),
  );
  return { failed, codes, outputs, summary: await readFile(summaryFile, 'utf8'), log };
}

/**
 * A repository whose project is in `app/`: assay installed there (this repository's binary) and
 * a suite of the reply-tone example in `app/evals/`. Returns the project's folder.
 */
async function project(gate: string[] | undefined): Promise<string> {
  const dir = join(await tempDir('assay-action-'), 'app');
  await mkdir(join(dir, 'node_modules', '.bin'), { recursive: true });
  await symlink(join(REPO, 'bin', 'assay.mjs'), join(dir, 'node_modules', '.bin', 'assay'));
  const suite = JSON.parse(await readFile(join(EXAMPLES, 'reply-tone-prompts.suite.json'), 'utf8'));
  suite.dataset.path = join(EXAMPLES, suite.dataset.path);
  await mkdir(join(dir, 'evals', 'prompts'), { recursive: true });
  for (const prompt of [suite.judge.prompt, suite.variants[1].options.judge.prompt])
    await copyFile(join(EXAMPLES, prompt), join(dir, 'evals', prompt));
  if (gate) suite.gate = { conditions: gate, required: true };
  await writeFile(join(dir, 'evals', 'tone.suite.json'), JSON.stringify(suite));
  return dir;
}

describe('action.yml', { timeout: 180_000 }, () => {
  it('is a composite action whose steps take their inputs from the environment, not pasted into scripts', () => {
    expect(action.runs.using).toBe('composite');
    expect(Object.keys(action.inputs).sort()).toEqual(
      ['args', 'junit', 'markdown', 'simulate', 'suite', 'working-directory'].sort(),
    );
    expect(Object.keys(action.outputs).sort()).toEqual(['exit-code', 'junit', 'markdown', 'verdict']);
    for (const step of action.runs.steps) expect(step.run).not.toMatch(/\$\{\{/);
  });

  it('a sweep whose required gate fails: the step fails with the exit code, the summary and the outputs are written', async () => {
    const workspace = await project(['accuracy >= baseline + 0.5']);
    const run = await runAction(
      {
        suite: 'evals/tone.suite.json',
        simulate: 'true',
        args: '--out  out/sweep',
        junit: 'reports/assay.xml',
        markdown: 'reports/assay.md',
      },
      workspace,
    );
    expect(run.failed, run.log).toBe(true);
    expect(run.codes).toEqual({
      'Install dependencies (when assay is not installed yet)': 0,
      'Run assay': 0,
      'Step summary': 0,
      'Fail when assay run failed': 1,
    });
    expect(run.outputs).toEqual({
      junit: 'reports/assay.xml',
      markdown: 'reports/assay.md',
      verdict: 'fail',
      'exit-code': '1',
    });
    const markdown = await readFile(join(workspace, 'reports', 'assay.md'), 'utf8');
    expect(run.summary).toBe(markdown);
    expect(markdown).toContain('> **SIMULATED** — ');
    expect(markdown).toContain('- **v2: NOT PROMOTED (required)**');
    const junit = parseXml(await readFile(join(workspace, 'reports', 'assay.xml'), 'utf8'));
    expect(junit.attributes.failures).toBe('2');
    expect(allNamed(junit, 'testcase').map((c) => c.attributes.name)).toContain(
      'v2: accuracy >= baseline + 0.5 (SIMULATED)',
    );
    // The extra arguments reached assay run: the sweep is in the folder they named.
    expect(await readFile(join(workspace, 'out', 'sweep', 'sweep.json'), 'utf8')).toContain(
      '"suite": "reply-tone-prompts"',
    );
  });

  it('a sweep that passes: every step succeeds, verdict pass; a suite that cannot run: verdict error, the summary says so', async () => {
    const app = await project(['scored_rate >= 0.9']);
    const workspace = resolve(app, '..');
    const passed = await runAction(
      { suite: 'evals/tone.suite.json', simulate: 'true', 'working-directory': 'app', args: '--out out' },
      workspace,
    );
    expect(passed.failed, passed.log).toBe(false);
    expect(passed.outputs).toMatchObject({ verdict: 'pass', 'exit-code': '0', junit: 'assay-junit.xml' });
    expect(passed.summary).toContain('Every required variant passed the gate.');
    expect(parseXml(await readFile(join(app, 'assay-junit.xml'), 'utf8')).attributes).toMatchObject({
      failures: '0',
      tests: '4',
    });

    const missing = await runAction({ suite: 'evals/none.suite.json', simulate: 'true' }, app);
    expect(missing.failed).toBe(true);
    expect(missing.outputs).toMatchObject({ verdict: 'error', 'exit-code': '1' });
    expect(missing.summary).toContain('assay run wrote no summary');
  });
});
