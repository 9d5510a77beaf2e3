import type { SQSEvent } from 'aws-lambda';
import { z } from 'zod';
import { ConfigError } from '../shared/model/errors.js';

/**
 * The SQS event a Lambda event source mapping delivers. Only the fields the functions read are
 * checked; the rest passes through untouched (the batch processor needs the whole record).
 * Bodies are validated by each function's own schema.
 */
const sqsRecordSchema = z.looseObject({
  messageId: z.string().min(1),
  receiptHandle: z.string(),
  body: z.string(),
  attributes: z.looseObject({ ApproximateReceiveCount: z.string().regex(/^\d+$/) }),
  eventSource: z.literal('aws:sqs'),
  eventSourceARN: z.string(),
});

export const sqsEventSchema = z.object({ Records: z.array(sqsRecordSchema) });

/** The event is not an SQS batch: the function is wired to the wrong source. */
export class UnexpectedEventError extends ConfigError {
  override readonly name = 'UnexpectedEventError';
}

/** Checks that `event` is an SQS batch and returns it as such. */
export function parseSqsEvent(event: unknown): SQSEvent {
  const parsed = sqsEventSchema.safeParse(event);
  if (!parsed.success) {
    throw new UnexpectedEventError(`not an SQS event: ${z.prettifyError(parsed.error)}`, {
      cause: parsed.error,
    });
  }
  return event as SQSEvent;
}

/** Parses a JSON body against a schema: the data, or why it does not fit. */
export function parseBody<S extends z.ZodType>(
  body: string,
  schema: S,
): { data: z.infer<S> } | { error: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { error: 'body is not JSON' };
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? { data: parsed.data } : { error: z.prettifyError(parsed.error) };
}
