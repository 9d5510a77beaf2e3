import {
  type ItemResult,
  isScored,
  resultCost,
  resultLatencyMs,
  type ScoreKind,
  scoreOf,
} from '../core/model.js';
import {
  binaryTargets,
  HEADLINE_METRICS,
  METRIC_NAMES,
  type MetricValue,
  type ScorerSummary,
  verdictOf,
} from '../metrics/index.js';
import type { BlobStore } from '../ports.js';
import { taskFor } from '../tasks/registry.js';
import type { AnyTaskFamily } from '../tasks/types.js';
import { interval, ms, num, usd, words } from './format.js';
import { type Report, targetReader } from './report.js';

/**
 * The report files of a run (results in `reportOrder`) — the same in both shells and for every
 * task family: report.json (the contract), report.txt, labeled.csv, errors.txt (failed, unscored
 * and wrong items), correct.txt. All render from the score model.
 */
export const REPORT_FILES = [
  'report.json',
  'report.txt',
  'labeled.csv',
  'errors.txt',
  'correct.txt',
] as const;

export async function writeReportFiles(
  store: BlobStore,
  prefix: string,
  report: Report,
  results: ItemResult[],
  suite: Parameters<AnyTaskFamily['scorers']>[0],
): Promise<string[]> {
  const view = resultView(taskFor(report), suite, results);
  const files: Record<(typeof REPORT_FILES)[number], [string, string]> = {
    'report.json': [`${JSON.stringify(report, null, 2)}\n`, 'application/json'],
    'report.txt': [renderText(report), 'text/plain; charset=utf-8'],
    'labeled.csv': [renderLabeledCsv(results, view), 'text/csv; charset=utf-8'],
    'errors.txt': [renderErrors(results, view), 'text/plain; charset=utf-8'],
    'correct.txt': [renderCorrect(results, view), 'text/plain; charset=utf-8'],
  };
  return putFiles(store, prefix, files);
}

/** Writes `name → [body, content type]` under `prefix`; returns the keys written, in order. */
export async function putFiles(
  store: BlobStore,
  prefix: string,
  files: Record<string, [body: string, contentType: string]>,
): Promise<string[]> {
  const keys: string[] = [];
  for (const [name, [body, type]] of Object.entries(files)) {
    const key = `${prefix}${name}`;
    await store.put(key, body, type);
    keys.push(key);
  }
  return keys;
}

/** What the item files need to know of a run: its scorers (kinds, verdicts, the primary one) and how to show an output. */
export interface ResultView {
  scorers: { name: string; kind: ScoreKind; verdict(result: ItemResult): boolean | undefined }[];
  primary: string;
  outputText(output: unknown): string | undefined;
}

const defaultOutputText = (output: unknown): string | undefined =>
  output === undefined ? undefined : typeof output === 'string' ? output : JSON.stringify(output);

export function resultView(
  family: AnyTaskFamily,
  suite: Parameters<AnyTaskFamily['scorers']>[0],
  results: readonly ItemResult[],
): ResultView {
  const primary = family.primaryScorer(suite);
  const scorers = Object.entries(family.scorers(suite)).map(([name, scorer]) => {
    const target = targetReader(scorer);
    const binary = scorer.kind === 'number' && binaryTargets(results.map(target));
    return {
      name,
      kind: scorer.kind,
      verdict: (result: ItemResult) => {
        const score = scoreOf(result, name, scorer.kind);
        return isScored(score)
          ? verdictOf(scorer.kind, score.value, target(result), scorer.metrics, binary)
          : false;
      },
    };
  });
  const outputText = family.outputText ?? defaultOutputText;
  return {
    scorers,
    primary,
    outputText: (output) => (output === undefined ? undefined : outputText(output)),
  };
}

/**
 * A CSV cell that a spreadsheet will not execute: cells starting with = + - @ tab or CR are
 * prefixed with an apostrophe (OWASP CSV injection guidance), then quoted as RFC 4180 says.
 */
export function csvCell(value: string | number | boolean | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  if (typeof value === 'boolean') return String(value);
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) || safe !== safe.trim() ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The input columns of a run's results, in first-seen order (invalid rows' raw records only if nothing else). */
function inputColumns(results: readonly ItemResult[]): string[] {
  const usable = results.filter((r) => r.failure?.kind !== 'invalid_row');
  const columns = new Set<string>();
  for (const r of usable.length > 0 ? usable : results)
    for (const key of Object.keys(r.input)) columns.add(key);
  return [...columns];
}

/** Why an item looks the way it does: the failure, else the primary score's explanation. */
function reasonOf(r: ItemResult, view: ResultView): string | undefined {
  if (r.failure) return r.failure.message;
  const primary = view.scorers.find((s) => s.name === view.primary)!;
  const score = scoreOf(r, primary.name, primary.kind);
  return isScored(score) ? score.explanation : score.unscored.message;
}

/**
 * One row per result: id, row, the input columns, gold, status and failure, then per scorer
 * `<scorer>` (its value, empty when unscored) and `<scorer>.by` (what decided it), the reason,
 * the output, cost, latency and the family's details.
 */
export function renderLabeledCsv(results: ItemResult[], view: ResultView): string {
  const inputs = inputColumns(results);
  const header = [
    'idx',
    'row',
    ...inputs,
    'gold',
    'status',
    'failure',
    ...view.scorers.flatMap((s) => [s.name, `${s.name}.by`]),
    'reason',
    'output',
    'cost_usd',
    'latency_ms',
    'details',
  ];
  const lines = [header.map(csvCell).join(',')];
  for (const r of results) {
    const scores = view.scorers.flatMap((s) => {
      const score = scoreOf(r, s.name, s.kind);
      return isScored(score) ? [score.value, score.decidedBy] : [undefined, score.unscored.kind];
    });
    lines.push(
      [
        r.itemId,
        r.row,
        ...inputs.map((column) => r.input[column]),
        r.gold,
        r.status,
        r.failure?.kind,
        ...scores,
        reasonOf(r, view),
        view.outputText(r.output),
        round(resultCost(r), 8),
        Math.round(resultLatencyMs(r) ?? 0),
        r.details ? JSON.stringify(r.details) : undefined,
      ]
        .map(csvCell)
        .join(','),
    );
  }
  return `\uFEFF${lines.join('\r\n')}\r\n`;
}

function block(r: ItemResult, view: ResultView, extra: string[] = []): string {
  const scores = view.scorers.map((s) => {
    const score = scoreOf(r, s.name, s.kind);
    if (!isScored(score)) return `${s.name}=(${score.unscored.kind})`;
    return `${s.name}=${score.value}${score.decidedBy ? ` (by ${score.decidedBy})` : ''}`;
  });
  const lines = [`[${r.itemId}] row ${r.row}  gold=${r.gold ?? '-'}  ${scores.join('  ')}`];
  for (const [key, value] of Object.entries(r.input)) lines.push(`  ${key}: ${value}`);
  const output = view.outputText(r.output);
  const reason = reasonOf(r, view);
  if (reason) lines.push(`  reason: ${reason}`);
  if (output !== undefined && output !== reason) lines.push(`  output: ${output.slice(0, 2000)}`);
  return [...lines, ...extra].join('\n');
}

/** Failed items (no output), items with an unscored scorer, then items the primary scorer says are wrong. */
export function renderErrors(results: ItemResult[], view: ResultView): string {
  const primary = view.scorers.find((s) => s.name === view.primary)!;
  const failed = results.filter((r) => r.status === 'failed');
  const scored = results.filter((r) => r.status === 'scored');
  const unscored = scored.filter((r) => view.scorers.some((s) => !isScored(scoreOf(r, s.name, s.kind))));
  const wrong = scored.filter((r) => primary.verdict(r) === false && !unscored.includes(r));
  const parts = [`# Failed items (${failed.length})`, ''];
  for (const r of failed) {
    const extra = [`  failure: ${r.failure?.kind}: ${r.failure?.message}`];
    if (r.raw) extra.push(`  raw answer: ${r.raw.slice(0, 2000)}`);
    parts.push(block(r, view, extra), '');
  }
  parts.push(`# Unscored by a scorer (${unscored.length})`, '');
  for (const r of unscored) {
    const extra = view.scorers.flatMap((s) => {
      const score = scoreOf(r, s.name, s.kind);
      return isScored(score) ? [] : [`  ${s.name}: ${score.unscored.kind}: ${score.unscored.message}`];
    });
    parts.push(block(r, view, extra), '');
  }
  parts.push(`# Wrong by ${primary.name} (${wrong.length})`, '');
  for (const r of wrong) parts.push(block(r, view), '');
  return `${parts.join('\n')}\n`;
}

/** Items the primary scorer says are right. */
export function renderCorrect(results: ItemResult[], view: ResultView): string {
  const primary = view.scorers.find((s) => s.name === view.primary)!;
  const correct = results.filter((r) => r.status === 'scored' && primary.verdict(r) === true);
  return `${[`# Right by ${primary.name} (${correct.length})`, '', ...correct.flatMap((r) => [block(r, view), ''])].join('\n')}\n`;
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** One metric line: name, value, CI, n. */
function metricLine(name: string, m: MetricValue): string {
  const ci = interval(m.ci);
  return `    ${(METRIC_NAMES[name] ?? words(name)).padEnd(18)} ${num(m.value).padStart(6)}  ${ci.padEnd(17)} n ${m.n}`;
}

/** A scorer's section of report.txt, by kind. */
export function renderScorer(name: string, s: ScorerSummary, primary: boolean): string[] {
  const unscored = Object.entries(s.unscored).map(([kind, n]) => `${kind} ${n}`);
  const lines = [
    '',
    `  ${name} (${s.kind}${primary ? ', primary' : ''}): ${s.n} scored${unscored.length > 0 ? `, unscored: ${unscored.join(', ')}` : ''}`,
  ];
  for (const [metric, m] of Object.entries(s.metrics)) lines.push(metricLine(metric, m));
  const tables = s.tables as
    | {
        perClass?: Record<string, { precision: number; recall: number; f1: number; support: number }>;
        confusion?: Record<string, Record<string, number>>;
        distribution?: Record<string, number>;
      }
    | undefined;
  if (tables?.perClass && Object.keys(tables.perClass).length > 0) {
    lines.push('', '    label    precision  recall     f1   support');
    for (const [label, c] of Object.entries(tables.perClass)) {
      lines.push(
        `    ${label.padEnd(7)} ${num(c.precision).padStart(10)} ${num(c.recall).padStart(7)} ${num(c.f1).padStart(6)} ${String(c.support).padStart(9)}`,
      );
    }
  }
  const confusion = tables?.confusion ?? {};
  const columns = Object.keys(Object.values(confusion)[0] ?? {});
  if (columns.length > 0) {
    const width = Math.max(6, ...columns.map((c) => c.length + 1));
    lines.push(
      '',
      '    confusion (rows gold, columns predicted)',
      `    ${''.padEnd(8)}${columns.map((l) => l.padStart(width)).join('')}`,
    );
    for (const [gold, row] of Object.entries(confusion)) {
      lines.push(`    ${gold.padEnd(8)}${columns.map((l) => String(row[l] ?? 0).padStart(width)).join('')}`);
    }
  }
  if (tables?.distribution && !tables.perClass) {
    const values = Object.entries(tables.distribution).map(([v, n]) => `${v} ${n}`);
    lines.push(`    values: ${values.length > 0 ? values.join(', ') : 'none'}`);
  }
  return lines;
}

/** The headline figures of a scorer on one line (CLI summary, leaderboards). */
export function headline(name: string, s: ScorerSummary): string {
  const shown = HEADLINE_METRICS[s.kind]
    .filter((metric) => s.metrics[metric] !== undefined)
    .map((metric) => `${METRIC_NAMES[metric] ?? metric} ${num(s.metrics[metric]!.value)}`);
  const unscored = Object.values(s.unscored).reduce((a, b) => a + (b ?? 0), 0);
  return `${name}: ${shown.length > 0 ? shown.join('  ') : 'no metrics'}  (n ${s.n}${unscored > 0 ? `, unscored ${unscored}` : ''})`;
}

export function renderText(report: Report): string {
  const c = report.counts;
  const lines: string[] = [];
  if (report.simulated) lines.push('*'.repeat(78), report.notice ?? 'SIMULATED', '*'.repeat(78), '');
  const config = Object.values(report.config);
  lines.push(
    `Assay report — ${report.suite} (${[report.task, ...config].join('/')})`,
    `run ${report.runId}   ${report.startedAt} → ${report.finishedAt}`,
    `backends: ${report.backends.length > 0 ? report.backends.join(', ') : '(none: the dataset gives the outputs)'}`,
    `dataset: ${report.dataset}`,
    '',
    `items ${c.items}   scored ${c.scored}   failed ${c.failed} (invalid rows ${c.invalidRows}, errors ${c.errors})`,
  );
  const kinds = Object.entries(c.byFailure).map(([k, n]) => `${k} ${n}`);
  if (kinds.length > 0) lines.push(`failures by kind: ${kinds.join(', ')}`);
  lines.push('', 'Scores (unscored items skipped and counted; 95% bootstrap CI)');
  for (const [name, summary] of Object.entries(report.scores)) {
    lines.push(...renderScorer(name, summary, name === report.primaryScorer));
  }
  lines.push(...(taskFor(report).reportText?.(report) ?? []));
  lines.push(...renderComparisonSummary(report.comparison as ComparisonView | undefined));
  const cost = report.cost;
  lines.push(
    '',
    `Cost ${usd(cost.totalUsd)}   per item ${usd(cost.perItemUsd)}   per 10K ${usd(cost.per10kUsd)}`,
    `  calls ${cost.calls} (cached ${cost.cachedCalls}, saving ${usd(cost.savedUsd ?? 0)})   tokens in ${cost.tokens.input} (cached ${cost.tokens.cached}) out ${cost.tokens.output}`,
  );
  if (cost.batch) {
    lines.push(
      `  batch lane: ${cost.batch.calls} calls at ${Math.round(cost.batch.discount * 100)}% off, saving ${usd(cost.batch.savedUsd)} against the synchronous price ${usd(cost.totalUsd + cost.batch.savedUsd)}`,
    );
  }
  for (const [stage, s] of Object.entries(cost.byStage)) {
    lines.push(`  ${stage.padEnd(24)} ${usd(s.usd).padStart(11)}  calls ${s.calls}`);
  }
  lines.push(
    `Latency per item: p50 ${ms(report.latencyMs.p50)}, p95 ${ms(report.latencyMs.p95)}`,
    '',
    'Prompts:',
    ...Object.entries(report.prompts).map(([path, hash]) => `  ${path}  ${hash}`),
  );
  return `${lines.join('\n')}\n`;
}

interface ComparisonView {
  baseRunId: string;
  paired: number;
  promptChanges: { path: string; base?: string; candidate?: string }[];
  scores: Record<
    string,
    {
      deltas: Record<string, { delta: number; ci: [number, number]; pValue: number }>;
      mcnemarPValue?: number;
      flipped?: Record<string, number>;
    }
  >;
}

/** The report's comparison with the previous run, in brief (comparison.txt has it all). */
function renderComparisonSummary(c: ComparisonView | undefined): string[] {
  if (!c) return [];
  const signed = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(3)}`;
  const lines = ['', `Compared with the previous run ${c.baseRunId} (${c.paired} items in both)`];
  for (const change of c.promptChanges) {
    lines.push(`  prompt ${change.path}: ${change.base ?? '(none)'} → ${change.candidate ?? '(none)'}`);
  }
  for (const [scorer, s] of Object.entries(c.scores)) {
    for (const [name, d] of Object.entries(s.deltas)) {
      lines.push(
        `  ${`${scorer} ${METRIC_NAMES[name] ?? words(name)}`.padEnd(26)} Δ ${signed(d.delta)}  [${signed(d.ci[0])}, ${signed(d.ci[1])}]  p ${d.pValue < 0.001 ? '<0.001' : d.pValue.toFixed(3)}`,
      );
    }
    if (s.mcnemarPValue !== undefined)
      lines.push(`  ${scorer} McNemar p ${s.mcnemarPValue.toFixed(3)} (paired right/wrong)`);
    if (s.flipped) {
      const flipped = Object.entries(s.flipped).map(([kind, n]) => `${kind} ${n}`);
      lines.push(`  ${scorer} flipped: ${flipped.join(', ')} (both sides in comparison.txt)`);
    }
  }
  return lines;
}
