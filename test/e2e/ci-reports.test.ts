/**
 * CI reports as a CI job makes them: `assay run … --simulate --junit FILE --markdown FILE` and
 * `assay compare … --junit --markdown` through the `assay` binary, in a subprocess. A plain run,
 * a sweep whose required gate fails (the command exits 1 and both files are still written, the
 * failure in them), and the comparison of that sweep's two runs. The figures in the files are
 * the reports' own (report.json, sweep.json).
 */
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { num } from '../../shared/lib/format.js';
import type { Report } from '../../shared/model/report.js';
import { SIMULATED_NOTICE } from '../../shared/reports/report.js';
import type { SweepReport } from '../../shared/sweeps/sweep.js';
import { assayCli, REPO, tempDir } from '../helpers.js';
import { allNamed, parseXml, type XmlElement } from '../xml.js';

const EXAMPLES = join(REPO, 'examples');

/** The command's exit code and output, whether it failed or not. */
async function assay(args: string[], dir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return assayCli(args, dir).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

const child = (e: XmlElement, name: string) => e.children.find((c) => c.name === name);
const outcomeOf = (c: XmlElement) =>
  child(c, 'failure') ? 'failure' : child(c, 'skipped') ? 'skipped' : 'pass';

/**
 * The reply-tone prompts sweep with a gate v2 cannot meet (the simulator ignores the prompt, so
 * the two versions tie) and required: `assay run` exits 1. Written in `dir` with its prompts;
 * it reads the example's dataset.
 */
async function failingSweep(dir: string): Promise<string> {
  const suite = JSON.parse(await readFile(join(EXAMPLES, 'reply-tone-prompts.suite.json'), 'utf8'));
  suite.name = 'reply-tone-gated';
  suite.dataset.path = join(EXAMPLES, suite.dataset.path);
  // The prompts sit beside the suite, as the example's do.
  await mkdir(join(dir, 'prompts'));
  for (const prompt of [suite.judge.prompt, suite.variants[1].options.judge.prompt])
    await copyFile(join(EXAMPLES, prompt), join(dir, prompt));
  suite.gate = { conditions: ['accuracy >= baseline + 0.5', 'scored_rate >= 0.9'], required: true };
  const path = join(dir, 'gated.suite.json');
  await writeFile(path, JSON.stringify(suite));
  return path;
}

describe('CI reports, end to end', { timeout: 180_000 }, () => {
  it('a plain run: one passing case, SIMULATED, and a summary of the figures report.json has', async () => {
    const dir = await tempDir('assay-ci-run-');
    const out = join(dir, 'run');
    const { code, stderr } = await assay(
      [
        'run',
        'examples/reply-tone.suite.json',
        '--simulate',
        '--out',
        out,
        '--no-progress',
        '--junit',
        join(dir, 'ci', 'out.xml'),
        '--markdown',
        join(dir, 'ci', 'out.md'),
      ],
      dir,
    );
    expect(code).toBe(0);
    expect(stderr).toContain(`wrote ${join(dir, 'ci', 'out.xml')}`);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as Report;

    const root = parseXml(await readFile(join(dir, 'ci', 'out.xml'), 'utf8'));
    expect(root.attributes).toMatchObject({ tests: '1', failures: '0', skipped: '0' });
    const suite = child(root, 'testsuite')!;
    expect(suite.attributes.name).toBe('assay run reply-tone (SIMULATED)');
    const properties = Object.fromEntries(
      allNamed(suite, 'property').map((p) => [p.attributes.name, p.attributes.value]),
    );
    expect(properties).toMatchObject({ simulated: 'true', notice: SIMULATED_NOTICE, runId: report.runId });
    const [run] = allNamed(root, 'testcase');
    expect(run!.attributes.name).toBe('run reply-tone (SIMULATED)');
    expect(outcomeOf(run!)).toBe('pass');
    const output = child(run!, 'system-out')!.text;
    expect(output).toContain(`items ${report.counts.items}   scored ${report.counts.scored}`);
    expect(output).toContain(`accuracy ${num(report.scores.label!.metrics.accuracy!.value)}`);

    const md = await readFile(join(dir, 'ci', 'out.md'), 'utf8');
    expect(md.split('\n').slice(0, 4)).toEqual([
      '## Assay run — reply-tone (judge)',
      '',
      '> [!WARNING]',
      `> **SIMULATED** — ${SIMULATED_NOTICE.replace('SIMULATED: ', '')}`,
    ]);
    const accuracy = report.scores.label!.metrics.accuracy!;
    expect(md).toContain(
      `| label (primary) | accuracy | ${num(accuracy.value)} | [${num(accuracy.ci![0])}, ${num(accuracy.ci![1])}] | ${accuracy.n} |`,
    );
    expect(md).toContain(`items ${report.counts.items} · scored ${report.counts.scored}`);
  });

  it('a run that scores nothing (every row invalid) exits 1; its case fails with the reason and counts the invalid rows', async () => {
    const dir = await tempDir('assay-ci-invalid-');
    await mkdir(join(dir, 'prompts'));
    await copyFile(join(EXAMPLES, 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
    const suite = JSON.parse(await readFile(join(EXAMPLES, 'reply-tone.suite.json'), 'utf8'));
    suite.dataset = { path: join(EXAMPLES, 'data', 'replies.csv'), columns: { gold: 'humman' } };
    await writeFile(join(dir, 'typo.suite.json'), JSON.stringify(suite));
    const { code, stderr } = await assay(
      [
        'run',
        join(dir, 'typo.suite.json'),
        '--simulate',
        '--out',
        join(dir, 'run'),
        '--no-progress',
        '--junit',
        join(dir, 'out.xml'),
        '--markdown',
        join(dir, 'out.md'),
      ],
      dir,
    );
    expect(code).toBe(1);
    expect(stderr).toContain('nothing was scored: all 48 items failed');
    const root = parseXml(await readFile(join(dir, 'out.xml'), 'utf8'));
    expect(root.attributes).toMatchObject({ tests: '1', failures: '1' });
    const [run] = allNamed(root, 'testcase');
    const failure = child(run!, 'failure')!;
    expect(failure.attributes.type).toBe('RunUnscorable');
    expect(failure.attributes.message).toContain('nothing was scored: all 48 items failed');
    expect(failure.attributes.message).toContain('the suite names column "humman" (gold)');
    const output = child(run!, 'system-out')!.text;
    expect(output).toContain('items 48   scored 0   failed 48 (invalid rows 48, errors 0)');
    expect(output).toContain('failures by kind: invalid_row 48');
    const md = await readFile(join(dir, 'out.md'), 'utf8');
    expect(md).toContain('> **FAILED** — nothing was scored: all 48 items failed');
    expect(md).toContain(
      'items 48 · scored 0 · failed 48 (invalid rows 48, errors 0) — failed by kind: invalid_row 48',
    );
    // No figure without data reads 0.
    expect(md).toContain('| label (primary) | no metrics | n/a | n/a | 0 | n/a |');
    expect(md).toContain('per 10K n/a · latency p50 n/a');
  });

  it('a sweep whose required gate fails exits 1, and its JUnit and summary say which condition and why; compare reports the two runs', async () => {
    const dir = await tempDir('assay-ci-sweep-');
    const out = join(dir, 'sweep');
    const suite = await failingSweep(dir);
    const { code, stdout, stderr } = await assay(
      [
        'run',
        suite,
        '--simulate',
        '--out',
        out,
        '--no-progress',
        '--junit',
        join(dir, 'sweep.xml'),
        '--markdown',
        join(dir, 'sweep.md'),
      ],
      dir,
    );
    expect(code).toBe(1);
    expect(stdout).toContain('REQUIRED GATE FAILED for v2');
    expect(stderr).toMatch(/required gate failed for v2/);
    const sweep = JSON.parse(await readFile(join(out, 'sweep.json'), 'utf8')) as SweepReport;
    const v2 = sweep.variants.find((v) => v.name === 'v2')!;
    const failed = v2.gate!.conditions.find((c) => c.condition === 'accuracy >= baseline + 0.5')!;
    expect(failed.passed).toBe(false);

    const root = parseXml(await readFile(join(dir, 'sweep.xml'), 'utf8'));
    const cases = allNamed(root, 'testcase');
    // Variants come in the sweep's ranking order; each variant's conditions follow it.
    expect(cases.map((c) => [c.attributes.name, outcomeOf(c)]).sort()).toEqual(
      [
        ['variant v1 (SIMULATED)', 'pass'],
        ['variant v2 (SIMULATED)', 'failure'],
        ['v2: accuracy >= baseline + 0.5 (SIMULATED)', 'failure'],
        ['v2: scored_rate >= 0.9 (SIMULATED)', 'pass'],
        ['v2: coverage not below the baseline (implicit) (SIMULATED)', 'pass'],
      ].sort(),
    );
    expect(
      cases[cases.findIndex((c) => c.attributes.name === 'variant v2 (SIMULATED)') + 1]!.attributes.name,
    ).toBe('v2: accuracy >= baseline + 0.5 (SIMULATED)');
    expect(root.attributes).toMatchObject({ tests: '5', failures: '2' });
    const condition = cases.find((c) => c.attributes.name?.startsWith('v2: accuracy'))!;
    expect(child(condition, 'failure')!.attributes.message).toBe(failed.reason);
    const properties = Object.fromEntries(
      allNamed(root, 'property').map((p) => [p.attributes.name, p.attributes.value]),
    );
    expect(properties).toMatchObject({ simulated: 'all', outcome: 'REQUIRED GATE FAILED for v2' });

    const md = await readFile(join(dir, 'sweep.md'), 'utf8');
    expect(md).toContain('> **SIMULATED** — ');
    expect(md).toContain('- **v2: NOT PROMOTED (required)**');
    expect(md).toContain(
      `  - **FAIL** accuracy &gt;= baseline + 0.5: ${failed.reason.replaceAll('>', '&gt;')}`,
    );
    expect(md).toContain('**❌ REQUIRED GATE FAILED for v2**');
    const accuracy = v2.comparison!.scores.label!.deltas.accuracy!;
    expect(md).toMatch(
      new RegExp(`\\| v2 \\| label \\| accuracy \\| [±+-]${Math.abs(accuracy.delta).toFixed(3)} \\| \\[`),
    );

    // The two variants' runs compared: a passing case for the label scorer, its deltas in the summary.
    const runs = (await readdir(out)).filter((d) => d.startsWith('reply-tone-gated.')).sort();
    expect(runs).toHaveLength(2);
    const compared = await assay(
      [
        'compare',
        join(out, runs[0]!),
        join(out, runs[1]!),
        '--junit',
        join(dir, 'compare.xml'),
        '--markdown',
        join(dir, 'compare.md'),
      ],
      dir,
    );
    expect(compared.code).toBe(0);
    const comparison = parseXml(await readFile(join(dir, 'compare.xml'), 'utf8'));
    const [label] = allNamed(comparison, 'testcase');
    expect(label!.attributes.name).toMatch(
      /^label: reply-tone-gated\.v2-\w+ vs reply-tone-gated\.v1-\w+ \(SIMULATED\)$/,
    );
    expect(outcomeOf(label!)).toBe('pass');
    expect(child(label!, 'system-out')!.text).toContain(
      'items: 48 paired, 0 only in base, 0 only in candidate',
    );
    const compareMd = await readFile(join(dir, 'compare.md'), 'utf8');
    expect(compareMd).toContain('> **SIMULATED** — both runs were answered by the simulator');
    expect(compareMd).toMatch(
      /\| label \(primary\) \| accuracy \| \d\.\d{3} \| \d\.\d{3} \| [±+-]\d\.\d{3} \| \[/,
    );
  });
});
