import { failedResult, type ItemMessage } from '../model/model.js';
import type { AggregateTrigger, RecordOutcome, RunStore } from '../ports/ports.js';

/**
 * A message that exhausted its receives becomes a failed result, so the run still completes.
 * If the item already has a result (it was scored, then the message was redelivered until it
 * died), nothing changes.
 */
export async function recordDeadLetter(
  deps: { runStore: RunStore; trigger: AggregateTrigger; now?: () => Date },
  message: ItemMessage,
  reason: string,
): Promise<RecordOutcome> {
  const { item } = message;
  const result = failedResult(
    {
      runId: message.runId,
      itemId: item.id,
      row: item.row,
      input: item.input,
      gold: item.gold,
      part: message.part,
    },
    { kind: 'dead_letter', message: reason },
    (deps.now ?? (() => new Date()))(),
  );
  const outcome = await deps.runStore.recordResult(result);
  if (outcome.complete) await deps.trigger.trigger(message.runId);
  return outcome;
}
