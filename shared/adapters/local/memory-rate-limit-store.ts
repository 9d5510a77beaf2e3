import { type BucketState, fullBucket, refill, shortfallMs, taken } from '../../lib/providers/rate-limit.js';
import type { RateLimit, RateNeed } from '../../model/limits.js';
import type { RateLimitStore } from '../../ports/ports.js';

/** Token buckets in this process's memory: the rate limits of a local run. */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly buckets = new Map<string, BucketState>();

  constructor(private readonly now: () => number = Date.now) {}

  async take(key: string, limit: RateLimit, need: RateNeed): Promise<number> {
    return this.takeNow(key, limit, need);
  }

  /** {@link take} without the promise (tests with a fake clock read it directly). */
  takeNow(key: string, limit: RateLimit, need: RateNeed): number {
    const now = this.now();
    const state = refill(this.buckets.get(key) ?? fullBucket(limit, now), limit, now);
    const wait = shortfallMs(state, limit, need);
    this.buckets.set(key, wait > 0 ? state : taken(state, limit, need));
    return wait;
  }
}
