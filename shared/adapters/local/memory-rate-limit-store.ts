import {
  type BucketState,
  fullBucket,
  inDebt,
  refill,
  shortfallMs,
  stricter,
  taken,
} from '../../lib/providers/rate-limit/bucket.js';
import type { RateLimit, RateNeed } from '../../model/limits.js';
import type { RateLimitStore } from '../../ports/ports.js';

/** Token buckets in this process's memory: the rate limits of a local run. */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly buckets = new Map<string, BucketState>();
  /** Limits vendors reported, by bucket: every take is held to them too. */
  private readonly learnedBy = new Map<string, RateLimit>();

  constructor(private readonly now: () => number = Date.now) {}

  async take(key: string, limit: RateLimit, need: RateNeed): Promise<number> {
    return this.takeNow(key, limit, need);
  }

  /** {@link take} without the promise (tests with a fake clock read it directly). */
  takeNow(key: string, given: RateLimit, need: RateNeed): number {
    const now = this.now();
    const learned = this.learnedBy.get(key);
    const limit = learned === undefined ? given : stricter(given, learned)!;
    const state = refill(this.buckets.get(key) ?? fullBucket(limit, now), limit, now);
    const wait = shortfallMs(state, limit, need);
    this.buckets.set(key, wait > 0 ? state : taken(state, limit, need));
    return wait;
  }

  async learn(key: string, learned: RateLimit, limit: RateLimit, debt?: RateNeed): Promise<void> {
    this.learnNow(key, learned, limit, debt);
  }

  /** {@link learn} without the promise. */
  learnNow(key: string, learned: RateLimit, given: RateLimit, debt?: RateNeed): void {
    this.learnedBy.set(key, learned);
    if (!debt) return;
    const now = this.now();
    const limit = stricter(given, learned)!;
    const state = refill(this.buckets.get(key) ?? fullBucket(limit, now), limit, now);
    this.buckets.set(key, inDebt(state, limit, debt));
  }

  async learned(key: string): Promise<RateLimit | undefined> {
    return this.learnedBy.get(key);
  }
}
