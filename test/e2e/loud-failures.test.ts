/**
 * Runs that went wrong say so, as a user meets them on the command line: a run that scored
 * nothing ends with an error naming the cause and its first failed rows, is never compared with
 * an earlier run, and a report rebuilt from a stopped run says it is incomplete.
 */
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { assayCli, REPO, tempDir } from '../helpers.js';

type Failure = { code: number; stdout: string; stderr: string };
const failing = (run: Promise<unknown>) =>
  run.then(
    () => undefined,
    (e: Failure) => e,
  );

/** A copy of the reply-tone judge in `dir`, reading `data` (absolute), with `gold` as its gold column. */
async function toneSuite(dir: string, name: string, data: string, gold = 'human'): Promise<string> {
  await mkdir(join(dir, 'prompts'), { recursive: true });
  await cp(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
  const suite = JSON.parse(await readFile(join(REPO, 'examples', 'reply-tone.suite.json'), 'utf8'));
  suite.dataset = { path: data, columns: { gold } };
  delete suite.$schema;
  const path = join(dir, `${name}.suite.json`);
  await writeFile(path, JSON.stringify(suite));
  return path;
}

const REPLIES = join(REPO, 'examples', 'data', 'replies.csv');

describe('loud failures', { timeout: 180_000 }, () => {
  it('a misspelt gold column: exit 1, the column named with the columns that exist, the first rows, and no comparison', async () => {
    const dir = await tempDir('assay-loud-');
    const runs = join(dir, 'runs');
    const good = await toneSuite(dir, 'good', REPLIES);
    const typo = await toneSuite(dir, 'typo', REPLIES, 'humman');
    await assayCli(['run', good, '--simulate', '--runs', runs, '--no-progress'], dir);
    const failed = await failing(assayCli(['run', typo, '--simulate', '--runs', runs, '--no-progress'], dir));
    expect(failed?.code).toBe(1);
    expect(failed?.stdout).toContain('reply-tone: 0 scored, 48 failed (48 invalid rows)');
    expect(failed?.stderr).toContain('nothing was scored: all 48 items failed');
    expect(failed?.stderr).toContain(
      'the suite names column "humman" (gold) but the dataset has no such column; its columns: id, customer_message, reply, human',
    );
    const rows = failed?.stderr.split('\n').filter((line) => /^ {2}row \d+: /.test(line));
    expect(rows).toEqual([1, 2, 3, 4, 5].map((n) => `  row ${n}: missing column humman (invalid row)`));
    // The broken run is compared with nothing (the earlier run of the suite did score).
    expect(failed?.stdout).not.toContain('compared with');
  });

  it('a first run with an invalid row: it is counted invalid, not already done, and its gold is shown as given', async () => {
    const dir = await tempDir('assay-loud-');
    const lines = (await readFile(REPLIES, 'utf8')).split(/\r?\n/).filter((line) => line !== '');
    const data = join(dir, 'one-invalid.csv');
    await writeFile(
      data,
      `${[lines[0], lines[1]!.replace(/,[^,]*$/, ',sarcastic'), ...lines.slice(2)].join('\n')}\n`,
    );
    const suite = await toneSuite(dir, 'one-invalid', data);
    const out = join(dir, 'run');
    const { stderr } = await assayCli(['run', suite, '--simulate', '--out', out], dir);
    expect(stderr).toContain('48 items (1 invalid rows), 0 already done, 47 to score');
    expect(await readFile(join(out, 'errors.txt'), 'utf8')).toMatch(/\[row-1\] row 1 {2}gold=sarcastic {2}/);
  });

  it('a dataset with a header only: exit 1, saying it has no rows', async () => {
    const dir = await tempDir('assay-loud-');
    const data = join(dir, 'empty.csv');
    await writeFile(data, 'id,customer_message,reply,human\n');
    const suite = await toneSuite(dir, 'empty', data);
    const failed = await failing(
      assayCli(['run', suite, '--simulate', '--out', join(dir, 'run'), '--no-progress'], dir),
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stdout).toContain('reply-tone: 0 scored, 0 failed');
    expect(failed?.stderr).toContain(
      `nothing was scored: the dataset ${data} has no rows (only a header: id, customer_message, reply, human)`,
    );
  });

  it('a sweep whose variants score nothing: exit 1 after the sweep summary, naming each variant', async () => {
    const dir = await tempDir('assay-loud-');
    const data = join(dir, 'empty.csv');
    await writeFile(data, 'id,customer_message,reply,human\n');
    const path = await toneSuite(dir, 'sweep', data);
    const suite = JSON.parse(await readFile(path, 'utf8'));
    await writeFile(
      path,
      JSON.stringify({ ...suite, variants: [{ name: 'a' }, { name: 'b' }], baseline: 'a' }),
    );
    const failed = await failing(
      assayCli(['run', path, '--simulate', '--out', join(dir, 'sweep'), '--no-progress'], dir),
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stdout).toContain('sweep report:');
    for (const variant of ['a', 'b'])
      expect(failed?.stderr).toContain(
        `variant ${variant}: nothing was scored: the dataset ${data} has no rows`,
      );
  });

  it('assay report on a stopped run says INCOMPLETE first, with the missing items, and stamps no finish time', async () => {
    const dir = await tempDir('assay-loud-');
    const suite = await toneSuite(dir, 'tone', REPLIES);
    const full = join(dir, 'full');
    await assayCli(['run', suite, '--simulate', '--out', full, '--no-progress'], dir);
    // The folder of a run stopped after 30 of its 48 items.
    const stopped = join(dir, 'stopped');
    await mkdir(stopped);
    const { finishedAt, ...record } = JSON.parse(await readFile(join(full, 'run.json'), 'utf8'));
    await writeFile(join(stopped, 'run.json'), JSON.stringify({ ...record, status: 'running' }));
    const lines = (await readFile(join(full, 'results.jsonl'), 'utf8')).trim().split('\n');
    await writeFile(join(stopped, 'results.jsonl'), `${lines.slice(0, 30).join('\n')}\n`);

    const { stdout } = await assayCli(['report', stopped], dir);
    const notice =
      'INCOMPLETE: 18 of 48 items have no result (the run was stopped before it finished); the figures cover the 30 items present.';
    expect(stdout).toContain(notice);
    const text = await readFile(join(stopped, 'report.txt'), 'utf8');
    expect(text.split('\n')[0]).toContain(notice);
    expect(text).toContain('→ (not finished)');
    const report = JSON.parse(await readFile(join(stopped, 'report.json'), 'utf8')) as Report;
    expect(report).toMatchObject({ status: 'incomplete', missingItems: 18, finishedAt: null });
    expect(report.counts.items).toBe(30);
    const complete = JSON.parse(await readFile(join(full, 'report.json'), 'utf8')) as Report;
    expect(complete).toMatchObject({ status: 'complete', missingItems: 0, finishedAt });
  });

  it('assay leaderboard --runs finds runs written with --out below the folder, and says where it looked', async () => {
    const dir = await tempDir('assay-loud-');
    const suite = await toneSuite(dir, 'tone', REPLIES);
    await assayCli(
      ['run', suite, '--simulate', '--out', join(dir, 'experiments', 'tone', 'first'), '--no-progress'],
      dir,
    );
    const { stdout, stderr } = await assayCli(['leaderboard', '--runs', join(dir, 'experiments')], dir);
    expect(stderr).toContain(
      `leaderboard: looked in ${join(dir, 'experiments')} and below: 1 run folder, 1 finished with a report`,
    );
    expect(stdout).toContain(`Dataset ${REPLIES}`);
    expect(stdout).toMatch(/SIM +reply-tone +judge/);
    const json = await assayCli(['leaderboard', '--runs', dir, '--json'], dir);
    const { tables } = JSON.parse(json.stdout) as { tables: { entries: unknown[] }[] };
    expect(tables.flatMap((t) => t.entries)).toHaveLength(1);
  });
});
