import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../shared/adapters/local/local-run-store.js';
import {
  DEFAULT_READER_LIMITS,
  jsonDepth,
  type ReaderLimits,
  readerLimitsFromEnv,
} from '../../shared/lib/datasets/limits.js';
import { type ByteSource, type RawRow, type ReadOptions, readRows } from '../../shared/lib/datasets/read.js';
import { InputError } from '../../shared/model/errors.js';
import type { ItemMessage } from '../../shared/model/model.js';
import { prepareRun } from '../../shared/use-cases/prepare-run.js';
import { startRun } from '../../shared/use-cases/start-run.js';
import { DECLARED_PAGE_BYTES, deepJson, hostileParquet } from '../fakes/hostile-files.js';
import { chunksOf, REPO, suite, tempDir } from '../helpers.js';

const limits = (over: Partial<ReaderLimits>): ReaderLimits => ({ ...DEFAULT_READER_LIMITS, ...over });

/** Every row a reader gives, and the error that ended it (if one did). */
async function readAll(
  input: AsyncIterable<Uint8Array | string> | ByteSource,
  format: Parameters<typeof readRows>[1],
  options: ReadOptions,
): Promise<{ rows: RawRow[]; error?: Error }> {
  const rows: RawRow[] = [];
  try {
    for await (const raw of readRows(input, format, options)) rows.push(raw);
  } catch (error) {
    return { rows, error: error as Error };
  }
  return { rows };
}

async function* pieces(bytes: Uint8Array, size = 4096): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

const bytesSource = (bytes: Uint8Array): ByteSource => ({
  size: bytes.length,
  read: async (start, end) => bytes.slice(start, end),
});

const row = (i: number) =>
  JSON.stringify({ idx: String(i), src: `She go ${i}.`, tgt: `She goes ${i}.`, label: 'TP' });

describe('reader limits: settings', () => {
  it('takes each limit from its environment variable, the default for the rest', () => {
    expect(readerLimitsFromEnv({})).toEqual(DEFAULT_READER_LIMITS);
    expect(readerLimitsFromEnv({ ASSAY_MAX_RECORD_BYTES: '1000', ASSAY_MAX_JSON_DEPTH: ' 8 ' })).toEqual({
      ...DEFAULT_READER_LIMITS,
      maxRecordBytes: 1000,
      maxJsonDepth: 8,
    });
  });

  it('refuses a variable that is not a positive whole number, naming it and the default', () => {
    expect(() => readerLimitsFromEnv({ ASSAY_MAX_COLUMNS: '10k' })).toThrow(
      /^ASSAY_MAX_COLUMNS="10k" is not a positive whole number: unset it for the default \(10000\)/,
    );
    expect(() => readerLimitsFromEnv({ ASSAY_MAX_GZIP_RATIO: '0' })).toThrow(InputError);
  });

  it('measures JSON depth past strings and escapes, stopping past the limit', () => {
    expect(jsonDepth('{"a":[1,{"b":"[[[{\\"]"}]}', 10)).toBe(3);
    expect(jsonDepth('['.repeat(100_000), 64)).toBe(65);
    // A string ending in an escaped backslash ends at its quote; brackets after it count.
    expect(jsonDepth('{"a":"x\\\\","b":[[1]]}', 10)).toBe(3);
    expect(jsonDepth('{"a":"\\"[[[["}', 10)).toBe(1);
  });
});

describe('reader limits: JSONL', () => {
  const options = { file: 'data.jsonl', limits: limits({ maxRecordBytes: 200 }) };

  it('makes a line past maxRecordBytes an invalid row, read in any chunking, the lines around it rows', async () => {
    const text = `${row(1)}\n{"src":"${'x'.repeat(1000)}"}\n${row(3)}\n`;
    for (const size of [7, 64, 1 << 20]) {
      const { rows, error } = await readAll(chunksOf(text, size), 'jsonl', options);
      expect(error).toBeUndefined();
      expect(rows.map((raw) => [raw.row, raw.line, raw.error === undefined])).toEqual([
        [1, 1, true],
        [2, 2, false],
        [3, 3, true],
      ]);
      expect(rows[1]!.error).toBe(
        "the line is longer than 200 bytes, the reader's maxRecordBytes (200; ASSAY_MAX_RECORD_BYTES raises it)",
      );
      expect(rows[2]!.record).toMatchObject({ idx: '3' });
    }
  });

  it('makes a last line past the limit (no newline after it) an invalid row', async () => {
    const { rows } = await readAll(chunksOf(`${row(1)}\n${'y'.repeat(500)}`, 16), 'jsonl', options);
    expect(rows.map((raw) => raw.error === undefined)).toEqual([true, false]);
  });

  it('makes a line nested past maxJsonDepth, or with more fields than maxColumns, an invalid row', async () => {
    const deep = `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`c${i}`, i])));
    const { rows, error } = await readAll(chunksOf(`${deep}\n${wide}\n${row(3)}\n`, 4096), 'jsonl', {
      limits: limits({ maxColumns: 10 }),
    });
    expect(error).toBeUndefined();
    expect(rows.map((raw) => raw.error)).toEqual([
      "the JSON nests deeper than 64 levels, the reader's maxJsonDepth (64; ASSAY_MAX_JSON_DEPTH raises it)",
      "the row has 20 fields, more than 10, the reader's maxColumns (10; ASSAY_MAX_COLUMNS raises it)",
      undefined,
    ]);
  });
});

describe('reader limits: JSON array', () => {
  it('stops at an element nested past maxJsonDepth, naming the file and row, after the rows before it', async () => {
    const text = `[${row(1)},${deepJson().slice(1)}`;
    const { rows, error } = await readAll(chunksOf(text, 1000), 'json', { file: 'deep.json' });
    expect(rows.map((raw) => raw.record?.idx)).toEqual(['1']);
    expect(error).toBeInstanceOf(InputError);
    expect(error!.message).toBe(
      "deep.json: row 2 (array element 2) nests deeper than 64 levels, the reader's maxJsonDepth (64; ASSAY_MAX_JSON_DEPTH raises it); the rows after it are not read",
    );
  });

  it('stops at an element longer than maxRecordBytes', async () => {
    const text = `[${row(1)},{"src":"${'z'.repeat(5000)}"},${row(3)}]`;
    const { rows, error } = await readAll(chunksOf(text, 256), 'json', {
      file: 'long.json',
      limits: limits({ maxRecordBytes: 1000 }),
    });
    expect(rows).toHaveLength(1);
    expect(error?.message).toMatch(/^long\.json: row 2 \(array element 2\) is longer than 1000 characters/);
  });
});

describe('reader limits: CSV', () => {
  it('stops at a record past maxRecordBytes, naming its row and line, after the rows before it', async () => {
    const csv = `idx,src,tgt,label\n1,a,b,TP\n2,${'q'.repeat(500)},b,TP\n3,a,b,TP\n`;
    for (const size of [5, 64, 4096]) {
      const { rows, error } = await readAll(chunksOf(csv, size), 'csv', {
        file: 'data.csv',
        limits: limits({ maxRecordBytes: 100 }),
      });
      expect(rows.map((raw) => raw.record?.idx)).toEqual(['1']);
      expect(error?.message).toBe(
        "data.csv: row 2 (line 3) is longer than 100 characters, the reader's maxRecordBytes (100; ASSAY_MAX_RECORD_BYTES raises it); the rows after it are not read",
      );
    }
  });

  it('refuses a header of more columns than maxColumns before parsing it', async () => {
    const header = Array.from({ length: 50 }, (_, i) => `c${i}`).join(',');
    const { rows, error } = await readAll(chunksOf(`${header}\n${'1,'.repeat(49)}1\n`, 16), 'csv', {
      file: 'wide.csv',
      limits: limits({ maxColumns: 20 }),
    });
    expect(rows).toEqual([]);
    expect(error?.message).toMatch(
      /^wide\.csv: the header row has more than 20 columns, the reader's maxColumns/,
    );
  });
});

describe('reader limits: gzip', () => {
  const bomb = gzipSync(Buffer.alloc(40 * 1024 * 1024, '\n'));

  it('refuses a stream that gunzips past maxGzipRatio for each compressed byte', async () => {
    const { error } = await readAll(pieces(bomb), 'jsonl', {
      file: 'bomb.jsonl.gz',
      compression: 'gzip',
    });
    expect(error).toBeInstanceOf(InputError);
    expect(error!.message).toMatch(
      /^bomb\.jsonl\.gz: gunzips to \d+ bytes from its first \d+, more than 200 for each compressed byte, the reader's maxGzipRatio \(200; ASSAY_MAX_GZIP_RATIO raises it\)/,
    );
  });

  it('refuses a stream that gunzips past maxGzipBytes, and reads one within both', async () => {
    const text = `${Array.from({ length: 2000 }, (_, i) => row(i)).join('\n')}\n`;
    const within = await readAll(pieces(gzipSync(text)), 'jsonl', { compression: 'gzip' });
    expect(within.error).toBeUndefined();
    expect(within.rows).toHaveLength(2000);
    const { error } = await readAll(pieces(gzipSync(text)), 'jsonl', {
      file: 'big.jsonl.gz',
      compression: 'gzip',
      limits: limits({ maxGzipBytes: 10_000 }),
    });
    expect(error?.message).toMatch(
      /^big\.jsonl\.gz: gunzips to more than 10000 bytes, the reader's maxGzipBytes/,
    );
  });
});

describe('reader limits: Parquet', () => {
  it('refuses a page whose header declares more than maxParquetPageBytes, before allocating it', async () => {
    const file = hostileParquet();
    expect(file.length).toBeLessThan(1024);
    const { rows, error } = await readAll(bytesSource(file), 'parquet', { file: 'huge.parquet' });
    expect(rows).toEqual([]);
    expect(error?.message).toBe(
      `huge.parquet: row group 1 (rows 1 to 3): a page declares ${DECLARED_PAGE_BYTES - 2} bytes uncompressed, more than 67108864, the reader's maxParquetPageBytes (67108864; ASSAY_MAX_PARQUET_PAGE_BYTES raises it); the rows from it on are not read`,
    );
  });

  it('refuses a page larger than its column chunk says it holds, whatever the page limit', async () => {
    const { error } = await readAll(bytesSource(hostileParquet()), 'parquet', {
      file: 'huge.parquet',
      limits: limits({ maxParquetPageBytes: 4e9, maxParquetRowGroupBytes: 4e9 }),
    });
    expect(error?.message).toMatch(/more than its column chunk's \d+ in all: the file is corrupt or forged/);
  });

  it('refuses a row group that declares more than maxParquetRowGroupBytes', async () => {
    const { error } = await readAll(bytesSource(hostileParquet({ declareChunks: true })), 'parquet', {
      file: 'huge.parquet',
    });
    expect(error?.message).toMatch(
      /^huge\.parquet: row group 1 \(rows 1 to 3\) declares \d+ bytes uncompressed, more than 268435456, the reader's maxParquetRowGroupBytes/,
    );
  });
});

describe('reader limits: a run whose file cannot be read to its end', () => {
  it('ends with the row it stopped at failed, saying why, the run stopped and its last part closed', async () => {
    const dir = await tempDir();
    const runStore = new LocalRunStore(dir);
    const run = await prepareRun({
      suite: suite({ backends: ['openai:gpt-4o-mini'] }),
      prompts: new FolderBlobStore(REPO),
      datasetKey: 'deep.json',
      datasetVersion: 'v1',
      reportPrefix: 'reports/{runId}/',
    });
    const sent: ItemMessage[] = [];
    const triggered: string[] = [];
    const text = `[${row(1)},${row(2)},${deepJson().slice(1)}`;
    const outcome = await startRun(
      {
        runStore,
        queue: { sendItems: async (messages) => void sent.push(...messages) },
        trigger: { trigger: async (runId) => void triggered.push(runId), triggerSweep: async () => {} },
      },
      { run, rows: readRows(chunksOf(text, 4096), 'json', { file: 'deep.json' }) },
    );

    expect(outcome).toMatchObject({ status: 'started', total: 3, invalidRows: 1, queued: 2 });
    expect(outcome.status === 'started' && outcome.readFailure).toMatch(
      /^deep\.json: row 3 \(array element 3\) nests deeper than 64 levels/,
    );
    expect(sent.map((message) => message.item.row)).toEqual([1, 2]);
    const results = [];
    for await (const result of runStore.results(run.runId)) results.push(result);
    expect(results).toEqual([
      expect.objectContaining({
        itemId: 'row-3',
        row: 3,
        status: 'failed',
        failure: expect.objectContaining({
          kind: 'invalid_row',
          message: expect.stringMatching(/^row 3: deep\.json: row 3 \(array element 3\) nests deeper/),
        }),
      }),
    ]);
    expect(await runStore.stopped(run.runId)).toMatch(
      /^the dataset could not be read from row 3 on, so the run was stopped there: deep\.json/,
    );
    expect((await runStore.getRun(run.runId))?.total).toBe(3);
  });

  it('ends the same when a value too deep for the stack meets the row parser (a RangeError)', async () => {
    const dir = await tempDir();
    const runStore = new LocalRunStore(dir);
    const run = await prepareRun({
      suite: suite({ backends: ['openai:gpt-4o-mini'] }),
      prompts: new FolderBlobStore(REPO),
      datasetKey: 'data.jsonl',
      datasetVersion: 'v1',
      reportPrefix: 'reports/{runId}/',
    });
    async function* rows(): AsyncGenerator<RawRow> {
      yield { row: 1, line: 1, record: JSON.parse(row(1)) as Record<string, string> };
      throw new RangeError('Maximum call stack size exceeded');
    }
    const outcome = await startRun(
      {
        runStore,
        queue: { sendItems: async () => {} },
        trigger: { trigger: async () => {}, triggerSweep: async () => {} },
      },
      { run, rows: rows() },
    );
    expect(outcome).toMatchObject({ status: 'started', total: 2, invalidRows: 1, queued: 1 });
    expect(outcome.status === 'started' && outcome.readFailure).toBe(
      'data.jsonl: Maximum call stack size exceeded',
    );
  });
});
