import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AwsEnv } from './env.js';

export interface AwsClients {
  s3: S3Client;
  sqs: SQSClient;
  dynamo: DynamoDBClient;
  /** Marshals with `removeUndefinedValues`, so optional fields may be written as undefined. */
  doc: DynamoDBDocumentClient;
  secrets: SecretsManagerClient;
}

export interface AwsClientOverrides {
  /** Default: the SDK's (AWS_REGION on Lambda). */
  region?: string;
  /** Default: the SDK's provider chain (the Lambda role). Tests pass dummy keys for moto. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/**
 * Builds the SDK clients. Call ONCE per cold start, at module level of the composition root:
 * clients hold connection pools and cached credentials that every invocation reuses.
 * With `AWS_ENDPOINT_URL` (moto_server, LocalStack) S3 uses path-style addressing, because
 * `<bucket>.127.0.0.1` does not resolve.
 */
export function createAwsClients(
  env: Pick<AwsEnv, 'AWS_ENDPOINT_URL'>,
  overrides: AwsClientOverrides = {},
): AwsClients {
  const common = {
    ...(env.AWS_ENDPOINT_URL === undefined ? {} : { endpoint: env.AWS_ENDPOINT_URL }),
    ...(overrides.region === undefined ? {} : { region: overrides.region }),
    ...(overrides.credentials === undefined ? {} : { credentials: overrides.credentials }),
  };
  const dynamo = new DynamoDBClient(common);
  return {
    s3: new S3Client({ ...common, forcePathStyle: env.AWS_ENDPOINT_URL !== undefined }),
    sqs: new SQSClient(common),
    dynamo,
    doc: createDocumentClient(dynamo),
    secrets: new SecretsManagerClient(common),
  };
}

/** The document client every DynamoDB adapter expects. */
export function createDocumentClient(dynamo: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(dynamo, { marshallOptions: { removeUndefinedValues: true } });
}
