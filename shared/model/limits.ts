import { z } from 'zod';

/** A backend's declared limits; either may be absent (not limited on that axis). */
export interface RateLimit {
  /** Requests per minute. */
  rpm?: number;
  /** Tokens per minute, input and output together (OpenAI counts `max_tokens` against it). */
  tpm?: number;
}

/**
 * A backend's limits as a suite declares them (`run.limits`): its rate limits and the most calls
 * in flight to it at once.
 */
export interface BackendLimit extends RateLimit {
  /**
   * The most calls in flight at once to every backend the key names, together (a local
   * server's slots): under `llamacpp:*` all of llama-server's models share them.
   */
  concurrency?: number;
}

/** The rate part of a declared limit (rpm, tpm); undefined when it declares neither. */
export function rateOf(limit: BackendLimit | undefined): RateLimit | undefined {
  if (limit === undefined || (limit.rpm === undefined && limit.tpm === undefined)) return undefined;
  return {
    ...(limit.rpm === undefined ? {} : { rpm: limit.rpm }),
    ...(limit.tpm === undefined ? {} : { tpm: limit.tpm }),
  };
}

export const rateLimitSchema = z
  .object({
    rpm: z.number().positive().optional().describe('Requests per minute.'),
    tpm: z
      .number()
      .positive()
      .optional()
      .describe('Tokens per minute (estimated input tokens + maxTokens per call).'),
    concurrency: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "The most calls in flight at once to the backends this key names, together (a local server's slots); below run.concurrency, the other items wait.",
      ),
  })
  .strict()
  .refine(
    (limit) => limit.rpm !== undefined || limit.tpm !== undefined || limit.concurrency !== undefined,
    'give rpm, tpm, concurrency or several of them',
  );

/** What one call takes from its bucket. */
export interface RateNeed {
  requests: number;
  tokens: number;
}
