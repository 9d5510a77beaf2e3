import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gecFamily } from '../../../shared/families/gec/task.js';
import { formatFromPath, type RawRow, readRows } from '../../../shared/lib/datasets/read.js';
import { AQUA_FILES, chunksOf, EXAMPLE_DATA, suite } from '../../helpers.js';

async function collect(rows: AsyncIterable<RawRow>): Promise<RawRow[]> {
  const out: RawRow[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

describe('dataset reader', () => {
  it.each(Object.entries(AQUA_FILES))(
    'loads the AQUA gold file %s unedited, every row usable',
    async (file, count) => {
      const rows = await collect(readRows(createReadStream(join(EXAMPLE_DATA, file)), 'csv'));
      expect(rows).toHaveLength(count);
      const parsed = rows.map((r) => gecFamily.parseRow(r.record!, r.row, suite(), {}));
      const errors = parsed.filter((p) => 'error' in p);
      expect(errors).toEqual([]);
      const ids = parsed.map((p) => ('item' in p ? p.item.id : ''));
      expect(new Set(ids).size).toBe(count);
    },
  );

  it('keeps typographic quotes and TN rows whose src equals tgt', async () => {
    const rows = await collect(readRows(createReadStream(join(EXAMPLE_DATA, 'gold_ua.csv')), 'csv'));
    const first = gecFamily.parseRow(rows[0]!.record!, 1, suite(), {});
    expect('item' in first && first.item.gold).toBe('TN');
    expect('item' in first && first.item.input.src === first.item.input.tgt).toBe(true);
    const en = await collect(
      readRows(createReadStream(join(EXAMPLE_DATA, 'gold_tp_fp3_fp2_fp1_en.csv')), 'csv'),
    );
    expect(en[0]!.record!.src).toContain('I’m');
  });

  it('strips a BOM, reads quoted multi-line fields and splits chunks anywhere', async () => {
    const text = '\uFEFFidx,src,tgt,label\r\n1,"Line one,\r\nline ""two""",tgt,TP\r\n2,a,b,FP1\r\n';
    const rows = await collect(readRows(chunksOf(text, 3), 'csv'));
    expect(rows.map((r) => r.record)).toEqual([
      { idx: '1', src: 'Line one,\r\nline "two"', tgt: 'tgt', label: 'TP' },
      { idx: '2', src: 'a', tgt: 'b', label: 'FP1' },
    ]);
  });

  it('reports ragged and broken rows with their row numbers and keeps going', async () => {
    const text = 'idx,src,tgt,label\n1,a,b,TP\n2,a,b,TP,extra\n3,a\n4,"broken,b,TP\n';
    const rows = await collect(readRows(chunksOf(text), 'csv'));
    expect(rows[0]).toMatchObject({ row: 1, record: { idx: '1' } });
    expect(rows[1]).toMatchObject({ row: 2, error: expect.stringContaining('5 fields') });
    // A short row is readable; the task then says which column is missing.
    expect(rows[2]).toMatchObject({ row: 3, record: { idx: '3', src: 'a' } });
    expect(gecFamily.parseRow(rows[2]!.record!, 3, suite(), {})).toMatchObject({
      error: expect.stringMatching(/^missing column tgt, gold\|label/),
    });
    expect(rows[3]).toMatchObject({ row: 4, error: expect.stringContaining('CSV') });
  });

  it('reads JSONL, stringifying non-string fields, and reports bad lines', async () => {
    const text =
      '{"id": 7, "src": "a", "tgt": "b", "label": "TP"}\n\nnot json\n[1,2]\n{"id":"x","src":"c","tgt":"d","label":"FP2"}';
    const rows = await collect(readRows(chunksOf(text, 5), 'jsonl'));
    expect(rows).toHaveLength(4);
    expect(rows[0]).toMatchObject({ row: 1, record: { id: '7', src: 'a' } });
    expect(rows[1]).toMatchObject({ row: 2, line: 3, error: expect.stringContaining('invalid JSON') });
    expect(rows[2]).toMatchObject({ row: 3, error: 'JSONL line is not an object' });
    expect(rows[3]).toMatchObject({ row: 4, record: { id: 'x', label: 'FP2' } });
  });

  it('knows formats by extension and refuses others', () => {
    expect(formatFromPath('a/B.CSV')).toBe('csv');
    expect(formatFromPath('x.jsonl')).toBe('jsonl');
    expect(() => formatFromPath('x.xlsx')).toThrow(/unknown dataset format/);
  });
});

describe('GEC row mapping', () => {
  it('rejects unknown gold labels with the column and value', () => {
    const parsed = gecFamily.parseRow({ idx: '1', src: 'a', tgt: 'b', tp_fp_label: 'FP4' }, 1, suite(), {});
    expect(parsed).toEqual({
      id: '1',
      error: expect.stringContaining('unknown gold label "FP4" in tp_fp_label'),
    });
  });

  it('uses mapped columns, normalises labels, and hashes ids when there is no id column', () => {
    const s = suite({
      dataset: { path: 'x.csv', columns: { src: 'original', tgt: 'suggested', gold: 'g' } },
    });
    const a = gecFamily.parseRow({ original: 'a', suggested: 'b', g: ' fp3 ' }, 1, s, {});
    const b = gecFamily.parseRow({ original: 'a', suggested: 'b', g: 'FP3' }, 2, s, {});
    expect(a).toMatchObject({ item: { gold: 'FP3', input: { src: 'a', tgt: 'b', lang: 'en' } } });
    expect('item' in a && 'item' in b && a.item.id === b.item.id).toBe(true);
    expect('item' in a && a.item.id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('rejects oversize fields', () => {
    const s = suite({ dataset: { path: 'x.csv', maxFieldChars: 5 } });
    expect(gecFamily.parseRow({ src: 'too long', tgt: 'b', label: 'TP' }, 1, s, {})).toMatchObject({
      error: 'field longer than 5 characters',
    });
  });
});
