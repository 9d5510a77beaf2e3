/**
 * The throughput part of the bench alone (section 6 of `bench/run.ts`): the bare SDK and the
 * local runner at each C, against one fake, ratios from the same run.
 *
 *   npx tsx bench/throughput-only.ts [ITEMS] [C…]      (default 8192 items, C = 64 256)
 *
 * With PROFILE_DIR set, the local runner's runs are profiled (`--cpu-prof`) into that folder
 * (summarise one with `npx tsx bench/parts/profile.ts FILE`); the SDK runs are skipped.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPart, startFake } from './parts/spawn.js';

const items = Number(process.argv[2] ?? 8192);
const cs = process.argv.length > 3 ? process.argv.slice(3).map(Number) : [64, 256];
const latencyMs = 200;
const dir = await mkdtemp(join(tmpdir(), 'assay-throughput-'));
const fake = await startFake(['--latency-ms', String(latencyMs)]);
try {
  for (const c of cs) {
    const args = (mode: string) => [
      '--mode',
      mode,
      '--url',
      fake.url,
      '--items',
      String(items),
      '--concurrency',
      String(c),
      '--dir',
      dir,
    ];
    const profileDir = process.env.PROFILE_DIR;
    const sdk = profileDir
      ? { value: undefined, error: 'not run (profiling)' }
      : await runPart<Record<string, number>>('throughput', args('sdk'), { timeoutMs: 180_000 });
    const assay = await runPart<Record<string, number>>('throughput', args('assay'), {
      timeoutMs: 180_000,
      nodeArgs: profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [],
    });
    const ours = assay.value?.itemsPerSecond ?? 0;
    const theirs = sdk.value?.itemsPerSecond ?? 0;
    const bound = c / (latencyMs / 1000);
    process.stdout.write(
      `C = ${c}: assay ${JSON.stringify(assay.value ?? assay.error)}\n        sdk ${JSON.stringify(sdk.value ?? sdk.error)}\n` +
        `        ratios: ${(ours / bound).toFixed(2)} of C/L, ${(ours / Math.max(1, theirs)).toFixed(2)} of the SDK (SDK ${(theirs / bound).toFixed(2)} of C/L)\n`,
    );
  }
} finally {
  await fake.close();
}
