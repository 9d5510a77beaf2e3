/** `assay score`: score outputs made elsewhere with a task family's scorers. */

import type { ToolResultFormat, ToolResults } from '../../shared/lib/datasets/tool-results.js';
import { num, visible, visibleLine, withInterval } from '../../shared/lib/format.js';
import type { Report } from '../../shared/model/report.js';
import type { Suite } from '../../shared/registry/suite.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { whyNotWritten } from '../../shared/use-cases/aggregate-run.js';
import { type DatasetSource, runSuite } from '../local-run.js';
import { progressReporter } from '../progress.js';
import { configurations, RESULTS_CONFIG_COLUMN, resultsRun, scoringRun } from '../score.js';
import { runSweep, unscorableVariants } from '../sweep.js';
import { summary, sweepSummary } from './summary.js';

export interface ScoreFlags {
  gold?: string;
  predictions?: string;
  /** Another tool's results file (promptfoo, OpenAI Evals), instead of predictions. */
  results?: string;
  format?: ToolResultFormat;
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

/** Flags that read predictions, which a results file does not take. */
const PREDICTION_FLAGS = [
  'gold',
  'task',
  'suite',
  'predColumn',
  'goldColumn',
  'idColumn',
  'predIdColumn',
] as const;

export async function scoreCommand(flags: ScoreFlags): Promise<void> {
  if (flags.results !== undefined) {
    const extra = PREDICTION_FLAGS.filter((name) => flags[name] !== undefined);
    if (flags.predictions !== undefined || extra.length > 0) {
      const named = [...(flags.predictions !== undefined ? ['predictions'] : []), ...extra];
      throw new Error(
        `--results reads another tool's verdicts whole: drop ${named.map((n) => `--${n.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')}`,
      );
    }
    const { suite, suiteDir, dataset, notice, results } = await resultsRun({
      results: flags.results,
      ...(flags.format ? { format: flags.format } : {}),
    });
    process.stdout.write(notice);
    const reports = await scoreConfigurations(suite, suiteDir, dataset, RESULTS_CONFIG_COLUMN, flags);
    process.stdout.write(visible(byConfiguration(results, reports)));
    return;
  }
  if (flags.format !== undefined) throw new Error('--format names the format of a --results file');
  if (flags.predictions === undefined)
    throw new Error(
      "give the outputs to score: --predictions <file> (with --gold, or holding the gold), or another tool's results with --results <file>",
    );
  const { suite, suiteDir, dataset, notice } = await scoringRun({ ...flags, predictions: flags.predictions });
  process.stdout.write(notice);
  await scoreConfigurations(suite, suiteDir, dataset, flags.by, flags);
}

/**
 * Scores a dataset: with several configurations in its `column` (a `config` column), a run each,
 * compared as a sweep with the first as baseline; else one run.
 */
async function scoreConfigurations(
  suite: Suite,
  suiteDir: string,
  dataset: DatasetSource,
  column: string,
  flags: Pick<ScoreFlags, 'out' | 'progress'>,
): Promise<{ value: string; report: Report }[]> {
  const configs = await configurations(dataset, column);
  if (configs.length > 1) {
    const sweepSuite = validateSuite(
      { ...suite, variants: configs.map((c) => ({ name: c.name })), baseline: configs[0]!.name },
      `assay score (${column})`,
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
    return configs.map((c, i) => ({ value: c.value, report: done.runs[i]!.report }));
  }
  const { outDir, outcome, unscorable } = await runSuite(suite, suiteDir, dataset, {
    outDir: flags.out,
    onEvent: flags.progress ? progressReporter() : undefined,
  });
  if (outcome.status !== 'written') throw new Error(`run not aggregated: ${whyNotWritten(outcome)}`);
  process.stdout.write(summary(outcome.report, outDir));
  if (unscorable) throw new Error(unscorable);
  return [{ value: configs[0]?.value ?? '', report: outcome.report }];
}

/**
 * The figures of a results file by configuration, as a table: the pass rate with its 95%
 * interval and n (the tests with a verdict), the tests that errored (no verdict: failed items),
 * the rows that errored, and with repeats pass^k with its interval and the flip rate.
 */
function byConfiguration(results: ToolResults, runs: { value: string; report: Report }[]): string {
  const rows = runs.map(({ value, report }) => {
    const pass = report.scores.pass;
    const rate = pass?.metrics.passRate;
    const passes = pass?.reliability?.passes;
    const erroredRows = results.rows.filter((r) => r.config === value && r.verdict === 'error').length;
    return [
      visibleLine(value),
      withInterval(rate),
      String(rate?.n ?? 0),
      String(report.counts.errors),
      String(erroredRows),
      ...(passes
        ? [`${withInterval(passes.passAllK)} (n ${passes.passAllK.n})`, num(pass?.reliability?.flipRate)]
        : []),
    ];
  });
  const k = runs.map((r) => r.report.scores.pass?.reliability?.passes?.k).find((x) => x !== undefined);
  const head = ['configuration', 'pass rate [95% CI]', 'n', 'errored tests', 'errored rows'];
  if (k !== undefined) head.push(`pass^${k} [95% CI]`, 'flip rate');
  const table = [head, ...rows];
  const widths = head.map((_, c) => Math.max(...table.map((r) => (r[c] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((cell, c) => cell.padEnd(widths[c]!))
      .join('  ')
      .trimEnd();
  return ['', `${results.format} results by configuration:`, ...table.map(line), ''].join('\n');
}
