/**
 * Datasets as users publish them, run as a user runs them: the `assay` binary runs a suite on
 * the simulator whose dataset is a JSON array, gzipped JSONL, plain TSV (quotes in its text),
 * tab-separated CSV (a tab in a quoted field) or Parquet in two row groups, and each report
 * counts every row of its file as an item.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import type { Report } from '../../shared/model/report.js';
import { assayCli, suiteInput, tempDir } from '../helpers.js';

const ROWS = 12;
const rows = Array.from({ length: ROWS }, (_, i) => ({
  idx: i,
  src: `She go to school on day ${i}.`,
  tgt: `She goes to school on day ${i}.`,
  label: i % 3 === 0 ? 'FP3' : 'TP',
}));

async function runOn(
  name: string,
  file: string,
  bytes: Uint8Array | string,
  dataset: Record<string, unknown> = {},
): Promise<Report> {
  const dir = await tempDir(`assay-${name}-`);
  await writeFile(join(dir, file), bytes);
  const suitePath = join(dir, `${name}.suite.json`);
  await writeFile(suitePath, JSON.stringify(suiteInput({ name, dataset: { path: file, ...dataset } })));
  const runs = join(dir, 'runs');
  await assayCli(['run', suitePath, '--simulate', '--no-progress', '--runs', runs], dir);
  const folders = (await readdir(runs, { withFileTypes: true })).filter((entry) => entry.isDirectory());
  expect(folders).toHaveLength(1);
  return JSON.parse(await readFile(join(runs, folders[0]!.name, 'report.json'), 'utf8')) as Report;
}

describe('datasets in other formats, through the CLI', { timeout: 120_000 }, () => {
  it('a .json array of objects', async () => {
    const report = await runOn('json-array', 'data.json', JSON.stringify(rows, null, 2));
    expect(report.counts).toMatchObject({ items: ROWS, failed: 0 });
  });

  it('a gzipped JSONL file (.jsonl.gz)', async () => {
    const jsonl = `${rows.map((row) => JSON.stringify(row)).join('\n')}\n`;
    const report = await runOn('jsonl-gz', 'data.jsonl.gz', gzipSync(jsonl));
    expect(report.counts).toMatchObject({ items: ROWS, failed: 0 });
  });

  it('a TSV file (.tsv) as exported, quotes in its text read as characters', async () => {
    const tsv = [
      'idx\tsrc\ttgt\tlabel',
      ...rows.map((row, i) =>
        [
          row.idx,
          i === 1 ? `"${row.src}` : i === 2 ? `He said "go" on day ${i}.` : row.src,
          row.tgt,
          row.label,
        ].join('\t'),
      ),
    ].join('\n');
    const report = await runOn('tsv', 'data.tsv', `${tsv}\n`);
    expect(report.counts).toMatchObject({ items: ROWS, failed: 0 });
  });

  it('tab-separated CSV (format csv, a tab delimiter), a field with a tab in quotes', async () => {
    const cell = (value: string | number) => (String(value).includes('\t') ? `"${value}"` : String(value));
    const tsv = [
      'idx\tsrc\ttgt\tlabel',
      ...rows.map((row, i) =>
        [row.idx, i === 1 ? `${row.src}\twith a tab` : row.src, row.tgt, row.label].map(cell).join('\t'),
      ),
    ].join('\n');
    const report = await runOn('tab-csv', 'data.txt', `${tsv}\n`, { format: 'csv', delimiter: '\t' });
    expect(report.counts).toMatchObject({ items: ROWS, failed: 0 });
  });

  it('a Parquet file (.parquet) in two row groups', async () => {
    const parquet = parquetWriteBuffer({
      columnData: [
        { name: 'idx', data: rows.map((row) => row.idx), type: 'INT32' },
        { name: 'src', data: rows.map((row) => row.src), type: 'STRING' },
        { name: 'tgt', data: rows.map((row) => row.tgt), type: 'STRING' },
        { name: 'label', data: rows.map((row) => row.label), type: 'STRING' },
      ],
      rowGroupSize: ROWS / 2,
    });
    const report = await runOn('parquet', 'data.parquet', new Uint8Array(parquet));
    expect(report.counts).toMatchObject({ items: ROWS, failed: 0 });
  });
});
