/**
 * A sweep's report files: `sweep.json` (the contract) and `sweep.txt` (for people): variants
 * ranked with CIs, cost per 10K and latency side by side, the Pareto front marked, every
 * variant against the baseline, and the gate's verdicts with their figures.
 */

import { interval, ms, num, pValue, signed, textTable, usd, visible, withInterval } from '../lib/format.js';
import { metricDisplayName } from '../model/metrics.js';
import type { BlobStore } from '../ports/ports.js';
import type { PromptChange } from '../reports/compare-runs.js';
import { gateOutcome, sequentialLine } from '../reports/gate-outcome.js';
import { renderPage } from '../reports/html/render.js';
import { lowerCoverage, type SweepReport, type SweepVariant } from './sweep.js';

export const SWEEP_FILES = ['sweep.json', 'sweep.txt', 'sweep.html'] as const;

/** A variant's verdict as the sweep's tables write it: `baseline`, `PROMOTED (required)`, `NOT PROMOTED`, `-`. */
export function verdictCell(v: SweepVariant): string {
  if (v.verdict === 'baseline') return 'baseline';
  if (v.verdict === 'no gate') return '-';
  return `${v.verdict === 'promoted' ? 'PROMOTED' : 'NOT PROMOTED'}${v.gate?.required ? ' (required)' : ''}`;
}

/**
 * The prompt files that differ from the baseline's, a line per change. A file edited in place is
 * one change; so is a file the variant uses in place of the baseline's (the baseline's path
 * gone, the variant's new), which the comparison records as one path dropped and one added:
 * they are paired in order into `prompt changed: old → new`. What is left unpaired was only
 * added or only dropped.
 */
export function promptChangeLines(changes: readonly PromptChange[]): string[] {
  const edited = changes.filter((c) => c.base !== undefined && c.candidate !== undefined);
  const dropped = changes.filter((c) => c.candidate === undefined).map((c) => c.path);
  const added = changes.filter((c) => c.base === undefined).map((c) => c.path);
  const paired = Math.min(dropped.length, added.length);
  return [
    ...edited.map((c) => `prompt changed: ${c.path} (edited)`),
    ...dropped.slice(0, paired).map((path, i) => `prompt changed: ${path} → ${added[i]}`),
    ...dropped.slice(paired).map((path) => `prompt dropped: ${path}`),
    ...added.slice(paired).map((path) => `prompt added: ${path}`),
  ];
}

export function renderSweepText(report: SweepReport): string {
  const lines: string[] = [];
  if (report.notice) lines.push('*'.repeat(78), report.notice, '*'.repeat(78), '');
  const rankName = metricDisplayName(report.rankBy.metric);
  lines.push(
    `Assay sweep — ${report.suite} (${report.task}), ${report.variants.length} variants`,
    `sweep ${report.sweepId}   ${report.createdAt} → ${report.finishedAt}`,
    `dataset: ${report.dataset}`,
    `baseline: ${report.baseline}   ranked by: ${rankName} (${report.rankBy.better} is better; 95% CI)`,
    `ranking and Pareto front over: ${report.rankBy.over ?? "each variant's own scored items"}`,
    '',
  );
  const rows = report.variants.map((v) => [
    v.rank === null ? '-' : `${v.rank}${v.tied ? '=' : ''}`,
    `${v.name}${v.simulated && report.simulated === 'mixed' ? ' (SIM)' : ''}`,
    v.backends.join(' ') || '(given)',
    withInterval(v.rankValue),
    v.priced === false ? 'unpriced' : v.per10kUsd === null ? 'n/a' : `$${v.per10kUsd.toFixed(2)}`,
    ms(v.latencyMs.p50),
    ms(v.latencyMs.p95),
    `${v.counts.scored}/${v.counts.items}`,
    v.coverage?.value == null ? 'n/a' : num(v.coverage.value),
    v.pareto ? '*' : '',
    verdictCell(v),
  ]);
  lines.push(
    ...textTable(
      [
        'rank',
        'variant',
        'backends',
        rankName,
        'cost/10K',
        'p50',
        'p95',
        'scored',
        'coverage',
        'pareto',
        'gate',
      ],
      rows,
    ),
    '',
    '* on the Pareto front of quality against cost per 10K: no other variant is as good and cheaper, or better and as cheap.',
    ...unpricedNote(report),
    ...lowerCoverageNote(report),
    '',
  );

  lines.push(
    `Against the baseline ${report.baseline} (paired on the same items; delta = variant − baseline)`,
  );
  for (const v of report.variants) lines.push(...againstBaselineLines(report, v));

  if (report.gate) {
    lines.push(
      '',
      `Gate: ${report.gate.conditions.join('  AND  ')}`,
      `required: ${report.gate.required.length > 0 ? report.gate.required.join(', ') : 'none'}`,
    );
    if (report.gate.sequential)
      lines.push(
        `sequential: each variant's items scored in a seeded random order (seed ${report.gate.sequential.seed}), the baseline first and in full; a variant stops once its confidence sequences settle the gate, and its verdict is wrong with probability at most ${report.gate.sequential.alpha}`,
      );
    for (const v of report.variants)
      if (v.gate) lines.push(`  ${v.name}: ${verdictCell(v)}`, ...gateLines(v, '    '));
    lines.push('', gateOutcome({ gate: report.gate, variants: report.variants }).text);
  }
  // Names and labels from the data shown, never obeyed: see `visible`.
  return visible(`${lines.join('\n')}\n`);
}

/**
 * A variant against the baseline, as sweep.txt writes it: the paired items and the cost delta,
 * then per scorer its coverage, its deltas with their intervals and p-values, McNemar and the
 * flipped items, then the prompt changes. None for the baseline.
 */
export function againstBaselineLines(report: SweepReport, v: SweepVariant): string[] {
  if (!v.comparison) return [];
  const lines: string[] = [];
  lines.push(`  ${v.name}: ${v.comparison.paired} paired items, cost ${costDelta(report, v)}`);
  for (const [scorer, s] of Object.entries(v.comparison.scores)) {
    const deltas = Object.entries(s.deltas).map(
      ([metric, d]) =>
        `${metricDisplayName(metric)} ${signed(d.delta)} ${d.reason ? `(${d.reason})` : `${interval(d.ci)} p=${pValue(d.pValue)}`}${d.noiseFloor === undefined ? '' : ` ${d.withinNoise ? 'within' : 'beyond'} noise ±${num(d.noiseFloor)}`}`,
    );
    const mcnemar = s.mcnemarPValue === undefined ? '' : `; McNemar p=${pValue(s.mcnemarPValue)}`;
    const c = s.coverage;
    const over = c
      ? `coverage ${c.scored.candidate}/${c.n} vs ${c.scored.base}/${c.n} Δ ${signed(c.delta)} ${interval(c.ci)} p=${pValue(c.pValue)}; over the ${c.n === c.scored.base && c.n === c.scored.candidate ? c.n : 'items both scored'}: `
      : '';
    lines.push(
      `    ${scorer}: ${over}${deltas.length > 0 ? deltas.join('; ') : 'no paired figures'}${mcnemar}; flipped: ${s.flipped.fixed} fixed, ${s.flipped.broken} broken, ${s.flipped.changed} changed`,
    );
  }
  for (const change of promptChangeLines(v.comparison.promptChanges)) lines.push(`    ${change}`);
  return lines;
}

/**
 * A variant's gate as sweep.txt writes it: what its sequential gate did, then each condition,
 * `pass` or `FAIL`, with the reason the gate gave.
 */
export function gateLines(v: SweepVariant, indent: string): string[] {
  return [
    ...(v.sequential ? [`${indent}${sequentialLine(v.sequential)}`] : []),
    ...(v.gate?.conditions ?? []).map(
      (c) => `${indent}${c.passed ? 'pass' : 'FAIL'}  ${c.condition}: ${c.reason}`,
    ),
  ];
}

/** Writes sweep.json, sweep.txt and sweep.html (the same figures as a page with charts) under `prefix`; returns their keys. */
export async function writeSweepFiles(
  reports: BlobStore,
  prefix: string,
  report: SweepReport,
): Promise<string[]> {
  const files: [string, string, string][] = [
    ['sweep.json', `${JSON.stringify(report, null, 2)}\n`, 'application/json'],
    ['sweep.txt', renderSweepText(report), 'text/plain; charset=utf-8'],
    [
      'sweep.html',
      renderPage(`Assay sweep — ${report.suite} (${report.sweepId})`, {
        kind: 'sweep',
        sweep: report as unknown as Record<string, unknown>,
      }),
      'text/html; charset=utf-8',
    ],
  ];
  for (const [name, body, type] of files) await reports.put(`${prefix}${name}`, body, type);
  return files.map(([name]) => `${prefix}${name}`);
}

/** Which variants are off the cost front for want of a price, and why. */
function unpricedNote(report: SweepReport): string[] {
  const unpriced = report.variants.filter((v) => v.priced === false);
  if (unpriced.length === 0) return [];
  const models = [...new Set(unpriced.flatMap((v) => v.unpriced ?? []))];
  return [
    `  unpriced: ${unpriced.map((v) => v.name).join(', ')} called ${models.join(', ') || 'a model'} without a price, so ${unpriced.length === 1 ? 'its' : 'their'} cost is unknown and ${unpriced.length === 1 ? 'it is' : 'they are'} left off the Pareto front (price them with run.prices or --prices FILE).`,
  ];
}

/** Which variants are off the front for scoring fewer items than the baseline. */
function lowerCoverageNote(report: SweepReport): string[] {
  const lower = report.variants.filter((v) => lowerCoverage(v, report.primaryScorer));
  if (lower.length === 0) return [];
  return [
    `  lower coverage: ${lower.map((v) => v.name).join(', ')} scored fewer items than the baseline beyond chance, so ${lower.length === 1 ? 'its' : 'their'} ${metricDisplayName(report.rankBy.metric)} is over the items ${lower.length === 1 ? 'it' : 'they'} chose to answer: left off the Pareto front.`,
  ];
}

/** A variant's cost against the baseline's: unknown when either called a model without a price. */
function costDelta(report: SweepReport, v: SweepVariant): string {
  const base = report.variants.find((o) => o.name === report.baseline);
  if (v.priced === false || base?.priced === false) return 'unpriced';
  const delta = v.comparison?.costDeltaUsd ?? 0;
  return `${delta < 0 ? '-' : '+'}${usd(Math.abs(delta))}`;
}
