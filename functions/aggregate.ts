/**
 * aggregate: `{runId}` triggers from the aggregate queue. Triggers arrive more than once (the
 * last worker and ingest may both send one, SQS may repeat it): the conditional claim lets
 * exactly one build the report and the others skip.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { aggregateTriggerBodySchema } from '../shared/adapters/aws/sqs-aggregate-trigger.js';
import { aggregateRun } from '../shared/core/aggregate-run.js';
import { aggregateRoot, logger, metrics, sqsBatchHandler } from './root.js';
import { parseBody } from './sqs-event.js';

const deps = aggregateRoot();

async function aggregateRecord(record: SQSRecord): Promise<void> {
  const body = parseBody(record.body, aggregateTriggerBodySchema);
  if ('error' in body) {
    logger.error('aggregate trigger is not {"runId"}: dropped', {
      messageId: record.messageId,
      reason: body.error,
    });
    metrics.addMetric('AggregateTriggersDropped', MetricUnit.Count, 1);
    return;
  }
  const { runId } = body.data;
  const outcome = await aggregateRun(deps, runId);
  if (outcome.status === 'skipped') {
    logger.info('aggregation skipped', { runId, reason: outcome.reason });
    return;
  }
  logger.info('report written', { runId, keys: outcome.keys, counts: outcome.report.counts });
  metrics.addMetric('RunsAggregated', MetricUnit.Count, 1);
}

// One at a time: each aggregation holds a whole run's results.
export const handler = sqsBatchHandler(aggregateRecord, { parallel: false });
