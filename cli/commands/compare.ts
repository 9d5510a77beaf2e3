/** `assay compare`: two runs of the same task item by item. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FolderBlobStore } from '../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../shared/adapters/local/local-run-store.js';
import { visible } from '../../shared/lib/format.js';
import { validateSuite } from '../../shared/registry/suite.js';
import { comparisonJunit } from '../../shared/reports/ci/junit.js';
import { comparisonMarkdown } from '../../shared/reports/ci/markdown.js';
import { compareRuns, type RunSide } from '../../shared/reports/compare-runs.js';
import {
  renderComparisonText,
  SCREEN_FLIPPED_LIMIT,
  writeComparisonFiles,
} from '../../shared/reports/comparison.js';
import { type CiReportFlags, writeCiReports } from '../ci-reports.js';

/** A local run folder as one side of a comparison: run.json (the record) and results.jsonl. */
async function loadRunFolder(dir: string): Promise<RunSide> {
  const text = await readFile(join(dir, 'run.json'), 'utf8').catch(() => undefined);
  if (text === undefined) throw new Error(`not a run folder: ${dir} (no run.json)`);
  let runId: string | undefined;
  try {
    runId = (JSON.parse(text) as { runId?: string }).runId;
  } catch {
    // reported below
  }
  if (typeof runId !== 'string') throw new Error(`not a run folder: ${dir} (run.json has no runId)`);
  const store = new LocalRunStore(dir, { checkSuite: validateSuite });
  const run = await store.getRun(runId);
  if (!run) throw new Error(`not a run folder: ${dir} (run ${runId} cannot be read)`);
  // Results written by an earlier Assay are upgraded by the codec, or refused saying why.
  const results: RunSide['results'] = [];
  for await (const result of store.results(runId)) results.push(result);
  return { run, results };
}

export async function compareCommand(
  baseDir: string,
  candidateDir: string,
  flags: { out?: string; json?: boolean; limit?: number } & CiReportFlags,
): Promise<void> {
  const base = await loadRunFolder(baseDir);
  const candidate = await loadRunFolder(candidateDir);
  if (base.run.suite.task !== candidate.run.suite.task) {
    throw new Error(
      `cannot compare runs of different tasks: ${base.run.suite.task} (${baseDir}) vs ${candidate.run.suite.task} (${candidateDir})`,
    );
  }
  if (base.run.datasetKey !== candidate.run.datasetKey) {
    process.stderr.write(
      visible(
        `warning: the runs used different datasets (${base.run.datasetKey} vs ${candidate.run.datasetKey}); only items with the same id are paired\n`,
      ),
    );
  }
  const comparison = compareRuns(base, candidate);
  process.stdout.write(
    flags.json
      ? `${JSON.stringify(comparison, null, 2)}\n`
      : // The screen shows the first flipped items; the files written with --out have them all.
        renderComparisonText(comparison, {
          limit: flags.limit ?? SCREEN_FLIPPED_LIMIT,
          allIn: flags.out && join(flags.out, 'comparison.txt'),
        }),
  );
  if (flags.out) {
    const keys = await writeComparisonFiles(new FolderBlobStore(flags.out), '', comparison);
    process.stderr.write(`wrote ${keys.map((k) => join(flags.out!, k)).join(', ')}\n`);
  }
  await writeCiReports(flags, {
    junit: () => comparisonJunit(comparison),
    markdown: () => comparisonMarkdown(comparison),
  });
}
