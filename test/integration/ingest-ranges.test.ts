/**
 * A dataset cut into ranges on moto, the ranges read by four ingest invocations at once, their
 * ids claimed in DynamoDB with conditional puts in whatever order they come: every row ends as
 * exactly one result, each duplicate naming its id's first row (rows of one id far apart, in
 * ranges read at the same time), and the report is a local run's over the whole file.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { HANG_GUARD_MS } from '../../cli/cloud/poller.js';
import { runLocal } from '../../cli/local-run.js';
import { suiteKey } from '../../shared/lib/layout/bucket.js';
import type { Report } from '../../shared/model/report.js';
import { REPO, suiteInput, tempDir } from '../helpers.js';
import { pipelineStack } from './pipeline-stack.js';

const GOLD_CSV = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');
/** Bytes a range takes at least: the file's 13 KB in a dozen ranges or so. */
const CHUNK_BYTES = 1_000;

/**
 * The fixture's rows four times over, in CRLF, each with an id of its own but one in seven
 * past the 28th, which takes the id of a row 15 to 25 rows before it; and a row whose text
 * spans two lines.
 */
async function dataset(): Promise<{ csv: string; rows: number; duplicates: Map<number, number> }> {
  const [header, ...lines] = (await readFile(GOLD_CSV, 'utf8')).trimEnd().split('\n');
  const out = [header!];
  const idOfRow = new Map<number, string>();
  const firstRowOf = new Map<string, number>();
  const duplicates = new Map<number, number>();
  const rows = 4 * lines.length;
  for (let row = 1; row <= rows; row += 1) {
    let line = lines[(row - 1) % lines.length]!;
    if (row === 12) line = line.replace(/^([^,]*),"/, '$1,"a first line\r\nand a second: ');
    let id = `r${row}`;
    if (row % 7 === 3 && row > 28) {
      id = idOfRow.get(row - 15 - (row % 11))!;
      duplicates.set(row, firstRowOf.get(id)!);
    }
    idOfRow.set(row, id);
    if (!firstRowOf.has(id)) firstRowOf.set(id, row);
    out.push(line.replace(/^[^,]*/, id));
  }
  return { csv: out.join('\r\n'), rows, duplicates };
}

const stack = pipelineStack('ranges', {
  env: { ASSAY_INGEST_CHUNK_BYTES: String(CHUNK_BYTES) },
  workerBatchSize: 10,
  workerConcurrency: 4,
  // Four ingest invocations at once: ranges are read, and claim their ids, at the same time.
  ingestConcurrency: 4,
});

/**
 * Uploads the suite, then `body` at `datasets/<name>/<file>`, and drives the queues until the
 * report is written: bounded by the poller's checks in a row with nothing to run (and its guard
 * against a hang), not by a deadline a loaded machine could pass while the run goes on.
 */
async function runOn(name: string, file: string, body: string | Uint8Array) {
  const { blobs, poller, runStore, invocations } = stack();
  await blobs.put(suiteKey(name), JSON.stringify(suiteInput({ name })), 'application/json');
  await poller.drain({ only: ['ingest'] });
  const before = invocations.filter((i) => i.functionName === 'ingest').length;
  await blobs.put(`datasets/${name}/${file}`, body);
  let key: string | undefined;
  await poller.runUntil(async () => {
    key = (await blobs.list(`reports/${name}/`)).find((k) => k.endsWith('/report.json'));
    return key !== undefined;
  });
  const report = JSON.parse(new TextDecoder().decode(await blobs.get(key!))) as Report;
  const results = [];
  for await (const result of runStore.results(report.runId)) results.push(result);
  // Every duplicate names its id's first row, whichever range claimed the id first.
  const named = new Map(
    results
      .filter((r) => r.failure?.message.includes('duplicate item id'))
      .map((r) => [r.row, Number(/first seen at row (\d+)/.exec(r.failure!.message)![1])]),
  );
  return {
    report,
    results,
    named,
    run: await runStore.getRun(report.runId),
    ingestInvocations: invocations.filter((i) => i.functionName === 'ingest').length - before,
  };
}

describe('ingest in ranges read at the same time, on moto', { timeout: HANG_GUARD_MS + 60_000 }, () => {
  it('ends every row as exactly one result, duplicates naming their first row, as a local run reports', async () => {
    const { csv, rows, duplicates } = await dataset();
    expect(duplicates.size).toBe(4);
    const { report, results, named, run, ingestInvocations } = await runOn('ranged', 'data.csv', csv);
    expect(results.map((r) => r.row).sort((a, b) => a - b)).toEqual(
      Array.from({ length: rows }, (_, i) => i + 1),
    );
    // Each range's results are a part of their own: a dozen ranges or so.
    const parts = new Set(results.map((r) => r.part ?? 0));
    expect(parts.size).toBeGreaterThan(8);
    expect(ingestInvocations).toBeGreaterThan(parts.size);
    expect(named).toEqual(duplicates);

    // The same figures as one local run over the whole file.
    const dir = await tempDir('assay-ranges-local-');
    await writeFile(join(dir, 'suite.json'), JSON.stringify(suiteInput({ name: 'ranged-local' })));
    await writeFile(join(dir, 'data.csv'), csv);
    const local = await runLocal({
      suitePath: join(dir, 'suite.json'),
      outDir: join(dir, 'run'),
      cachePath: join(dir, 'cache.jsonl'),
      env: {},
    });
    if (local.outcome.status !== 'written') throw new Error('local run not aggregated');
    expect(report.counts).toEqual(local.outcome.report.counts);
    expect(report.metrics).toEqual(local.outcome.report.metrics);
    expect(run).toMatchObject({ status: 'done', total: rows });

    // Gzipped, the file is split by one pass into chunk objects, read as the ranges were.
    const gzipped = await runOn('ranged-gz', 'data.csv.gz', gzipSync(csv));
    expect(gzipped.results.map((r) => r.row).sort((a, b) => a - b)).toEqual(
      Array.from({ length: rows }, (_, i) => i + 1),
    );
    expect(gzipped.named).toEqual(duplicates);
    expect(gzipped.report.counts).toEqual(local.outcome.report.counts);
    expect(gzipped.report.metrics).toEqual(local.outcome.report.metrics);
    expect(gzipped.run).toMatchObject({ status: 'done', total: rows });
    // A chunk object holds a range's bytes at most: the rows are read in a dozen parts or so.
    const chunkObjects = await stack().blobs.list(`spill/${gzipped.report.runId}/ingest/rows-`);
    expect(chunkObjects.length).toBeGreaterThan(8);
    expect(new Set(gzipped.results.map((r) => r.part ?? 0)).size).toBe(chunkObjects.length);
  });
});
