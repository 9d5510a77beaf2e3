/**
 * watchdog: run on a schedule (EventBridge), a look at every run not done yet — a complete run
 * that nobody aggregates, or whose aggregation claim lapsed (the aggregation died), is sent to
 * aggregation again; a run whose progress has not moved for ASSAY_STUCK_AFTER_MS is logged and
 * counted in the `RunsStuck` metric, which an alarm watches.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { type WatchOutcome, watchRuns } from '../shared/use-cases/watch-runs.js';
import { logger, metrics, publishMetrics, watchdogRoot } from './root.js';

/** The handler of a container built from `deps` (the process's, by default). */
export function createWatchdogHandler(deps = watchdogRoot()): () => Promise<WatchOutcome> {
  return () => watch(deps);
}

async function watch(deps: ReturnType<typeof watchdogRoot>): Promise<WatchOutcome> {
  try {
    const outcome = await watchRuns(deps);
    // Every pass counts, zero included: the alarm on stuck runs reads a metric that is always there.
    metrics.addMetric('RunsStuck', MetricUnit.Count, outcome.stuck.length);
    metrics.addMetric('RunsRetriggered', MetricUnit.Count, outcome.retriggered.length);
    for (const stuck of outcome.stuck) logger.error('run stuck: no progress', stuck);
    if (outcome.retriggered.length > 0)
      logger.warn('runs sent to aggregation again', { runs: outcome.retriggered });
    return outcome;
  } finally {
    publishMetrics();
  }
}

export const handler = createWatchdogHandler();
