/**
 * dead-letter: an item message that exhausted its receives on the items queue becomes a failed
 * result with the reason, so its run still completes. A body with no item identity cannot be
 * recorded anywhere: it is logged, counted and dropped.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { decodeItemMessage, InvalidItemMessageError } from '../shared/adapters/aws/sqs-work-queue.js';
import { RunNotFoundError } from '../shared/model/errors.js';
import type { ItemMessage } from '../shared/model/model.js';
import { recordDeadLetter } from '../shared/use-cases/dead-letter.js';
import { deadLetterRoot, logger, metrics, sqsBatchHandler } from './root.js';

type DeadLetterRoot = ReturnType<typeof deadLetterRoot>;

/** The handler of a container built from `root` (the process's, by default). */
export function createDeadLetterHandler(root: DeadLetterRoot = deadLetterRoot()) {
  return sqsBatchHandler((record) => deadLetterRecord(root, record), { parallel: true });
}

async function deadLetterRecord({ blobs, ...deps }: DeadLetterRoot, record: SQSRecord): Promise<void> {
  let message: ItemMessage;
  try {
    message = await decodeItemMessage(record.body, blobs);
  } catch (error) {
    if (!(error instanceof InvalidItemMessageError)) throw error;
    logger.error('dead-lettered message is not an item message: dropped', {
      messageId: record.messageId,
      error,
    });
    metrics.addMetric('DeadLettersDropped', MetricUnit.Count, 1);
    return;
  }
  const keys = { runId: message.runId, itemId: message.item.id, messageId: record.messageId };
  const reason = `exhausted its receives on the items queue (ApproximateReceiveCount ${record.attributes.ApproximateReceiveCount})`;
  try {
    const outcome = await recordDeadLetter(deps, message, reason);
    if (outcome.recorded) {
      logger.warn('item recorded as failed (dead letter)', { ...keys, reason });
      metrics.addMetric('ItemsDeadLettered', MetricUnit.Count, 1);
    } else logger.info('dead-lettered item already had a result: nothing changed', keys);
  } catch (error) {
    if (!(error instanceof RunNotFoundError)) throw error;
    logger.error('dead-lettered item of a run that does not exist: dropped', keys);
    metrics.addMetric('DeadLettersDropped', MetricUnit.Count, 1);
  }
}

export const handler = createDeadLetterHandler();
