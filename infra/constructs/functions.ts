import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy, Size, Stack, Token } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { VISIBILITY_TO_TIMEOUT_RATIO } from '../../shared/lib/layout/queues.js';
import { EXTERNAL_MODULES } from '../bundling.js';
import { ConfigError } from '../config.js';
import { acknowledge, iam5ResourceFinding } from '../nag.js';
import type { TableAction } from '../table-access.js';

/** The geographies of Bedrock's cross-region inference profiles: an id `us.anthropic.…` is a profile. */
const PROFILE_GEOGRAPHIES = ['us', 'us-gov', 'eu', 'apac', 'jp', 'au', 'ca', 'global'];

/** The model an inference profile id routes to (`us.anthropic.x` → `anthropic.x`); undefined for a model id. */
export function inferenceProfileModel(id: string): string | undefined {
  const dot = id.indexOf('.');
  return dot > 0 && PROFILE_GEOGRAPHIES.includes(id.slice(0, dot)) ? id.slice(dot + 1) : undefined;
}

/** Repository root: the bundler resolves `functions/*.ts`, tsconfig.json and package-lock.json from here. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface AssayFunctionProps {
  /** Entry file under `functions/` without extension, e.g. `worker`; also names the service. */
  readonly entry: string;
  readonly description: string;
  readonly timeout: Duration;
  /** Memory, MB (the layout's FUNCTION_MEMORY_MB). */
  readonly memorySize: number;
  /** Ephemeral storage (`/tmp`), MB (the layout's FUNCTION_TMP_MB). */
  readonly tmpSize: number;
  readonly logLevel: string;
  readonly logRetentionDays: number;
  readonly cacheTtlDays: number;
  /** ASSAY_RESULT_TTL_DAYS: days after which a run's results and counters in the table expire; 0: kept. */
  readonly resultRetentionDays: number;
  /** Concurrent executions set aside for this function alone (none when unset or 0). */
  readonly reservedConcurrency?: number;
  /** More environment variables of this function. */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Repository folders copied into the bundle root next to `index.mjs`, e.g. `prompts` (found at
   * run time as `new URL('./prompts/', import.meta.url)`, i.e. `$LAMBDA_TASK_ROOT/prompts`).
   */
  readonly bundledFolders?: readonly string[];
}

export interface BucketAccess {
  /** Key prefixes (ending in `/`) the function may read. */
  readonly read?: readonly string[];
  /** Key prefixes (ending in `/`) the function may write. */
  readonly write?: readonly string[];
}

export interface ConsumeOptions {
  readonly batchSize: number;
  /** Seconds Lambda gathers records before invoking; 0 or unset: as soon as any arrive. */
  readonly maxBatchingWindowSeconds?: number;
  /**
   * How the mapping scales: at most `maxConcurrency` concurrent invocations of Lambda's own
   * pollers, or dedicated pollers between `minimumPollers` and `maximumPollers` (provisioned
   * mode). Lambda takes one or the other on a mapping, never both.
   */
  readonly scaling:
    | { readonly maxConcurrency: number }
    | { readonly minimumPollers: number; readonly maximumPollers: number };
}

/**
 * One Assay Lambda with the shared defaults: Node.js 24 on arm64, an ESM bundle built locally
 * by esbuild (never docker), minified with source maps, X-Ray tracing, its own log group with
 * a retention, and a role that starts with nothing but write access to that log group.
 *
 * Access is added with the `use…`/`sendsTo`/`readsSecret` helpers, each of which grants the
 * permission and sets the environment variable the handler reads, so the two cannot drift.
 */
export class AssayFunction extends NodejsFunction {
  constructor(scope: Construct, id: string, props: AssayFunctionProps) {
    // The role and log group are created before `super` (they are siblings of the function):
    // the default Lambda role carries the AWSLambdaBasicExecutionRole managed policy, which
    // may create and write any log group in the account.
    const logGroup = new logs.LogGroup(scope, `${id}Logs`, {
      retention: props.logRetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const role = new iam.Role(scope, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of the Assay ${props.entry} function`,
    });
    logGroup.grantWrite(role);

    super(scope, id, {
      description: props.description,
      entry: `${REPO_ROOT}functions/${props.entry}.ts`,
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: `${REPO_ROOT}package-lock.json`,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize,
      ephemeralStorageSize: Size.mebibytes(props.tmpSize),
      timeout: props.timeout,
      ...(props.reservedConcurrency ? { reservedConcurrentExecutions: props.reservedConcurrency } : {}),
      // Active tracing is set on the resource below, with its permission in a policy of its own.
      logGroup,
      role,
      environment: {
        POWERTOOLS_SERVICE_NAME: `assay-${props.entry}`,
        POWERTOOLS_METRICS_NAMESPACE: 'Assay',
        POWERTOOLS_LOG_LEVEL: props.logLevel,
        ASSAY_CACHE_TTL_DAYS: String(props.cacheTtlDays),
        ASSAY_RESULT_TTL_DAYS: String(props.resultRetentionDays),
        // The bundle ships a source map; without this flag Node ignores it in stack traces.
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
      },
      bundling: {
        format: OutputFormat.ESM,
        mainFields: ['module', 'main'],
        // Some CommonJS dependencies call require() on Node built-ins, which an ESM bundle lacks.
        banner: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);",
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        // The SDK is bundled at the versions in package-lock.json rather than taken from the
        // runtime, whose copy changes without notice: the deployed code is what the tests ran.
        bundleAwsSDK: true,
        externalModules: EXTERNAL_MODULES,
        forceDockerBundling: false,
        logLevel: LogLevel.WARNING,
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: (inputDir, outputDir) =>
            (props.bundledFolders ?? []).map(
              (folder) => `cp -R "${inputDir}/${folder}" "${outputDir}/${folder}"`,
            ),
        },
      },
    });

    // Active tracing. X-Ray's PutTraceSegments/PutTelemetryRecords have no resource-level
    // permissions: their one statement with Resource "*" is a policy of its own, and only that
    // policy carries the acknowledgement, so a "*" anywhere else on the role fails the synth.
    (this.node.defaultChild as lambda.CfnFunction).tracingConfig = { mode: lambda.Tracing.ACTIVE };
    const tracing = new iam.Policy(scope, `${id}TracingPolicy`, {
      roles: [role],
      statements: [
        new iam.PolicyStatement({
          actions: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
          resources: ['*'],
        }),
      ],
    });
    // Lambda refuses active tracing to a role that cannot write traces yet.
    this.node.addDependency(tracing);
    acknowledge(
      tracing,
      'AwsSolutions-IAM5[Resource::*]',
      'This policy holds one statement: X-Ray PutTraceSegments/PutTelemetryRecords for active tracing, which support no resource-level permissions.',
    );
  }

  /**
   * Item access to the table: exactly `actions` (what this function's code sends; see
   * infra/table-access.ts), no table management; sets TABLE_NAME.
   */
  useTable(table: dynamodb.ITable, actions: readonly TableAction[]): this {
    if (actions.length === 0) throw new ConfigError(`${this.node.path}: useTable needs the actions it sends`);
    table.grant(this, ...actions.map((action) => `dynamodb:${action}`));
    this.addEnvironment('TABLE_NAME', table.tableName);
    return this;
  }

  /**
   * `bedrock:InvokeModel` (which the Converse API is authorised by) on exactly `models`, in the
   * stack's region: a foundation model id by its ARN; an inference profile id (`us.…`, `eu.…`)
   * by the profile's ARN and its model's ARN in any region (a profile routes a call to one of
   * several regions). Nothing when `models` is empty.
   */
  invokesBedrock(models: readonly string[]): this {
    if (models.length === 0) return this;
    const stack = Stack.of(this);
    const resources = models.flatMap((id) => {
      const profile = inferenceProfileModel(id);
      if (profile === undefined)
        return [`arn:${stack.partition}:bedrock:${stack.region}::foundation-model/${id}`];
      return [
        `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:inference-profile/${id}`,
        `arn:${stack.partition}:bedrock:*::foundation-model/${profile}`,
      ];
    });
    this.addToRolePolicy(new iam.PolicyStatement({ actions: ['bedrock:InvokeModel'], resources }));
    for (const resource of resources.filter((arn) => arn.includes(':bedrock:*:'))) {
      acknowledge(
        this.role!,
        iam5ResourceFinding(this, resource),
        'An inference profile routes each call to its model in one of several regions: the model is named exactly, the region is whichever the profile picks.',
      );
    }
    return this;
  }

  /**
   * Object access to the bucket, scoped by key prefix; sets BUCKET_NAME. Readers also get
   * `s3:ListBucket` on the bucket itself, so a missing key is a 404 (NoSuchKey) rather than a
   * 403 and prefixes can be listed.
   */
  useBucket(bucket: s3.IBucket, access: BucketAccess): this {
    const read = access.read ?? [];
    const write = access.write ?? [];
    for (const prefix of [...read, ...write]) {
      if (!/^[a-z0-9-]+\/$/.test(prefix)) {
        throw new ConfigError(
          `${this.node.path}: bucket prefix "${prefix}" must be one path segment ending in "/"`,
        );
      }
    }
    if (read.length > 0) {
      this.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }),
      );
      this.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['s3:GetObject'],
          resources: read.map((prefix) => bucket.arnForObjects(`${prefix}*`)),
        }),
      );
      bucket.encryptionKey?.grantDecrypt(this);
    }
    if (write.length > 0) {
      this.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['s3:PutObject', 's3:AbortMultipartUpload'],
          resources: write.map((prefix) => bucket.arnForObjects(`${prefix}*`)),
        }),
      );
      bucket.encryptionKey?.grantEncrypt(this);
    }
    for (const prefix of new Set([...read, ...write])) {
      acknowledge(
        this.role!,
        iam5ResourceFinding(this, bucket.arnForObjects(`${prefix}*`)),
        `Object access is scoped to the ${prefix} prefix of the Assay bucket; the keys under it are created at run time and cannot be listed in the policy.`,
      );
    }
    this.addEnvironment('BUCKET_NAME', bucket.bucketName);
    return this;
  }

  /** Sets environment variables of this function (settings its handler reads). */
  withEnvironment(variables: Readonly<Record<string, string>>): this {
    for (const [name, value] of Object.entries(variables)) this.addEnvironment(name, value);
    return this;
  }

  /** SendMessage (single and batch) to `queue`; sets `envName` to the queue URL. */
  sendsTo(queue: sqs.IQueue, envName: string): this {
    queue.grantSendMessages(this);
    this.addEnvironment(envName, queue.queueUrl);
    return this;
  }

  /** GetSecretValue on `secret`; sets `envName` (default PROVIDER_SECRET_ARN) to its ARN. */
  readsSecret(secret: secretsmanager.ISecret, envName = 'PROVIDER_SECRET_ARN'): this {
    secret.grantRead(this);
    this.addEnvironment(envName, secret.secretArn);
    return this;
  }

  /**
   * Invokes this function with batches from `queue`, reporting partial batch failures so that
   * only the failed records are retried. Refuses a queue whose visibility timeout is shorter
   * than six times this function's timeout: a batch still running would become visible again
   * and be processed twice.
   */
  consumes(queue: sqs.IQueue, options: ConsumeOptions): this {
    const cfnQueue = queue.node.defaultChild;
    const timeout = this.timeout?.toSeconds() ?? 3;
    if (cfnQueue instanceof sqs.CfnQueue) {
      const visibility = cfnQueue.visibilityTimeout ?? 30;
      if (!Token.isUnresolved(visibility) && visibility < VISIBILITY_TO_TIMEOUT_RATIO * timeout) {
        throw new ConfigError(
          `${queue.node.path} has a visibility timeout of ${visibility}s; consuming it with ${this.node.id} (timeout ${timeout}s) needs at least ${VISIBILITY_TO_TIMEOUT_RATIO * timeout}s`,
        );
      }
    }
    this.addEventSource(
      new SqsEventSource(queue, {
        batchSize: options.batchSize,
        ...('maxConcurrency' in options.scaling
          ? { maxConcurrency: options.scaling.maxConcurrency }
          : { provisionedPollerConfig: options.scaling }),
        maxBatchingWindow: options.maxBatchingWindowSeconds
          ? Duration.seconds(options.maxBatchingWindowSeconds)
          : undefined,
        reportBatchItemFailures: true,
      }),
    );
    return this;
  }
}
