/**
 * The `assay` command line: every command is declared here with its options, and its
 * implementation (cli/commands/*) is imported only when it runs, so that `assay --help` and
 * `assay --version` load commander and nothing else.
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { CloudDeployFlags, CloudFlags, CloudStopFlags } from './commands/cloud.js';
import type { EstimateFlags } from './commands/estimate.js';
import type { ImportFlags } from './commands/import.js';
import type { LabelFlags } from './commands/label.js';
import type { RunFlags } from './commands/run.js';
import type { ScoreFlags } from './commands/score.js';
import type { TuneFlags } from './commands/tune.js';

/** The task families `assay score --task` accepts (a test keeps it equal to the registry's). */
const TASK_NAMES = 'gec, judge, qa, cleanup, summarization, checks, verdicts';

/** The package's version; package.json sits one folder above this file, built (dist/) or not (cli/). */
function packageVersion(): string {
  const text = readFileSync(new URL('../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

/** The CI reports' options, the same on `assay run` and `assay compare`. */
const JUNIT_OPTION = [
  '--junit <file>',
  'also write JUnit XML for CI: test cases (a run, each variant and gate condition, each scorer compared), failing where the command exits 1',
] as const;
const MARKDOWN_OPTION = [
  '--markdown <file>',
  'also write a GitHub-flavoured Markdown summary (for $GITHUB_STEP_SUMMARY or a pull-request comment)',
] as const;

function runOptions(command: Command): Command {
  return command
    .option(
      '-o, --out <dir>',
      "run folder (default runs/<runId>); for a sweep, the folder of its report and its variants' run folders (default: the sweep report in runs/<sweepId>/, the variants' runs in runs/); running again resumes it",
    )
    .option('-c, --concurrency <n>', 'items in flight', positiveInt)
    .option(
      '--timeout <ms>',
      "per model request: abandon and retry a request not answered in this many ms (default: the suite's run.timeoutMs, else 60000)",
      positiveInt,
    )
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
      '--repeats <k>',
      "score every item k times as independent samples and report the flip rate, Krippendorff's alpha and each metric's noise floor (default: the suite's run.repeats, else 1)",
      positiveInt,
    )
    .option(
      '--runs <dir>',
      "folder of run folders; the report compares with the suite's previous run there",
      'runs',
    )
    .option('--no-progress', 'no progress bar')
    .option(...JUNIT_OPTION)
    .option(...MARKDOWN_OPTION);
}

const program = new Command()
  .name('assay')
  .description('Run LLM judges and graders over gold datasets; report quality and cost.')
  .version(packageVersion(), '-V, --version', 'print the version of Assay')
  .showHelpAfterError();

program
  .command('init [dir]')
  .description(
    'start an evaluation: write a judge declared without code (a prompt and its labels), a labelled dataset and their suite into a new folder (default my-eval), ready to run with --simulate',
  )
  .action(async (dir: string | undefined) => {
    const { initCommand } = await import('./init.js');
    await initCommand(dir);
  });

runOptions(
  program
    .command('run [suites...]')
    .description('run a suite end to end (resumes an interrupted run)')
    .option(
      '--changed',
      'run again the suites (given, else every *.suite.json below this folder) whose prompt files changed since their latest run',
    ),
).action(async (suites: string[], flags: RunFlags) => {
  const { runCommand } = await import('./commands/run.js');
  await runCommand(suites, flags);
});

runOptions(
  program
    .command('quickstart')
    .description('run the embedded example: a real model if an API key is set, else the simulator'),
).action(async (flags: RunFlags) => {
  const { quickstartCommand } = await import('./commands/run.js');
  await quickstartCommand(flags);
});

const cloudProgram = program
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
  .option(
    '--stall-timeout <ms>',
    'give up once the pipeline has made no progress for this long (default 600000); a run that keeps going is waited for',
    positiveInt,
  )
  .action(async (suite: string | undefined, flags: CloudFlags) => {
    // The AWS SDK and the handlers load only here.
    const { cloudCommand } = await import('./commands/cloud.js');
    await cloudCommand(suite, flags);
  });

cloudProgram
  .command('deploy')
  .description(
    'deploy the stack to AWS from a clone of the repository (cdk deploy in infra/); first prints what the deployment needs from the account and what its settings stop',
  )
  .option('-c, --context <key=value...>', 'deploy settings (infra/README.md), as cdk deploy -c takes them')
  .action(async (flags: CloudDeployFlags) => {
    const { cloudDeployCommand } = await import('./commands/cloud.js');
    await cloudDeployCommand(flags);
  });

cloudProgram
  .command('stop <runId>')
  .description(
    'stop a run on AWS (or in a running local cloud): its items without a result end as "stopped" without a model call, and the run is reported',
  )
  .option('--table <name>', "the stack's table (its TableName output; default ASSAY_TABLE_NAME)")
  .option('--endpoint <url>', "moto_server's URL, for the local cloud (default AWS_ENDPOINT_URL; unset: AWS)")
  .option('--reason <text>', 'why, as the run record and its stopped items say')
  .action(async (runId: string, flags: CloudStopFlags) => {
    const { cloudStopCommand } = await import('./commands/cloud.js');
    await cloudStopCommand(runId, flags);
  });

program
  .command('estimate <suite>')
  .description(
    'before anything is spent: calls, tokens (counted locally), cost range and projected time per backend, at the declared rate limits',
  )
  .option('-c, --concurrency <n>', 'items in flight (default: the suite run.concurrency)', positiveInt)
  .option('--sample <n>', 'estimate a reproducible random sample of n items', positiveInt)
  .option('--seed <s>', 'sample seed', positiveInt, 1)
  .option(
    '--repeats <k>',
    "estimate for scoring every item k times: each model call made k times (default: the suite's run.repeats, else 1)",
    positiveInt,
  )
  .option('-b, --backend <id...>', 'override the suite backends (vendor:model or alias)')
  .option('--latency-ms <ms>', 'assumed time per call', positiveInt, 1000)
  .option('--prices <file>', 'price table override (JSON); also env ASSAY_PRICES')
  .option('--json', 'print the estimate as JSON')
  .action(async (suitePath: string, flags: EstimateFlags) => {
    const { estimateCommand } = await import('./commands/estimate.js');
    await estimateCommand(suitePath, flags);
  });

const share = (value: string) => {
  const n = Number(value);
  if (!(n > 0 && n < 1)) throw new InvalidArgumentError('must be a share in (0, 1)');
  return n;
};

program
  .command('tune <suite>')
  .description(
    "tune a judge honestly: split its labelled items into a tuning set and a held-out set, score the suite's variants and a prompt with demonstrations from the tuning set on the tuning set, then the best of them and the original judge once on the held-out set; improved only when that comparison shows it",
  )
  .option('-o, --out <dir>', 'where the tuning files go (default: tune/ beside the suite)')
  .option('--seed <s>', 'seed of the split and the search', positiveInt, 1)
  .option('--held-out <share>', 'share of the labelled items held out', share, 0.3)
  .option(
    '--demonstrations <n>',
    "the original judge's errors shown as demonstrations (one more item for each label they leave out)",
    positiveInt,
    6,
  )
  .option(
    '--finalists <k>',
    'candidates carried to the held-out comparison (Holm-corrected over them)',
    positiveInt,
    1,
  )
  .option('--alpha <a>', "the held-out test's level", share, 0.05)
  .option('--simulate', 'replace every backend by the simulator (no key; every report says SIMULATED)')
  .option('-c, --concurrency <n>', 'items in flight (default: the suite run.concurrency)', positiveInt)
  .option('--prices <file>', 'price table override (JSON); also env ASSAY_PRICES')
  .option('--json', 'print report.json instead of report.txt')
  .action(async (suitePath: string, flags: TuneFlags) => {
    const { tuneCommand } = await import('./commands/tune.js');
    await tuneCommand(suitePath, flags);
  });

program
  .command('label <suite>')
  .description(
    "choose the items of the suite's latest run that have no gold and whose label would narrow the prediction-powered estimate the most (where the judge was least sure), and write label.html: an offline page to label them with the keyboard and export id,label,p for dataset.goldFile",
  )
  .option('-n, --n <n>', 'items to choose', positiveInt, 50)
  .option('--run <dir>', "the run folder to label from (default: the suite's latest finished run in --runs)")
  .option('--runs <dir>', 'folder of run folders searched for the latest run', 'runs')
  .option('-o, --out <file>', 'the page written (default: label.html in the run folder)')
  .option('--seed <s>', 'sampling seed', positiveInt, 1)
  .option(
    '--floor <share>',
    'share of the label budget spread uniformly over every item, so that each has a chance of being chosen (default 0.2)',
    (value: string) => {
      const share = Number(value);
      if (!(share > 0 && share <= 1)) throw new InvalidArgumentError('must be a share in (0, 1]');
      return share;
    },
  )
  .action(async (suitePath: string, flags: LabelFlags) => {
    const { labelCommand } = await import('./commands/label.js');
    await labelCommand(suitePath, flags);
  });

program
  .command('report <runDir>')
  .description('rebuild the report files of a run folder from its results log')
  .action(async (runDir: string) => {
    const { reportCommand } = await import('./commands/report.js');
    await reportCommand(runDir);
  });

program
  .command('compare <baseRunDir> <candidateRunDir>')
  .description('compare two runs of the same task item by item: metric deltas, flipped items, McNemar')
  .option('-o, --out <dir>', 'also write comparison.json and comparison.txt into this folder')
  .option('--json', 'print the comparison as JSON instead of text')
  .option(
    '--limit <n>',
    'flipped items shown per scorer on screen (default 20; the --out files have all)',
    positiveInt,
  )
  .option(...JUNIT_OPTION)
  .option(...MARKDOWN_OPTION)
  .action(
    async (
      baseDir: string,
      candidateDir: string,
      flags: { out?: string; json?: boolean; limit?: number; junit?: string; markdown?: string },
    ) => {
      const { compareCommand } = await import('./commands/compare.js');
      await compareCommand(baseDir, candidateDir, flags);
    },
  );

program
  .command('score')
  .description(
    "score outputs made elsewhere: a predictions file (joined to --gold on the item id, or holding inputs and gold itself), with a task family's scorers",
  )
  .option('--predictions <file>', 'predictions CSV/JSONL: an id column and an output column')
  .option(
    '--results <file>',
    "another tool's results instead of predictions: a promptfoo results.json or OpenAI Evals output items (JSONL or the list JSON); each prompt × provider (or run) is a configuration",
  )
  .addOption(
    new Option(
      '--format <format>',
      'the format of the --results file (default: told from its content)',
    ).choices(['promptfoo', 'openai-evals']),
  )
  .option('--gold <file>', 'gold CSV/JSONL to join on the id (GEC: the AQUA layouts idx,src,tgt + label)')
  .requiredOption('--out <dir>', 'run folder for the report files (running again resumes it)')
  .option('--task <name>', `task family (${TASK_NAMES}; default: the suite's, else gec)`)
  .option('--suite <file>', "a suite of that task: its family options, column mapping and scorers' settings")
  .option(
    '--pred-column <name>',
    "output column of the predictions file (default: the one of the family's output columns it has — pred, prediction…; never the gold column)",
  )
  .option('--gold-column <name>', "gold column (default: the family's first gold column the gold file has)")
  .option(
    '--id-column <name>',
    "id column to join the files on (default: the suite's columns.id, else idx, else id)",
  )
  .option(
    '--pred-id-column <name>',
    "the predictions file's id column, when it is named apart (default: --id-column's)",
  )
  .option(
    '--by <column>',
    'a column naming configurations (base, fine-tuned…): with several, each is a run of its own in --out and they are compared as a sweep, the first as baseline',
    'config',
  )
  .option('--no-progress', 'no progress bar')
  .action(async (flags: ScoreFlags) => {
    const { scoreCommand } = await import('./commands/score.js');
    await scoreCommand(flags);
  });

program
  .command('import <file>')
  .description(
    "write a suite folder from another tool's eval: an OpenAI Evals definition (eval.json, with --items or --output-items), an openai/evals registry YAML, or a promptfoo config; with --check, re-score the outputs that tool graded and report each grader's parity",
  )
  .option(
    '-o, --out <dir>',
    'the folder written (default imported-<name>); it must not hold the files already',
  )
  .addOption(
    new Option('--format <format>', 'the format, when the file does not tell').choices([
      'openai-evals',
      'evals-registry',
      'promptfoo',
    ]),
  )
  .option('--items <file>', 'OpenAI Evals: the items ({"item": …} lines, optionally with a "sample")')
  .option(
    '--output-items <file>',
    "the graded outputs: an OpenAI Evals run's output items, an openai/evals record log, or a promptfoo results.json",
  )
  .option(
    '--run <file>',
    "OpenAI Evals: the run's definition (its model and messages), when no outputs are given",
  )
  .option(
    '--check',
    're-score the graded outputs with the imported checks: a check without a model must reproduce every grade (else exit 1); a model check reports agreement and kappa with CIs and the items that flipped',
  )
  .option(
    '--simulate',
    'with --check: model checks answered by the simulator (no key; proves nothing about them)',
  )
  .action(async (file: string, flags: ImportFlags) => {
    const { importCommand } = await import('./commands/import.js');
    await importCommand(file, flags);
  });

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
  .option('--html <file>', 'also write the tables as one self-contained HTML page (opens from disk)')
  .action(
    async (flags: { runs: string; table?: string; dataset?: string; json?: boolean; html?: string }) => {
      const { leaderboardCommand } = await import('./commands/leaderboard.js');
      await leaderboardCommand(flags);
    },
  );

program
  .command('schema')
  .description("write the suite JSON Schema (for editors) and the families' own formats into a folder")
  .option('--out <dir>', 'output folder', 'schemas')
  .action(async (flags: { out: string }) => {
    const { schemaCommand } = await import('./commands/schema.js');
    await schemaCommand(flags);
  });

program.parseAsync(process.argv).catch(async (error: unknown) => {
  // A message may quote the data (a file name, a cell): its control characters are shown, not obeyed.
  const { visible } = await import('../shared/lib/format.js');
  process.stderr.write(`\nassay: ${visible(error instanceof Error ? error.message : String(error))}\n`);
  process.exitCode = 1;
});
