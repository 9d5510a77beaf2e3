/**
 * What a container holds before its first invocation: each function's bundle built as the CDK
 * stack builds it (esbuild, ESM, minified, the AWS SDK bundled; infra/constructs/functions.ts)
 * and imported in a fresh `node --expose-gc` process with the function's environment, as a
 * Lambda cold start does (the composition root runs at import; no request is made). Measured
 * there: the import's time (Lambda's init phase) and the process's resident memory after a full
 * collection, the figure an invocation's peak heap is added to. Lambda's own runtime client is
 * not in it, and this machine's Node is not Lambda's (nodejs24.x).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FunctionName } from '../../../shared/lib/layout/queues.js';
import { buildFunctionBundle } from '../../parts/bundles.js';

export interface ContainerBaseline {
  bundleKb: number;
  /** The bundle's import, ms (median of three fresh processes). */
  initMs: number;
  /** Resident memory after the import and a full collection, MB. */
  rssMb: number;
  /** Of which V8's used heap, MB. */
  heapMb: number;
  error?: string;
}

const ENTRIES: Record<FunctionName, string> = {
  ingest: 'ingest',
  worker: 'worker',
  deadLetter: 'dead-letter',
  aggregate: 'aggregate',
  batchPoller: 'batch-poller',
  watchdog: 'watchdog',
};

/**
 * Builds and measures each function's bundle; `env` is the environment each function gets
 * (its clients are built from it, never used).
 */
export async function measureBaselines(
  env: Record<FunctionName, NodeJS.ProcessEnv>,
): Promise<Record<FunctionName, ContainerBaseline>> {
  const dir = await mkdtemp(join(tmpdir(), 'assay-bundles-'));
  try {
    const out = {} as Record<FunctionName, ContainerBaseline>;
    for (const [fn, entry] of Object.entries(ENTRIES) as [FunctionName, string][]) {
      const outfile = join(dir, entry, 'index.mjs');
      await buildFunctionBundle(entry, outfile, 'silent');
      const bundleKb = Math.round((await stat(outfile)).size / 1024);
      const runs: { initMs: number; rssMb: number; heapMb: number }[] = [];
      let error: string | undefined;
      for (let i = 0; i < 3 && error === undefined; i++) {
        try {
          runs.push(await importOnce(outfile, env[fn]));
        } catch (thrown) {
          const stderr = String((thrown as { stderr?: string }).stderr ?? thrown);
          error = stderr.trim().split('\n').pop()!.slice(0, 300);
        }
      }
      const median = (pick: (r: (typeof runs)[number]) => number) =>
        runs.length === 0 ? 0 : runs.map(pick).sort((a, b) => a - b)[Math.floor(runs.length / 2)]!;
      out[fn] = {
        bundleKb,
        initMs: Math.round(median((r) => r.initMs)),
        rssMb: Math.round(median((r) => r.rssMb)),
        heapMb: Math.round(median((r) => r.heapMb)),
        ...(error === undefined ? {} : { error }),
      };
    }
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function importOnce(
  file: string,
  env: NodeJS.ProcessEnv,
): Promise<{ initMs: number; rssMb: number; heapMb: number }> {
  const script = [
    'const t = performance.now();',
    `await import(${JSON.stringify(file)});`,
    'const initMs = performance.now() - t;',
    'globalThis.gc();',
    'const m = process.memoryUsage();',
    'process.stdout.write(JSON.stringify({ initMs, rssMb: m.rss / 1048576, heapMb: m.heapUsed / 1048576 }));',
  ].join('\n');
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', '--input-type=module', '-e', script],
    { env: { PATH: process.env.PATH, ...env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } },
  );
  return JSON.parse(stdout) as { initMs: number; rssMb: number; heapMb: number };
}
