import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import type { QueueWithDlq } from './queues.js';

export interface AssayAlarmsProps {
  readonly queues: readonly QueueWithDlq[];
  /** Minutes between the watchdog's passes: the period of the stuck-runs alarm. */
  readonly watchdogMinutes: number;
  /** Subscribe this address to a topic that receives every alarm; no topic when unset. */
  readonly alarmEmail?: string;
  /** The deployment's daily spend limit across runs, USD (0: none, and no spend alarm). */
  readonly dailySpendLimitUsd?: number;
}

/** The day's spend alarms at this share of the daily limit: before the workers start refusing items. */
export const DAILY_SPEND_ALARM_SHARE = 0.8;

/**
 * One alarm per dead-letter queue, raised while the queue holds any visible message: a message
 * there has failed `maxReceiveCount` times. The items and events DLQs are drained by the dead-letter
 * function, so a message seen there for a moment is expected; its alarm waits for three
 * consecutive 5-minute periods (items keep failing, or the dead-letter function is failing or
 * not keeping up). One on the watchdog's `RunsStuck`: a run in any state whose progress
 * has not moved for the deploy's `stuckAfterMinutes`. And, with a daily spend limit, one on the
 * day's spend across runs the workers publish (`DailySpendUsd`), at 80 % of the limit.
 */
export class AssayAlarms extends Construct {
  readonly alarms: readonly cloudwatch.Alarm[];
  /** Raised when the watchdog counts a stuck run. */
  readonly runsStuck: cloudwatch.Alarm;
  /** Raised when the day's spend across runs nears the daily limit; none without a limit. */
  readonly dailySpend?: cloudwatch.Alarm;
  readonly topic?: sns.Topic;

  constructor(scope: Construct, id: string, props: AssayAlarmsProps) {
    super(scope, id);
    if (props.alarmEmail) {
      // No KMS key: CloudWatch cannot publish to a topic encrypted with the AWS-managed SNS key.
      this.topic = new sns.Topic(this, 'Topic', { displayName: 'Assay alarms', enforceSSL: true });
      this.topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    }
    this.alarms = props.queues.map(({ name, declaration, deadLetterQueue }) => {
      const drainedByFunction = declaration.deadLetter.consumer !== undefined;
      const alarm = new cloudwatch.Alarm(this, `${name}DlqNotEmpty`, {
        alarmDescription: drainedByFunction
          ? `Messages were visible in the ${name.toLowerCase()} dead-letter queue in three consecutive 5-minute periods: they keep failing, or the dead-letter function is failing or not keeping up.`
          : `Messages in the ${name.toLowerCase()} dead-letter queue: they failed processing and need a look and a redrive.`,
        metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(5),
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        threshold: 0,
        evaluationPeriods: drainedByFunction ? 3 : 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      if (this.topic) alarm.addAlarmAction(new actions.SnsAction(this.topic));
      return alarm;
    });
    this.runsStuck = new cloudwatch.Alarm(this, 'RunsStuck', {
      alarmDescription:
        'A run has made no progress for stuckAfterMinutes (the watchdog logs which, with its status): look at its functions’ logs.',
      metric: new cloudwatch.Metric({
        namespace: 'Assay',
        metricName: 'RunsStuck',
        dimensionsMap: { service: 'assay-watchdog' },
        period: Duration.minutes(props.watchdogMinutes),
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      threshold: 0,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    if (this.topic) this.runsStuck.addAlarmAction(new actions.SnsAction(this.topic));

    // The workers publish the day's spend across runs (DailySpendUsd, USD) as they read it
    // before scoring items; at the limit they refuse items (failed as `budget`).
    const limit = props.dailySpendLimitUsd ?? 0;
    if (limit > 0) {
      this.dailySpend = new cloudwatch.Alarm(this, 'DailySpend', {
        alarmDescription: `The day's spend across runs (UTC day) passed ${DAILY_SPEND_ALARM_SHARE * 100} % of the daily limit of $${limit}: at the limit the workers stop scoring items (they fail as "budget") until the next UTC day.`,
        metric: new cloudwatch.Metric({
          namespace: 'Assay',
          metricName: 'DailySpendUsd',
          dimensionsMap: { service: 'assay-worker' },
          period: Duration.minutes(5),
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: limit * DAILY_SPEND_ALARM_SHARE,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      if (this.topic) this.dailySpend.addAlarmAction(new actions.SnsAction(this.topic));
    }
  }
}
