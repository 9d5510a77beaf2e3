/** `assay score`: score outputs made elsewhere with a task family's scorers. */
import { validateSuite } from '../../shared/registry/suite.js';
import { whyNotWritten } from '../../shared/use-cases/aggregate-run.js';
import { runSuite } from '../local-run.js';
import { progressReporter } from '../progress.js';
import { configurations, scoringRun } from '../score.js';
import { runSweep, unscorableVariants } from '../sweep.js';
import { summary, sweepSummary } from './summary.js';

export interface ScoreFlags {
  gold?: string;
  predictions: string;
  out: string;
  task?: string;
  suite?: string;
  predColumn?: string;
  goldColumn?: string;
  idColumn?: string;
  predIdColumn?: string;
  by: string;
  progress: boolean;
}

export async function scoreCommand(flags: ScoreFlags): Promise<void> {
  const { suite, suiteDir, dataset, notice } = await scoringRun(flags);
  process.stdout.write(notice);
  // Several configurations in one file (a `config` column): a run each, compared as a sweep.
  const configs = await configurations(dataset, flags.by);
  if (configs.length > 1) {
    const sweepSuite = validateSuite(
      { ...suite, variants: configs.map((c) => ({ name: c.name })), baseline: configs[0]!.name },
      `assay score (${flags.by})`,
    );
    const done = await runSweep(
      sweepSuite,
      suiteDir,
      (variant) => configs.find((c) => c.name === variant)!.dataset,
      { outDir: flags.out, onEvent: flags.progress ? progressReporter() : undefined },
    );
    for (const r of done.runs) process.stdout.write(summary(r.report, r.outDir));
    process.stdout.write(sweepSummary(done));
    const unscorable = unscorableVariants(done);
    if (unscorable) throw new Error(unscorable);
    return;
  }
  const { outDir, outcome, unscorable } = await runSuite(suite, suiteDir, dataset, {
    outDir: flags.out,
    onEvent: flags.progress ? progressReporter() : undefined,
  });
  if (outcome.status !== 'written') throw new Error(`run not aggregated: ${whyNotWritten(outcome)}`);
  process.stdout.write(summary(outcome.report, outDir));
  if (unscorable) throw new Error(unscorable);
}
