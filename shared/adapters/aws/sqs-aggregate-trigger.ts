import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import type { AggregateTrigger, AggregationStep, StepTrigger } from '../../ports/ports.js';

/** The body of a message on the aggregate queue: a run to aggregate, a sweep, or a step of a run aggregated in parts. */
export const aggregateTriggerBodySchema = z.union([
  z.object({ runId: z.string().min(1) }).strict(),
  z.object({ sweepId: z.string().min(1) }).strict(),
  z
    .object({
      runId: z.string().min(1),
      step: z.enum(['tally', 'files']),
      part: z.number().int().nonnegative(),
      resume: z.literal(true).optional(),
    })
    .strict(),
  z
    .object({
      runId: z.string().min(1),
      step: z.enum(['reduce', 'assemble']),
      resume: z.literal(true).optional(),
    })
    .strict(),
]);
export type AggregateTriggerBody = z.infer<typeof aggregateTriggerBodySchema>;

export interface SqsAggregateTriggerOptions {
  client: SQSClient;
  queueUrl: string;
}

/**
 * Asks for a run's aggregation. A standard queue has no deduplication, and both the last
 * worker and ingest may trigger: duplicates are harmless because aggregation is claimed
 * conditionally (RunStore.claimAggregation).
 */
export class SqsAggregateTrigger implements AggregateTrigger, StepTrigger {
  private readonly client: SQSClient;
  private readonly queueUrl: string;

  constructor({ client, queueUrl }: SqsAggregateTriggerOptions) {
    this.client = client;
    this.queueUrl = queueUrl;
  }

  async trigger(runId: string): Promise<void> {
    await this.send({ runId });
  }

  async triggerSweep(sweepId: string): Promise<void> {
    await this.send({ sweepId });
  }

  async triggerStep(step: AggregationStep): Promise<void> {
    await this.send(step);
  }

  private async send(body: AggregateTriggerBody): Promise<void> {
    await this.client.send(
      new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(body) }),
    );
  }
}
