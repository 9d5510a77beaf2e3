import type { AwsClients } from './clients.js';
import { DynamoLlmCache, type DynamoLlmCacheOptions } from './dynamo-llm-cache.js';
import { DynamoRunStore } from './dynamo-run-store.js';
import type { AwsEnv } from './env.js';
import { S3BlobStore } from './s3-blob-store.js';
import { SqsAggregateTrigger } from './sqs-aggregate-trigger.js';
import { SqsWorkQueue } from './sqs-work-queue.js';

export * from './clients.js';
export * from './dynamo-llm-cache.js';
export * from './dynamo-run-store.js';
export * from './env.js';
export * from './s3-blob-store.js';
export * from './sqs-aggregate-trigger.js';
export * from './sqs-work-queue.js';

export interface AwsAdapters {
  blobs: S3BlobStore;
  queue: SqsWorkQueue;
  runs: DynamoRunStore;
  cache: DynamoLlmCache;
  trigger: SqsAggregateTrigger;
}

/** Every AWS adapter, wired from the parsed env and the clients built once per cold start. */
export function createAwsAdapters(
  env: AwsEnv,
  clients: AwsClients,
  options: { onCacheError?: DynamoLlmCacheOptions['onError'] } = {},
): AwsAdapters {
  const blobs = new S3BlobStore({ client: clients.s3, bucket: env.BUCKET_NAME });
  return {
    blobs,
    queue: new SqsWorkQueue({ client: clients.sqs, queueUrl: env.ITEMS_QUEUE_URL, blobs }),
    runs: new DynamoRunStore({ client: clients.doc, tableName: env.TABLE_NAME }),
    cache: new DynamoLlmCache({
      client: clients.doc,
      tableName: env.TABLE_NAME,
      ttlDays: env.ASSAY_CACHE_TTL_DAYS,
      ...(options.onCacheError ? { onError: options.onCacheError } : {}),
    }),
    trigger: new SqsAggregateTrigger({ client: clients.sqs, queueUrl: env.AGGREGATE_QUEUE_URL }),
  };
}
