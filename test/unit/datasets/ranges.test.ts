/**
 * A file cut into ranges by the boundary pass reads, range by range, exactly as one pass over
 * it: the same rows with the same numbers, lines, records and errors, whatever the range size
 * and however the bytes come in blocks (quoted newlines across a range's edge, CRLF, a BOM,
 * blank lines, a header, a record longer than a range).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_READER_LIMITS } from '../../../shared/lib/datasets/limits.js';
import { type Boundary, BoundaryScan, headerOf } from '../../../shared/lib/datasets/ranges.js';
import {
  type DatasetFormat,
  type RawRow,
  type ReadOptions,
  readRows,
} from '../../../shared/lib/datasets/read.js';

async function collect(rows: AsyncIterable<RawRow>): Promise<Omit<RawRow, 'end'>[]> {
  const out: Omit<RawRow, 'end'>[] = [];
  for await (const { end: _end, ...row } of rows) out.push(row);
  return out;
}

const limits = { ...DEFAULT_READER_LIMITS, maxRecordBytes: 120 };

/** The boundaries the pass finds, fed `block` bytes at a time. */
function boundaries(
  bytes: Uint8Array,
  format: DatasetFormat,
  options: ReadOptions,
  rangeBytes: number,
  block: number,
) {
  const scan = new BoundaryScan(
    {
      format,
      ...(options.delimiter ? { delimiter: options.delimiter } : {}),
      declaredHeader: options.header !== undefined,
      limits,
      size: bytes.length,
      rangeBytes,
    },
    { start: 0, row: 0, line: 0 },
  );
  const found: Boundary[] = [];
  let crlf: boolean | undefined;
  let headerEnd: number | undefined;
  for (let at = 0; at < bytes.length; at += block) {
    const step = scan.push(bytes.subarray(at, at + block));
    found.push(...step.boundaries);
    headerEnd ??= step.headerEnd;
    crlf ??= scan.crlf;
    expect(step.uncuttable).toBeUndefined();
  }
  const last = scan.end();
  found.push(...last.boundaries);
  return { found, headerEnd: headerEnd ?? last.headerEnd, crlf: crlf ?? scan.crlf };
}

/** The file read range by range, each reader started at its boundary with what the pass says is before it. */
async function byRanges(
  bytes: Uint8Array,
  format: DatasetFormat,
  options: ReadOptions,
  rangeBytes: number,
  block: number,
) {
  const { found, headerEnd, crlf } = boundaries(bytes, format, options, rangeBytes, block);
  const header =
    options.header ??
    (format !== 'jsonl' && headerEnd !== undefined
      ? await headerOf(bytes.subarray(0, headerEnd), format, { ...options, limits })
      : undefined);
  const starts = [{ start: 0, row: 0, line: 0 }, ...found];
  const rows: Omit<RawRow, 'end'>[] = [];
  for (const [i, from] of starts.entries()) {
    const end = starts[i + 1]?.start ?? bytes.length;
    const range = await collect(
      readRows(once(bytes.subarray(from.start, end)), format, {
        ...options,
        limits,
        ...(i > 0 && header ? { header } : {}),
        ...(i > 0 && crlf !== undefined ? { recordDelimiter: crlf ? '\r\n' : '\n' } : {}),
        byteOffset: from.start,
        rowOffset: from.row,
        lineOffset: from.line,
      }),
    );
    // Each range holds the rows the pass counted in it.
    expect(range.length, `range ${i} of ${starts.length}`).toBe(
      (starts[i + 1]?.row ?? from.row + range.length) - from.row,
    );
    rows.push(...range);
  }
  return { rows, ranges: starts.length };
}

const text = (s: string) => new TextEncoder().encode(s);

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

const FIXTURES: [string, DatasetFormat, string, ReadOptions?][] = [
  [
    'CSV in CRLF with a BOM, quoted CRLFs and LFs, escaped quotes, blank lines',
    'csv',
    '\uFEFF"id","text",label\r\n1,plain,TP\r\n\r\n2,"two\r\nlines, ""quoted""",FP\r\n3,"a\nb",TP\r\n\r\n\r\n4,"""",TP\r\n5,x\ny,TP\r\n6,"long ' +
      'word '.repeat(15) +
      '\r\nstill quoted",TP\r\n7,last,TP',
  ],
  [
    'CSV in LF with a bare CR in a field, quotes inside fields, a bad closing quote, a whitespace line',
    'csv',
    'id,text,label\n1,a\rb,TP\n2,ab"c,TP\n3,"a"b,c\n4,"closes,after\nthe bad one",TP\n   \n5,"x""\n""y",TP\n\n6,end,TP\n',
  ],
  [
    'CSV with its columns declared',
    'csv',
    '1,a,TP\n"2","b\nc",FP\n\n3,d,TP\n',
    { header: ['id', 'text', 'label'] },
  ],
  [
    'TSV, whose quotes are characters',
    'tsv',
    'id\ttext\n1\t"a\tb\nc"\n2\tplain\n3\t"q""q"\n4\tsaid "x\n5\tend\n',
  ],
  [
    'tab-separated CSV with quotes',
    'csv',
    'id\ttext\n1\t"a\tb\nc"\n2\tplain\n3\t"q""q"\n',
    { delimiter: '\t' },
  ],
  ['CSV whose quote never closes', 'csv', 'id,text\n1,a\n2,"open\n3,b\n4,c\n'],
  [
    'JSONL with blank, whitespace, CRLF and long lines, a BOM and a no-break space',
    'jsonl',
    `\uFEFF{"id":1}\n\n   \n{"id":2}\r\n\u00a0\u3000\n{"id":3,"t":"${'x'.repeat(150)}"}\n${' '.repeat(130)}\nnot json\n[1]\n{"id":4}`,
  ],
];

describe('a file read in ranges', () => {
  it.each(FIXTURES)(
    '%s: reads as one pass, at every range size and block size',
    async (_name, format, body, options = {}) => {
      const bytes = text(body);
      const expected = await collect(readRows(once(bytes), format, { ...options, limits }));
      expect(expected.length).toBeGreaterThan(1);
      let cut = false;
      for (const rangeBytes of [1, 7, 30, 64, 10_000])
        for (const block of [1, 2, 3, 5, 16, 1 << 16]) {
          const { rows, ranges } = await byRanges(bytes, format, options, rangeBytes, block);
          expect(rows, `ranges of ${rangeBytes} bytes, blocks of ${block}`).toEqual(expected);
          if (ranges > 1) cut = true;
        }
      expect(cut).toBe(true);
    },
  );

  it('takes a record longer than a range whole, and cuts after a range has its rows', () => {
    const bytes = text(`id,t\n1,"${'a\n'.repeat(50)}"\n2,b\n3,c\n4,d\n5,e\n`);
    const { found } = boundaries(bytes, 'csv', {}, 3, 4);
    // The long record is one range; each short one after it another.
    expect(found.map((b) => b.row)).toEqual([1, 2, 3, 4]);
    expect(found[0]).toEqual({ start: bytes.indexOf(0x32 /* "2" */, 10), row: 1, line: 52 });
    const scan = new BoundaryScan(
      { format: 'csv', size: bytes.length, rangeBytes: 1 << 20, maxRows: 2 },
      { start: 0, row: 0, line: 0 },
    );
    expect(scan.push(bytes).boundaries.map((b) => b.row)).toEqual([2, 4]);
  });

  it('does not cut a CSV whose records end in a bare CR', () => {
    const scan = new BoundaryScan({ format: 'csv', size: 20, rangeBytes: 1 }, { start: 0, row: 0, line: 0 });
    expect(scan.push(text('id,t\r1,a\r2,b\r')).uncuttable).toMatch(/bare CR/);
  });
});
