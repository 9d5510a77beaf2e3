/**
 * Runs as a user runs them, through the CLI binary: a `--fresh` run is the one a later plain
 * `assay run` (or `--changed`) resumes, and Ctrl-C stops a run cleanly, saying how to resume it,
 * and the next `assay run` scores only what was left.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { exited, REPO, spawnAssay, suiteInput, tempDir } from '../helpers.js';

const GOLD_CSV = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');
const noKeys = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_API_KEY$/.test(k)));

/** `node bin/assay.mjs …` in `cwd`, with its LLM cache there. */
const assay = (args: string[], cwd: string) =>
  promisify(execFile)(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args], {
    cwd,
    env: { ...noKeys, ASSAY_CACHE_DIR: join(cwd, 'cache') },
  });

const runFolders = async (dir: string) =>
  (await readdir(join(dir, 'runs'), { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();

const resultIds = async (runDir: string) =>
  (await readFile(join(runDir, 'results.jsonl'), 'utf8'))
    .split('\n')
    .filter((l) => l.endsWith('}'))
    .map((l) => JSON.parse(l).itemId as string);

describe('assay run after --fresh', { timeout: 180_000 }, () => {
  it('resumes the fresh run, not the run from before it, plainly and with --changed', async () => {
    const dir = await tempDir('assay-fresh-');
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify(suiteInput({ name: 'fresh-check', dataset: { path: GOLD_CSV } })),
    );
    await assay(['run', 'suite.json', '--no-progress'], dir);
    const [older] = await runFolders(dir);
    // Distinct start times, whatever the clock's resolution.
    await new Promise((done) => setTimeout(done, 20));
    await assay(['run', 'suite.json', '--fresh', '--no-progress'], dir);
    const fresh = (await runFolders(dir)).find((name) => name !== older)!;
    expect(fresh).toBeDefined();

    const plain = await assay(['run', 'suite.json'], dir);
    expect(plain.stdout).toContain(join('runs', fresh, 'report.txt'));
    expect(plain.stderr).toContain(`run ${fresh} `);
    expect(await runFolders(dir)).toEqual([older!, fresh].sort());

    const changed = await assay(['run', '--changed', 'suite.json'], dir);
    expect(changed.stdout).toContain(`prompts unchanged since ${fresh}`);
  });
});

describe('Ctrl-C on assay run', { timeout: 180_000 }, () => {
  it('stops taking items, records those in flight, says how to resume, exits 130; the next run resumes', async () => {
    const dir = await tempDir('assay-stop-');
    const suitePath = join(dir, 'suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'stop-check',
        task: 'qa',
        dataset: { path: join(REPO, 'examples', 'data', 'physics_questions_50.jsonl') },
        backends: ['openai:gpt-4o-mini'],
        // Slow enough answers that the run is far from its end when it is stopped.
        sim: { latencyMs: 400 },
        run: { concurrency: 2 },
      }),
    );
    const args = ['run', suitePath, '--simulate', '--runs', join(dir, 'runs')];
    const child = spawnAssay(args, { ASSAY_CACHE_DIR: join(dir, 'cache') });
    const ended = exited(child);
    let progress = '';
    await new Promise<void>((seen) => {
      child.stderr!.on('data', (chunk) => {
        progress += chunk;
        if (/ \d+\/50 /.test(progress)) seen();
      });
    });
    child.kill('SIGINT');
    const { code, output } = await ended;
    expect(code).toBe(130);
    const [runId] = await runFolders(dir);
    const stopped = output.split('\n').filter((l) => l.includes('resumes it'));
    // The command as typed (`npx assay` under npx), with its flags: the same run again.
    expect(stopped).toEqual([expect.stringContaining(`assay ${args.join(' ')}\` resumes it`)]);
    expect(stopped[0]).toContain(`stopped run ${runId!} `);

    const recorded = await resultIds(join(dir, 'runs', runId!));
    expect(recorded.length).toBeGreaterThan(0);
    expect(recorded.length).toBeLessThan(50);

    // More in flight: the rest finishes sooner (concurrency is not part of the run's id).
    const again = await promisify(execFile)(
      process.execPath,
      [join(REPO, 'bin', 'assay.mjs'), ...args, '-c', '8'],
      {
        cwd: REPO,
        env: { ...noKeys, ASSAY_CACHE_DIR: join(dir, 'cache') },
      },
    );
    expect(again.stderr).toContain(`${recorded.length} already done, ${50 - recorded.length} to score`);
    const all = await resultIds(join(dir, 'runs', runId!));
    // Every item once: none scored twice.
    expect(all.length).toBe(50);
    expect(new Set(all).size).toBe(50);
  });
});
