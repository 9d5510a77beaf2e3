/**
 * The batch side of a provider: OpenAI Batch, Anthropic Message Batches and Gemini batch mode
 * take many requests at once, answer within a day, and bill half the synchronous price. Each
 * vendor adapter implements {@link BatchApi} next to its synchronous `complete` (same request
 * building, same answer parsing); the batch lane (`shared/use-cases/batch-lane.ts`) drives it.
 */
import type { BatchApi, BatchEntry, BatchOutcome, Completion } from '../../model/provider.js';

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

/** Anthropic Message Batches take at most 256 MB per batch (and 100,000 requests). */
export const ANTHROPIC_BATCH_MAX_BYTES = 256 * 1024 * 1024;

/**
 * Bytes of the submission body around its requests (`{"requests":[` … `]}` and a little slack),
 * and between two of them (a comma).
 */
const ENVELOPE_BYTES = 64;
const SEPARATOR_BYTES = 1;

/**
 * The entries split into batches the vendor takes, in order: each holds at most `maxRequests`
 * entries and, when the API limits bytes (`maxBytes` with `bytesOf`), at most `maxBytes` of them
 * as sent. An entry too large for any batch on its own goes alone (the vendor refuses that
 * batch, and its call is made synchronously).
 */
export function packBatches<T extends BatchEntry>(
  entries: readonly T[],
  api: Pick<BatchApi, 'maxRequests' | 'maxBytes' | 'bytesOf'>,
  maxRequests: number = api.maxRequests,
): T[][] {
  const count = Math.max(1, Math.min(api.maxRequests, maxRequests));
  const { maxBytes, bytesOf } = api;
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = ENVELOPE_BYTES;
  for (const entry of entries) {
    const size = maxBytes !== undefined && bytesOf ? bytesOf(entry) + SEPARATOR_BYTES : 0;
    const full = current.length >= count || (maxBytes !== undefined && bytes + size > maxBytes);
    if (current.length > 0 && full) {
      batches.push(current);
      current = [];
      bytes = ENVELOPE_BYTES;
    }
    current.push(entry);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
