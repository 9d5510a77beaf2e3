/**
 * Hostile dataset files on AWS: through the S3 notification, the events queue and the ingest
 * function on moto, a Parquet file whose page headers declare 1.9 GB, a JSON array element
 * nested 100,000 deep and a gzip bomb of one 1.5 GB line are each rejected once (the reason,
 * naming the file, the row and the limit, in `rejected.json` and the log line) while their run
 * ends reported with the row failed; a CSV read in chunks whose record passes the deployment's
 * ASSAY_MAX_RECORD_BYTES ends its run at that row. Nothing is retried into the DLQ.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventSources, loadFunctions, uploadFolder } from '../../cli/cloud/local-cloud.js';
import { type Invocation, QueuePoller } from '../../cli/cloud/poller.js';
import type { AwsClients } from '../../shared/adapters/aws/clients.js';
import { S3BlobStore } from '../../shared/adapters/aws/s3-blob-store.js';
import { rejectionKey, suiteKey } from '../../shared/lib/layout/bucket.js';
import type { Report } from '../../shared/model/report.js';
import { deepJson, HOSTILE_FILES, hostileParquet, writeGzipLine } from '../fakes/hostile-files.js';
import { REPO, snapshotEnv, suiteInput, tempDir } from '../helpers.js';
import {
  quietFunctionEnv,
  resetAllQueues,
  startTestStack,
  stopTestStack,
  TEST_REGION,
  type TestResources,
  type TestStack,
} from './moto.js';

/** The deployment's record limit here: small, so a CSV record of a few KB passes it. */
const MAX_RECORD_BYTES = 2_000;

const restoreEnv = snapshotEnv();
let stack: TestStack;
let clients: AwsClients;
let res: TestResources;
let poller: QueuePoller;
let blobs: S3BlobStore;
let root: typeof import('../../functions/root.js');
const invocations: Invocation[] = [];

async function waiting(queueUrl: string): Promise<number> {
  const out = await clients.sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }),
  );
  return out.Messages?.length ?? 0;
}

beforeAll(async () => {
  // A record the handler failed would be back in a second and in the DLQ after its second receive.
  stack = await startTestStack('hostile', { maxReceiveCount: 2, visibilityTimeouts: { events: 1 } });
  ({ clients, res } = stack);
  for (const name of Object.keys(process.env)) if (name.endsWith('_API_KEY')) delete process.env[name];
  Object.assign(process.env, quietFunctionEnv(stack), {
    ASSAY_MAX_RECORD_BYTES: String(MAX_RECORD_BYTES),
    // Chunks of a few hundred bytes: the CSV below is read over several invocations.
    ASSAY_INGEST_CHUNK_BYTES: '400',
  });
  const functions = await loadFunctions();
  root = await import('../../functions/root.js');
  poller = new QueuePoller({
    sqs: clients.sqs,
    region: TEST_REGION,
    sources: eventSources(res, functions),
    onInvocation: (invocation) => invocations.push(invocation),
  });
  blobs = new S3BlobStore({ client: clients.s3, bucket: res.bucket });
  await uploadFolder(blobs, join(REPO, 'prompts'), 'prompts/');
  await poller.drain({ only: ['ingest'] });
}, 120_000);

afterEach(async () => {
  vi.restoreAllMocks();
  await resetAllQueues(clients, res);
});

afterAll(async () => {
  await poller?.close();
  await stopTestStack(stack);
  restoreEnv();
});

/**
 * Uploads a suite reading `file`, then the file (its upload starts the run), and runs the
 * pipeline until it is idle: what ingest logged as errors, and the run's report.
 */
async function uploadHostile(name: string, file: string, bytes: Uint8Array | string) {
  await blobs.put(
    suiteKey(name),
    JSON.stringify(suiteInput({ name, dataset: { path: file } })),
    'application/json',
  );
  await poller.drain({ only: ['ingest'] });
  const errors = vi.spyOn(root.logger, 'error');
  invocations.length = 0;
  await blobs.put(`datasets/${name}/${file}`, bytes);
  await poller.drain();
  const reportKey = (await blobs.list(`reports/${name}/`)).find((key) => key.endsWith('/report.json'));
  const report = reportKey
    ? (JSON.parse(new TextDecoder().decode(await blobs.get(reportKey))) as Report)
    : undefined;
  const errorsTxt = reportKey
    ? new TextDecoder().decode(await blobs.get(reportKey.replace(/report\.json$/, 'errors.txt')))
    : '';
  return {
    errors: errors.mock.calls.map(([message, extra]) => ({ message, ...(extra as object) })),
    report,
    errorsTxt,
  };
}

async function expectNothingRetried() {
  // Every invocation took its records off its queue: none failed, none threw, none dead-lettered.
  expect(invocations.every((i) => i.failed === 0 && i.error === undefined)).toBe(true);
  expect(await waiting(res.queues.events.url)).toBe(0);
  expect(await waiting(res.queues.eventsDlq.url)).toBe(0);
}

async function rejection(name: string): Promise<{ key: string; reason: string }> {
  return JSON.parse(new TextDecoder().decode(await blobs.get(rejectionKey(name))));
}

describe('hostile dataset files through ingest on moto', { timeout: 120_000 }, () => {
  const oneShot = [
    {
      name: 'hostile-parquet',
      file: HOSTILE_FILES.parquet,
      bytes: async () => hostileParquet(),
      limit:
        /row group 1 \(rows 1 to 3\): a page declares \d+ bytes uncompressed, more than 67108864, the reader's maxParquetPageBytes \(67108864; ASSAY_MAX_PARQUET_PAGE_BYTES raises it\)/,
    },
    {
      name: 'hostile-deep',
      file: HOSTILE_FILES.deepJson,
      bytes: async () => deepJson(),
      limit:
        /row 1 \(array element 1\) nests deeper than 64 levels, the reader's maxJsonDepth \(64; ASSAY_MAX_JSON_DEPTH raises it\)/,
    },
    {
      name: 'hostile-gzip',
      file: HOSTILE_FILES.gzipLine,
      bytes: async () => {
        const path = join(await tempDir('assay-hostile-gzip-'), HOSTILE_FILES.gzipLine);
        await writeGzipLine(path);
        return readFile(path);
      },
      limit:
        /gunzips to \d+ bytes from its first \d+, more than 200 for each compressed byte, the reader's maxGzipRatio \(200; ASSAY_MAX_GZIP_RATIO raises it\)/,
    },
  ];
  for (const { name, file, bytes, limit } of oneShot) {
    it(`${file}: rejected once with the reason, the run reported with its row failed`, async () => {
      const { errors, report, errorsTxt } = await uploadHostile(name, file, await bytes());
      const key = `datasets/${name}/${file}`;

      expect(errors).toEqual([
        expect.objectContaining({ message: 'upload rejected', key, reason: expect.stringMatching(limit) }),
      ]);
      expect(errors[0]).toMatchObject({ reason: expect.stringContaining(key) });
      expect(await rejection(name)).toMatchObject({ key, reason: expect.stringMatching(limit) });
      // The run did not stay `ingesting`: it is reported, its one failed row saying why.
      expect(report?.counts).toMatchObject({ items: 1, scored: 0, failed: 1, invalidRows: 1 });
      expect(errorsTxt).toMatch(limit);
      expect(errorsTxt).toContain('row 1');
      await expectNothingRetried();
    });
  }

  it('a CSV read in chunks stops its run at a record past ASSAY_MAX_RECORD_BYTES, each row before it scored or stopped', async () => {
    const rows = Array.from(
      { length: 12 },
      (_, i) => `${i},She go to school on day ${i}.,She goes to school on day ${i}.,TP`,
    );
    rows[8] = `8,${'x'.repeat(3 * MAX_RECORD_BYTES)},y,TP`;
    const csv = `idx,src,tgt,tp_fp_label\n${rows.join('\n')}\n`;
    const { errors, report, errorsTxt } = await uploadHostile('hostile-csv', 'data.csv', csv);

    expect(errors).toEqual([
      expect.objectContaining({
        message: 'dataset not readable to its end: run stopped',
        reason: expect.stringMatching(
          /datasets\/hostile-csv\/data\.csv: row 9 \(line 10\) is longer than 2000 characters, the reader's maxRecordBytes \(2000; ASSAY_MAX_RECORD_BYTES raises it\); the rows after it are not read/,
        ),
      }),
    ]);
    // Every row read is one result: the eight before it, and the row it stopped at (failed).
    // Stopping the run ends the items still queued as `stopped`: how many of the eight the
    // workers scored first depends on how the queues were drained, so either is counted.
    expect(report?.counts).toMatchObject({ items: 9, invalidRows: 1 });
    const counts = report!.counts;
    expect(counts.scored + counts.failed).toBe(9);
    expect(counts.failed).toBe(1 + (counts.byFailure.stopped ?? 0));
    expect(errorsTxt).toContain('row 9');
    await expectNothingRetried();
  });
});
