/**
 * Throughput as a user meets it: `assay run` as a process (`node bin/assay.mjs run …`, spawned,
 * stdout and stderr piped, timed from spawn to exit) beside a bare `openai` SDK pool as a process
 * (bench/parts/sdk-pool.mjs: reads the same dataset, sends the same requests with a fixed-size
 * promise pool), both against one OpenAI-compatible fake answering after a fixed latency.
 *
 * Two figures per side: whole process (items / wall time from spawn to exit: start-up, reading
 * the dataset, the report, everything) and steady state (answers / time from the fake's first
 * request to its last answer, from the fake's own clock). Rounds interleave the two sides, so
 * the machine's load weighs on both alike; the medians are reported.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gecSuite, goldCsv, ROOT } from './data.js';
import { collected, type Fake, type FakeStats, startFake } from './spawn.js';
import type { Check } from './table.js';

export interface ProcessSide {
  /** Items per second, spawn to exit (medians over the rounds). */
  wholePerSecond: number;
  /** Answers per second between the fake's first request and its last answer. */
  steadyPerSecond: number;
  /** Wall time spawn to exit (ms), per round. */
  wallMs: number[];
  /** Spawn to the fake's first request (ms), per round: start-up and reading the dataset. */
  toFirstRequestMs: number[];
  /** The fake's last answer to exit (ms), per round: the report and shutting down. */
  afterLastAnswerMs: number[];
  failedRounds: string[];
}

export interface ProcessFigures {
  items: number;
  latencyMs: number;
  rounds: number;
  /** Another checkout measured beside this one (`before`: its own bin/assay.mjs), when given. */
  before?: string;
  byConcurrency: Record<
    string,
    { boundCOverL: number; assay: ProcessSide; sdk: ProcessSide; before?: ProcessSide }
  >;
}

interface Timed {
  startedAt: number;
  endedAt: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its exit, output piped (as a user's terminal or CI would read it). */
async function timeProcess(args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Timed> {
  const startedAt = Date.now();
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const { code, stdout, stderr } = await collected(child, timeoutMs);
  return { startedAt, endedAt: Date.now(), code, stdout, stderr };
}

const median = (xs: number[]) => {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function emptySide(): ProcessSide {
  return {
    wholePerSecond: 0,
    steadyPerSecond: 0,
    wallMs: [],
    toFirstRequestMs: [],
    afterLastAnswerMs: [],
    failedRounds: [],
  };
}

/** Folds one measured run into its side; false when it failed. */
function record(side: ProcessSide, run: Timed, stats: FakeStats, items: number, what: string): boolean {
  if (run.code !== 0 || stats.answered < items) {
    side.failedRounds.push(
      `${what}: exit ${run.code}, ${stats.answered}/${items} answered: ${run.stderr.trim().split('\n').slice(-2).join(' | ')}`,
    );
    return false;
  }
  side.wallMs.push(run.endedAt - run.startedAt);
  side.toFirstRequestMs.push(stats.firstAt - run.startedAt);
  side.afterLastAnswerMs.push(run.endedAt - stats.lastAt);
  (side as ProcessSide & { steady?: number[] }).steady ??= [];
  (side as ProcessSide & { steady: number[] }).steady.push(
    stats.answered / ((stats.lastAt - stats.firstAt) / 1000),
  );
  return true;
}

function finish(side: ProcessSide, items: number): ProcessSide {
  const steady = (side as ProcessSide & { steady?: number[] }).steady ?? [];
  delete (side as ProcessSide & { steady?: number[] }).steady;
  return {
    ...side,
    wholePerSecond: side.wallMs.length ? Math.round(items / (median(side.wallMs) / 1000)) : 0,
    steadyPerSecond: Math.round(median(steady)),
  };
}

/**
 * Measures both sides at each concurrency, `rounds` times each (interleaved), on `items` rows
 * against a fake answering after `latencyMs`.
 */
export async function processThroughput(
  dir: string,
  {
    items,
    concurrencies,
    latencyMs,
    rounds,
    before,
  }: {
    items: number;
    concurrencies: number[];
    latencyMs: number;
    rounds: number;
    /** A checkout of an earlier version (built, with node_modules) measured in the same rounds. */
    before?: string;
  },
): Promise<{ figures: ProcessFigures; checks: Check[] }> {
  // dist/ as the sources are now: no measured run pays for a build.
  await timeProcess([join(ROOT, 'scripts', 'build.mjs')], process.env, 300_000);
  const data = await goldCsv(dir, items);
  const fake: Fake = await startFake(['--latency-ms', String(latencyMs)]);
  const figures: ProcessFigures = {
    items,
    latencyMs,
    rounds,
    ...(before ? { before } : {}),
    byConcurrency: {},
  };
  const checks: Check[] = [];
  const template = join(dir, 'request-template.json');
  let haveTemplate = false;
  try {
    for (const c of concurrencies) {
      const suite = await gecSuite(dir, `process-${c}`, data, ['vllm:bench'], {
        concurrency: c,
        cache: false,
      });
      const assay = emptySide();
      const sdk = emptySide();
      const earlier = emptySide();
      // Each side starts as a fresh clone would: no LLM cache grown by earlier runs (a suite
      // with `cache: false` still records every answer with its payer, so the file grows
      // with each bench run in the working folder).
      const env = {
        ...process.env,
        VLLM_BASE_URL: fake.url,
        NO_COLOR: '1',
        ASSAY_CACHE_DIR: join(dir, `cache-${c}`),
      };
      for (let round = 0; round < rounds; round += 1) {
        await fake.stats(true);
        const ours = await timeProcess(
          [
            join(ROOT, 'bin', 'assay.mjs'),
            'run',
            suite,
            '--out',
            // Each round in a runs folder of its own: a first run, not compared with the round before.
            join(dir, `process-${c}-${round}`, 'run'),
            '--fresh',
            '--no-progress',
          ],
          env,
          300_000,
        );
        const ok = record(assay, ours, await fake.stats(true), items, `assay round ${round + 1}`);
        if (ok && !haveTemplate) {
          await writeFile(template, await fake.firstRequest());
          haveTemplate = true;
        }
        if (!haveTemplate) continue;
        const theirs = await timeProcess(
          [
            join(ROOT, 'bench', 'parts', 'sdk-pool.mjs'),
            '--url',
            fake.url,
            '--dataset',
            data,
            '--template',
            template,
            '--concurrency',
            String(c),
          ],
          env,
          300_000,
        );
        record(sdk, theirs, await fake.stats(true), items, `sdk round ${round + 1}`);
        if (before) {
          const old = await timeProcess(
            [
              join(before, 'bin', 'assay.mjs'),
              'run',
              suite,
              '--out',
              join(dir, `before-${c}-${round}`, 'run'),
              '--fresh',
              '--no-progress',
            ],
            env,
            300_000,
          );
          record(earlier, old, await fake.stats(true), items, `before round ${round + 1}`);
        }
      }
      const bound = c / (latencyMs / 1000);
      const a = finish(assay, items);
      const s = finish(sdk, items);
      const b = before ? finish(earlier, items) : undefined;
      figures.byConcurrency[`c${c}`] = { boundCOverL: bound, assay: a, sdk: s, ...(b ? { before: b } : {}) };
      const ofBound = a.wholePerSecond / bound;
      const ofSdk = s.wholePerSecond > 0 ? a.wholePerSecond / s.wholePerSecond : 0;
      const failures = [...a.failedRounds, ...s.failedRounds];
      checks.push({
        figure: `whole process, C = ${c}, ${items} items, ${latencyMs} ms fake (\`assay run\` spawn to exit)`,
        measured: a.wallMs.length
          ? `${a.wholePerSecond} items/s (${(median(a.wallMs) / 1000).toFixed(1)} s; ${Math.round(median(a.toFirstRequestMs))} ms to the first request, ${Math.round(median(a.afterLastAnswerMs))} ms after the last answer)`
          : `failed: ${failures.join('; ')}`,
        bound: `C/L ${bound}/s; bare SDK process ${s.wholePerSecond}/s (${(median(s.wallMs) / 1000).toFixed(1)} s; ${Math.round(median(s.toFirstRequestMs))} ms to the first request)`,
        ...(c === 64
          ? { target: '≥ 0.9 of C/L', pass: ofBound >= 0.9 && failures.length === 0 }
          : { target: '≥ 0.85 of the bare SDK process', pass: ofSdk >= 0.85 && failures.length === 0 }),
      });
      checks.push({
        figure: `  ratios, C = ${c} (median of ${rounds})`,
        measured: `whole: ${ofBound.toFixed(2)} of C/L, ${ofSdk.toFixed(2)} of the SDK; steady: ${(a.steadyPerSecond / bound).toFixed(2)} of C/L, ${s.steadyPerSecond > 0 ? (a.steadyPerSecond / s.steadyPerSecond).toFixed(2) : '?'} of the SDK`,
        bound: `SDK whole ${(s.wholePerSecond / bound).toFixed(2)}, steady ${(s.steadyPerSecond / bound).toFixed(2)} of C/L`,
      });
      if (b)
        checks.push({
          figure: `  before this change, C = ${c}`,
          measured: `${b.wholePerSecond} items/s whole (${(median(b.wallMs) / 1000).toFixed(1)} s; ${Math.round(median(b.toFirstRequestMs))} ms to the first request), ${b.steadyPerSecond}/s steady`,
          bound: `now / before: whole ${b.wholePerSecond > 0 ? (a.wholePerSecond / b.wholePerSecond).toFixed(2) : '?'}, to the first request ${(median(a.toFirstRequestMs) / Math.max(1, median(b.toFirstRequestMs))).toFixed(2)}`,
        });
    }
  } finally {
    await fake.close();
  }
  return { figures, checks };
}
