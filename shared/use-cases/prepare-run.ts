import { createHash } from 'node:crypto';
import { snapshotPrompts } from '../lib/prompts/prompts.js';
import { type PriceTable, requirePricedBackends } from '../lib/providers/pricing.js';
import { RESULT_SCHEMA_VERSION, type RunRecord } from '../model/model.js';
import { resolveProviderId } from '../model/provider-ids.js';
import type { BlobStore } from '../ports/ports.js';
import { taskFor, verifyPrompts } from '../registry/registry.js';
import type { Suite } from '../registry/suite.js';

export interface PrepareRunInput {
  suite: Suite;
  /** Serves `prompts/<path>` keys: the repo (and suite) folders locally, the bucket on AWS. */
  prompts: BlobStore;
  datasetKey: string;
  /** Identifies the dataset version (a content hash, an S3 ETag + sequencer…). */
  datasetVersion: string;
  /** Report folder for this run; `{runId}` is replaced. */
  reportPrefix: string;
  /**
   * The process's price table: given, a run with a budget is refused here when a backend has
   * no price in it (nor in the suite's `run.prices`), before any call.
   */
  prices?: PriceTable;
  now?: () => Date;
}

/**
 * Everything a run needs before its first item: backends resolved from aliases, prompt files
 * loaded and checked (a missing file or an unknown placeholder fails here, before any call),
 * and a run id that is the same for the same suite, prompts and dataset version, so starting
 * the same thing twice resumes rather than duplicates.
 */
export async function prepareRun(input: PrepareRunInput): Promise<RunRecord> {
  const backends = input.suite.backends.map((b) => resolveProviderId(b).id);
  const suite: Suite = { ...input.suite, backends };
  if (input.prices) requirePricedBackends(suite, input.prices);
  const task = taskFor(suite);
  const paths = task.promptPaths(suite);
  const prompts = await snapshotPrompts(input.prompts, Object.values(paths));
  verifyPrompts(
    task,
    paths,
    Object.fromEntries(Object.entries(prompts).map(([path, snapshot]) => [path, snapshot.text])),
  );
  // How fast and how far a run goes does not change its answers: concurrency, retries, rate
  // limits, the request timeout and the budget stay out of the id, so a run stopped by its
  // budget resumes under a higher one; nor do the prices; nor does the lane (a batch answer is the same answer, cheaper).
  const {
    concurrency: _c,
    timeoutMs: _t,
    maxAttempts: _a,
    budgetUsd: _b,
    limits: _r,
    lane: _l,
    batchPollSeconds: _p,
    prices: _prices,
    ...answers
  } = suite.run;
  const fingerprint = createHash('sha256')
    .update(
      JSON.stringify({
        suite: { ...suite, run: answers },
        prompts: Object.values(prompts).map((p) => p.hash),
        data: input.datasetVersion,
      }),
    )
    .digest('hex')
    .slice(0, 12);
  const runId = `${suite.name}-${fingerprint}`;
  return {
    schemaVersion: RESULT_SCHEMA_VERSION,
    runId,
    suiteName: suite.name,
    suite,
    prompts,
    status: 'ingesting',
    invalidRows: 0,
    startedAt: (input.now ?? (() => new Date()))().toISOString(),
    reportPrefix: input.reportPrefix.replaceAll('{runId}', runId),
    datasetKey: input.datasetKey,
    datasetVersion: input.datasetVersion,
    simulated: backends.length > 0 && backends.every((b) => b.startsWith('sim:')),
  };
}
