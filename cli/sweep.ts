import { resolve } from 'node:path';
import { FolderBlobStore } from '../shared/adapters/local/folder-blob-store.js';
import { LocalRunHistory } from '../shared/adapters/local/local-run-history.js';
import { LocalSweepStore } from '../shared/adapters/local/local-sweeps.js';
import { SweepExistsError } from '../shared/model/errors.js';
import type { RunRecord } from '../shared/model/model.js';
import type { Report } from '../shared/model/report.js';
import { type Suite, validateSuite, variantSuites } from '../shared/registry/suite.js';
import { prepareSweep, type SweepReport } from '../shared/sweeps/sweep.js';
import { whyNotWritten } from '../shared/use-cases/aggregate-run.js';
import { aggregateSweep, writeSweepReport } from '../shared/use-cases/aggregate-sweep.js';
import { type DatasetSource, type RunSettings, runSuite } from './local-run.js';

export interface LocalSweepResult {
  /** The sweep's folder: sweep.json, sweep.txt. */
  outDir: string;
  /** The folder holding the variants' run folders (`outDir` itself when the sweep was given one). */
  runsDir: string;
  sweep: SweepReport;
  runs: { variant: string; run: RunRecord; outDir: string; report: Report; unscorable?: string }[];
}

/**
 * Why the sweep cannot stand: the variants that scored nothing, each with its reason. The
 * command ends with an error on it (after the sweep's summary), as a run that scored nothing does.
 */
export function unscorableVariants(result: LocalSweepResult): string | undefined {
  const empty = result.runs.filter((r) => r.unscorable !== undefined);
  if (empty.length === 0) return undefined;
  return empty.map((r) => `variant ${r.variant}: ${r.unscorable}`).join('\n');
}

/**
 * A sweep in the local shell: each variant runs as a run of its own (resumable and cached like
 * any run: variants that share a backend and prompt share cached answers), then the sweep is
 * aggregated. Given `outDir`, that folder holds the whole sweep: sweep.json, sweep.txt and a
 * run folder per variant. Otherwise the variants' run folders go to the runs folder (`runsDir`,
 * default `runs`) beside the suite's other runs, and the sweep's files to `<runsDir>/<sweepId>/`.
 * Either way a variant's report compares with the previous run of that variant in the same
 * folder, and running the same sweep again resumes its runs and rebuilds its report.
 */
export async function runSweep(
  suite: Suite,
  suiteDir: string,
  /** The rows: the same for every variant, or each variant's own (`assay score` by configuration). */
  dataset: DatasetSource | ((variant: string) => DatasetSource),
  options: RunSettings & { onVariant?: (name: string, index: number, count: number) => void },
): Promise<LocalSweepResult> {
  const datasetOf = typeof dataset === 'function' ? dataset : () => dataset;
  const variants = variantSuites(suite);
  const sweepDir = options.outDir === undefined ? undefined : resolve(options.outDir);
  const runsDir = sweepDir ?? resolve(options.runsDir ?? 'runs');
  const runs: LocalSweepResult['runs'] = [];
  for (const [i, { variant, suite: variantSuite }] of variants.entries()) {
    options.onVariant?.(variant.name, i, variants.length);
    const done = await runSuite(variantSuite, suiteDir, datasetOf(variant.name), {
      ...options,
      outDir: undefined,
      runsDir,
    });
    if (done.outcome.status !== 'written')
      throw new Error(`variant ${variant.name}: ${whyNotWritten(done.outcome)}`);
    runs.push({
      variant: variant.name,
      run: done.run,
      outDir: done.outDir,
      report: done.outcome.report,
      ...(done.unscorable ? { unscorable: done.unscorable } : {}),
    });
  }

  const sweeps = sweepDir ? new LocalSweepStore(sweepDir, { oneSweep: true }) : new LocalSweepStore(runsDir);
  const record = prepareSweep(
    suite,
    runs.map(({ variant, run }) => ({ variant, runId: run.runId })),
    { datasetKey: datasetOf(runs[0]!.variant).key, reportPrefix: '' },
  );
  await sweeps.createSweep(record).catch((error: unknown) => {
    // The same sweep run again: its record stays, and its report is rebuilt below.
    if (!(error instanceof SweepExistsError)) throw error;
  });
  const outDir = sweeps.dirOf(record.sweepId);
  const deps = {
    sweeps,
    runs: new LocalRunHistory(runsDir, undefined, { checkSuite: validateSuite }),
    reports: new FolderBlobStore(outDir),
  };
  // A sweep that was already aggregated (run again after it finished) just gets its report rebuilt.
  const aggregated = await aggregateSweep(deps, record.sweepId);
  const outcome = aggregated.status === 'written' ? aggregated : await writeSweepReport(deps, record.sweepId);
  return { outDir, runsDir, sweep: outcome.report, runs };
}
