/**
 * The AWS adapters against a real moto_server (started here, on a free port). Proves the
 * behaviour the core relies on: missing keys, batching and spilling, idempotent result
 * writes, exactly-once aggregation claims, streamed result pages, the cache, and the S3 → SQS
 * notification shape.
 */

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AwsClients, createDocumentClient } from '../../shared/adapters/aws/clients.js';
import { DynamoLlmCache } from '../../shared/adapters/aws/dynamo-llm-cache.js';
import { DynamoPromptIndex } from '../../shared/adapters/aws/dynamo-prompt-index.js';
import { DynamoRunStore } from '../../shared/adapters/aws/dynamo-run-store.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import {
  aggregateTriggerBodySchema,
  SqsAggregateTrigger,
} from '../../shared/adapters/aws/sqs-aggregate-trigger.js';
import {
  decodeItemMessage,
  InvalidItemMessageError,
  QueueSendError,
  SqsWorkQueue,
} from '../../shared/adapters/aws/sqs-work-queue.js';
import { decodeEventKey, spillKey } from '../../shared/lib/layout/bucket.js';
import { RESULT_SLOTS } from '../../shared/lib/layout/table.js';
import { BlobChangedError } from '../../shared/model/errors.js';
import type { ItemMessage, ItemResult } from '../../shared/model/model.js';
import type { Completion } from '../../shared/model/provider.js';
import { result, runRecord } from './contracts/fixtures.js';
import {
  createTestResources,
  type Moto,
  motoClients,
  receive,
  resetQueues,
  startMoto,
  TEST_CREDENTIALS,
  TEST_REGION,
  type TestResources,
  uniqueNames,
} from './moto.js';

let moto: Moto;
let clients: AwsClients;
let res: TestResources;

beforeAll(async () => {
  moto = await startMoto();
  clients = motoClients(moto.endpoint);
  res = await createTestResources(clients, uniqueNames('adapters'));
}, 120_000);

afterAll(async () => {
  for (const client of Object.values(clients ?? {})) client.destroy();
  await moto?.stop();
});

/** How an S3 event key is decoded: `+` is a space, then percent-decoding. */

describe('S3 → SQS notification (createTestResources)', { timeout: 60_000 }, () => {
  it('sends the s3:TestEvent, then ObjectCreated for notified prefixes with URL-encoded keys', async () => {
    const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
    await blobs.put('other/not-notified.txt', 'x');
    await blobs.put('datasets/my suite/café.csv', 'id,src\n1,a\n');

    // moto sends the notifications as the objects are put: both are on the queue by now.
    const seen = (await receive(clients.sqs, res.queues.events.url, 2)).map(
      (m) => JSON.parse(m.Body!) as Record<string, unknown>,
    );

    expect(seen.some((b) => b.Event === 's3:TestEvent' && b.Bucket === res.bucket)).toBe(true);
    const records = seen.flatMap(
      (b) => (b.Records ?? []) as { eventName: string; s3: { object: { key: string } } }[],
    );
    expect(records).toHaveLength(1);
    expect(records[0]?.eventName).toMatch(/^ObjectCreated:/);
    // URL-encoded with `+` for spaces. moto encodes `/` too (Python's quote_plus), real S3 does
    // not; both decode to the same key.
    const raw = records[0]!.s3.object.key;
    expect(raw.replaceAll('%2F', '/')).toBe('datasets/my+suite/caf%C3%A9.csv');
    expect(decodeEventKey(raw)).toBe('datasets/my suite/café.csv');
  });

  it('notifies suites/ and prompts/ too', async () => {
    await clients.s3.send(new PutObjectCommand({ Bucket: res.bucket, Key: 'suites/demo.json', Body: '{}' }));
    await clients.s3.send(new PutObjectCommand({ Bucket: res.bucket, Key: 'prompts/gec/a b.md', Body: 'x' }));

    const messages = await receive(clients.sqs, res.queues.events.url, 2);

    const keys = messages.map((m) => decodeEventKey(JSON.parse(m.Body!).Records[0].s3.object.key)).sort();
    expect(keys).toEqual(['prompts/gec/a b.md', 'suites/demo.json']);
  });
});

describe('S3BlobStore', { timeout: 60_000 }, () => {
  it('puts a streamed body: one PutObject when small, a multipart upload past a part, nothing left when it fails', async () => {
    const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
    async function* lines(count: number, fail = false) {
      for (let i = 0; i < count; i++) yield `line ${i} ${'x'.repeat(1000)}\n`;
      if (fail) throw new Error('the source broke');
    }
    const expected = (count: number) =>
      Array.from({ length: count }, (_, i) => `line ${i} ${'x'.repeat(1000)}\n`).join('');

    await blobs.putStream('streamed/small.txt', lines(10), 'text/plain; charset=utf-8');
    expect(new TextDecoder().decode(await blobs.get('streamed/small.txt'))).toBe(expected(10));

    // About 20 MB: three parts of STREAM_PART_BYTES (8 MiB) or so.
    await blobs.putStream('streamed/big.csv', lines(20_000), 'text/csv; charset=utf-8');
    expect(new TextDecoder().decode(await blobs.get('streamed/big.csv'))).toBe(expected(20_000));
    const head = await clients.s3.send(
      new HeadObjectCommand({ Bucket: res.bucket, Key: 'streamed/big.csv' }),
    );
    expect(head.ETag).toMatch(/-3"$/);
    expect(head.ContentType).toBe('text/csv; charset=utf-8');

    await expect(blobs.putStream('streamed/broken.txt', lines(10_000, true))).rejects.toThrow(
      'the source broke',
    );
    expect(await blobs.get('streamed/broken.txt')).toBeUndefined();
    const uploads = await clients.s3.send(new ListMultipartUploadsCommand({ Bucket: res.bucket }));
    expect(uploads.Uploads ?? []).toEqual([]);
  });

  it('reads a large object from any byte on, streamed, at the version it had; a missing one is undefined', async () => {
    const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
    const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 251);
    await blobs.put('misc/big.bin', big);

    const whole = (await blobs.read('misc/big.bin'))!;
    const chunks: Uint8Array[] = [];
    for await (const chunk of whole.body) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(Buffer.concat(chunks).equals(Buffer.from(big))).toBe(true);
    expect(whole.size).toBe(big.length);

    const tail = (await blobs.read('misc/big.bin', { start: 1_000_000, version: whole.version }))!;
    const rest: Uint8Array[] = [];
    for await (const chunk of tail.body) rest.push(chunk);
    expect(Buffer.concat(rest).equals(Buffer.from(big.subarray(1_000_000)))).toBe(true);
    expect(tail).toMatchObject({ size: big.length, version: whole.version });
    // A range with an end (Parquet reads its footer and row groups so): those bytes only.
    for (const [from, to] of [
      [0, 10],
      [2_000_000, 2_000_100],
      [big.length - 8, big.length + 100],
    ] as const) {
      const range = (await blobs.read('misc/big.bin', { start: from, end: to, version: whole.version }))!;
      const got: Uint8Array[] = [];
      for await (const chunk of range.body) got.push(chunk);
      expect(Buffer.concat(got).equals(Buffer.from(big.subarray(from, to)))).toBe(true);
      expect(range.size).toBe(big.length);
    }
    const end = (await blobs.read('misc/big.bin', { start: big.length }))!;
    expect(end.size).toBe(big.length);
    for await (const _ of end.body) throw new Error('nothing is left to read');

    await blobs.put('misc/big.bin', big.subarray(1));
    await expect(blobs.read('misc/big.bin', { start: 10, version: whole.version })).rejects.toBeInstanceOf(
      BlobChangedError,
    );
    expect(await blobs.read('misc/nope.bin')).toBeUndefined();
  });

  it('composes with parts copied at once: one copy that fails aborts the whole, nothing left behind', async () => {
    const own = motoClients(moto.endpoint);
    const { s3 } = own;
    const copies = watchRequests(s3, 'UploadPartCopyCommand', (started) => {
      if (started === 3) throw new Error('the third copy failed');
    });
    const blobs = new S3BlobStore({ client: s3, bucket: res.bucket });
    await blobs.put('composed/part.bin', new Uint8Array(5 * 1024 * 1024).fill(7));
    const pieces = Array.from({ length: 12 }, () => ({ key: 'composed/part.bin' }));

    await expect(blobs.compose('composed/broken.bin', pieces)).rejects.toThrow('the third copy failed');
    expect(await blobs.get('composed/broken.bin')).toBeUndefined();
    const uploads = await clients.s3.send(new ListMultipartUploadsCommand({ Bucket: res.bucket }));
    expect(uploads.Uploads ?? []).toEqual([]);
    // The copies after the failure that were already on their way ended; no new one began.
    expect(copies.inFlight).toBe(0);
    expect(copies.started).toBeLessThan(12);

    copies.started = -100;
    await blobs.compose('composed/whole.bin', pieces);
    expect((await blobs.get('composed/whole.bin'))!.length).toBe(12 * 5 * 1024 * 1024);
    expect(copies.most).toBeGreaterThan(1);
    expect(copies.most).toBeLessThanOrEqual(8);
    for (const client of Object.values(own)) client.destroy();
  });

  it('gathers stretches too small to copy into parts, in order, reading on while parts go (8 at most)', async () => {
    const own = motoClients(moto.endpoint);
    const { s3 } = own;
    const uploads = watchRequests(s3, 'UploadPartCommand');
    let readsWhileUploading = 0;
    watchRequests(s3, 'GetObjectCommand', () => {
      if (uploads.inFlight > 0) readsWhileUploading += 1;
    });
    const blobs = new S3BlobStore({ client: s3, bucket: res.bucket });
    const MiB = 1024 * 1024;
    const source = Uint8Array.from({ length: 24 * MiB }, (_, i) => (i * 7 + (i >> 20)) & 0xff);
    await blobs.put('gather/source.bin', source);
    uploads.most = 0;
    readsWhileUploading = 0;
    // 24 stretches of 1 MiB, each under S3's 5 MiB part minimum: all read and gathered, in order.
    const pieces = Array.from({ length: 24 }, (_, i) => ({
      key: 'gather/source.bin',
      start: (23 - i) * MiB,
      end: (24 - i) * MiB,
    }));
    await blobs.compose('gather/whole.bin', pieces);
    const expected = Buffer.concat(pieces.map((p) => source.subarray(p.start, p.end)));
    expect(Buffer.from((await blobs.get('gather/whole.bin'))!).equals(expected)).toBe(true);
    expect(uploads.most).toBeGreaterThanOrEqual(1);
    expect(uploads.most).toBeLessThanOrEqual(8);
    expect(readsWhileUploading).toBeGreaterThan(0);
    for (const client of Object.values(own)) client.destroy();
  });
});

/**
 * Counts one command's requests on `client` as they go: how many started, how many are in flight
 * now and the most at once. `before` runs as each starts, with its count; what it throws fails
 * that request before it is sent (and it is not counted in flight).
 */
function watchRequests(client: S3Client, command: string, before?: (started: number) => void) {
  const watch = { started: 0, inFlight: 0, most: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== command) return next(args);
      watch.started += 1;
      before?.(watch.started);
      watch.inFlight += 1;
      watch.most = Math.max(watch.most, watch.inFlight);
      try {
        return await next(args);
      } finally {
        watch.inFlight -= 1;
      }
    },
    { step: 'initialize', name: `watch${command}` },
  );
  return watch;
}

const item = (runId: string, i: number, extra: Record<string, string> = {}): ItemMessage => ({
  runId,
  item: {
    id: `item #${i} / é`,
    row: i + 1,
    input: { src: `sentence ${i}`, tgt: `Sentence ${i}.`, ...extra },
  },
});

describe('SqsWorkQueue', { timeout: 60_000 }, () => {
  it('delivers 25 items as 25 messages that decode back to the items', async () => {
    await resetQueues(clients, [res.queues.items.url]);
    const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
    const queue = new SqsWorkQueue({ client: clients.sqs, queueUrl: res.queues.items.url, blobs });
    const sent = Array.from({ length: 25 }, (_, i) => item('run-25', i));

    await queue.sendItems(sent);
    const received = await receive(clients.sqs, res.queues.items.url, 25);

    expect(received).toHaveLength(25);
    const decoded = await Promise.all(received.map((m) => decodeItemMessage(m.Body!, blobs)));
    expect(decoded.sort((a, b) => a.item.row - b.item.row)).toEqual(sent);
  });

  it('sends an item larger than maxBodyBytes by reference and restores it', async () => {
    await resetQueues(clients, [res.queues.items.url]);
    const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
    const queue = new SqsWorkQueue({
      client: clients.sqs,
      queueUrl: res.queues.items.url,
      blobs,
      maxBodyBytes: 1000,
    });
    const small = item('run-spill', 1);
    const big = item('run-spill', 2, { src: 'ü'.repeat(5000) });

    await queue.sendItems([small, big]);
    const received = await receive(clients.sqs, res.queues.items.url, 2);

    const bodies = received.map((m) => JSON.parse(m.Body!));
    expect(bodies).toContainEqual({
      ref: spillKey('run-spill', big.item.id),
      runId: 'run-spill',
      itemId: big.item.id,
    });
    expect(spillKey('run-spill', big.item.id)).toMatch(/^spill\/run-spill\/[0-9a-f]{64}\.json$/);
    const decoded = await Promise.all(received.map((m) => decodeItemMessage(m.Body!, blobs)));
    expect(decoded).toContainEqual(big);
    expect(decoded).toContainEqual(small);
  });

  it('splits batches at 256 KiB so near-limit items all go through', async () => {
    await resetQueues(clients, [res.queues.items.url]);
    // moto accepts batches up to 1 MiB, so watch the batch sizes on the wire instead.
    const sqs = new SQSClient({
      endpoint: moto.endpoint,
      region: TEST_REGION,
      credentials: TEST_CREDENTIALS,
    });
    const batchSizes: number[] = [];
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Entries?: unknown[] };
        if (context.commandName === 'SendMessageBatchCommand') batchSizes.push(input.Entries?.length ?? 0);
        return next(args);
      },
      { step: 'initialize', name: 'countBatches' },
    );
    const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
    const queue = new SqsWorkQueue({ client: sqs, queueUrl: res.queues.items.url, blobs });
    const sent = Array.from({ length: 5 }, (_, i) => item('run-wide', i, { src: 'x'.repeat(100_000) }));

    await queue.sendItems(sent);
    const received = await receive(clients.sqs, res.queues.items.url, 5);

    expect(batchSizes.sort()).toEqual([1, 2, 2]);
    expect(received).toHaveLength(5);
    expect(received.every((m) => !JSON.parse(m.Body!).ref)).toBe(true);
    sqs.destroy();
  });

  it('rejects a body that is not an item message', async () => {
    const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
    await expect(decodeItemMessage('{"runId":"r"}', blobs)).rejects.toBeInstanceOf(InvalidItemMessageError);
    await expect(decodeItemMessage('not json', blobs)).rejects.toBeInstanceOf(InvalidItemMessageError);
    await expect(
      decodeItemMessage(JSON.stringify({ ref: 'spill/r/gone.json', runId: 'r', itemId: 'i' }), blobs),
    ).rejects.toThrow(/missing at spill\/r\/gone\.json/);
  });

  it('retries entries SQS reports as Failed, then names the items that still fail', async () => {
    // A stub client: SQS does not fail entries on demand, moto never does.
    const calls: string[][] = [];
    const flaky = {
      send: async (command: { input: { Entries: { Id: string }[] } }) => {
        const ids = command.input.Entries.map((e) => e.Id);
        calls.push(ids);
        const failed = ids.filter((id) => id === 'm3' || (id === 'm1' && calls.length === 1));
        return {
          Successful: ids.filter((id) => !failed.includes(id)).map((Id) => ({ Id })),
          Failed: failed.map((Id) => ({ Id, Code: 'InternalError', SenderFault: false })),
        };
      },
    } as unknown as SQSClient;
    const blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
    const queue = new SqsWorkQueue({ client: flaky, queueUrl: 'unused', blobs, maxAttempts: 3 });

    const error = await queue
      .sendItems([0, 1, 2, 3].map((i) => item('run-flaky', i)))
      .catch((e: unknown) => e);

    expect(calls).toEqual([['m0', 'm1', 'm2', 'm3'], ['m1', 'm3'], ['m3']]);
    expect(error).toBeInstanceOf(QueueSendError);
    expect((error as QueueSendError).message).toContain('item #3 / é (InternalError)');
    expect((error as QueueSendError).failures.map((f) => f.itemId)).toEqual(['item #3 / é']);
  });
});

describe('SqsAggregateTrigger', { timeout: 60_000 }, () => {
  it('sends {"runId"} to the aggregate queue', async () => {
    await new SqsAggregateTrigger({ client: clients.sqs, queueUrl: res.queues.aggregate.url }).trigger(
      'run-agg',
    );

    const [message] = await receive(clients.sqs, res.queues.aggregate.url, 1);

    expect(aggregateTriggerBodySchema.parse(JSON.parse(message!.Body!))).toEqual({ runId: 'run-agg' });
  });
});

describe('DynamoRunStore', { timeout: 120_000 }, () => {
  const store = () => new DynamoRunStore({ client: clients.doc, tableName: res.table });

  it('reads a run and results written before results had a schema version (upgraded), and refuses a broken one', async () => {
    const s = store();
    const v1 = runRecord('run-v1');
    const { schemaVersion: _v, ...withoutVersion } = v1;
    await clients.doc.send(
      new PutCommand({
        TableName: res.table,
        Item: {
          pk: 'RUN#run-v1',
          sk: 'META',
          type: 'run',
          ...withoutVersion,
          suite: JSON.stringify(v1.suite),
          prompts: JSON.stringify(v1.prompts),
          done: 1,
          failed: 0,
        },
      }),
    );
    const legacy = {
      runId: 'run-v1',
      itemId: 'a',
      row: 1,
      status: 'scored',
      gold: 'FP2',
      prediction: 'FP3',
      reason: 'style only',
      input: { src: 'a', tgt: 'b' },
      stages: {},
      simulated: true,
      finishedAt: '2025-01-01T00:01:00.000Z',
    };
    await clients.doc.send(
      new PutCommand({
        TableName: res.table,
        Item: { pk: 'RUN#run-v1', sk: 'RESULT#a', type: 'result', result: JSON.stringify(legacy) },
      }),
    );
    expect(await s.getRun('run-v1')).toEqual(v1);
    const read = [];
    for await (const r of s.results('run-v1')) read.push(r);
    expect(read).toEqual(
      [
        {
          ...legacy,
          prediction: undefined,
          reason: undefined,
          schemaVersion: 2,
          output: { label: 'FP3', reason: 'style only' },
          scores: { label: { kind: 'label', value: 'FP3', explanation: 'style only' } },
        },
      ].map((r) => JSON.parse(JSON.stringify(r))),
    );

    await clients.doc.send(
      new PutCommand({
        TableName: res.table,
        Item: {
          pk: 'RUN#run-v1',
          sk: 'RESULT#b',
          type: 'result',
          result: JSON.stringify({ schemaVersion: 9 }),
        },
      }),
    );
    const all = async () => {
      for await (const _ of s.results('run-v1'));
    };
    await expect(all()).rejects.toThrow(
      /RESULT#b of run run-v1: result schema version 9 is newer than this Assay reads/,
    );
  });

  it('streams results page by page and lists result ids', async () => {
    // A separate client that counts Query calls, to see that pages are fetched lazily.
    const dynamo = new DynamoDBClient({
      endpoint: moto.endpoint,
      region: TEST_REGION,
      credentials: TEST_CREDENTIALS,
    });
    let queries = 0;
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'QueryCommand') queries++;
        return next(args);
      },
      { step: 'initialize', name: 'countQueries' },
    );
    const s = new DynamoRunStore({
      client: createDocumentClient(dynamo),
      tableName: res.table,
      pageSize: 25,
    });
    await s.createRun(runRecord('run-pages'));
    // Every row in one slot (rows 64 apart), so that its results take pages of their own.
    const ids = Array.from({ length: 120 }, (_, i) => `item-${String(i).padStart(3, '0')}`);
    const row = (i: number) => 1 + i * RESULT_SLOTS;
    for (let i = 0; i < ids.length; i += 20) {
      await Promise.all(
        ids
          .slice(i, i + 20)
          .map((id, j) =>
            s.recordResult(result('run-pages', id, { row: row(i + j), raw: 'r'.repeat(2000) })),
          ),
      );
    }

    const iterator = s.results('run-pages')[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.value?.itemId).toBe('item-000');
    // The first page of each slot (merged by row), and no more.
    const firstQueries = queries;
    expect(firstQueries).toBeLessThanOrEqual(RESULT_SLOTS + 1);
    const rest: ItemResult[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);

    expect(rest).toHaveLength(119);
    // The slot's other pages, fetched as they were reached.
    expect(queries - firstQueries).toBeGreaterThanOrEqual(4);
    expect(rest[0]).toEqual(result('run-pages', 'item-001', { row: row(1), raw: 'r'.repeat(2000) }));
    expect(new Set(await s.resultIds('run-pages'))).toEqual(new Set(ids));
    dynamo.destroy();
  });
});

describe('DynamoPromptIndex', { timeout: 60_000 }, () => {
  it('maps prompt files to the suites that read them, and forgets what a suite stopped reading', async () => {
    const index = new DynamoPromptIndex({ client: clients.doc, tableName: res.table });
    const many = Array.from({ length: 30 }, (_, i) => `gec/grammar/x${i}.md`); // more than one batch
    await index.setSuitePrompts('idx-a', ['gec/feedback/baseline.md', 'gec/common/repair.md', ...many]);
    await index.setSuitePrompts('idx-b', ['gec/feedback/baseline.md']);
    expect(await index.suitesUsing('gec/feedback/baseline.md')).toEqual(['idx-a', 'idx-b']);
    expect(await index.suitesUsing('gec/grammar/x29.md')).toEqual(['idx-a']);

    await index.setSuitePrompts('idx-a', ['gec/modular/meaning.md']);
    expect(await index.suitesUsing('gec/feedback/baseline.md')).toEqual(['idx-b']);
    expect(await index.suitesUsing('gec/grammar/x29.md')).toEqual([]);
    expect(await index.suitesUsing('gec/modular/meaning.md')).toEqual(['idx-a']);
    // Idempotent: the same call again changes nothing.
    await index.setSuitePrompts('idx-a', ['gec/modular/meaning.md']);
    expect(await index.suitesUsing('gec/modular/meaning.md')).toEqual(['idx-a']);
  });
});

describe('DynamoLlmCache', { timeout: 60_000 }, () => {
  const completion: Completion = {
    text: '{"label":"TP"}',
    finishReason: 'stop',
    usage: { input: 120, output: 8, cached: 64 },
    costUsd: 0.000_123,
    latencyMs: 321,
    cached: false,
    simulated: false,
    providerId: 'openai:gpt-4o-mini',
  };

  it('treats an entry past its ttl as a miss (DynamoDB deletes expired items late)', async () => {
    let now = Date.parse('2025-01-01T00:00:00Z');
    const cache = new DynamoLlmCache({
      client: clients.doc,
      tableName: res.table,
      ttlDays: 1,
      now: () => now,
    });
    await cache.put('sha256:expiring', completion);

    now += 86_400_000 - 1000;
    expect(await cache.get('sha256:expiring')).toEqual(completion);
    now += 2000;
    expect(await cache.get('sha256:expiring')).toBeUndefined();
  });

  it('reads the lookups made together in one BatchGetItem, each answered with its own entry', async () => {
    const writer = new DynamoLlmCache({ client: clients.doc, tableName: res.table });
    const stored = (i: number): Completion => ({ ...completion, text: `answer ${i}` });
    for (const i of [0, 2, 4, 6, 8]) await writer.put(`sha256:together-${i}`, stored(i));

    const sent: string[] = [];
    const doc = createDocumentClient(clients.dynamo);
    const send = doc.send.bind(doc);
    doc.send = ((command: { constructor: { name: string } }, ...rest: unknown[]) => {
      sent.push(command.constructor.name);
      return (send as (...args: unknown[]) => unknown)(command, ...rest);
    }) as typeof doc.send;
    const cache = new DynamoLlmCache({
      client: doc,
      tableName: res.table,
      onError: (error) => {
        throw error;
      },
    });
    // Ten items of a worker's batch, one key asked twice.
    const keys = [...Array.from({ length: 10 }, (_, i) => `sha256:together-${i}`), 'sha256:together-4'];
    const found = await Promise.all(keys.map((key) => cache.get(key)));

    expect(found).toEqual(
      keys.map((key) => {
        const i = Number(key.split('-').at(-1));
        return i % 2 === 0 ? stored(i) : undefined;
      }),
    );
    expect(sent).toEqual(['BatchGetCommand']);
    // A lookup after the batch went out starts the next one.
    expect(await cache.get('sha256:together-2')).toEqual(stored(2));
    expect(sent).toEqual(['BatchGetCommand', 'BatchGetCommand']);
  });

  it('reports a failed read as a miss to every lookup of the batch', async () => {
    const errors: string[] = [];
    const cache = new DynamoLlmCache({
      client: clients.doc,
      tableName: 'no-such-table',
      onError: (err, op, key) => errors.push(`${op}:${key}:${(err as Error).name}`),
    });

    expect(await Promise.all([cache.get('a'), cache.get('b')])).toEqual([undefined, undefined]);
    expect(errors).toEqual(['get:a:ResourceNotFoundException', 'get:b:ResourceNotFoundException']);
  });

  it('reports a failed write and does not throw', async () => {
    const errors: string[] = [];
    const cache = new DynamoLlmCache({
      client: clients.doc,
      tableName: 'no-such-table',
      onError: (err, op) => errors.push(`${op}:${(err as Error).name}`),
    });

    await expect(cache.put('k', completion)).resolves.toBeUndefined();
    expect(errors).toEqual(['put:ResourceNotFoundException']);
  });
});
