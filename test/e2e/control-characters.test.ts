/**
 * Terminal escape sequences in the data, as a user meets them: a dataset whose ids and texts
 * carry an OSC 8 hyperlink (`ESC ] 8 ;; url BEL`), a clear-screen CSI (`ESC [ 2 J`), a carriage
 * return and a backspace, judged by a model (the real OpenAI SDK against the HTTP fake) whose
 * reasons and answers carry them too. No text file of the run or of `assay compare`, and nothing
 * `assay run`, `assay compare` or `assay leaderboard` prints, holds a raw control byte: each is
 * written visibly (`\x1b`), so that the data is still there to read.
 */
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { assayCli, REPO, tempDir } from '../helpers.js';

const LINK = '\x1b]8;;http://evil\x07click\x1b]8;;\x07';
const CLEAR = '\x1b[2J';
/** Every control character a text output must not carry raw (tab and line feed are the formats' own). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** 12 replies: ids, messages and replies carrying the sequences; gold by turns. */
function dataset(): string {
  const gold = ['polite', 'neutral', 'rude'];
  const rows = Array.from({ length: 12 }, (_, i) => {
    const id = i % 2 === 0 ? `r${i}${LINK}` : `r${i}${CLEAR}\r\b`;
    return [id, `Where is order ${i}?${CLEAR}`, `It shipped.${LINK}`, gold[i % 3]].join(',');
  });
  return `id,customer_message,reply,human\n${rows.join('\n')}\n`;
}

let fake: VendorFake;
let dir: string;

beforeAll(async () => {
  // gpt-4o-mini answers "polite" with a hostile reason; gpt-4o answers by the order number,
  // once with a label no suite declares (a failure whose message and raw answer carry it).
  fake = await startVendorFake(({ model, promptText }) => {
    const n = Number(/order (\d+)/.exec(promptText)?.[1] ?? 0);
    if (model === 'gpt-4o-mini') return { text: JSON.stringify({ label: 'polite', reason: `fine ${LINK}` }) };
    if (n === 5) return { text: `not json ${CLEAR}${LINK}` };
    return { text: JSON.stringify({ label: ['neutral', 'rude'][n % 2], reason: `${CLEAR}bad\x1b[1A` }) };
  });
  dir = await tempDir('assay-control-');
  await mkdir(join(dir, 'prompts'));
  await copyFile(join(REPO, 'examples', 'prompts', 'tone.md'), join(dir, 'prompts', 'tone.md'));
  await writeFile(join(dir, 'replies.csv'), dataset());
});
afterAll(async () => {
  await fake?.close();
});

async function suite(name: string, backend: string): Promise<string> {
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
      run: { cache: false, maxAttempts: 1 },
    }),
  );
  return path;
}

/** Every .txt file under `folder`, by name. */
async function textFiles(folder: string): Promise<Record<string, string>> {
  const names = (await readdir(folder)).filter((name) => name.endsWith('.txt'));
  return Object.fromEntries(
    await Promise.all(names.map(async (name) => [name, await readFile(join(folder, name), 'utf8')] as const)),
  );
}

describe('control characters in the data', { timeout: 180_000 }, () => {
  it('are written visibly in every text file and everything the CLI prints', async () => {
    const a = join(dir, 'runs', 'a');
    const b = join(dir, 'runs', 'b');
    const cmp = join(dir, 'cmp');
    const runA = await assayCli(
      ['run', await suite('tone-a', 'openai:gpt-4o-mini'), '--out', a, '--no-progress'],
      dir,
      fake.env,
    );
    const runB = await assayCli(
      ['run', await suite('tone-b', 'openai:gpt-4o'), '--out', b, '--no-progress'],
      dir,
      fake.env,
    );
    const compare = await assayCli(['compare', a, b, '--out', cmp], dir);
    const leaderboard = await assayCli(['leaderboard', '--runs', join(dir, 'runs')], dir);

    const files = { ...(await textFiles(a)), ...(await textFiles(cmp)) };
    for (const name of ['report.txt', 'errors.txt', 'correct.txt', 'comparison.txt'])
      expect(Object.keys(files)).toContain(name);
    const b_files = await textFiles(b);
    const outputs: Record<string, string> = {
      ...Object.fromEntries(Object.entries(files).map(([k, v]) => [`a/${k}`, v])),
      ...Object.fromEntries(Object.entries(b_files).map(([k, v]) => [`b/${k}`, v])),
      'run a stdout': runA.stdout,
      'run b stdout': runB.stdout,
      'compare stdout': compare.stdout,
      'compare stderr': compare.stderr,
      'leaderboard stdout': leaderboard.stdout,
    };
    for (const [name, text] of Object.entries(outputs)) {
      expect(RAW_CONTROL.exec(text)?.[0], `${name} holds a raw control character`).toBeUndefined();
    }

    // The data is still there, written visibly: the ids, the inputs, the reasons, the raw answer.
    const shownLink = String.raw`\x1b]8;;http://evil\x07click\x1b]8;;\x07`;
    expect(files['correct.txt']).toContain(`[r0${shownLink}]`);
    expect(files['correct.txt']).toContain(`reason: fine ${shownLink}`);
    expect(files['correct.txt']).toContain(String.raw`customer_message: Where is order 0?\x1b[2J`);
    expect(files['errors.txt']).toContain(String.raw`[r1\x1b[2J\x0d\x08]`);
    expect(b_files['errors.txt']).toContain(String.raw`reason: \x1b[2Jbad\x1b[1A`);
    expect(b_files['errors.txt']).toContain(String.raw`not json \x1b[2J`);
    expect(files['comparison.txt']).toContain(`[r0${shownLink}]`);
    expect(compare.stdout).toContain(String.raw`[r1\x1b[2J\x0d\x08]`);
  });
});
