/**
 * The Lambda bundles as CDK builds them (infra/constructs/functions.ts: esbuild, ESM, minified,
 * `module` before `main`, the createRequire banner, the AWS SDK bundled, arm64 Node 20), their
 * sizes, and each one's module init time: importing the bundle in a fresh node process
 * (the composition root runs at import, as at a Lambda cold start; clients are built, no call
 * is made). Median of three imports.
 */
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { EXTERNAL_MODULES } from '../../infra/bundling.js';
import { ROOT } from './data.js';

export const FUNCTIONS = ['ingest', 'worker', 'dead-letter', 'aggregate', 'batch-poller'] as const;

/** What the composition roots read at cold start; no request is made with them. */
const LAMBDA_ENV = {
  BUCKET_NAME: 'assay-bench',
  TABLE_NAME: 'assay-bench',
  ITEMS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/items',
  AGGREGATE_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/aggregate',
  EVENTS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/events',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  POWERTOOLS_METRICS_NAMESPACE: 'Assay',
};

export interface BundleFigures {
  bundleKb: number;
  /** Null when the bundle failed to initialise (`error` says why). */
  initMs: number | null;
  error?: string;
}

/** Builds `functions/<entry>.ts` into `outfile` as CDK builds the Lambda bundle (see the opening comment). */
export async function buildFunctionBundle(
  entry: string,
  outfile: string,
  logLevel: 'warning' | 'silent' = 'warning',
): Promise<void> {
  await build({
    entryPoints: [join(ROOT, 'functions', `${entry}.ts`)],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    mainFields: ['module', 'main'],
    banner: {
      js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);",
    },
    minify: true,
    sourcemap: true,
    sourcesContent: false,
    logLevel,
    external: EXTERNAL_MODULES,
  });
}

export async function bundleFigures(outDir: string): Promise<Record<string, BundleFigures>> {
  const out: Record<string, BundleFigures> = {};
  for (const name of FUNCTIONS) {
    const outfile = join(outDir, name, 'index.mjs');
    await buildFunctionBundle(name, outfile);
    const bundleKb = Math.round((await stat(outfile)).size / 1024);
    try {
      const times: number[] = [];
      for (let i = 0; i < 3; i += 1) times.push(await initMs(outfile));
      out[name] = { bundleKb, initMs: Math.round(times.sort((a, b) => a - b)[1]!) };
    } catch (error) {
      // A minified bundle's error quotes its source line: keep the message's last line only.
      const stderr = String((error as { stderr?: string }).stderr ?? error);
      out[name] = { bundleKb, initMs: null, error: stderr.trim().split('\n').pop()!.slice(0, 300) };
    }
  }
  return out;
}

async function initMs(file: string): Promise<number> {
  const script = `const t = performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now() - t));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH, ...LAMBDA_ENV },
  });
  return Number(stdout);
}
