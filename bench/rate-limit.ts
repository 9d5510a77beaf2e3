/**
 * Rate-limit adherence, as `npm run bench` reports it: a run against a loopback fake of the
 * OpenAI API that enforces a requests-per-minute limit with 429 + retry-after (answers after
 * `latencyMs`), with the limit declared in the suite or not. Reports the rate achieved against
 * the limit, the 429s received and the items lost (not scored).
 *
 * `npx tsx bench/rate-limit.ts [items] [concurrency] [rpm]` runs it alone (default 1500 32 3000).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { runLocal } from '../cli/local-run.js';
import { startVendorFake } from '../test/fakes/vendor-fake.js';

export interface RateLimitBenchOptions {
  items: number;
  concurrency: number;
  rpm: number;
  /** Declare the limit in the suite (`run.limits`); false: the run only has 429s to go by. */
  declared: boolean;
  latencyMs?: number;
}

export interface RateLimitBenchResult extends RateLimitBenchOptions {
  seconds: number;
  /** Items scored per second against the limit's per second. */
  ofLimit: number;
  requests: number;
  throttled: number;
  /** 429s as a share of every request the fake received. */
  throttledShare: number;
  lost: number;
}

export async function rateLimitBench(options: RateLimitBenchOptions): Promise<RateLimitBenchResult> {
  const dir = join(tmpdir(), `assay-bench-limits-${process.pid}-${Date.now()}`);
  await mkdir(join(dir, 'prompts'), { recursive: true });
  const latencyMs = options.latencyMs ?? 200;
  const fake = await startVendorFake(
    async () => {
      await delay(latencyMs);
      return { text: '{"label":"polite","reason":"fake"}' };
    },
    { rpm: options.rpm },
  );
  try {
    await writeFile(join(dir, 'prompts', 'tone.md'), 'Tone of the reply.\n\n<reply>\n{reply}\n</reply>\n');
    const rows = Array.from({ length: options.items }, (_, i) => `r${i},Reply number ${i}.,polite`);
    await writeFile(join(dir, 'replies.csv'), `id,reply,human\n${rows.join('\n')}\n`);
    const suitePath = join(dir, 'bench.suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'bench-limits',
        task: 'judge',
        dataset: { path: 'replies.csv', columns: { gold: 'human' } },
        judge: { prompt: 'prompts/tone.md', labels: ['polite', 'neutral', 'rude'] },
        backends: ['openai:gpt-4o-mini'],
        run: {
          concurrency: options.concurrency,
          cache: false,
          ...(options.declared ? { limits: { 'openai:gpt-4o-mini': { rpm: options.rpm } } } : {}),
        },
      }),
    );
    const started = performance.now();
    const { outcome } = await runLocal({
      suitePath,
      outDir: join(dir, 'run'),
      env: fake.env,
      cachePath: join(dir, 'cache.jsonl'),
    });
    const seconds = (performance.now() - started) / 1000;
    if (outcome.status !== 'written') throw new Error('the benchmark run was not aggregated');
    const scored = outcome.report.counts.scored;
    const requests = fake.requests.length + fake.throttled;
    return {
      ...options,
      latencyMs,
      seconds,
      ofLimit: scored / seconds / (options.rpm / 60),
      requests,
      throttled: fake.throttled,
      throttledShare: fake.throttled / requests,
      lost: options.items - scored,
    };
  } finally {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [items = 1500, concurrency = 32, rpm = 3000] = process.argv.slice(2).map(Number);
  for (const declared of [true, false]) {
    const r = await rateLimitBench({ items, concurrency, rpm, declared });
    console.log(
      `${declared ? 'declared  ' : 'undeclared'} ${r.items} items, C=${r.concurrency}, ${r.rpm} rpm: ${r.seconds.toFixed(1)} s, ${r.ofLimit.toFixed(3)} of the limit, ${r.throttled} × 429 (${(100 * r.throttledShare).toFixed(1)}% of ${r.requests} requests), ${r.lost} lost`,
    );
  }
}
