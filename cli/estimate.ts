/**
 * `assay estimate SUITE`: the local shell of the estimate (shared/estimate): reads the suite, its
 * prompts and dataset as `assay run` would, and estimates each run it would make (a sweep: each
 * variant). Needs no key and calls nothing.
 */
import { dirname, resolve } from 'node:path';
import { loadPriceTable, withPriceOverride } from '../shared/lib/providers/pricing.js';
import { isSweep } from '../shared/model/variants.js';
import { type Suite, variantSuites } from '../shared/registry/suite.js';
import { type Estimate, estimateRun } from '../shared/use-cases/estimate/estimate.js';
import { loadTokenCounter } from '../shared/use-cases/estimate/tokens.js';
import { prepareRun } from '../shared/use-cases/prepare-run.js';
import {
  applySettings,
  datasetFileOf,
  loadSuiteFile,
  promptStoreFor,
  type RunSettings,
} from './local-run.js';

export interface EstimateSettings
  extends Pick<RunSettings, 'backends' | 'concurrency' | 'sample' | 'pricesPath' | 'repeats'> {
  /** Assumed time per call. Default 1,000 ms. */
  latencyMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** The estimate of each run `assay run SUITE` would make: one, or one per variant of a sweep. */
export async function estimateSuiteFile(
  suitePath: string,
  settings: EstimateSettings = {},
): Promise<Estimate[]> {
  const path = resolve(suitePath);
  const suiteDir = dirname(path);
  const loaded = await loadSuiteFile(path);
  const env = settings.env ?? process.env;
  const prices = loadPriceTable(settings.pricesPath, env);
  const tokens = await loadTokenCounter();
  const suites: Suite[] = isSweep(loaded) ? variantSuites(loaded).map((v) => v.suite) : [loaded];
  const estimates: Estimate[] = [];
  for (const each of suites) {
    const suite = applySettings(each, settings);
    const dataset = await datasetFileOf(suite, suiteDir);
    const run = await prepareRun({
      suite,
      prompts: promptStoreFor(suiteDir),
      datasetKey: dataset.key,
      datasetVersion: dataset.version,
      reportPrefix: '',
    });
    estimates.push(
      await estimateRun({
        run,
        rows: dataset.rows(),
        // The suite's own prices (run.prices) over the table, as the run itself is priced.
        prices: withPriceOverride(prices, suite.run.prices, "the suite's run.prices"),
        tokens,
        env,
        latencyMs: settings.latencyMs,
      }),
    );
  }
  return estimates;
}
