/**
 * The Leaderboard contract: a finished run's entry is recorded (once per run, the latest
 * wins) and read back, by the local board (a JSON-lines file in the runs folder) and the
 * DynamoDB board alike.
 */
import { describe, expect, it } from 'vitest';
import { DynamoLeaderboard } from '../../../shared/adapters/aws/dynamo-sweeps.js';
import { LocalLeaderboard } from '../../../shared/adapters/local/local-sweeps.js';
import { LEADERBOARD_SCHEMA_VERSION, type LeaderboardEntry } from '../../../shared/model/report.js';
import type { Leaderboard } from '../../../shared/ports/ports.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { tempDir } from '../../helpers.js';
import { awsStack, fresh } from './fixtures.js';

const aws = awsStack('contract-leaderboard');

/** Two boards on the same storage (two processes, two Lambda containers). */
const adapters: [string, () => Promise<[Leaderboard, Leaderboard]>][] = [
  [
    'local',
    async () => {
      const root = await tempDir('assay-contract-board-');
      return [
        new LocalLeaderboard(root, validateSuite, () => {}),
        new LocalLeaderboard(root, validateSuite, () => {}),
      ];
    },
  ],
  [
    'dynamodb',
    async () => {
      const table = { client: aws().clients.doc, tableName: aws().res.table };
      return [new DynamoLeaderboard(table), new DynamoLeaderboard(table)];
    },
  ],
];

function entry(runId: string, overrides: Partial<LeaderboardEntry> = {}): LeaderboardEntry {
  return {
    schemaVersion: LEADERBOARD_SCHEMA_VERSION,
    runId,
    suite: 'demo',
    task: 'judge',
    dataset: 'datasets/demo/data.csv',
    config: { answer: 'range 1..5' },
    backends: ['sim:claude-haiku-4-5'],
    promptVersion: 'helpful.md@08f0db9',
    simulated: true,
    primaryScorer: 'score',
    metrics: { mae: { value: 0.3, n: 40, ci: [0.05, 0.575] } },
    items: 40,
    scored: 40,
    per10kUsd: 4.27,
    p50LatencyMs: null,
    finishedAt: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

describe.each(adapters)('Leaderboard contract: %s', { timeout: 60_000 }, (_name, makePair) => {
  it('records an entry and reads it back; recording the same run again replaces it', async () => {
    const [board] = await makePair();
    const [a, b] = [fresh('run'), fresh('run')];
    const mine = async () => (await board.entries()).filter((e) => e.runId === a || e.runId === b);

    await board.record(entry(a));
    expect(await mine()).toEqual([entry(a)]);
    await board.record(entry(b, { per10kUsd: null }));
    await board.record(entry(a, { scored: 39, finishedAt: '2026-01-02T00:00:00.000Z' }));

    const byRun = Object.fromEntries((await mine()).map((e) => [e.runId, e]));
    expect(Object.keys(byRun).sort()).toEqual([a, b].sort());
    expect(byRun[a]).toEqual(entry(a, { scored: 39, finishedAt: '2026-01-02T00:00:00.000Z' }));
    expect(byRun[b]).toEqual(entry(b, { per10kUsd: null }));
  });

  it('keeps what it recorded: another board on the same storage reads it', async () => {
    const [board, again] = await makePair();
    const id = fresh('kept');
    expect((await again.entries()).some((e) => e.runId === id)).toBe(false);
    await board.record(entry(id));
    expect((await again.entries()).filter((e) => e.runId === id)).toEqual([entry(id)]);
  });
});
