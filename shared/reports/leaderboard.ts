/**
 * The leaderboard: finished runs side by side, per dataset — task, method, backends, prompt
 * version, headline metrics with CIs, cost per 10K, p50 latency — the results table users
 * otherwise type by hand, built from the runs' reports. Pure: the shells read and store entries.
 */

import { ms, textTable, visible, withInterval } from '../lib/format.js';
import type { LeaderboardEntry } from '../model/report.js';

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

/** Who answered: the backends, or where outputs the dataset gave come from (and who graded them). */
function sourceCell(e: LeaderboardEntry): string {
  const backends = e.backends.join(' ');
  if (e.predictions === undefined) return backends || '(given)';
  return backends ? `${e.predictions}, graded by ${backends}` : e.predictions;
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
      sourceCell(e),
      e.promptVersion || '-',
      ...metricNames.map((m) => (e.metrics[m] ? withInterval(e.metrics[m]) : '')),
      e.priced === false ? 'unpriced' : e.per10kUsd === null ? 'n/a' : `$${e.per10kUsd.toFixed(2)}`,
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
  // Names from the runs shown, never obeyed by the terminal: see `visible`.
  return visible(`${lines.join('\n')}\n`);
}
