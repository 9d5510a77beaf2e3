/**
 * The capacity model's stand-ins of DynamoDB, SQS and S3 (bench/cloud/) under the product's
 * real AWS adapters and the official SDK clients: a representative call of each adapter works
 * as it does on moto (the contract suites in test/integration/contracts/ hold the full
 * promises), and the queue and bucket behave as SQS and S3 do where the product relies on it.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  NotFound,
  S3ServiceException,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  type Message,
  PurgeQueueCommand,
  PurgeQueueInProgress,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  TooManyEntriesInBatchRequest,
} from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { SimAws } from '../../../bench/cloud/clients.js';
import { SimWorld } from '../../../bench/cloud/world.js';
import { type CloudResources, createCloudResources, uniqueNames } from '../../../cli/cloud/moto.js';
import type { AwsClients } from '../../../shared/adapters/aws/clients.js';
import { DynamoBatchStore } from '../../../shared/adapters/aws/dynamo-batch-store.js';
import { DynamoLlmCache } from '../../../shared/adapters/aws/dynamo-llm-cache.js';
import { DynamoPromptIndex } from '../../../shared/adapters/aws/dynamo-prompt-index.js';
import { DynamoRateLimitStore } from '../../../shared/adapters/aws/dynamo-rate-limit-store.js';
import { DynamoRunStore } from '../../../shared/adapters/aws/dynamo-run-store.js';
import { DynamoLeaderboard, DynamoSweepStore } from '../../../shared/adapters/aws/dynamo-sweeps.js';
import { S3BlobStore } from '../../../shared/adapters/aws/s3-blob-store.js';
import { SqsAggregateTrigger } from '../../../shared/adapters/aws/sqs-aggregate-trigger.js';
import { decodeItemMessage, SqsWorkQueue } from '../../../shared/adapters/aws/sqs-work-queue.js';
import { RunExistsError, SweepExistsError } from '../../../shared/model/errors.js';
import type { Completion } from '../../../shared/model/provider.js';
import { LEADERBOARD_SCHEMA_VERSION, type LeaderboardEntry } from '../../../shared/model/report.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { prepareSweep } from '../../../shared/sweeps/sweep.js';
import { suiteInput } from '../../helpers.js';
import { collect, fresh, result, runRecord } from '../../integration/contracts/fixtures.js';

const world = new SimWorld();
const aws = new SimAws(world);
let clients: AwsClients;
let res: CloudResources;

/** Runs a test's body in simulated time. */
const sim =
  <T>(body: () => Promise<T>) =>
  () =>
    world.run(body);

beforeAll(
  sim(async () => {
    clients = aws.clients();
    // The same resources the local cloud makes in moto: bucket + notifications, queues + DLQs, table.
    res = await createCloudResources(clients, uniqueNames('fakes'), { maxReceiveCount: 2 });
  }),
);

const completion = (text: string): Completion => ({
  text,
  finishReason: 'stop',
  usage: { input: 10, output: 2, cached: 0 },
  costUsd: 0.00001,
  latencyMs: 5,
  cached: false,
  simulated: true,
  providerId: 'sim:judge',
});

async function drain(url: string, count: number): Promise<Message[]> {
  const out: Message[] = [];
  for (let polls = 0; out.length < count && polls < 20; polls++) {
    const { Messages = [] } = await clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    for (const m of Messages) {
      out.push(m);
      await clients.sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle! }));
    }
  }
  return out;
}

describe('the DynamoDB adapters over the simulated DynamoDB', () => {
  it(
    'DynamoRunStore: a run is created once, a redelivered result counts once, results stream back',
    sim(async () => {
      const store = new DynamoRunStore({ client: clients.doc, tableName: res.table });
      const id = fresh('run');
      await store.createRun(runRecord(id));
      await expect(store.createRun(runRecord(id))).rejects.toBeInstanceOf(RunExistsError);
      expect(await store.getRun(id)).toMatchObject({ runId: id, suiteName: 'demo' });

      const first = await store.recordResult(result(id, 'a'));
      const again = await store.recordResult(result(id, 'a'));
      await store.recordResult(
        result(id, 'b', { row: 2, status: 'failed', failure: { kind: 'parse', message: 'no label' } }),
      );

      expect(first.recorded).toBe(true);
      expect(again.recorded).toBe(false);
      expect(await store.counters(id)).toMatchObject({ done: 1, failed: 1 });
      expect((await collect(store.results(id))).map((r) => r.itemId).sort()).toEqual(['a', 'b']);
    }),
  );

  it(
    'DynamoLlmCache: a miss, then a put read back (one BatchGetItem for the lookups of a turn)',
    sim(async () => {
      const cache = new DynamoLlmCache({
        client: clients.doc,
        tableName: res.table,
        onError: (err) => {
          throw err;
        },
      });
      const [a, b] = [fresh('key'), fresh('key')];
      expect(await cache.get(a)).toBeUndefined();
      await cache.put(a, completion('yes'));
      const before = aws.report().dynamo.byOperation.BatchGetItem?.requests ?? 0;
      const [hit, miss] = await Promise.all([cache.get(a), cache.get(b)]);
      expect(hit).toEqual(completion('yes'));
      expect(miss).toBeUndefined();
      expect(aws.report().dynamo.byOperation.BatchGetItem?.requests).toBe(before + 1);
    }),
  );

  it(
    'DynamoSweepStore and DynamoLeaderboard: a sweep is created once and claimed once; the board reads back',
    sim(async () => {
      const sweeps = new DynamoSweepStore({ client: clients.doc, tableName: res.table });
      const runs = [fresh('r'), fresh('r')];
      const suite = validateSuite(
        { ...suiteInput({ name: fresh('sweep') }), variants: runs.map((_, i) => ({ name: `v${i}` })) },
        'test sweep',
      );
      const sweep = prepareSweep(
        suite,
        runs.map((runId, i) => ({ variant: `v${i}`, runId })),
        { datasetKey: 'data.csv', reportPrefix: '' },
      );
      await sweeps.createSweep(sweep);
      await expect(sweeps.createSweep(sweep)).rejects.toBeInstanceOf(SweepExistsError);
      expect(await sweeps.getSweep(sweep.sweepId)).toEqual(sweep);
      expect(await sweeps.sweepsOf(runs[0]!)).toEqual([sweep.sweepId]);
      expect(await sweeps.claimSweep(sweep.sweepId)).toBe(true);
      expect(await sweeps.claimSweep(sweep.sweepId)).toBe(false);

      const board = new DynamoLeaderboard({ client: clients.doc, tableName: res.table });
      const runId = fresh('run');
      const line: LeaderboardEntry = {
        schemaVersion: LEADERBOARD_SCHEMA_VERSION,
        runId,
        suite: 'demo',
        task: 'judge',
        dataset: 'datasets/demo/data.csv',
        config: {},
        backends: ['sim:judge'],
        promptVersion: 'p@1',
        simulated: true,
        primaryScorer: 'score',
        metrics: { mae: { value: 0.3, n: 40, ci: [0.05, 0.575] } },
        items: 40,
        scored: 40,
        per10kUsd: 4.27,
        p50LatencyMs: null,
        finishedAt: '2026-01-01T00:00:00.000Z',
      };
      await board.record(line);
      expect((await board.entries()).filter((e) => e.runId === runId)).toEqual([line]);
    }),
  );

  it(
    'DynamoPromptIndex: suites by prompt, sorted; a path a suite stops reading is forgotten',
    sim(async () => {
      const index = new DynamoPromptIndex({ client: clients.doc, tableName: res.table });
      const [p, q] = [`${fresh('p')}.md`, `${fresh('q')}.md`];
      await index.setSuitePrompts('zeta', [p]);
      await index.setSuitePrompts('alpha', [p, q]);
      expect(await index.suitesUsing(p)).toEqual(['alpha', 'zeta']);
      await index.setSuitePrompts('alpha', [q]);
      expect(await index.suitesUsing(p)).toEqual(['zeta']);
      expect(await index.suitesUsing(q)).toEqual(['alpha']);
    }),
  );

  it(
    'DynamoBatchStore: a call recorded once for two items, batched, then closed with each message back once',
    sim(async () => {
      const store = new DynamoBatchStore({ client: clients.doc, tableName: res.table });
      const runId = fresh('run');
      const call = {
        key: 'k1',
        backend: 'openai:gpt-4o-mini',
        customId: 'c1',
        request: { model: 'gpt-4o-mini', system: 'Judge.', prompt: 'is it right?', maxTokens: 20 },
      };
      expect(await store.wait(runId, 'item-1', call, 'body-1')).toEqual({ state: 'waiting' });
      expect(await store.wait(runId, 'item-2', call, 'body-2')).toEqual({ state: 'waiting' });
      expect((await store.runsWithWaitingCalls()).some((r) => r.runId === runId)).toBe(true);
      expect(await store.waitingCalls(runId)).toHaveLength(1);
      const batch = { runId, batchId: 'b1', backend: call.backend, submittedAt: '2026-01-01T00:00:00.000Z' };
      await store.addBatch(batch, ['k1']);
      expect(await store.callState(runId, 'k1')).toEqual({ state: 'submitted', batchId: 'b1' });
      expect((await store.closeBatch(batch, new Map([['k1', completion('ok')]]))).sort()).toEqual([
        'body-1',
        'body-2',
      ]);
      expect(await store.callState(runId, 'k1')).toEqual({ state: 'answered', completion: completion('ok') });
    }),
  );

  it(
    'DynamoRateLimitStore: a full bucket gives at once, then says how long to wait',
    sim(async () => {
      let now = 1_000_000;
      const store = new DynamoRateLimitStore({
        client: clients.doc,
        tableName: res.table,
        now: () => now,
        random: () => 0,
      });
      const key = fresh('vendor:model');
      const one = { requests: 1, tokens: 0 };
      expect(await store.take(key, { rpm: 60 }, one)).toBe(0);
      const wait = await store.take(key, { rpm: 60 }, one);
      expect(wait).toBeGreaterThan(900);
      now += wait;
      expect(await store.take(key, { rpm: 60 }, one)).toBe(0);
    }),
  );

  it(
    'raises the SDK typed ConditionalCheckFailedException the adapters test with instanceof',
    sim(async () => {
      const Item = { pk: fresh('pk'), sk: 'x' };
      await clients.doc.send(
        new PutCommand({ TableName: res.table, Item, ConditionExpression: 'attribute_not_exists(pk)' }),
      );
      const error = await clients.doc
        .send(new PutCommand({ TableName: res.table, Item, ConditionExpression: 'attribute_not_exists(pk)' }))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConditionalCheckFailedException);
    }),
  );
});

describe('S3BlobStore over the simulated S3', () => {
  it(
    'puts, gets and lists across pages (keys with spaces and non-ASCII, sorted); a missing key is undefined',
    sim(async () => {
      const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket, listPageSize: 2 });
      const prefix = `${fresh('blobs')}/`;
      const keys = [`${prefix}b b.txt`, `${prefix}a.txt`, `${prefix}é.txt`, `${prefix}c/d.json`];
      for (const key of keys) await blobs.put(key, `body of ${key}`);
      await blobs.put(keys[1]!, new Uint8Array([1, 2, 3]));
      expect(await blobs.get(keys[1]!)).toEqual(new Uint8Array([1, 2, 3]));
      expect(new TextDecoder().decode(await blobs.get(keys[2]!))).toBe(`body of ${keys[2]}`);
      expect(await blobs.list(prefix)).toEqual(
        [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
      );
      expect(await blobs.get(`${prefix}missing`)).toBeUndefined();
      const head = await clients.s3
        .send(new HeadObjectCommand({ Bucket: res.bucket, Key: `${prefix}missing` }))
        .catch((e: unknown) => e);
      expect(head).toBeInstanceOf(NotFound);
    }),
  );

  it(
    'putStream sends a body over the part size as a multipart upload and reads back whole',
    sim(async () => {
      const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
      const key = `${fresh('stream')}/big.bin`;
      const chunk = Buffer.alloc(1024 * 1024, 7);
      async function* body() {
        for (let i = 0; i < 9; i++) yield chunk;
        yield 'tail';
      }
      const before = aws.report().s3.requests;
      await blobs.putStream(key, body());
      const after = aws.report().s3.requests;
      expect((after.UploadPart ?? 0) - (before.UploadPart ?? 0)).toBe(2);
      expect((after.CompleteMultipartUpload ?? 0) - (before.CompleteMultipartUpload ?? 0)).toBe(1);
      const read = await blobs.get(key);
      expect(read?.byteLength).toBe(9 * 1024 * 1024 + 4);
      expect(Buffer.from(read!).subarray(-4).toString()).toBe('tail');
      expect(aws.s3.report().openUploads).toBe(0);
    }),
  );

  it(
    'answers a ranged GetObject with 206 and the bytes asked for, and a range past the end with InvalidRange',
    sim(async () => {
      const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
      const key = `${fresh('range')}.txt`;
      await blobs.put(key, '0123456789');
      const part = await clients.s3.send(
        new GetObjectCommand({ Bucket: res.bucket, Key: key, Range: 'bytes=2-4' }),
      );
      expect(part.ContentRange).toBe('bytes 2-4/10');
      expect(await part.Body?.transformToString()).toBe('234');
      const tail = await clients.s3.send(
        new GetObjectCommand({ Bucket: res.bucket, Key: key, Range: 'bytes=7-' }),
      );
      expect(await tail.Body?.transformToString()).toBe('789');
      const past = await clients.s3
        .send(new GetObjectCommand({ Bucket: res.bucket, Key: key, Range: 'bytes=20-30' }))
        .catch((e: unknown) => e);
      expect(past).toBeInstanceOf(S3ServiceException);
      expect((past as S3ServiceException).name).toBe('InvalidRange');
    }),
  );

  it(
    'counts the bytes its open uploads hold, a part copied inside S3 too, and none once the upload completes',
    sim(async () => {
      // The capacity model's memory probe takes what the stand-in holds off a function's heap:
      // a copied part is held here though no request brought its bytes in.
      const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
      const source = `${fresh('copy')}/source.bin`;
      await blobs.put(source, new Uint8Array(6 * 1024 * 1024).fill(3));
      const Key = `${fresh('copy')}/composed.bin`;
      const start = aws.s3.report();
      const { UploadId } = await clients.s3.send(
        new CreateMultipartUploadCommand({ Bucket: res.bucket, Key }),
      );
      const copied = await clients.s3.send(
        new UploadPartCopyCommand({
          Bucket: res.bucket,
          Key,
          UploadId,
          PartNumber: 1,
          CopySource: `${res.bucket}/${encodeURIComponent(source)}`,
          CopySourceRange: `bytes=0-${5 * 1024 * 1024}`,
        }),
      );
      const tail = await clients.s3.send(
        new UploadPartCommand({ Bucket: res.bucket, Key, UploadId, PartNumber: 2, Body: 'end' }),
      );
      const open = aws.s3.report();
      expect(open.bytesInUploads - start.bytesInUploads).toBe(5 * 1024 * 1024 + 1 + 3);
      expect(open.bytesIn - start.bytesIn).toBe(3);
      // What the probe reads at every switch is the same sum, the report's objects and parts.
      expect(aws.s3.heldBytes()).toBe(open.bytesStored + open.bytesInUploads);
      await clients.s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: res.bucket,
          Key,
          UploadId,
          MultipartUpload: {
            Parts: [
              { PartNumber: 1, ETag: copied.CopyPartResult?.ETag },
              { PartNumber: 2, ETag: tail.ETag },
            ],
          },
        }),
      );
      const done = aws.s3.report();
      expect(done.bytesInUploads).toBe(start.bytesInUploads);
      expect(done.bytesStored - start.bytesStored).toBe(5 * 1024 * 1024 + 1 + 3);
      expect(aws.s3.heldBytes()).toBe(done.bytesStored + done.bytesInUploads);
    }),
  );

  it(
    'sends ObjectCreated to the events queue for a notified prefix, with the key URL-encoded',
    sim(async () => {
      const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
      await drain(res.queues.events.url, 100);
      const key = `datasets/${fresh('suite')}/my data.csv`;
      await blobs.put(key, 'a,b\n');
      const [message] = await drain(res.queues.events.url, 1);
      const record = JSON.parse(message!.Body!).Records[0];
      expect(record.eventName).toBe('ObjectCreated:Put');
      expect(record.s3.object.key).toBe(key.replace(/ /g, '+'));
    }),
  );
});

describe('the SQS adapters over the simulated SQS', () => {
  it(
    'SqsWorkQueue: every item arrives intact, one far past the body limit by reference to S3',
    sim(async () => {
      const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
      const queue = new SqsWorkQueue({ client: clients.sqs, queueUrl: res.queues.items.url, blobs });
      const runId = fresh('run');
      const items = Array.from({ length: 23 }, (_, i) => ({
        id: `i${i}`,
        row: i + 1,
        input: { text: `é ${i}` },
      }));
      items.push({ id: 'huge', row: 24, input: { text: 'x'.repeat(300_000) } });
      await queue.sendItems(items.map((item) => ({ runId, item })));
      const messages = await drain(res.queues.items.url, items.length);
      const decoded = await Promise.all(messages.map((m) => decodeItemMessage(m.Body!, blobs)));
      expect(decoded.map((d) => d.item.id).sort()).toEqual(items.map((i) => i.id).sort());
      expect(decoded.find((d) => d.item.id === 'huge')?.item.input.text).toHaveLength(300_000);
    }),
  );

  it(
    'SqsAggregateTrigger: run and sweep requests arrive on the aggregate queue',
    sim(async () => {
      const trigger = new SqsAggregateTrigger({ client: clients.sqs, queueUrl: res.queues.aggregate.url });
      await trigger.trigger('run-1');
      await trigger.triggerSweep('sweep-1');
      const bodies = (await drain(res.queues.aggregate.url, 2)).map((m) => JSON.parse(m.Body!));
      expect(bodies).toEqual(expect.arrayContaining([{ runId: 'run-1' }, { sweepId: 'sweep-1' }]));
    }),
  );

  it(
    'redelivers a message not deleted after its visibility timeout, then moves it to the dead-letter queue',
    sim(async () => {
      const url = res.queues.aggregate.url;
      await clients.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'poison' }));
      const receive = () =>
        clients.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            VisibilityTimeout: 5,
            WaitTimeSeconds: 20,
            MessageSystemAttributeNames: ['ApproximateReceiveCount'],
          }),
        );
      const started = Date.now();
      const first = await receive();
      expect(first.Messages?.[0]?.Attributes?.ApproximateReceiveCount).toBe('1');
      const second = await receive();
      // The long poll waited (in simulated time) for the visibility timeout to run out.
      expect(Date.now() - started).toBeGreaterThanOrEqual(5000);
      expect(second.Messages?.[0]?.Attributes?.ApproximateReceiveCount).toBe('2');
      // maxReceiveCount is 2: the next receive moves it to the dead-letter queue instead.
      const third = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 10 }));
      expect(third.Messages ?? []).toEqual([]);
      const dead = await drain(res.queues.aggregateDlq.url, 1);
      expect(dead.map((m) => m.Body)).toEqual(['poison']);
    }),
  );

  it(
    'answers a long poll as soon as a message arrives, in simulated time',
    sim(async () => {
      const url = res.queues.aggregate.url;
      const started = Date.now();
      const polled = clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 20 }));
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      await clients.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'late' }));
      const { Messages = [] } = await polled;
      expect(Messages.map((m) => m.Body)).toEqual(['late']);
      expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
      expect(Date.now() - started).toBeLessThan(3_100);
      await clients.sqs.send(
        new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: Messages[0]!.ReceiptHandle! }),
      );
    }),
  );

  it(
    'makes a message visible again at once with ChangeMessageVisibility 0',
    sim(async () => {
      const url = res.queues.aggregate.url;
      await clients.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'again' }));
      const { Messages: [m] = [] } = await clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 1 }),
      );
      await clients.sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: m!.ReceiptHandle!,
          VisibilityTimeout: 0,
        }),
      );
      expect((await drain(url, 1)).map((x) => x.Body)).toEqual(['again']);
    }),
  );

  it(
    'refuses what SQS refuses, with the SDK typed errors: 11 entries in a batch, two purges in a minute',
    sim(async () => {
      const url = res.queues.events.url;
      const entries = Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: 'x' }));
      await expect(
        clients.sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries })),
      ).rejects.toBeInstanceOf(TooManyEntriesInBatchRequest);
      await clients.sqs.send(new PurgeQueueCommand({ QueueUrl: res.queues.itemsDlq.url }));
      await expect(
        clients.sqs.send(new PurgeQueueCommand({ QueueUrl: res.queues.itemsDlq.url })),
      ).rejects.toBeInstanceOf(PurgeQueueInProgress);
    }),
  );
});
