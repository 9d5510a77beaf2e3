import { RunNotFoundError, SweepNotFoundError } from '../model/errors.js';
import type { ItemResult, RunRecord } from '../model/model.js';
import type { SweepRecord } from '../model/sweep-record.js';
import type { BlobStore, RunHistory, SweepStore } from '../ports/ports.js';
import { reportOrder } from '../reports/report.js';
import { buildSweepReport, type SweepReport, type VariantRun } from '../sweeps/sweep.js';
import { writeSweepFiles } from '../sweeps/sweep-files.js';

export interface AggregateSweepDeps {
  sweeps: SweepStore;
  /** Reads the variant runs and their results. */
  runs: RunHistory;
  /** Where sweep files go (the bucket on AWS, the sweep folder locally). */
  reports: BlobStore;
  now?: () => Date;
}

export type AggregateSweepOutcome =
  | { status: 'written'; report: SweepReport; keys: string[] }
  | { status: 'skipped'; reason: string };

/**
 * Once every variant run is done: claims the sweep (exactly one caller wins, however many
 * finished runs and triggers ask), compares the variants with the baseline, evaluates the
 * gate, writes sweep.json / sweep.txt and marks the sweep done.
 */
export async function aggregateSweep(
  deps: AggregateSweepDeps,
  sweepId: string,
): Promise<AggregateSweepOutcome> {
  const sweep = await deps.sweeps.getSweep(sweepId);
  if (!sweep) return { status: 'skipped', reason: `no sweep ${sweepId}` };
  if (sweep.status !== 'running') return { status: 'skipped', reason: `sweep is ${sweep.status}` };
  const runs = await variantRuns(deps, sweep);
  const waiting = sweep.variants.find((_, i) => runs[i]?.status !== 'done');
  if (waiting)
    return { status: 'skipped', reason: `variant ${waiting.name} (${waiting.runId}) is not done yet` };
  if (!(await deps.sweeps.claimSweep(sweepId)))
    return { status: 'skipped', reason: 'claimed by another caller' };
  try {
    const outcome = await writeReport(deps, sweep, runs as RunRecord[]);
    await deps.sweeps.setSweepStatus(sweepId, 'done', outcome.report.finishedAt);
    return outcome;
  } catch (error) {
    // Give the sweep back so a retried trigger can claim it again.
    await deps.sweeps.setSweepStatus(sweepId, 'running');
    throw error;
  }
}

/** Builds and writes the sweep report without claiming (a finished sweep run again locally). */
export async function writeSweepReport(
  deps: AggregateSweepDeps,
  sweepId: string,
): Promise<{ status: 'written'; report: SweepReport; keys: string[] }> {
  const sweep = await deps.sweeps.getSweep(sweepId);
  if (!sweep) throw new SweepNotFoundError(sweepId);
  const runs = await variantRuns(deps, sweep);
  const missing = sweep.variants.find((_, i) => runs[i] === undefined);
  if (missing)
    throw new RunNotFoundError(
      missing.runId,
      `sweep ${sweepId}: variant ${missing.name}'s run ${missing.runId} not found`,
    );
  return writeReport(deps, sweep, runs as RunRecord[]);
}

/** The run record of each variant, in the sweep's order (undefined where there is none). */
function variantRuns(deps: AggregateSweepDeps, sweep: SweepRecord): Promise<(RunRecord | undefined)[]> {
  return Promise.all(sweep.variants.map(({ runId }) => deps.runs.getRun(runId)));
}

/** Reads each variant's results once, builds the sweep report and writes its files. */
async function writeReport(
  deps: AggregateSweepDeps,
  sweep: SweepRecord,
  runs: readonly RunRecord[],
): Promise<{ status: 'written'; report: SweepReport; keys: string[] }> {
  const variants: VariantRun[] = [];
  for (const [i, { name }] of sweep.variants.entries()) {
    const run = runs[i]!;
    const results: ItemResult[] = [];
    for await (const result of deps.runs.results(run.runId)) results.push(result);
    variants.push({ variant: name, run, results: reportOrder(results) });
  }
  const finishedAt = (deps.now ?? (() => new Date()))().toISOString();
  const report = await buildSweepReport(sweep, variants, finishedAt);
  return { status: 'written', report, keys: await writeSweepFiles(deps.reports, sweep.reportPrefix, report) };
}
