import type { ItemMessage } from '../model/model.js';
import type { RecordOutcome } from '../ports/ports.js';
import { type EndItemDeps, endItemFailed } from './end-item.js';

/**
 * A message that exhausted its receives becomes a failed result, so the run still completes.
 * If the item already has a result (it was scored, then the message was redelivered until it
 * died), nothing changes.
 */
export async function recordDeadLetter(
  deps: EndItemDeps,
  message: ItemMessage,
  reason: string,
): Promise<RecordOutcome> {
  const { outcome } = await endItemFailed(deps, message, { kind: 'dead_letter', message: reason });
  return outcome;
}
