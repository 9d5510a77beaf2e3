/**
 * A `concurrency` declared in `run.limits` caps the calls in flight to the backends its key
 * names, together: under a wildcard (`llamacpp:*`) every model of the server shares the slots,
 * an exact key has its own, and a call takes its slot only while its attempt is out. Driven by
 * attempts that answer when the test says, so no clock is involved.
 */
import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../../shared/adapters/local/memory-rate-limit-store.js';
import { RateLimiters } from '../../../shared/lib/providers/rate-limit/limiters.js';
import { parseLimitSpec, suiteLimitsById } from '../../../shared/lib/providers/rate-limit/spec.js';
import type { CompletionRequest } from '../../../shared/model/provider.js';
import { suite } from '../../helpers.js';

const request: CompletionRequest = { model: 'm', prompt: 'p' };

/** Every pending callback and microtask run (a macrotask turn: the calls waiting have settled). */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Attempts that stay out until the test answers them; `out` is how many are out now, `peak` the most. */
function heldAttempts() {
  const answers: (() => void)[] = [];
  const state = { out: 0, peak: 0 };
  const attempt = () =>
    new Promise<string>((resolve) => {
      state.out += 1;
      state.peak = Math.max(state.peak, state.out);
      answers.push(() => {
        state.out -= 1;
        resolve('ok');
      });
    });
  return { attempt, state, answerOne: () => answers.shift()!() };
}

describe('per-backend concurrency', () => {
  it('a wildcard key: all the models it names share its slots; the others wait and go in order', async () => {
    const limiters = new RateLimiters({ store: new MemoryRateLimitStore() });
    const limits = suiteLimitsById({ limits: { 'llamacpp:*': { concurrency: 2 } } });
    const { attempt, state, answerOne } = heldAttempts();
    const calls = ['llamacpp:a', 'llamacpp:b', 'llamacpp:a', 'llamacpp:b', 'llamacpp:c'].map((id) =>
      limiters.for(id, limits, 16).run(request, attempt),
    );
    await settled();
    expect(state.out).toBe(2);
    answerOne();
    await settled();
    expect(state.out).toBe(2);
    for (let i = 0; i < 4; i++) {
      answerOne();
      await settled();
    }
    expect(await Promise.all(calls)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    expect(state.peak).toBe(2);
    expect(limiters.slots('llamacpp:*')).toMatchObject({ peak: 2, inUse: 0 });
  });

  it('an exact key wins over the wildcard and has slots of its own; no key, no cap', async () => {
    const limiters = new RateLimiters({ store: new MemoryRateLimitStore() });
    const limits = suiteLimitsById({
      limits: { 'llamacpp:*': { concurrency: 3 }, 'llamacpp:big': { concurrency: 1 } },
    });
    const big = heldAttempts();
    const other = heldAttempts();
    const free = heldAttempts();
    const calls = [
      ...[1, 2, 3].map(() => limiters.for('llamacpp:big', limits, 16).run(request, big.attempt)),
      ...[1, 2, 3, 4].map(() => limiters.for('llamacpp:small', limits, 16).run(request, other.attempt)),
      ...[1, 2, 3, 4].map(() => limiters.for('vllm:small', limits, 16).run(request, free.attempt)),
    ];
    await settled();
    expect([big.state.out, other.state.out, free.state.out]).toEqual([1, 3, 4]);
    for (let i = 0; i < 3; i++) {
      big.answerOne();
      await settled();
    }
    other.answerOne();
    await settled();
    expect(other.state.out).toBe(3);
    for (let i = 0; i < 3; i++) other.answerOne();
    for (let i = 0; i < 4; i++) free.answerOne();
    await Promise.all(calls);
    expect([big.state.peak, other.state.peak, free.state.peak]).toEqual([1, 3, 4]);
  });

  it('a slot is given back when the attempt fails, and a concurrency alone sets no rate', async () => {
    const limiters = new RateLimiters({ store: new MemoryRateLimitStore() });
    const limits = suiteLimitsById({ limits: { 'openai-compatible:local/*': { concurrency: 1 } } });
    const limiter = limiters.for('openai-compatible:local/llama-3', limits, 8);
    expect(limiter.limit).toBeUndefined();
    await expect(limiter.run(request, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limiter.run(request, async () => 'next')).resolves.toBe('next');
    expect(limiters.slots('openai-compatible:local/*')).toMatchObject({ inUse: 0, peak: 1 });
  });

  it('ASSAY_LIMITS takes wildcard keys too; a suite holds the slots, the environment the rates', () => {
    const limiters = new RateLimiters({
      store: new MemoryRateLimitStore(),
      env: { ASSAY_LIMITS: 'llamacpp:*=600rpm;llamacpp:big=60rpm' },
    });
    const limits = suiteLimitsById({ limits: { 'llamacpp:*': { concurrency: 2, tpm: 10_000 } } });
    expect(limiters.for('llamacpp:small', limits).limit).toEqual({ rpm: 600, tpm: 10_000 });
    expect(limiters.for('llamacpp:big', limits).limit).toEqual({ rpm: 60, tpm: 10_000 });
    expect(limiters.for('vllm:small', limits).limit).toBeUndefined();
    expect(limiters.for('llamacpp:big', limits).slots).toBe(limiters.for('llamacpp:small', limits).slots);
  });

  it('the suite schema takes concurrency beside rpm and tpm, under ids and wildcards', () => {
    const ok = suite({
      run: {
        limits: {
          'openai-compatible:local/*': { concurrency: 2 },
          'llamacpp:*': { rpm: 600, concurrency: 4 },
        },
      },
    });
    expect(ok.run.limits?.['openai-compatible:local/*']).toEqual({ concurrency: 2 });
    expect(() => suite({ run: { limits: { 'llamacpp:*': {} } } })).toThrow(/give rpm, tpm, concurrency/);
    expect(suite({ run: { limits: { 'openai-compatible:*': { concurrency: 4 } } } }).run.limits).toEqual({
      'openai-compatible:*': { concurrency: 4 },
    });
    expect(() => suite({ run: { limits: { 'nosuch:*': { concurrency: 1 } } } })).toThrow(
      /wildcard of no known vendor/,
    );
    expect(() => parseLimitSpec('nosuch:*=5rpm')).toThrow(/wildcard of no known vendor/);
    expect(parseLimitSpec('openai-compatible:local/*=5rpm')).toEqual({
      'openai-compatible:local/*': { rpm: 5 },
    });
    expect(() => suite({ run: { limits: { 'llamacpp:*': { concurrency: 0 } } } })).toThrow(/concurrency/);
    expect(() => suite({ run: { limits: { 'llamacpp:*': { concurrency: 1.5 } } } })).toThrow(/concurrency/);
  });
});
