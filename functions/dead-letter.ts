/**
 * dead-letter: drains the dead-letter queues of items and of events.
 *
 * An item message that exhausted its receives on the items queue becomes a failed result with
 * the reason, so its run still completes. A body with no item identity cannot be recorded
 * anywhere: it is logged, counted and dropped.
 *
 * An ingest chunk task that exhausted its receives on the events queue ends its run: the run
 * could never complete without the chunk's rows, so it ends `failed` with a reason naming the
 * chunk (shared/use-cases/dead-letter.ts). An upload's notification there is logged with its
 * key (upload the object again to retry it), counted and dropped.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { z } from 'zod';
import { decodeItemMessage, InvalidItemMessageError } from '../shared/adapters/aws/sqs-work-queue.js';
import { RunNotFoundError } from '../shared/model/errors.js';
import type { ItemMessage } from '../shared/model/model.js';
import { endRunOfDeadChunk, recordDeadLetter } from '../shared/use-cases/dead-letter.js';
import { deadLetterRoot, logger, metrics, sqsBatchHandler } from './root.js';
import { parseBody } from './sqs-event.js';

type DeadLetterRoot = ReturnType<typeof deadLetterRoot>;

/** The handler of a container built from `root` (the process's, by default). */
export function createDeadLetterHandler(root: DeadLetterRoot = deadLetterRoot()) {
  return sqsBatchHandler((record) => deadLetterRecord(root, record), {
    parallel: true,
    retries: root.retries,
  });
}

/** What of a dead chunk task this function reads: its run and chunk (and object, when it says). */
const chunkTaskSchema = z.looseObject({
  chunk: z.looseObject({
    runId: z.string().min(1),
    chunk: z.number().int().nonnegative(),
    key: z.string().optional(),
  }),
});

/** What of a dead upload notification this function reads: the objects' keys. */
const uploadSchema = z.looseObject({
  Records: z.array(z.looseObject({ s3: z.looseObject({ object: z.looseObject({ key: z.string() }) }) })),
});

async function deadLetterRecord(root: DeadLetterRoot, record: SQSRecord): Promise<void> {
  const task = parseBody(record.body, chunkTaskSchema);
  if ('data' in task) {
    await deadChunk(root, record, task.data.chunk);
    return;
  }
  const upload = parseBody(record.body, uploadSchema);
  if ('data' in upload) {
    logger.error('an upload exhausted its receives on the events queue: dropped (upload it again)', {
      messageId: record.messageId,
      keys: upload.data.Records.map((r) => r.s3.object.key),
    });
    metrics.addMetric('DeadLettersDropped', MetricUnit.Count, 1);
    return;
  }
  await deadItem(root, record);
}

async function deadChunk(
  { runStore }: DeadLetterRoot,
  record: SQSRecord,
  chunk: { runId: string; chunk: number; key?: string | undefined },
): Promise<void> {
  const keys = { runId: chunk.runId, chunk: chunk.chunk, key: chunk.key, messageId: record.messageId };
  const why = `exhausted its receives on the events queue (ApproximateReceiveCount ${record.attributes.ApproximateReceiveCount})`;
  try {
    const outcome = await endRunOfDeadChunk(
      { runStore },
      { runId: chunk.runId, chunk: chunk.chunk, ...(chunk.key === undefined ? {} : { key: chunk.key }) },
      why,
    );
    if (outcome.status === 'failed') {
      logger.error('run failed: an ingest chunk was dead-lettered', { ...keys, reason: outcome.reason });
      metrics.addMetric('RunsFailed', MetricUnit.Count, 1);
    } else logger.info('dead-lettered ingest chunk: its run needs nothing', { ...keys, why: outcome.why });
  } catch (error) {
    if (!(error instanceof RunNotFoundError)) throw error;
    logger.error('dead-lettered ingest chunk of a run that does not exist: dropped', keys);
    metrics.addMetric('DeadLettersDropped', MetricUnit.Count, 1);
  }
}

async function deadItem({ blobs, runStore, trigger }: DeadLetterRoot, record: SQSRecord): Promise<void> {
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
    const outcome = await recordDeadLetter({ runStore, trigger }, message, reason);
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
