/**
 * The whole-process part of the bench alone: `assay run` as a process beside a bare `openai`
 * SDK pool as a process, against one 200 ms fake, ratios from the same run.
 *
 *   npx tsx bench/process-only.ts [ITEMS] [ROUNDS] [C…]     (default 8192 items, 1 round, C = 64 256)
 *
 * With BEFORE=<folder> (another checkout, built, with its node_modules), that version's
 * `assay run` is measured in the same rounds, and the ratios now/before are printed.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processThroughput } from './parts/process-throughput.js';
import { renderTable } from './parts/table.js';

const items = Number(process.argv[2] ?? 8192);
const rounds = Number(process.argv[3] ?? 1);
const concurrencies = process.argv.length > 4 ? process.argv.slice(4).map(Number) : [64, 256];
const dir = await mkdtemp(join(tmpdir(), 'assay-process-'));
try {
  const { figures, checks } = await processThroughput(dir, {
    items,
    concurrencies,
    latencyMs: 200,
    rounds,
    before: process.env.BEFORE,
  });
  process.stdout.write(`${renderTable(checks)}\n\n${JSON.stringify(figures, null, 2)}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
