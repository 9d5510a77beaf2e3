/**
 * GitHub-flavoured Markdown summaries of a run and of a comparison, for a job's step summary
 * (`$GITHUB_STEP_SUMMARY`) or a pull-request comment: the headline figures with their intervals,
 * n and coverage, the failed items, the cost, and a SIMULATED banner first when the simulator
 * answered. Every figure is the report's own, written by the same formatters as report.txt; a
 * figure with no data reads `n/a`. The sweep's summary (shared/sweeps/ci.ts) is built of the
 * same pieces.
 */
import { interval, ms, num, pValue, signed, usd, visible } from '../../lib/format.js';
import { scorerCoverage } from '../../lib/gate.js';
import type { PairedDelta } from '../../lib/metrics/index.js';
import { metricDisplayName } from '../../model/metrics.js';
import { HEADLINE_METRICS, type MetricValue, type Report } from '../../model/report.js';
import type { Comparison } from '../compare-runs.js';
import { mcnemarReading, usdSigned } from '../comparison.js';
import { costLine, countsLine, failureKinds, incompleteNotice, metricName } from '../files.js';

/**
 * Data as Markdown shows it, on one line: control characters written visibly, the characters
 * Markdown or HTML would read as markup (backslash, backtick, `|`, `<`, `>`, `&`) escaped, line breaks as `<br>`.
 * Safe in a table cell and in running text.
 */
export function mdText(text: string): string {
  return visible(text)
    .replace(/\\/g, '\\\\')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\|/g, '\\|')
    .replace(/`/g, '\\`')
    .replace(/\r\n|\r|\n/g, '<br>')
    .replace(/\t/g, ' ');
}

/** A Markdown table; every cell is escaped by {@link mdText}, header cells included. */
export function mdTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const row = (cells: readonly string[]) => `| ${cells.map(mdText).join(' | ')} |`;
  return [row(header), `|${header.map(() => ' --- ').join('|')}|`, ...rows.map(row)];
}

/** The banner a summary of simulated answers starts with (a GitHub alert, plain text elsewhere). */
export function simulatedAlert(notice: string | undefined): string[] {
  // The notice names itself first (`SIMULATED: …`, `MIXED: …`): that word is the banner's head.
  const [, head = 'SIMULATED', rest = notice ?? 'answers came from the simulator'] =
    /^([A-Z]+): (.*)$/s.exec(notice ?? '') ?? [];
  return ['> [!WARNING]', `> **${head}** — ${mdText(rest)}`, ''];
}

/** A metric's interval cell: `[lo, hi]`, or why it has none, or `n/a`. */
export function ciCell(m: MetricValue | null | undefined): string {
  if (!m || m.value === null) return m?.reason ?? 'n/a';
  return m.ci ? interval(m.ci) : (m.reason ?? 'n/a');
}

/** The three cells of a paired delta: Δ, its 95% interval, its p-value; `n/a` where there is none to rely on. */
export function deltaCells(d: Pick<PairedDelta, 'delta' | 'ci' | 'pValue' | 'reason'>): string[] {
  if (d.reason) return [signed(d.delta), `n/a (${d.reason})`, 'n/a'];
  return [signed(d.delta), `[${signed(d.ci[0])}, ${signed(d.ci[1])}]`, pValue(d.pValue)];
}

/** The share of its items a scorer scored, with the counts: `0.977 (250/256)`; `n/a` when it had none. */
export function coverageCell(m: MetricValue | undefined): string {
  if (!m || m.value === null) return 'n/a';
  return `${num(m.value)} (${Math.round(m.value * m.n)}/${m.n})`;
}

/** A run's summary. `unscorable`: why the run scored nothing, when it did not (the command then exits 1). */
export function runMarkdown(report: Report, unscorable?: string): string {
  const lines = [`## Assay run — ${mdText(report.suite)} (${mdText(report.task)})`, ''];
  if (report.simulated) lines.push(...simulatedAlert(report.notice));
  const incomplete = incompleteNotice(report);
  if (incomplete) lines.push(`> **INCOMPLETE** — ${mdText(incomplete)}`, '');
  if (unscorable) lines.push(`> **FAILED** — ${mdText(unscorable)}`, '');
  lines.push(
    `run ${mdText(report.runId)} · dataset ${mdText(report.dataset)} · backends ${mdText(report.backends.join(', ') || '(none: the dataset gives the outputs)')}`,
    '',
  );
  const rows: string[][] = [];
  for (const [name, s] of Object.entries(report.scores)) {
    const scorer = `${name}${name === report.primaryScorer ? ' (primary)' : ''}`;
    const coverage = coverageCell(scorerCoverage(s));
    const headline = HEADLINE_METRICS[s.kind].filter((metric) => s.metrics[metric] !== undefined);
    if (headline.length === 0) rows.push([scorer, 'no metrics', 'n/a', 'n/a', String(s.n), coverage]);
    for (const metric of headline) {
      const m = s.metrics[metric]!;
      rows.push([scorer, metricName(metric, m), num(m.value), ciCell(m), String(m.n), coverage]);
    }
  }
  lines.push(...mdTable(['scorer', 'metric', 'value', '95% CI', 'n', 'coverage'], rows), '');
  const kinds = failureKinds(report.counts);
  // The report.txt lines, their column gaps as separators.
  const spaced = (line: string) => mdText(line).replace(/ {2,}/g, ' · ');
  lines.push(
    `${spaced(countsLine(report.counts))}${kinds ? ` — failed by kind: ${mdText(kinds)}` : ''}`,
    '',
    `${spaced(costLine(report.cost))} · latency p50 ${ms(report.latencyMs.p50)}`,
    '',
  );
  return `${lines.join('\n')}\n`;
}

/** A comparison's summary: per scorer the paired deltas with their intervals and p-values, McNemar, the cost. */
export function comparisonMarkdown(c: Comparison): string {
  const lines = [`## Assay comparison — ${mdText(c.base.suite)} → ${mdText(c.candidate.suite)}`, ''];
  if (c.simulated) lines.push(...simulatedAlert(c.notice));
  const { paired, onlyBase, onlyCandidate, changed } = c.items;
  lines.push(
    `base ${mdText(c.base.runId)} → candidate ${mdText(c.candidate.runId)}`,
    '',
    `**Items** ${paired} paired, ${onlyBase} only in base, ${onlyCandidate} only in candidate${changed ? `, ${changed} changed` : ''} (invalid rows not paired)`,
    '',
  );
  if (c.base.dataset !== c.candidate.dataset)
    lines.push(
      `> **WARNING** — the runs used different datasets: ${mdText(c.base.dataset)} vs ${mdText(c.candidate.dataset)}`,
      '',
    );
  const rows: string[][] = [];
  for (const [scorer, s] of Object.entries(c.scores)) {
    const name = `${scorer}${scorer === c.primaryScorer ? ' (primary)' : ''}`;
    if (s.coverage)
      rows.push([
        name,
        'coverage',
        num(s.coverage.base),
        num(s.coverage.candidate),
        ...deltaCells(s.coverage),
        String(s.coverage.n),
      ]);
    for (const [metric, d] of Object.entries(s.deltas))
      rows.push([
        name,
        metricDisplayName(metric),
        num(d.base),
        num(d.candidate),
        ...deltaCells(d),
        String(d.n),
      ]);
  }
  if (rows.length > 0)
    lines.push(...mdTable(['scorer', 'metric', 'base', 'candidate', 'Δ', '95% CI of Δ', 'p', 'n'], rows), '');
  else lines.push('No paired figures: the runs have no scorer in common.', '');
  for (const [scorer, s] of Object.entries(c.scores)) {
    const flipped = { fixed: 0, broken: 0, changed: 0 };
    for (const f of s.flipped) flipped[f.kind] += 1;
    const mcnemar = s.mcnemar ? `McNemar p ${pValue(s.mcnemar.pValue)}: ${mcnemarReading(s.mcnemar)}; ` : '';
    lines.push(
      `- **${mdText(scorer)}**: ${mdText(mcnemar)}flipped ${flipped.fixed} fixed, ${flipped.broken} broken, ${flipped.changed} changed`,
    );
  }
  lines.push(
    '',
    `**Cost** base ${usd(c.cost.base)} · candidate ${usd(c.cost.candidate)} · Δ ${usdSigned(c.cost.delta)}`,
    '',
  );
  return `${lines.join('\n')}\n`;
}
