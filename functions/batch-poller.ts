/**
 * batch-poller: run on a schedule (EventBridge), one pass of the batch lane each time —
 * submits the calls workers recorded since the last pass, polls the open batches, stores the
 * answers of finished ones and sends the items that waited for them back to the items queue.
 * A pass that fails is simply the next pass's work: nothing it touched is lost.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { advanceBatches } from '../shared/use-cases/batch-lane.js';
import { batchPollerRoot, logger, metrics, publishMetrics } from './root.js';

type PassTally = { submitted: number; refused: number; closed: number; woken: number };

/** The handler of a container built from `root` (the process's, by default). */
export function createBatchPollerHandler(root = batchPollerRoot()): () => Promise<PassTally> {
  return () => pass(root);
}

async function pass(root: ReturnType<typeof batchPollerRoot>): Promise<PassTally> {
  try {
    const tally = await advanceBatches(await root.deps());
    metrics.addMetric('BatchesSubmitted', MetricUnit.Count, tally.submitted);
    metrics.addMetric('BatchesCollected', MetricUnit.Count, tally.closed);
    metrics.addMetric('BatchItemsWoken', MetricUnit.Count, tally.woken);
    if (tally.submitted + tally.closed > 0) logger.info('batch lane pass', tally);
    return tally;
  } finally {
    publishMetrics();
  }
}

export const handler = createBatchPollerHandler();
