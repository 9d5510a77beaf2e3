import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { severalAnnotators } from '../family/dataset-row.js';
import type { AnyTaskFamily } from '../family/types.js';
import {
  humanCeilingSentence,
  interval,
  ms,
  num,
  pValue,
  usd,
  visible,
  visibleLine,
  withInterval,
} from '../lib/format.js';
import { verdictOf } from '../lib/metrics/index.js';
import { metricDisplayName } from '../model/metrics.js';
import { type ItemResult, isScored, resultCost, resultLatencyMs, scoreOf } from '../model/model.js';
import {
  HEADLINE_METRICS,
  type HumanAgreement,
  type LengthBias,
  type MetricValue,
  type Report,
  type ScorerReliability,
  type ScorerSummary,
  sliceScored,
} from '../model/report.js';
import { type ResultSource, sourceOf } from '../model/report-order.js';
import { discard } from '../model/streams.js';
import type { BlobStore } from '../ports/ports.js';
import { taskFor } from '../registry/registry.js';
import { csvCell } from './csv-cell.js';
import { ChunkFile, ITEM_TABLE_ROWS, ItemColumns, type TableRows } from './html/columns.js';
import { renderPageChunks } from './html/render.js';
import { injectionLines } from './injection-tally.js';
import { panelLines, selfPreferenceLines } from './judges-text.js';
import { FileLayout } from './layout.js';
import { ppiLines } from './ppi-text.js';
import { targetReader } from './report.js';
import type { ResultView } from './result-view.js';
import { isPriced, UNPRICED_HINT, unpricedLabel } from './unpriced.js';

export { FileLayout } from './layout.js';
/** The CSV cell labeled.csv writes (csv-cell.ts): where readers of this module find it. */
export { csvCell };

/**
 * The report files of a run (results in `reportOrder`) — the same in both shells and for every
 * task family: report.json (the contract), report.txt, report.html (the figures, charts and the
 * run's items, up to `ITEM_TABLE_ROWS` of them (html/columns.ts), in one self-contained page), labeled.csv,
 * errors.txt (failed, unscored and wrong items), correct.txt. All render from the score model.
 */
export const REPORT_FILES = [
  'report.json',
  'report.txt',
  'labeled.csv',
  'errors.txt',
  'correct.txt',
  'report.html',
] as const;

/**
 * Writes the report files. The item files stream: `results` (in report order) is read once,
 * labeled.csv goes out line by line, and the sections of errors.txt and correct.txt are spilled
 * to temporary files until their counts (their headings) are known. `layout` is what those files
 * need to know of the whole run before their first line, gathered while the report was built.
 * report.html's item table takes the first `tableRows` results (default `ITEM_TABLE_ROWS`).
 */
export async function writeReportFiles(
  store: BlobStore,
  prefix: string,
  report: Report,
  results: ResultSource | readonly ItemResult[],
  suite: Parameters<AnyTaskFamily['scorers']>[0],
  layout?: FileLayout,
  { tableRows = ITEM_TABLE_ROWS }: { tableRows?: number } = {},
): Promise<string[]> {
  const family = taskFor(report);
  const source = typeof results === 'function' ? results : sourceOf(results);
  const known = layout ?? (await FileLayout.of(family, suite, source));
  const view = resultView(family, suite, known);
  const keys = await putFiles(store, prefix, {
    'report.json': [`${JSON.stringify(report, null, 2)}\n`, 'application/json'],
    'report.txt': [renderText(report), 'text/plain; charset=utf-8'],
  });
  // report.html's item table is gathered on labeled.csv's pass and written last.
  const files = await ItemFiles.open(family, suite, view, known, report.counts.items, {
    table: { cap: tableRows },
  });
  try {
    const { sections, primary } = files;
    const header = `\uFEFF${csvHeader(known.inputColumns(), view, known.keptColumns())}\r\n`;
    const csv = `${prefix}labeled.csv`;
    await store.putStream(csv, files.labeled(header, source()), 'text/csv; charset=utf-8');
    const errors = `${prefix}errors.txt`;
    await store.putStream(
      errors,
      (async function* () {
        yield sectionHeading('failed', sections.failed.count, primary);
        yield* sections.failed.read();
        yield sectionHeading('unscored', sections.unscored.count, primary);
        yield* sections.unscored.read();
        yield sectionHeading('wrong', sections.wrong.count, primary);
        yield* sections.wrong.read();
      })(),
      'text/plain; charset=utf-8',
    );
    const correct = `${prefix}correct.txt`;
    await store.putStream(
      correct,
      (async function* () {
        yield sectionHeading('correct', sections.correct.count, primary);
        yield* sections.correct.read();
      })(),
      'text/plain; charset=utf-8',
    );
    const html = `${prefix}report.html`;
    // Written in pieces: the item table of a million items is never one string.
    const page = renderPageChunks(pageTitle(report), {
      kind: 'run',
      report: report as unknown as Record<string, unknown>,
      items: files.items.table(),
    });
    await store.putStream(
      html,
      (async function* () {
        yield* page;
      })(),
      'text/html; charset=utf-8',
    );
    return [...keys, csv, errors, correct, html];
  } finally {
    await files.close();
  }
}

/** The sections of errors.txt (failed, unscored, wrong) and correct.txt. */
export type SectionName = 'failed' | 'unscored' | 'wrong' | 'correct';

/** A section's heading, with its count of items. */
export function sectionHeading(section: SectionName, count: number, primary: string): string {
  switch (section) {
    case 'failed':
      return `# Failed items (${count})\n\n`;
    case 'unscored':
      return `# Unscored by a scorer (${count})\n\n`;
    case 'wrong':
      return `# Wrong by ${primary} (${count})\n\n`;
    case 'correct':
      return `# Right by ${primary} (${count})\n\n`;
  }
}

/** The title of a run's page. */
export const pageTitle = (report: Pick<Report, 'suite' | 'runId'>) =>
  `Assay report — ${report.suite} (${report.runId})`;

/**
 * The item files of a stretch of a run's results (all of them, or a part), gathered one result
 * at a time: each result's labeled.csv row (given back to the caller), its block in a section of
 * errors.txt or correct.txt (spilled to temporary files until the sections' counts are known),
 * and its row of report.html's item table (full pieces of the columns in a temporary file) while
 * the table is under its cap (`table`: see `TableRows`).
 */
export class ItemFiles {
  readonly items: ItemColumns;
  /** Results added through {@link labeled}. */
  added = 0;
  readonly sections: Record<SectionName, Spill>;
  /** The primary scorer's name. */
  readonly primary: string;
  private readonly verdict: (r: ItemResult) => boolean | undefined;
  private readonly table: ChunkFile;

  private constructor(
    private readonly dir: string,
    family: AnyTaskFamily,
    suite: Parameters<AnyTaskFamily['scorers']>[0],
    private readonly view: ResultView,
    private readonly layout: FileLayout,
    runItems: number,
    /** A part of a run: the run's input columns, every table column made at once (see ItemColumns). */
    part: boolean,
    tableRows: TableRows,
  ) {
    this.table = new ChunkFile(join(dir, 'items.bin'));
    this.sections = {
      failed: new Spill(join(dir, 'failed.txt')),
      unscored: new Spill(join(dir, 'unscored.txt')),
      wrong: new Spill(join(dir, 'wrong.txt')),
      correct: new Spill(join(dir, 'correct.txt')),
    };
    this.items = new ItemColumns(
      family,
      suite,
      view,
      runItems,
      (name) => layout.binary(name),
      this.table,
      part ? layout.allInputColumns() : undefined,
      tableRows,
    );
    const primary = view.scorers.find((s) => s.name === view.primary)!;
    this.primary = primary.name;
    this.verdict = primary.verdict;
  }

  /** Files gathered in a temporary folder of their own (`close` removes it). */
  static async open(
    family: AnyTaskFamily,
    suite: Parameters<AnyTaskFamily['scorers']>[0],
    view: ResultView,
    layout: FileLayout,
    runItems: number,
    { part = false, table = {} }: { part?: boolean; table?: TableRows } = {},
  ): Promise<ItemFiles> {
    const dir = await mkdtemp(join(tmpdir(), 'assay-report-files-'));
    return new ItemFiles(dir, family, suite, view, layout, runItems, part, table);
  }

  /** Gathers a result (in report order); gives back its labeled.csv row, line end included. */
  async add(r: ItemResult): Promise<string> {
    const { view, sections } = this;
    this.items.add(r);
    if (r.status === 'failed') {
      const extra = [`  failure: ${r.failure?.kind}: ${r.failure?.message}`];
      if (r.raw) extra.push(`  raw answer: ${r.raw.slice(0, 2000)}`);
      await sections.failed.add(`${block(r, view, extra)}\n\n`);
    } else if (r.status === 'scored') {
      const verdict = this.verdict(r);
      const unscored = view.scorers.flatMap((s) => {
        const score = scoreOf(r, s.name, s.kind);
        return isScored(score) ? [] : [`  ${s.name}: ${score.unscored.kind}: ${score.unscored.message}`];
      });
      if (unscored.length > 0) await sections.unscored.add(`${block(r, view, unscored)}\n\n`);
      else if (verdict === false) await sections.wrong.add(`${block(r, view)}\n\n`);
      if (verdict === true) await sections.correct.add(`${block(r, view)}\n\n`);
    }
    return `${csvRow(r, this.layout.inputColumns(), view, this.layout.keptColumns())}\r\n`;
  }

  /** Ends the sections' files (once every result is in): they can be read back. */
  async closeSections(): Promise<void> {
    for (const section of Object.values(this.sections)) await section.close();
  }

  /**
   * labeled.csv's text, a chunk at a time: `head`, then each result's row (each result added as
   * {@link add} does); the sections are closed once the last row is in. `added` counts them.
   */
  async *labeled(head: string, results: AsyncIterable<ItemResult>): AsyncGenerator<string> {
    let chunk = head;
    for await (const r of results) {
      this.added += 1;
      chunk += await this.add(r);
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk;
        chunk = '';
      }
    }
    yield chunk;
    await this.closeSections();
  }

  /** Removes the temporary files (a section left open by a failure is closed first: see `discard`). */
  async close(): Promise<void> {
    this.table.close();
    await Promise.all(Object.values(this.sections).map((section) => section.discard()));
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Characters gathered before a chunk of a streamed file goes out. */
export const CHUNK_CHARS = 1 << 20;

/** A temporary file written in chunks (with back-pressure) and read back as a stream. */
export class Spill {
  count = 0;
  private pending = '';
  private readonly file: WriteStream;
  private readonly failed: Promise<never>;

  constructor(private readonly path: string) {
    this.file = createWriteStream(path);
    this.failed = new Promise<never>((_, reject) => this.file.once('error', reject));
    this.failed.catch(() => undefined);
  }

  async add(text: string): Promise<void> {
    this.count += 1;
    this.pending += text;
    if (this.pending.length >= CHUNK_CHARS) await this.flush();
  }

  private async flush(): Promise<void> {
    const text = this.pending;
    this.pending = '';
    if (!this.file.write(text)) await Promise.race([once(this.file, 'drain'), this.failed]);
  }

  async close(): Promise<void> {
    await this.flush();
    this.file.end();
    await Promise.race([once(this.file, 'finish'), this.failed]);
  }

  read(): AsyncIterable<Buffer> {
    return createReadStream(this.path);
  }

  discard(): Promise<void> {
    return discard(this.file);
  }
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

const defaultOutputText = (output: unknown): string | undefined =>
  output === undefined ? undefined : typeof output === 'string' ? output : JSON.stringify(output);

export function resultView(
  family: AnyTaskFamily,
  suite: Parameters<AnyTaskFamily['scorers']>[0],
  results: readonly ItemResult[] | FileLayout,
): ResultView {
  const layout = results instanceof FileLayout ? results : new FileLayout(family, suite);
  if (!(results instanceof FileLayout)) for (const result of results) layout.add(result);
  const primary = family.primaryScorer(suite);
  const scorers = Object.entries(family.scorers(suite)).map(([name, scorer]) => {
    const target = targetReader(scorer);
    const binary = layout.binary(name);
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
  const repeats = suite.run?.repeats ?? 1;
  return {
    scorers,
    primary,
    outputText: (output) => (output === undefined ? undefined : outputText(output)),
    ...(repeats > 1 ? { repeats } : {}),
    ...(severalAnnotators(suite.dataset.columns) ? { annotators: true } : {}),
  };
}

/** Why an item looks the way it does: the failure, else the primary score's explanation. */
function reasonOf(r: ItemResult, view: ResultView): string | undefined {
  if (r.failure) return r.failure.message;
  const primary = view.scorers.find((s) => s.name === view.primary)!;
  const score = scoreOf(r, primary.name, primary.kind);
  return isScored(score) ? score.explanation : score.unscored.message;
}

/**
 * labeled.csv: one row per result: id, row, the input columns, gold, status and failure, then
 * per scorer `<scorer>` (its value, empty when unscored) and `<scorer>.by` (what decided it),
 * and with `run.repeats` k > 1 each repeat's value (`<scorer>.r1` … `<scorer>.rk`), then
 * the reason, the output, cost, latency and the family's details; last, each of the dataset's
 * other columns the results keep, as `column:<name>` (a prefix no other header has).
 */
export function renderLabeledCsv(results: ItemResult[], view: ResultView): string {
  const layout = new FileLayout();
  for (const r of results) layout.add(r);
  const inputs = layout.inputColumns();
  const kept = layout.keptColumns();
  const lines = [csvHeader(inputs, view, kept), ...results.map((r) => csvRow(r, inputs, view, kept))];
  return `\uFEFF${lines.join('\r\n')}\r\n`;
}

export function csvHeader(inputs: readonly string[], view: ResultView, kept: readonly string[] = []): string {
  return [
    'idx',
    'row',
    ...inputs,
    'gold',
    ...(view.annotators ? ['annotators'] : []),
    'status',
    'failure',
    ...view.scorers.flatMap((s) => [
      s.name,
      `${s.name}.by`,
      ...repeatColumns(view).map((r) => `${s.name}.${r}`),
    ]),
    'reason',
    'output',
    'cost_usd',
    'latency_ms',
    'details',
    ...kept.map((column) => `${KEPT_PREFIX}${column}`),
  ]
    .map(csvCell)
    .join(',');
}

/** What labeled.csv puts before the name of a dataset column a result keeps. */
const KEPT_PREFIX = 'column:';

function csvRow(
  r: ItemResult,
  inputs: readonly string[],
  view: ResultView,
  kept: readonly string[] = [],
): string {
  const scores = view.scorers.flatMap((s) => {
    const score = scoreOf(r, s.name, s.kind);
    const repeats = repeatColumns(view).map((_, i) => score.repeats?.[i] ?? undefined);
    return isScored(score)
      ? [score.value, score.decidedBy, ...repeats]
      : [undefined, score.unscored.kind, ...repeats];
  });
  return [
    r.itemId,
    r.row,
    ...inputs.map((column) => r.input[column]),
    r.gold,
    // The annotators' labels in order, as JSON (a label may hold any character).
    ...(view.annotators ? [r.annotations ? JSON.stringify(r.annotations) : undefined] : []),
    r.status,
    r.failure?.kind,
    ...scores,
    reasonOf(r, view),
    view.outputText(r.output),
    round(resultCost(r), 8),
    Math.round(resultLatencyMs(r) ?? 0),
    r.details ? JSON.stringify(r.details) : undefined,
    ...kept.map((column) => r.columns?.[column]),
  ]
    .map(csvCell)
    .join(',');
}

/** `r1` … `rk` for a run with repeats; none otherwise. */
function repeatColumns(view: ResultView): string[] {
  const k = view.repeats ?? 1;
  return k > 1 ? Array.from({ length: k }, (_, i) => `r${i + 1}`) : [];
}

function block(r: ItemResult, view: ResultView, extra: string[] = []): string {
  const scores = view.scorers.map((s) => {
    const score = scoreOf(r, s.name, s.kind);
    if (!isScored(score)) return `${s.name}=(${score.unscored.kind})`;
    return `${s.name}=${score.value}${score.decidedBy ? ` (by ${score.decidedBy})` : ''}`;
  });
  const lines = [
    `[${visibleLine(r.itemId)}] row ${r.row}  gold=${visibleLine(String(r.gold ?? '-'))}  ${scores.join('  ')}`,
  ];
  for (const [key, value] of Object.entries(r.input)) lines.push(`  ${key}: ${value}`);
  const output = view.outputText(r.output);
  const reason = reasonOf(r, view);
  if (reason) lines.push(`  reason: ${reason}`);
  if (output !== undefined && output !== reason) lines.push(`  output: ${output.slice(0, 2000)}`);
  // Data (inputs, outputs, failure messages) shown, never obeyed: see `visible`.
  return visible([...lines, ...extra].join('\n'));
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** How people read a metric: its own name when it has one (`F1 of helpful`), else by its key. */
export function metricName(key: string, m: MetricValue): string {
  return m.name ?? metricDisplayName(key);
}

/** How a report's intervals are found, in its headings. */
const INTERVALS = "95% CI: Wilson's, continuity-corrected, for a proportion; the bootstrap for the rest";

/** One metric line: name, value, CI, n; the reason when there is no value or no interval. */
function metricLine(name: string, m: MetricValue): string {
  const ci = interval(m.ci);
  const line = `    ${metricName(name, m).padEnd(18)} ${num(m.value).padStart(6)}  ${ci.padEnd(17)} n ${m.n}`;
  return m.reason && !m.ci ? `${line}  (${m.reason})` : line;
}

/** The length bias of a scorer: Spearman's ρ of output length against score, overall and by gold class. */
function lengthBiasLine(bias: LengthBias): string {
  const byGold = Object.entries(bias.byGold).map(([gold, c]) => `${gold} ${num(c.spearman)} (n ${c.n})`);
  return `    ${'length bias ρ'.padEnd(18)} ${num(bias.spearman).padStart(6)}  ${''.padEnd(17)} n ${bias.n}${byGold.length > 0 ? `   by gold: ${byGold.join(', ')}` : ''}`;
}

/** A scorer's section of report.txt, by kind. */
export function renderScorer(name: string, s: ScorerSummary, primary: boolean): string[] {
  const unscored = Object.entries(s.unscored).map(([kind, n]) => `${kind} ${n}`);
  const lines = [
    '',
    `  ${name} (${s.kind}${primary ? ', primary' : ''}): ${s.n} scored${unscored.length > 0 ? `, unscored: ${unscored.join(', ')}` : ''}`,
  ];
  for (const [metric, m] of Object.entries(s.metrics)) lines.push(metricLine(metric, m));
  if (s.bias?.length) lines.push(lengthBiasLine(s.bias.length));
  if (s.bias?.selfPreference) lines.push(...selfPreferenceLines(s.bias.selfPreference));
  if (s.reliability) lines.push(...reliabilityLines(s.reliability, '    '));
  if (s.humanAgreement) lines.push(...humanAgreementLines(s.humanAgreement, '    '));
  if (s.ppi) lines.push(...ppiLines(s.ppi, '    '));
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

/**
 * How stable a scorer's values were across repeats: the flip rate, ties, Krippendorff's alpha
 * with its CI (and the within-item SD of numbers), then each headline metric's noise floor.
 */
export function reliabilityLines(r: ScorerReliability, indent: string): string[] {
  const sd = r.withinItemSd === undefined ? '' : `  within-item SD ${num(r.withinItemSd)}`;
  const floors = Object.entries(r.noiseFloor).map(
    ([metric, floor]) => `${metricDisplayName(metric)} ±${num(floor)}`,
  );
  return [
    `${indent}repeats ${r.repeats} (${r.n} items with two or more values): flip rate ${num(r.flipRate)}  ties ${r.ties}  Krippendorff's alpha ${withInterval(r.alpha)} (${r.alpha.level})${sd}`,
    `${indent}noise floor (SD across single-repeat runs): ${floors.length > 0 ? floors.join('  ') : 'none'}`,
    ...(r.passes ? [passRepeatsLine(r.passes, indent)] : []),
  ];
}

/** A pass scorer's figures across repeats: per-item pass rate, pass^k and pass@k, with their CIs and n. */
function passRepeatsLine(p: NonNullable<ScorerReliability['passes']>, indent: string): string {
  const short =
    p.short > 0
      ? `; ${p.short} item${p.short === 1 ? '' : 's'} with fewer than ${p.k} repeat values left out`
      : '';
  return `${indent}across repeats: per-item pass rate ${withInterval(p.passRate)} (n ${p.passRate.n})  pass^${p.k} ${withInterval(p.passAllK)} (n ${p.passAllK.n})  pass@${p.k} ${withInterval(p.passAnyK)} (n ${p.passAnyK.n})${short}`;
}

/**
 * report.txt's Slices: per slice column a table of its values, each with its items, the items
 * its metrics are over (scored) and the primary scorer's headline metrics (value and 95% CI).
 */
export function renderSlices(report: Pick<Report, 'slices' | 'scores' | 'primaryScorer'>): string[] {
  if (!report.slices) return [];
  const kind = report.scores[report.primaryScorer]?.kind;
  const lines = ['', `Slices (${report.primaryScorer}, per value of each column; ${INTERVALS})`];
  for (const [column, values] of Object.entries(report.slices)) {
    const metrics = (kind ? HEADLINE_METRICS[kind] : []).filter((metric) =>
      Object.values(values).some((v) => v.metrics[metric] !== undefined),
    );
    const width = Math.min(40, Math.max(5, ...Object.keys(values).map((value) => [...value].length)));
    const cell = (text: string) => text.padEnd(28);
    const named = (metric: string) => {
      const sample = Object.values(values).find((v) => v.metrics[metric])?.metrics[metric];
      return sample ? metricName(metric, sample) : metric;
    };
    lines.push(
      '',
      `  ${column}`,
      `    ${'value'.padEnd(width)}  ${'items'.padStart(6)}  ${'scored'.padStart(6)}  ${metrics.map((metric) => cell(named(metric))).join('')}`.trimEnd(),
    );
    for (const [value, slice] of Object.entries(values)) {
      const shown = [...value].length > width ? `${[...value].slice(0, width - 1).join('')}…` : value;
      const figures = metrics.map((metric) => {
        const m = slice.metrics[metric];
        return cell(m ? `${num(m.value)} ${interval(m.ci)}`.trimEnd() : '');
      });
      const scored = sliceScored(slice);
      lines.push(
        `    ${shown.padEnd(width)}  ${String(slice.n).padStart(6)}  ${(scored === undefined ? '' : String(scored)).padStart(6)}  ${figures.join('')}`.trimEnd(),
      );
      if (slice.note) lines.push(`    ${''.padEnd(width)}  (${slice.note})`);
    }
  }
  return lines;
}

/**
 * The human ceiling of a scorer: how far the annotators agree with each other (alpha and the
 * pairwise agreement) and with the judge (its agreement, its alpha against them, a number
 * scorer's correlation), then one sentence comparing the two figures that measure the same thing.
 */
export function humanAgreementLines(h: HumanAgreement, indent: string): string[] {
  const verdict =
    h.judgeVerdict === 'threshold'
      ? ` (the judge's value ≥ ${h.threshold} as 1, else 0, against 0/1 labels)`
      : '';
  const judge = [
    `judge agreement ${withInterval(h.judgeAgreement)} (n ${h.judgeAgreement.n})`,
    ...(h.judgeAlpha ? [`judge alpha ${withInterval(h.judgeAlpha)} (n ${h.judgeAlpha.n})`] : []),
    ...(h.judgeCorrelation
      ? [`judge correlation (Pearson r) ${withInterval(h.judgeCorrelation)} (n ${h.judgeCorrelation.n})`]
      : []),
  ];
  return [
    `${indent}human agreement (${h.annotators} annotators, ${h.items} items): Krippendorff's alpha ${withInterval(h.alpha)} (${h.level}, n ${h.alpha.n})  pairwise agreement ${withInterval(h.pairwiseAgreement)} (n ${h.pairwiseAgreement.n})  ${judge.join('  ')}${verdict}`,
    `${indent}${humanCeilingSentence(h)}`,
  ];
}

/**
 * The headline figures of a scorer on one line (CLI summary, leaderboards). Its n is the n the
 * figures shown ran over, from each metric's own `n` (the items with gold for agreement figures,
 * which can be fewer than the items scored): the n most of them share, a figure over other items
 * named with its own (`pass rate on 2000`), and the items scored beside it when none ran over all.
 */
export function headline(name: string, s: ScorerSummary): string {
  const metrics = HEADLINE_METRICS[s.kind]
    .filter((metric) => s.metrics[metric] !== undefined)
    .map((metric) => ({ metric, m: s.metrics[metric]! }));
  const shown = metrics.map(({ metric, m }) => `${metricName(metric, m)} ${num(m.value)}`);
  const n = sharedN(metrics.map(({ m }) => m.n)) ?? s.n;
  const others = metrics
    .filter(({ m }) => m.n !== n)
    .map(({ metric, m }) => `, ${metricName(metric, m)} on ${m.n}`);
  const scored = n < s.n && !metrics.some(({ m }) => m.n === s.n) ? ` of ${s.n} scored` : '';
  // Items a check does not apply to are not a shortfall: said apart.
  const notApplicable = s.unscored.not_applicable ?? 0;
  const unscored = Object.values(s.unscored).reduce((a, b) => a + (b ?? 0), 0) - notApplicable;
  const gold = s.ppi && s.ppi.nLabelled !== n ? `, gold on ${s.ppi.nLabelled}` : '';
  return `${name}: ${shown.length > 0 ? shown.join('  ') : 'no metrics'}  (n ${n}${scored}${others.join('')}${gold}${unscored > 0 ? `, unscored ${unscored}` : ''}${notApplicable > 0 ? `, not applicable ${notApplicable}` : ''})`;
}

/** The n most of `ns` share (the smallest of those tied); undefined when there is none. */
function sharedN(ns: readonly number[]): number | undefined {
  const counts = new Map<number, number>();
  for (const n of ns) counts.set(n, (counts.get(n) ?? 0) + 1);
  let best: number | undefined;
  for (const [n, count] of counts) {
    const bestCount = best === undefined ? 0 : counts.get(best)!;
    if (count > bestCount || (count === bestCount && n < best!)) best = n;
  }
  return best;
}

/** What a report of an incomplete run says first (report.txt, the terminal); undefined when complete. */
export function incompleteNotice(
  report: Pick<Report, 'status' | 'missingItems' | 'counts'>,
): string | undefined {
  if (report.status !== 'incomplete') return undefined;
  const present = report.counts.items;
  const missing =
    report.missingItems === null
      ? 'the dataset was not read to its end'
      : `${report.missingItems} of ${present + report.missingItems} items have no result`;
  return `INCOMPLETE: ${missing} (the run was stopped before it finished); the figures cover the ${present} items present. Run it again to resume it.`;
}

/** The banner a simulated run's text files (report.txt, comparison.txt) open with. */
export function simulatedBanner(notice = 'SIMULATED'): string[] {
  return ['*'.repeat(78), notice, '*'.repeat(78), ''];
}

/** A run's items in one line: scored, failed, and of the failed the invalid rows and the errors. */
export function countsLine(c: Report['counts']): string {
  return `items ${c.items}   scored ${c.scored}   failed ${c.failed} (invalid rows ${c.invalidRows}, errors ${c.errors})`;
}

/** The failed items by kind (`provider 3, parse 1`); undefined when none failed. */
export function failureKinds(c: Pick<Report['counts'], 'byFailure'>): string | undefined {
  const kinds = Object.entries(c.byFailure).map(([k, n]) => `${k} ${n}`);
  return kinds.length > 0 ? kinds.join(', ') : undefined;
}

/**
 * The cost in one line (the terminal, the CI summaries): per 10K items at list price (what the
 * evaluation costs, cached answers priced as if called) and, when the LLM cache answered some
 * calls, what this run paid.
 */
export function costLine(cost: Report['cost']): string {
  if (!isPriced(cost)) {
    // Some calls had no price: a dollar figure alone would read as the whole cost.
    if (cost.totalUsd === 0) return `cost ${unpricedLabel(cost)}`;
    return `cost ${unpricedLabel(cost)}; the priced calls: ${costLine({ ...cost, priced: true })}`;
  }
  const batch = cost.batch ? ` (batch lane saved ${usd(cost.batch.savedUsd)})` : '';
  if (cost.cachedCalls === 0) return `cost ${usd(cost.totalUsd)}${batch}  per 10K ${usd(cost.per10kUsd)}`;
  const share = cost.calls > 0 ? Math.round((cost.cachedCalls / cost.calls) * 100) : 0;
  return `per 10K ${usd(cost.per10kUsd)} at list price; paid now ${usd(cost.totalUsd)}${batch} (${share}% from cache)`;
}

export function renderText(report: Report): string {
  const c = report.counts;
  const lines: string[] = [];
  const incomplete = incompleteNotice(report);
  if (incomplete) lines.push(incomplete, '');
  if (report.simulated) lines.push(...simulatedBanner(report.notice));
  const config = Object.values(report.config);
  lines.push(
    `Assay report — ${report.suite} (${[report.task, ...config].join('/')})`,
    `run ${report.runId}   ${report.startedAt} → ${report.finishedAt ?? '(not finished)'}`,
    ...(report.predictions ? [`outputs: ${report.predictions}`] : []),
    `backends: ${report.backends.length > 0 ? report.backends.join(', ') : '(none: the dataset gives the outputs)'}`,
    `dataset: ${report.dataset}`,
    '',
    countsLine(c),
  );
  const kinds = failureKinds(c);
  if (kinds) lines.push(`failures by kind: ${kinds}`);
  lines.push(...injectionLines(report.injection));
  lines.push('', `Scores (unscored items skipped and counted; ${INTERVALS})`);
  for (const [name, summary] of Object.entries(report.scores)) {
    lines.push(...renderScorer(name, summary, name === report.primaryScorer));
  }
  lines.push(...renderSlices(report));
  lines.push(...panelLines(report.panel));
  lines.push(...(taskFor(report).reportText?.(report) ?? []));
  lines.push(...renderComparisonSummary(report.comparison as ComparisonView | undefined));
  const cost = report.cost;
  if (!isPriced(cost)) lines.push('', `Cost ${unpricedLabel(cost)}: ${UNPRICED_HINT}`);
  lines.push(
    ...(isPriced(cost) ? [''] : []),
    `${isPriced(cost) ? 'Cost' : '  priced calls:'} ${usd(cost.totalUsd)} paid   at list price (cached answers priced as if called): per item ${usd(cost.perItemUsd)}   per 10K ${usd(cost.per10kUsd)}`,
    `  calls ${cost.calls} (cached ${cost.cachedCalls}, saving ${usd(cost.savedUsd ?? 0)})   tokens in ${cost.tokens.input} (cached ${cost.tokens.cached}) out ${cost.tokens.output}`,
  );
  lines.push(...suitePricesLines(cost.suitePrices));
  if (cost.batch) {
    lines.push(
      `  batch lane: ${cost.batch.calls} calls at ${Math.round(cost.batch.discount * 100)}% off, saving ${usd(cost.batch.savedUsd)} against the synchronous price ${usd(cost.totalUsd + cost.batch.savedUsd)}`,
    );
  }
  for (const [stage, s] of Object.entries(cost.byStage)) {
    lines.push(
      `  ${stage.padEnd(24)} ${(s.priced === false ? 'unpriced' : usd(s.usd)).padStart(11)}  calls ${s.calls}`,
    );
  }
  lines.push(
    `Latency per item: p50 ${ms(report.latencyMs.p50)}, p95 ${ms(report.latencyMs.p95)}`,
    '',
    'Prompts:',
    ...Object.entries(report.prompts).map(([path, hash]) => `  ${path}  ${hash}`),
  );
  return visible(`${lines.join('\n')}\n`);
}

/** Which prices the suite's own run.prices gave (the rest are the price table's), and its notes. */
function suitePricesLines(prices: Report['cost']['suitePrices']): string[] {
  if (!prices) return [];
  return [
    prices.models.length > 0
      ? `  prices: the suite's run.prices for ${prices.models.join(', ')}; the price table's for the rest`
      : "  prices: the price table's for every model",
    ...(prices.note ? [`  prices note: ${prices.note}`] : []),
  ];
}

interface ComparisonView {
  baseRunId: string;
  paired: number;
  dataset?: { added: number; removed: number; changed: number };
  promptChanges: { path: string; base?: string; candidate?: string }[];
  scores: Record<
    string,
    {
      coverage?: {
        n: number;
        delta: number;
        ci: [number, number];
        pValue: number;
        scored: { base: number; candidate: number };
      };
      deltas: Record<
        string,
        {
          delta: number;
          ci: [number, number];
          pValue: number;
          reason?: string;
          noiseFloor?: number;
          withinNoise?: boolean;
        }
      >;
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
  if (c.dataset)
    lines.push(
      `  dataset: ${c.dataset.changed} changed (another input or gold: not paired), ${c.dataset.added} added, ${c.dataset.removed} removed`,
    );
  for (const change of c.promptChanges) {
    lines.push(`  prompt ${change.path}: ${change.base ?? '(none)'} → ${change.candidate ?? '(none)'}`);
  }
  for (const [scorer, s] of Object.entries(c.scores)) {
    const k = s.coverage;
    if (k)
      lines.push(
        `  ${`${scorer} coverage`.padEnd(26)} Δ ${signed(k.delta)}  [${signed(k.ci[0])}, ${signed(k.ci[1])}]  p ${pValue(k.pValue)}  (scored ${k.scored.base} → ${k.scored.candidate} of ${k.n}; the figures below are over the items both runs scored)`,
      );
    for (const [name, d] of Object.entries(s.deltas)) {
      lines.push(
        `  ${`${scorer} ${metricDisplayName(name)}`.padEnd(26)} Δ ${signed(d.delta)}  ${d.reason ? `(${d.reason})` : `[${signed(d.ci[0])}, ${signed(d.ci[1])}]  p ${pValue(d.pValue)}`}${d.noiseFloor === undefined ? '' : `  ${d.withinNoise ? 'within' : 'beyond'} noise ±${d.noiseFloor.toFixed(3)}`}`,
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
