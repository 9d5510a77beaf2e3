/** A leaderboard entry of a run that called a model without a price shows its cost as unpriced, never $0. */
import { describe, expect, it } from 'vitest';
import type { LeaderboardEntry } from '../../../shared/model/report.js';
import { leaderboardTables, renderLeaderboard } from '../../../shared/reports/leaderboard.js';

const entry = (runId: string, overrides: Partial<LeaderboardEntry> = {}): LeaderboardEntry => ({
  schemaVersion: 1,
  runId,
  suite: 'gec',
  task: 'gec',
  dataset: 'gold.csv',
  config: {},
  backends: ['openai:gpt-4o-mini'],
  promptVersion: 'abc',
  simulated: false,
  primaryScorer: 'label',
  metrics: { accuracy: { value: 0.8, n: 10 } },
  items: 10,
  scored: 10,
  per10kUsd: 1.5,
  p50LatencyMs: 100,
  finishedAt: '2025-01-01T00:00:00.000Z',
  ...overrides,
});

describe('the leaderboard', () => {
  it('shows an unpriced run as unpriced, and a priced one (or one written before) at its cost', () => {
    const text = renderLeaderboard(
      leaderboardTables([
        entry('priced-run'),
        entry('unpriced-run', { backends: ['openai:my-finetune'], per10kUsd: 0, priced: false }),
      ]),
    );
    const row = (runId: string) => text.split('\n').find((line) => line.includes(runId))!;
    expect(row('unpriced-run')).toContain('unpriced');
    expect(row('unpriced-run')).not.toContain('$0.00');
    expect(row('priced-run')).toContain('$1.50');
  });
});
