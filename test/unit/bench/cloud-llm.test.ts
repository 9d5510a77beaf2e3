/**
 * The capacity model's stand-in vendor (bench/cloud/model/llm.ts): its latency has the tail it
 * promises, and a burst refuses calls with 429s the product's retries understand.
 */
import { describe, expect, it } from 'vitest';
import { lognormal, padded, StandInVendor, sigmaFor } from '../../../bench/cloud/model/llm.js';
import { mulberry32 } from '../../../shared/lib/metrics/stats.js';
import { SimProvider } from '../../../shared/lib/providers/sim.js';
import { ProviderError } from '../../../shared/model/errors.js';

describe('the stand-in vendor', () => {
  it('draws latencies whose p99 is five times the median', () => {
    const random = mulberry32(3);
    const sigma = sigmaFor(5);
    const draws = Array.from({ length: 50_000 }, () => lognormal(1000, sigma, random(), random())).sort(
      (a, b) => a - b,
    );
    const median = draws[draws.length / 2]!;
    const p99 = draws[Math.floor(0.99 * draws.length)]!;
    expect(median).toBeGreaterThan(950);
    expect(median).toBeLessThan(1050);
    expect(p99 / median).toBeGreaterThan(4.5);
    expect(p99 / median).toBeLessThan(5.5);
  });

  it('goes through the cache and limiter as a vendor (not simulated), answers as the simulator, and refuses in its burst', async () => {
    const tally = { calls: 0, refused: 0, latenciesMs: [] as number[] };
    let now = 0;
    const vendor = new StandInVendor(
      new SimProvider('gpt-4o-mini', { latencyMs: 0 }),
      {
        medianMs: 0.01,
        seed: 1,
        burst: { fromMs: 100, forMs: 100, share: 1, retryAfterMs: 500 },
        reported: { rpm: 10, tpm: 100 },
      },
      tally,
      () => now,
    );
    expect(vendor.simulated).toBe(false);
    const answer = await vendor.complete({ model: '', prompt: 'hello' });
    expect(answer.simulated).toBe(true);
    expect(answer.learnedLimits).toEqual({ requests: { limit: 10 }, tokens: { limit: 100 } });
    now = 150;
    const refused = await vendor.complete({ model: '', prompt: 'hello' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ProviderError);
    expect(refused).toMatchObject({ status: 429, kind: 'rate_limit', retryAfterMs: 500, retryable: true });
    expect(tally).toMatchObject({ calls: 1, refused: 1 });
  });
});

describe('a workload with large results', () => {
  it('grows a JSON answer’s longest string field (its reason) to the size asked, keeping it JSON', () => {
    const text = padded(JSON.stringify({ label: 'correct', reason: 'fine' }), 20 * 1024);
    const answer = JSON.parse(text) as { label: string; reason: string };
    expect(answer.label).toBe('correct');
    expect(answer.reason.startsWith('fine lorem')).toBe(true);
    expect(Buffer.byteLength(text)).toBeGreaterThanOrEqual(20 * 1024);
    expect(Buffer.byteLength(text)).toBeLessThan(20 * 1024 + 16);
    expect(padded('short', 3)).toBe('short');
  });
});
