/**
 * Benchmarks (`npm run bench`): throughput and memory of the hot paths, each reported as a
 * ratio against a baseline measured in the same run, because this machine is shared and noisy.
 * Results go to bench/results/latest.json (and are printed).
 */
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseSync } from 'csv-parse/sync';
import { runLocal } from '../cli/local-run.js';
import { compareRuns, type RunSide } from '../shared/core/compare-runs.js';
import { validateSuite } from '../shared/core/suite.js';
import { readRows } from '../shared/datasets/read.js';
import { classificationMetrics } from '../shared/metrics/index.js';

const ROOT = resolve(import.meta.dirname, '..');
const GOLD = join(ROOT, 'examples', 'data', 'gold_tp_fp3_fp2_fp1_en.csv');

async function time<T>(fn: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}

/** Median of `runs` timings, to damp the noise of a shared machine. */
async function median(runs: number, fn: () => Promise<unknown> | unknown): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i += 1) times.push((await time(fn)).ms);
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
}

async function bigCsv(dir: string, copies: number): Promise<string> {
  const records: Record<string, string>[] = [];
  for await (const row of readRows(createReadStream(GOLD), 'csv')) if (row.record) records.push(row.record);
  const columns = Object.keys(records[0]!);
  const quote = (f: string) => `"${f.replaceAll('"', '""')}"`;
  const lines = [columns.join(',')];
  let idx = 0;
  for (let c = 0; c < copies; c += 1) {
    for (const record of records) {
      lines.push(columns.map((col) => (col === 'idx' ? String(idx++) : quote(record[col] ?? ''))).join(','));
    }
  }
  const path = join(dir, `gold-x${copies}.csv`);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

async function main() {
  const dir = join(tmpdir(), `assay-bench-${process.pid}`);
  await mkdir(dir, { recursive: true });
  const results: Record<string, unknown> = { at: new Date().toISOString(), node: process.version };

  // 1. Dataset reading: streaming reader (row records, error rows) vs csv-parse/sync on the same text.
  const csvPath = await bigCsv(dir, 200); // 51,200 rows
  const text = await readFile(csvPath, 'utf8');
  const baselineMs = await median(5, () => parseSync(text, { columns: true, relax_column_count: true }));
  const readerMs = await median(5, async () => {
    let n = 0;
    for await (const _ of readRows(createReadStream(csvPath), 'csv')) n += 1;
    return n;
  });
  results.datasetReader = {
    rows: 51_200,
    baselineMs: Math.round(baselineMs),
    readerMs: Math.round(readerMs),
    ratioVsCsvParseSync: +(readerMs / baselineMs).toFixed(2),
    rowsPerSecond: Math.round(51_200 / (readerMs / 1000)),
  };

  // 2. Metrics with 1,000 bootstrap resamples on 10K rows, vs the point estimate alone.
  const labels = ['TP', 'FP1', 'FP2', 'FP3'];
  const pairs = Array.from({ length: 10_000 }, (_, i) => ({
    gold: labels[i % 4]!,
    pred: labels[(i * 7) % 5 === 0 ? 0 : i % 4]!,
  }));
  const pointMs = await median(5, () => classificationMetrics(pairs, { bootstrap: false }));
  const bootMs = await median(3, () => classificationMetrics(pairs));
  results.metrics = {
    rows: 10_000,
    pointMs: +pointMs.toFixed(1),
    withBootstrapMs: Math.round(bootMs),
    bootstrapCostInPointEstimates: Math.round(bootMs / pointMs),
  };

  // 3. The local runner end to end on the simulator with zero latency: the product's own
  //    overhead per item (ingest, scoring, append-only log, report), vs reading the same rows.
  const suitePath = join(dir, 'bench.suite.json');
  const smallCsv = await bigCsv(dir, 20); // 5,120 rows
  await writeFile(
    suitePath,
    JSON.stringify({
      version: 1,
      name: 'bench',
      dataset: { path: smallCsv },
      task: 'gec',
      judge: 'feedback',
      method: 'baseline',
      backends: ['sim:gold'],
      run: { concurrency: 32 },
      sim: { noise: 0.2, latencyMs: 0, seed: 1 },
    }),
  );
  const rssBefore = process.memoryUsage().rss;
  const run = await time(() =>
    runLocal({ suitePath, outDir: join(dir, 'run'), fresh: true, cachePath: join(dir, 'cache.jsonl') }),
  );
  const readSmallMs = await median(3, async () => {
    for await (const _ of readRows(createReadStream(smallCsv), 'csv'));
  });
  results.localRunner = {
    items: 5_120,
    runMs: Math.round(run.ms),
    itemsPerSecond: Math.round(5_120 / (run.ms / 1000)),
    ratioVsReadingTheDataset: Math.round(run.ms / readSmallMs),
    rssGrowthMb: Math.round((process.memoryUsage().rss - rssBefore) / 1e6),
  };

  // 4. Each judge method on the simulator at zero latency (1,280 rows), as a multiple of the
  //    baseline method's time: the method's own overhead (calls per item, parsing, fusion, routing).
  const methodCsv = await bigCsv(dir, 5);
  const methods: Record<string, { items: number; ms: number; calls: number; ratioVsBaseline: number }> = {};
  const variants: Record<string, Record<string, unknown>> = {
    baseline: { method: 'baseline', backends: ['sim:gpt-4o-mini'] },
    modular: { method: 'modular', backends: ['sim:gpt-4o-mini'] },
    agent: { method: 'agent', backends: ['sim:gpt-4o-mini'] },
    escalation: { method: 'escalation', backends: ['sim:gpt-4o-mini', 'sim:gpt-4o', 'sim:o3'] },
    ensemble: { method: 'ensemble', backends: ['sim:gpt-4o-mini', 'sim:gpt-4o', 'sim:o3'] },
  };
  // The first entry runs twice and its first timing is dropped: a cold start is not the method's cost.
  for (const [name, variant] of [['warm-up', variants.baseline!] as const, ...Object.entries(variants)]) {
    const path = join(dir, `method-${name}.suite.json`);
    await writeFile(
      path,
      JSON.stringify({
        version: 1,
        name: `bench-${name}`,
        dataset: { path: methodCsv },
        task: 'gec',
        judge: 'feedback',
        run: { concurrency: 32 },
        sim: { noise: 0.2, latencyMs: 0, seed: 1 },
        ...variant,
      }),
    );
    const timed = await time(() =>
      runLocal({
        suitePath: path,
        outDir: join(dir, `run-${name}`),
        fresh: true,
        cachePath: join(dir, 'cache.jsonl'),
      }),
    );
    const report = timed.value.outcome.status === 'written' ? timed.value.outcome.report : undefined;
    if (name === 'warm-up') continue;
    methods[name] = {
      items: 1_280,
      ms: Math.round(timed.ms),
      calls: report?.cost.calls ?? 0,
      ratioVsBaseline: 0,
    };
  }
  for (const m of Object.values(methods)) m.ratioVsBaseline = +(m.ms / methods.baseline!.ms).toFixed(2);
  results.methods = methods;

  // 5. Comparing two runs of 10K items (paired bootstrap of four metrics, McNemar, flips), vs
  //    the metrics with their own bootstrap: what the aggregator adds when a previous run exists.
  const side = (runId: string, flip: number): RunSide => ({
    run: {
      schemaVersion: 2,
      runId,
      suiteName: 'bench',
      suite: validateSuite(
        {
          version: 1,
          name: 'bench',
          dataset: { path: 'x.csv' },
          task: 'gec',
          method: 'baseline',
          backends: ['sim:gold'],
        },
        'bench',
      ),
      prompts: {},
      status: 'done' as const,
      invalidRows: 0,
      startedAt: runId,
      reportPrefix: '',
      datasetKey: 'x',
      simulated: true,
    },
    results: pairs.map((p, i) => ({
      schemaVersion: 2,
      runId,
      itemId: String(i),
      row: i,
      status: 'scored' as const,
      gold: p.gold,
      scores: { label: { kind: 'label', value: i % flip === 0 ? p.gold : p.pred } },
      input: {},
      stages: {},
      simulated: true,
      finishedAt: '',
    })),
  });
  const [base, candidate] = [side('a', 5), side('b', 3)];
  const compareMs = await median(3, () => compareRuns(base, candidate));
  results.compareRuns = {
    items: 10_000,
    compareMs: Math.round(compareMs),
    ratioVsMetricsWithBootstrap: +(compareMs / bootMs).toFixed(2),
  };

  await rm(dir, { recursive: true, force: true });
  const out = join(ROOT, 'bench', 'results', 'latest.json');
  await writeFile(out, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(results, null, 2)}\nwritten to ${out}\n`);
}

await main();
