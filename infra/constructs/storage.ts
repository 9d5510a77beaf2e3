import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3n from 'aws-cdk-lib/aws-s3-notifications';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  ACCESS_LOG_PREFIX,
  SPILL_EXPIRATION_DAYS,
  SPILL_PREFIX,
  UPLOAD_PREFIXES,
} from '../../shared/lib/layout/bucket.js';
import { TABLE } from '../../shared/lib/layout/table.js';
import { teamKeyPatterns } from '../../shared/lib/layout/tenancy.js';
import { acknowledge } from '../nag.js';

/** The table declaration's attribute types and billing mode, in CDK's terms. */
const ATTRIBUTE_TYPES = { S: dynamodb.AttributeType.STRING } as const;
const BILLING_MODES = { PAY_PER_REQUEST: dynamodb.BillingMode.PAY_PER_REQUEST } as const;

export interface AssayStorageProps {
  /** RETAIN the bucket and table on stack deletion and turn on table deletion protection. */
  readonly retainData: boolean;
  /** Units a second the table serves from its creation; 0: none declared (an on-demand table's own start). */
  readonly warmReadUnitsPerSecond: number;
  readonly warmWriteUnitsPerSecond: number;
}

/** The table's warm throughput as declared: each side only when set (0: none). */
function warmThroughput(props: AssayStorageProps): { warmThroughput?: dynamodb.WarmThroughput } {
  const declared = {
    ...(props.warmReadUnitsPerSecond > 0 ? { readUnitsPerSecond: props.warmReadUnitsPerSecond } : {}),
    ...(props.warmWriteUnitsPerSecond > 0 ? { writeUnitsPerSecond: props.warmWriteUnitsPerSecond } : {}),
  };
  return Object.keys(declared).length > 0 ? { warmThroughput: declared } : {};
}

/**
 * The Assay bucket (uploads, spilled items, reports), the bucket receiving its server access
 * logs, and the single DynamoDB table (runs, results, counters, LLM cache entries with TTL).
 */
export class AssayStorage extends Construct {
  readonly bucket: s3.Bucket;
  readonly accessLogs: s3.Bucket;
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: AssayStorageProps) {
    super(scope, id);
    const removalPolicy = props.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;

    // Access-log delivery only supports SSE-S3 on the target bucket, hence S3-managed keys.
    // cdk-nag's S1 (server access logs) accepts this bucket without logs of its own because it
    // is another bucket's log destination.
    this.accessLogs = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      // Object ownership left to CDK: log delivery is granted by bucket policy under the
      // serverAccessLogsUseBucketPolicy flag (cdk.json), by ACL (needing ObjectWriter) without it.
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(365) }],
      removalPolicy,
    });
    this.bucket = new s3.Bucket(this, 'Bucket', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: true,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: ACCESS_LOG_PREFIX,
      lifecycleRules: [
        // Longer than the items dead-letter queue keeps a message whose body may be spilled.
        { id: 'expire-spill', prefix: SPILL_PREFIX, expiration: Duration.days(SPILL_EXPIRATION_DAYS) },
        {
          id: 'expire-old-versions',
          noncurrentVersionExpiration: Duration.days(30),
          abortIncompleteMultipartUploadAfter: Duration.days(7),
          expiredObjectDeleteMarker: true,
        },
      ],
      removalPolicy,
    });

    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: TABLE.partitionKey.name, type: ATTRIBUTE_TYPES[TABLE.partitionKey.type] },
      sortKey: { name: TABLE.sortKey.name, type: ATTRIBUTE_TYPES[TABLE.sortKey.type] },
      billingMode: BILLING_MODES[TABLE.billingMode],
      timeToLiveAttribute: TABLE.timeToLiveAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: props.retainData,
      ...warmThroughput(props),
      removalPolicy,
    });
  }

  /**
   * Tenancy in the bucket: for each team, a statement of the bucket policy denying every
   * principal but the team's writers to put or delete the team's keys (its suites, their
   * datasets, its prompt folder: see shared/lib/layout/tenancy.ts). A deny in the bucket policy
   * holds whatever the writers' own policies allow. No statement when no team is declared.
   */
  restrictTeamWriters(teams: Readonly<Record<string, readonly string[]>>): void {
    for (const [team, writers] of Object.entries(teams).sort(([a], [b]) => a.localeCompare(b))) {
      this.bucket.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: `OnlyTeam${team}WritesItsKeys`,
          effect: iam.Effect.DENY,
          principals: [new iam.AnyPrincipal()],
          actions: ['s3:PutObject', 's3:DeleteObject', 's3:DeleteObjectVersion'],
          resources: teamKeyPatterns(team).map((pattern) => this.bucket.arnForObjects(pattern)),
          conditions: { ArnNotLike: { 'aws:PrincipalArn': [...writers] } },
        }),
      );
    }
  }

  /**
   * Sends an S3 notification to `queue` for every object created under the upload prefixes.
   * The queue must accept SSE-S3 publishers (SQS-managed encryption, or a KMS key whose
   * policy admits s3.amazonaws.com).
   */
  notifyUploads(queue: sqs.IQueue): void {
    for (const prefix of UPLOAD_PREFIXES) {
      this.bucket.addEventNotification(s3.EventType.OBJECT_CREATED, new s3n.SqsDestination(queue), {
        prefix,
      });
    }
    // CDK configures bucket notifications with a stack-wide singleton custom resource.
    for (const handler of Stack.of(this).node.children) {
      if (!handler.node.id.startsWith('BucketNotificationsHandler')) continue;
      acknowledge(
        handler,
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        "CDK's BucketNotificationsHandler (a deploy-time custom resource that sets the bucket's notification configuration) creates its own role with this managed policy; CDK offers no way to replace it.",
      );
    }
  }
}
