import { type Failure, failedResult, type ItemMessage, type ItemResult } from '../model/model.js';
import { storableResult } from '../model/result-size.js';
import type { AggregateTrigger, RecordOutcome, RunStore } from '../ports/ports.js';
import type { RecordResult } from './record-batch.js';

export interface EndItemDeps {
  runStore: Pick<RunStore, 'recordResult'>;
  /** How the result is recorded; default `runStore.recordResult`. */
  record?: RecordResult;
  trigger: AggregateTrigger;
  now?: () => Date;
}

/**
 * Ends an item that is not scored (its run was stopped, a limit was reached, its message died)
 * with `failure` as its one result, no model called; asks for aggregation when that completes
 * the run. An item that already has a result keeps it (the store records one per item). The
 * result keeps the item's input as a scored one would (long fields cut, held to what a stored
 * result may be), so that a dead letter of a long row is recorded, not refused by the store.
 */
export async function endItemFailed(
  deps: EndItemDeps,
  message: ItemMessage,
  failure: Failure,
): Promise<{ result: ItemResult; outcome: RecordOutcome }> {
  const { item } = message;
  const result = storableResult(
    failedResult(
      {
        runId: message.runId,
        itemId: item.id,
        row: item.row,
        input: item.input,
        gold: item.gold,
        part: message.part,
      },
      failure,
      (deps.now ?? (() => new Date()))(),
    ),
  );
  const outcome = deps.record ? await deps.record(result) : await deps.runStore.recordResult(result);
  if (outcome.complete) await deps.trigger.trigger(message.runId);
  return { result, outcome };
}
