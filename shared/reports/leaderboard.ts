/**
 * The leaderboard: finished runs side by side, per dataset — task, method, backends, prompt
 * version, headline metrics with CIs, cost per 10K, p50 latency — the results table users
 * otherwise type by hand, built from the runs' reports. Pure: the shells read and store entries.
 */
import { HEADLINE_METRICS } from '../metrics/index.js';
import { type MetricValue } from '../core/report-types.js';
import { ms, textTable, withInterval } from './format.js';
import type { Report } from '../core/report-types.js';
import { LEADERBOARD_SCHEMA_VERSION, type LeaderboardEntry } from '../core/report-types.js';

/** A run's entry, from its report. */
export function leaderboardEntry(report: Report): LeaderboardEntry {
  const primary = report.scores[report.primaryScorer];
  const metrics: Record<string, MetricValue> = {};
  for (const name of primary ? HEADLINE_METRICS[primary.kind] : []) {
    const m = primary?.metrics[name];
    if (m) metrics[name] = m;
  }
  const promptVersion = Object.entries(report.prompts)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([path, hash]) => `${path.split('/').at(-1)}@${hash.slice(hash.indexOf(':') + 1).slice(0, 7)}`)
    .join(' ');
  return {
    schemaVersion: LEADERBOARD_SCHEMA_VERSION,
    runId: report.runId,
    suite: report.suite,
    task: report.task,
    dataset: report.dataset,
    config: report.config,
    backends: report.backends,
    promptVersion,
    simulated: report.simulated,
    primaryScorer: report.primaryScorer,
    metrics,
    items: report.counts.items,
    scored: report.counts.scored,
    per10kUsd: report.cost.per10kUsd,
    p50LatencyMs: report.latencyMs.p50,
    finishedAt: report.finishedAt ?? report.startedAt,
  };
}

export interface LeaderboardTable {
  dataset: string;
  /** The metric rows are ordered by (the first headline metric all entries share). */
  rankedBy: string | null;
  /** Some entries simulated and some real. */
  mixed: boolean;
  entries: LeaderboardEntry[];
}

/** Entries grouped by dataset, best first by the first headline metric they share; latest first on ties. */
export function leaderboardTables(
  entries: readonly LeaderboardEntry[],
  dataset?: string,
): LeaderboardTable[] {
  const byDataset = new Map<string, LeaderboardEntry[]>();
  for (const e of entries) {
    if (dataset !== undefined && e.dataset !== dataset && !e.dataset.endsWith(`/${dataset}`)) continue;
    byDataset.set(e.dataset, [...(byDataset.get(e.dataset) ?? []), e]);
  }
  return [...byDataset.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, group]) => {
      const shared = Object.keys(group[0]!.metrics).find((m) =>
        group.every((e) => e.metrics[m] !== undefined),
      );
      const value = (e: LeaderboardEntry) => (shared ? (e.metrics[shared]?.value ?? null) : null);
      const sorted = [...group].sort(
        (a, b) =>
          (value(b) ?? Number.NEGATIVE_INFINITY) - (value(a) ?? Number.NEGATIVE_INFINITY) ||
          b.finishedAt.localeCompare(a.finishedAt),
      );
      const simulated = group.filter((e) => e.simulated).length;
      return {
        dataset: name,
        rankedBy: shared ?? null,
        mixed: simulated > 0 && simulated < group.length,
        entries: sorted,
      };
    });
}

function rankCell(
  entries: readonly LeaderboardEntry[],
  i: number,
  value: (e: LeaderboardEntry) => number | null,
): string {
  const mine = value(entries[i]!);
  if (mine === null) return '-';
  const first = entries.findIndex((e) => value(e) === mine);
  const tied = entries.filter((e) => value(e) === mine).length > 1;
  return `${first + 1}${tied ? '=' : ''}`;
}

/** The leaderboard as text, a table per dataset. */
export function renderLeaderboard(tables: readonly LeaderboardTable[]): string {
  if (tables.length === 0) return 'No finished runs.\n';
  const lines: string[] = [];
  for (const table of tables) {
    const metricNames = [...new Set(table.entries.flatMap((e) => Object.keys(e.metrics)))];
    lines.push(`Dataset ${table.dataset}${table.rankedBy ? ` — ranked by ${table.rankedBy}` : ''}`);
    if (table.mixed) {
      lines.push(
        'MIXED: real and simulated runs in one table. SIM rows were answered by the simulator: their figures measure nothing about a model.',
      );
    } else if (table.entries.every((e) => e.simulated)) {
      lines.push(
        'SIMULATED: every run here was answered by the simulator; the figures measure nothing about a model.',
      );
    }
    const rankValue = (e: LeaderboardEntry) =>
      table.rankedBy ? (e.metrics[table.rankedBy]?.value ?? null) : null;
    const rows = table.entries.map((e, i) => [
      // Competition ranking: equal figures share a rank, marked `=`.
      rankCell(table.entries, i, rankValue),
      e.simulated ? 'SIM' : '',
      e.suite,
      [e.task, ...Object.values(e.config)].join('/'),
      e.backends.join(' ') || '(given)',
      e.promptVersion || '-',
      ...metricNames.map((m) => (e.metrics[m] ? withInterval(e.metrics[m]) : '')),
      e.per10kUsd === null ? 'n/a' : `$${e.per10kUsd.toFixed(2)}`,
      ms(e.p50LatencyMs),
      String(e.items),
      e.runId,
    ]);
    lines.push(
      ...textTable(
        [
          '#',
          '',
          'suite',
          'task/method',
          'backends',
          'prompts',
          ...metricNames,
          'cost/10K',
          'p50 ms',
          'items',
          'run',
        ],
        rows,
      ),
      '',
    );
  }
  return `${lines.join('\n')}\n`;
}
