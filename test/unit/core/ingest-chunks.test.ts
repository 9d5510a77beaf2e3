/**
 * A dataset ingested a chunk at a time (one task per chunk, each handed on by the chunk before)
 * ends exactly as one pass over it: the same items sent, the same invalid rows and duplicates
 * recorded (the first row of an id is the one scored, whichever chunks its rows are in), the
 * same sample, the same totals; a chunk delivered twice is done once, a chunk whose holder died
 * is taken up again, and a dataset replaced mid-way is not mixed into the run.
 */
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { MemoryChunkStore } from '../../../shared/adapters/local/memory-chunk-store.js';
import { readRows } from '../../../shared/lib/datasets/read.js';
import type { ItemMessage, ItemResult, RunRecord } from '../../../shared/model/model.js';
import {
  type ChunkOutcome,
  type ChunkTask,
  ingestChunk,
} from '../../../shared/use-cases/ingest-chunk/index.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { startRun } from '../../../shared/use-cases/start-run.js';
import { REPO, suite, tempDir } from '../../helpers.js';

/** 60 rows: quoted fields over several lines, invalid rows, and ids seen again far apart. */
const CSV = [
  'idx,src,tgt,label',
  ...Array.from({ length: 60 }, (_, i) => {
    const n = i + 1;
    if (n % 17 === 0) return `${n},bad,row,WRONG`;
    if (n % 13 === 0) return `${n - 12},"dup of ${n - 12}",again,TP`;
    if (n % 7 === 0)
      return `${n},"a source
over two lines, ""quoted""",a target,FP1`;
    return `${n},source ${n},target ${n},TP`;
  }),
].join('\r\n');

async function setUp(overrides: Record<string, unknown> = {}) {
  const bucket = new FolderBlobStore(await tempDir('assay-chunks-bucket-'));
  await bucket.put('datasets/demo/data.csv', CSV);
  const run = await prepareRun({
    suite: suite({ backends: ['sim:gold'], ...overrides }),
    prompts: new FolderBlobStore(REPO),
    datasetKey: 'datasets/demo/data.csv',
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

/** One pass over the file, as a small dataset is ingested. */
async function onePass(run: RunRecord, bucket: FolderBlobStore, partRows?: number): Promise<Outcome> {
  const runStore = new LocalRunStore(await tempDir('assay-one-pass-'));
  const sent: ItemMessage[] = [];
  const triggered: string[] = [];
  const read = (await bucket.read('datasets/demo/data.csv'))!;
  await startRun(
    {
      runStore,
      queue: { sendItems: async (m) => void sent.push(...m) },
      trigger: { trigger: async (id) => void triggered.push(id), triggerSweep: async () => {} },
      ...(partRows ? { partRows } : {}),
    },
    { run, rows: readRows(read.body, 'csv') },
  );
  return {
    sent,
    results: await all(runStore.results(run.runId)),
    run: await runStore.getRun(run.runId),
    triggered,
  };
}

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** The file a chunk at a time: tasks run in the order they are handed on, each as an invocation would. */
async function inChunks(run: RunRecord, bucket: FolderBlobStore, chunkBytes: number, partRows?: number) {
  const runStore = new LocalRunStore(await tempDir('assay-chunked-'));
  await runStore.createRun(run);
  const sent: ItemMessage[] = [];
  const triggered: string[] = [];
  const tasks: ChunkTask[] = [];
  const chunks = new MemoryChunkStore();
  const deps = {
    runStore,
    bucket,
    chunks,
    queue: { sendItems: async (m: ItemMessage[]) => void sent.push(...m) },
    trigger: { trigger: async (id: string) => void triggered.push(id), triggerSweep: async () => {} },
    sendChunk: async (task: ChunkTask) => void tasks.push(task),
    chunkBytes,
    chunkLeaseMs: 60_000,
    ...(partRows ? { partRows } : {}),
  };
  const { version } = (await bucket.read('datasets/demo/data.csv'))!;
  tasks.push({
    runId: run.runId,
    key: 'datasets/demo/data.csv',
    version,
    format: 'csv',
    chunk: 0,
    start: 0,
    row: 0,
    line: 0,
  });
  const outcomes: ChunkOutcome[] = [];
  for (let task = tasks.shift(); task; task = tasks.shift()) outcomes.push(await ingestChunk(deps, task));
  const outcome: Outcome = {
    sent,
    results: await all(runStore.results(run.runId)),
    run: await runStore.getRun(run.runId),
    triggered,
  };
  return { ...outcome, outcomes, deps };
}

/** What two ingests must agree on: the items sent, the failed results, the run's totals. */
const comparable = ({ sent, results, run }: Outcome) => ({
  items: sent.map((m) => ({ id: m.item.id, row: m.item.row, input: m.item.input, gold: m.item.gold })),
  failed: results
    .map((r) => ({ itemId: r.itemId, row: r.row, message: r.failure?.message, input: r.input }))
    .sort((a, b) => a.row - b.row),
  total: run?.total,
  invalidRows: run?.invalidRows,
  status: run?.status,
});

describe('a dataset ingested in chunks', () => {
  it('ends as one pass over it, at every chunk size: items, invalid rows, duplicates, totals', async () => {
    const { run, bucket } = await setUp();
    const expected = comparable(await onePass(run, bucket));
    expect(expected.items.length).toBeGreaterThan(40);
    expect(
      expected.failed.some((f) => f.message?.includes('duplicate item id "1" (first seen at row 1)')),
    ).toBe(true);
    for (const size of [1, 50, 200, 700, 5_000]) {
      const chunked = await inChunks(run, bucket, size);
      expect(comparable(chunked), `chunks of ${size} bytes`).toEqual(expected);
      const ingested = chunked.outcomes.filter((o) => o.status === 'ingested');
      expect(ingested.at(-1)).toMatchObject({ last: true });
      if (size <= 200) expect(ingested.length).toBeGreaterThan(3);
      // Each chunk's items are a part of their own.
      const parts = [...new Set(chunked.sent.map((m) => m.part ?? 0))].sort((a, b) => a - b);
      expect(parts).toEqual(ingested.filter((o) => o.queued > 0).map((o) => o.chunk));
    }
  });

  it("cuts a run into parts of at most partRows rows in the dataset's order, in one pass or in chunks", async () => {
    const { run, bucket } = await setUp();
    const expected = comparable(await onePass(run, bucket));
    /** The rows of each part (items sent and invalid rows recorded), by part. */
    const partsOf = ({ sent, results }: Outcome) => {
      const parts: number[][] = [];
      const add = (part: number | undefined, row: number) => {
        parts[part ?? 0] ??= [];
        parts[part ?? 0]!.push(row);
      };
      for (const m of sent) add(m.part, m.item.row);
      for (const r of results) add(r.part, r.row);
      return parts.map((rows) => rows.sort((a, b) => a - b));
    };
    const cut = await onePass(run, bucket, 7);
    expect(comparable(cut)).toEqual(expected);
    const parts = partsOf(cut);
    expect(parts.flat()).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(parts.map((rows) => rows.length)).toEqual([...Array(8).fill(7), 4]);
    // In chunks: a chunk ends at its 7th row however many bytes it may read; the same parts.
    const chunked = await inChunks(run, bucket, 1 << 20, 7);
    expect(comparable(chunked)).toEqual(expected);
    expect(partsOf(chunked)).toEqual(parts);
  });

  it('keeps the sample one pass draws, with every invalid row and duplicate recorded, in one part', async () => {
    const { run, bucket } = await setUp({ run: { sample: { n: 8, seed: 5 } } });
    const expected = comparable(await onePass(run, bucket));
    expect(expected.items).toHaveLength(8);
    for (const size of [1, 120, 3_000]) {
      const chunked = await inChunks(run, bucket, size);
      expect(comparable(chunked), `chunks of ${size} bytes`).toEqual(expected);
      expect(chunked.sent.every((m) => m.part === undefined)).toBe(true);
    }
  });

  it('does a chunk delivered twice once, and takes up a chunk whose holder died where it stopped', async () => {
    const { run, bucket } = await setUp();
    const big = [
      'idx,src,tgt,label',
      ...Array.from({ length: 5_000 }, (_, i) => `${i},s ${i},t ${i},TP`),
    ].join('\n');
    await bucket.put('datasets/demo/data.csv', big);
    const runStore = new LocalRunStore(await tempDir('assay-redo-'));
    await runStore.createRun(run);
    const clock = { ms: 0 };
    const sent: ItemMessage[] = [];
    let calls = 0;
    let dies = true;
    const deps = {
      runStore,
      bucket,
      // A holder that dies gives nothing back: not even its lease (a holder that only fails would).
      chunks: Object.assign(new MemoryChunkStore(() => clock.ms), {
        releaseChunk: async () => {
          if (dies) throw new Error('killed');
        },
      }),
      // The holder dies on its 4th send (a thousand items each: 3,000 sent, its progress marked at 2,000).
      queue: {
        sendItems: async (m: ItemMessage[]) => {
          calls += 1;
          if (dies && calls === 4) throw new Error('killed');
          sent.push(...m);
        },
      },
      trigger: { trigger: async () => {}, triggerSweep: async () => {} },
      sendChunk: async () => {
        throw new Error('one chunk here');
      },
      chunkBytes: 1 << 20,
      chunkLeaseMs: 60_000,
    };
    const task: ChunkTask = {
      runId: run.runId,
      key: 'datasets/demo/data.csv',
      version: (await bucket.read('datasets/demo/data.csv'))!.version,
      format: 'csv',
      chunk: 0,
      start: 0,
      row: 0,
      line: 0,
    };
    await expect(ingestChunk(deps, task)).rejects.toThrow('killed');
    expect(sent).toHaveLength(3_000);
    // Its task comes back while the lease holds: left alone; once the lease has lapsed: taken up.
    expect(await ingestChunk(deps, task)).toEqual({
      status: 'skipped',
      runId: run.runId,
      chunk: 0,
      why: 'held',
    });
    clock.ms += 60_001;
    dies = false;
    expect(await ingestChunk(deps, task)).toMatchObject({ status: 'ingested', rows: 5_000, last: true });
    const times = new Map<string, number>();
    for (const m of sent) times.set(m.item.id, (times.get(m.item.id) ?? 0) + 1);
    expect(times.size).toBe(5_000);
    // Only what was sent after the last mark goes out twice.
    expect([...times].filter(([, n]) => n > 1).map(([id]) => Number(id))).toEqual(
      Array.from({ length: 1_000 }, (_, i) => 2_000 + i),
    );
    expect(await runStore.getRun(run.runId)).toMatchObject({ total: 5_000, status: 'running' });
    // Delivered again once done: nothing to do.
    expect(await ingestChunk(deps, task)).toEqual({
      status: 'skipped',
      runId: run.runId,
      chunk: 0,
      why: 'done',
    });
  });

  it('refuses to read on in a dataset replaced since the run started', async () => {
    const { run, bucket } = await setUp();
    const runStore = new LocalRunStore(await tempDir('assay-replaced-'));
    await runStore.createRun(run);
    const { version } = (await bucket.read('datasets/demo/data.csv'))!;
    await new Promise((resolve) => setTimeout(resolve, 5));
    await bucket.put('datasets/demo/data.csv', `${CSV}\r\n99,one more,row,TP`);
    const outcome = await ingestChunk(
      {
        runStore,
        bucket,
        chunks: new MemoryChunkStore(),
        queue: { sendItems: async () => {} },
        trigger: { trigger: async () => {}, triggerSweep: async () => {} },
        sendChunk: async () => {},
        chunkBytes: 100,
        chunkLeaseMs: 60_000,
      },
      {
        runId: run.runId,
        key: 'datasets/demo/data.csv',
        version,
        format: 'csv',
        chunk: 3,
        start: 400,
        row: 9,
        line: 10,
      },
    );
    expect(outcome).toMatchObject({ status: 'rejected', reason: expect.stringContaining('was replaced') });
  });
});
