/**
 * Small dataset files made to hurt a reader, generated when a test or bench runs (nothing binary
 * is kept in the repository). Each is a few bytes to a few megabytes on disk and asks a naive
 * reader for gigabytes of memory, a stack deeper than the runtime's, or minutes of work:
 *
 * - `parquet`: a Parquet file of three rows whose (snappy) page headers declare 1.9 GB each;
 * - `gzipLine`: a gzipped JSONL file holding one line of 1.5 GB (1.5 MB compressed);
 * - `deepJson`: a JSON array whose first element nests 100,000 deep;
 * - `wideCsv`: a CSV file with a header of a million columns;
 * - `longLine`: a JSONL file whose second line is 100 MB.
 *
 * Their rows (where they have any) have the columns of the GEC suites the tests run: idx, src,
 * tgt, label.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { createGzip } from 'node:zlib';
import { parquetMetadata } from 'hyparquet';
import { parquetHeader } from 'hyparquet/src/column.js';
import { ByteWriter, parquetWriteBuffer } from 'hyparquet-writer';
import { writePageHeader } from 'hyparquet-writer/src/datapage.js';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';

export type HostileKind = 'parquet' | 'gzipLine' | 'deepJson' | 'wideCsv' | 'longLine';

/** The file name each kind is written as (its extension says its format). */
export const HOSTILE_FILES: Readonly<Record<HostileKind, string>> = {
  parquet: 'huge-pages.parquet',
  gzipLine: 'one-line.jsonl.gz',
  deepJson: 'deep.json',
  wideCsv: 'wide.csv',
  longLine: 'long-line.jsonl',
};

/** What a page header of the hostile Parquet file declares, bytes. */
export const DECLARED_PAGE_BYTES = 1_900_000_000;

const row = (i: number) => ({
  idx: String(i),
  src: `She go to school on day ${i}.`,
  tgt: `She goes to school on day ${i}.`,
  label: 'TP',
});

/**
 * A Parquet file of three rows, snappy-compressed, whose every data page header declares
 * {@link DECLARED_PAGE_BYTES} uncompressed bytes (its column chunks declare their true size,
 * unless `declareChunks`, when they declare as much as their pages).
 */
export function hostileParquet({ declareChunks = false } = {}): Uint8Array {
  const rows = [row(0), row(1), row(2)];
  const names = Object.keys(rows[0]!) as (keyof ReturnType<typeof row>)[];
  const honest = parquetWriteBuffer({
    columnData: names.map((name) => ({
      name,
      data: rows.map((r) => r[name]),
      type: 'STRING' as const,
      encoding: 'PLAIN' as const,
    })),
    codec: 'SNAPPY',
  });
  const bytes = new Uint8Array(honest);
  const metadata = parquetMetadata(honest);
  // The file again, each column chunk's page header rewritten (its data kept), offsets moved.
  const writer = new ByteWriter();
  writer.appendUint32(0x31524150);
  for (const group of metadata.row_groups) {
    for (const column of group.columns) {
      const meta = column.meta_data!;
      const start = Number(meta.data_page_offset);
      const view = new DataView(honest, start, Number(meta.total_compressed_size));
      const reader = { view, offset: 0 };
      const header = parquetHeader(reader);
      const data = bytes.subarray(start + reader.offset, start + reader.offset + header.compressed_page_size);
      const offset = writer.offset;
      // The writer brings a hyparquet of its own: the same shapes, other type declarations.
      writePageHeader(writer, {
        ...header,
        uncompressed_page_size: DECLARED_PAGE_BYTES,
      } as unknown as Parameters<typeof writePageHeader>[1]);
      writer.appendBytes(data);
      meta.data_page_offset = BigInt(offset);
      meta.dictionary_page_offset = undefined;
      meta.total_compressed_size = BigInt(writer.offset - offset);
      if (declareChunks) meta.total_uncompressed_size = BigInt(DECLARED_PAGE_BYTES);
      column.file_offset = BigInt(offset);
    }
    group.total_byte_size = declareChunks ? BigInt(DECLARED_PAGE_BYTES) : group.total_byte_size;
  }
  const footer = writer.offset;
  writeMetadata(writer, metadata as unknown as Parameters<typeof writeMetadata>[1]);
  writer.appendUint32(writer.offset - footer);
  writer.appendUint32(0x31524150);
  return new Uint8Array(writer.getBuffer());
}

/** Bytes of the one line of the gzipped JSONL file (1.5 GB), and of a block it is written in. */
export const GZIP_LINE_BYTES = 1_500_000_000;
const BLOCK = 1 << 20;

/** Writes the gzipped JSONL file of one 1.5 GB line (`{"src":"aaaa…`), streamed: never held. */
export async function writeGzipLine(path: string, lineBytes = GZIP_LINE_BYTES): Promise<void> {
  const block = Buffer.alloc(BLOCK, 'a');
  async function* line() {
    yield Buffer.from('{"idx":"0","src":"');
    for (let written = 0; written < lineBytes; written += BLOCK) yield block;
    yield Buffer.from('"}\n');
  }
  await pipeline(line(), createGzip({ level: 9 }), createWriteStream(path));
}

/** A JSON array whose first element nests `depth` deep, then a row that is fine. */
export function deepJson(depth = 100_000): string {
  return `[{"idx":"0","src":${'['.repeat(depth)}${']'.repeat(depth)}},${JSON.stringify(row(1))}]`;
}

/** A CSV whose header has `columns` columns (the suite's first), then a row of as many fields. */
export function wideCsv(columns = 1_000_000): string {
  const names = ['idx', 'src', 'tgt', 'label'];
  for (let i = names.length; i < columns; i += 1) names.push(`c${i}`);
  const first = Object.values(row(0));
  const fields = [...first, ...Array.from({ length: columns - first.length }, () => '')];
  return `${names.join(',')}\n${fields.join(',')}\n`;
}

/** Bytes of the long line of the JSONL file (100 MB). */
export const LONG_LINE_BYTES = 100_000_000;

/** Writes a JSONL file whose first and third lines are rows and whose second is 100 MB long. */
export async function writeLongLine(path: string, lineBytes = LONG_LINE_BYTES): Promise<void> {
  const block = Buffer.alloc(BLOCK, 'b');
  async function* lines() {
    yield Buffer.from(`${JSON.stringify(row(0))}\n{"idx":"1","src":"`);
    for (let written = 0; written < lineBytes; written += BLOCK) yield block;
    yield Buffer.from(`"}\n${JSON.stringify(row(2))}\n`);
  }
  await pipeline(lines(), createWriteStream(path));
}

/** Writes the hostile file of `kind` into `dir`; returns its path. */
export async function writeHostileFile(dir: string, kind: HostileKind): Promise<string> {
  const path = join(dir, HOSTILE_FILES[kind]);
  switch (kind) {
    case 'parquet':
      await writeFile(path, hostileParquet());
      break;
    case 'gzipLine':
      await writeGzipLine(path);
      break;
    case 'deepJson':
      await writeFile(path, deepJson());
      break;
    case 'wideCsv':
      await writeFile(path, wideCsv());
      break;
    case 'longLine':
      await writeLongLine(path);
      break;
  }
  return path;
}

/** The peak memory a hostile file may cost the CLI process that reads it, in either shell. */
export const PEAK_RSS_BOUND_BYTES = 300 * 1024 * 1024;

/** How the CLI ended on a hostile file: its exit code, output, peak memory and the run's files. */
export interface HostileRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The CLI process's peak resident memory, bytes (its JS heap and everything outside it). */
  peakRss: number;
  /** The run's report folder. */
  reportDir: string;
}

const REPO_ROOT = join(import.meta.dirname, '..', '..');

/**
 * Writes the hostile file of `kind` and a GEC suite reading it into `dir`, and runs the suite
 * with the `assay` binary on the simulator: `assay run` (local) or `assay cloud` (the Lambda
 * handlers on moto), as a child process whose peak memory is measured (see hostile-peak-rss.mjs).
 */
export async function runHostile(
  kind: HostileKind,
  shell: 'local' | 'cloud',
  dir: string,
): Promise<HostileRun> {
  await writeHostileFile(dir, kind);
  const suitePath = join(dir, `${kind}.suite.json`);
  await writeFile(
    suitePath,
    JSON.stringify({
      version: 1,
      name: `hostile-${kind.toLowerCase()}`,
      task: 'gec',
      judge: 'feedback',
      method: 'baseline',
      dataset: { path: HOSTILE_FILES[kind] },
      backends: ['sim:gold'],
    }),
  );
  const reportDir = join(dir, `${shell}-report`);
  const rssFile = join(dir, `${shell}-peak-rss`);
  const args =
    shell === 'local'
      ? ['run', suitePath, '--simulate', '--no-progress', '--out', reportDir]
      : ['cloud', suitePath, '--simulate', '--out', reportDir];
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.endsWith('_API_KEY')));
  const child = spawn(
    process.execPath,
    [
      '--import',
      pathToFileURL(join(REPO_ROOT, 'test', 'fakes', 'hostile-peak-rss.mjs')).href,
      join(REPO_ROOT, 'bin', 'assay.mjs'),
      ...args,
    ],
    {
      cwd: dir,
      env: { ...env, ASSAY_CACHE_DIR: join(dir, 'cache'), ASSAY_PEAK_RSS_FILE: rssFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (data) => {
    stdout += data;
  });
  child.stderr.on('data', (data) => {
    stderr += data;
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const peakRss = Number(await readFile(rssFile, 'utf8').catch(() => 'NaN'));
  return { code, stdout, stderr, peakRss, reportDir };
}
