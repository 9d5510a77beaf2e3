/**
 * report.html's item table: each item's category is the section errors.txt puts it in (failed,
 * unscored, wrong; right in correct.txt), columns repeat long strings once, long texts are cut
 * with their length said, and the page embeds its data so that no `</script>` in a text can end it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ItemResult } from '../../../shared/model/model.js';
import { taskFor } from '../../../shared/registry/registry.js';
import { FileLayout, resultView } from '../../../shared/reports/files.js';
import { ChunkFile, ColumnBuilder, ItemColumns, textLimitFor } from '../../../shared/reports/html/columns.js';
import { renderPage, renderPageChunks } from '../../../shared/reports/html/render.js';
import type { Column } from '../../../shared/reports/html/types.js';
import { suite } from '../../helpers.js';

function result(i: number, overrides: Partial<ItemResult> = {}): ItemResult {
  return {
    schemaVersion: 2,
    runId: 'r1',
    itemId: `item-${i}`,
    row: i + 1,
    status: 'scored',
    input: { src: `source ${i}`, tgt: `target ${i}` },
    gold: 'TP',
    output: { label: 'TP', reason: 'fine' },
    scores: { label: { kind: 'label', value: 'TP', explanation: 'fine', decidedBy: 'model-a' } },
    stages: {
      classify: {
        calls: 1,
        cachedCalls: 0,
        costUsd: 0.001,
        latencyMs: 40,
        usage: { input: 10, output: 2, cached: 0 },
      },
    },
    simulated: false,
    finishedAt: '2025-01-01T00:00:00.000Z',
    ...overrides,
  };
}

const read = <T>(column: Column<T> | undefined, i: number): T | undefined =>
  column === undefined || 's' in column
    ? undefined
    : Array.isArray(column)
      ? column[i]
      : column.d[column.c[i]!];

describe('the item table of report.html', () => {
  const s = suite();
  const family = taskFor(s);
  const results = [
    result(0),
    result(1, {
      scores: { label: { kind: 'label', value: 'FP1', explanation: 'no', decidedBy: 'model-a' } },
    }),
    result(2, {
      status: 'failed',
      output: undefined,
      scores: {},
      failure: { kind: 'parse', message: 'not JSON' },
      raw: '{oops',
    }),
    result(3, { scores: { label: { kind: 'label', unscored: { kind: 'refusal', message: 'declined' } } } }),
    result(4, { input: { src: `${'x'.repeat(30)}</script><b>`, tgt: 't' } }),
  ];

  it('puts each item in the section errors.txt or correct.txt puts it in, with its score, failure and raw answer', () => {
    const layout = new FileLayout(family, s);
    for (const r of results) layout.add(r);
    const view = resultView(family, s, layout);
    const items = new ItemColumns(family, s, view, results.length, (name) => layout.binary(name));
    for (const r of results) items.add(r);
    const t = items.table();
    expect(t.n).toBe(5);
    expect(t.primary).toBe('label');
    const col = (name: string) => [0, 1, 2, 3, 4].map((i) => read(t.columns[name], i));
    expect(col('category')).toEqual(['right', 'wrong', 'failed', 'unscored', 'right']);
    expect(col('score:label')).toEqual(['TP', 'FP1', null, null, 'TP']);
    expect(col('unscored:label')).toEqual([null, null, 'parse', 'refusal', null]);
    expect(col('by:label')).toEqual(['model-a', 'model-a', null, null, 'model-a']);
    expect(col('failure')).toEqual([null, null, 'parse', null, null]);
    expect(col('raw')).toEqual([null, null, '{oops', null, null]);
    expect(col('cost')).toEqual([0.001, 0.001, 0.001, 0.001, 0.001]);
    expect(col('input:src')[4]).toBe(`${'x'.repeat(30)}</script><b>`);
    expect(t.inputs).toEqual(['src', 'tgt']);
  });

  it('stores a repeated string once, and cuts a text past the limit saying how long it was', () => {
    const many = Array.from({ length: 30_000 }, (_, i) =>
      result(i, { input: { src: i === 7 ? 'y'.repeat(900) : `s${i}`, tgt: 'same' } }),
    );
    const view = resultView(family, s, many);
    const items = new ItemColumns(family, s, view, many.length, () => false);
    for (const r of many) items.add(r);
    const t = items.table();
    expect(t.textLimit).toBe(textLimitFor(30_000));
    expect(t.columns['input:tgt']).toEqual({ d: ['same'], c: expect.any(Array) });
    expect(Array.isArray(t.columns['input:src'])).toBe(true);
    expect(read(t.columns['input:src'], 7)).toBe(
      `${'y'.repeat(t.textLimit)}… [cut in this page: 900 characters in all]`,
    );
  });

  it('embeds the data so that a text cannot end the script element, and forbids every request', () => {
    const layout = new FileLayout(family, s);
    for (const r of results) layout.add(r);
    const items = new ItemColumns(family, s, resultView(family, s, layout), results.length, () => false);
    for (const r of results) items.add(r);
    const page = renderPage('t <i>', { kind: 'run', report: {}, items: items.table() });
    const data = /<script type="application\/json" id="assay-data">(.*?)<\/script>/s.exec(page)![1]!;
    expect(data).not.toContain('<');
    expect(JSON.parse(data).items.columns['input:src']).toContain(`${'x'.repeat(30)}</script><b>`);
    expect(page).toContain('<title>t &#60;i&#62;</title>');
    expect(page).toContain("default-src 'none'");
  });

  it('writes the page in pieces that make exactly the page of the data as one JSON text', () => {
    const layout = new FileLayout(family, s);
    for (const r of results) layout.add(r);
    const items = new ItemColumns(family, s, resultView(family, s, layout), results.length, () => false);
    for (let i = 0; i < 40; i += 1) for (const r of results) items.add({ ...r, itemId: `${r.itemId}-${i}` });
    items.add(result(9, { input: { src: 'line\u2028separator', tgt: 't' } }));
    const data = {
      kind: 'run' as const,
      report: { suite: 's', skipped: undefined, nested: { a: [1, null], b: '</script>' } },
      items: items.table(),
    };
    const chunks = [...renderPageChunks('t', data)];
    expect(chunks.length).toBeGreaterThan(10);
    const page = chunks.join('');
    expect(page).toBe(renderPage('t', data));
    const json = JSON.stringify(data)
      .replace(/</g, '\\u003c')
      .replace(/\u2028/g, '\\u2028')
      .replace(/\u2029/g, '\\u2029');
    expect(page).toContain(`<script type="application/json" id="assay-data">${json}</script>\n<script>`);
    expect(JSON.parse(json).items.columns.id).toHaveLength(201);
  });
});

describe('a column of the item table', () => {
  type Cell = string | number | boolean | null;
  /** The column as it was built when every value was kept: what the compact one must give. */
  function plainColumn(values: Cell[]): Column<Cell> {
    const dictionary = new Map<Cell, number>();
    let codes: number[] | undefined = [];
    for (const value of values) {
      if (!codes) continue;
      let code = dictionary.get(value);
      if (code === undefined) {
        if (dictionary.size >= 4096) {
          codes = undefined;
          continue;
        }
        code = dictionary.size;
        dictionary.set(value, code);
      }
      codes.push(code);
    }
    return codes && dictionary.size * 4 < values.length ? { d: [...dictionary.keys()], c: codes } : values;
  }

  const built = (values: Cell[]) => {
    const column = new ColumnBuilder();
    for (const value of values) column.push(value);
    return column.build();
  };

  it('keeps codes while values repeat and gives the same column as keeping every value', () => {
    const cases: Cell[][] = [
      [],
      ['TP', 'TP', 'FP1', null, true, false, 0, -0, 1.5, 'TP', null, 'TP', 'FP1', 'TP'],
      Array.from({ length: 50_000 }, (_, i) => ['a', 'b', null, 3][i % 4]!),
      // Few repeats: plain values.
      Array.from({ length: 30 }, (_, i) => `id-${i % 20}`),
      // The dictionary fills part way: values from then on.
      Array.from({ length: 20_000 }, (_, i) => (i < 9000 ? `v${i % 10}` : `w${i}`)),
      // Exactly as many distinct values as the dictionary holds, each repeated.
      Array.from({ length: 40_000 }, (_, i) => i % 4096),
      // Codes over several pieces, then plain texts (some not ASCII) over several pieces.
      Array.from({ length: 120_000 }, (_, i) => (i < 70_000 ? i % 9 : `ü-${i}`)),
    ];
    const dir = mkdtempSync(join(tmpdir(), 'assay-columns-'));
    const file = new ChunkFile(join(dir, 'items.bin'));
    try {
      for (const values of cases) {
        const expected = JSON.stringify(plainColumn(values));
        expect(JSON.stringify(built(values))).toBe(expected);
        // Its JSON in pieces, without the array: the same text, with its full pieces in memory
        // or written to the table's file (the last two cases fill several of each kind).
        for (const where of [undefined, file]) {
          const column = new ColumnBuilder(where);
          for (const value of values) column.push(value);
          expect([...column.json(7)].join('')).toBe(expected);
          expect([...column.json()].join('')).toBe(expected);
        }
      }
    } finally {
      file.close();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(built(Array.from({ length: 50_000 }, (_, i) => ['a', 'b', null, 3][i % 4]!))).toMatchObject({
      d: ['a', 'b', null, 3],
    });
  });
});
