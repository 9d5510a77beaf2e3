/**
 * What the rate limiter costs a run that declares no limit: a GEC run of 4,096 items at
 * C = 256 against a loopback OpenAI-compatible fake answering after 200 ms (`vllm:` preset,
 * cache off), alternately with the limiter and with it switched off (the process's
 * `RateLimiters.for` patched to hand out none, here only), five times each. Prints each run's
 * items per second and CPU milliseconds per item (the fake runs in the same process).
 *
 * `npx tsx bench/limiter-overhead.ts [pairs]`
 */
import { createReadStream } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { runLocal } from '../cli/local-run.js';
import { readRows } from '../shared/lib/datasets/read.js';
import { RateLimiters } from '../shared/lib/providers/rate-limit/limiters.js';
import { startVendorFake } from '../test/fakes/vendor-fake.js';

const GOLD = resolve(import.meta.dirname, '..', 'examples', 'data', 'gold_tp_fp3_fp2_fp1_en.csv');

const pairs = Number(process.argv[2] ?? 5);
const dir = join(tmpdir(), `assay-limiter-overhead-${process.pid}`);
await mkdir(dir, { recursive: true });
const records: Record<string, string>[] = [];
for await (const row of readRows(createReadStream(GOLD), 'csv')) if (row.record) records.push(row.record);
const columns = Object.keys(records[0]!);
const quote = (f: string) => `"${f.replaceAll('"', '""')}"`;
const lines = [columns.join(',')];
let idx = 0;
for (let copy = 0; copy < 16; copy++)
  for (const record of records)
    lines.push(columns.map((c) => (c === 'idx' ? String(idx++) : quote(record[c] ?? ''))).join(','));
await writeFile(join(dir, 'data.csv'), `${lines.join('\n')}\n`);

const fake = await startVendorFake(async () => {
  await delay(200);
  return { text: '{"label":"TP","reason":"fake"}' };
});
const limiterFor = RateLimiters.prototype.for;

async function once(name: string, withLimiter: boolean) {
  RateLimiters.prototype.for = withLimiter ? limiterFor : ((() => undefined) as never);
  const suitePath = join(dir, `${name}.suite.json`);
  await writeFile(
    suitePath,
    JSON.stringify({
      version: 1,
      name,
      task: 'gec',
      judge: 'feedback',
      method: 'baseline',
      dataset: { path: 'data.csv' },
      backends: ['vllm:bench-model'],
      run: { concurrency: 256, cache: false },
    }),
  );
  const cpu = process.cpuUsage();
  const started = performance.now();
  const { outcome } = await runLocal({
    suitePath,
    env: { VLLM_BASE_URL: `${fake.url}/v1` },
    fresh: true,
    runsDir: join(dir, 'runs'),
    cachePath: join(dir, 'cache.jsonl'),
  });
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const scored = outcome.status === 'written' ? outcome.report.counts.scored : 0;
  return {
    limiter: withLimiter,
    itemsPerSecond: Math.round(scored / seconds),
    cpuMsPerItem: Number(((used.user + used.system) / 1000 / scored).toFixed(3)),
    scored,
  };
}

try {
  for (let i = 0; i < pairs; i++) {
    console.log(JSON.stringify(await once(`off-${i}`, false)));
    console.log(JSON.stringify(await once(`on-${i}`, true)));
  }
} finally {
  RateLimiters.prototype.for = limiterFor;
  await fake.close();
  await rm(dir, { recursive: true, force: true });
}
