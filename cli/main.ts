import { createReadStream } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { FolderBlobStore } from '../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../shared/adapters/local/local-run-store.js';
import { writeRunReport } from '../shared/core/aggregate-run.js';
import { scorePredictions } from '../shared/core/score-predictions.js';
import { suiteJsonSchema } from '../shared/core/suite.js';
import { formatFromPath, readRows } from '../shared/datasets/read.js';
import { detectDefaultBackend } from '../shared/providers/registry.js';
import { writeReportFiles } from '../shared/reports/files.js';
import type { Report } from '../shared/reports/report.js';
import { PACKAGE_ROOT, runLocal } from './local-run.js';
import { progressReporter } from './progress.js';

const QUICKSTART_SUITE = join(PACKAGE_ROOT, 'examples', 'quickstart.suite.json');

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

function summary(report: Report, outDir: string): string {
  const m = report.metrics as {
    accuracy?: number;
    macroF1?: number;
    kappa?: number;
    binary?: { f1: number };
  };
  const f = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(3));
  const lines = [
    '',
    `${report.suite}: ${report.counts.scored} scored, ${report.counts.failed} failed (${report.counts.invalidRows} invalid rows)`,
    `accuracy ${f(m.accuracy)}  macro F1 ${f(m.macroF1)}  binary F1 ${f(m.binary?.f1)}  kappa ${f(m.kappa)}`,
    `cost $${report.cost.totalUsd.toFixed(4)}  per 10K $${report.cost.per10kUsd.toFixed(2)}  latency p50 ${Math.round(report.latencyMs.p50)} ms`,
    `report: ${join(outDir, 'report.txt')} (and report.json, labeled.csv, errors.txt, correct.txt)`,
  ];
  if (report.simulated)
    lines.push(
      '',
      `!! ${report.notice}`,
      '!! Set OPENAI_API_KEY (or ANTHROPIC_API_KEY / GEMINI_API_KEY) to judge with a real model.',
    );
  return `${lines.join('\n')}\n`;
}

interface RunFlags {
  out?: string;
  concurrency?: number;
  sample?: number;
  seed: number;
  backend?: string[];
  fresh?: boolean;
  prices?: string;
  progress: boolean;
}

async function run(suitePath: string, flags: RunFlags, backends?: string[]) {
  const { outDir, outcome } = await runLocal({
    suitePath,
    outDir: flags.out,
    backends: flags.backend ?? backends,
    concurrency: flags.concurrency,
    sample: flags.sample ? { n: flags.sample, seed: flags.seed } : undefined,
    fresh: flags.fresh,
    pricesPath: flags.prices,
    onEvent: flags.progress ? progressReporter() : undefined,
  });
  if (outcome.status !== 'written') throw new Error(`run not aggregated: ${outcome.reason}`);
  process.stdout.write(summary(outcome.report, outDir));
}

function runOptions(command: Command): Command {
  return command
    .option('-o, --out <dir>', 'run folder (default runs/<runId>; running again resumes it)')
    .option('-c, --concurrency <n>', 'items in flight', positiveInt)
    .option('--sample <n>', 'score a reproducible random sample of n items', positiveInt)
    .option('--seed <s>', 'sample seed', positiveInt, 1)
    .option('-b, --backend <id...>', 'override the suite backends (vendor:model or alias)')
    .option('--fresh', 'start a new run instead of resuming an identical one')
    .option('--prices <file>', 'price table override (JSON); also env ASSAY_PRICES')
    .option('--no-progress', 'no progress bar');
}

const program = new Command()
  .name('assay')
  .description('Run LLM judges and graders over gold datasets; report quality and cost.')
  .showHelpAfterError();

runOptions(
  program.command('run <suite>').description('run a suite end to end (resumes an interrupted run)'),
).action((suite: string, flags: RunFlags) => run(suite, flags));

runOptions(
  program
    .command('quickstart')
    .description('run the embedded example: a real model if an API key is set, else the simulator'),
).action((flags: RunFlags) => run(QUICKSTART_SUITE, flags, [detectDefaultBackend(process.env)]));

program
  .command('cloud [suite]')
  .description(
    'run a suite through the AWS pipeline on this machine: moto_server for S3, SQS and DynamoDB, the real Lambda handlers (default suite: the quickstart)',
  )
  .option('-o, --out <dir>', 'where to download the report files (default runs/cloud/<runId>)')
  .option(
    '-d, --dataset <file>',
    "the dataset file to drop in the bucket (default: the suite's dataset.path)",
  )
  .option('--verbose', "show the functions' own logs (Powertools, JSON) and EMF metrics")
  .action(async (suite: string | undefined, flags: { out?: string; dataset?: string; verbose?: boolean }) => {
    // Loaded on demand: the AWS SDK and the handlers are not needed by the other commands.
    const { runLocalCloud } = await import('./cloud/local-cloud.js');
    const { report, outDir } = await runLocalCloud({
      suitePath: suite ?? QUICKSTART_SUITE,
      backends: suite === undefined ? [detectDefaultBackend(process.env)] : undefined,
      datasetPath: flags.dataset,
      outDir: flags.out,
      verbose: flags.verbose,
      onLog: (line) => process.stderr.write(`${line}\n`),
    });
    process.stdout.write(summary(report, outDir));
  });

program
  .command('report <runDir>')
  .description('rebuild the report files of a run folder from its results log')
  .action(async (runDir: string) => {
    const { runId } = JSON.parse(await readFile(join(runDir, 'run.json'), 'utf8')) as { runId: string };
    const { report } = await writeRunReport(
      { runStore: new LocalRunStore(runDir), reports: new FolderBlobStore(runDir) },
      runId,
    );
    process.stdout.write(summary(report, runDir));
  });

program
  .command('score')
  .description('metrics of an existing prediction file against a gold file (AQUA layout, joined on idx)')
  .requiredOption(
    '--gold <file>',
    'gold CSV/JSONL: idx,src,tgt + tp_fp_label|label|judge_label|pred_specialized',
  )
  .requiredOption('--predictions <file>', 'predictions CSV/JSONL: idx + a label column')
  .requiredOption('--out <dir>', 'where to write the report files')
  .option('--pred-column <name>', 'label column of the predictions file')
  .option('--gold-column <name>', 'label column of the gold file')
  .action(
    async (flags: {
      gold: string;
      predictions: string;
      out: string;
      predColumn?: string;
      goldColumn?: string;
    }) => {
      const open = (path: string) => readRows(createReadStream(path), formatFromPath(path));
      const { report, results } = await scorePredictions({
        gold: open(flags.gold),
        predictions: open(flags.predictions),
        goldPath: flags.gold,
        predictionsPath: flags.predictions,
        predictionColumn: flags.predColumn,
        goldColumn: flags.goldColumn,
      });
      await writeReportFiles(new FolderBlobStore(flags.out), '', report, results);
      process.stdout.write(summary(report, flags.out));
    },
  );

program
  .command('schema')
  .description('write the suite JSON Schema (for editors)')
  .option('--out <file>', 'output file', 'schemas/suite.schema.json')
  .action(async (flags: { out: string }) => {
    const path = resolve(flags.out);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, `${JSON.stringify(suiteJsonSchema(), null, 2)}\n`);
    process.stdout.write(`wrote ${path}\n`);
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`\nassay: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
