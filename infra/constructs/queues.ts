import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { VISIBILITY_TO_TIMEOUT_RATIO } from './functions.js';

export interface AssayQueuesProps {
  /** Receives before a message is moved to its dead-letter queue. */
  readonly maxReceiveCount: number;
  /**
   * Timeout of the function consuming each queue; the queue's visibility timeout is six times
   * this. `itemsDeadLetter` is the dead-letter function, which drains the items DLQ.
   */
  readonly consumerTimeouts: {
    readonly events: Duration;
    readonly items: Duration;
    readonly itemsDeadLetter: Duration;
    readonly aggregate: Duration;
  };
}

export interface QueueWithDlq {
  /** Short name used in construct ids, alarm names and outputs. */
  readonly name: string;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
}

/**
 * The three work queues of the pipeline, each with its own dead-letter queue:
 * `events` (S3 upload notifications → ingest), `items` (one message per dataset item →
 * worker; its DLQ is drained by the dead-letter function) and `aggregate` (one message per
 * finished run → aggregate). All are encrypted with SQS-managed keys (S3 notifications
 * cannot publish to a queue encrypted with the AWS-managed KMS key) and refuse non-TLS access.
 */
export class AssayQueues extends Construct {
  readonly events: QueueWithDlq;
  readonly items: QueueWithDlq;
  readonly aggregate: QueueWithDlq;

  constructor(scope: Construct, id: string, props: AssayQueuesProps) {
    super(scope, id);
    const t = props.consumerTimeouts;
    this.events = this.queueWithDlq('Events', t.events, props.maxReceiveCount);
    this.items = this.queueWithDlq('Items', t.items, props.maxReceiveCount, t.itemsDeadLetter);
    this.aggregate = this.queueWithDlq('Aggregate', t.aggregate, props.maxReceiveCount);
  }

  /** Each queue with its dead-letter queue (the alarms watch the latter). */
  get all(): readonly QueueWithDlq[] {
    return [this.events, this.items, this.aggregate];
  }

  private queueWithDlq(
    name: string,
    consumerTimeout: Duration,
    maxReceiveCount: number,
    dlqConsumerTimeout?: Duration,
  ): QueueWithDlq {
    const deadLetterQueue = new sqs.Queue(this, `${name}Dlq`, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // The longest SQS allows: time to notice the alarm and redrive.
      retentionPeriod: Duration.days(14),
      visibilityTimeout: dlqConsumerTimeout ? sixTimes(dlqConsumerTimeout) : undefined,
    });
    const queue = new sqs.Queue(this, name, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: sixTimes(consumerTimeout),
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount },
    });
    return { name, queue, deadLetterQueue };
  }
}

function sixTimes(timeout: Duration): Duration {
  return Duration.seconds(VISIBILITY_TO_TIMEOUT_RATIO * timeout.toSeconds());
}
