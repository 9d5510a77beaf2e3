/** `assay run` (one suite, or `--changed`) and `assay quickstart`. */
import { dirname, join, resolve } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { LocalRunHistory } from '../../shared/adapters/local/local-run-history.js';
import { detectDefaultBackend } from '../../shared/lib/providers/registry.js';
import { isSweep } from '../../shared/model/variants.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { runJunit } from '../../shared/reports/ci/junit.js';
import { runMarkdown } from '../../shared/reports/ci/markdown.js';
import { sweepJunit, sweepMarkdown } from '../../shared/sweeps/ci.js';
import { whyNotWritten } from '../../shared/use-cases/aggregate-run.js';
import { discoverSuites, promptChanges } from '../changed.js';
import { writeCiReports } from '../ci-reports.js';
import { datasetFileOf, loadSuiteFile, PACKAGE_ROOT, RunInterrupted, runSuite } from '../local-run.js';
import { assayCommand } from '../package-root.js';
import { progressReporter } from '../progress.js';
import { quickstartBackendLine } from '../quickstart-backend.js';
import { runSweep, unscorableVariants } from '../sweep.js';
import { comparisonLine, failOnRequiredGate, summary, sweepSummary } from './summary.js';

/** The embedded example that `assay quickstart` (and `assay cloud` without a suite) runs. */
export const QUICKSTART_SUITE = join(PACKAGE_ROOT, 'examples', 'quickstart.suite.json');

export interface RunFlags {
  out?: string;
  runs: string;
  changed?: boolean;
  simulate?: boolean;
  concurrency?: number;
  timeout?: number;
  sample?: number;
  seed: number;
  backend?: string[];
  fresh?: boolean;
  prices?: string;
  lane?: 'sync' | 'batch';
  repeats?: number;
  progress: boolean;
  /** CI reports of the run or sweep: JUnit XML, a Markdown summary (see cli/ci-reports.ts). */
  junit?: string;
  markdown?: string;
}

/** `assay run [suites...]`: one suite, or with --changed the suites whose prompts changed. */
export async function runCommand(suites: string[], flags: RunFlags): Promise<void> {
  if (flags.changed) return runChanged(suites, flags);
  if (suites.length !== 1)
    throw new InvalidArgumentError('give one suite file (or --changed and any number)');
  await stoppable(resumeCommand(), (signal) => run(suites[0]!, flags, undefined, undefined, signal));
}

/**
 * The command that resumes a stopped run: this one as typed, without `--fresh` (which would start
 * yet another run); `assay run SUITE` for a suite that `--changed` ran.
 */
function resumeCommand(suitePath?: string): string {
  const args = suitePath === undefined ? process.argv.slice(2) : ['run', suitePath];
  const shown = args
    .filter((arg) => arg !== '--fresh')
    .map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`));
  return [assayCommand(), ...shown].join(' ');
}

/** Exit code of a run stopped by Ctrl-C (SIGINT) or SIGTERM, as shells report a SIGINT. */
export const STOPPED_EXIT_CODE = 130;

/**
 * Runs `work` so that Ctrl-C (SIGINT) or SIGTERM stops it cleanly: no new item is taken, the
 * items in flight get a bounded wait to be recorded, one line says how to resume (`again`, the
 * command that resumes it), and the process ends with 130. The same signal sent twice at once
 * (a terminal's Ctrl-C reaches npx and, forwarded, its child too) counts once; one sent later
 * ends the process at once.
 */
export async function stoppable(again: string, work: (signal: AbortSignal) => Promise<void>): Promise<void> {
  const controller = new AbortController();
  let first = 0;
  const onSignal = () => {
    if (first === 0) {
      first = Date.now();
      process.stderr.write(
        '\nassay: stopping: no new items; waiting for the items in flight to be recorded…\n',
      );
      controller.abort();
    } else if (Date.now() - first > 1000) process.exit(STOPPED_EXIT_CODE);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await work(controller.signal);
  } catch (error) {
    if (!(error instanceof RunInterrupted)) throw error;
    const lost = error.abandoned > 0 ? ` (${error.abandoned} items in flight were not recorded)` : '';
    process.stderr.write(
      `assay: stopped run ${error.runId} (${error.outDir})${lost}; \`${again}\` resumes it, scoring only the items without a result\n`,
    );
    // Open connections or timers of the abandoned calls must not keep the process alive.
    process.exit(STOPPED_EXIT_CODE);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** `assay quickstart`: the embedded example, on a real model if a key is set, else the simulator. */
export async function quickstartCommand(flags: RunFlags): Promise<void> {
  const detected = detectDefaultBackend(process.env, { bedrock: true });
  const chosen = flags.backend === undefined ? quickstartBackendLine(detected, process.env) : undefined;
  if (chosen) process.stderr.write(chosen);
  await stoppable(resumeCommand(), (signal) => run(QUICKSTART_SUITE, flags, [detected], undefined, signal));
}

async function run(
  suitePath: string,
  flags: RunFlags,
  backends?: string[],
  sample?: { n: number; seed: number },
  signal?: AbortSignal,
): Promise<void> {
  const settings = {
    outDir: flags.out,
    runsDir: flags.runs,
    backends: flags.backend ?? backends,
    simulate: flags.simulate,
    concurrency: flags.concurrency,
    timeoutMs: flags.timeout,
    sample: flags.sample ? { n: flags.sample, seed: flags.seed } : sample,
    fresh: flags.fresh,
    pricesPath: flags.prices,
    lane: flags.lane,
    repeats: flags.repeats,
    onEvent: flags.progress ? progressReporter() : undefined,
    signal,
  };
  const suite = await loadSuiteFile(suitePath);
  const suiteDir = dirname(resolve(suitePath));
  const dataset = await datasetFileOf(suite, suiteDir);
  if (isSweep(suite)) {
    const done = await runSweep(suite, suiteDir, dataset, {
      ...settings,
      onVariant: (name, i, n) => process.stderr.write(`\nvariant ${i + 1}/${n}: ${name}\n`),
    });
    process.stdout.write(sweepSummary(done));
    const empty = Object.fromEntries(
      done.runs.flatMap((r) => (r.unscorable === undefined ? [] : [[r.variant, r.unscorable]])),
    );
    await writeCiReports(flags, {
      junit: () => sweepJunit(done.sweep, empty),
      markdown: () => sweepMarkdown(done.sweep, empty),
    });
    const unscorable = unscorableVariants(done);
    if (unscorable) throw new Error(unscorable);
    failOnRequiredGate(done.sweep);
    return;
  }
  const { outDir, outcome, unscorable } = await runSuite(suite, suiteDir, dataset, settings);
  if (outcome.status !== 'written') throw new Error(`run not aggregated: ${whyNotWritten(outcome)}`);
  process.stdout.write(summary(outcome.report, outDir) + comparisonLine(outcome.report));
  await writeCiReports(flags, {
    junit: () => runJunit(outcome.report, unscorable),
    markdown: () => runMarkdown(outcome.report, unscorable),
  });
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
  if (flags.junit || flags.markdown)
    throw new InvalidArgumentError(
      '--junit and --markdown report one run or sweep: give its suite without --changed',
    );
  const paths = suitePaths.length > 0 ? suitePaths : await discoverSuites('.');
  const changes = await promptChanges(paths, new LocalRunHistory(resolve(flags.runs), validateSuite));
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
    await stoppable(resumeCommand(change.suitePath), (signal) =>
      run(change.suitePath, flags, backends, change.latest.suite.run.sample, signal),
    );
  }
}
