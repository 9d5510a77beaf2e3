/**
 * The adaptive window under faults, on a simulated clock: a pool of workers calls one model
 * through `callModel` (retries, the model's limiter) while a fault schedule answers some
 * attempts with a 429 and lets some hang until the client's timeout. Nothing here reads the
 * wall clock: every latency is drawn, every wait is a simulated timer.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../../shared/adapters/local/memory-rate-limit-store.js';
import { callModel } from '../../../shared/lib/providers/call.js';
import { ModelLimiter } from '../../../shared/lib/providers/rate-limit/limiter.js';
import { RateLimiters } from '../../../shared/lib/providers/rate-limit/limiters.js';
import { ProviderError } from '../../../shared/model/errors.js';
import type { Completion, CompletionRequest, LlmProvider } from '../../../shared/model/provider.js';
import { SimClock } from '../../fakes/sim-clock.js';

interface Schedule {
  /** Share of attempts answered 429 (retry-after 1 s) after 40 ms. */
  throttled: number;
  /** Share of attempts that never answer: the client gives up at its timeout. */
  hung: number;
}

/** A uniform draw in [0, 1) fixed by its parts: the same item and attempt meet the same fault in every run. */
function draw(...parts: (string | number)[]): number {
  return createHash('sha256').update(parts.join('/')).digest().readUInt32BE(0) / 2 ** 32;
}

interface Outcome {
  simulatedMs: number;
  failed: number;
  throttles: number;
  stalls: number;
  /** The smallest window the limiter allowed during the run. */
  narrowest: number;
  /** The longest stretch (ms) in which no attempt was sent. */
  longestSilenceMs: number;
}

async function simulate(opts: {
  items: number;
  concurrency: number;
  schedule: Schedule;
  timeoutMs?: number;
  /** A real limit: the server answers 429 (retry-after 200 ms) past this many calls at once. */
  serverSlots?: number;
}): Promise<Outcome & { attempts: number }> {
  const clock = new SimClock();
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const limiters = new RateLimiters({
    store: new MemoryRateLimitStore(clock.now),
    now: clock.now,
    sleep: clock.sleep,
    timers: clock,
  });
  const limiter: ModelLimiter = limiters.for('openai:m', undefined, opts.concurrency);
  let narrowest = limiter.aimd.allowed;
  let lastSent = 0;
  let longestSilenceMs = 0;
  const attempts = new Map<number, number>();
  let serving = 0;
  let total = 0;

  const provider: LlmProvider = {
    id: 'openai:m',
    simulated: false,
    complete(request: CompletionRequest): Promise<Completion> {
      const item = Number(request.prompt);
      const attempt = (attempts.get(item) ?? 0) + 1;
      attempts.set(item, attempt);
      // A gap with items still to start (not the tail, when only hung calls are left).
      if (next < opts.items) longestSilenceMs = Math.max(longestSilenceMs, clock.now() - lastSent);
      lastSent = clock.now();
      narrowest = Math.min(narrowest, limiter.aimd.allowed);
      const fault = draw('fault', item, attempt);
      total += 1;
      return new Promise((resolve, reject) => {
        if (opts.serverSlots !== undefined && serving >= opts.serverSlots) {
          clock.setTimeout(
            () => reject(new ProviderError('too many requests', 'rate_limit', 'openai:m', 429, 200)),
            40,
          );
        } else if (fault < opts.schedule.hung) {
          clock.setTimeout(
            () => reject(new ProviderError('request timed out', 'timeout', 'openai:m')),
            timeoutMs,
          );
        } else if (draw('throttle', item, attempt) < opts.schedule.throttled) {
          clock.setTimeout(
            () => reject(new ProviderError('rate limited', 'rate_limit', 'openai:m', 429, 1_000)),
            40,
          );
        } else {
          const latencyMs = 300 + Math.floor(1_400 * draw('latency', item, attempt));
          serving += 1;
          clock.setTimeout(() => {
            serving -= 1;
            resolve({
              text: 'ok',
              finishReason: 'stop',
              usage: { input: 10, output: 2, cached: 0 },
              costUsd: 0.0001,
              latencyMs,
              cached: false,
              simulated: false,
              providerId: 'openai:m',
            });
          }, latencyMs);
        }
      });
    },
  };

  let next = 0;
  let failed = 0;
  let jitter = 0;
  const lane = async () => {
    while (next < opts.items) {
      const item = next++;
      try {
        await callModel(
          provider,
          { model: 'm', prompt: String(item) },
          {
            limiter,
            maxAttempts: 8,
            sleep: clock.sleep,
            random: () => draw('jitter', jitter++),
          },
        );
      } catch {
        failed += 1;
      }
    }
  };
  const run = Promise.all(Array.from({ length: opts.concurrency }, lane));
  await clock.runUntil(run, 24 * 3_600_000);
  return {
    simulatedMs: clock.now(),
    failed,
    throttles: limiter.throttles,
    stalls: limiter.stalls,
    narrowest,
    longestSilenceMs,
    attempts: total,
  };
}

describe('the adaptive window under 429s and hung calls (simulated clock)', { timeout: 60_000 }, () => {
  const items = 12_000;
  const concurrency = 64;

  it('4% 429s + 0.3% hangs at concurrency 64 finish within 1.3x the time of the hangs alone', async () => {
    const hangsAlone = await simulate({ items, concurrency, schedule: { throttled: 0, hung: 0.003 } });
    const both = await simulate({ items, concurrency, schedule: { throttled: 0.04, hung: 0.003 } });

    expect(hangsAlone.failed).toBe(0);
    expect(both.failed).toBe(0);
    expect(both.throttles).toBeGreaterThan(items * 0.03);
    // The window never falls below an eighth of the concurrency…
    expect(both.narrowest).toBeGreaterThanOrEqual(concurrency / 8);
    // …a hung call gives its slot up instead of stopping the model…
    expect(both.stalls).toBeGreaterThan(0);
    expect(both.longestSilenceMs).toBeLessThan(5_000);
    // …and the run is barely slower than with hangs alone.
    expect(both.simulatedMs).toBeLessThan(1.3 * hangsAlone.simulatedMs);
  });

  it('still backs off under a real limit: a server that serves 16 calls at once', async () => {
    const out = await simulate({
      items: 4_000,
      concurrency,
      schedule: { throttled: 0, hung: 0 },
      serverSlots: 16,
    });

    expect(out.failed).toBe(0);
    // 64 workers against 16 slots: without backing off three calls in four would be refused.
    expect(out.throttles / out.attempts).toBeLessThan(0.2);
    // …and it does not back off below what the server serves: 4,000 calls of 1 s on average
    // through 16 slots take 250 s at best.
    expect(out.simulatedMs).toBeLessThan(1.3 * 250_000);
  });

  it('a hung call gives its slot to a waiting call once it is past the latency budget', async () => {
    const clock = new SimClock();
    const limiter = new ModelLimiter('openai:m', undefined, {
      store: new MemoryRateLimitStore(clock.now),
      maxConcurrency: 1,
      now: clock.now,
      sleep: clock.sleep,
      timers: clock,
    });
    const request = { model: 'm', prompt: 'x' };
    // One answered call teaches the limiter the usual latency (1 s): the budget is then 5 s.
    await clock.runUntil(limiter.run(request, () => clock.sleep(1_000)));
    expect(limiter.latencyBudgetMs).toBe(5_000);

    const start = clock.now();
    const hung = limiter.run(request, () => clock.sleep(60_000));
    let waitedMs = -1;
    const waiting = limiter.run(request, async () => {
      waitedMs = clock.now() - start;
    });
    await clock.runUntil(waiting);
    expect(waitedMs).toBe(5_000);
    expect(limiter.stalls).toBe(1);
    expect(limiter.active).toBe(0);
    expect(limiter.overdueCalls).toBe(1);
    await clock.runUntil(hung);
    // The overdue call ending frees nothing twice.
    expect(limiter.active).toBe(0);
    expect(limiter.overdueCalls).toBe(0);
    // Nothing was left armed.
    expect(clock.pending).toBe(0);
  });
});
