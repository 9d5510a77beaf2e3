import { num, pValue, signed, usd, visible, visibleLine } from '../lib/format.js';
import type { PairedDelta } from '../lib/metrics/index.js';
import { metricDisplayName } from '../model/metrics.js';
import type { ScoreKind } from '../model/model.js';
import { HEADLINE_METRICS } from '../model/report.js';
import type { BlobStore } from '../ports/ports.js';
import { answeredBy } from './answered-by.js';
import {
  type Comparison,
  type CoverageDelta,
  type DeltaNoise,
  datasetChanges,
  type FlippedItem,
  type FlippedSide,
  type ScorerComparison,
} from './compare-runs.js';
import { putFiles, simulatedBanner } from './files.js';
import { renderPage } from './html/render.js';

/** The files of a run-vs-run comparison, written beside each other under one prefix. */
export const COMPARISON_FILES = ['comparison.json', 'comparison.txt', 'comparison.html'] as const;

export async function writeComparisonFiles(
  store: BlobStore,
  prefix: string,
  c: Comparison,
): Promise<string[]> {
  const files: Record<(typeof COMPARISON_FILES)[number], [string, string]> = {
    'comparison.json': [`${JSON.stringify(c, null, 2)}\n`, 'application/json'],
    'comparison.txt': [renderComparisonText(c), 'text/plain; charset=utf-8'],
    'comparison.html': [
      renderPage(`Assay comparison — ${c.base.runId} → ${c.candidate.runId}`, {
        kind: 'comparison',
        comparison: c as unknown as Record<string, unknown>,
      }),
      'text/html; charset=utf-8',
    ],
  };
  return putFiles(store, prefix, files);
}

/** A signed dollar difference: `+$0.0012`, `-$0.0300`, `±$0.0000`. */
export const usdSigned = (v: number) => `${v > 0 ? '+' : v < 0 ? '-' : '±'}${usd(Math.abs(v))}`;

export function metricRow(name: string, d: PairedDelta, noise?: DeltaNoise): string {
  // A bootstrap delta on too few pairs: no interval or p to rely on, and the line says why.
  const ci = d.reason ? 'n/a' : `[${signed(d.ci[0])}, ${signed(d.ci[1])}]`;
  const p = d.reason ? 'n/a' : pValue(d.pValue);
  const floor = noise ? `  ±${num(noise.floor)} ${noise.withinNoise ? 'within noise' : 'beyond noise'}` : '';
  return `  ${metricDisplayName(name).padEnd(17)} ${num(d.base).padStart(7)} ${num(d.candidate).padStart(10)} ${signed(d.delta).padStart(8)}  ${ci.padEnd(18)} ${p.padStart(7)}${floor}${d.reason ? `  (${d.reason})` : ''}`;
}

/** The metric a slice's line shows: the kind's first headline metric the deltas have. */
export function sliceHeadline(kind: ScoreKind, deltas: Record<string, PairedDelta>): string | undefined {
  return HEADLINE_METRICS[kind].find((metric) => deltas[metric] !== undefined) ?? Object.keys(deltas)[0];
}

/** Per slice column the headline metric's paired delta for each value (all deltas are in comparison.json). */
function sliceRows(s: ScorerComparison): string[] {
  if (!s.slices) return [];
  const lines: string[] = [];
  for (const [column, values] of Object.entries(s.slices)) {
    const metric = Object.values(values)
      .map((v) => sliceHeadline(s.kind, v.deltas))
      .find((m) => m !== undefined);
    lines.push(
      `  slices by ${column}${metric ? ` (${metricDisplayName(metric)}, paired on the items of each value)` : ''}`,
      `  ${'value'.padEnd(17)} ${'base'.padStart(7)} ${'candidate'.padStart(10)} ${'Δ'.padStart(8)}  ${'95% CI of Δ'.padEnd(18)} ${'p'.padStart(7)}  n`,
    );
    for (const [value, slice] of Object.entries(values)) {
      const d = metric ? slice.deltas[metric] : undefined;
      const name = [...value].length > 17 ? `${[...value].slice(0, 16).join('')}…` : value;
      lines.push(
        d ? `${metricRow(name, d)}  ${slice.n}` : `  ${name.padEnd(17)} ${'n/a'.padStart(7)}  ${slice.n}`,
      );
    }
  }
  return lines;
}

/**
 * Each side's coverage of the paired items and its paired difference: an item one side failed
 * and the other scored is counted here, never dropped from one side of the metrics.
 */
export function coverageLines(c: CoverageDelta): string[] {
  const share = (scored: number, rate: number) => `${scored}/${c.n} (${num(rate)})`;
  const lines = [
    `  coverage (scored / paired items): base ${share(c.scored.base, c.base)}, candidate ${share(c.scored.candidate, c.candidate)}; Δ ${signed(c.delta)} [${signed(c.ci[0])}, ${signed(c.ci[1])}] p ${pValue(c.pValue)}`,
  ];
  if (c.ci[1] < 0)
    lines.push(
      '    the candidate scores fewer items beyond chance: its metrics below are over the items both sides scored, and the items it left unscored are not counted against it there',
    );
  else if (c.ci[0] > 0) lines.push('    the candidate scores more items beyond chance');
  return lines;
}

/** One line saying what McNemar's test means for these two runs. */
export function mcnemarReading(m: { b: number; c: number; pValue: number }): string {
  if (m.b + m.c === 0) return 'no discordant items: no evidence of a difference';
  if (!(m.pValue < 0.05)) return 'no significant difference at 5%';
  return `${m.c > m.b ? 'candidate' : 'base'} better (p=${pValue(m.pValue)})`;
}

function sideLine(label: string, side: FlippedSide): string {
  const status = side.status === 'scored' ? '' : `  [${side.status}]`;
  return `  ${label.padEnd(10)} ${side.value.padEnd(5)}${status}  ${side.reason ?? ''}`.trimEnd();
}

function flippedBlock(f: FlippedItem): string[] {
  const lines = [
    `[${visibleLine(f.itemId)}] row ${f.row}  gold=${visibleLine(String(f.gold ?? '-'))}  ${f.kind}`,
  ];
  for (const [key, value] of Object.entries(f.input)) lines.push(`  ${key}: ${value}`);
  lines.push(sideLine('base', f.base), sideLine('candidate', f.candidate));
  return lines;
}

const RIGHT: Record<ScoreKind, string> = {
  label: 'right = the label equals gold, unscored = wrong',
  pass: 'right = pass (or equals the gold pass/fail)',
  number: '',
};

/** How much of a comparison the text shows (the terminal shows some; the files show all). */
export interface ComparisonTextOptions {
  /** Flipped items shown per scorer; all when undefined. */
  limit?: number;
  /** Where all of them are, said after the ones shown (default: how to get them). */
  allIn?: string;
}

/** Flipped items `assay compare` shows on the terminal per scorer unless told otherwise. */
export const SCREEN_FLIPPED_LIMIT = 20;

/** A scorer's section of comparison.txt: coverage, the metrics' paired deltas, McNemar, slices, flipped items. */
export function scorerSection(
  name: string,
  s: ScorerComparison,
  primary: boolean,
  options: ComparisonTextOptions = {},
): string[] {
  const lines = ['', `Scorer ${name} (${s.kind}${primary ? ', primary' : ''})`];
  if (s.coverage) lines.push(...coverageLines(s.coverage));
  const rows = Object.entries(s.deltas);
  if (rows.length > 0) {
    const over = s.kind === 'label' ? 'items scored on both sides, with gold' : 'items scored on both sides';
    lines.push(
      `  metrics (n = ${s.n} ${over}; ${s.kind === 'number' ? 'paired bootstrap' : "proportions: Newcombe's paired interval and McNemar's p; the rest: paired bootstrap"})`,
      `  ${'metric'.padEnd(17)} ${'base'.padStart(7)} ${'candidate'.padStart(10)} ${'Δ'.padStart(8)}  ${'95% CI of Δ'.padEnd(18)} ${'p'.padStart(7)}${s.noise ? '  noise floor' : ''}`,
    );
    for (const [metric, d] of rows) lines.push(metricRow(metric, d, s.noise?.[metric]));
    if (s.noise)
      lines.push(
        "  noise floor: the larger of the two runs' SD of the metric across their single-repeat runs (run.repeats); a Δ within it is within the scorer's own noise",
      );
  } else {
    lines.push('  metrics: none (no paired item has what this scorer needs on both sides)');
  }
  if (s.mcnemar) {
    const m = s.mcnemar;
    lines.push(
      `  McNemar (${RIGHT[s.kind]}): b ${m.b} (base right only), c ${m.c} (candidate right only), p ${pValue(m.pValue)} (${m.method})`,
      `    ${mcnemarReading(m)}`,
    );
  }
  lines.push(...sliceRows(s));
  const kinds = { fixed: 0, broken: 0, changed: 0 };
  for (const f of s.flipped) kinds[f.kind] += 1;
  lines.push(
    `  flipped items (${s.flipped.length}): ${kinds.fixed} fixed, ${kinds.broken} broken, ${kinds.changed} changed`,
  );
  const shown = options.limit === undefined ? s.flipped : s.flipped.slice(0, options.limit);
  for (const f of shown) lines.push('', ...flippedBlock(f));
  const more = s.flipped.length - shown.length;
  if (more > 0) {
    lines.push(
      '',
      `  … ${more} more flipped item${more === 1 ? '' : 's'} not shown (${shown.length} of ${s.flipped.length}): ${options.allIn ? `all of them in ${options.allIn}` : 'all of them in comparison.txt with --out <dir>, or raise --limit'}`,
    );
  }
  return lines;
}

/** A readable comparison, in the manner of report.txt: every flipped item unless `options.limit` says. */
export function renderComparisonText(c: Comparison, options: ComparisonTextOptions = {}): string {
  const lines = [
    ...(c.simulated ? simulatedBanner(c.notice) : []),
    `Assay comparison — ${c.base.suite} → ${c.candidate.suite}`,
    `base       ${c.base.runId}   started ${c.base.startedAt}   ${answeredBy(c.base)}`,
    `candidate  ${c.candidate.runId}   started ${c.candidate.startedAt}   ${answeredBy(c.candidate)}`,
  ];
  if (c.base.dataset === c.candidate.dataset) lines.push(`dataset: ${c.base.dataset}`);
  else lines.push(`WARNING: the runs used different datasets: ${c.base.dataset} vs ${c.candidate.dataset}`);

  lines.push(
    '',
    c.promptChanges.length === 0 ? 'Prompt changes: none' : `Prompt changes (${c.promptChanges.length})`,
  );
  for (const p of c.promptChanges)
    lines.push(`  ${p.path}: ${p.base ?? '(none)'} → ${p.candidate ?? '(none)'}`);

  const { paired, onlyBase, onlyCandidate, changed } = c.items;
  lines.push(
    '',
    `Items: ${paired} paired, ${onlyBase} only in base, ${onlyCandidate} only in candidate${changed ? `, ${changed} changed` : ''} (invalid rows not paired)`,
  );
  const dataset = datasetChanges(c);
  if (dataset)
    lines.push(
      `Dataset changes: ${dataset.changed} changed, ${dataset.added} added, ${dataset.removed} removed. A changed item has the same id in both runs but another input or gold (its row was edited): it is not paired, so the figures cover only items whose input and gold are the same in both runs.`,
    );
  const { outOfWindow } = c.items;
  if (outOfWindow)
    lines.push(
      `Note: ${outOfWindow} item${outOfWindow === 1 ? '' : 's'} could not be paired within the pairing window: more items than it holds waited for their partner at once (rows moved far, or many rows inserted or deleted, between the runs). Each counts as only in its run, and so does a partner of it read later.`,
    );
  lines.push(
    '',
    `Cost: base ${usd(c.cost.base)}   candidate ${usd(c.cost.candidate)}   Δ ${usdSigned(c.cost.delta)}`,
  );
  if (Object.keys(c.scores).length === 0) lines.push('', 'Scorers: none in common');
  for (const [name, s] of Object.entries(c.scores))
    lines.push(...scorerSection(name, s, name === c.primaryScorer, options));
  // Data (ids, inputs, reasons, labels) shown, never obeyed: see `visible`.
  return visible(`${lines.join('\n')}\n`);
}
