/**
 * One throughput measurement, in a process of its own (so its CPU time and memory are its
 * own): `--mode assay` runs a GEC suite through the local runner against the OpenAI-compatible
 * fake at `--url` (`vllm:` preset, LLM cache off); `--mode sdk` is the bound a user's own
 * script reaches: C workers calling `chat.completions.create` of the bare `openai` SDK in a loop.
 *
 *   tsx bench/parts/throughput.ts --mode assay|sdk --url http://127.0.0.1:PORT/v1 --items N --concurrency C --dir TMP
 *
 * Prints one JSON line: `{ items, ms, itemsPerSecond, cpuMsPerItem, maxRssMb, failed }`.
 */
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { runLocal } from '../../cli/local-run.js';
import { whyNotWritten } from '../../shared/use-cases/aggregate-run.js';
import { gecSuite, goldCsv } from './data.js';

const { values } = parseArgs({
  options: {
    mode: { type: 'string' },
    url: { type: 'string' },
    items: { type: 'string' },
    concurrency: { type: 'string' },
    dir: { type: 'string' },
  },
});
const items = Number(values.items);
const concurrency = Number(values.concurrency);
const url = values.url!;
const dir = values.dir!;

/** Phase timers of the assay run (ms since the run started): first item scored, last item scored. */
const phases = { firstItemMs: 0, lastItemMs: 0 };

/** Items that ended with a result (scored or failed): the rest were lost. */
let results = items;

/** The bench's own setup (writing the dataset and the suite): done before the clock starts. */
async function prepareAssay(): Promise<{ name: string; suitePath: string }> {
  const data = await goldCsv(dir, items);
  const name = `throughput-${concurrency}-${process.pid}`;
  return { name, suitePath: await gecSuite(dir, name, data, ['vllm:bench'], { concurrency, cache: false }) };
}

async function assay({ name, suitePath }: { name: string; suitePath: string }): Promise<number> {
  const { outcome } = await runLocal({
    onEvent: (event) => {
      if (event.type !== 'item') return;
      phases.lastItemMs = performance.now() - started;
      if (phases.firstItemMs === 0) phases.firstItemMs = phases.lastItemMs;
    },
    suitePath,
    outDir: join(dir, name),
    fresh: true,
    cachePath: join(dir, `${name}.cache.jsonl`),
    env: { ...process.env, VLLM_BASE_URL: url },
  });
  if (outcome.status !== 'written') throw new Error(`the run was not aggregated: ${whyNotWritten(outcome)}`);
  results = outcome.report.counts.items;
  return outcome.report.counts.failed;
}

async function sdk(): Promise<number> {
  const client = new OpenAI({ apiKey: 'unused', baseURL: url, maxRetries: 0 });
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items) {
        next += 1;
        const response = await client.chat.completions.create({
          model: 'bench',
          messages: [{ role: 'user', content: `Is this edit correct? item ${next}` }],
        });
        if (!response.choices[0]?.message.content) failed += 1;
      }
    }),
  );
  return failed;
}

// The window is the same for both sides: it opens once the modules are loaded (each side's
// static imports) and the bench's own files are written, and closes when the last item is
// done: for Assay, once its report is written (reading the dataset, preparing the run and
// aggregating are the product's work and count); for the SDK, once its last answer is in.
const prepared = values.mode === 'sdk' ? undefined : await prepareAssay();
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
const cpuBefore = process.cpuUsage();
const started = performance.now();
const failed = prepared ? await assay(prepared) : await sdk();
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
process.stdout.write(
  `${JSON.stringify({
    items,
    ms: Math.round(ms),
    itemsPerSecond: Math.round(items / (ms / 1000)),
    cpuMsPerItem: +((cpu.user + cpu.system) / 1000 / items).toFixed(3),
    maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    failed,
    results,
    eventLoopDelayMs: {
      p50: +(loopDelay.percentile(50) / 1e6).toFixed(1),
      p99: +(loopDelay.percentile(99) / 1e6).toFixed(1),
      max: +(loopDelay.max / 1e6).toFixed(1),
    },
    ...(values.mode === 'sdk'
      ? {}
      : {
          phasesMs: {
            startToFirstItem: Math.round(phases.firstItemMs),
            scoring: Math.round(phases.lastItemMs - phases.firstItemMs),
            lastItemToReport: Math.round(ms - phases.lastItemMs),
          },
        }),
  })}\n`,
);
