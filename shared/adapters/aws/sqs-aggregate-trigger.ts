import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import type { AggregateTrigger } from '../../ports.js';

/** The body of a message on the aggregate queue. */
export const aggregateTriggerBodySchema = z.object({ runId: z.string().min(1) });
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
export class SqsAggregateTrigger implements AggregateTrigger {
  private readonly client: SQSClient;
  private readonly queueUrl: string;

  constructor({ client, queueUrl }: SqsAggregateTriggerOptions) {
    this.client = client;
    this.queueUrl = queueUrl;
  }

  async trigger(runId: string): Promise<void> {
    const body: AggregateTriggerBody = { runId };
    await this.client.send(
      new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: JSON.stringify(body) }),
    );
  }
}
