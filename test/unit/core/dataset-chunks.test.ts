/**
 * A dataset read in chunks, each chunk by a reader of its own starting at a byte offset, gives
 * exactly the rows one reader gives over the whole file: quoted fields with newlines never
 * split, the same row and line numbers, the same errors at the same byte offsets.
 */
import { describe, expect, it } from 'vitest';
import { type ChunkStart, readChunk, readsInChunks } from '../../../shared/lib/datasets/chunks.js';
import { type DatasetFormat, type RawRow, readRows } from '../../../shared/lib/datasets/read.js';

/** The file's bytes from `start` on, in pieces of `piece` bytes (as a ranged read streams them). */
async function* from(bytes: Uint8Array, start: number, piece = 7): AsyncGenerator<Uint8Array> {
  for (let at = start; at < bytes.length; at += piece)
    yield bytes.subarray(at, Math.min(at + piece, bytes.length));
}

async function whole(bytes: Uint8Array, format: DatasetFormat): Promise<RawRow[]> {
  const rows: RawRow[] = [];
  for await (const raw of readRows(from(bytes, 0), format)) {
    const { end: _end, ...row } = raw;
    rows.push(row as RawRow);
  }
  return rows;
}

/** Every chunk in turn, each from its own stream, as ingest reads a large file; also how many there were. */
async function inChunks(bytes: Uint8Array, format: DatasetFormat, size: number) {
  const rows: RawRow[] = [];
  let start: ChunkStart | undefined = { start: 0, row: 0, line: 0 };
  let chunks = 0;
  while (start) {
    const read = await readChunk(from(bytes, start.start), format, {}, start, size);
    rows.push(...read.rows);
    chunks += 1;
    start = read.next;
  }
  return { rows, chunks };
}

const utf8 = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p))));

const CSV = utf8(
  '\uFEFFid,text,gold\r\n',
  '1,"a field\nover two lines",TP\r\n',
  '\r\n',
  '2,plain,FP1\r\n',
  '3,"with ""quotes"", and a comma",TP\r\n',
  '4,"',
  'line one\nline two\nline three — ünïcödé',
  '",FP2\r\n',
  '5,caf',
  [0xe9],
  ',TP\r\n',
  '6,too,many,fields,here\r\n',
  '7,"bad"x,TP\r\n',
  '8,ok,TP\r\n',
  '9,"the last one\nwithout a newline",FP3',
);

const JSONL = utf8(
  '{"id":1,"text":"a"}\n',
  '\n',
  '{"id":2,"text":"line\\nbreak inside a string"}\n',
  'not json\n',
  '[1,2]\n',
  '{"id":3,"text":"',
  [0x80],
  '"}\n',
  '\n\n',
  '{"id":4,"nested":{"a":[1,2]}}\n',
  '{"id":5,"text":"no newline at the end"}',
);

describe('a dataset read in chunks', () => {
  for (const [format, bytes] of [
    ['csv', CSV],
    ['jsonl', JSONL],
  ] as const) {
    it(`gives the rows of one pass over the whole file, at every chunk size (${format})`, async () => {
      const expected = await whole(bytes, format);
      expect(expected.length).toBeGreaterThan(5);
      const seen = new Set<number>();
      for (let size = 1; size <= bytes.length + 1; size += 1) {
        const { rows, chunks } = await inChunks(bytes, format, size);
        expect(rows, `chunks of ${size} bytes`).toEqual(expected);
        seen.add(chunks);
      }
      // The sizes cut the file into one chunk, a chunk per record, and everything between.
      expect(Math.max(...seen)).toBeGreaterThanOrEqual(expected.length - 3);
      expect(seen.has(1)).toBe(true);
    });
  }

  it('cuts only between records: a quoted field with newlines stays in one chunk', async () => {
    // A cut right inside the three-line field of row 4 moves to the end of that record.
    const inside = CSV.indexOf(Buffer.from('line two'));
    const first = await readChunk(from(CSV, 0), 'csv', {}, { start: 0, row: 0, line: 0 }, inside);
    expect(first.rows.at(-1)).toMatchObject({ row: 4, record: { id: '4' } });
    expect(first.header).toEqual(['id', 'text', 'gold']);
    const rest = await readChunk(from(CSV, first.next!.start), 'csv', {}, first.next!, 1);
    expect(rest.rows[0]).toMatchObject({
      row: 5,
      error: expect.stringContaining(`byte ${CSV.indexOf(0xe9)} `),
    });
  });

  it('stops reading its stream once the chunk is read', async () => {
    let pulled = 0;
    async function* counted(): AsyncGenerator<Uint8Array> {
      for await (const piece of from(JSONL, 0, 1)) {
        pulled += 1;
        yield piece;
      }
    }
    const read = await readChunk(counted(), 'jsonl', {}, { start: 0, row: 0, line: 0 }, 10);
    expect(read.rows).toHaveLength(1);
    expect(pulled).toBeLessThan(40);
    expect(read.next).toEqual({ start: 20, row: 1, line: 1 });
  });

  it('reads a file in another declared encoding whole, not in chunks', () => {
    expect(readsInChunks('csv', {})).toBe(true);
    expect(readsInChunks('jsonl', { encoding: 'utf-8' })).toBe(true);
    expect(readsInChunks('csv', { encoding: 'windows-1252' })).toBe(false);
  });
});
