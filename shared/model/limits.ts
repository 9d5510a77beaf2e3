import { z } from 'zod';

/** A backend's declared limits; either may be absent (not limited on that axis). */
export interface RateLimit {
  /** Requests per minute. */
  rpm?: number;
  /** Tokens per minute, input and output together (OpenAI counts `max_tokens` against it). */
  tpm?: number;
}

export const rateLimitSchema = z
  .object({
    rpm: z.number().positive().optional().describe('Requests per minute.'),
    tpm: z
      .number()
      .positive()
      .optional()
      .describe('Tokens per minute (estimated input tokens + maxTokens per call).'),
  })
  .strict()
  .refine((limit) => limit.rpm !== undefined || limit.tpm !== undefined, 'give rpm, tpm or both');

/** What one call takes from its bucket. */
export interface RateNeed {
  requests: number;
  tokens: number;
}
