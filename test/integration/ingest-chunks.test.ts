/**
 * A dataset larger than one ingest invocation reads is ingested in chunks: with ranges of a few
 * hundred bytes, the 14-row fixture takes an invocation for the upload (which cuts it into
 * ranges, each range's task on the events queue) and one per range; each range's results are a
 * part of the run; every row still ends as exactly one result. The run is aggregated in
 * parts (ASSAY_AGGREGATE_IN_PARTS_FROM=0): a tally of each part, their reduction, each part's
 * item files, the assembly; its report and files are those of a local run over the whole file.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runLocal } from '../../cli/local-run.js';
import { suiteKey } from '../../shared/lib/layout/bucket.js';
import type { Report } from '../../shared/model/report.js';
import { REPO, suiteInput, tempDir } from '../helpers.js';
import { pipelineStack } from './pipeline-stack.js';

/** 12 usable rows of the AQUA English gold set and 2 that cannot be used. */
const GOLD_CSV = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');
/** Bytes an ingest invocation reads: the fixture's 1.5 KB in several chunks. */
const CHUNK_BYTES = 300;

const stack = pipelineStack('chunks', {
  env: { ASSAY_INGEST_CHUNK_BYTES: String(CHUNK_BYTES), ASSAY_AGGREGATE_IN_PARTS_FROM: '0' },
  workerBatchSize: 5,
  workerConcurrency: 2,
});

describe('ingest in chunks on moto', { timeout: 120_000 }, () => {
  it('ingests a dataset over several invocations, a part each, every row ending as exactly one result', async () => {
    const { blobs, poller, runStore, invocations } = stack();
    const suite = suiteInput({ name: 'continued' });
    await blobs.put(suiteKey('continued'), JSON.stringify(suite), 'application/json');
    await poller.drain({ only: ['ingest'] });
    const before = invocations.filter((i) => i.functionName === 'ingest').length;
    const aggregatesBefore = invocations.filter((i) => i.functionName === 'aggregate').length;
    await blobs.put('datasets/continued/data.csv', await readFile(GOLD_CSV));

    let key: string | undefined;
    await poller.runUntil(
      async () => {
        key = (await blobs.list('reports/continued/')).find((k) => k.endsWith('/report.json'));
        return key !== undefined;
      },
      { timeoutMs: 60_000 },
    );
    const report = JSON.parse(new TextDecoder().decode(await blobs.get(key!))) as Report;

    // The upload's invocation, then one per range (a range ends at the first row past 300 bytes).
    const ingests = invocations.filter((i) => i.functionName === 'ingest').length - before;
    expect(ingests).toBeGreaterThan(3);
    const results = [];
    for await (const result of runStore.results(report.runId)) results.push(result);
    expect(results).toHaveLength(14);
    expect(new Set(results.map((r) => r.itemId)).size).toBe(14);
    // In report order, and each chunk's results in a part of their own.
    expect(results.map((r) => r.row)).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    const parts = new Set(results.map((r) => r.part ?? 0));
    expect(parts.size).toBe(ingests - 1);
    for (const part of parts) {
      const ofPart = [];
      for await (const result of runStore.results(report.runId, part)) ofPart.push(result.row);
      expect(ofPart.length).toBeGreaterThan(0);
    }
    expect(await runStore.counters(report.runId)).toMatchObject({ done: 12, failed: 2, total: 14 });
    expect(await runStore.getRun(report.runId)).toMatchObject({ status: 'done', total: 14, invalidRows: 2 });

    // The same figures as one local run over the whole file.
    const dir = await tempDir('assay-continue-local-');
    await writeFile(join(dir, 'suite.json'), JSON.stringify(suiteInput({ name: 'continued-local' })));
    await writeFile(join(dir, 'data.csv'), await readFile(GOLD_CSV));
    const local = await runLocal({
      suitePath: join(dir, 'suite.json'),
      outDir: join(dir, 'run'),
      cachePath: join(dir, 'cache.jsonl'),
      env: {},
    });
    if (local.outcome.status !== 'written') throw new Error('local run not aggregated');
    expect(report.counts).toEqual(local.outcome.report.counts);
    expect(report.metrics).toEqual(local.outcome.report.metrics);

    // Aggregated in parts: the trigger, a tally and the files of each part, the reduction and
    // the assembly — an invocation each at least (a step may share a batch of the queue).
    const steps = invocations.slice(aggregatesBefore).filter((i) => i.functionName === 'aggregate');
    const records = steps.reduce((sum, i) => sum + i.records, 0);
    expect(records).toBeGreaterThanOrEqual(1 + 2 * parts.size + 2);
    // Its item files are the local run's, byte for byte.
    const folder = key!.slice(0, -'report.json'.length);
    for (const name of ['labeled.csv', 'errors.txt', 'correct.txt']) {
      const cloud = Buffer.from((await blobs.get(folder + name))!).toString('utf8');
      expect(cloud, name).toBe(await readFile(join(local.outDir, name), 'utf8'));
    }
  });
});
