/**
 * A sweep's CI reports: JUnit XML and a GitHub-flavoured Markdown summary, built from the sweep
 * report with the pieces the run's and the comparison's CI reports use (shared/reports/ci/) and
 * the lines sweep.txt writes.
 *
 * The JUnit cases, per variant: one for the variant, then (a gated variant other than the
 * baseline) one per gate condition, the coverage guard included. A case fails exactly when it is
 * a reason for `assay run` to exit 1: the variant scored nothing, or it is required to pass the
 * gate and was not promoted (its variant case and each condition it failed). A variant that is
 * not required and not promoted is `skipped`, and so is each condition it failed, with the gate's
 * reason: the file shows it and the job does not fail on it, as the command does not. Failed
 * items (provider errors, invalid rows) are counted in each variant's output; the gate holds them
 * against the variant only through its conditions (`error_rate`, `scored_rate`, coverage).
 */
import { pValue, usd, withInterval } from '../lib/format.js';
import { metricDisplayName } from '../model/metrics.js';
import {
  elapsed,
  type JunitCase,
  type JunitSuite,
  renderJunit,
  SIMULATED_TAG,
  simulatedProperties,
} from '../reports/ci/junit.js';
import { coverageCell, deltaCells, mdTable, mdText, simulatedAlert } from '../reports/ci/markdown.js';
import { countsLine, failureKinds, metricName } from '../reports/files.js';
import { gateOutcome } from '../reports/gate-outcome.js';
import type { SweepReport, SweepVariant } from './sweep.js';
import { againstBaselineLines, gateLines, verdictCell } from './sweep-files.js';

/** Per variant name, why it scored nothing (the variants that did not). */
export type Unscorable = Readonly<Record<string, string>>;

/** What a variant's case prints: the notice, its items and failures by kind, its figures, cost, verdict. */
function variantLines(report: SweepReport, v: SweepVariant): string[] {
  const kinds = failureKinds(v.counts);
  const metrics = Object.entries(v.metrics).map(
    ([metric, m]) => `${metricName(metric, m)} ${withInterval(m)} (n ${m.n})`,
  );
  return [
    ...(v.simulated ? [report.notice ?? 'SIMULATED'] : []),
    `variant ${v.name} (run ${v.runId}; backends ${v.backends.join(' ') || '(given)'})`,
    countsLine(v.counts),
    ...(kinds ? [`failures by kind: ${kinds}`] : []),
    `${report.primaryScorer}: ${metrics.join('; ') || 'no metrics'}; coverage ${coverageCell(v.coverage)}`,
    `cost ${usd(v.costUsd)}  per 10K ${v.priced === false ? 'unpriced' : usd(v.per10kUsd)}`,
    `gate: ${verdictCell(v)}`,
    ...againstBaselineLines(report, v),
    ...gateLines(v, '  '),
  ];
}

function variantCases(report: SweepReport, v: SweepVariant, unscorable: string | undefined): JunitCase[] {
  const tag = v.simulated ? SIMULATED_TAG : '';
  const classname = `assay.sweep.${report.suite}`;
  const failed = (v.gate?.conditions ?? []).filter((c) => !c.passed);
  const reasons = failed.map((c) => `${c.condition}: ${c.reason}`);
  const variant: JunitCase = {
    classname,
    name: `variant ${v.name}${tag}`,
    systemOut: variantLines(report, v).join('\n'),
  };
  if (unscorable) variant.failure = { message: unscorable, type: 'VariantUnscorable', body: unscorable };
  else if (v.gate && !v.gate.promoted) {
    const message = `${v.name}: NOT PROMOTED${v.gate.required ? ' (required)' : ''}: failed ${v.gate.failed.join('; ')}`;
    if (v.gate.required) variant.failure = { message, type: 'GateFailed', body: reasons.join('\n') };
    else variant.skipped = { message: `${message} (not required to pass)` };
  }
  const conditions: JunitCase[] = (v.gate?.conditions ?? []).map((c) => {
    const one: JunitCase = {
      classname: `${classname}.${v.name}`,
      name: `${v.name}: ${c.condition}${tag}`,
      systemOut: `${c.passed ? 'pass' : 'FAIL'}  ${c.condition}: ${c.reason}`,
    };
    if (c.passed) return one;
    if (v.gate?.required) one.failure = { message: c.reason, type: 'GateConditionFailed', body: c.reason };
    else one.skipped = { message: `${c.reason} (not required to pass)` };
    return one;
  });
  return [variant, ...conditions];
}

/** The sweep as one JUnit suite (see the top of this file for which cases fail). */
export function sweepJunitSuite(report: SweepReport, unscorable: Unscorable = {}): JunitSuite {
  const tag = report.simulated === 'none' ? '' : report.simulated === 'all' ? SIMULATED_TAG : ' (MIXED)';
  return {
    name: `assay sweep ${report.suite}${tag}`,
    time: elapsed(report.createdAt, report.finishedAt),
    properties: [
      ...simulatedProperties(report.simulated, report.notice),
      ['suite', report.suite],
      ['task', report.task],
      ['sweepId', report.sweepId],
      ['dataset', report.dataset],
      ['baseline', report.baseline],
      ...(report.gate ? [['gate', report.gate.conditions.join(' AND ')] as [string, string]] : []),
      ...(report.gate
        ? [
            ['outcome', gateOutcome({ gate: report.gate, variants: report.variants }).text] as [
              string,
              string,
            ],
          ]
        : []),
    ],
    cases: report.variants.flatMap((v) => variantCases(report, v, unscorable[v.name])),
  };
}

/** JUnit XML of a sweep. */
export function sweepJunit(report: SweepReport, unscorable: Unscorable = {}): string {
  return renderJunit([sweepJunitSuite(report, unscorable)]);
}

/**
 * A sweep's Markdown summary: the variants ranked with their headline metrics and CIs, coverage,
 * cost and verdict; each against the baseline (paired deltas, intervals, p-values); the gate's
 * verdicts with the reasons of the conditions that failed, and its closing sentence.
 */
export function sweepMarkdown(report: SweepReport, unscorable: Unscorable = {}): string {
  const lines = [
    `## Assay sweep — ${mdText(report.suite)} (${mdText(report.task)}), ${report.variants.length} variants`,
    '',
  ];
  if (report.simulated !== 'none') lines.push(...simulatedAlert(report.notice));
  for (const [name, why] of Object.entries(unscorable))
    lines.push(`> **FAILED** — variant ${mdText(name)}: ${mdText(why)}`, '');
  lines.push(
    `baseline ${mdText(report.baseline)} · ranked by ${mdText(metricDisplayName(report.rankBy.metric))} (${report.rankBy.better} is better) · dataset ${mdText(report.dataset)}`,
    '',
  );
  // The headline metrics any variant has, in the order the first one lists them.
  const metrics = [...new Set(report.variants.flatMap((v) => Object.keys(v.metrics)))];
  const nameOf = (metric: string) =>
    report.variants.map((v) => v.metrics[metric]?.name).find((n) => n !== undefined) ??
    metricDisplayName(metric);
  lines.push(
    ...mdTable(
      [
        'rank',
        'variant',
        'backends',
        ...metrics.map((m) => `${nameOf(m)} (95% CI)`),
        'n',
        'coverage',
        'cost',
        'cost/10K',
        'pareto',
        'gate',
      ],
      report.variants.map((v) => [
        v.rank === null ? 'n/a' : `${v.rank}${v.tied ? '=' : ''}`,
        `${v.name}${v.simulated && report.simulated === 'mixed' ? ' (SIM)' : ''}`,
        v.backends.join(' ') || '(given)',
        ...metrics.map((m) => withInterval(v.metrics[m])),
        `${v.counts.scored}/${v.counts.items}`,
        coverageCell(v.coverage),
        v.priced === false ? 'unpriced' : usd(v.costUsd),
        v.priced === false ? 'unpriced' : usd(v.per10kUsd),
        v.pareto ? '★' : '',
        verdictCell(v),
      ]),
    ),
    '',
  );
  const failedItems = report.variants.filter((v) => v.counts.failed > 0);
  for (const v of failedItems)
    lines.push(
      `- ${mdText(v.name)}: ${v.counts.failed} items failed (${mdText(failureKinds(v.counts) ?? 'no kind recorded')})`,
    );
  if (failedItems.length > 0) lines.push('');

  const deltas: string[][] = [];
  for (const v of report.variants) {
    for (const [scorer, s] of Object.entries(v.comparison?.scores ?? {})) {
      if (s.coverage)
        deltas.push([v.name, scorer, 'coverage', ...deltaCells(s.coverage), String(s.coverage.n)]);
      for (const [metric, d] of Object.entries(s.deltas))
        deltas.push([
          v.name,
          scorer,
          metricDisplayName(metric),
          ...deltaCells(d),
          String(v.comparison!.paired),
        ]);
      if (s.mcnemarPValue !== undefined)
        deltas.push([
          v.name,
          scorer,
          'McNemar',
          'n/a',
          'n/a',
          pValue(s.mcnemarPValue),
          String(v.comparison!.paired),
        ]);
    }
  }
  if (deltas.length > 0)
    lines.push(
      `### Against the baseline ${mdText(report.baseline)} (paired; Δ = variant − baseline)`,
      '',
      ...mdTable(['variant', 'scorer', 'metric', 'Δ', '95% CI of Δ', 'p', 'paired'], deltas),
      '',
    );

  if (report.gate) {
    const outcome = gateOutcome({ gate: report.gate, variants: report.variants });
    lines.push(
      '### Gate',
      '',
      `conditions: ${mdText(report.gate.conditions.join(' AND '))} · required: ${mdText(report.gate.required.join(', ') || 'none')}`,
      '',
    );
    for (const v of report.variants) {
      if (!v.gate) continue;
      lines.push(`- **${mdText(v.name)}: ${mdText(verdictCell(v))}**`);
      for (const c of v.gate.conditions)
        lines.push(`  - ${c.passed ? 'pass' : '**FAIL**'} ${mdText(c.condition)}: ${mdText(c.reason)}`);
    }
    lines.push(
      '',
      `**${outcome.tone === 'bad' ? '❌' : outcome.tone === 'good' ? '✅' : 'ℹ️'} ${mdText(outcome.text)}**`,
      '',
    );
  }
  return `${lines.join('\n')}\n`;
}
