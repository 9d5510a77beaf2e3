import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Tags } from 'aws-cdk-lib';
import * as eventbridge from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import {
  PROMPT_PREFIX,
  REPORTS_PREFIX,
  RESULTS_PREFIX,
  SPILL_PREFIX,
  SUITES_PREFIX,
  UPLOAD_PREFIXES,
} from '../shared/lib/layout/bucket.js';
import {
  FUNCTION_MEMORY_MB,
  FUNCTION_TIMEOUT_SECONDS,
  FUNCTION_TMP_MB,
  type FunctionName,
} from '../shared/lib/layout/queues.js';
import { workerConcurrency } from './capacity.js';
import {
  type AssayConfig,
  aggregatePaceEnv,
  ingestPaceEnv,
  ingestTenancyEnv,
  spendLimitEnv,
  uploadLimitsEnv,
} from './config.js';
import { AssayAlarms } from './constructs/alarms.js';
import { AssayFunction, REPO_ROOT } from './constructs/functions.js';
import { AssayQueues } from './constructs/queues.js';
import { AssayStorage } from './constructs/storage.js';
import { acknowledge, iam5ResourceFinding } from './nag.js';
import { TABLE_ACCESS } from './table-access.js';

export interface AssayStackProps extends StackProps {
  readonly config: AssayConfig;
}

/**
 * Each function's timeout, memory and /tmp, as the layout declares them (shared/lib/layout/queues.ts);
 * each consumed queue's visibility timeout is derived from the timeouts (×6).
 */
const SIZES = Object.fromEntries(
  Object.entries(FUNCTION_TIMEOUT_SECONDS).map(([name, seconds]) => [
    name,
    {
      timeout: Duration.seconds(seconds),
      memorySize: FUNCTION_MEMORY_MB[name as FunctionName],
      tmpSize: FUNCTION_TMP_MB[name as FunctionName],
    },
  ]),
) as Record<FunctionName, { timeout: Duration; memorySize: number; tmpSize: number }>;

/**
 * Assay on AWS: uploads to the bucket → events queue → ingest → items queue → worker →
 * table; a finished run → aggregate queue → aggregate → reports in the bucket. Items that
 * exhaust their receives are recorded as failed by the dead-letter function.
 */
export class AssayStack extends Stack {
  readonly storage: AssayStorage;
  readonly queues: AssayQueues;
  readonly functions: {
    readonly ingest: AssayFunction;
    readonly worker: AssayFunction;
    readonly deadLetter: AssayFunction;
    readonly aggregate: AssayFunction;
    readonly batchPoller: AssayFunction;
    readonly watchdog: AssayFunction;
  };
  readonly providerSecret: secretsmanager.ISecret;
  readonly promptSync: s3deploy.BucketDeployment;
  readonly alarms: AssayAlarms;

  constructor(scope: Construct, id: string, props: AssayStackProps) {
    super(scope, id, {
      description: 'Assay: LLM evaluations over datasets (S3 → SQS → Lambda → DynamoDB)',
      ...props,
    });
    const { config } = props;
    Tags.of(this).add('app', 'assay');

    this.storage = new AssayStorage(this, 'Storage', {
      retainData: config.retainData,
      warmReadUnitsPerSecond: config.tableWarmReadUnitsPerSecond,
      warmWriteUnitsPerSecond: config.tableWarmWriteUnitsPerSecond,
    });
    // Each team's suites, datasets and prompt folder: written by its writers only.
    this.storage.restrictTeamWriters(config.teams);
    this.queues = new AssayQueues(this, 'Queues', { maxReceiveCount: config.maxReceiveCount });
    this.storage.notifyUploads(this.queues.events.queue);
    this.providerSecret = this.providerKeys(config);

    const { bucket, table } = this.storage;
    const { events, items, aggregate } = this.queues;
    const shared = {
      logLevel: config.logLevel,
      logRetentionDays: config.logRetentionDays,
      cacheTtlDays: config.cacheTtlDays,
      resultRetentionDays: config.resultRetentionDays,
    };

    this.functions = {
      ingest: new AssayFunction(this, 'Ingest', {
        ...shared,
        entry: 'ingest',
        description: 'Validates an uploaded dataset/suite/prompt and enqueues one message per item',
        ...SIZES.ingest,
        // Its own share of the account's executions: a fleet of workers cannot take them all.
        reservedConcurrency: config.ingestReservedConcurrency,
        // A run's prompt files are snapshotted by ingest: the repo's copies ship with it, and
        // uploads in the suite's scope (prompts/<team>/, or prompts/ for a suite of no team)
        // override them. Workers use the run's snapshot.
        bundledFolders: ['prompts'],
        // The dataset folders every suite may read besides its own datasets/<name>/.
        ...(config.datasetPrefixes
          ? { environment: { ASSAY_DATASET_PREFIXES: config.datasetPrefixes } }
          : {}),
      })
        .useTable(table, TABLE_ACCESS.ingest)
        // The deployment's limits on an upload (infra/config.ts).
        .withEnvironment(uploadLimitsEnv(config))
        // The teams (whose prompts reach only their suites) and the provider keys the secret is
        // declared to hold: ingest parses untrusted files and is given no access to the secret.
        .withEnvironment(ingestTenancyEnv(config))
        // Its claims of item ids paced, each invocation its share: the table stays the workers'.
        .withEnvironment(ingestPaceEnv(config))
        // spill/: oversize item bodies, and a sampled run's reservoir between chunks;
        // results/: results too large for a DynamoDB item (invalid rows').
        .useBucket(bucket, {
          read: [...UPLOAD_PREFIXES, SPILL_PREFIX, RESULTS_PREFIX],
          write: [SPILL_PREFIX, RESULTS_PREFIX],
        })
        .sendsTo(items.queue, 'ITEMS_QUEUE_URL')
        .sendsTo(aggregate.queue, 'AGGREGATE_QUEUE_URL')
        // A dataset larger than a chunk is read a chunk an invocation: each sends the next.
        .sendsTo(events.queue, 'EVENTS_QUEUE_URL')
        // Batches as declared in the layout: one upload per invocation, a dataset can take minutes to stream.
        .consumes(events.queue, {
          ...events.declaration.consumer,
          scaling: { maxConcurrency: config.ingestMaxConcurrency },
        }),

      worker: new AssayFunction(this, 'Worker', {
        ...shared,
        entry: 'worker',
        description: 'Scores items with the LLM providers and records results',
        ...SIZES.worker,
        // Rate limits held across the fleet by the token buckets in the table; with the store
        // out of reach, each container keeps to its share of them: the limit over the fleet's size.
        environment: {
          ...(config.rateLimits ? { ASSAY_LIMITS: config.rateLimits } : {}),
          ASSAY_WORKER_MAX_CONCURRENCY: String(workerConcurrency(config)),
        },
      })
        .useTable(table, TABLE_ACCESS.worker)
        // The deployment's spend limit across runs, per UTC day.
        .withEnvironment(spendLimitEnv(config))
        // Bedrock: InvokeModel on the deploy's list of models only (none when it is empty).
        .invokesBedrock(config.bedrockModels)
        // results/: results too large for a DynamoDB item, by reference.
        .useBucket(bucket, { read: [SPILL_PREFIX, RESULTS_PREFIX], write: [RESULTS_PREFIX] })
        .sendsTo(aggregate.queue, 'AGGREGATE_QUEUE_URL')
        .readsSecret(this.providerSecret)
        // The most worker containers at once (workerMaxConcurrency, or 10 per provisioned
        // poller): with the batch size, the ceiling of calls in flight.
        .consumes(items.queue, {
          batchSize: config.workerBatchSize,
          maxBatchingWindowSeconds: config.workerBatchingWindowSeconds,
          scaling:
            config.workerEventSourceMode === 'provisioned'
              ? { minimumPollers: config.workerMinPollers, maximumPollers: config.workerMaxPollers }
              : { maxConcurrency: config.workerMaxConcurrency },
        }),

      deadLetter: new AssayFunction(this, 'DeadLetter', {
        ...shared,
        entry: 'dead-letter',
        description:
          'Records items that exhausted their receives as failed results; ends the run of an ingest chunk that did',
        ...SIZES.deadLetter,
      })
        .useTable(table, TABLE_ACCESS.deadLetter)
        .useBucket(bucket, { read: [SPILL_PREFIX, RESULTS_PREFIX], write: [RESULTS_PREFIX] })
        .sendsTo(aggregate.queue, 'AGGREGATE_QUEUE_URL')
        .consumes(items.deadLetterQueue, {
          ...items.declaration.deadLetter.consumer!,
          scaling: { maxConcurrency: config.deadLetterMaxConcurrency },
        })
        // An ingest chunk task that exhausted its receives: its run ends failed, naming the chunk.
        .consumes(events.deadLetterQueue, {
          ...events.declaration.deadLetter.consumer!,
          scaling: { maxConcurrency: config.deadLetterMaxConcurrency },
        }),

      aggregate: new AssayFunction(this, 'Aggregate', {
        ...shared,
        entry: 'aggregate',
        description:
          'Computes metrics of a finished run and writes its report files; aggregates sweeps; keeps the leaderboard',
        ...SIZES.aggregate,
        reservedConcurrency: config.aggregateReservedConcurrency,
      })
        .useTable(table, TABLE_ACCESS.aggregate)
        // Its reads of results paced, each invocation its share: a run aggregating in parts
        // leaves the table to the runs still scoring.
        .withEnvironment(aggregatePaceEnv(config))
        // suites/ for the run's definition, reports/ for the previous run to compare with,
        // spill/ for what the steps of a run aggregated in parts hand each other, results/ for
        // results too large for a DynamoDB item.
        .useBucket(bucket, {
          read: [SUITES_PREFIX, REPORTS_PREFIX, SPILL_PREFIX, RESULTS_PREFIX],
          write: [REPORTS_PREFIX, SPILL_PREFIX],
        })
        // A run aggregated in parts: each step asks for the next.
        .sendsTo(aggregate.queue, 'AGGREGATE_QUEUE_URL')
        // Batches as declared in the layout: one run per invocation, a large run takes a while to score.
        .consumes(aggregate.queue, {
          ...aggregate.declaration.consumer,
          scaling: { maxConcurrency: config.aggregateMaxConcurrency },
        }),

      // The batch lane (suites with run.lane "batch"): workers record the calls items wait for;
      // this function, on a schedule, submits them to the vendors' batch APIs, polls, collects
      // the answers and sends the waiting items back to the items queue.
      batchPoller: new AssayFunction(this, 'BatchPoller', {
        ...shared,
        entry: 'batch-poller',
        description:
          'Batch lane: submits waiting model calls as vendor batches, collects them, wakes the items',
        ...SIZES.batchPoller,
      })
        .useTable(table, TABLE_ACCESS.batchPoller)
        .useBucket(bucket, { read: [SPILL_PREFIX] })
        .sendsTo(items.queue, 'ITEMS_QUEUE_URL')
        .readsSecret(this.providerSecret),

      // Runs not done yet: a complete run nobody aggregates, or an aggregation claim that lapsed,
      // is sent to aggregation again; a run with no progress for stuckAfterMinutes is counted
      // in RunsStuck, which an alarm watches.
      watchdog: new AssayFunction(this, 'Watchdog', {
        ...shared,
        entry: 'watchdog',
        description: 'Looks at the runs not done yet: re-sends due aggregations, counts stuck runs',
        ...SIZES.watchdog,
        environment: { ASSAY_STUCK_AFTER_MS: String(config.stuckAfterMinutes * 60_000) },
      })
        .useTable(table, TABLE_ACCESS.watchdog)
        // No object access: the bucket is named because every container's environment names it.
        .useBucket(bucket, {})
        .sendsTo(aggregate.queue, 'AGGREGATE_QUEUE_URL'),
    };
    new eventbridge.Rule(this, 'BatchPollSchedule', {
      description: 'Runs the batch poller: one pass of the batch lane',
      schedule: eventbridge.Schedule.rate(Duration.minutes(config.batchPollMinutes)),
      targets: [new targets.LambdaFunction(this.functions.batchPoller, { retryAttempts: 0 })],
    });
    new eventbridge.Rule(this, 'WatchdogSchedule', {
      description: 'Runs the watchdog over the runs not done yet',
      schedule: eventbridge.Schedule.rate(Duration.minutes(config.watchdogMinutes)),
      targets: [new targets.LambdaFunction(this.functions.watchdog, { retryAttempts: 0 })],
    });

    this.promptSync = this.syncPrompts(bucket);
    this.alarms = new AssayAlarms(this, 'Alarms', {
      queues: this.queues.all,
      alarmEmail: config.alarmEmail,
      watchdogMinutes: config.watchdogMinutes,
      dailySpendLimitUsd: config.dailySpendLimitUsd,
    });

    new CfnOutput(this, 'BucketName', { value: bucket.bucketName });
    new CfnOutput(this, 'TableName', { value: table.tableName });
    new CfnOutput(this, 'ItemsQueueUrl', { value: items.queue.queueUrl });
    new CfnOutput(this, 'ProviderSecretArn', { value: this.providerSecret.secretArn });
  }

  /**
   * The repository's `prompts/` copied to `prompts/` in the bucket on every deploy. Each file
   * whose content changed lands as an upload, so ingest re-evaluates the suites of no team that
   * read it (a team's suites read the bundled copy, or the team's own, and are re-run by uploads
   * in its folder only); unchanged files start nothing (ingest compares content hashes). Files
   * uploaded by users under `prompts/` are left alone (no prune).
   */
  private syncPrompts(bucket: s3.IBucket): s3deploy.BucketDeployment {
    const sync = new s3deploy.BucketDeployment(this, 'PromptSync', {
      sources: [s3deploy.Source.asset(`${REPO_ROOT}prompts`)],
      destinationBucket: bucket,
      destinationKeyPrefix: PROMPT_PREFIX,
      prune: false,
      retainOnDelete: true,
      memoryLimit: 256,
    });
    // The copy runs in a CDK-provided singleton function created at stack level; cdk-nag 3
    // matches findings exactly, so each generated permission is named.
    const handler = this.node.children.find((c) => c.node.id.startsWith('Custom::CDKBucketDeployment'));
    if (!handler) throw new Error('BucketDeployment handler not found: aws-cdk-lib changed its construct id');
    acknowledge(
      handler,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      'The CDK BucketDeployment handler writes its own CloudWatch logs with the basic execution role; it runs only during deploys.',
    );
    const generated = [
      'Action::s3:GetBucket*',
      'Action::s3:GetObject*',
      'Action::s3:List*',
      'Action::s3:Abort*',
      'Action::s3:DeleteObject*',
    ].map((finding) => `AwsSolutions-IAM5[${finding}]`);
    // The default synthesizer's assets bucket (qualifier hnb659fds).
    const assets = `arn:${this.partition}:s3:::cdk-hnb659fds-assets-${this.account}-${this.region}/*`;
    for (const finding of [...generated, iam5ResourceFinding(this, assets)]) {
      acknowledge(
        handler,
        finding,
        'Generated by CDK BucketDeployment: read its asset from the CDK assets bucket and copy it into the Assay bucket; deploy time only.',
      );
    }
    acknowledge(
      handler,
      'AwsSolutions-L1',
      'The BucketDeployment handler runtime is chosen by aws-cdk-lib and moves forward with it.',
    );
    acknowledge(
      handler,
      iam5ResourceFinding(this, `${bucket.bucketArn}/*`),
      'BucketDeployment writes the prompt files under prompts/ of the Assay bucket (CDK grants the bucket, not the prefix).',
    );
    return sync;
  }

  /**
   * The secret holding provider API keys as one JSON object, e.g.
   * `{"OPENAI_API_KEY": "…", "ANTHROPIC_API_KEY": "…", "GEMINI_API_KEY": "…"}`.
   * Created with a placeholder value (`{"placeholder": "<random>"}`) unless `providerSecretArn`
   * names an existing one; put the real keys in after the first deploy with
   * `aws secretsmanager put-secret-value --secret-id <ProviderSecretArn output> --secret-string file://keys.json`.
   * Later deploys never overwrite the value.
   */
  private providerKeys(config: AssayConfig): secretsmanager.ISecret {
    if (config.providerSecretArn) {
      return secretsmanager.Secret.fromSecretCompleteArn(this, 'ProviderSecret', config.providerSecretArn);
    }
    const secret = new secretsmanager.Secret(this, 'ProviderSecret', {
      description:
        'Assay provider API keys, one JSON object: {"OPENAI_API_KEY": "...", "ANTHROPIC_API_KEY": "...", "GEMINI_API_KEY": "..."}',
      generateSecretString: {
        secretStringTemplate: '{}',
        generateStringKey: 'placeholder',
        excludePunctuation: true,
      },
      removalPolicy: config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    acknowledge(
      secret,
      'AwsSolutions-SMG4',
      'The secret holds API keys issued by OpenAI, Anthropic and Google; Secrets Manager cannot rotate them. They are rotated in the vendor consoles and stored with put-secret-value.',
    );
    return secret;
  }
}
