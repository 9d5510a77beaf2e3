/**
 * A dataset no reader can start in the middle of (a gzipped CSV or JSONL file, a JSON array, a
 * CSV in latin-1) is split by one pass into chunk objects whose chunks are read at the same
 * time, and ends exactly as one pass over the file: the same items, invalid rows, duplicates
 * (each naming the id's first row), totals, and the same row failed where a reader's limit
 * stops the file; in any order of the chunks, tasks delivered twice, and a split that goes on
 * in later invocations. A chunk task that fails gives its lease up, so its redelivery is done.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import { DEFAULT_READER_LIMITS, type ReaderLimits } from '../../../shared/lib/datasets/limits.js';
import { datasetReading, readRows } from '../../../shared/lib/datasets/read.js';
import { splitRows } from '../../../shared/lib/datasets/split.js';
import { splitChunkKey } from '../../../shared/lib/layout/bucket.js';
import { mulberry32 } from '../../../shared/lib/metrics/index.js';
import type { ItemMessage, ItemResult, RunRecord } from '../../../shared/model/model.js';
import {
  type ChunkOutcome,
  type ChunkTask,
  ingestChunk,
} from '../../../shared/use-cases/ingest-chunk/index.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { startRun } from '../../../shared/use-cases/start-run.js';
import { REPO, suite, tempDir } from '../../helpers.js';

/** 60 rows: invalid rows, ids seen again far apart and near, text a latin-1 file can hold. */
const ROWS = Array.from({ length: 60 }, (_, i) => {
  const n = i + 1;
  if (n % 17 === 0) return { idx: String(n), src: 'bad', tgt: 'row', label: 'WRONG' };
  if (n % 11 === 0)
    return { idx: String(n % 3 === 0 ? 5 : n - 10), src: 'dup, far', tgt: 'again', label: 'TP' };
  if (n % 13 === 0) return { idx: String(n - 1), src: 'dup near', tgt: 'again', label: 'TP' };
  if (n % 7 === 0)
    return { idx: String(n), src: `café ${n}\nover two lines, "quoted"`, tgt: 'señal', label: 'FP1' };
  return { idx: String(n), src: `source ${n}`, tgt: `target ${n}`, label: 'TP' };
});

const csvField = (value: string) => (/[",\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);
const CSV = ['idx,src,tgt,label', ...ROWS.map((r) => Object.values(r).map(csvField).join(','))].join('\n');
const JSONL = ROWS.map((r) => JSON.stringify(r)).join('\n');

const FILES: { key: string; body: Uint8Array; dataset?: Record<string, unknown> }[] = [
  { key: 'datasets/demo/data.csv.gz', body: gzipSync(CSV) },
  { key: 'datasets/demo/data.jsonl.gz', body: gzipSync(JSONL) },
  { key: 'datasets/demo/data.json', body: new TextEncoder().encode(JSON.stringify(ROWS, null, 1)) },
  { key: 'datasets/demo/latin.csv', body: Buffer.from(CSV, 'latin1'), dataset: { encoding: 'latin1' } },
];

async function setUp(file: (typeof FILES)[number]) {
  const bucket = new FolderBlobStore(await tempDir('assay-split-bucket-'));
  await bucket.put(file.key, file.body);
  const run = await prepareRun({
    suite: suite({ backends: ['sim:gold'], dataset: { path: file.key.split('/').at(-1), ...file.dataset } }),
    prompts: new FolderBlobStore(REPO),
    datasetKey: file.key,
    datasetVersion: 'v1',
    reportPrefix: 'reports/{runId}/',
  });
  return { bucket, run };
}

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

interface Outcome {
  sent: ItemMessage[];
  results: ItemResult[];
  run: RunRecord | undefined;
  stopped: string | undefined;
}

async function onePass(run: RunRecord, bucket: FolderBlobStore, limits?: ReaderLimits): Promise<Outcome> {
  const runStore = new LocalRunStore(await tempDir('assay-split-one-pass-'));
  const sent: ItemMessage[] = [];
  const { format, options } = datasetReading(run.datasetKey, run.suite.dataset);
  await startRun(
    {
      runStore,
      queue: { sendItems: async (m) => void sent.push(...m) },
      trigger: { trigger: async () => {}, triggerSweep: async () => {} },
    },
    {
      run,
      rows: readRows((await bucket.read(run.datasetKey))!.body, format, {
        ...options,
        ...(limits ? { limits } : {}),
      }),
    },
  );
  return {
    sent,
    results: await all(runStore.results(run.runId)),
    run: await runStore.getRun(run.runId),
    stopped: await runStore.stopped(run.runId),
  };
}

/** The split pass, then every task it (and the chunks) sent, in an order the seed draws, some twice. */
async function split(
  run: RunRecord,
  bucket: FolderBlobStore,
  {
    seed,
    partRows,
    splitRows,
    readerLimits,
  }: { seed: number; partRows: number; splitRows?: number; readerLimits?: ReaderLimits },
) {
  const runStore = new LocalRunStore(await tempDir('assay-split-'));
  await runStore.createRun(run);
  const sent: ItemMessage[] = [];
  const pending: ChunkTask[] = [];
  const random = mulberry32(seed, 0);
  const deps = {
    runStore,
    bucket,
    chunks: new MemoryChunkStore(),
    queue: { sendItems: async (m: ItemMessage[]) => void sent.push(...m) },
    trigger: { trigger: async () => {}, triggerSweep: async () => {} },
    sendChunk: async (task: ChunkTask) => {
      pending.push(task);
      if (random() < 0.2) pending.push(task);
    },
    chunkBytes: 1 << 20,
    partRows,
    chunkLeaseMs: 60_000,
    ...(splitRows ? { splitRows } : {}),
    ...(readerLimits ? { readerLimits } : {}),
  };
  const { format } = datasetReading(run.datasetKey, run.suite.dataset);
  const { version } = (await bucket.read(run.datasetKey))!;
  pending.push({
    runId: run.runId,
    key: run.datasetKey,
    version,
    format,
    chunk: 0,
    start: 0,
    row: 0,
    line: 0,
    split: true,
  });
  const outcomes: ChunkOutcome[] = [];
  while (pending.length > 0) {
    const [task] = pending.splice(Math.floor(random() * pending.length), 1);
    outcomes.push(await ingestChunk(deps, task!));
  }
  return {
    sent,
    results: await all(runStore.results(run.runId)),
    run: await runStore.getRun(run.runId),
    stopped: await runStore.stopped(run.runId),
    outcomes,
  };
}

const comparable = ({ sent, results, run, stopped }: Outcome) => ({
  items: sent
    .map((m) => ({ id: m.item.id, row: m.item.row, input: m.item.input, gold: m.item.gold }))
    .sort((a, b) => a.row - b.row),
  failed: results
    .map((r) => ({ itemId: r.itemId, row: r.row, message: r.failure?.message, input: r.input }))
    .sort((a, b) => a.row - b.row),
  total: run?.total,
  invalidRows: run?.invalidRows,
  status: run?.status,
  stopped,
});

describe('a dataset split by one pass into chunk objects', () => {
  for (const file of FILES)
    it(`${file.key}: ends as one pass over it, in any order of its chunks`, async () => {
      const { run, bucket } = await setUp(file);
      const expected = comparable(await onePass(run, bucket));
      expect(expected.items.length).toBeGreaterThan(30);
      expect(expected.failed.filter((f) => f.message?.includes('duplicate item id')).length).toBeGreaterThan(
        3,
      );
      expect(expected.items.some((i) => JSON.stringify(i.input).includes('café'))).toBe(true);
      for (const seed of [1, 2, 3]) {
        const ranged = await split(run, bucket, { seed, partRows: 7 });
        expect(comparable(ranged), `order ${seed}`).toEqual(expected);
        const rows = [...ranged.sent.map((m) => m.item.row), ...ranged.results.map((r) => r.row)].sort(
          (a, b) => a - b,
        );
        expect(rows, `order ${seed}`).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
        expect(ranged.outcomes.filter((o) => o.status === 'ingested').length).toBe(Math.ceil(60 / 7));
        // The chunks' rows are in the bucket, under the run's own keys.
        expect(await bucket.read(splitChunkKey(run.runId, 0))).toBeDefined();
      }
    });

  it('goes on splitting in later invocations, reading the file again and letting the split rows go by', async () => {
    const { run, bucket } = await setUp(FILES[0]!);
    const expected = comparable(await onePass(run, bucket));
    const ranged = await split(run, bucket, { seed: 4, partRows: 5, splitRows: 12 });
    expect(comparable(ranged)).toEqual(expected);
    const passes = ranged.outcomes.filter((o) => o.status === 'scanned');
    // 12 chunks of 5 rows, three a pass (its 12 rows reached with the third): four passes.
    expect(passes).toHaveLength(4);
    expect(passes.map((o) => o.status === 'scanned' && o.continued)).toEqual([true, true, true, false]);
  });

  it('stops at the row a reader limit refuses, as one pass does: the chunks after it hand nothing on', async () => {
    const long = { idx: '40', src: 'x'.repeat(400), tgt: 't', label: 'TP' };
    const rows = [...ROWS.slice(0, 39), long, ...ROWS.slice(40)];
    const csv = ['idx,src,tgt,label', ...rows.map((r) => Object.values(r).map(csvField).join(','))].join(
      '\n',
    );
    const { run, bucket } = await setUp({ key: 'datasets/demo/data.csv.gz', body: gzipSync(csv) });
    const readerLimits = { ...DEFAULT_READER_LIMITS, maxRecordBytes: 300 };
    const expected = comparable(await onePass(run, bucket, readerLimits));
    expect(expected.failed.at(-1)).toMatchObject({ row: 40 });
    expect(expected.stopped).toMatch(/from row 40 on/);
    for (const seed of [1, 2]) {
      const ranged = await split(run, bucket, { seed, partRows: 6, readerLimits });
      expect(comparable(ranged), `order ${seed}`).toEqual(expected);
    }
  });

  it('cuts chunks of whole rows, numbered as in the file, and ends at the item limit', async () => {
    const { run, bucket } = await setUp(FILES[2]!);
    const { format, options } = datasetReading(run.datasetKey, run.suite.dataset);
    const body = (await bucket.read(run.datasetKey))!.body;
    const pieces = await all(
      splitRows(
        readRows(body, format, options),
        { chunk: 0, row: 0 },
        { maxRows: 25, maxBytes: 1 << 20, maxItems: 55, file: 'x' },
      ),
    );
    expect(pieces.map((p) => [p.chunk, p.row, p.rows, p.last])).toEqual([
      [0, 0, 25, false],
      [1, 25, 25, false],
      [2, 50, 6, true],
    ]);
    expect(pieces[1]!.next).toEqual({ chunk: 2, row: 50 });
  });

  it('gives a failed chunk task its lease back, so its redelivery is done, not skipped as held', async () => {
    const { run, bucket } = await setUp(FILES[1]!);
    const runStore = new LocalRunStore(await tempDir('assay-split-fail-'));
    await runStore.createRun(run);
    const pending: ChunkTask[] = [];
    let failures = 1;
    const sent: ItemMessage[] = [];
    const deps = {
      runStore,
      bucket,
      // A clock that stands still: a lease never lapses, only a release frees it.
      chunks: new MemoryChunkStore(() => 0),
      queue: {
        sendItems: async (m: ItemMessage[]) => {
          // The queue fails once, mid-chunk: the chunk task throws and is delivered again.
          if (failures-- > 0) throw new Error('queue unavailable');
          sent.push(...m);
        },
      },
      trigger: { trigger: async () => {}, triggerSweep: async () => {} },
      sendChunk: async (task: ChunkTask) => void pending.push(task),
      chunkBytes: 1 << 20,
      partRows: 100,
      chunkLeaseMs: 60_000,
    };
    const { version } = (await bucket.read(run.datasetKey))!;
    await ingestChunk(deps, {
      runId: run.runId,
      key: run.datasetKey,
      version,
      format: 'jsonl',
      chunk: 0,
      start: 0,
      row: 0,
      line: 0,
      split: true,
    });
    expect(pending).toHaveLength(1);
    const [task] = pending;
    await expect(ingestChunk(deps, task!)).rejects.toThrow('queue unavailable');
    // Redelivered well within the lease: taken again, and done.
    expect(await ingestChunk(deps, task!)).toMatchObject({ status: 'ingested', last: true });
    expect(sent.length).toBeGreaterThan(30);
  });
});
