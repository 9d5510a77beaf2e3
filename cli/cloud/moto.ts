/**
 * moto_server as a stand-in for AWS, for the integration tests and the local cloud: start one
 * on a free loopback port, build clients against it, create the same resources as the CDK
 * stack, and set or read the DynamoDB partition limits it enforces. Nothing global is set here (no env vars): {@link functionEnv} returns what the
 * functions' composition root reads, for the caller to apply.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { CreateTableCommand, UpdateTimeToLiveCommand, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, PutBucketNotificationConfigurationCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { type AwsClients, createAwsClients } from '../../shared/adapters/aws/clients.js';
import { UPLOAD_PREFIXES } from '../../shared/lib/layout/bucket.js';
import {
  QUEUE_NAMES,
  QUEUES,
  type QueueName,
  queueNames,
  SQS_DEFAULT_VISIBILITY_SECONDS,
} from '../../shared/lib/layout/queues.js';
import { TABLE } from '../../shared/lib/layout/table.js';
import { PACKAGE_ROOT } from '../package-root.js';

export const MOTO_REGION = 'us-east-1';
/** moto accepts any keys; these keep the SDK from looking for real ones. */
export const MOTO_CREDENTIALS = { accessKeyId: 'testing', secretAccessKey: 'testing' };

const repoRoot = `${PACKAGE_ROOT}/`;

export interface Moto {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  stop(): Promise<void>;
}

interface Candidate {
  command: string;
  args: (port: number) => string[];
}

/** moto behind a lock, one request at a time, as AWS's atomicity needs (see the script). */
const serialArgs = (port: number) => [
  `${repoRoot}scripts/moto_serial.py`,
  '-H',
  '127.0.0.1',
  '-p',
  String(port),
];

const CANDIDATES: Candidate[] = [
  { command: 'python3', args: serialArgs },
  { command: `${repoRoot}.venv/bin/python`, args: serialArgs },
];

/**
 * Starts moto's server (through scripts/moto_serial.py) on a free loopback port and resolves
 * once it answers HTTP. Tries `python3`, then the repo's `.venv` (scripts/setup-moto.sh). The server is killed by `stop()` and, failing that, on process exit.
 */
export async function startMoto({ timeoutMs = 30_000 }: { timeoutMs?: number } = {}): Promise<Moto> {
  const failures: string[] = [];
  for (const candidate of CANDIDATES) {
    if (candidate.command.startsWith('/') && !existsSync(candidate.command)) continue;
    const port = await freePort();
    const started = await tryStart(candidate, port, timeoutMs);
    if ('endpoint' in started) return started;
    failures.push(`${candidate.command}: ${started.error}`);
  }
  throw new Error(`could not start moto_server (run scripts/setup-moto.sh):\n${failures.join('\n')}`);
}

async function tryStart(
  candidate: Candidate,
  port: number,
  timeoutMs: number,
): Promise<Moto | { error: string }> {
  const child = spawn(candidate.command, candidate.args(port), {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // moto logs every request: keep draining the pipes (a full pipe blocks the server), keep a tail for errors.
  let tail = '';
  const keepTail = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-2000);
  };
  child.stdout?.on('data', keepTail);
  child.stderr?.on('data', keepTail);

  let exited: string | undefined;
  child.once('error', (err) => {
    exited = err.message;
  });
  child.once('exit', (code, signal) => {
    exited ??= `exited (${signal ?? code}) ${tail.trim()}`;
  });

  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  while (exited === undefined) {
    if (Date.now() > deadline) {
      await stopChild(child);
      process.off('exit', killOnExit);
      return { error: `did not answer on ${endpoint} within ${timeoutMs} ms. ${tail.trim()}` };
    }
    if (await answers(endpoint)) {
      return {
        endpoint,
        stop: async () => {
          process.off('exit', killOnExit);
          await stopChild(child);
        },
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  process.off('exit', killOnExit);
  return { error: exited };
}

async function answers(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

/** A port nobody listens on right now (the OS picks it; released before moto binds it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** SDK clients for a moto endpoint: region us-east-1, dummy credentials, path-style S3. */
export function motoClients(endpoint: string): AwsClients {
  return createAwsClients(
    { AWS_ENDPOINT_URL: endpoint },
    { region: MOTO_REGION, credentials: MOTO_CREDENTIALS },
  );
}

/** A queue name of the layout, or its dead-letter queue's (`itemsDlq`). */
export type QueueKey = QueueName | `${QueueName}Dlq`;

export interface ResourceNames {
  bucket: string;
  table: string;
  /** Each queue's and dead-letter queue's name (see {@link queueNames}). */
  queues: Record<QueueName, { queue: string; deadLetter: string }>;
}

/** Resource names with a random suffix, so several suites can share one moto_server. */
export function uniqueNames(prefix = 'assay'): ResourceNames {
  const id = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
  return { bucket: `${id}-bucket`, table: `${id}-table`, queues: queueNames(id) };
}

export interface QueueRef {
  url: string;
  arn: string;
}

export interface CloudResources {
  bucket: string;
  table: string;
  queues: Record<QueueKey, QueueRef>;
}

/** Prefixes whose ObjectCreated events go to the events queue (the layout's, as in the CDK stack). */
export const NOTIFIED_PREFIXES = UPLOAD_PREFIXES;

/**
 * The visibility timeout of every queue here unless told otherwise, seconds: SQS's default. The
 * stack's are six times function timeouts of minutes (half an hour on the work queues), after
 * which a message a handler failed comes back: too long for a local run or a test.
 */
export const LOCAL_VISIBILITY_SECONDS = SQS_DEFAULT_VISIBILITY_SECONDS;

export interface CloudResourceOptions {
  /** Receives before a message moves to its DLQ, on every queue. Default: the layout's (as the stack's). */
  maxReceiveCount?: number;
  /**
   * Visibility timeouts, seconds, of the queues named ({@link LOCAL_VISIBILITY_SECONDS} for the
   * others), or `'declared'`: the layout's, as the stack's.
   */
  visibilityTimeouts?: Partial<Record<QueueKey, number>> | 'declared';
  /** Visibility timeout of the items queue, seconds (as `visibilityTimeouts.items`); lower it to test redrive. */
  itemsVisibilityTimeout?: number;
}

/**
 * Creates the stack's resources in moto, from the same layout declaration the CDK stack is
 * built from (shared/layout/): the bucket with ObjectCreated notifications for the upload
 * prefixes to the events queue; each queue of the layout with its DLQ (RedrivePolicy after
 * `maxReceiveCount` receives, the DLQ's retention) and a visibility timeout (short unless
 * `visibilityTimeouts: 'declared'`, see {@link LOCAL_VISIBILITY_SECONDS}); the table (its key
 * schema, billing mode and TTL attribute).
 */
export async function createCloudResources(
  clients: Pick<AwsClients, 's3' | 'sqs' | 'dynamo'>,
  names: ResourceNames,
  options: CloudResourceOptions = {},
): Promise<CloudResources> {
  const { s3, sqs, dynamo } = clients;
  const { visibilityTimeouts = {} } = options;
  const declared = visibilityTimeouts === 'declared';
  const overrides: Partial<Record<QueueKey, number>> = {
    ...(options.itemsVisibilityTimeout === undefined ? {} : { items: options.itemsVisibilityTimeout }),
    ...(visibilityTimeouts === 'declared' ? {} : visibilityTimeouts),
  };
  const visibility = (key: QueueKey, declaredSeconds: number | undefined) =>
    overrides[key] ?? (declared ? declaredSeconds : LOCAL_VISIBILITY_SECONDS);

  const createQueue = async (name: string, attributes: Record<string, string> = {}): Promise<QueueRef> => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    return { url: QueueUrl!, arn: Attributes!.QueueArn! };
  };
  /** The attributes every queue of the layout may set: FIFO and the visibility timeout. */
  const common = (fifo: boolean, seconds: number | undefined): Record<string, string> => ({
    ...(fifo ? { FifoQueue: 'true' } : {}),
    ...(seconds === undefined ? {} : { VisibilityTimeout: String(seconds) }),
  });

  const created = await Promise.all(
    QUEUE_NAMES.map(async (key) => {
      const layout = QUEUES[key];
      const name = names.queues[key];
      const deadLetter = await createQueue(name.deadLetter, {
        ...common(layout.fifo, visibility(`${key}Dlq`, layout.deadLetter.visibilityTimeoutSeconds)),
        MessageRetentionPeriod: String(layout.deadLetter.retentionDays * 86_400),
      });
      const queue = await createQueue(name.queue, {
        ...common(layout.fifo, visibility(key, layout.visibilityTimeoutSeconds)),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: deadLetter.arn,
          maxReceiveCount: options.maxReceiveCount ?? layout.maxReceiveCount,
        }),
        // S3 sends the upload notifications to the events queue.
        ...(key === 'events' ? { Policy: s3MaySend(name.queue, names.bucket) } : {}),
      });
      return [
        [key, queue],
        [`${key}Dlq`, deadLetter],
      ] as const;
    }),
  );
  const queues = Object.fromEntries(created.flat()) as Record<QueueKey, QueueRef>;

  await s3.send(new CreateBucketCommand({ Bucket: names.bucket }));
  await s3.send(
    new PutBucketNotificationConfigurationCommand({
      Bucket: names.bucket,
      NotificationConfiguration: {
        QueueConfigurations: UPLOAD_PREFIXES.map((prefix) => ({
          QueueArn: queues.events.arn,
          Events: ['s3:ObjectCreated:*'],
          Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: prefix }] } },
        })),
      },
    }),
  );

  const keys = [TABLE.partitionKey, TABLE.sortKey];
  await dynamo.send(
    new CreateTableCommand({
      TableName: names.table,
      BillingMode: TABLE.billingMode,
      AttributeDefinitions: keys.map((key) => ({ AttributeName: key.name, AttributeType: key.type })),
      KeySchema: [
        { AttributeName: TABLE.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: TABLE.sortKey.name, KeyType: 'RANGE' },
      ],
    }),
  );
  await waitUntilTableExists({ client: dynamo, maxWaitTime: 30 }, { TableName: names.table });
  await dynamo.send(
    new UpdateTimeToLiveCommand({
      TableName: names.table,
      TimeToLiveSpecification: { AttributeName: TABLE.timeToLiveAttribute, Enabled: true },
    }),
  );

  return { bucket: names.bucket, table: names.table, queues };
}

/** The queue policy that lets the bucket's event notifications reach the queue. */
function s3MaySend(queueName: string, bucket: string): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Principal: { Service: 's3.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: `arn:aws:sqs:${MOTO_REGION}:*:${queueName}`,
        Condition: { ArnLike: { 'aws:SourceArn': `arn:aws:s3:::${bucket}` } },
      },
    ],
  });
}

/**
 * The environment the functions' composition root (functions/root.ts) reads, pointing at
 * moto: set it in `process.env` before the handlers are imported.
 */
export function functionEnv(endpoint: string, resources: CloudResources): Record<string, string> {
  return {
    BUCKET_NAME: resources.bucket,
    TABLE_NAME: resources.table,
    ITEMS_QUEUE_URL: resources.queues.items.url,
    AGGREGATE_QUEUE_URL: resources.queues.aggregate.url,
    EVENTS_QUEUE_URL: resources.queues.events.url,
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: MOTO_REGION,
    AWS_ACCESS_KEY_ID: MOTO_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: MOTO_CREDENTIALS.secretAccessKey,
  };
}

/**
 * Empties queues, e.g. between tests. (Real SQS allows one purge per queue per 60 s and takes up to
 * a minute; moto purges at once.)
 */
export async function purgeQueues(clients: Pick<AwsClients, 'sqs'>, queueUrls: string[]): Promise<void> {
  await Promise.all(queueUrls.map((QueueUrl) => clients.sqs.send(new PurgeQueueCommand({ QueueUrl }))));
}

/**
 * DynamoDB's own limits per partition key value, request units per second: what the moto
 * stand-in (scripts/moto_serial.py) enforces on a table unless {@link setPartitionLimits} says
 * otherwise.
 */
export const DYNAMODB_PARTITION_LIMITS = { writeUnitsPerSecond: 1000, readUnitsPerSecond: 3000 } as const;

/** Request units per second allowed to each partition key value of a table. */
export interface PartitionLimits {
  writeUnitsPerSecond: number;
  readUnitsPerSecond: number;
}

/** What {@link setPartitionLimits} changes: one table's limits, or with no `table` the default's. */
export interface PartitionLimitsChange extends Partial<PartitionLimits> {
  /** The table's name; omitted, the default of every table that has no limits of its own. */
  table?: string;
  /**
   * The table's limits hold only for partition keys that start with this (a test throttles the
   * items of one kind, e.g. a run's results); `''` holds them for every key again.
   */
  keyPrefix?: string;
}

/** One partition key value's reads or writes on a table, as {@link partitionStats} reports them. */
export interface HotPartitionKey {
  partitionKey: string;
  kind: 'read' | 'write';
  /** The most units it took within any one second. */
  peakUnitsPerSecond: number;
  /** Units it took in all (requests refused take none). */
  consumedUnits: number;
  /** Its parts of requests refused: items, keys or transaction actions. */
  throttledRequests: number;
  /** Set when the key is a secondary index's. */
  index?: string;
}

/** What the moto stand-in enforced on one table. */
export interface PartitionStats {
  table: string;
  limits: PartitionLimits;
  /**
   * Requests refused (a throttling error, or a batch that left parts unprocessed), in all, by
   * read/write, and by operation (`{ PutItem: { write: 2 } }`).
   */
  throttledRequests: {
    total: number;
    read: number;
    write: number;
    byOperation: Record<string, Partial<Record<'read' | 'write', number>>>;
  };
  /** Its hottest partition keys, highest peak units per second first (ten at most). */
  hotKeys: HotPartitionKey[];
  /** Requests served (a failed condition included) and their units, by operation. */
  served: Record<string, { requests: number; read: number; write: number }>;
}

/**
 * Sets the per-partition-key limits the moto stand-in enforces at `endpoint`: on one table
 * (`table`), or with no table the default of every table without limits of its own (one
 * moto_server serves many test files: prefer a table). A rate left out keeps its value.
 * Requests over a limit are refused as DynamoDB refuses them: a
 * `ProvisionedThroughputExceededException`, a `TransactionCanceledException` with a
 * `ThrottlingError`, or batch parts left unprocessed. Resolves to the limits now in force there.
 */
export async function setPartitionLimits(
  endpoint: string,
  change: PartitionLimitsChange,
): Promise<PartitionLimits & { table?: string }> {
  return control(`${endpoint}/_assay/limits`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(change),
  });
}

/**
 * What the moto stand-in at `endpoint` enforced on `table` since it started: its limits, the
 * requests refused, and its hottest partition keys with their peak units per second.
 */
export async function partitionStats(endpoint: string, table: string): Promise<PartitionStats> {
  return control(`${endpoint}/_assay/limits/stats?table=${encodeURIComponent(table)}`, { method: 'GET' });
}

/** A request to moto_serial.py's control endpoint; its refusal (400, 404) becomes an Error with its reason. */
async function control<T>(url: string, init: RequestInit): Promise<T> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as T & { message?: string };
  if (!res.ok) throw new Error(`moto control ${init.method} ${url}: ${res.status} ${body.message ?? ''}`);
  return body;
}
