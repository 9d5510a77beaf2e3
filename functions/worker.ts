/**
 * worker: scores the items of a batch concurrently. A transient provider error (after the
 * suite's attempts) fails only its record, which SQS delivers again later; a message that
 * cannot be decoded fails every time and so ends in the dead-letter queue.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { decodeItemMessage, InvalidItemMessageError } from '../shared/adapters/aws/sqs-work-queue.js';
import type { ItemMessage, ItemResult } from '../shared/model/model.js';
import { scoreOrWait } from '../shared/use-cases/batch-lane.js';
import { type BatchMessage, BatchRecorder, type RecordResult } from '../shared/use-cases/record-batch.js';
import { loadRun, scoreItem } from '../shared/use-cases/score-item.js';
import { endHalted, haltCheck } from '../shared/use-cases/stop-run.js';
import { logger, metrics, sqsBatchHandler, workerRoot } from './root.js';

type WorkerRoot = ReturnType<typeof workerRoot>;

/**
 * The handler of a container built from `root` (the process's, by default). After each batch
 * what its results spent is added to the run's and the day's spend in one write each (the
 * store keeps it until then); a flush that fails is logged and tried again after the next
 * batch, never failing records already scored.
 */
export function createWorkerHandler(root: WorkerRoot = workerRoot()) {
  // The records of a batch are scored side by side (`parallel`), and their results recorded
  // together once each is scored or done (record-batch.ts): a write per counter they share.
  const handle = sqsBatchHandler(
    (record, _context, recorder: BatchRecorder) => scoreRecord(root, record, recorder.message()),
    {
      parallel: true,
      retries: root.retries,
      shared: (records) => new BatchRecorder(root, records.length),
    },
  );
  return async (...args: Parameters<typeof handle>) => {
    try {
      return await handle(...args);
    } finally {
      await root.halt.runStore.flushSpend?.().catch((error: unknown) => {
        logger.warn(
          "the batch's spend is not added to the run's and the day's yet: tried again after the next batch",
          {
            error: error as Error,
          },
        );
      });
    }
  };
}

async function scoreRecord(root: WorkerRoot, record: SQSRecord, handle: BatchMessage): Promise<void> {
  try {
    await scoreOne(root, record, handle.record);
  } finally {
    handle.end();
  }
}

async function scoreOne(
  { blobs, scoring, batchStore, halt }: WorkerRoot,
  record: SQSRecord,
  recordResult: RecordResult,
): Promise<void> {
  let message: ItemMessage;
  try {
    message = await decodeItemMessage(record.body, blobs);
  } catch (error) {
    if (error instanceof InvalidItemMessageError) {
      logger.error('undecodable item message: it will end in the dead-letter queue', {
        messageId: record.messageId,
        error,
      });
      metrics.addMetric('ItemsUndecodable', MetricUnit.Count, 1);
    }
    throw error;
  }
  const keys = {
    runId: message.runId,
    itemId: message.item.id,
    messageId: record.messageId,
    receiveCount: Number(record.attributes.ApproximateReceiveCount),
  };
  try {
    // A stopped run, or a day whose spend reached the daily limit: the item ends unscored.
    const check = await haltCheck(halt, message.runId);
    if (check.daySpentUsd !== undefined)
      metrics.addMetric('DailySpendUsd', MetricUnit.NoUnit, check.daySpentUsd);
    if (check.failure) {
      const { outcome } = await endHalted({ ...halt, record: recordResult }, message, check.failure);
      if (!outcome.recorded) return;
      metrics.addMetric(
        check.failure.kind === 'stopped' ? 'ItemsStopped' : 'ItemsOverDailyLimit',
        MetricUnit.Count,
        1,
      );
      logger.warn('item not scored', { ...keys, failure: check.failure });
      return;
    }
    const deps = { ...(await scoring()), record: recordResult };
    const run = await loadRun(deps.runStore, message.runId);
    // The batch lane: a call waiting for a batch lets this message go; the poller sends it again.
    const scored =
      run.suite.run.lane === 'batch'
        ? await scoreOrWait(deps, batchStore, message, record.body)
        : await scoreItem(deps, message);
    if ('waiting' in scored) {
      logger.info('item waits for a batch answer', { ...keys, backend: scored.waiting.backend });
      metrics.addMetric('ItemsWaitingForBatch', MetricUnit.Count, 1);
      return;
    }
    const { result, outcome } = scored;
    countSpend(result);
    if (!outcome.recorded) {
      logger.info('item already had a result (redelivered message): nothing counted', keys);
      return;
    }
    metrics.addMetric(result.status === 'scored' ? 'ItemsScored' : 'ItemsFailed', MetricUnit.Count, 1);
    if (result.status === 'scored') logger.info('item scored', { ...keys, scores: result.scores });
    else logger.warn('item failed', { ...keys, failure: result.failure });
  } catch (error) {
    logger.warn('item returned to the queue', { ...keys, error: error as Error });
    metrics.addMetric('ItemsRetried', MetricUnit.Count, 1);
    throw error;
  }
}

/** Tokens and cost of the calls this delivery made (cache hits bill nothing). */
function countSpend(result: ItemResult): void {
  const stages = Object.values(result.stages);
  if (stages.length === 0) return;
  const sum = (pick: (s: (typeof stages)[number]) => number) => stages.reduce((n, s) => n + pick(s), 0);
  metrics.addMetric(
    'InputTokens',
    MetricUnit.Count,
    sum((s) => s.usage.input),
  );
  metrics.addMetric(
    'OutputTokens',
    MetricUnit.Count,
    sum((s) => s.usage.output),
  );
  metrics.addMetric(
    'CachedTokens',
    MetricUnit.Count,
    sum((s) => s.usage.cached),
  );
  metrics.addMetric(
    'CostUsd',
    MetricUnit.NoUnit,
    sum((s) => s.costUsd),
  );
}

export const handler = createWorkerHandler();
