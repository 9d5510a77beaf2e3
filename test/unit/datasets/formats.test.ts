import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { readsInChunks } from '../../../shared/lib/datasets/chunks.js';
import { fileColumns } from '../../../shared/lib/datasets/columns.js';
import {
  type ByteSource,
  compressionFromPath,
  type DatasetFormat,
  datasetReading,
  formatFromPath,
  type RawRow,
  type ReadOptions,
  readRows,
} from '../../../shared/lib/datasets/read.js';
import { blobSource, fileSource, readDatasetFile } from '../../../shared/lib/datasets/source.js';
import { InputError } from '../../../shared/model/errors.js';
import { datasetSchema } from '../../../shared/model/suite-base.js';
import { chunksOf } from '../../helpers.js';

async function collect(rows: AsyncIterable<RawRow>): Promise<RawRow[]> {
  const out: RawRow[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

async function records(
  input: AsyncIterable<Uint8Array | string> | ByteSource,
  format: DatasetFormat,
  options: ReadOptions = {},
): Promise<Record<string, string>[]> {
  const rows = await collect(readRows(input, format, options));
  expect(rows.filter((row) => row.error)).toEqual([]);
  return rows.map((row) => row.record!);
}

/** Bytes in memory, read by position. */
function memorySource(bytes: Uint8Array): ByteSource {
  return { size: bytes.length, read: async (start, end) => bytes.slice(start, end) };
}

async function* inPieces(bytes: Uint8Array, size = 5): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.slice(i, i + size);
}

// The same three rows in every format: a quoted comma, a quote, a newline, non-ASCII text.
const EXPECTED = [
  { id: 'a1', text: 'Hello, world', score: '0.5', ok: 'true' },
  { id: 'a2', text: 'She said "hi"', score: '3', ok: 'false' },
  { id: 'a3', text: 'Zwei\nZeilen — ünïcödé', score: '-1.25', ok: 'true' },
];
const CSV = `id,text,score,ok
a1,"Hello, world",0.5,true
a2,"She said ""hi""",3,false
a3,"Zwei
Zeilen — ünïcödé",-1.25,true
`;
const TSV = `id\ttext\tscore\tok
a1\tHello, world\t0.5\ttrue
a2\t"She said ""hi"""\t3\tfalse
a3\t"Zwei
Zeilen — ünïcödé"\t-1.25\ttrue
`;
const JSON_ROWS = [
  { id: 'a1', text: 'Hello, world', score: 0.5, ok: true },
  { id: 'a2', text: 'She said "hi"', score: 3, ok: false },
  { id: 'a3', text: 'Zwei\nZeilen — ünïcödé', score: -1.25, ok: true },
];
const JSONL = `${JSON_ROWS.map((row) => JSON.stringify(row)).join('\n')}\n`;
const JSON_ARRAY = JSON.stringify(JSON_ROWS, null, 2);

function parquetOf(rowGroupSize = 2): Uint8Array {
  return new Uint8Array(
    parquetWriteBuffer({
      columnData: [
        { name: 'id', data: JSON_ROWS.map((r) => r.id), type: 'STRING' },
        { name: 'text', data: JSON_ROWS.map((r) => r.text), type: 'STRING' },
        { name: 'score', data: JSON_ROWS.map((r) => r.score), type: 'DOUBLE' },
        { name: 'ok', data: JSON_ROWS.map((r) => r.ok), type: 'BOOLEAN' },
      ],
      rowGroupSize,
    }),
  );
}

const text = (value: string) => new TextEncoder().encode(value);

describe('dataset formats read to the same records as the CSV', () => {
  it('CSV', async () => {
    expect(await records(chunksOf(CSV), 'csv')).toEqual(EXPECTED);
  });

  it('tab-separated text that quotes its fields (format csv, delimiter a tab)', async () => {
    expect(await records(chunksOf(TSV), 'csv', { delimiter: '\t' })).toEqual(EXPECTED);
  });

  it('JSONL and a JSON array, numbers and booleans as their JSON text', async () => {
    expect(await records(chunksOf(JSONL), 'jsonl')).toEqual(EXPECTED);
    expect(await records(chunksOf(JSON_ARRAY, 3), 'json')).toEqual(EXPECTED);
  });

  it('Parquet, a row group at a time, from memory and from a file', async () => {
    const bytes = parquetOf(2);
    expect(await records(memorySource(bytes), 'parquet')).toEqual(EXPECTED);
    const dir = await mkdtemp(join(tmpdir(), 'assay-parquet-'));
    try {
      const path = join(dir, 'data.parquet');
      await writeFile(path, bytes);
      expect(await records(fileSource(path, bytes.length), 'parquet')).toEqual(EXPECTED);
      const rows = await collect(readDatasetFile(path));
      expect(rows.map((row) => row.row)).toEqual([1, 2, 3]);
      expect(await fileColumns(path, 'parquet')).toEqual(['id', 'text', 'score', 'ok']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('gzipped CSV, TSV, JSONL and JSON, gunzipped as they stream', async () => {
    for (const [body, format, options] of [
      [CSV, 'csv', {}],
      [TSV, 'csv', { delimiter: '\t' }],
      [JSONL, 'jsonl', {}],
      [JSON_ARRAY, 'json', {}],
    ] as const) {
      const gz = new Uint8Array(gzipSync(body));
      expect(await records(inPieces(gz), format, { ...options, compression: 'gzip' })).toEqual(EXPECTED);
    }
  });

  it('a byte source streams the text formats too (the bucket read by ranges)', async () => {
    expect(await records(memorySource(text(CSV)), 'csv')).toEqual(EXPECTED);
    expect(await records(memorySource(gzipSync(JSONL)), 'jsonl', { compression: 'gzip' })).toEqual(EXPECTED);
  });
});

describe('delimited text', () => {
  it('TSV has no quoting: a quote is a character of its field, as exported TSVs hold them', async () => {
    const body = 'id\ttext\n1\t"a\n2\tsay "no"\n3\t"quoted"\n4\t12" pipe\n';
    expect(await records(chunksOf(body), 'tsv')).toEqual([
      { id: '1', text: '"a' },
      { id: '2', text: 'say "no"' },
      { id: '3', text: '"quoted"' },
      { id: '4', text: '12" pipe' },
    ]);
    // The same file as tab-separated CSV: its quotes open fields that do not close.
    const quoted = await collect(readRows(chunksOf(body), 'csv', { delimiter: '\t' }));
    expect(quoted.filter((row) => row.error).length).toBeGreaterThan(0);
  });

  it('reads CSV with a custom delimiter', async () => {
    const body = 'id;text;label\n1;"a; b";yes\n2;c, d;no\n';
    expect(await records(chunksOf(body), 'csv', { delimiter: ';' })).toEqual([
      { id: '1', text: 'a; b', label: 'yes' },
      { id: '2', text: 'c, d', label: 'no' },
    ]);
    expect(await records(chunksOf('a|b\n1|x\n'), 'tsv', { delimiter: '|' })).toEqual([{ a: '1', b: 'x' }]);
  });

  it('the suite schema takes one delimiter character, with a clear message otherwise', () => {
    const schema = datasetSchema({});
    expect(schema.safeParse({ path: 'x.csv', delimiter: ';' }).success).toBe(true);
    expect(schema.safeParse({ path: 'x.csv', delimiter: '\t' }).success).toBe(true);
    for (const bad of [';;', '', '"', '\n']) {
      const parsed = schema.safeParse({ path: 'x.csv', delimiter: bad });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]?.message).toMatch(/dataset\.delimiter is one character/);
    }
    expect(schema.safeParse({ path: 'x', format: 'parquet', compression: 'none' }).success).toBe(true);
    expect(schema.safeParse({ path: 'x', format: 'xlsx' }).success).toBe(false);
    expect(schema.safeParse({ path: 'x', compression: 'zip' }).success).toBe(false);
  });
});

describe('JSON arrays', () => {
  it('an element that is not an object is an invalid row; the array reads on', async () => {
    const rows = await collect(
      readRows(chunksOf('[{"id":"1"}, 42, ["x"], null, {"id":"5","n":null}]'), 'json'),
    );
    expect(rows).toEqual([
      { row: 1, line: 0, record: { id: '1' } },
      { row: 2, line: 0, error: 'array element 2 is a number, not an object' },
      { row: 3, line: 0, error: 'array element 3 is an array, not an object' },
      { row: 4, line: 0, error: 'array element 4 is null, not an object' },
      // null as in JSONL: no value.
      { row: 5, line: 0, record: { id: '5' } },
    ]);
  });

  it('nested values are JSON text, as JSONL gives them', async () => {
    const line = '{"id":"1","meta":{"a":[1,2]},"tags":["x","y"]}';
    const fromJsonl = await records(chunksOf(line), 'jsonl');
    expect(await records(chunksOf(`[${line}]`), 'json')).toEqual(fromJsonl);
    expect(fromJsonl).toEqual([{ id: '1', meta: '{"a":[1,2]}', tags: '["x","y"]' }]);
  });

  it('a file of no shape it reads is an error naming the file and the shapes, JSON Lines among them', async () => {
    const read = collect(readRows(chunksOf('"one string"'), 'json', { file: 'data/one.json' }));
    await expect(read).rejects.toThrow(InputError);
    await expect(collect(readRows(chunksOf('42'), 'json', { file: 'data/one.json' }))).rejects.toThrow(
      /data\/one\.json: not a JSON array: .*an object of objects keyed by id .*or set "format": "jsonl"/,
    );
    await expect(
      collect(readRows(chunksOf('[{"id":"1"}, {"id"'), 'json', { file: 'x.json' })),
    ).rejects.toThrow(/x\.json: .*JSON/);
  });

  it('an object of objects keyed by id, as SummaC ships SummEval: each entry a row, its key the id', async () => {
    const body = '{\n  "x1": {"text": "a", "label": 1},\n  "x2": {"id": "own", "text": "b"},\n  "x3": 7\n}\n';
    for (const size of [1, 3, 1 << 16]) {
      const rows = await collect(readRows(chunksOf(body, size), 'json'));
      expect(rows).toEqual([
        { row: 1, line: 0, record: { id: 'x1', text: 'a', label: '1' } },
        // An entry with an id of its own keeps it; its key is `key`.
        { row: 2, line: 0, record: { key: 'x2', id: 'own', text: 'b' } },
        { row: 3, line: 0, error: 'entry "x3" is a number, not an object' },
      ]);
    }
    // On one line too.
    expect(await records(chunksOf('{"a": {"t": "x"}, "b": {"t": "y"}}'), 'json')).toEqual([
      { id: 'a', t: 'x' },
      { id: 'b', t: 'y' },
    ]);
  });

  it('JSON Lines under a .json name read as JSONL, one line or many', async () => {
    for (const size of [1, 5, 1 << 16])
      expect(await records(chunksOf(JSONL, size), 'json')).toEqual(EXPECTED);
    expect(await records(chunksOf('{"id":"1","t":"x"}'), 'json')).toEqual([{ id: '1', t: 'x' }]);
  });

  it('an empty file has no rows; a BOM is skipped', async () => {
    expect(await collect(readRows(chunksOf(''), 'json'))).toEqual([]);
    expect(await records(chunksOf('\uFEFF [{"id":"1"}]'), 'json')).toEqual([{ id: '1' }]);
  });
});

describe('gzip', () => {
  it('a corrupt gzip stream is an InputError naming the file', async () => {
    const gz = new Uint8Array(gzipSync(CSV));
    const broken = gz.slice();
    broken.fill(0x41, 12, 40);
    const read = collect(
      readRows(inPieces(broken), 'csv', { compression: 'gzip', file: 'data/gold.csv.gz' }),
    );
    await expect(read).rejects.toThrow(/data\/gold\.csv\.gz: not a readable gzip file/);
    const cut = collect(
      readRows(inPieces(gz.slice(0, gz.length - 20)), 'jsonl', { compression: 'gzip', file: 'x.jsonl.gz' }),
    );
    await expect(cut).rejects.toThrow(InputError);
    const plain = collect(readRows(chunksOf(CSV), 'csv', { compression: 'gzip', file: 'x.csv.gz' }));
    await expect(plain).rejects.toThrow(/x\.csv\.gz: not a readable gzip file/);
  });

  it('a gzipped local file is read by its extension', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'assay-gz-'));
    try {
      const path = join(dir, 'data.jsonl.gz');
      await writeFile(path, gzipSync(JSONL));
      const rows = await collect(readDatasetFile(path));
      expect(rows.map((row) => row.record)).toEqual(EXPECTED);
      expect(await fileColumns(path, 'jsonl')).toEqual(['id', 'text', 'score', 'ok']);
      const tsv = join(dir, 'data.tsv.gz');
      await writeFile(tsv, gzipSync(TSV));
      expect(await fileColumns(tsv, formatFromPath(tsv))).toEqual(['id', 'text', 'score', 'ok']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('format and compression from the name and the suite', () => {
  it('knows every extension, gzipped or not', () => {
    expect(
      ['a.csv', 'a.tsv', 'a.tab', 'a.jsonl', 'a.ndjson', 'a.json', 'a.parquet', 'a.CSV.GZ', 'a.json.gz'].map(
        formatFromPath,
      ),
    ).toEqual(['csv', 'tsv', 'tsv', 'jsonl', 'jsonl', 'json', 'parquet', 'csv', 'json']);
    expect(compressionFromPath('a.jsonl.gz')).toBe('gzip');
    expect(compressionFromPath('a.jsonl')).toBe('none');
  });

  it('an unknown extension lists every supported one', () => {
    let message = '';
    try {
      formatFromPath('data.xlsx');
    } catch (error) {
      message = (error as Error).message;
    }
    for (const extension of ['.csv', '.tsv', '.tab', '.jsonl', '.ndjson', '.json', '.parquet', '.gz'])
      expect(message).toContain(extension);
    expect(() => formatFromPath('data.parquet.gz')).toThrow(/Parquet/);
  });

  it('dataset.format and dataset.compression override the name', () => {
    expect(datasetReading('data.txt', { format: 'tsv' })).toMatchObject({
      format: 'tsv',
      options: { compression: 'none', file: 'data.txt' },
    });
    expect(datasetReading('data.csv.gz', {}).options.compression).toBe('gzip');
    expect(datasetReading('data.gz', { format: 'jsonl' }).options.compression).toBe('gzip');
    expect(datasetReading('data.csv.gz', { compression: 'none' }).options.compression).toBe('none');
    expect(() => datasetReading('data.json', { delimiter: ';' })).toThrow(/delimiter/);
  });

  it('only uncompressed delimited text and JSONL in UTF-8 are read in chunks', () => {
    expect(readsInChunks('tsv', {})).toBe(true);
    expect(readsInChunks('csv', { compression: 'gzip' })).toBe(false);
    expect(readsInChunks('jsonl', { compression: 'gzip' })).toBe(false);
    expect(readsInChunks('json', {})).toBe(false);
    expect(readsInChunks('parquet', {})).toBe(false);
  });
});

describe('Parquet values and sources', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'assay-pq-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('BigInt as decimal text, timestamps as ISO text, nulls as no value', async () => {
    const bytes = new Uint8Array(
      parquetWriteBuffer({
        columnData: [
          { name: 'id', data: ['x', 'y'], type: 'STRING' },
          { name: 'big', data: [9007199254740993n, -2n], type: 'INT64' },
          { name: 'at', data: [new Date('2024-05-01T12:00:00.000Z'), null], type: 'TIMESTAMP' },
          { name: 'note', data: [null, 'n'], type: 'STRING' },
        ],
      }),
    );
    expect(await records(memorySource(bytes), 'parquet')).toEqual([
      { id: 'x', big: '9007199254740993', at: '2024-05-01T12:00:00.000Z' },
      { id: 'y', big: '-2', note: 'n' },
    ]);
  });

  it('reads from the bucket by ranges (blob store reads with an end)', async () => {
    const store = new FolderBlobStore(dir);
    const bytes = parquetOf(1);
    await store.put('datasets/demo/data.parquet', bytes);
    const object = (await store.read('datasets/demo/data.parquet'))!;
    await object.body[Symbol.asyncIterator]().return?.();
    const ranged = await store.read('datasets/demo/data.parquet', { start: 4, end: 10 });
    const got: Uint8Array[] = [];
    for await (const chunk of ranged!.body) got.push(chunk);
    expect(Buffer.concat(got)).toEqual(Buffer.from(bytes.subarray(4, 10)));
    expect(ranged!.size).toBe(bytes.length);
    const source = blobSource(store, 'datasets/demo/data.parquet', object);
    expect(await records(source, 'parquet', { file: 'datasets/demo/data.parquet' })).toEqual(EXPECTED);
  });

  it('a file that is not Parquet is an error naming it; a stream is refused', async () => {
    await expect(
      collect(readRows(memorySource(text(CSV)), 'parquet', { file: 'bad.parquet' })),
    ).rejects.toThrow(/bad\.parquet: not a readable Parquet file/);
    await expect(readRows(chunksOf(CSV), 'parquet').next()).rejects.toThrow(/read by position/);
  });
});
