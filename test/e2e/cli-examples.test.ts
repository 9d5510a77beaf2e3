/**
 * Every example that ships, as a new user runs it: `assay run <suite> --simulate --out DIR`
 * through the command's own binary, in a subprocess, with the progress bar on — once with its
 * output piped (a CI log) and once under a pseudo-terminal (a user's terminal, through util-linux
 * `script`). A new `examples/*.suite.json` is covered without editing this file. Then
 * `assay score` on the example data in each family's layouts, with figures known in advance.
 *
 * Subprocesses run a few at a time: the examples are run whole, and this file must stay quick.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { simulateSuite } from '../../shared/registry/registry.js';
import type { SweepReport } from '../../shared/sweeps/sweep.js';
import { AQUA_FILES, EXAMPLE_DATA, REPO, tempDir } from '../helpers.js';

const BIN = join(REPO, 'bin', 'assay.mjs');
const EXAMPLES = join(REPO, 'examples');
const SUITES = (await readdir(EXAMPLES)).filter((f) => f.endsWith('.suite.json')).sort();

/** util-linux `script` gives the command a pseudo-terminal (node-pty is not a dependency). */
const SCRIPT = spawnSync('script', ['--version'], { encoding: 'utf8' });
const HAS_SCRIPT = SCRIPT.status === 0 && /util-linux/.test(SCRIPT.stdout);

/** Subprocesses at once: enough to overlap the simulator's waits, few enough for a 2-core machine. */
const POOL = 3;

const noKeys = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k)));

type Mode = 'piped' | 'terminal';

interface Ran {
  code: number | null;
  /** stdout then stderr when piped; the terminal's whole screen under a pseudo-terminal. */
  output: string;
  stdout: string;
}

function limiter(size: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    while (active >= size) await new Promise<void>((wake) => waiting.push(wake));
    active += 1;
    try {
      return await work();
    } finally {
      active -= 1;
      waiting.shift()?.();
    }
  };
}
const slot = limiter(POOL);

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const shellQuote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

/** `node bin/assay.mjs <args>` from `dir` (its LLM cache there, no API key), piped or on a terminal. */
function assay(args: string[], dir: string, mode: Mode): Promise<Ran> {
  const command = [process.execPath, BIN, ...args];
  const [file, argv] =
    mode === 'piped'
      ? [command[0]!, command.slice(1)]
      : ['script', ['-qec', command.map(shellQuote).join(' '), '/dev/null']];
  return slot(
    () =>
      new Promise<Ran>((done, fail) => {
        const child = spawn(file, argv, {
          cwd: dir,
          env: { ...noKeys, ASSAY_CACHE_DIR: join(dir, 'cache'), TERM: 'xterm' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
        });
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        child.on('error', fail);
        child.on('close', (code) => done({ code, stdout, output: `${stdout}\n${stderr}` }));
      }),
  );
}

/** The last lines of a command's output, to read a failure without the whole log. */
const tail = (ran: Ran) => `exit ${ran.code}; output ends:\n${ran.output.slice(-3000)}`;

async function readJson<T>(path: string): Promise<T> {
  return JSON.parse(await readFile(path, 'utf8')) as T;
}

/** The files of a finished run folder, and its counts adding up. */
async function expectRunFolder(dir: string): Promise<Report> {
  const files = await readdir(dir).catch(() => []);
  for (const file of ['report.json', 'report.txt', 'labeled.csv', 'errors.txt'])
    expect(files, `${dir} holds ${file}`).toContain(file);
  const report = await readJson<Report>(join(dir, 'report.json'));
  const { items, scored, failed } = report.counts;
  expect(items, `${dir}: items`).toBeGreaterThan(0);
  expect(scored + failed, `${dir}: scored + failed = items`).toBe(items);
  return report;
}

/**
 * Every progress bar drawn shows at most its run's total, and each run's bar reaches its own
 * total: one reporter follows every run of a command (a sweep's variants) without mixing counts.
 */
function expectProgress(ran: Ran, reports: Report[]): void {
  const bars = [...ran.output.matchAll(/[█░]{24} (\d+)\/(\d+) +(\d+)%/g)];
  expect(bars.length, 'progress bars drawn').toBeGreaterThan(0);
  for (const [bar, done, total] of bars) expect(Number(done), bar).toBeLessThanOrEqual(Number(total));
  for (const report of reports)
    expect(ran.output).toContain(`${report.counts.items}/${report.counts.items} 100%`);
}

async function exampleRun(file: string, mode: Mode): Promise<void> {
  const dir = await tempDir(`assay-example-${mode}-`);
  const out = join(dir, 'out');
  const suite = await readJson<{ variants?: unknown; matrix?: unknown }>(join(EXAMPLES, file));
  const ran = await assay(['run', join(EXAMPLES, file), '--simulate', '--out', out], dir, mode);
  expect(ran.output, tail(ran)).not.toContain('Invalid count value');

  if (suite.variants === undefined && suite.matrix === undefined) {
    expect(ran.code, tail(ran)).toBe(0);
    const report = await expectRunFolder(out);
    expect(report.simulated).toBe(true);
    expect(ran.stdout).toContain(`report: ${join(out, 'report.txt')}`);
    expectProgress(ran, [report]);
    return;
  }

  // A sweep: its report and every variant's run folder are in --out.
  const files = await readdir(out).catch(() => []);
  expect(files, tail(ran)).toEqual(expect.arrayContaining(['sweep.json', 'sweep.txt']));
  const sweep = await readJson<SweepReport>(join(out, 'sweep.json'));
  expect(sweep.variants.length).toBeGreaterThan(1);
  const failedRequired = sweep.gate?.failedRequired ?? [];
  if (failedRequired.length === 0) expect(ran.code, tail(ran)).toBe(0);
  else {
    // The only failure allowed: a required gate that fails, saying so.
    expect(ran.code, tail(ran)).toBe(1);
    expect(ran.output).toContain(`REQUIRED GATE FAILED for ${failedRequired.join(', ')}`);
    expect(ran.output).toMatch(/required gate failed for/);
  }
  const reports: Report[] = [];
  for (const variant of sweep.variants) {
    expect(files, `variant ${variant.name}'s run in --out`).toContain(variant.runId);
    const report = await expectRunFolder(join(out, variant.runId));
    expect(report.runId).toBe(variant.runId);
    expect(variant.counts).toEqual(report.counts);
    expect(ran.stdout).toMatch(
      new RegExp(`^ {2}${literal(variant.name)} +${literal(join(out, variant.runId))}\r?$`, 'm'),
    );
    reports.push(report);
  }
  expect(ran.stdout).toContain(`sweep report: ${join(out, 'sweep.txt')}`);
  expectProgress(ran, reports);
}

describe.concurrent('every example suite through the CLI binary', { timeout: 240_000 }, () => {
  for (const file of SUITES) {
    it(`${file}, piped`, () => exampleRun(file, 'piped'));
    it.skipIf(!HAS_SCRIPT)(`${file}, on a terminal (needs util-linux script)`, () =>
      exampleRun(file, 'terminal'),
    );
  }
});

// ---------------------------------------------------------------------------------------------
// assay score: outputs made elsewhere, in each family's layouts, on the example data.

const csvCell = (value: unknown) => `"${String(value).replaceAll('"', '""')}"`;
const csv = (header: string[], rows: unknown[][]) =>
  `${[header.join(','), ...rows.map((r) => r.map(csvCell).join(','))].join('\n')}\n`;
const jsonl = (rows: unknown[]) => `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;

async function readJsonl<T>(path: string): Promise<T[]> {
  return (await readFile(path, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as T);
}

async function readCsv(path: string): Promise<Record<string, string>[]> {
  return parse(await readFile(path), { columns: true, bom: true }) as Record<string, string>[];
}

/**
 * An example suite as a user would point `assay score --suite` at it, with the simulator as its
 * backends (the scorers of some families call a model; no key here) and no sweep: written in
 * `dir` beside a link to the examples' prompts, its dataset path made absolute.
 */
async function scoringSuite(dir: string, file: string): Promise<string> {
  const raw = await readJson<Record<string, unknown> & { dataset: { path: string } }>(join(EXAMPLES, file));
  const suite = simulateSuite(raw) as Record<string, unknown>;
  for (const key of ['$schema', 'variants', 'matrix', 'baseline', 'gate', 'rankBy']) delete suite[key];
  suite.dataset = { ...raw.dataset, path: join(EXAMPLES, raw.dataset.path) };
  await symlink(join(EXAMPLES, 'prompts'), join(dir, 'prompts')).catch(() => undefined);
  const path = join(dir, `scoring-${file}`);
  await writeFile(path, JSON.stringify(suite));
  return path;
}

/** `assay score` of `dir/<predictions>` against an example's gold file with the example's suite: the run's report. */
async function scoreExample(
  dir: string,
  suiteFile: string,
  goldFile: string,
  predictions: string,
): Promise<Report> {
  const { out } = await score(dir, [
    '--suite',
    await scoringSuite(dir, suiteFile),
    '--gold',
    join(EXAMPLE_DATA, goldFile),
    '--predictions',
    join(dir, predictions),
  ]);
  return expectRunFolder(out);
}

async function score(dir: string, args: string[], mode: Mode = 'piped'): Promise<{ ran: Ran; out: string }> {
  const out = join(dir, 'out');
  const ran = await assay(['score', ...args, '--out', out], dir, mode);
  expect(ran.code, tail(ran)).toBe(0);
  return { ran, out };
}

/** A label other than `label` from `labels`, for the rows a test makes wrong on purpose. */
const otherLabel = (labels: string[], label: string) => labels[(labels.indexOf(label) + 1) % labels.length]!;

describe.concurrent('assay score on the example data, in each layout', { timeout: 240_000 }, () => {
  for (const [file, rows] of Object.entries(AQUA_FILES)) {
    it(`GEC: another tool's labels joined to the AQUA gold ${file} on idx`, async () => {
      const dir = await tempDir('assay-score-gec-');
      const gold = await readCsv(join(EXAMPLE_DATA, file));
      const column = 'tp_fp_label' in gold[0]! ? 'tp_fp_label' : 'label';
      const labels = [...new Set(gold.map((r) => r[column]!))];
      // Every fourth prediction is wrong: the accuracy is known before the run.
      const predictions = gold.map((r, i) => [
        r.idx,
        i % 4 === 0 ? otherLabel(labels, r[column]!) : r[column],
      ]);
      await writeFile(join(dir, 'pred.csv'), csv(['idx', 'pred'], predictions));
      const { ran, out } = await score(dir, [
        '--gold',
        join(EXAMPLE_DATA, file),
        '--predictions',
        join(dir, 'pred.csv'),
      ]);
      const report = await expectRunFolder(out);
      expect(report.counts).toMatchObject({ items: rows, scored: rows, failed: 0 });
      const right = predictions.filter(([, p], i) => p === gold[i]![column]).length;
      expect(report.scores.label!.metrics.accuracy!.value).toBeCloseTo(right / rows, 10);
      expectProgress(ran, [report]);
    });
  }

  it('GEC: a predictions file holding the inputs, the gold and the labels (judge_label)', async () => {
    const dir = await tempDir('assay-score-gec-own-');
    const gold = await readCsv(join(EXAMPLE_DATA, 'gold_tp_fp3_fp2_fp1_en.csv'));
    const labels = ['TP', 'FP1', 'FP2', 'FP3'];
    const rows = gold.map((r, i) => [
      r.idx,
      r.src,
      r.tgt,
      r.tp_fp_label,
      i % 2 === 0 ? otherLabel(labels, r.tp_fp_label!) : r.tp_fp_label,
    ]);
    await writeFile(join(dir, 'own.csv'), csv(['idx', 'src', 'tgt', 'tp_fp_label', 'judge_label'], rows));
    const { out } = await score(dir, ['--predictions', join(dir, 'own.csv')]);
    const report = await expectRunFolder(out);
    expect(report.counts).toMatchObject({ items: gold.length, scored: gold.length });
    expect(report.scores.label!.metrics.accuracy!.value).toBeCloseTo(
      Math.floor(gold.length / 2) / gold.length,
      10,
    );
  });

  for (const mode of ['piped', 'terminal'] as const) {
    it.skipIf(mode === 'terminal' && !HAS_SCRIPT)(
      `QA: the physics study's results layout, two configurations compared as a sweep in --out (${mode})`,
      async () => {
        const dir = await tempDir(`assay-score-qa-${mode}-`);
        const questions = await readJsonl<{ id: number; type: string; question: string; answer: string }>(
          join(EXAMPLE_DATA, 'physics_questions_50.jsonl'),
        );
        // The base configuration answers every third question wrong, in a way the fast path decides.
        const wrong = (q: { type: string; answer: string }) =>
          q.type === 'mcq'
            ? 'The answer is (A).'
            : q.type === 'numeric'
              ? String(Number(q.answer) * 3 + 7)
              : 'No idea.';
        const rows = ['base', 'fine-tuned'].flatMap((config) =>
          questions.map((q) => [
            config,
            q.id,
            q.type,
            q.question,
            config === 'base' && q.id % 3 === 0 ? wrong(q) : q.answer,
            q.answer,
          ]),
        );
        await writeFile(
          join(dir, 'results.csv'),
          csv(['config', 'question_id', 'type', 'question', 'predicted', 'correct'], rows),
        );
        const { ran, out } = await score(
          dir,
          ['--task', 'qa', '--predictions', join(dir, 'results.csv')],
          mode,
        );
        const sweep = await readJson<SweepReport>(join(out, 'sweep.json'));
        // The sweep lists its variants best first; the base configuration is the baseline.
        expect(sweep.baseline).toBe('base');
        expect(sweep.variants.map((v) => v.name)).toEqual(['fine-tuned', 'base']);
        const reports: Report[] = [];
        for (const name of ['base', 'fine-tuned']) {
          const variant = sweep.variants.find((v) => v.name === name)!;
          reports.push(await expectRunFolder(join(out, variant.runId)));
        }
        // Without a grader the explanations stay unscored; the fast path decides the rest.
        const decided = questions.filter((q) => q.type !== 'explanation');
        const wrongs = decided.filter((q) => q.id % 3 === 0).length;
        expect(reports.map((r) => r.counts.items)).toEqual([50, 50]);
        expect(reports.map((r) => r.scores.score!.metrics.mean)).toMatchObject([
          { value: expect.closeTo((decided.length - wrongs) / decided.length, 10), n: decided.length },
          { value: 1, n: decided.length },
        ]);
        expect(sweep.variants[0]!.comparison?.paired).toBe(50);
        expect(ran.stdout).toContain(`sweep report: ${join(out, 'sweep.txt')}`);
        expectProgress(ran, reports);
      },
    );
  }

  it("QA: the study's own results file (test fixture), one run per configuration", async () => {
    const dir = await tempDir('assay-score-qa-seed-');
    const { ran, out } = await score(dir, [
      '--task',
      'qa',
      '--predictions',
      join(REPO, 'test', 'fixtures', 'qa', 'seed-results.csv'),
    ]);
    const sweep = await readJson<SweepReport>(join(out, 'sweep.json'));
    const reports: Report[] = [];
    for (const variant of sweep.variants) reports.push(await expectRunFolder(join(out, variant.runId)));
    expect(reports.length).toBeGreaterThan(1);
    expectProgress(ran, reports);
  });

  it('judge (labels): given labels joined to the replies on id', async () => {
    const dir = await tempDir('assay-score-judge-');
    const gold = await readCsv(join(EXAMPLE_DATA, 'replies.csv'));
    const labels = ['polite', 'neutral', 'rude'];
    const rows = gold.map((r, i) => [r.id, i % 4 === 0 ? otherLabel(labels, r.human!) : r.human]);
    await writeFile(join(dir, 'pred.csv'), csv(['id', 'pred'], rows));
    const report = await scoreExample(dir, 'reply-tone.suite.json', 'replies.csv', 'pred.csv');
    expect(report.counts).toMatchObject({ items: gold.length, scored: gold.length });
    const right = rows.filter(([, p], i) => p === gold[i]!.human).length;
    expect(report.scores.label!.metrics.accuracy!.value).toBeCloseTo(right / gold.length, 10);
  });

  it('judge (1-5 ratings): given ratings joined to the answers on id (JSONL)', async () => {
    const dir = await tempDir('assay-score-rating-');
    const gold = await readJsonl<{ id: string; rating: number }>(join(EXAMPLE_DATA, 'answers.jsonl'));
    // Every prediction one point off (within 1-5): the mean absolute error is 1.
    const rows = gold.map((a) => ({ id: a.id, prediction: a.rating === 5 ? 4 : a.rating + 1 }));
    await writeFile(join(dir, 'pred.jsonl'), jsonl(rows));
    const report = await scoreExample(dir, 'answer-helpfulness.suite.json', 'answers.jsonl', 'pred.jsonl');
    expect(report.counts).toMatchObject({ items: gold.length, scored: gold.length });
    expect(report.scores.score!.metrics.mae!.value).toBeCloseTo(1, 10);
  });

  it('cleanup: given cleaned transcripts joined to the dictations on id', async () => {
    const dir = await tempDir('assay-score-cleanup-');
    const gold = await readJsonl<{ id: string; transcript: string; expected: string }>(
      join(EXAMPLE_DATA, 'dictation.jsonl'),
    );
    await writeFile(join(dir, 'pred.jsonl'), jsonl(gold.map((d) => ({ id: d.id, output: d.expected }))));
    const report = await scoreExample(dir, 'dictation-cleanup.suite.json', 'dictation.jsonl', 'pred.jsonl');
    expect(report.counts).toMatchObject({ items: gold.length, scored: gold.length });
    // The expected text as the output: a word error rate of 0 on every transcript.
    expect(report.scores.wer!.metrics.mean).toMatchObject({ value: 0, n: gold.length });
  });

  it('summarization: given summaries joined to the court opinions on id, scored against the reference', async () => {
    const dir = await tempDir('assay-score-summaries-');
    const gold = await readJsonl<{ id: string; document: string; reference: string }>(
      join(EXAMPLE_DATA, 'court-opinions.jsonl'),
    );
    const rows = gold.map((d, i) => ({
      id: d.id,
      summary: i % 2 === 0 ? d.reference : `${d.document.split('. ').slice(0, 2).join('. ')}.`,
    }));
    await writeFile(join(dir, 'pred.jsonl'), jsonl(rows));
    const report = await scoreExample(
      dir,
      'legal-summaries.suite.json',
      'court-opinions.jsonl',
      'pred.jsonl',
    );
    expect(report.counts).toMatchObject({ items: gold.length, scored: gold.length });
  });
});
