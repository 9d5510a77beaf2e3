/**
 * The AWS shell's ingest reads every dataset format with the readers the local run uses: a
 * Parquet object by ranged reads of the bucket (a large one in ranges of row groups), gzipped
 * objects and JSON arrays in one pass (never in ranged chunks, however large).
 */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore, LayeredBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunHistory } from '../../../shared/adapters/local/local-run-history.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { LocalSweepStore } from '../../../shared/adapters/local/local-sweeps.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import { MemoryPromptIndex } from '../../../shared/adapters/local/memory-prompt-index.js';
import { readRows } from '../../../shared/lib/datasets/read.js';
import type { ItemMessage } from '../../../shared/model/model.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { type ChunkTask, ingestChunk } from '../../../shared/use-cases/ingest-chunk/index.js';
import { ingestObject } from '../../../shared/use-cases/ingest-object.js';
import { REPO, tempDir } from '../../helpers.js';

const GOLD = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');

async function setUp(suiteDataset: Record<string, unknown>) {
  const bucket = new FolderBlobStore(await tempDir('assay-bucket-'));
  const sent: ItemMessage[] = [];
  const tasks: ChunkTask[] = [];
  const deps = {
    bucket,
    prompts: new LayeredBlobStore([bucket, new FolderBlobStore(REPO)]),
    chunks: new MemoryChunkStore(),
    sendChunk: async (task: ChunkTask) => void tasks.push(task),
    // Every object is "large": read in chunks, or split into chunk objects when no reader can start in its middle.
    chunkBytes: 16,
    chunkLeaseMs: 60_000,
    checkBackends: async () => {},
    runStore: new LocalRunStore(await tempDir('assay-runs-')),
    queue: { sendItems: async (messages: ItemMessage[]) => void sent.push(...messages) },
    trigger: { trigger: async () => {}, triggerSweep: async () => {} },
    promptIndex: new MemoryPromptIndex(),
    history: new LocalRunHistory(await tempDir('assay-history-'), validateSuite),
    sweeps: new LocalSweepStore(await tempDir('assay-sweeps-')),
  };
  await bucket.put(
    'suites/demo.json',
    JSON.stringify({
      version: 1,
      name: 'demo',
      dataset: suiteDataset,
      task: 'gec',
      method: 'baseline',
      backends: ['sim:gold'],
    }),
  );
  /** Does every chunk task sent, and those they send, in turn. */
  const drain = async () => {
    for (let task = tasks.shift(); task; task = tasks.shift()) await ingestChunk(deps, task);
  };
  return { bucket, deps, sent, drain };
}

/** The gold CSV's readable records, and how the CSV itself ingests. */
async function goldRecords(): Promise<Record<string, string>[]> {
  const out: Record<string, string>[] = [];
  for await (const row of readRows(createReadStream(GOLD), 'csv')) if (row.record) out.push(row.record);
  return out;
}

describe('ingest of other dataset formats (AWS shell)', () => {
  it('a gzipped CSV is split into chunk objects, read to the same items as the CSV', async () => {
    const plain = await setUp({ path: 'data.csv' });
    await plain.bucket.put('datasets/demo/data.csv', await readFile(GOLD));
    plain.deps.chunkBytes = 1 << 30;
    const csv = await ingestObject(plain.deps, { key: 'datasets/demo/data.csv', version: 'etag:1' });

    const { bucket, deps, sent, drain } = await setUp({ path: 'data.csv.gz' });
    await bucket.put('datasets/demo/data.csv.gz', gzipSync(await readFile(GOLD)));
    const gz = await ingestObject(deps, { key: 'datasets/demo/data.csv.gz', version: 'etag:1' });
    expect(gz.status).toBe('chunked');
    await drain();
    expect(csv.status === 'started' && csv.start).toMatchObject({ total: 14, invalidRows: 2, queued: 12 });
    expect(await deps.runStore.getRun(gz.status === 'chunked' ? gz.runId : '')).toMatchObject({
      total: 14,
      invalidRows: 2,
    });
    // The chunks are read at the same time: their items go out in no set order.
    const byRow = (messages: ItemMessage[]) => messages.map((m) => m.item).sort((a, b) => a.row - b.row);
    expect(byRow(sent)).toEqual(byRow(plain.sent));
  });

  it('a corrupt gzip object or a .json object that is no array is refused with its key, not retried', async () => {
    const gz = await setUp({ path: 'data.jsonl.gz' });
    await gz.bucket.put('datasets/demo/data.jsonl.gz', new TextEncoder().encode('not gzip at all'));
    expect(
      await ingestObject(gz.deps, { key: 'datasets/demo/data.jsonl.gz', version: 'etag:1' }),
    ).toMatchObject({
      status: 'rejected',
      suiteName: 'demo',
      reason: expect.stringMatching(/^datasets\/demo\/data\.jsonl\.gz: not a readable gzip file/),
    });
    const json = await setUp({ path: 'data.json' });
    await json.bucket.put('datasets/demo/data.json', '"a string, not rows"');
    expect(
      await ingestObject(json.deps, { key: 'datasets/demo/data.json', version: 'etag:1' }),
    ).toMatchObject({
      status: 'rejected',
      reason: expect.stringMatching(/^datasets\/demo\/data\.json: not a JSON array/),
    });
  });

  it('a JSON array and a Parquet object read to the same items', async () => {
    const records = await goldRecords();
    const names = Object.keys(records[0]!);

    const json = await setUp({ path: 'data.json' });
    await json.bucket.put('datasets/demo/data.json', JSON.stringify(records));
    json.deps.chunkBytes = 1 << 30;
    const fromJson = await ingestObject(json.deps, { key: 'datasets/demo/data.json', version: 'etag:1' });

    // Parquet larger than a chunk: read in ranges of row groups, a task each.
    const pq = await setUp({ path: 'data.parquet' });
    const tasks: ChunkTask[] = [];
    const deps = { ...pq.deps, sendChunk: async (task: ChunkTask) => void tasks.push(task) };
    const bytes = parquetWriteBuffer({
      columnData: names.map((name) => ({ name, data: records.map((r) => r[name] ?? null), type: 'STRING' })),
      rowGroupSize: 5,
    });
    await pq.bucket.put('datasets/demo/data.parquet', new Uint8Array(bytes));
    const fromParquet = await ingestObject(deps, { key: 'datasets/demo/data.parquet', version: 'etag:1' });
    expect(fromParquet.status).toBe('chunked');
    expect(tasks.map((task) => task.rowGroups)).toEqual([
      { from: 0, to: 1 },
      { from: 1, to: 2 },
      { from: 2, to: 3 },
    ]);
    for (const task of tasks) await ingestChunk(deps, task);

    expect(fromJson.status).toBe('started');
    const counts =
      fromJson.status === 'started' && fromJson.start.status === 'started' ? fromJson.start : undefined;
    expect(counts?.total).toBe(records.length);
    expect(
      await pq.deps.runStore.getRun(fromParquet.status === 'chunked' ? fromParquet.runId : ''),
    ).toMatchObject({
      total: counts?.total,
      invalidRows: counts?.invalidRows,
    });
    expect(pq.sent.map((m) => m.item)).toEqual(json.sent.map((m) => m.item));
  });

  it('a Parquet object named .gz is refused', async () => {
    const { bucket, deps } = await setUp({ path: 'data.parquet.gz' });
    await bucket.put('datasets/demo/data.parquet.gz', new Uint8Array([1, 2, 3]));
    expect(
      await ingestObject(deps, { key: 'datasets/demo/data.parquet.gz', version: 'etag:1' }),
    ).toMatchObject({
      status: 'rejected',
      reason: expect.stringContaining('Parquet'),
    });
  });
});
