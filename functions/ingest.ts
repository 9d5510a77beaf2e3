/**
 * ingest: S3 ObjectCreated notifications, delivered through the events queue, start runs.
 * `suites/<name>.json` runs the suite on its dataset, `datasets/<name>/<file>` runs
 * `suites/<name>.json` on that file, `prompts/<path>` re-runs the suites that read the prompt
 * when its content changed (see shared/lib/layout/bucket.ts and shared/use-cases/ingest-object.ts).
 * A dataset too large for one invocation is read in chunks: each arrives on the same queue as a
 * task (a range of the file cut up front, the pass that cuts it, or a chunk of a file read in
 * order; see shared/use-cases/ingest-chunk/). A problem with the upload itself (no suite, invalid
 * suite, missing prompt) is logged and counted, not retried; storage and queue errors fail the
 * record, so SQS delivers it again and the run (or the chunk) resumes.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { z } from 'zod';
import { decodeEventKey } from '../shared/lib/layout/bucket.js';
import { type ChunkOutcome, ingestChunk } from '../shared/use-cases/ingest-chunk/index.js';
import { ingestObject } from '../shared/use-cases/ingest-object.js';
import { ingestRoot, logger, metrics, sqsBatchHandler } from './root.js';
import { parseBody } from './sqs-event.js';

type IngestRoot = ReturnType<typeof ingestRoot>;

/** The handler of a container built from `root` (the process's, by default). */
export function createIngestHandler(root: IngestRoot = ingestRoot()) {
  return sqsBatchHandler((record) => ingestRecord(root, record), { parallel: false, retries: root.retries });
}

/** The message S3 sends once when a notification configuration is saved. */
const s3TestEventSchema = z.looseObject({ Event: z.literal('s3:TestEvent'), Bucket: z.string() });

const s3RecordSchema = z.looseObject({
  eventName: z.string(),
  eventTime: z.string().optional(),
  s3: z.looseObject({
    bucket: z.looseObject({ name: z.string() }),
    object: z.looseObject({
      /** URL-encoded, `+` for a space. */
      key: z.string().min(1),
      eTag: z.string().optional(),
      /** Orders events of one key; real S3 always sends it, moto does not. */
      sequencer: z.string().optional(),
      size: z.number().optional(),
    }),
  }),
});
export type S3EventRecord = z.infer<typeof s3RecordSchema>;

/**
 * A chunk of a dataset read in chunks: a range cut up front (`end`), the pass that cuts them
 * (`scan`), the pass that splits a dataset no reader can start in the middle of into chunk
 * objects (`split`), a chunk of those (`rowsKey`), or a chunk of a dataset read in order,
 * handed on by the invocation before.
 */
const chunkTaskSchema = z.object({
  chunk: z.object({
    runId: z.string().min(1),
    key: z.string().min(1),
    version: z.string(),
    format: z.enum(['csv', 'tsv', 'jsonl', 'json', 'parquet']),
    chunk: z.number().int().nonnegative(),
    start: z.number().int().nonnegative(),
    row: z.number().int().nonnegative(),
    line: z.number().int().nonnegative(),
    header: z.array(z.string()).optional(),
    end: z.number().int().nonnegative().optional(),
    last: z.boolean().optional(),
    rows: z.number().int().nonnegative().optional(),
    rowGroups: z
      .object({ from: z.number().int().nonnegative(), to: z.number().int().nonnegative() })
      .optional(),
    crlf: z.boolean().optional(),
    scan: z.literal(true).optional(),
    split: z.literal(true).optional(),
    rowsKey: z.string().min(1).optional(),
    uploadRejected: z.literal(true).optional(),
  }),
});

/** An events-queue body: the S3 test event, an S3 event notification, or a chunk of a dataset to ingest. */
export const s3EventBodySchema = z.union([
  s3TestEventSchema,
  z.looseObject({ Records: z.array(s3RecordSchema) }),
  chunkTaskSchema,
]);

async function ingestRecord(root: IngestRoot, record: SQSRecord): Promise<void> {
  const body = parseBody(record.body, s3EventBodySchema);
  if ('error' in body) {
    logger.error('events queue message is not an S3 notification: dropped', {
      messageId: record.messageId,
      reason: body.error,
    });
    metrics.addMetric('IngestRejected', MetricUnit.Count, 1);
    return;
  }
  if ('Event' in body.data) {
    logger.info('s3:TestEvent ignored', { bucket: body.data.Bucket });
    return;
  }
  const chunk = chunkTaskSchema.safeParse(body.data);
  if (chunk.success) {
    logChunk(await ingestChunk(root.deps, chunk.data.chunk));
    return;
  }
  if ('Records' in body.data && Array.isArray(body.data.Records))
    for (const s3Record of body.data.Records as S3EventRecord[]) await ingestS3Record(root, s3Record);
}

function logChunk(outcome: ChunkOutcome): void {
  const { runId, chunk } = outcome;
  switch (outcome.status) {
    case 'ingested':
      logger.info(outcome.last ? 'last chunk ingested' : 'chunk ingested', { ...outcome });
      metrics.addMetric('ChunksIngested', MetricUnit.Count, 1);
      // A split dataset's row that rejected its upload was reported with the rejection.
      if (outcome.unreadable && !outcome.uploadRejected) {
        logger.error('dataset not readable to its end: run stopped', {
          runId,
          chunk,
          reason: outcome.unreadable,
        });
        metrics.addMetric('IngestRejected', MetricUnit.Count, 1);
      }
      return;
    case 'scanned':
      logger.info('dataset cut into ranges', { ...outcome });
      return;
    case 'waiting':
      logger.info('range claimed its ids: it hands its rows on once the ranges before it have', {
        runId,
        chunk,
      });
      return;
    case 'skipped':
      logger.info(
        'chunk skipped: done already, held by another invocation, or after the end of the dataset',
        {
          runId,
          chunk,
          why: outcome.why,
        },
      );
      return;
    case 'rejected':
      logger.error('chunk not ingested: the run stays incomplete', { runId, chunk, reason: outcome.reason });
      metrics.addMetric('IngestRejected', MetricUnit.Count, 1);
      return;
    default:
      outcome satisfies never;
  }
}

async function ingestS3Record(root: IngestRoot, { eventName, eventTime, s3 }: S3EventRecord): Promise<void> {
  const rawKey = s3.object.key;
  if (!eventName.startsWith('ObjectCreated:')) {
    logger.info('not an upload: ignored', { eventName, key: rawKey });
    return;
  }
  if (s3.bucket.name !== root.bucketName) {
    logger.warn('upload to another bucket than BUCKET_NAME: ignored', {
      bucket: s3.bucket.name,
      key: rawKey,
    });
    metrics.addMetric('IngestRejected', MetricUnit.Count, 1);
    return;
  }
  let key: string;
  try {
    key = decodeEventKey(rawKey);
  } catch {
    logger.error('object key is not URL-encoded: ignored', { key: rawKey });
    metrics.addMetric('IngestRejected', MetricUnit.Count, 1);
    return;
  }
  // The same upload (a redelivered event) has the same version, so it maps to the same run.
  const version = `${s3.object.eTag ?? ''}:${s3.object.sequencer ?? eventTime ?? ''}`;
  await ingestUpload(root, key, version);
}

async function ingestUpload(root: IngestRoot, key: string, version: string): Promise<void> {
  const outcome = await ingestObject(root.deps, { key, version });
  switch (outcome.status) {
    case 'started':
    case 'resumed':
    case 'chunked': {
      const { start } = outcome;
      logger.info(outcome.status === 'resumed' ? 'run resumed' : 'run started', {
        key,
        runId: outcome.runId,
        suite: outcome.suiteName,
        ...(start.status === 'chunked'
          ? { bytes: start.bytes, inChunks: true }
          : start.status === 'duplicate'
            ? {}
            : { total: start.total, invalidRows: start.invalidRows, queued: start.queued }),
      });
      metrics.addMetric('RunsStarted', MetricUnit.Count, 1);
      if ('stopped' in start && start.stopped) {
        logger.error('upload over a deployment limit: run stopped', {
          key,
          runId: outcome.runId,
          reason: start.stopped,
        });
        metrics.addMetric('IngestRejected', MetricUnit.Count, 1);
      }
      return;
    }
    case 'sweep':
      logger.info('sweep started: a run per variant', {
        key,
        sweepId: outcome.sweepId,
        suite: outcome.suiteName,
        runs: outcome.runs.map(({ variant, runId, start }) => ({ variant, runId, status: start.status })),
      });
      metrics.addMetric(
        'RunsStarted',
        MetricUnit.Count,
        outcome.runs.filter((r) => r.start.status !== 'duplicate').length,
      );
      return;
    case 'duplicate':
      logger.info('run already started by an earlier delivery of this upload', { key, runId: outcome.runId });
      return;
    case 'prompt':
      for (const suite of outcome.suites) {
        const facts = { key, prompt: outcome.path, hash: outcome.hash, ...suite };
        if (suite.status === 'rejected') {
          logger.error('prompt change: suite not re-evaluated', facts);
          metrics.addMetric('IngestRejected', MetricUnit.Count, 1);
        } else if (suite.status === 'started' || suite.status === 'resumed' || suite.status === 'sweep') {
          logger.info('prompt change: suite re-evaluated', facts);
          metrics.addMetric('RunsStarted', MetricUnit.Count, 1);
        } else {
          logger.info('prompt change: nothing to re-run for this suite', facts);
        }
      }
      // A team's suites read only their team's folder: a key outside it reaches none of them.
      if (outcome.suites.length === 0)
        logger.info('prompt change: no suite in the scope of this key reads it', { key });
      return;
    case 'ignored':
      if (outcome.why === 'unknown-key') logger.warn('upload ignored', { key, reason: outcome.reason });
      else logger.info('upload ignored', { key, reason: outcome.reason });
      return;
    case 'rejected':
      logger.error('upload rejected', { key, suite: outcome.suiteName, reason: outcome.reason });
      metrics.addMetric('IngestRejected', MetricUnit.Count, 1);
      return;
    default:
      outcome satisfies never;
  }
}

export const handler = createIngestHandler();
