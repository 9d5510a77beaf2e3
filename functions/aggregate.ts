/**
 * aggregate: `{runId}` and `{sweepId}` triggers from the aggregate queue. Triggers arrive more
 * than once (the last worker and ingest may both send one, SQS may repeat it): the conditional
 * claims let exactly one build each report and the others skip.
 *
 * Once a run is done (now or by an earlier delivery), its report joins the leaderboard
 * (`reports/leaderboard.json`) and every sweep it completes is aggregated, so a retried
 * trigger finishes whatever a failed attempt left undone.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { aggregateTriggerBodySchema } from '../shared/adapters/aws/sqs-aggregate-trigger.js';
import type { AggregationStep } from '../shared/ports/ports.js';
import { aggregationStep } from '../shared/use-cases/aggregate-parts.js';
import { type AggregateOutcome, aggregateRun } from '../shared/use-cases/aggregate-run.js';
import { type AggregateSweepOutcome, aggregateSweep } from '../shared/use-cases/aggregate-sweep.js';
import { finishRun } from '../shared/use-cases/finish-run.js';
import { aggregateRoot, logger, metrics, sqsBatchHandler } from './root.js';
import { parseBody } from './sqs-event.js';

type AggregateRoot = ReturnType<typeof aggregateRoot>;

/** The handler of a container built from `root` (the process's, by default). */
export function createAggregateHandler(root: AggregateRoot = aggregateRoot()) {
  // One at a time: each aggregation holds a whole run's results.
  return sqsBatchHandler((record) => aggregateRecord(root, record), {
    parallel: false,
    retries: root.retries,
  });
}

async function aggregateRecord(deps: AggregateRoot, record: SQSRecord): Promise<void> {
  const body = parseBody(record.body, aggregateTriggerBodySchema);
  if ('error' in body) {
    logger.error('aggregate trigger is not {"runId"}, {"sweepId"} or a step of a run: dropped', {
      messageId: record.messageId,
      reason: body.error,
    });
    metrics.addMetric('AggregateTriggersDropped', MetricUnit.Count, 1);
    return;
  }
  if ('sweepId' in body.data) {
    logSweep(body.data.sweepId, await aggregateSweep(deps.sweep, body.data.sweepId));
    return;
  }
  const { runId } = body.data;
  let outcome: AggregateOutcome;
  if ('step' in body.data) {
    const step = await aggregationStep(deps.steps, body.data as AggregationStep);
    if (step.status !== 'written') {
      logger.info(`aggregation step ${step.status}`, { runId, ...step });
      return;
    }
    outcome = step;
  } else outcome = await aggregateRun(deps.run, runId);
  if (outcome.status === 'skipped') logger.info('aggregation skipped', { runId, reason: outcome.reason });
  else if (outcome.status === 'in-parts') {
    logger.info('aggregation in parts started', { runId, parts: outcome.parts });
    return;
  } else {
    logger.info('report written', { runId, keys: outcome.keys, counts: outcome.report.counts });
    metrics.addMetric('RunsAggregated', MetricUnit.Count, 1);
  }
  const finished = await finishRun(deps.finish, runId, outcome);
  if (finished.status === 'finished' && finished.stopped !== undefined)
    logger.info('stopped run reported, left off the leaderboard', { runId, reason: finished.stopped });
  if (finished.status === 'finished')
    for (const { sweepId, outcome: swept } of finished.sweeps) logSweep(sweepId, swept);
}

function logSweep(sweepId: string, outcome: AggregateSweepOutcome): void {
  if (outcome.status === 'skipped') {
    logger.info('sweep aggregation skipped', { sweepId, reason: outcome.reason });
    return;
  }
  logger.info('sweep report written', {
    sweepId,
    keys: outcome.keys,
    failedRequired: outcome.report.gate?.failedRequired ?? [],
  });
  metrics.addMetric('SweepsAggregated', MetricUnit.Count, 1);
}

export const handler = createAggregateHandler();
