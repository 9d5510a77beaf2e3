/** `assay estimate`: calls, tokens, cost range and projected time, before anything is spent. */
import { renderEstimate, renderEstimateTotal } from '../../shared/use-cases/estimate/estimate.js';
import { estimateSuiteFile } from '../estimate.js';

export interface EstimateFlags {
  concurrency?: number;
  sample?: number;
  seed: number;
  repeats?: number;
  backend?: string[];
  latencyMs: number;
  prices?: string;
  json?: boolean;
}

export async function estimateCommand(suitePath: string, flags: EstimateFlags): Promise<void> {
  const estimates = await estimateSuiteFile(suitePath, {
    concurrency: flags.concurrency,
    sample: flags.sample ? { n: flags.sample, seed: flags.seed } : undefined,
    repeats: flags.repeats,
    backends: flags.backend,
    latencyMs: flags.latencyMs,
    pricesPath: flags.prices,
  });
  process.stdout.write(
    flags.json
      ? `${JSON.stringify(estimates.length === 1 ? estimates[0] : estimates, null, 2)}\n`
      : [
          ...estimates.map(renderEstimate),
          // A sweep: what all its variants add up to.
          ...(estimates.length > 1 ? [renderEstimateTotal(estimates)] : []),
        ].join('\n'),
  );
}
