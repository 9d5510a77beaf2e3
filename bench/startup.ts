/**
 * Cold start of the `assay` command: `node bin/assay.mjs --help` and `--version` against a
 * bare `node -e 0`, each a fresh process, in interleaved rounds (one of each per round) so that
 * the machine's load weighs on all three alike; medians, and the ratio to the bare start.
 * In this clone bin/ also checks that dist/ is newer than the sources (an installed package
 * has no sources and skips that): `node dist/main.js --help` is timed too, as installed.
 *
 *   npx tsx bench/startup.ts [rounds]     (default 15) → bench/results/startup.json
 *
 * `npm run bench` runs it as one of its parts.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ROOT } from './parts/data.js';

const exec = promisify(execFile);

/** The --help start may take at most this many bare node starts. */
export const STARTUP_TARGET_RATIO = 8;

const COMMANDS = {
  bare: ['-e', '0'],
  help: [join(ROOT, 'bin', 'assay.mjs'), '--help'],
  version: [join(ROOT, 'bin', 'assay.mjs'), '--version'],
  installedHelp: [join(ROOT, 'dist', 'main.js'), '--help'],
} as const;
type Name = keyof typeof COMMANDS;

export interface StartupFigures {
  rounds: number;
  /** Median wall time of a fresh process, ms. */
  medianMs: Record<Name, number>;
  /** Median over the bare node start. */
  ratio: { help: number; version: number; installedHelp: number };
  targetRatio: number;
  pass: boolean;
}

async function timeOnce(args: readonly string[]): Promise<number> {
  const started = performance.now();
  await exec(process.execPath, [...args], { cwd: ROOT });
  return performance.now() - started;
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export async function startupFigures(rounds = 15): Promise<StartupFigures> {
  // dist/ as the sources are now: no run below pays for a build.
  await exec(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT });
  const names = Object.keys(COMMANDS) as Name[];
  // One unmeasured round: the files are in the page cache before anything is timed.
  for (const name of names) await timeOnce(COMMANDS[name]);
  const times = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<Name, number[]>;
  for (let round = 0; round < rounds; round += 1) {
    // A different order each round, so that no command always follows the same one.
    const order = names.map((_, i) => names[(i + round) % names.length]!);
    for (const name of order) times[name].push(await timeOnce(COMMANDS[name]));
  }
  const medianMs = Object.fromEntries(names.map((n) => [n, +median(times[n]).toFixed(1)])) as Record<
    Name,
    number
  >;
  const ratioOf = (name: Name) => +(medianMs[name] / medianMs.bare).toFixed(2);
  const ratio = {
    help: ratioOf('help'),
    version: ratioOf('version'),
    installedHelp: ratioOf('installedHelp'),
  };
  return {
    rounds,
    medianMs,
    ratio,
    targetRatio: STARTUP_TARGET_RATIO,
    pass: ratio.help <= STARTUP_TARGET_RATIO,
  };
}

export function renderStartup(f: StartupFigures): string {
  return [
    `CLI cold start, median of ${f.rounds} interleaved rounds (fresh processes):`,
    `  node -e 0                   ${f.medianMs.bare} ms`,
    `  node bin/assay.mjs --help     ${f.medianMs.help} ms  (${f.ratio.help}× bare; target ≤ ${f.targetRatio}×: ${f.pass ? 'PASS' : 'FAIL'})`,
    `  node bin/assay.mjs --version  ${f.medianMs.version} ms  (${f.ratio.version}× bare)`,
    `  node dist/main.js --help      ${f.medianMs.installedHelp} ms  (${f.ratio.installedHelp}× bare; as installed, no source check)`,
    '',
  ].join('\n');
}

async function main() {
  const rounds = Number(process.argv[2] ?? 15);
  if (!Number.isInteger(rounds) || rounds <= 0)
    throw new Error(`rounds must be a positive integer, not ${process.argv[2]}`);
  const figures = await startupFigures(rounds);
  const out = join(ROOT, 'bench', 'results', 'startup.json');
  await mkdir(join(ROOT, 'bench', 'results'), { recursive: true });
  await writeFile(
    out,
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, ...figures }, null, 2)}\n`,
  );
  process.stdout.write(`${renderStartup(figures)}written to bench/results/startup.json\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main();
}
