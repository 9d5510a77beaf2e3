/** What the commands print on the terminal once a run, a sweep or a rebuilt report is done. */
import { join } from 'node:path';
import { ms, pValue, visible } from '../../shared/lib/format.js';
import type { Report } from '../../shared/model/report.js';
import type { ComparisonSummary } from '../../shared/reports/compare-runs.js';
import { costLine, headline, incompleteNotice, reliabilityLines } from '../../shared/reports/files.js';
import type { SweepReport } from '../../shared/sweeps/sweep.js';
import { renderSweepText } from '../../shared/sweeps/sweep-files.js';
import type { LocalSweepResult } from '../sweep.js';

/** What a run's summary says on the terminal: counts, each scorer's headline figures, cost. */
export function summary(report: Report, outDir: string): string {
  const lines = [
    '',
    ...[incompleteNotice(report)].filter((line) => line !== undefined),
    `${report.suite}: ${report.counts.scored} scored, ${report.counts.failed} failed (${report.counts.invalidRows} invalid rows)${report.predictions ? `: ${report.predictions}` : ''}`,
    ...Object.entries(report.scores).flatMap(([name, s]) => [
      headline(name, s),
      ...(s.reliability ? reliabilityLines(s.reliability, '  ') : []),
    ]),
    `${costLine(report.cost)}  latency p50 ${ms(report.latencyMs.p50)}`,
    `report: ${join(outDir, 'report.txt')} (and report.html, report.json, labeled.csv, errors.txt, correct.txt)`,
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
  // Labels and names from the data shown, never obeyed by the terminal: see `visible`.
  return visible(`${lines.join('\n')}\n`);
}

/** What a sweep's summary says on the terminal: the sweep report, and where its files are. */
export function sweepSummary({ sweep, outDir, runs }: LocalSweepResult): string {
  const width = Math.max(...runs.map((r) => r.variant.length));
  const lines = [
    '',
    renderSweepText(sweep),
    "variant runs (each folder has the variant's report.txt, report.json, labeled.csv, errors.txt):",
    ...runs.map((r) => `  ${r.variant.padEnd(width)}  ${r.outDir}`),
    `sweep report: ${join(outDir, 'sweep.txt')} (and sweep.html, sweep.json)`,
  ];
  return visible(`${lines.join('\n')}\n`);
}

/** For CI jobs: a sweep whose required gate failed ends the command with exit 1, saying why. */
export function failOnRequiredGate(sweep: SweepReport): void {
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

/** One line on how the run moved against the suite's previous one (primary scorer). */
export function comparisonLine(report: Report): string {
  const c = report.comparison as
    | (Partial<ComparisonSummary> & { baseRunId: string; error?: string })
    | undefined;
  if (!c) return '';
  if (c.error) return visible(`not compared with ${c.baseRunId}: ${c.error}\n`);
  const primary = c.scores?.[report.primaryScorer];
  // No metric moved on a paired item: nothing to say.
  if (!primary || Object.keys(primary.deltas).length === 0) return '';
  const deltas = Object.entries(primary.deltas)
    .map(
      ([name, d]) =>
        `${name} ${d.delta >= 0 ? '+' : ''}${d.delta.toFixed(3)} (p ${pValue(d.pValue)}${d.withinNoise === undefined ? '' : `, ${d.withinNoise ? 'within' : 'beyond'} noise ±${d.noiseFloor!.toFixed(3)}`})`,
    )
    .join('  ');
  const flipped = Object.entries(primary.flipped)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  return visible(`compared with ${c.baseRunId}: ${deltas}; flipped: ${flipped} (comparison.txt)\n`);
}
