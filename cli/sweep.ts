import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { FolderBlobStore } from '../shared/adapters/local/folder-blob-store.js';
import { LocalRunHistory } from '../shared/adapters/local/local-run-history.js';
import { LocalRunStore } from '../shared/adapters/local/local-run-store.js';
import { LocalSweepStore } from '../shared/adapters/local/local-sweeps.js';
import { InputError, SweepExistsError } from '../shared/model/errors.js';
import type { ItemResult, RunRecord } from '../shared/model/model.js';
import type { Report } from '../shared/model/report.js';
import { type Suite, validateSuite, variantSuites } from '../shared/registry/suite.js';
import {
  SequentialGate,
  SequentialRunControl,
  sequentialPlan,
  sequentialSpec,
} from '../shared/sweeps/sequential.js';
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
  const sequential = sequentialSweep(suite, variants, options);
  const runs: LocalSweepResult['runs'] = [];
  // A sequential gate scores the baseline first: paired conditions read its results.
  const order = sequential
    ? [...variants].sort(
        (a, b) =>
          Number(b.variant.name === sequential.baseline) - Number(a.variant.name === sequential.baseline),
      )
    : variants;
  for (const [i, { variant, suite: variantSuite }] of order.entries()) {
    options.onVariant?.(variant.name, i, variants.length);
    const source = datasetOf(variant.name);
    const control = sequential?.controlFor(variant.name, variantSuite);
    const done = await runSuite(variantSuite, suiteDir, control?.dataset(source) ?? source, {
      ...options,
      outDir: undefined,
      runsDir,
      ...(control ? { sequential: control.control } : {}),
    });
    if (done.outcome.status !== 'written')
      throw new Error(`variant ${variant.name}: ${whyNotWritten(done.outcome)}`);
    if (sequential && variant.name === sequential.baseline)
      await sequential.baselineDone(done.outDir, done.run.runId);
    runs.push({
      variant: variant.name,
      run: done.run,
      outDir: done.outDir,
      report: done.outcome.report,
      ...(done.unscorable ? { unscorable: done.unscorable } : {}),
    });
  }
  // The sweep's record and report list the variants in the suite's order.
  runs.sort(
    (a, b) =>
      variants.findIndex((v) => v.variant.name === a.variant) -
      variants.findIndex((v) => v.variant.name === b.variant),
  );

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
    runs: new LocalRunHistory(runsDir, validateSuite),
    reports: new FolderBlobStore(outDir),
  };
  // A sweep that was already aggregated (run again after it finished) just gets its report rebuilt.
  const aggregated = await aggregateSweep(deps, record.sweepId);
  const outcome = aggregated.status === 'written' ? aggregated : await writeSweepReport(deps, record.sweepId);
  return { outDir, runsDir, sweep: outcome.report, runs };
}

/**
 * A sweep with `gate.sequential`: the baseline is scored first, in full and in the gate's
 * order; every other variant in the same order, stopping as soon as its gate is settled (see
 * shared/sweeps/sequential.ts). A sequential variant's run is a run of its own: its dataset
 * version carries the gate and the baseline run it was settled against, so a plain run of the
 * same variant never reuses its partial results, nor it theirs; running the sweep again
 * resumes it and settles at the same item.
 */
function sequentialSweep(
  suite: Suite,
  variants: ReturnType<typeof variantSuites>,
  options: RunSettings,
):
  | {
      baseline: string;
      controlFor(
        variant: string,
        variantSuite: Suite,
      ): { control: SequentialRunControl; dataset(source: DatasetSource): DatasetSource };
      baselineDone(outDir: string, runId: string): Promise<void>;
    }
  | undefined {
  const spec = sequentialSpec(suite.gate, suite.run.sample?.seed);
  if (!spec || variants.length === 0) return undefined;
  for (const { variant, suite: variantSuite } of variants) {
    if ((options.lane ?? variantSuite.run.lane) === 'batch')
      throw new InputError(
        `variant ${variant.name}: gate.sequential scores items one after another and stops early; the batch lane sends them all at once: use run.lane "sync"`,
      );
    // A condition the variant's scorers cannot follow fails here, before anything is paid for.
    sequentialPlan(spec, variantSuite);
  }
  const baseline = suite.baseline ?? variants[0]!.variant.name;
  let baselineResults: ItemResult[] = [];
  let baselineRun = '';
  return {
    baseline,
    controlFor(variant, variantSuite) {
      if (variant === baseline) return { control: new SequentialRunControl(spec.seed), dataset: (s) => s };
      const plan = sequentialPlan(spec, variantSuite);
      const byId = new Map(baselineResults.map((r) => [r.itemId, r]));
      const tag = createHash('sha256')
        .update(JSON.stringify({ spec, baselineRun }))
        .digest('hex')
        .slice(0, 12);
      return {
        control: new SequentialRunControl(
          spec.seed,
          (population) => new SequentialGate(plan, population, byId),
        ),
        dataset: (source) => ({ ...source, version: `${source.version}+sequential-${tag}` }),
      };
    },
    async baselineDone(outDir, runId) {
      baselineRun = runId;
      baselineResults = [];
      const store = new LocalRunStore(outDir, { checkSuite: validateSuite });
      for await (const result of store.results(runId)) baselineResults.push(result);
    },
  };
}
