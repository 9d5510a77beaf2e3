/**
 * The aggregation part of the bench on its own: a 10K-row local run (simulator, zero latency),
 * replicated into 100K and 1M results, each aggregated into reports in a child process of its
 * own (peak RSS sampled from /proc, as `npm run bench` does).
 *
 *   npx tsx bench/aggregate.ts [--rows 100000,1000000] [--timeout-s 300]
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { replicatedRun, runPart } from './parts/spawn.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000,1000000' },
    'timeout-s': { type: 'string', default: '300' },
    dir: { type: 'string' },
  },
});
const timeoutMs = Number(values['timeout-s']) * 1000;
// `--dir` of an earlier invocation reuses its seed run and replicated folders (same data, same reports).
const dir = values.dir ?? (await mkdtemp(join(tmpdir(), 'assay-aggregate-')));
for (const rows of values.rows.split(',').map(Number)) {
  const out = await replicatedRun(dir, rows, 'aggregate', { seedTimeoutMs: 240_000 });
  const aggregated = await runPart<{ ms: number }>(
    'local-scale',
    ['--mode', 'report', '--rows', String(rows), '--dir', dir, '--out', out],
    { timeoutMs },
  );
  process.stdout.write(
    `${JSON.stringify({ rows, ms: aggregated.value?.ms, peakRssMb: aggregated.peakRssMb, error: aggregated.error, reports: join(dir, 'reports-again') })}\n`,
  );
}
