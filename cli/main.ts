import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { FolderBlobStore } from '../shared/adapters/local/folder-blob-store.js';
import { LocalRunHistory } from '../shared/adapters/local/local-run-history.js';
import { LocalRunStore } from '../shared/adapters/local/local-run-store.js';
import { LocalLeaderboard } from '../shared/adapters/local/local-sweeps.js';
import { writeRunReport } from '../shared/core/aggregate-run.js';
import type { ComparisonSummary } from '../shared/core/compare-runs.js';
import { compareRuns, type RunSide } from '../shared/core/compare-runs.js';
import { publishedSchemas, validateSuite } from '../shared/core/suite.js';
import { renderEstimate } from '../shared/estimate/estimate.js';
import type { Leaderboard } from '../shared/ports.js';
import { detectDefaultBackend } from '../shared/providers/registry.js';
import {
  renderComparisonText,
  SCREEN_FLIPPED_LIMIT,
  writeComparisonFiles,
} from '../shared/reports/comparison.js';
import { headline, incompleteNotice } from '../shared/reports/files.js';
import { ms, usd } from '../shared/reports/format.js';
import { leaderboardTables, renderLeaderboard } from '../shared/reports/leaderboard.js';
import type { Report } from '../shared/reports/report.js';
import { renderSweepText } from '../shared/reports/sweep-files.js';
import type { SweepReport } from '../shared/sweeps/sweep.js';
import { isSweep } from '../shared/sweeps/variants.js';
import { familyNames } from '../shared/tasks/registry.js';
import { discoverSuites, promptChanges } from './changed.js';
import { estimateSuiteFile } from './estimate.js';
import { datasetFileOf, loadSuiteFile, PACKAGE_ROOT, runSuite } from './local-run.js';
import { progressReporter } from './progress.js';
import { configurations, scoringRun } from './score.js';
import { runSweep } from './sweep.js';

const QUICKSTART_SUITE = join(PACKAGE_ROOT, 'examples', 'quickstart.suite.json');

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

/** What a run's summary says on the terminal: counts, each scorer's headline figures, cost. */
function summary(report: Report, outDir: string): string {
  const lines = [
    '',
    ...[incompleteNotice(report)].filter((line) => line !== undefined),
    `${report.suite}: ${report.counts.scored} scored, ${report.counts.failed} failed (${report.counts.invalidRows} invalid rows)`,
    ...Object.entries(report.scores).map(([name, s]) => headline(name, s)),
    `cost ${usd(report.cost.totalUsd)}${report.cost.batch ? ` (batch lane saved ${usd(report.cost.batch.savedUsd)})` : ''}  per 10K ${usd(report.cost.per10kUsd)}  latency p50 ${ms(report.latencyMs.p50)}`,
    `report: ${join(outDir, 'report.txt')} (and report.json, labeled.csv, errors.txt, correct.txt)`,
  ];
  const budget = report.counts.byFailure.budget;
  if (budget)
    lines.push(
      `!! ${budget} items were not scored: the run's budget was spent. Raise run.budgetUsd and run again to resume them.`,
    );
  if (report.simulated)
    lines.push(
      '',
      `!! ${report.notice}`,
      '!! Set OPENAI_API_KEY (or ANTHROPIC_API_KEY / GEMINI_API_KEY) to judge with a real model.',
    );
  return `${lines.join('\n')}\n`;
}

/** What a sweep's summary says on the terminal: the sweep report, and where its files are. */
function sweepSummary(sweep: SweepReport, outDir: string): string {
  return `\n${renderSweepText(sweep)}\nsweep report: ${join(outDir, 'sweep.txt')} (and sweep.json)\n`;
}

/** For CI jobs: a sweep whose required gate failed ends the command with exit 1, saying why. */
function failOnRequiredGate(sweep: SweepReport): void {
  const failed = sweep.gate?.failedRequired ?? [];
  if (failed.length === 0) return;
  const why = sweep.variants
    .filter((v) => failed.includes(v.name))
    .flatMap((v) =>
      (v.gate?.conditions ?? [])
        .filter((c) => !c.passed)
        .map((c) => `  ${v.name}: ${c.condition}: ${c.reason}`),
    );
  throw new Error(`required gate failed for ${failed.join(', ')}:\n${why.join('\n')}`);
}

interface RunFlags {
  out?: string;
  runs: string;
  changed?: boolean;
  simulate?: boolean;
  concurrency?: number;
  sample?: number;
  seed: number;
  backend?: string[];
  fresh?: boolean;
  prices?: string;
  lane?: 'sync' | 'batch';
  progress: boolean;
}

async function run(
  suitePath: string,
  flags: RunFlags,
  backends?: string[],
  sample?: { n: number; seed: number },
): Promise<void> {
  const settings = {
    outDir: flags.out,
    runsDir: flags.runs,
    backends: flags.backend ?? backends,
    simulate: flags.simulate,
    concurrency: flags.concurrency,
    sample: flags.sample ? { n: flags.sample, seed: flags.seed } : sample,
    fresh: flags.fresh,
    pricesPath: flags.prices,
    lane: flags.lane,
    onEvent: flags.progress ? progressReporter() : undefined,
  };
  const suite = await loadSuiteFile(suitePath);
  const suiteDir = dirname(resolve(suitePath));
  const dataset = await datasetFileOf(suite, suiteDir);
  if (isSweep(suite)) {
    const { outDir, sweep } = await runSweep(suite, suiteDir, dataset, {
      ...settings,
      onVariant: (name, i, n) => process.stderr.write(`\nvariant ${i + 1}/${n}: ${name}\n`),
    });
    process.stdout.write(sweepSummary(sweep, outDir));
    failOnRequiredGate(sweep);
    return;
  }
  const { outDir, outcome, unscorable } = await runSuite(suite, suiteDir, dataset, settings);
  if (outcome.status !== 'written') throw new Error(`run not aggregated: ${outcome.reason}`);
  process.stdout.write(summary(outcome.report, outDir) + comparisonLine(outcome.report));
  if (unscorable) throw new Error(unscorable);
}

/**
 * `assay run --changed`: the suites (given, else every *.suite.json below the working folder)
 * whose prompt files changed since their latest run in the runs folder run again, with that
 * run's backends and sample unless flags say otherwise; each report compares with it.
 */
async function runChanged(suitePaths: string[], flags: RunFlags): Promise<void> {
  if (flags.out)
    throw new InvalidArgumentError(
      '--out cannot be used with --changed (each run gets its folder in --runs)',
    );
  const paths = suitePaths.length > 0 ? suitePaths : await discoverSuites('.');
  const changes = await promptChanges(paths, new LocalRunHistory(resolve(flags.runs)));
  for (const change of changes) {
    const name = `${change.suite.name} (${change.suitePath})`;
    if (change.status === 'never-run') {
      process.stdout.write(`${name}: never run in ${flags.runs}/, skipped (run it once with assay run)\n`);
    } else if (change.status === 'unchanged') {
      process.stdout.write(`${name}: prompts unchanged since ${change.latest!.runId}\n`);
    }
  }
  for (const change of changes) {
    if (change.status !== 'changed') continue;
    process.stdout.write(
      `${change.suite.name} (${change.suitePath}): changed since ${change.latest.runId}: ${change.paths.join(', ')}\n`,
    );
    // A sweep's variants bring their own backends; a plain suite runs again on its latest run's.
    const backends = isSweep(change.suite) ? undefined : change.latest.suite.backends;
    await run(change.suitePath, flags, backends, change.latest.suite.run.sample);
  }
}

/** One line on how the run moved against the suite's previous one (primary scorer). */
function comparisonLine(report: Report): string {
  const c = report.comparison as
    | (Partial<ComparisonSummary> & { baseRunId: string; error?: string })
    | undefined;
  if (!c) return '';
  if (c.error) return `not compared with ${c.baseRunId}: ${c.error}\n`;
  const primary = c.scores?.[report.primaryScorer];
  if (!primary) return '';
  const deltas = Object.entries(primary.deltas)
    .map(([name, d]) => `${name} ${d.delta >= 0 ? '+' : ''}${d.delta.toFixed(3)} (p ${d.pValue.toFixed(3)})`)
    .join('  ');
  const flipped = Object.entries(primary.flipped)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  return `compared with ${c.baseRunId}: ${deltas}; flipped: ${flipped} (comparison.txt)\n`;
}

function runOptions(command: Command): Command {
  return command
    .option('-o, --out <dir>', 'run folder (default runs/<runId>; running again resumes it)')
    .option('-c, --concurrency <n>', 'items in flight', positiveInt)
    .option('--sample <n>', 'score a reproducible random sample of n items', positiveInt)
    .option('--seed <s>', 'sample seed', positiveInt, 1)
    .option('-b, --backend <id...>', 'override the suite backends (vendor:model or alias)')
    .option(
      '--simulate',
      'replace every backend by the simulator of the same name (openai:gpt-4o → sim:gpt-4o, priced as that model): no key needed, every report marked SIMULATED',
    )
    .option('--fresh', 'start a new run instead of resuming an identical one')
    .option('--prices <file>', 'price table override (JSON); also env ASSAY_PRICES')
    .addOption(
      new Option(
        '--lane <lane>',
        "sync: a call per request; batch: through the vendors' batch APIs at half price (default: the suite's run.lane)",
      ).choices(['sync', 'batch']),
    )
    .option(
      '--runs <dir>',
      "folder of run folders; the report compares with the suite's previous run there",
      'runs',
    )
    .option('--no-progress', 'no progress bar');
}

const program = new Command()
  .name('assay')
  .description('Run LLM judges and graders over gold datasets; report quality and cost.')
  .showHelpAfterError();

runOptions(
  program
    .command('run [suites...]')
    .description('run a suite end to end (resumes an interrupted run)')
    .option(
      '--changed',
      'run again the suites (given, else every *.suite.json below this folder) whose prompt files changed since their latest run',
    ),
).action(async (suites: string[], flags: RunFlags) => {
  if (flags.changed) return runChanged(suites, flags);
  if (suites.length !== 1)
    throw new InvalidArgumentError('give one suite file (or --changed and any number)');
  await run(suites[0]!, flags);
});

runOptions(
  program
    .command('quickstart')
    .description('run the embedded example: a real model if an API key is set, else the simulator'),
).action(async (flags: RunFlags) => {
  await run(QUICKSTART_SUITE, flags, [detectDefaultBackend(process.env)]);
});

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
  .option('--simulate', 'replace every backend by the simulator of the same name (see assay run --simulate)')
  .action(
    async (
      suite: string | undefined,
      flags: { out?: string; dataset?: string; verbose?: boolean; simulate?: boolean },
    ) => {
      // Loaded on demand: the AWS SDK and the handlers are not needed by the other commands.
      const { runLocalCloud } = await import('./cloud/local-cloud.js');
      const { report, sweep, outDir } = await runLocalCloud({
        suitePath: suite ?? QUICKSTART_SUITE,
        backends: suite === undefined ? [detectDefaultBackend(process.env)] : undefined,
        simulate: flags.simulate,
        datasetPath: flags.dataset,
        outDir: flags.out,
        verbose: flags.verbose,
        onLog: (line) => process.stderr.write(`${line}\n`),
      });
      if (sweep) {
        process.stdout.write(`\n${renderSweepText(sweep)}`);
        failOnRequiredGate(sweep);
      }
      if (report) process.stdout.write(summary(report, outDir));
    },
  );

program
  .command('estimate <suite>')
  .description(
    'before anything is spent: calls, tokens (counted locally), cost range and projected time per backend, at the declared rate limits',
  )
  .option('-c, --concurrency <n>', 'items in flight (default: the suite run.concurrency)', positiveInt)
  .option('--sample <n>', 'estimate a reproducible random sample of n items', positiveInt)
  .option('--seed <s>', 'sample seed', positiveInt, 1)
  .option('-b, --backend <id...>', 'override the suite backends (vendor:model or alias)')
  .option('--latency-ms <ms>', 'assumed time per call', positiveInt, 1000)
  .option('--prices <file>', 'price table override (JSON); also env ASSAY_PRICES')
  .option('--json', 'print the estimate as JSON')
  .action(
    async (
      suitePath: string,
      flags: {
        concurrency?: number;
        sample?: number;
        seed: number;
        backend?: string[];
        latencyMs: number;
        prices?: string;
        json?: boolean;
      },
    ) => {
      const estimates = await estimateSuiteFile(suitePath, {
        concurrency: flags.concurrency,
        sample: flags.sample ? { n: flags.sample, seed: flags.seed } : undefined,
        backends: flags.backend,
        latencyMs: flags.latencyMs,
        pricesPath: flags.prices,
      });
      process.stdout.write(
        flags.json
          ? `${JSON.stringify(estimates.length === 1 ? estimates[0] : estimates, null, 2)}\n`
          : estimates.map(renderEstimate).join('\n'),
      );
    },
  );

program
  .command('report <runDir>')
  .description('rebuild the report files of a run folder from its results log')
  .action(async (runDir: string) => {
    const { runId } = JSON.parse(await readFile(join(runDir, 'run.json'), 'utf8')) as { runId: string };
    const { report } = await writeRunReport(
      {
        runStore: new LocalRunStore(runDir),
        reports: new FolderBlobStore(runDir),
        history: new LocalRunHistory(dirname(resolve(runDir))),
      },
      runId,
    );
    process.stdout.write(summary(report, runDir));
  });

/** A local run folder as one side of a comparison: run.json (the record) and results.jsonl. */
async function loadRunFolder(dir: string): Promise<RunSide> {
  const text = await readFile(join(dir, 'run.json'), 'utf8').catch(() => undefined);
  if (text === undefined) throw new Error(`not a run folder: ${dir} (no run.json)`);
  let runId: string | undefined;
  try {
    runId = (JSON.parse(text) as { runId?: string }).runId;
  } catch {
    // reported below
  }
  if (typeof runId !== 'string') throw new Error(`not a run folder: ${dir} (run.json has no runId)`);
  const store = new LocalRunStore(dir);
  const run = await store.getRun(runId);
  if (!run) throw new Error(`not a run folder: ${dir} (run ${runId} cannot be read)`);
  // Results written by an earlier Assay are upgraded by the codec, or refused saying why.
  const results: RunSide['results'] = [];
  for await (const result of store.results(runId)) results.push(result);
  return { run, results };
}

program
  .command('compare <baseRunDir> <candidateRunDir>')
  .description('compare two runs of the same task item by item: metric deltas, flipped items, McNemar')
  .option('-o, --out <dir>', 'also write comparison.json and comparison.txt into this folder')
  .option('--json', 'print the comparison as JSON instead of text')
  .option(
    '--limit <n>',
    `flipped items shown per scorer on screen (the files written with --out have all)`,
    positiveInt,
    SCREEN_FLIPPED_LIMIT,
  )
  .action(
    async (baseDir: string, candidateDir: string, flags: { out?: string; json?: boolean; limit: number }) => {
      const base = await loadRunFolder(baseDir);
      const candidate = await loadRunFolder(candidateDir);
      if (base.run.suite.task !== candidate.run.suite.task) {
        throw new Error(
          `cannot compare runs of different tasks: ${base.run.suite.task} (${baseDir}) vs ${candidate.run.suite.task} (${candidateDir})`,
        );
      }
      if (base.run.datasetKey !== candidate.run.datasetKey) {
        process.stderr.write(
          `warning: the runs used different datasets (${base.run.datasetKey} vs ${candidate.run.datasetKey}); only items with the same id are paired\n`,
        );
      }
      const comparison = compareRuns(base, candidate);
      process.stdout.write(
        flags.json
          ? `${JSON.stringify(comparison, null, 2)}\n`
          : renderComparisonText(comparison, {
              limit: flags.limit,
              allIn: flags.out && join(flags.out, 'comparison.txt'),
            }),
      );
      if (flags.out) {
        const keys = await writeComparisonFiles(new FolderBlobStore(flags.out), '', comparison);
        process.stderr.write(`wrote ${keys.map((k) => join(flags.out!, k)).join(', ')}\n`);
      }
    },
  );

program
  .command('score')
  .description(
    "score outputs made elsewhere: a predictions file (joined to --gold on the item id, or holding inputs and gold itself), with a task family's scorers",
  )
  .requiredOption('--predictions <file>', 'predictions CSV/JSONL: an id column and an output column')
  .option('--gold <file>', 'gold CSV/JSONL to join on the id (GEC: the AQUA layouts idx,src,tgt + label)')
  .requiredOption('--out <dir>', 'run folder for the report files (running again resumes it)')
  .option('--task <name>', `task family (${familyNames().join(', ')}; default: the suite's, else gec)`)
  .option('--suite <file>', "a suite of that task: its family options, column mapping and scorers' settings")
  .option(
    '--pred-column <name>',
    "output column of the predictions file (default: the one of the family's output columns it has — pred, prediction…; never the gold column)",
  )
  .option('--gold-column <name>', "gold column (default: the family's first gold column the gold file has)")
  .option('--id-column <name>', 'id column to join the files on (default: idx, else id)')
  .option(
    '--by <column>',
    'a column naming configurations (base, fine-tuned…): with several, each is a run of its own in --out and they are compared as a sweep, the first as baseline',
    'config',
  )
  .option('--no-progress', 'no progress bar')
  .action(
    async (flags: {
      gold?: string;
      predictions: string;
      out: string;
      task?: string;
      suite?: string;
      predColumn?: string;
      goldColumn?: string;
      idColumn?: string;
      by: string;
      progress: boolean;
    }) => {
      const { suite, suiteDir, dataset, notice } = await scoringRun(flags);
      process.stdout.write(notice);
      // Several configurations in one file (a `config` column): a run each, compared as a sweep.
      const configs = await configurations(dataset, flags.by);
      if (configs.length > 1) {
        const sweepSuite = validateSuite(
          { ...suite, variants: configs.map((c) => ({ name: c.name })), baseline: configs[0]!.name },
          `assay score (${flags.by})`,
        );
        const { outDir, sweep, runs } = await runSweep(
          sweepSuite,
          suiteDir,
          (variant) => configs.find((c) => c.name === variant)!.dataset,
          { runsDir: flags.out, onEvent: flags.progress ? progressReporter() : undefined },
        );
        for (const r of runs) process.stdout.write(summary(r.report, r.outDir));
        process.stdout.write(sweepSummary(sweep, outDir));
        return;
      }
      const { outDir, outcome, unscorable } = await runSuite(suite, suiteDir, dataset, {
        outDir: flags.out,
        onEvent: flags.progress ? progressReporter() : undefined,
      });
      if (outcome.status !== 'written') throw new Error(`run not aggregated: ${outcome.reason}`);
      process.stdout.write(summary(outcome.report, outDir));
      if (unscorable) throw new Error(unscorable);
    },
  );

program
  .command('leaderboard')
  .description(
    "the finished runs side by side, per dataset: task, method, backends, prompt version, headline metrics with CIs, cost per 10K, p50 latency — from the runs folder, or from the AWS stack's table",
  )
  .option('--runs <dir>', 'folder searched, with its subfolders, for run folders (--out ones too)', 'runs')
  .option(
    '--table <name>',
    "read the AWS stack's DynamoDB table instead (AWS credentials and region from the environment)",
  )
  .option('--dataset <key>', 'only the runs of this dataset (its path or key, or the end of it)')
  .option('--json', 'print the tables as JSON')
  .action(async (flags: { runs: string; table?: string; dataset?: string; json?: boolean }) => {
    let leaderboard: Leaderboard = new LocalLeaderboard(resolve(flags.runs));
    if (flags.table) {
      const { createAwsClients } = await import('../shared/adapters/aws/clients.js');
      const { DynamoLeaderboard } = await import('../shared/adapters/aws/dynamo-sweeps.js');
      const clients = createAwsClients({ AWS_ENDPOINT_URL: process.env.AWS_ENDPOINT_URL });
      leaderboard = new DynamoLeaderboard({ client: clients.doc, tableName: flags.table });
    }
    const tables = leaderboardTables(await leaderboard.entries(), flags.dataset);
    if (leaderboard instanceof LocalLeaderboard) process.stderr.write(leaderboard.searched());
    process.stdout.write(flags.json ? `${JSON.stringify({ tables }, null, 2)}\n` : renderLeaderboard(tables));
  });

program
  .command('schema')
  .description("write the suite JSON Schema (for editors) and the families' own formats into a folder")
  .option('--out <dir>', 'output folder', 'schemas')
  .action(async (flags: { out: string }) => {
    const dir = resolve(flags.out);
    await mkdir(dir, { recursive: true });
    for (const [file, schema] of Object.entries(publishedSchemas())) {
      await writeFile(join(dir, file), `${JSON.stringify(schema, null, 2)}\n`);
      process.stdout.write(`wrote ${join(dir, file)}\n`);
    }
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`\nassay: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
