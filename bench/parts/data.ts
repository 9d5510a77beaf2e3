/** Datasets and suites the bench parts generate (in a temp folder, never in the repository). */

import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { readRows } from '../../shared/lib/datasets/read.js';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const GOLD = join(ROOT, 'examples', 'data', 'gold_tp_fp3_fp2_fp1_en.csv');

/**
 * `items` GEC rows from the English gold set, each its own sentence pair (the row number added to
 * its source and target), so that no two items share a request or a cache entry: CSV at `path`.
 */
export async function distinctGecCsv(path: string, items: number): Promise<void> {
  const records: Record<string, string>[] = [];
  for await (const row of readRows(createReadStream(GOLD), 'csv')) if (row.record) records.push(row.record);
  const columns = Object.keys(records[0]!);
  const quote = (f: string) => `"${f.replaceAll('"', '""')}"`;
  const lines = [columns.join(',')];
  for (let i = 0; i < items; i++) {
    const record = records[i % records.length]!;
    const cell = (c: string) =>
      c === 'idx'
        ? String(i)
        : c === 'src' || c === 'tgt'
          ? quote(`${record[c]} [${i}]`)
          : quote(record[c] ?? '');
    lines.push(columns.map(cell).join(','));
  }
  await writeFile(path, `${lines.join('\n')}\n`);
}

/** The English GEC gold set, repeated until `rows` rows, each with its own `idx`; streamed to disk. */
export async function goldCsv(dir: string, rows: number): Promise<string> {
  const records: Record<string, string>[] = [];
  for await (const row of readRows(createReadStream(GOLD), 'csv')) if (row.record) records.push(row.record);
  const columns = Object.keys(records[0]!);
  const quote = (f: string) => `"${f.replaceAll('"', '""')}"`;
  const lines = records.map((record) =>
    columns.map((col) => (col === 'idx' ? '' : quote(record[col] ?? ''))),
  );
  const path = join(dir, `gold-${rows}.csv`);
  const out = createWriteStream(path);
  out.write(`${columns.join(',')}\n`);
  const idxAt = columns.indexOf('idx');
  for (let i = 0; i < rows; i += 1) {
    const fields = lines[i % lines.length]!;
    fields[idxAt] = String(i);
    if (!out.write(`${fields.join(',')}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return path;
}

/** A GEC suite (feedback judge, baseline method: one call per item) on `datasetPath`. */
export async function gecSuite(
  dir: string,
  name: string,
  datasetPath: string,
  backends: string[],
  run: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const path = join(dir, `${name}.suite.json`);
  await writeFile(
    path,
    JSON.stringify({
      version: 1,
      name,
      dataset: { path: datasetPath },
      task: 'gec',
      judge: 'feedback',
      method: 'baseline',
      backends,
      run,
      ...extra,
    }),
  );
  return path;
}
