/**
 * `assay leaderboard` over runs whose suite maps a family's own columns (the QAGS example maps
 * `sentence`): the leaderboard and the run history read their records with the registry's suite
 * check, so the runs are on the board and a later run in the same folder names no run as
 * unreadable.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assayCli, tempDir } from '../helpers.js';

describe('assay leaderboard over runs of a suite mapping its family’s columns', { timeout: 120_000 }, () => {
  it('lists both runs of examples/qags-xsum.suite.json and skips none', async () => {
    const dir = await tempDir('assay-board-');
    const runs = join(dir, 'runs');
    const run = (out: string) =>
      assayCli(
        [
          'run',
          'examples/qags-xsum.suite.json',
          '--simulate',
          '--fresh',
          '--out',
          join(runs, out),
          '--no-progress',
        ],
        dir,
      );
    await run('first');
    const second = await run('second');
    expect(second.stderr).not.toMatch(/skipping run folder/);
    const { stdout, stderr } = await assayCli(['leaderboard', '--runs', runs, '--json'], dir);
    expect(stderr).not.toMatch(/skipping run folder/);
    expect(stderr).toMatch(/2 run folders, 2 finished with a report/);
    const entries = JSON.parse(stdout).tables.flatMap((t: { entries: { suite: string }[] }) => t.entries);
    expect(entries.map((e: { suite: string }) => e.suite)).toEqual(['qags-xsum', 'qags-xsum']);
  });
});
