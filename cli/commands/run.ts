/** `assay run` (one suite, or `--changed`) and `assay quickstart`. */
import { dirname, join, resolve } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { LocalRunHistory } from '../../shared/adapters/local/local-run-history.js';
import { detectDefaultBackend } from '../../shared/lib/providers/registry.js';
import { isSweep } from '../../shared/model/variants.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { whyNotWritten } from '../../shared/use-cases/aggregate-run.js';
import { discoverSuites, promptChanges } from '../changed.js';
import { datasetFileOf, loadSuiteFile, PACKAGE_ROOT, runSuite } from '../local-run.js';
import { progressReporter } from '../progress.js';
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
}

/** `assay run [suites...]`: one suite, or with --changed the suites whose prompts changed. */
export async function runCommand(suites: string[], flags: RunFlags): Promise<void> {
  if (flags.changed) return runChanged(suites, flags);
  if (suites.length !== 1)
    throw new InvalidArgumentError('give one suite file (or --changed and any number)');
  await run(suites[0]!, flags);
}

/** `assay quickstart`: the embedded example, on a real model if a key is set, else the simulator. */
export async function quickstartCommand(flags: RunFlags): Promise<void> {
  await run(QUICKSTART_SUITE, flags, [detectDefaultBackend(process.env)]);
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
    timeoutMs: flags.timeout,
    sample: flags.sample ? { n: flags.sample, seed: flags.seed } : sample,
    fresh: flags.fresh,
    pricesPath: flags.prices,
    lane: flags.lane,
    repeats: flags.repeats,
    onEvent: flags.progress ? progressReporter() : undefined,
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
    const unscorable = unscorableVariants(done);
    if (unscorable) throw new Error(unscorable);
    failOnRequiredGate(done.sweep);
    return;
  }
  const { outDir, outcome, unscorable } = await runSuite(suite, suiteDir, dataset, settings);
  if (outcome.status !== 'written') throw new Error(`run not aggregated: ${whyNotWritten(outcome)}`);
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
  const changes = await promptChanges(
    paths,
    new LocalRunHistory(resolve(flags.runs), undefined, { checkSuite: validateSuite }),
  );
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
