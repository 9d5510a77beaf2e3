/**
 * One suite run in both shells, for the tests that show `assay cloud` takes the suites `assay
 * run` takes.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { runLocalCloud } from '../../cli/cloud/local-cloud.js';
import { runLocal } from '../../cli/local-run.js';
import { EXAMPLE_DATA } from '../helpers.js';

/**
 * Writes the first `rows` rows of the English gold to `dataFile` and a GEC suite `name` at
 * `suiteFile` (both below `dir`) reading it as `datasetPath`, then runs it in both shells.
 */
export async function runInBothShells(options: {
  dir: string;
  rows: number;
  dataFile: string;
  suiteFile: string;
  name: string;
  datasetPath: string;
  /** The suite's `run` block (e.g. `{ repeats: 3 }`); default none. */
  run?: Record<string, unknown>;
}) {
  const { dir } = options;
  const gold = (await readFile(join(EXAMPLE_DATA, 'gold_tp_fp3_fp2_fp1_en.csv'), 'utf8'))
    .split('\n')
    .slice(0, options.rows + 1)
    .join('\n');
  const dataFile = join(dir, options.dataFile);
  await mkdir(dirname(dataFile), { recursive: true });
  await writeFile(dataFile, `${gold}\n`);
  const suitePath = join(dir, options.suiteFile);
  await mkdir(dirname(suitePath), { recursive: true });
  await writeFile(
    suitePath,
    JSON.stringify({
      version: 1,
      name: options.name,
      task: 'gec',
      judge: 'feedback',
      method: 'baseline',
      dataset: { path: options.datasetPath },
      backends: ['sim:gold'],
      ...(options.run ? { run: options.run } : {}),
    }),
  );

  return runSuiteInBothShells({ dir, suitePath });
}

/** Runs the suite at `suitePath` in both shells, their run folders and cache below `dir`. */
export async function runSuiteInBothShells({ dir, suitePath }: { dir: string; suitePath: string }) {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  for (const name of Object.keys(process.env)) if (name.endsWith('_API_KEY')) delete process.env[name];
  const local = await runLocal({
    suitePath,
    outDir: join(dir, 'local'),
    cachePath: join(dir, 'cache.jsonl'),
  });
  const lines: string[] = [];
  const cloud = await runLocalCloud({ suitePath, outDir: join(dir, 'cloud'), onLog: (l) => lines.push(l) });
  const localReport = local.outcome.status === 'written' ? local.outcome.report : undefined;
  return { localReport, cloudReport: cloud.report, lines };
}
