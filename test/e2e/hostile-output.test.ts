/**
 * What a hostile dataset, backend name or environment can make the CLI write, as a user meets
 * it: the progress lines on a piped stderr show a backend name's terminal escapes visibly;
 * labeled.csv holds no raw control byte and no formula a spreadsheet splitting on `;`, tab or
 * `,` would run; a base URL carrying a password is refused up front without printing it; and a
 * `results.jsonl` that is a symbolic link is refused rather than written through.
 */
import { copyFile, lstat, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { assayCli, REPO, tempDir } from '../helpers.js';

/** A window-title set (OSC 0) and a clear screen (CSI 2 J). */
const HOSTILE = '\x1b]0;pwned\x07\x1b[2J';
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** Six replies whose ids and texts try formulas after separators and carry escapes. */
const DATASET = [
  'id,customer_message,reply,human',
  '"fine;=1+2",Where is my order?,It shipped.,polite',
  '"ok\t@SUM(1)",Hello,Hi there.,neutral',
  `r3,"Where ${HOSTILE} is it, =HYPERLINK(""http://evil"")",Go away.,rude`,
  'r4,Thanks,"You are welcome; +cmd|calc",polite',
  'r5,Any news?,No.,neutral',
  'r6,Refund?,Done.,polite',
  '',
].join('\n');

let dir: string;

beforeAll(async () => {
  dir = await tempDir('assay-hostile-');
  await mkdir(join(dir, 'prompts'));
  await copyFile(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
  await writeFile(join(dir, 'replies.csv'), DATASET);
});

async function suite(name: string, backend: string, run: Record<string, unknown> = {}): Promise<string> {
  const path = join(dir, `${name}.suite.json`);
  await writeFile(
    path,
    JSON.stringify({
      version: 1,
      name,
      task: 'judge',
      dataset: { path: 'replies.csv', columns: { gold: 'human' } },
      judge: { prompt: 'prompts/tone.md', labels: ['polite', 'neutral', 'rude'] },
      backends: [backend],
      run,
    }),
  );
  return path;
}

describe('hostile names, cells and settings', { timeout: 180_000 }, () => {
  it('progress on a pipe shows a backend name’s escapes visibly, and labeled.csv runs no formula', async () => {
    const out = join(dir, 'out-progress');
    // Progress on (the default): stderr is a pipe here, so one line every 10 %.
    const run = await assayCli(
      ['run', await suite('hostile-progress', `sim:gold${HOSTILE}`), '--out', out],
      dir,
    );
    expect(run.stderr).toContain('to score with sim:gold');
    expect(RAW_CONTROL.exec(run.stderr)?.[0], 'stderr holds a raw control character').toBeUndefined();
    expect(run.stderr).toContain(String.raw`sim:gold\x1b]0;pwned\x07\x1b[2J`);

    const csv = await readFile(join(out, 'labeled.csv'), 'utf8');
    expect(
      RAW_CONTROL.exec(csv.replace(/\r\n/g, '\n'))?.[0],
      'labeled.csv holds a raw control character',
    ).toBe(undefined);
    // No formula starts after a separator a spreadsheet might split on, nor at a cell's start.
    expect(csv).not.toMatch(/[,;\t\n]\s*[=@+]/);
    expect(csv).toContain(`"fine;'=1+2"`);
    expect(csv).toContain(`"ok\t'@SUM(1)"`);
    expect(csv).toContain(`"You are welcome; '+cmd|calc"`);
    expect(csv).toContain(String.raw`Where \x1b]0;pwned\x07\x1b[2J is it, '=HYPERLINK(""http://evil"")`);
  });

  it('refuses a base URL holding a password, once, without printing the password', async () => {
    const out = join(dir, 'out-credentials');
    const failed = await assayCli(
      [
        'run',
        await suite('hostile-url', 'openai:gpt-4o-mini', { cache: false }),
        '--out',
        out,
        '--no-progress',
      ],
      dir,
      {
        OPENAI_API_KEY: 'sk-test-not-a-real-key-000',
        OPENAI_BASE_URL: 'http://user:hunter2pass@127.0.0.1:9/v1',
      },
    ).then(
      () => undefined,
      (error: { stdout: string; stderr: string; code: number }) => error,
    );
    expect(failed, 'the run should have been refused').toBeDefined();
    expect(failed!.code).toBe(1);
    expect(failed!.stderr).toMatch(/OPENAI_BASE_URL .*user name or password/);
    expect(`${failed!.stdout}${failed!.stderr}`).not.toContain('hunter2pass');
    // Refused before the run began: no folder, no results, no retries.
    await expect(lstat(join(out, 'results.jsonl'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses to append through a results.jsonl that is a symbolic link', async () => {
    const out = join(dir, 'out-link');
    await mkdir(out);
    const target = join(dir, 'elsewhere.jsonl');
    await writeFile(target, '');
    await symlink(target, join(out, 'results.jsonl'));
    const failed = await assayCli(
      ['run', await suite('hostile-link', 'sim:gold'), '--out', out, '--no-progress'],
      dir,
    ).then(
      () => undefined,
      (error: { stderr: string; code: number }) => error,
    );
    expect(failed, 'the run should have been refused').toBeDefined();
    expect(failed!.stderr).toMatch(/results\.jsonl is a symbolic link/);
    expect(await readFile(target, 'utf8')).toBe('');
  });
});
