import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Duration, Stack, Validations } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AssayConfig, ConfigError, configFromContext, DEFAULT_CONFIG } from '../../../infra/config.js';
import { AssayFunction } from '../../../infra/constructs/functions.js';
import { addNagChecks } from '../../../infra/nag.js';
import { AssayStack } from '../../../infra/stack.js';
import {
  RESULTS_PREFIX,
  SPILL_EXPIRATION_DAYS,
  SPILL_PREFIX,
  UPLOAD_PREFIXES,
} from '../../../shared/lib/layout/bucket.js';
import {
  DEFAULT_MAX_RECEIVE_COUNT,
  FUNCTION_MEMORY_MB,
  FUNCTION_TIMEOUT_SECONDS,
  FUNCTION_TMP_MB,
  type FunctionName,
  QUEUE_NAMES,
  QUEUES,
} from '../../../shared/lib/layout/queues.js';
import { TABLE } from '../../../shared/lib/layout/table.js';

/** The feature flags of infra/cdk.json, so the test synthesizes what `cdk synth` does. */
const CDK_CONTEXT: Record<string, unknown> = JSON.parse(
  readFileSync(new URL('../../../infra/cdk.json', import.meta.url), 'utf8'),
).context;

/** The queues and dead-letter queues the layout gives a consumer: one mapping each. */
const DECLARED_CONSUMERS = QUEUE_NAMES.reduce(
  (n, name) => n + 1 + (QUEUES[name].deadLetter.consumer ? 1 : 0),
  0,
);

/** Not the default, to prove the setting reaches the event source mapping. */
const WORKER_MAX_CONCURRENCY = 37;
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:assay/provider-keys-AbC123';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

interface Synthesized {
  app: App;
  stack: AssayStack;
  template: Template;
  outdir: string;
}

const outdirs: string[] = [];

/**
 * Builds the stack the way infra/app.ts does (cdk.json flags, cdk-nag registered) and
 * synthesizes it; the synth fails if cdk-nag reports an unacknowledged finding. Asset bundling
 * is skipped through CDK's own switch (as `cdk ls` does).
 */
function synthesize(config: AssayConfig): Synthesized {
  const outdir = mkdtempSync(join(tmpdir(), 'assay-infra-test-'));
  outdirs.push(outdir);
  const app = new App({ outdir, context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
  const stack = new AssayStack(app, 'AssayStack', { config });
  addNagChecks(app);
  return { app, stack, template: Template.fromStack(stack), outdir };
}

/** Logical id of the CloudFormation resource behind an L2 construct. */
function logicalId(stack: Stack, construct: IConstruct): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

/** Unacknowledged cdk-nag AwsSolutions findings in `scope`, one line each. */
function nagFindings(scope: IConstruct): string[] {
  return new AwsSolutionsChecks()
    .validateScope(scope)
    .violations.map(
      (v) => `${v.severity} ${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath)}`,
    );
}

/** The properties of the items queue's mapping to the worker. */
function workerMapping(template: Template, stack: AssayStack): Record<string, unknown> {
  const arn = JSON.stringify({ 'Fn::GetAtt': [logicalId(stack, stack.queues.items.queue), 'Arn'] });
  const mapping = Object.values(template.findResources('AWS::Lambda::EventSourceMapping') as Resources).find(
    (m) => JSON.stringify(m.Properties.EventSourceArn) === arn,
  );
  if (!mapping) throw new Error('no mapping of the items queue');
  return mapping.Properties;
}

/** The template properties of the resource behind an L2 construct. */
function propertiesOf(template: Template, stack: Stack, construct: IConstruct): Record<string, unknown> {
  return (template.toJSON().Resources as Resources)[logicalId(stack, construct)]!.Properties;
}

/** A function's environment variables in the template. */
function environmentOf(template: Template, stack: Stack, fn: IConstruct): Record<string, unknown> {
  return (propertiesOf(template, stack, fn).Environment as { Variables: Record<string, unknown> }).Variables;
}

function actionsOf(statement: Statement): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

/** The statements of the policy attached to the role with logical id `roleId`. */
function statementsOfRole(template: Template, roleId: string): Statement[] {
  const policies = Object.values(template.findResources('AWS::IAM::Policy') as Resources).filter((policy) =>
    (policy.Properties.Roles as unknown[]).some(
      (role) => JSON.stringify(role) === JSON.stringify({ Ref: roleId }),
    ),
  );
  return policies.flatMap(
    (policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
  );
}

afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

// Bundling the five handlers (esbuild, minified, with source maps) is checked once, on what
// `cdk synth` writes (test/integration/synth.test.ts); these synths skip it.
describe('AssayStack', () => {
  let template: Template;
  let stack: AssayStack;

  beforeAll(() => {
    ({ template, stack } = synthesize({ ...DEFAULT_CONFIG, workerMaxConcurrency: WORKER_MAX_CONCURRENCY }));
  }, 180_000);

  describe('bucket', () => {
    it('encrypts, blocks public access, versions and logs access to the log bucket', () => {
      template.hasResourceProperties('AWS::S3::Bucket', {
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        VersioningConfiguration: { Status: 'Enabled' },
        LoggingConfiguration: { DestinationBucketName: { Ref: logicalId(stack, stack.storage.accessLogs) } },
      });
    });

    it('encrypts the log bucket and blocks public access to it', () => {
      const logBucket = (template.toJSON().Resources as Resources)[
        logicalId(stack, stack.storage.accessLogs)
      ];
      expect(logBucket?.Properties).toMatchObject({
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
        PublicAccessBlockConfiguration: { BlockPublicAcls: true, RestrictPublicBuckets: true },
      });
    });

    it('denies every request without TLS on both buckets', () => {
      for (const bucket of [stack.storage.bucket, stack.storage.accessLogs]) {
        template.hasResourceProperties('AWS::S3::BucketPolicy', {
          Bucket: { Ref: logicalId(stack, bucket) },
          PolicyDocument: {
            Statement: Match.arrayWith([
              Match.objectLike({
                Effect: 'Deny',
                Action: 's3:*',
                Condition: { Bool: { 'aws:SecureTransport': 'false' } },
              }),
            ]),
          },
        });
      }
    });

    it('sends ObjectCreated under datasets/, suites/ and prompts/ to the events queue', () => {
      const eventsQueueArn = { 'Fn::GetAtt': [logicalId(stack, stack.queues.events.queue), 'Arn'] };
      template.hasResourceProperties('Custom::S3BucketNotifications', {
        NotificationConfiguration: {
          QueueConfigurations: ['datasets/', 'suites/', 'prompts/'].map((prefix) => ({
            Events: ['s3:ObjectCreated:*'],
            Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: prefix }] } },
            QueueArn: eventsQueueArn,
          })),
        },
      });
    });

    it("copies the repository's prompts/ to prompts/ in the bucket on deploy, never pruning users' files", () => {
      template.hasResourceProperties('Custom::CDKBucketDeployment', {
        DestinationBucketName: { Ref: logicalId(stack, stack.storage.bucket) },
        DestinationBucketKeyPrefix: 'prompts/',
        Prune: false,
      });
    });
  });

  describe('queues', () => {
    it('gives events, items and aggregate a dead-letter queue after maxReceiveCount receives', () => {
      const resources = template.toJSON().Resources as Resources;
      for (const { name, queue, deadLetterQueue } of stack.queues.all) {
        expect(resources[logicalId(stack, queue)]?.Properties.RedrivePolicy, name).toEqual({
          deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(stack, deadLetterQueue), 'Arn'] },
          maxReceiveCount: DEFAULT_CONFIG.maxReceiveCount,
        });
      }
      template.resourceCountIs('AWS::SQS::Queue', 6);
    });

    it('encrypts all six queues and denies non-TLS access to each', () => {
      const queues = Object.values(template.findResources('AWS::SQS::Queue') as Resources);
      expect(queues.every((queue) => queue.Properties.SqsManagedSseEnabled === true)).toBe(true);
      const sslDenials = Object.values(template.findResources('AWS::SQS::QueuePolicy') as Resources).filter(
        (p) =>
          (
            p.Properties.PolicyDocument as { Statement: Array<Statement & { Condition?: unknown }> }
          ).Statement.some(
            (s) =>
              s.Effect === 'Deny' &&
              JSON.stringify(s.Condition) === JSON.stringify({ Bool: { 'aws:SecureTransport': 'false' } }),
          ),
      );
      expect(sslDenials).toHaveLength(6);
    });

    it('keeps every consumed queue invisible for at least six times its consumer timeout', () => {
      const resources = template.toJSON().Resources as Resources;
      const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping') as Resources);
      expect(mappings).toHaveLength(DECLARED_CONSUMERS);
      for (const mapping of mappings) {
        const [queueId] = (mapping.Properties.EventSourceArn as { 'Fn::GetAtt': [string] })['Fn::GetAtt'];
        const functionId = (mapping.Properties.FunctionName as { Ref: string }).Ref;
        const visibility = resources[queueId]?.Properties.VisibilityTimeout as number;
        const timeout = resources[functionId]?.Properties.Timeout as number;
        expect(visibility, `${queueId} consumed by ${functionId}`).toBeGreaterThanOrEqual(6 * timeout);
      }
    });
  });

  describe('layout declaration (shared/layout/)', () => {
    const resourceOf = (construct: IConstruct) =>
      (template.toJSON().Resources as Resources)[logicalId(stack, construct)]?.Properties ?? {};

    it('builds each queue and dead-letter queue as declared: visibility, redrive, retention, FIFO', () => {
      for (const name of QUEUE_NAMES) {
        const declared = QUEUES[name];
        const { queue, deadLetterQueue } = stack.queues[name];
        const props = resourceOf(queue);
        expect(props.VisibilityTimeout, name).toBe(declared.visibilityTimeoutSeconds);
        expect(props.RedrivePolicy, name).toEqual({
          deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(stack, deadLetterQueue), 'Arn'] },
          maxReceiveCount: declared.maxReceiveCount,
        });
        expect(props.FifoQueue ?? false, name).toBe(declared.fifo);
        const dlq = resourceOf(deadLetterQueue);
        expect(dlq.VisibilityTimeout, `${name} DLQ`).toBe(declared.deadLetter.visibilityTimeoutSeconds);
        expect(dlq.MessageRetentionPeriod, `${name} DLQ`).toBe(declared.deadLetter.retentionDays * 86_400);
        expect(dlq.FifoQueue ?? false, `${name} DLQ`).toBe(declared.fifo);
      }
      expect(QUEUES.items.visibilityTimeoutSeconds).toBe(1800);
      expect(DEFAULT_CONFIG.maxReceiveCount).toBe(DEFAULT_MAX_RECEIVE_COUNT);
    });

    it('maps each declared consumer to its function with the declared batch size and window, and nothing else', () => {
      const declared = QUEUE_NAMES.flatMap((name) => [
        { queue: stack.queues[name].queue, consumer: QUEUES[name].consumer },
        ...(QUEUES[name].deadLetter.consumer
          ? [{ queue: stack.queues[name].deadLetterQueue, consumer: QUEUES[name].deadLetter.consumer }]
          : []),
      ]);
      const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping') as Resources);
      expect(mappings).toHaveLength(declared.length);
      for (const { queue, consumer } of declared) {
        const arn = { 'Fn::GetAtt': [logicalId(stack, queue), 'Arn'] };
        const mapping = mappings.find(
          (m) => JSON.stringify(m.Properties.EventSourceArn) === JSON.stringify(arn),
        );
        // The worker's batches are a deploy setting (workerBatchSize and its window).
        const worker = consumer.function === 'worker';
        expect(mapping?.Properties, queue.node.path).toMatchObject({
          FunctionName: { Ref: logicalId(stack, stack.functions[consumer.function]) },
          BatchSize: worker ? DEFAULT_CONFIG.workerBatchSize : consumer.batchSize,
        });
        expect(mapping?.Properties.MaximumBatchingWindowInSeconds ?? 0, queue.node.path).toBe(
          worker ? DEFAULT_CONFIG.workerBatchingWindowSeconds : consumer.maxBatchingWindowSeconds,
        );
      }
    });

    it('gives each function its declared timeout, memory and /tmp', () => {
      for (const [name, seconds] of Object.entries(FUNCTION_TIMEOUT_SECONDS)) {
        const props = resourceOf(stack.functions[name as FunctionName]);
        expect(props.Timeout, name).toBe(seconds);
        expect(props.MemorySize, name).toBe(FUNCTION_MEMORY_MB[name as FunctionName]);
        expect(props.EphemeralStorage, name).toEqual({ Size: FUNCTION_TMP_MB[name as FunctionName] });
      }
    });

    it('keys, bills and expires the table as declared, with the declared secondary indexes', () => {
      const props = resourceOf(stack.storage.table);
      expect(props.KeySchema).toEqual([
        { AttributeName: TABLE.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: TABLE.sortKey.name, KeyType: 'RANGE' },
      ]);
      expect(props.AttributeDefinitions).toEqual(
        [TABLE.partitionKey, TABLE.sortKey].map((k) => ({ AttributeName: k.name, AttributeType: k.type })),
      );
      expect(props.BillingMode).toBe(TABLE.billingMode);
      expect(props.TimeToLiveSpecification).toEqual({
        AttributeName: TABLE.timeToLiveAttribute,
        Enabled: true,
      });
      expect(props.GlobalSecondaryIndexes ?? []).toEqual(TABLE.globalSecondaryIndexes);
    });

    it('notifies the declared upload prefixes and expires the spill prefix as declared', () => {
      const notifications = Object.values(
        template.findResources('Custom::S3BucketNotifications') as Resources,
      ).flatMap(
        (r) =>
          (r.Properties.NotificationConfiguration as { QueueConfigurations: { Filter: unknown }[] })
            .QueueConfigurations,
      );
      expect(notifications.map((n) => n.Filter)).toEqual(
        UPLOAD_PREFIXES.map((prefix) => ({ Key: { FilterRules: [{ Name: 'prefix', Value: prefix }] } })),
      );
      const rules = (
        resourceOf(stack.storage.bucket).LifecycleConfiguration as { Rules: Record<string, unknown>[] }
      ).Rules;
      expect(rules).toContainEqual(
        expect.objectContaining({ Prefix: SPILL_PREFIX, ExpirationInDays: SPILL_EXPIRATION_DAYS }),
      );
      expect(SPILL_EXPIRATION_DAYS).toBeGreaterThan(QUEUES.items.deadLetter.retentionDays);
    });
  });

  describe('table', () => {
    it('declares no warm throughput by default', () => {
      expect(propertiesOf(template, stack, stack.storage.table).WarmThroughput).toBeUndefined();
    });

    it('keys on pk/sk, expires items by ttl, bills on demand, keeps PITR and is retained', () => {
      template.hasResource('AWS::DynamoDB::Table', {
        DeletionPolicy: 'Retain',
        Properties: {
          KeySchema: [
            { AttributeName: 'pk', KeyType: 'HASH' },
            { AttributeName: 'sk', KeyType: 'RANGE' },
          ],
          AttributeDefinitions: [
            { AttributeName: 'pk', AttributeType: 'S' },
            { AttributeName: 'sk', AttributeType: 'S' },
          ],
          BillingMode: 'PAY_PER_REQUEST',
          TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
          PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          SSESpecification: Match.objectLike({ SSEEnabled: true }),
          DeletionProtectionEnabled: true,
        },
      });
    });
  });

  describe('functions', () => {
    const ENV = {
      ingest: [
        'BUCKET_NAME',
        'TABLE_NAME',
        'ITEMS_QUEUE_URL',
        'AGGREGATE_QUEUE_URL',
        'EVENTS_QUEUE_URL',
        'ASSAY_MAX_ITEMS_PER_UPLOAD',
        'ASSAY_MAX_VARIANTS_TIMES_REPEATS',
        'ASSAY_MAX_OUTPUT_TOKENS',
        'ASSAY_DEFAULT_BUDGET_USD',
        'ASSAY_MAX_RUN_BUDGET_USD',
        'ASSAY_PROVIDER_KEYS',
        'ASSAY_INGEST_CLAIMS_PER_SECOND',
      ],
      worker: [
        'BUCKET_NAME',
        'TABLE_NAME',
        'AGGREGATE_QUEUE_URL',
        'PROVIDER_SECRET_ARN',
        'ASSAY_WORKER_MAX_CONCURRENCY',
        'ASSAY_DAILY_SPEND_LIMIT_USD',
      ],
      deadLetter: ['BUCKET_NAME', 'TABLE_NAME', 'AGGREGATE_QUEUE_URL'],
      aggregate: ['BUCKET_NAME', 'TABLE_NAME', 'AGGREGATE_QUEUE_URL', 'ASSAY_RESULT_READ_UNITS_PER_SECOND'],
      batchPoller: ['BUCKET_NAME', 'TABLE_NAME', 'ITEMS_QUEUE_URL', 'PROVIDER_SECRET_ARN'],
      watchdog: ['BUCKET_NAME', 'TABLE_NAME', 'AGGREGATE_QUEUE_URL', 'ASSAY_STUCK_AFTER_MS'],
    } as const;
    const SHARED_ENV = [
      'POWERTOOLS_SERVICE_NAME',
      'POWERTOOLS_METRICS_NAMESPACE',
      'POWERTOOLS_LOG_LEVEL',
      'ASSAY_CACHE_TTL_DAYS',
      'ASSAY_RESULT_TTL_DAYS',
      'NODE_OPTIONS',
    ];

    it('runs six functions on nodejs24.x, arm64, with active tracing and their own log group', () => {
      const functions = template.findResources('AWS::Lambda::Function', {
        Properties: { Runtime: 'nodejs24.x' },
      }) as Resources;
      expect(Object.keys(functions)).toHaveLength(6);
      for (const fn of Object.values(functions)) {
        expect(fn.Properties).toMatchObject({
          Architectures: ['arm64'],
          Handler: 'index.handler',
          TracingConfig: { Mode: 'Active' },
          LoggingConfig: { LogGroup: { Ref: expect.any(String) } },
        });
      }
      template.resourcePropertiesCountIs('AWS::Logs::LogGroup', { RetentionInDays: 30 }, 6);
    });

    it('sets exactly the environment each handler reads', () => {
      for (const [name, own] of Object.entries(ENV)) {
        const fn = stack.functions[name as keyof typeof ENV];
        const props = (template.toJSON().Resources as Resources)[logicalId(stack, fn)]!.Properties;
        const variables = (props.Environment as { Variables: Record<string, unknown> }).Variables;
        expect(Object.keys(variables).sort(), name).toEqual([...SHARED_ENV, ...own].sort());
        expect(variables.POWERTOOLS_METRICS_NAMESPACE).toBe('Assay');
      }
    });

    it("paces ingest's id claims: each of its 20 invocations takes 600 of the 12,000 a second", () => {
      expect(environmentOf(template, stack, stack.functions.ingest).ASSAY_INGEST_CLAIMS_PER_SECOND).toBe(
        '600',
      );
    });

    it("paces aggregate's reads of results: each of its 20 invocations takes 300 of half a new table's 12,000 RRU/s", () => {
      expect(
        environmentOf(template, stack, stack.functions.aggregate).ASSAY_RESULT_READ_UNITS_PER_SECOND,
      ).toBe('300');
    });
  });

  describe('event source mappings', () => {
    it('report partial batch failures on every mapping', () => {
      template.resourcePropertiesCountIs(
        'AWS::Lambda::EventSourceMapping',
        { FunctionResponseTypes: ['ReportBatchItemFailures'] },
        DECLARED_CONSUMERS,
      );
    });

    it("caps the worker's concurrency at the configured value, in batches of workerBatchSize gathered for up to its window", () => {
      const worker = workerMapping(template, stack);
      expect(worker).toMatchObject({
        BatchSize: DEFAULT_CONFIG.workerBatchSize,
        MaximumBatchingWindowInSeconds: DEFAULT_CONFIG.workerBatchingWindowSeconds,
        ScalingConfig: { MaximumConcurrency: WORKER_MAX_CONCURRENCY },
      });
      expect(worker.ProvisionedPollerConfig).toBeUndefined();
    });

    it('reserves concurrency for ingest and aggregate, and none for the others', () => {
      const reserved = Object.fromEntries(
        (Object.keys(stack.functions) as FunctionName[]).map((name) => [
          name,
          propertiesOf(template, stack, stack.functions[name]).ReservedConcurrentExecutions,
        ]),
      );
      expect(reserved).toEqual({
        ingest: DEFAULT_CONFIG.ingestReservedConcurrency,
        aggregate: DEFAULT_CONFIG.aggregateReservedConcurrency,
        worker: undefined,
        deadLetter: undefined,
        batchPoller: undefined,
        watchdog: undefined,
      });
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: logicalId(stack, stack.functions.ingest) },
        ScalingConfig: { MaximumConcurrency: DEFAULT_CONFIG.ingestMaxConcurrency },
      });
    });

    it('drains the items dead-letter queue with the dead-letter function', () => {
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: logicalId(stack, stack.functions.deadLetter) },
        EventSourceArn: { 'Fn::GetAtt': [logicalId(stack, stack.queues.items.deadLetterQueue), 'Arn'] },
      });
    });
  });

  describe('schedules', () => {
    it('runs the batch poller every minute and the watchdog every five from EventBridge rules, and nothing else', () => {
      const rules = Object.values(template.findResources('AWS::Events::Rule') as Resources);
      expect(rules).toHaveLength(2);
      const scheduled = [
        [stack.functions.batchPoller, 'rate(1 minute)'],
        [stack.functions.watchdog, 'rate(5 minutes)'],
      ] as const;
      for (const [fn, schedule] of scheduled) {
        template.hasResourceProperties('AWS::Events::Rule', {
          ScheduleExpression: schedule,
          State: 'ENABLED',
          Targets: [
            Match.objectLike({
              Arn: { 'Fn::GetAtt': [logicalId(stack, fn), 'Arn'] },
              RetryPolicy: { MaximumRetryAttempts: 0 },
            }),
          ],
        });
        template.hasResourceProperties('AWS::Lambda::Permission', {
          Principal: 'events.amazonaws.com',
          FunctionName: { 'Fn::GetAtt': [logicalId(stack, fn), 'Arn'] },
        });
      }
    });
  });

  describe('alarms', () => {
    it('alarms on each dead-letter queue when it holds any visible message', () => {
      for (const { deadLetterQueue } of stack.queues.all) {
        template.hasResourceProperties('AWS::CloudWatch::Alarm', {
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateNumberOfMessagesVisible',
          Dimensions: [
            { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(stack, deadLetterQueue), 'QueueName'] } },
          ],
          ComparisonOperator: 'GreaterThanThreshold',
          Threshold: 0,
        });
      }
      // Three dead-letter queues, stuck runs, the day's spend.
      template.resourceCountIs('AWS::CloudWatch::Alarm', 5);
      template.resourceCountIs('AWS::SNS::Topic', 0);
    });

    it("alarms when the watchdog counts a stuck run (its metric, under the watchdog's service name)", () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'Assay',
        MetricName: 'RunsStuck',
        Dimensions: [{ Name: 'service', Value: 'assay-watchdog' }],
        Period: 300,
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
      });
    });
  });

  describe('permissions', () => {
    type Name = keyof AssayStack['functions'];
    const names = (): Name[] => Object.keys(stack.functions) as Name[];
    const roleId = (name: Name): string => logicalId(stack, stack.functions[name].role!);

    it('lets the worker and the batch poller (to call models), and no other, read the provider secret', () => {
      const secretRef = JSON.stringify({ Ref: logicalId(stack, stack.providerSecret) });
      const readsSecret = (name: Name): boolean =>
        statementsOfRole(template, roleId(name)).some(
          (s) =>
            actionsOf(s).includes('secretsmanager:GetSecretValue') &&
            JSON.stringify(s.Resource) === secretRef,
        );
      expect(readsSecret('worker') && readsSecret('batchPoller')).toBe(true);
      // Ingest parses untrusted uploads: it checks declared key names, never the secret.
      expect(readsSecret('ingest') || readsSecret('deadLetter') || readsSecret('aggregate')).toBe(false);
    });

    it('grants no wildcard action (no s3:*, dynamodb:* or *) to any function role', () => {
      for (const name of names()) {
        const actions = statementsOfRole(template, roleId(name)).flatMap(actionsOf);
        expect(actions.length, name).toBeGreaterThan(0);
        expect(
          actions.filter((a) => a.includes('*')),
          name,
        ).toEqual([]);
      }
    });

    it('scopes object access by prefix: the worker reads spill/ and results/, and writes only results/', () => {
      const bucketArn = { 'Fn::GetAtt': [logicalId(stack, stack.storage.bucket), 'Arn'] };
      const objects = (prefix: string) => ({ 'Fn::Join': ['', [bucketArn, `/${prefix}*`]] });
      const statements = statementsOfRole(template, roleId('worker'));
      expect(statements).toContainEqual(
        expect.objectContaining({
          Action: 's3:GetObject',
          Resource: [objects(RESULTS_PREFIX), objects(SPILL_PREFIX)],
        }),
      );
      const writes = statements.filter((statement) => actionsOf(statement).includes('s3:PutObject'));
      expect(writes.map((statement) => statement.Resource)).toEqual([objects(RESULTS_PREFIX)]);
    });

    it('attaches no AWS managed policy to the function roles', () => {
      const resources = template.toJSON().Resources as Resources;
      for (const name of names()) {
        expect(resources[roleId(name)]?.Properties.ManagedPolicyArns, name).toBeUndefined();
      }
    });
  });

  describe('cdk-nag (AwsSolutions)', () => {
    it('leaves no unacknowledged finding, error or warning', () => {
      expect(nagFindings(stack)).toEqual([]);
      expect(Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'))).toEqual(
        [],
      );
    });

    it('gives every acknowledgement a written reason', () => {
      const acknowledgements = stack.node
        .findAll()
        .flatMap((c) => c.node.metadata)
        .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((entry) => Object.entries(entry.data as Record<string, string>));
      expect(acknowledgements.length).toBeGreaterThan(0);
      for (const [id, reason] of acknowledgements) expect(reason.length, id).toBeGreaterThan(40);
    });
  });
});

describe('AssayStack options', () => {
  it('imports providerSecretArn instead of creating a secret, and gives it to the worker', () => {
    const { stack, template } = synthesize({ ...DEFAULT_CONFIG, providerSecretArn: SECRET_ARN });
    template.resourceCountIs('AWS::SecretsManager::Secret', 0);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ PROVIDER_SECRET_ARN: SECRET_ARN }) },
    });
    expect(nagFindings(stack)).toEqual([]);
  }, 60_000);

  it('notifies alarmEmail through an SSL-only topic from every alarm', () => {
    const { stack, template } = synthesize({ ...DEFAULT_CONFIG, alarmEmail: 'ops@example.com' });
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
    });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    const topicRef = { Ref: logicalId(stack, stack.alarms.topic!) };
    template.resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { AlarmActions: [topicRef] }, 5);
    expect(nagFindings(stack)).toEqual([]);
  }, 60_000);

  it('gives the workers the fleet rate limits (rateLimits) as ASSAY_LIMITS, and only them', () => {
    const rateLimits = 'openai:gpt-4o-mini=3000rpm,2000000tpm';
    const { stack, template } = synthesize({ ...DEFAULT_CONFIG, rateLimits });
    const env = (fn: IConstruct) => {
      const properties = (template.toJSON().Resources as Resources)[logicalId(stack, fn)]!.Properties;
      return (properties.Environment as { Variables: Record<string, unknown> }).Variables;
    };
    expect(env(stack.functions.worker).ASSAY_LIMITS).toBe(rateLimits);
    expect(env(stack.functions.ingest).ASSAY_LIMITS).toBeUndefined();
  }, 60_000);

  it('lets the data go with the stack when retainData is false', () => {
    const { template } = synthesize({ ...DEFAULT_CONFIG, retainData: false });
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ DeletionProtectionEnabled: false }),
    });
    template.allResources('AWS::S3::Bucket', { DeletionPolicy: 'Delete' });
  }, 60_000);
});

describe('AssayStack at scale', () => {
  let template: Template;
  let stack: AssayStack;
  const config: AssayConfig = {
    ...DEFAULT_CONFIG,
    workerEventSourceMode: 'provisioned',
    workerMinPollers: 5,
    workerMaxPollers: 60,
    workerBatchSize: 50,
    workerBatchingWindowSeconds: 2,
    tableWarmReadUnitsPerSecond: 20_000,
    tableWarmWriteUnitsPerSecond: 30_000,
    resultRetentionDays: 14,
  };

  beforeAll(() => {
    ({ template, stack } = synthesize(config));
  }, 180_000);

  it('polls the items queue with provisioned pollers, and no maximum concurrency beside them', () => {
    const worker = workerMapping(template, stack);
    expect(worker).toMatchObject({
      BatchSize: 50,
      MaximumBatchingWindowInSeconds: 2,
      ProvisionedPollerConfig: { MinimumPollers: 5, MaximumPollers: 60 },
    });
    expect(worker.ScalingConfig).toBeUndefined();
    // The fleet the rate limits are shared over: 10 invocations a poller.
    expect(environmentOf(template, stack, stack.functions.worker).ASSAY_WORKER_MAX_CONCURRENCY).toBe('600');
  });

  it('declares the warm throughput on the table', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      WarmThroughput: { ReadUnitsPerSecond: 20_000, WriteUnitsPerSecond: 30_000 },
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
    });
  });

  it("gives every function the results' retention as ASSAY_RESULT_TTL_DAYS", () => {
    for (const name of Object.keys(stack.functions) as FunctionName[])
      expect(environmentOf(template, stack, stack.functions[name]).ASSAY_RESULT_TTL_DAYS, name).toBe('14');
  });

  it('leaves no unacknowledged cdk-nag finding', () => {
    expect(nagFindings(stack)).toEqual([]);
  });
});

describe('AssayFunction.consumes', () => {
  it('refuses a queue whose visibility timeout is under six times the function timeout', () => {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Probe');
    const queue = new sqs.Queue(stack, 'Queue', { visibilityTimeout: Duration.seconds(60) });
    const fn = new AssayFunction(stack, 'Fn', {
      entry: 'worker',
      description: 'probe',
      timeout: Duration.seconds(30),
      memorySize: 512,
      tmpSize: 512,
      logLevel: 'INFO',
      logRetentionDays: 30,
      cacheTtlDays: 30,
      resultRetentionDays: 0,
    });
    expect(() => fn.consumes(queue, { batchSize: 1, scaling: { maxConcurrency: 2 } })).toThrow(
      /at least 180s/,
    );
  }, 60_000);
});

describe('configFromContext', () => {
  const nodeWith = (context: Record<string, unknown>) => new App({ context }).node;

  it('fills defaults and reads -c values, which arrive as strings', () => {
    const config = configFromContext(
      nodeWith({
        workerMaxConcurrency: '80',
        retainData: 'false',
        logLevel: 'debug',
        providerSecretArn: SECRET_ARN,
      }),
    );
    expect(config).toEqual({
      ...DEFAULT_CONFIG,
      workerMaxConcurrency: 80,
      retainData: false,
      logLevel: 'DEBUG',
      providerSecretArn: SECRET_ARN,
      alarmEmail: undefined,
    });
  });

  it('reads the fleet, table and retention settings', () => {
    const config = configFromContext(
      nodeWith({
        workerEventSourceMode: 'Provisioned',
        workerMinPollers: '4',
        workerMaxPollers: '100',
        workerBatchSize: '100',
        workerBatchingWindowSeconds: '3',
        ingestMaxConcurrency: '40',
        ingestReservedConcurrency: '40',
        aggregateReservedConcurrency: '0',
        tableWriteQuota: '80000',
        tableWarmWriteUnitsPerSecond: '60000',
        resultRetentionDays: '0',
      }),
    );
    expect(config).toMatchObject({
      workerEventSourceMode: 'provisioned',
      workerMinPollers: 4,
      workerMaxPollers: 100,
      workerBatchSize: 100,
      workerBatchingWindowSeconds: 3,
      ingestMaxConcurrency: 40,
      ingestReservedConcurrency: 40,
      aggregateReservedConcurrency: 0,
      tableWriteQuota: 80_000,
      tableWarmWriteUnitsPerSecond: 60_000,
      tableWarmReadUnitsPerSecond: 0,
      resultRetentionDays: 0,
      // Half of what a new table serves (no warm read throughput declared).
      aggregateReadUnitsPerSecond: 6_000,
    });
    // Half the warm read throughput declared, unless set.
    expect(
      configFromContext(nodeWith({ tableWarmReadUnitsPerSecond: '20000' })).aggregateReadUnitsPerSecond,
    ).toBe(10_000);
    expect(
      configFromContext(nodeWith({ tableWarmReadUnitsPerSecond: '20000', aggregateReadUnitsPerSecond: '0' }))
        .aggregateReadUnitsPerSecond,
    ).toBe(0);
  });

  it.each([
    [{ workerMaxConcurrency: '1' }, /workerMaxConcurrency.*2 to 1000/],
    [{ maxReceiveCount: 'three' }, /maxReceiveCount/],
    [{ logRetentionDays: 31 }, /logRetentionDays/],
    [{ providerSecretArn: 'assay/keys' }, /providerSecretArn.*full ARN/],
    [{ logLevel: 'LOUD' }, /logLevel/],
    [{ rateLimits: 'openai:gpt-4o-mini=3000' }, /rateLimits.*not a positive <n>rpm or <n>tpm/],
    [{ workerEventSourceMode: 'dedicated' }, /workerEventSourceMode.*standard, provisioned/],
    [{ workerMinPollers: '1' }, /workerMinPollers.*2 to 200/],
    [{ workerMaxPollers: '2001' }, /workerMaxPollers.*2 to 2000/],
    [{ workerMinPollers: '50', workerMaxPollers: '40' }, /workerMinPollers.*above "workerMaxPollers"/],
    [{ workerBatchSize: '11', workerBatchingWindowSeconds: '0' }, /workerBatchSize.*batching window/],
    [{ workerBatchSize: '10001' }, /workerBatchSize.*1 to 10000/],
    [{ ingestReservedConcurrency: '10' }, /ingestReservedConcurrency.*below "ingestMaxConcurrency" \(20\)/],
    [
      { aggregateMaxConcurrency: '30' },
      /aggregateReservedConcurrency.*below "aggregateMaxConcurrency" \(30\)/,
    ],
    [{ tableWarmWriteUnitsPerSecond: '3000' }, /tableWarmWriteUnitsPerSecond.*from 4000/],
    [{ tableWarmReadUnitsPerSecond: '50000' }, /tableWarmReadUnitsPerSecond.*to the quota assumed \(40000\)/],
    [{ resultRetentionDays: '-1' }, /resultRetentionDays/],
  ])('rejects %o, naming the key', (context, message) => {
    expect(() => configFromContext(nodeWith(context))).toThrow(ConfigError);
    expect(() => configFromContext(nodeWith(context))).toThrow(message);
  });
});
