/**
 * `assay leaderboard` over a runs folder holding, beside a good run, run folders whose
 * report.json is cut short or of another shape, and a leaderboard.jsonl line of another shape:
 * each bad one is left out and named on stderr, and the good run is still on the board.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assayCli, tempDir } from '../helpers.js';

describe('assay leaderboard with malformed run folders', { timeout: 120_000 }, () => {
  it('skips each malformed folder, naming it, and shows the good run', async () => {
    const dir = await tempDir('assay-board-');
    const runs = join(dir, 'runs');
    const good = join(runs, 'good');
    await assayCli(
      ['run', 'examples/quickstart.suite.json', '--simulate', '--out', good, '--no-progress'],
      dir,
    );
    const run = JSON.parse(await readFile(join(good, 'run.json'), 'utf8'));
    const reportText = await readFile(join(good, 'report.json'), 'utf8');

    /** A run folder with the good run's record under another id, and `report` as its report.json. */
    async function folder(name: string, report: string): Promise<string> {
      const path = join(runs, name);
      await mkdir(path, { recursive: true });
      await writeFile(join(path, 'run.json'), JSON.stringify({ ...run, runId: `${run.runId}-${name}` }));
      await writeFile(join(path, 'report.json'), report);
      return path;
    }
    const truncated = await folder('truncated', reportText.slice(0, reportText.length / 2));
    const shape = await folder('shape', JSON.stringify({ runId: 'x', scores: 3 }));
    const fields = await folder(
      'fields',
      JSON.stringify({ ...JSON.parse(reportText), runId: `${run.runId}-fields`, dataset: 42 }),
    );
    const board = join(runs, 'leaderboard.jsonl');
    await writeFile(board, `${JSON.stringify({ runId: 'odd', metrics: null })}\n`, { flag: 'a' });

    const { stdout, stderr } = await assayCli(['leaderboard', '--runs', runs], dir);
    expect(stdout).toContain(run.runId);
    expect(stdout).not.toContain(`${run.runId}-`);
    expect(stderr).toContain(`skipping run folder ${truncated}: report.json is not JSON`);
    expect(stderr).toContain(
      `skipping run folder ${shape}: report.json is not a report (scores is not an object)`,
    );
    expect(stderr).toContain(
      `skipping run folder ${fields}: report.json is not a report (dataset is not a string)`,
    );
    expect(stderr).toContain(
      `skipping run folder ${board}: an entry of the wrong shape: suite is not a string`,
    );
    expect(stderr).toMatch(/4 run folders, 1 finished with a report/);

    // The page and the JSON are written from the same good entries.
    const json = JSON.parse((await assayCli(['leaderboard', '--runs', runs, '--json'], dir)).stdout);
    expect(
      json.tables.flatMap((t: { entries: { runId: string }[] }) => t.entries.map((e) => e.runId)),
    ).toEqual([run.runId]);
  });
});
