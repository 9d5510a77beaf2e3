import type { ItemResult } from '../core/model.js';
import type { CostPoint } from '../metrics/index.js';
import type { BlobStore } from '../ports.js';
import type { Report } from './report.js';

/**
 * The report files of a run (results in `reportOrder`) — the same in both shells: report.json (the contract),
 * report.txt, labeled.csv, errors.txt (wrong and failed items), correct.txt.
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
): Promise<string[]> {
  const files: Record<(typeof REPORT_FILES)[number], [string, string]> = {
    'report.json': [`${JSON.stringify(report, null, 2)}\n`, 'application/json'],
    'report.txt': [renderText(report), 'text/plain; charset=utf-8'],
    'labeled.csv': [renderLabeledCsv(results), 'text/csv; charset=utf-8'],
    'errors.txt': [renderErrors(results), 'text/plain; charset=utf-8'],
    'correct.txt': [renderCorrect(results), 'text/plain; charset=utf-8'],
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

/**
 * A CSV cell that a spreadsheet will not execute: cells starting with = + - @ tab or CR are
 * prefixed with an apostrophe (OWASP CSV injection guidance), then quoted as RFC 4180 says.
 */
export function csvCell(value: string | number | undefined): string {
  if (value === undefined) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) || safe !== safe.trim() ? `"${safe.replace(/"/g, '""')}"` : safe;
}

const LABELED_COLUMNS = [
  'idx',
  'row',
  'src',
  'tgt',
  'gold',
  'pred',
  'status',
  'failure',
  'reason',
  'cost_usd',
  'latency_ms',
  'details',
];

export function renderLabeledCsv(results: ItemResult[]): string {
  const lines = [LABELED_COLUMNS.join(',')];
  for (const r of results) {
    const stages = Object.values(r.stages);
    lines.push(
      [
        r.itemId,
        r.row,
        r.input.src,
        r.input.tgt,
        r.gold,
        r.prediction,
        r.status,
        r.failure?.kind,
        r.reason,
        round(
          stages.reduce((sum, s) => sum + s.costUsd, 0),
          8,
        ),
        Math.round(stages.reduce((sum, s) => sum + s.latencyMs, 0)),
        r.details ? JSON.stringify(r.details) : undefined,
      ]
        .map(csvCell)
        .join(','),
    );
  }
  return `\uFEFF${lines.join('\r\n')}\r\n`;
}

function block(r: ItemResult, extra: string[] = []): string {
  const lines = [`[${r.itemId}] row ${r.row}  gold=${r.gold ?? '-'}  pred=${r.prediction ?? '-'}`];
  if (r.input.src !== undefined) lines.push(`  src: ${r.input.src}`);
  if (r.input.tgt !== undefined) lines.push(`  tgt: ${r.input.tgt}`);
  if (r.reason) lines.push(`  reason: ${r.reason}`);
  return [...lines, ...extra].join('\n');
}

export function renderErrors(results: ItemResult[]): string {
  const failed = results.filter((r) => r.status === 'failed');
  const wrong = results.filter(
    (r) => r.status === 'scored' && r.gold !== undefined && r.prediction !== r.gold,
  );
  const parts = [`# Failed items (${failed.length})`, ''];
  for (const r of failed) {
    const extra = [`  failure: ${r.failure?.kind}: ${r.failure?.message}`];
    if (r.raw) extra.push(`  raw answer: ${r.raw.slice(0, 2000)}`);
    parts.push(block(r, extra), '');
  }
  parts.push(`# Wrong predictions (${wrong.length})`, '');
  for (const r of wrong) parts.push(block(r), '');
  return `${parts.join('\n')}\n`;
}

export function renderCorrect(results: ItemResult[]): string {
  const correct = results.filter(
    (r) => r.status === 'scored' && r.gold !== undefined && r.prediction === r.gold,
  );
  return `${[`# Correct predictions (${correct.length})`, '', ...correct.flatMap((r) => [block(r), ''])].join('\n')}\n`;
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

const pct = (v: unknown) => (typeof v === 'number' ? v.toFixed(3) : '-');
const usd = (v: number) => `$${v < 0.01 && v > 0 ? v.toFixed(6) : v.toFixed(4)}`;

interface GecMetricsView {
  n: number;
  accuracy: number;
  macroF1: number;
  kappa: number;
  binary: { accuracy: number; f1: number };
  perClass: Record<string, { precision: number; recall: number; f1: number; support: number }>;
  confusion: Record<string, Record<string, number>>;
  ci?: Record<string, [number, number]>;
}

export function renderText(report: Report): string {
  const m = report.metrics as unknown as GecMetricsView;
  const c = report.counts;
  const lines: string[] = [];
  if (report.simulated) lines.push('*'.repeat(78), report.notice ?? 'SIMULATED', '*'.repeat(78), '');
  lines.push(
    `Assay report — ${report.suite} (${report.task}/${report.judge}/${report.method})`,
    `run ${report.runId}   ${report.startedAt} → ${report.finishedAt}`,
    `backends: ${report.backends.join(', ')}`,
    `dataset: ${report.dataset}`,
    '',
    `items ${c.items}   scored ${c.scored}   failed ${c.failed} (invalid rows ${c.invalidRows}, errors ${c.errors})`,
  );
  const kinds = Object.entries(c.byFailure).map(([k, n]) => `${k} ${n}`);
  if (kinds.length > 0) lines.push(`failures by kind: ${kinds.join(', ')}`);
  const ci = (name: string) => (m.ci?.[name] ? `  [${pct(m.ci[name][0])}, ${pct(m.ci[name][1])}]` : '');
  lines.push(
    '',
    `Metrics (n = ${m.n}, Error rows excluded; 95% bootstrap CI)`,
    `  4-class accuracy  ${pct(m.accuracy)}${ci('accuracy')}`,
    `  macro F1          ${pct(m.macroF1)}${ci('macroF1')}`,
    `  binary accuracy   ${pct(m.binary?.accuracy)}`,
    `  binary F1         ${pct(m.binary?.f1)}${ci('binaryF1')}`,
    `  Cohen's kappa     ${pct(m.kappa)}${ci('kappa')}`,
    '',
    '  label    precision  recall     f1   support',
  );
  for (const [label, s] of Object.entries(m.perClass ?? {})) {
    lines.push(
      `  ${label.padEnd(7)} ${pct(s.precision).padStart(10)} ${pct(s.recall).padStart(7)} ${pct(s.f1).padStart(6)} ${String(s.support).padStart(9)}`,
    );
  }
  const columns = Object.keys(Object.values(m.confusion ?? {})[0] ?? {});
  if (columns.length > 0) {
    lines.push(
      '',
      `  confusion (rows gold, columns predicted)`,
      `  ${''.padEnd(7)}${columns.map((l) => l.padStart(6)).join('')}`,
    );
    for (const [gold, row] of Object.entries(m.confusion)) {
      lines.push(`  ${gold.padEnd(7)}${columns.map((l) => String(row[l] ?? 0).padStart(6)).join('')}`);
    }
  }
  lines.push(...renderMethod(report.method, (report.metrics as { method?: MethodView }).method));
  lines.push(...renderComparisonSummary(report.comparison as ComparisonView | undefined));
  const cost = report.cost;
  lines.push(
    '',
    `Cost ${usd(cost.totalUsd)}   per item ${usd(cost.perItemUsd)}   per 10K ${usd(cost.per10kUsd)}`,
    `  calls ${cost.calls} (cached ${cost.cachedCalls}, saving ${usd(cost.savedUsd ?? 0)})   tokens in ${cost.tokens.input} (cached ${cost.tokens.cached}) out ${cost.tokens.output}`,
  );
  for (const [stage, s] of Object.entries(cost.byStage)) {
    lines.push(`  ${stage.padEnd(24)} ${usd(s.usd).padStart(11)}  calls ${s.calls}`);
  }
  lines.push(
    `Latency per item: p50 ${Math.round(report.latencyMs.p50)} ms, p95 ${Math.round(report.latencyMs.p95)} ms`,
    '',
    'Prompts:',
    ...Object.entries(report.prompts).map(([path, hash]) => `  ${path}  ${hash}`),
  );
  return `${lines.join('\n')}\n`;
}

type MethodView = Record<string, unknown> & {
  accuracyVsCost?: CostPoint[];
  fusions?: Record<string, CostPoint>;
};

const words = (key: string) => key.replace(/([A-Z])/g, ' $1').toLowerCase();

/** The method's own figures (metrics.method): rates, counts by kind, accuracy against cost. */
function renderMethod(method: string, view: MethodView | undefined): string[] {
  if (!view) return [];
  const lines = ['', `Method ${method}`];
  for (const [key, value] of Object.entries(view)) {
    if (key === 'accuracyVsCost' || key === 'fusions') continue;
    if (typeof value === 'number')
      lines.push(`  ${words(key).padEnd(18)} ${Number.isInteger(value) ? value : pct(value)}`);
    else if (typeof value === 'string') lines.push(`  ${words(key).padEnd(18)} ${value}`);
    else if (value && typeof value === 'object') {
      const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) =>
        typeof v === 'object' && v !== null
          ? `${k} {${Object.entries(v)
              .map(([a, b]) => `${a}: ${b}`)
              .join(', ')}}`
          : `${k} ${v}`,
      );
      lines.push(`  ${words(key).padEnd(18)} ${entries.length > 0 ? entries.join(', ') : 'none'}`);
    }
  }
  const points = [...Object.values(view.fusions ?? {}), ...(view.accuracyVsCost ?? [])];
  if (points.length > 0) {
    lines.push(
      '',
      '  accuracy against cost',
      `  ${'policy'.padEnd(32)} ${'n'.padStart(5)} ${'acc'.padStart(6)} ${'macroF1'.padStart(8)} ${'binF1'.padStart(6)} ${'cost'.padStart(11)} ${'per 10K'.padStart(10)}`,
    );
    for (const p of points) {
      lines.push(
        `  ${p.policy.padEnd(32)} ${String(p.n).padStart(5)} ${pct(p.accuracy).padStart(6)} ${pct(p.macroF1).padStart(8)} ${pct(p.binaryF1).padStart(6)} ${usd(p.costUsd).padStart(11)} ${usd(p.per10kUsd).padStart(10)}`,
      );
    }
  }
  return lines;
}

interface ComparisonView {
  baseRunId: string;
  paired: number;
  promptChanges: { path: string; base?: string; candidate?: string }[];
  deltas: Record<string, { delta: number; ci: [number, number]; pValue: number }>;
  mcnemarPValue?: number;
  flipped: Record<string, number>;
}

/** The report's comparison with the previous run, in brief (comparison.txt has it all). */
function renderComparisonSummary(c: ComparisonView | undefined): string[] {
  if (!c) return [];
  const signed = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(3)}`;
  const lines = ['', `Compared with the previous run ${c.baseRunId} (${c.paired} items in both)`];
  for (const change of c.promptChanges) {
    lines.push(`  prompt ${change.path}: ${change.base ?? '(none)'} → ${change.candidate ?? '(none)'}`);
  }
  for (const [name, d] of Object.entries(c.deltas)) {
    lines.push(
      `  ${words(name).padEnd(18)} Δ ${signed(d.delta)}  [${signed(d.ci[0])}, ${signed(d.ci[1])}]  p ${d.pValue < 0.001 ? '<0.001' : d.pValue.toFixed(3)}`,
    );
  }
  if (c.mcnemarPValue !== undefined)
    lines.push(`  McNemar p ${c.mcnemarPValue.toFixed(3)} (correct vs wrong, paired)`);
  const flipped = Object.entries(c.flipped).map(([kind, n]) => `${kind} ${n}`);
  lines.push(`  flipped verdicts: ${flipped.join(', ')} (both reasons side by side in comparison.txt)`);
  return lines;
}
