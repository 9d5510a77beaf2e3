import type { Report } from '../model/report.js';
import { leaderboardEntry } from '../model/report.js';
import type { BlobStore, Leaderboard } from '../ports/ports.js';
import { leaderboardTables, renderLeaderboard } from '../reports/leaderboard.js';

export interface PublishLeaderboardDeps {
  leaderboard: Leaderboard;
  /** Where `leaderboard.json` / `leaderboard.txt` go. */
  reports: BlobStore;
}

/**
 * A finished run joins the leaderboard, and the leaderboard files are written anew from every
 * entry. Idempotent: a retried trigger puts the same entry and the same files.
 */
export async function publishToLeaderboard(
  deps: PublishLeaderboardDeps,
  report: Report,
  prefix: string,
): Promise<string[]> {
  await deps.leaderboard.record(leaderboardEntry(report));
  const tables = leaderboardTables(await deps.leaderboard.entries());
  const keys = [`${prefix}leaderboard.json`, `${prefix}leaderboard.txt`];
  await deps.reports.put(keys[0]!, `${JSON.stringify({ tables }, null, 2)}\n`, 'application/json');
  await deps.reports.put(keys[1]!, renderLeaderboard(tables), 'text/plain; charset=utf-8');
  return keys;
}
