/**
 * The batch side of a provider: OpenAI Batch, Anthropic Message Batches and Gemini batch mode
 * take many requests at once, answer within a day, and bill half the synchronous price. Each
 * vendor adapter implements {@link BatchApi} next to its synchronous `complete` (same request
 * building, same answer parsing); the batch lane (`shared/core/batch-lane.ts`) drives it.
 */
import type { Completion, CompletionRequest } from './types.js';

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

/** One request of a batch; `customId` comes back with its answer. */
export interface BatchEntry {
  customId: string;
  request: CompletionRequest;
}

/** What the vendor says about a submitted batch. */
export interface BatchStatus {
  /** The vendor's own word (`in_progress`, `ended`, `JOB_STATE_RUNNING`…), for progress lines. */
  status: string;
  /** No more answers will come: collect what there is. */
  done: boolean;
  /** Requests answered so far (succeeded or failed), when the vendor says. */
  finished?: number;
  total?: number;
}

/** One request's outcome: an answer, or why the batch could not answer it (it then goes to the sync lane). */
export type BatchOutcome =
  | { customId: string; ok: true; completion: Completion }
  | { customId: string; ok: false; error: string };

export interface BatchApi {
  /** Most requests one batch may hold (the vendor's limit, or less to keep inline bodies small). */
  readonly maxRequests: number;
  /** False for requests this vendor's batch endpoint cannot take (they go to the sync lane). */
  accepts(request: CompletionRequest): boolean;
  /** Submits the entries (all for one model) as one batch; returns the vendor's batch id. */
  submit(entries: readonly BatchEntry[], label: string): Promise<string>;
  status(batchId: string): Promise<BatchStatus>;
  /**
   * The outcomes of a finished batch. `entries` are what was submitted (answers are parsed
   * against their requests); an entry without an outcome here was not answered (expired,
   * cancelled) and goes to the sync lane like a failed one.
   */
  results(batchId: string, entries: readonly BatchEntry[]): Promise<BatchOutcome[]>;
}
