/**
 * The batch side of a provider: OpenAI Batch, Anthropic Message Batches and Gemini batch mode
 * take many requests at once, answer within a day, and bill half the synchronous price. Each
 * vendor adapter implements {@link BatchApi} next to its synchronous `complete` (same request
 * building, same answer parsing); the batch lane (`shared/use-cases/batch-lane.ts`) drives it.
 */
import type { BatchOutcome, Completion } from '../../model/provider.js';

/**
 * Share of the synchronous price the batch APIs take off: 50% at OpenAI, Anthropic and Gemini
 * (their published batch pricing). The one place the discount lives.
 */
export const BATCH_DISCOUNT = 0.5;

/** A completion answered by a batch: billed at the discounted price, the difference kept as `batchSavedUsd`. */
export function batchPriced(completion: Completion): Completion {
  const syncUsd = completion.costUsd;
  return {
    ...completion,
    costUsd: syncUsd * (1 - BATCH_DISCOUNT),
    batchSavedUsd: syncUsd * BATCH_DISCOUNT,
  };
}

/**
 * A batch answer as an outcome: parsed as the synchronous call parses it, billed at the batch
 * price; an answer that does not parse is a failed request (it goes to the sync lane).
 */
export function answeredOutcome(customId: string, parse: () => Completion): BatchOutcome {
  try {
    return { customId, ok: true, completion: batchPriced(parse()) };
  } catch (error) {
    return { customId, ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}
