/**
 * A dataset cut into ranges read at the same time ends exactly as one pass over it, whatever
 * order the ranges run in: the same items (the first row of an id is the one scored, even when
 * a later range claims the id first), the same invalid rows and duplicates (each naming the
 * id's first row), the same totals; every row ends as exactly one item or one failed result,
 * tasks delivered twice included. A Parquet file is read in ranges of row groups the same way;
 * a file that cannot be cut, or a sampled run, is read in order.
 */
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import { parquetRowGroups, readRows } from '../../../shared/lib/datasets/read.js';
import { blobSource } from '../../../shared/lib/datasets/source.js';
import { mulberry32 } from '../../../shared/lib/metrics/index.js';
import type { ItemMessage, ItemResult, RunRecord } from '../../../shared/model/model.js';
import {
  type ChunkOutcome,
  type ChunkTask,
  type IngestChunkDeps,
  ingestChunk,
  parquetRanges,
  sendParquetRanges,
} from '../../../shared/use-cases/ingest-chunk/index.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { startRun } from '../../../shared/use-cases/start-run.js';
import { REPO, suite, tempDir } from '../../helpers.js';

const KEY = 'datasets/demo/data.csv';

/** 80 rows in CRLF: quoted fields over several lines, invalid rows, ids seen again far apart and near. */
const CSV = [
  '\uFEFFidx,src,tgt,label',
  ...Array.from({ length: 80 }, (_, i) => {
    const n = i + 1;
    if (n % 17 === 0) return `${n},bad,row,WRONG`;
    // An id whose rows are far apart: the later rows are read (and claim) in ranges far from the first.
    if (n % 11 === 0) return `${n % 3 === 0 ? 5 : n - 10},"dup, far",again,TP`;
    if (n % 13 === 0) return `${n - 1},dup near,again,TP`;
    if (n % 7 === 0) return `${n},"a source\r\nover two lines, ""quoted""",a target,FP1`;
    if (n % 9 === 0) return `\r\n${n},after a blank line,t,TP`;
    return `${n},source ${n},target ${n},TP`;
  }),
].join('\r\n');

async function setUp(overrides: Record<string, unknown> = {}, body = CSV) {
  const bucket = new FolderBlobStore(await tempDir('assay-ranges-bucket-'));
  await bucket.put(KEY, body);
  const run = await prepareRun({
    suite: suite({ backends: ['sim:gold'], ...overrides }),
    prompts: new FolderBlobStore(REPO),
    datasetKey: KEY,
    datasetVersion: 'v1',
    reportPrefix: 'reports/{runId}/',
  });
  return { bucket, run };
}

interface Outcome {
  sent: ItemMessage[];
  results: ItemResult[];
  run: RunRecord | undefined;
  triggered: string[];
}

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

async function onePass(run: RunRecord, bucket: FolderBlobStore): Promise<Outcome> {
  const runStore = new LocalRunStore(await tempDir('assay-ranges-one-pass-'));
  const sent: ItemMessage[] = [];
  const triggered: string[] = [];
  await startRun(
    {
      runStore,
      queue: { sendItems: async (m) => void sent.push(...m) },
      trigger: { trigger: async (id) => void triggered.push(id), triggerSweep: async () => {} },
    },
    { run, rows: readRows((await bucket.read(KEY))!.body, 'csv') },
  );
  return {
    sent,
    results: await all(runStore.results(run.runId)),
    run: await runStore.getRun(run.runId),
    triggered,
  };
}

/**
 * The dataset in ranges: the pass that cuts it, then every task sent, taken from the pending
 * ones in an order the seed draws (some delivered twice), each run as an invocation would.
 */
async function inRanges(
  run: RunRecord,
  bucket: FolderBlobStore,
  {
    chunkBytes,
    seed,
    scanBytes,
    twice = 0,
  }: { chunkBytes: number; seed: number; scanBytes?: number; twice?: number },
) {
  const runStore = new LocalRunStore(await tempDir('assay-ranges-'));
  await runStore.createRun(run);
  const sent: ItemMessage[] = [];
  const triggered: string[] = [];
  const pending: ChunkTask[] = [];
  const random = mulberry32(seed, 0);
  const deps = {
    runStore,
    bucket,
    chunks: new MemoryChunkStore(),
    queue: { sendItems: async (m: ItemMessage[]) => void sent.push(...m) },
    trigger: { trigger: async (id: string) => void triggered.push(id), triggerSweep: async () => {} },
    sendChunk: async (task: ChunkTask) => {
      pending.push(task);
      if (random() < twice) pending.push(task);
    },
    chunkBytes,
    chunkLeaseMs: 60_000,
    ...(scanBytes ? { scanBytes } : {}),
  };
  const { version } = (await bucket.read(KEY))!;
  pending.push({
    runId: run.runId,
    key: KEY,
    version,
    format: 'csv',
    chunk: 0,
    start: 0,
    row: 0,
    line: 0,
    scan: true,
  });
  const outcomes: ChunkOutcome[] = [];
  while (pending.length > 0) {
    const [task] = pending.splice(Math.floor(random() * pending.length), 1);
    outcomes.push(await ingestChunk(deps, task!));
  }
  const outcome: Outcome = {
    sent,
    results: await all(runStore.results(run.runId)),
    run: await runStore.getRun(run.runId),
    triggered,
  };
  return { ...outcome, outcomes };
}

const comparable = ({ sent, results, run }: Outcome) => ({
  items: sent
    .map((m) => ({ id: m.item.id, row: m.item.row, input: m.item.input, gold: m.item.gold }))
    .sort((a, b) => a.row - b.row),
  failed: results
    .map((r) => ({ itemId: r.itemId, row: r.row, message: r.failure?.message, input: r.input }))
    .sort((a, b) => a.row - b.row),
  total: run?.total,
  invalidRows: run?.invalidRows,
  status: run?.status,
});

describe('a dataset read in ranges at the same time', () => {
  it('ends as one pass over it in any order of its ranges: items, duplicates, invalid rows, totals', async () => {
    const { run, bucket } = await setUp();
    const expected = comparable(await onePass(run, bucket));
    expect(expected.failed.filter((f) => f.message?.includes('duplicate item id')).length).toBeGreaterThan(5);
    let waited = 0;
    for (const chunkBytes of [1, 90, 400])
      for (const seed of [1, 2, 3, 4, 5]) {
        const ranged = await inRanges(run, bucket, { chunkBytes, seed, twice: 0.2 });
        const label = `ranges of ${chunkBytes} bytes, order ${seed}`;
        expect(comparable(ranged), label).toEqual(expected);
        // Every row ends as exactly one item or one failed result, each item sent once.
        const rows = [...ranged.sent.map((m) => m.item.row), ...ranged.results.map((r) => r.row)].sort(
          (a, b) => a - b,
        );
        expect(rows, label).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
        const ranges = ranged.outcomes.filter((o) => o.status === 'ingested');
        if (chunkBytes <= 90) expect(ranges.length, label).toBeGreaterThan(5);
        expect(ranged.triggered, label).toEqual([]);
        waited += ranged.outcomes.filter((o) => o.status === 'waiting').length;
      }
    // Ranges ran before the ranges before them had claimed their ids, and waited.
    expect(waited).toBeGreaterThan(10);
  });

  it('goes on cutting in another invocation once one has read its share', async () => {
    const { run, bucket } = await setUp();
    const expected = comparable(await onePass(run, bucket));
    const ranged = await inRanges(run, bucket, { chunkBytes: 50, seed: 9, scanBytes: 300 });
    expect(comparable(ranged)).toEqual(expected);
    const scans = ranged.outcomes.filter((o) => o.status === 'scanned');
    expect(scans.length).toBeGreaterThan(3);
    expect(scans.at(-1)).toMatchObject({ continued: false });
    expect(scans.slice(0, -1).every((o) => o.status === 'scanned' && o.continued)).toBe(true);
  });

  it('stops at a row the reader cannot read: the ranges after it hand nothing on, as one pass reads nothing after it', async () => {
    const long = `${CSV}\r\n81,"${'x'.repeat(300)}",t,TP\r\n82,after,t,TP\r\n83,after,t,TP`;
    const { run, bucket } = await setUp({}, long);
    // The reader's record limit, as the deployment sets it, for both.
    const limits = { maxRecordBytes: 200 };
    const { DEFAULT_READER_LIMITS } = await import('../../../shared/lib/datasets/limits.js');
    const readerLimits = { ...DEFAULT_READER_LIMITS, ...limits };
    const runStore = new LocalRunStore(await tempDir('assay-ranges-limit-one-'));
    const sent: ItemMessage[] = [];
    await startRun(
      {
        runStore,
        queue: { sendItems: async (m) => void sent.push(...m) },
        trigger: { trigger: async () => {}, triggerSweep: async () => {} },
      },
      { run, rows: readRows((await bucket.read(KEY))!.body, 'csv', { limits: readerLimits, file: KEY }) },
    );
    const expected = comparable({
      sent,
      results: await all(runStore.results(run.runId)),
      run: await runStore.getRun(run.runId),
      triggered: [],
    });
    expect(expected.failed.at(-1)?.message).toMatch(/longer than 200/);

    for (const seed of [1, 2, 3]) {
      const ranged = await inRangesWith(run, bucket, { chunkBytes: 60, seed, readerLimits });
      expect(comparable(ranged), `order ${seed}`).toEqual(expected);
    }
  });

  it('reads a Parquet file in ranges of row groups, in any order, as one pass', async () => {
    const { run, bucket } = await setUp();
    const records: Record<string, string>[] = [];
    for await (const raw of readRows((await bucket.read(KEY))!.body, 'csv'))
      if (raw.record) records.push(raw.record);
    const column = (name: string) => ({
      name,
      data: records.map((r) => r[name] ?? null),
      type: 'STRING' as const,
    });
    const PARQUET = 'datasets/demo/data.parquet';
    await bucket.put(
      PARQUET,
      new Uint8Array(
        parquetWriteBuffer({ columnData: ['idx', 'src', 'tgt', 'label'].map(column), rowGroupSize: 7 }),
      ),
    );
    const object = (await bucket.read(PARQUET))!;
    await object.body[Symbol.asyncIterator]().return?.();
    const source = blobSource(bucket, PARQUET, object);
    const runStore = new LocalRunStore(await tempDir('assay-ranges-parquet-one-'));
    const sent: ItemMessage[] = [];
    await startRun(
      {
        runStore,
        queue: { sendItems: async (m) => void sent.push(...m) },
        trigger: { trigger: async () => {}, triggerSweep: async () => {} },
      },
      { run, rows: readRows(source, 'parquet') },
    );
    const expected = comparable({
      sent,
      results: await all(runStore.results(run.runId)),
      run: await runStore.getRun(run.runId),
      triggered: [],
    });
    expect(expected.failed.some((f) => f.message?.includes('duplicate item id'))).toBe(true);

    for (const [chunkBytes, seed] of [
      [1, 1],
      [1, 2],
      [300, 3],
    ] as const) {
      const ranged = await new Tasks(run, bucket, { chunkBytes }, seed).run(async (deps) => {
        const ranges = parquetRanges(deps, await parquetRowGroups(source));
        if (chunkBytes === 1) expect(ranges).toHaveLength(Math.ceil(records.length / 7));
        await sendParquetRanges(
          deps,
          { runId: run.runId, key: PARQUET, version: object.version, format: 'parquet' },
          object.size,
          ranges,
        );
      });
      expect(comparable(ranged), `ranges of ${chunkBytes} bytes, order ${seed}`).toEqual(expected);
    }
  });

  it('reads a file that cannot be cut, and a sampled run, in order', async () => {
    const bareCr = ['idx,src,tgt,label', '1,a,b,TP', '2,c,d,TP', '3,e,f,TP'].join('\r');
    const { run, bucket } = await setUp({}, bareCr);
    const ranged = await inRanges(run, bucket, { chunkBytes: 5, seed: 1 });
    expect(ranged.outcomes[0]).toMatchObject({
      status: 'scanned',
      ranges: 0,
      inOrder: expect.stringContaining('bare CR'),
    });
    expect(comparable(ranged)).toEqual(comparable(await onePass(run, bucket)));

    const sampled = await setUp({ run: { sample: { n: 8, seed: 5 } } });
    const expected = comparable(await onePass(sampled.run, sampled.bucket));
    expect(expected.items).toHaveLength(8);
    const inOrder = await inRanges(sampled.run, sampled.bucket, { chunkBytes: 100, seed: 2 });
    expect(inOrder.outcomes[0]).toMatchObject({
      status: 'scanned',
      ranges: 0,
      inOrder: expect.stringContaining('sampled'),
    });
    expect(inOrder.outcomes.filter((o) => o.status === 'ingested').length).toBeGreaterThan(5);
    expect(comparable(inOrder)).toEqual(expected);
  });
});

/** {@link inRanges} with the deployment's reader limits. */
async function inRangesWith(
  run: RunRecord,
  bucket: FolderBlobStore,
  options: {
    chunkBytes: number;
    seed: number;
    readerLimits: import('../../../shared/lib/datasets/limits.js').ReaderLimits;
  },
) {
  const runStore = new LocalRunStore(await tempDir('assay-ranges-limit-'));
  await runStore.createRun(run);
  const sent: ItemMessage[] = [];
  const pending: ChunkTask[] = [];
  const random = mulberry32(options.seed, 0);
  const deps = {
    runStore,
    bucket,
    chunks: new MemoryChunkStore(),
    queue: { sendItems: async (m: ItemMessage[]) => void sent.push(...m) },
    trigger: { trigger: async () => {}, triggerSweep: async () => {} },
    sendChunk: async (task: ChunkTask) => void pending.push(task),
    chunkBytes: options.chunkBytes,
    chunkLeaseMs: 60_000,
    readerLimits: options.readerLimits,
  };
  const { version } = (await bucket.read(KEY))!;
  pending.push({
    runId: run.runId,
    key: KEY,
    version,
    format: 'csv',
    chunk: 0,
    start: 0,
    row: 0,
    line: 0,
    scan: true,
  });
  while (pending.length > 0) {
    const [task] = pending.splice(Math.floor(random() * pending.length), 1);
    await ingestChunk(deps, task!);
  }
  return {
    sent,
    results: await all(runStore.results(run.runId)),
    run: await runStore.getRun(run.runId),
    triggered: [],
  };
}

/** Tasks run as invocations would, in an order the seed draws from those pending. */
class Tasks {
  private readonly pending: ChunkTask[] = [];
  private readonly random: () => number;

  constructor(
    private readonly run_: RunRecord,
    private readonly bucket: FolderBlobStore,
    private readonly options: { chunkBytes: number },
    seed: number,
  ) {
    this.random = mulberry32(seed, 0);
  }

  async run(start: (deps: IngestChunkDeps) => Promise<void>): Promise<Outcome> {
    const runStore = new LocalRunStore(await tempDir('assay-ranges-tasks-'));
    await runStore.createRun(this.run_);
    const sent: ItemMessage[] = [];
    const deps: IngestChunkDeps = {
      runStore,
      bucket: this.bucket,
      chunks: new MemoryChunkStore(),
      queue: { sendItems: async (m: ItemMessage[]) => void sent.push(...m) },
      trigger: { trigger: async () => {}, triggerSweep: async () => {} },
      sendChunk: async (task: ChunkTask) => void this.pending.push(task),
      chunkBytes: this.options.chunkBytes,
      chunkLeaseMs: 60_000,
    };
    await start(deps);
    while (this.pending.length > 0) {
      const [task] = this.pending.splice(Math.floor(this.random() * this.pending.length), 1);
      await ingestChunk(deps, task!);
    }
    const runId = this.run_.runId;
    return {
      sent,
      results: await all(runStore.results(runId)),
      run: await runStore.getRun(runId),
      triggered: [],
    };
  }
}
