/**
 * moto_server as a stand-in for AWS, for the integration tests and the local cloud: start one
 * on a free loopback port, build clients against it, create the same resources as the CDK
 * stack. Nothing global is set here (no env vars): {@link functionEnv} returns what the
 * functions' composition root reads, for the caller to apply.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { CreateTableCommand, UpdateTimeToLiveCommand, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, PutBucketNotificationConfigurationCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { type AwsClients, createAwsClients } from '../../shared/adapters/aws/clients.js';
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

export interface ResourceNames {
  bucket: string;
  table: string;
  eventsQueue: string;
  itemsQueue: string;
  itemsDlq: string;
  aggregateQueue: string;
}

/** Resource names with a random suffix, so several suites can share one moto_server. */
export function uniqueNames(prefix = 'assay'): ResourceNames {
  const id = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
  return {
    bucket: `${id}-bucket`,
    table: `${id}-table`,
    eventsQueue: `${id}-events`,
    itemsQueue: `${id}-items`,
    itemsDlq: `${id}-items-dlq`,
    aggregateQueue: `${id}-aggregate`,
  };
}

export interface QueueRef {
  url: string;
  arn: string;
}

export interface CloudResources {
  bucket: string;
  table: string;
  queues: { events: QueueRef; items: QueueRef; itemsDlq: QueueRef; aggregate: QueueRef };
}

/** Prefixes whose ObjectCreated events go to the events queue (as in the CDK stack). */
export const NOTIFIED_PREFIXES = ['datasets/', 'suites/', 'prompts/'] as const;

export interface CloudResourceOptions {
  /** Receives before an item message moves to the DLQ. Default 3. */
  maxReceiveCount?: number;
  /** Visibility timeout of the items queue, seconds. Default 30; lower it to test redrive. */
  itemsVisibilityTimeout?: number;
}

/**
 * Creates the stack's resources in moto: the bucket with ObjectCreated notifications for
 * datasets/, suites/ and prompts/ to the events queue; the items queue with its DLQ
 * (RedrivePolicy); the aggregate queue; the table (pk/sk, on demand, TTL on `ttl`).
 */
export async function createCloudResources(
  clients: Pick<AwsClients, 's3' | 'sqs' | 'dynamo'>,
  names: ResourceNames,
  { maxReceiveCount = 3, itemsVisibilityTimeout = 30 }: CloudResourceOptions = {},
): Promise<CloudResources> {
  const { s3, sqs, dynamo } = clients;

  const createQueue = async (name: string, attributes: Record<string, string> = {}): Promise<QueueRef> => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    return { url: QueueUrl!, arn: Attributes!.QueueArn! };
  };

  const [events, itemsDlq, aggregate] = await Promise.all([
    createQueue(names.eventsQueue, {
      Policy: JSON.stringify({
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Principal: { Service: 's3.amazonaws.com' },
            Action: 'sqs:SendMessage',
            Resource: `arn:aws:sqs:${MOTO_REGION}:*:${names.eventsQueue}`,
            Condition: { ArnLike: { 'aws:SourceArn': `arn:aws:s3:::${names.bucket}` } },
          },
        ],
      }),
    }),
    createQueue(names.itemsDlq, { MessageRetentionPeriod: String(14 * 86_400) }),
    createQueue(names.aggregateQueue),
  ]);
  const items = await createQueue(names.itemsQueue, {
    VisibilityTimeout: String(itemsVisibilityTimeout),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: itemsDlq.arn, maxReceiveCount }),
  });

  await s3.send(new CreateBucketCommand({ Bucket: names.bucket }));
  await s3.send(
    new PutBucketNotificationConfigurationCommand({
      Bucket: names.bucket,
      NotificationConfiguration: {
        QueueConfigurations: NOTIFIED_PREFIXES.map((prefix) => ({
          QueueArn: events.arn,
          Events: ['s3:ObjectCreated:*'],
          Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: prefix }] } },
        })),
      },
    }),
  );

  await dynamo.send(
    new CreateTableCommand({
      TableName: names.table,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
    }),
  );
  await waitUntilTableExists({ client: dynamo, maxWaitTime: 30 }, { TableName: names.table });
  await dynamo.send(
    new UpdateTimeToLiveCommand({
      TableName: names.table,
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
    }),
  );

  return { bucket: names.bucket, table: names.table, queues: { events, items, itemsDlq, aggregate } };
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
