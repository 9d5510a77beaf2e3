/**
 * Hostile dataset files (`npx tsx bench/hostile-files.ts`): the peak memory of the `assay`
 * process that reads each of the small hostile files of test/fakes/hostile-files.ts (a Parquet
 * file whose pages declare 1.9 GB, a gzip of one 1.5 GB line, a JSON element nested 100,000
 * deep, a CSV of a million columns, a JSONL line of 100 MB), in both shells: `assay run`, and
 * `assay cloud` (the Lambda handlers on moto), where the figure that matters is the ingest
 * container's, which counts its memory outside the JS heap as Lambda does; the whole process,
 * which holds a container per function that ran, is given beside it. Each figure is read
 * against the 300 MB bound, as a ratio. Peak RSS is the child's own (process.resourceUsage),
 * so buffers and WebAssembly memory count.
 *
 * Results go to bench/results/hostile-files.json.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  HOSTILE_FILES,
  type HostileKind,
  PEAK_RSS_BOUND_BYTES,
  runHostile,
} from '../test/fakes/hostile-files.js';
import { ROOT } from './parts/data.js';
import type { Check } from './parts/table.js';

const MB = 1024 * 1024;

export interface HostileFigure {
  file: string;
  shell: 'local' | 'cloud';
  /** The CLI process's peak RSS, MB. */
  peakRssMb: number;
  /** `assay cloud`: the most any ingest container held (its JS heap and outside it), MB. */
  ingestMaxMemoryMb?: number;
  /** The bounded figure (local: the process; cloud: the ingest container) over 300 MB. */
  ratioToBound: number;
  /** The error the run's failed row gives (its first line in errors.txt). */
  error: string;
  seconds: number;
}

/** The first failed row's line of a run's errors.txt. */
async function firstError(reportDir: string): Promise<string> {
  const text = await readFile(join(reportDir, 'errors.txt'), 'utf8').catch(() => '');
  return (
    text
      .split('\n')
      .find((line) => /maxRecordBytes|maxJsonDepth|maxColumns|maxGzip|maxParquet/.test(line))
      ?.trim() ?? ''
  );
}

export async function hostileFiles(): Promise<{ figures: HostileFigure[]; checks: Check[] }> {
  // dist/ as the sources are now: the runs below start the built CLI.
  await promisify(execFile)(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT });
  const figures: HostileFigure[] = [];
  for (const shell of ['local', 'cloud'] as const) {
    for (const kind of Object.keys(HOSTILE_FILES) as HostileKind[]) {
      const dir = await mkdtemp(join(tmpdir(), `assay-bench-hostile-${kind}-`));
      const started = performance.now();
      const run = await runHostile(kind, shell, dir);
      const seconds = +((performance.now() - started) / 1000).toFixed(1);
      const ingest = [...`${run.stdout}${run.stderr}`.matchAll(/^ {2}ingest .*max memory (\d+) MB\)$/gm)].map(
        (match) => Number(match[1]),
      );
      const ingestMaxMemoryMb = ingest.length > 0 ? Math.max(...ingest) : undefined;
      const bounded = shell === 'local' ? run.peakRss / MB : (ingestMaxMemoryMb ?? Number.NaN);
      figures.push({
        file: HOSTILE_FILES[kind],
        shell,
        peakRssMb: Math.round(run.peakRss / MB),
        ...(ingestMaxMemoryMb === undefined ? {} : { ingestMaxMemoryMb }),
        ratioToBound: +(bounded / (PEAK_RSS_BOUND_BYTES / MB)).toFixed(2),
        error: await firstError(run.reportDir),
        seconds,
      });
      await rm(dir, { recursive: true, force: true });
    }
  }
  const checks: Check[] = figures.map((f) => ({
    figure: `hostile ${f.file} (${f.shell === 'local' ? 'assay run, process' : 'assay cloud, ingest container'})`,
    measured: `${f.shell === 'local' ? f.peakRssMb : f.ingestMaxMemoryMb} MB peak (${f.ratioToBound}× the bound)${f.shell === 'cloud' ? `; process ${f.peakRssMb} MB` : ''}`,
    bound: '300 MB',
    target: '< 1.0× and an input error naming the file',
    pass: f.ratioToBound < 1 && f.error !== '',
  }));
  return { figures, checks };
}

async function main() {
  const { figures, checks } = await hostileFiles();
  const dir = join(ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'hostile-files.json'),
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, boundMb: PEAK_RSS_BOUND_BYTES / MB, figures }, null, 2)}\n`,
  );
  for (const check of checks)
    process.stdout.write(`${check.pass ? 'PASS' : 'FAIL'}  ${check.figure}: ${check.measured}\n`);
  process.stdout.write('written to bench/results/hostile-files.json\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main();
}
