/**
 * What the dataset reader does with bytes and sizes it should not score: bytes that are not
 * UTF-8 (unless the suite declares the encoding), and fields longer than the limit, whichever
 * column they are in. Each makes its row invalid, with the row number and the reason.
 */
import { describe, expect, it } from 'vitest';
import { type RawRow, readRows } from '../../../shared/lib/datasets/read.js';
import { Utf8Check } from '../../../shared/lib/datasets/utf8.js';
import { mulberry32 } from '../../../shared/lib/metrics/index.js';
import { suite } from '../../helpers.js';

async function collect(rows: AsyncIterable<RawRow>): Promise<RawRow[]> {
  const out: RawRow[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

async function* bytesIn(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.slice(i, i + size);
}

const bytesOf = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p))));

function badOffsets(bytes: Uint8Array, size: number): number[] {
  const check = new Utf8Check();
  const bad: number[] = [];
  for (let i = 0; i < bytes.length; i += size) bad.push(...check.push(bytes.subarray(i, i + size), i));
  bad.push(...check.end());
  return bad;
}

describe('UTF-8 check', () => {
  it('gives the offset of each invalid sequence, as a decoder would put U+FFFD there', () => {
    expect(badOffsets(bytesOf('a', [0xff], 'b'), 64)).toEqual([1]);
    // A lead byte whose continuation is missing: the next byte is read again (valid here).
    expect(badOffsets(bytesOf('ab', [0xc3], 'A'), 64)).toEqual([2]);
    // Overlong, surrogate and above U+10FFFF: every byte is an error of its own.
    expect(badOffsets(Buffer.from([0xe0, 0x80, 0x80]), 64)).toEqual([0, 1, 2]);
    expect(badOffsets(Buffer.from([0xed, 0xa0, 0x80]), 64)).toEqual([0, 1, 2]);
    expect(badOffsets(Buffer.from([0xf4, 0x90, 0x80, 0x80]), 64)).toEqual([0, 1, 2, 3]);
    // A character the end of the file cuts short.
    expect(badOffsets(bytesOf('x€'.repeat(3)).subarray(0, 11), 64)).toEqual([9]);
    expect(badOffsets(bytesOf('Привіт, світе! €😀 café'), 64)).toEqual([]);
  });

  it('finds the same bytes wherever the chunks split, and exactly those a decoder replaces', () => {
    const rng = mulberry32(11);
    // No 0xEF lead byte: every U+FFFD in the decoded text then stands for an invalid sequence.
    const alphabet = [
      0x41, 0x0a, 0xc3, 0xa9, 0xd0, 0x9f, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0xff, 0xc0,
    ];
    for (let trial = 0; trial < 200; trial += 1) {
      const bytes = Uint8Array.from(
        { length: 1 + Math.floor(rng() * 40) },
        () => alphabet[Math.floor(rng() * alphabet.length)]!,
      );
      const whole = badOffsets(bytes, bytes.length);
      for (const size of [1, 2, 3, 5]) expect(badOffsets(bytes, size)).toEqual(whole);
      const replaced = new TextDecoder().decode(bytes).split('\uFFFD').length - 1;
      expect(whole).toHaveLength(replaced);
    }
  });
});

describe('dataset reader: bytes that are not UTF-8', () => {
  it('makes a CSV row with them invalid, with its row number and the byte offset; the others read', async () => {
    const bytes = bytesOf('id,text\n1,Привіт\n2,caf', [0xe9], '\n3,ok\n');
    for (const size of [1, 3, 7, 1000]) {
      const rows = await collect(readRows(bytesIn(bytes, size), 'csv'));
      expect(rows).toEqual([
        // `end`: where each record ends in the bytes (the header is 8, `1,Привіт\n` 15).
        { row: 1, line: 2, record: { id: '1', text: 'Привіт' }, end: 23 },
        {
          row: 2,
          line: 3,
          error: expect.stringContaining('not valid UTF-8 at byte 28 of the file'),
          end: 30,
        },
        { row: 3, line: 4, record: { id: '3', text: 'ok' }, end: 35 },
      ]);
    }
  });

  it('makes a JSONL line with them invalid, with its row number and the byte offset', async () => {
    const bytes = bytesOf('{"a":"é"}\n\n{"a":"', [0x80], '"}\n{"a":"ok"}\n{"a":"', [0xe2, 0x82]);
    for (const size of [1, 2, 5, 1000]) {
      const rows = await collect(readRows(bytesIn(bytes, size), 'jsonl'));
      expect(rows).toEqual([
        { row: 1, line: 1, record: { a: 'é' }, end: 11 },
        { row: 2, line: 3, error: expect.stringContaining('not valid UTF-8 at byte 18 of the file') },
        { row: 3, line: 4, record: { a: 'ok' }, end: 33 },
        // The file ends inside a character.
        { row: 4, line: 5, error: expect.stringContaining('at byte 39 of the file') },
      ]);
    }
  });

  it('does not blame a good row for the bad bytes of a broken record before it', async () => {
    const broken = bytesOf('id,text\n1,"x"y', [0xff], '"\n2,fine\n3,ok\n');
    expect((await collect(readRows(bytesIn(broken, 4), 'csv'))).map((r) => r.error ?? r.record)).toEqual([
      expect.stringContaining('unreadable CSV record'),
      { id: '2', text: 'fine' },
      { id: '3', text: 'ok' },
    ]);
    const both = bytesOf('id,text\n1,"x"y"\n2,f', [0xff], 'ne\n3,ok\n');
    expect((await collect(readRows(bytesIn(both, 4), 'csv'))).map((r) => r.error ?? r.record)).toEqual([
      expect.stringContaining('unreadable CSV record'),
      expect.stringContaining('not valid UTF-8 at byte 19'),
      { id: '3', text: 'ok' },
    ]);
  });

  it('reports bad bytes in the CSV header as an invalid entry of its own', async () => {
    const rows = await collect(readRows(bytesIn(bytesOf('id,t', [0xff], '\n1,a\n'), 3), 'csv'));
    expect(rows[0]).toMatchObject({ row: 0, id: 'header', error: expect.stringContaining('at byte 4') });
    expect(rows[1]).toMatchObject({ row: 1, record: { id: '1' } });
  });

  it('decodes a declared encoding as declared: windows-1252, latin1, utf-16le', async () => {
    const cp1252 = bytesOf('id,text\n1,caf', [0xe9, 0x20, 0x80], '\n');
    for (const encoding of ['windows-1252', 'latin1']) {
      const rows = await collect(readRows(bytesIn(cp1252, 3), 'csv', { encoding }));
      expect(rows).toEqual([{ row: 1, line: 2, record: { id: '1', text: 'café €' } }]);
    }
    const jsonl = bytesOf('{"t":"na', [0xef, 0x76, 0x65], '"}\n');
    expect(await collect(readRows(bytesIn(jsonl, 2), 'jsonl', { encoding: 'windows-1252' }))).toEqual([
      { row: 1, line: 1, record: { t: 'naïve' } },
    ]);
    const utf16 = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from('{"t":"Привіт"}\n{"t":"b"}\n', 'utf16le'),
    ]);
    expect(await collect(readRows(bytesIn(utf16, 3), 'jsonl', { encoding: 'utf-16le' }))).toEqual([
      { row: 1, line: 1, record: { t: 'Привіт' } },
      { row: 2, line: 2, record: { t: 'b' } },
    ]);
    expect(
      await collect(
        readRows(bytesIn(Buffer.from('a\n"x\ny"\n', 'utf16le'), 5), 'csv', { encoding: 'utf-16le' }),
      ),
    ).toEqual([{ row: 1, line: 3, record: { a: 'x\ny' } }]);
  });

  it('takes dataset.encoding in a suite only when TextDecoder knows it', () => {
    expect(suite({ dataset: { path: 'x.csv', encoding: 'windows-1252' } }).dataset.encoding).toBe(
      'windows-1252',
    );
    expect(() => suite({ dataset: { path: 'x.csv', encoding: 'klingon' } })).toThrow(
      /dataset\.encoding.*TextDecoder/s,
    );
  });
});

describe('dataset reader: field size', () => {
  it('makes a row with a field over maxFieldChars invalid, whatever the column, naming it', async () => {
    const long = 'x'.repeat(5_000_000);
    const csv = bytesOf(`id,document,summary\n1,short,fine\n2,short,"${long}"\n3,short,fine\n`);
    const rows = await collect(readRows(bytesIn(csv, 65_536), 'csv', { maxFieldChars: 20_000 }));
    expect(rows.map((r) => r.error ?? r.record!.id)).toEqual([
      '1',
      'field "summary" has 5000000 characters, more than dataset.maxFieldChars (20000)',
      '3',
    ]);
    expect(rows[1]).toMatchObject({ row: 2, line: 3 });
    expect(rows[1]!.record).toBeUndefined();

    const jsonl = bytesOf(`{"q":"a","answer":"${long}"}\n{"q":"b","answer":"c"}\n`);
    const lines = await collect(readRows(bytesIn(jsonl, 65_536), 'jsonl', { maxFieldChars: 100 }));
    expect(lines[0]).toMatchObject({
      row: 1,
      error: expect.stringMatching(/^field "answer" has 5000000 characters/),
    });
    expect(lines[1]).toMatchObject({ row: 2, record: { answer: 'c' } });
  });
});
