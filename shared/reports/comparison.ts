import type { Comparison, FlippedItem, FlippedSide } from '../core/compare-runs.js';
import type { PairedDelta } from '../metrics/index.js';
import type { BlobStore } from '../ports.js';
import { putFiles } from './files.js';

/** The files of a run-vs-run comparison, written beside each other under one prefix. */
export const COMPARISON_FILES = ['comparison.json', 'comparison.txt'] as const;

export async function writeComparisonFiles(
  store: BlobStore,
  prefix: string,
  c: Comparison,
): Promise<string[]> {
  const files: Record<(typeof COMPARISON_FILES)[number], [string, string]> = {
    'comparison.json': [`${JSON.stringify(c, null, 2)}\n`, 'application/json'],
    'comparison.txt': [renderComparisonText(c), 'text/plain; charset=utf-8'],
  };
  return putFiles(store, prefix, files);
}

const num = (v: number) => v.toFixed(3);
const signed = (v: number) => `${v > 0 ? '+' : v < 0 ? '-' : '±'}${Math.abs(v).toFixed(3)}`;
const pValue = (p: number) => (p < 0.001 ? '<0.001' : p.toFixed(3));
const usd = (v: number) => `$${Math.abs(v) < 0.01 && v !== 0 ? v.toFixed(6) : v.toFixed(4)}`;
const signedUsd = (v: number) => `${v > 0 ? '+' : v < 0 ? '-' : '±'}${usd(Math.abs(v))}`;

const METRIC_NAMES: Record<string, string> = {
  accuracy: '4-class accuracy',
  macroF1: 'macro F1',
  binaryF1: 'binary F1',
  kappa: "Cohen's kappa",
  meanScore: 'mean score',
};

function metricRow(name: string, d: PairedDelta): string {
  const ci = `[${signed(d.ci[0])}, ${signed(d.ci[1])}]`;
  return `  ${(METRIC_NAMES[name] ?? name).padEnd(17)} ${num(d.base).padStart(7)} ${num(d.candidate).padStart(10)} ${signed(d.delta).padStart(8)}  ${ci.padEnd(18)} ${pValue(d.pValue).padStart(7)}`;
}

/** One line saying what McNemar's test means for these two runs. */
export function mcnemarReading(m: { b: number; c: number; pValue: number }): string {
  if (m.b + m.c === 0) return 'no discordant items: no evidence of a difference';
  if (!(m.pValue < 0.05)) return 'no significant difference at 5%';
  return `${m.c > m.b ? 'candidate' : 'base'} better (p=${pValue(m.pValue)})`;
}

function sideLine(label: string, side: FlippedSide): string {
  const status = side.status === 'scored' ? '' : `  [${side.status}]`;
  return `  ${label.padEnd(10)} ${(side.prediction ?? '-').padEnd(5)}${status}  ${side.reason ?? ''}`.trimEnd();
}

function flippedBlock(f: FlippedItem): string[] {
  const lines = [`[${f.itemId}] row ${f.row}  gold=${f.gold ?? '-'}  ${f.kind}`];
  if (f.input.src !== undefined) lines.push(`  src: ${f.input.src}`);
  if (f.input.tgt !== undefined) lines.push(`  tgt: ${f.input.tgt}`);
  lines.push(sideLine('base', f.base), sideLine('candidate', f.candidate));
  return lines;
}

/** A readable comparison, in the manner of report.txt. */
export function renderComparisonText(c: Comparison): string {
  const lines = [
    `Assay comparison — ${c.base.suite} → ${c.candidate.suite}`,
    `base       ${c.base.runId}   started ${c.base.startedAt}   backends: ${c.base.backends.join(', ')}`,
    `candidate  ${c.candidate.runId}   started ${c.candidate.startedAt}   backends: ${c.candidate.backends.join(', ')}`,
  ];
  if (c.base.dataset === c.candidate.dataset) lines.push(`dataset: ${c.base.dataset}`);
  else lines.push(`WARNING: the runs used different datasets: ${c.base.dataset} vs ${c.candidate.dataset}`);

  lines.push(
    '',
    c.promptChanges.length === 0 ? 'Prompt changes: none' : `Prompt changes (${c.promptChanges.length})`,
  );
  for (const p of c.promptChanges)
    lines.push(`  ${p.path}: ${p.base ?? '(none)'} → ${p.candidate ?? '(none)'}`);

  const { paired, onlyBase, onlyCandidate } = c.items;
  lines.push(
    '',
    `Items: ${paired} paired, ${onlyBase} only in base, ${onlyCandidate} only in candidate (invalid rows not paired)`,
  );

  const rows = Object.entries(c.metrics ?? {});
  if (c.scores) rows.push(['meanScore', c.scores]);
  if (rows.length > 0) {
    const n = c.metrics ? c.metrics.accuracy.n : c.scores!.n;
    lines.push(
      '',
      `Metrics (n = ${n} paired items${c.metrics ? ' with gold; Error rows excluded on each side' : ''}; paired bootstrap)`,
      `  ${'metric'.padEnd(17)} ${'base'.padStart(7)} ${'candidate'.padStart(10)} ${'Δ'.padStart(8)}  ${'95% CI of Δ'.padEnd(18)} ${'p'.padStart(7)}`,
    );
    for (const [name, d] of rows) {
      if (name === 'meanScore' && c.metrics)
        lines.push(`  (mean score over ${d.n} items scored on both sides)`);
      lines.push(metricRow(name, d));
    }
  } else {
    lines.push('', 'Metrics: none (no paired item has a gold label or a score)');
  }

  if (c.mcnemar) {
    const m = c.mcnemar;
    lines.push(
      '',
      `McNemar (correct = prediction equals gold, Error = wrong): b ${m.b} (base right only), c ${m.c} (candidate right only), p ${pValue(m.pValue)} (${m.method})`,
      `  ${mcnemarReading(m)}`,
    );
  }

  lines.push(
    '',
    `Cost: base ${usd(c.cost.base)}   candidate ${usd(c.cost.candidate)}   Δ ${signedUsd(c.cost.delta)}`,
  );

  const kinds = { fixed: 0, broken: 0, changed: 0 };
  for (const f of c.flipped) kinds[f.kind] += 1;
  lines.push(
    '',
    `Flipped items (${c.flipped.length}): ${kinds.fixed} fixed, ${kinds.broken} broken, ${kinds.changed} changed`,
  );
  for (const f of c.flipped) lines.push('', ...flippedBlock(f));
  return `${lines.join('\n')}\n`;
}
