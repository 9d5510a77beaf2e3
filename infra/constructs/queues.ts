import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  QUEUE_NAMES,
  QUEUES,
  type QueueDeclaration,
  type QueueName,
} from '../../shared/lib/layout/queues.js';

export interface AssayQueuesProps {
  /** Receives before a message is moved to its dead-letter queue (every queue). */
  readonly maxReceiveCount: number;
}

export interface QueueWithDlq {
  /** Short name used in construct ids, alarm names and outputs. */
  readonly name: string;
  /** The queue's entry in the layout declaration (shared/layout/queues.ts). */
  readonly declaration: QueueDeclaration;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
}

/**
 * The three work queues of the pipeline, each with its own dead-letter queue, as declared in
 * shared/layout/queues.ts: `events` (S3 upload notifications → ingest), `items` (one message
 * per dataset item → worker; its DLQ is drained by the dead-letter function) and `aggregate`
 * (one message per finished run → aggregate). All are encrypted with SQS-managed keys (S3
 * notifications cannot publish to a queue encrypted with the AWS-managed KMS key) and refuse
 * non-TLS access.
 */
export class AssayQueues extends Construct {
  readonly events: QueueWithDlq;
  readonly items: QueueWithDlq;
  readonly aggregate: QueueWithDlq;

  constructor(scope: Construct, id: string, props: AssayQueuesProps) {
    super(scope, id);
    this.events = this.queueWithDlq('events', props.maxReceiveCount);
    this.items = this.queueWithDlq('items', props.maxReceiveCount);
    this.aggregate = this.queueWithDlq('aggregate', props.maxReceiveCount);
  }

  /** Each queue with its dead-letter queue (the alarms watch the latter), in declaration order. */
  get all(): readonly QueueWithDlq[] {
    return QUEUE_NAMES.map((name) => this[name]);
  }

  private queueWithDlq(key: QueueName, maxReceiveCount: number): QueueWithDlq {
    const declaration = QUEUES[key];
    const name = key.charAt(0).toUpperCase() + key.slice(1);
    const seconds = (s: number | undefined) => (s === undefined ? undefined : Duration.seconds(s));
    const deadLetterQueue = new sqs.Queue(this, `${name}Dlq`, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      fifo: declaration.fifo || undefined,
      retentionPeriod: Duration.days(declaration.deadLetter.retentionDays),
      visibilityTimeout: seconds(declaration.deadLetter.visibilityTimeoutSeconds),
    });
    const queue = new sqs.Queue(this, name, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      fifo: declaration.fifo || undefined,
      visibilityTimeout: seconds(declaration.visibilityTimeoutSeconds),
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount },
    });
    return { name, declaration, queue, deadLetterQueue };
  }
}
