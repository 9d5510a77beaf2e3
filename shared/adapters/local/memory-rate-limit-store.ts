import {
  type BucketState,
  fullBucket,
  inDebt,
  refill,
  shortfallMs,
  stricter,
  taken,
} from '../../lib/providers/rate-limit/bucket.js';
import { crowdAfter, leaseFrom, shardLimit, shardsFor } from '../../lib/providers/rate-limit/lease.js';
import type { RateLimit, RateNeed } from '../../model/limits.js';
import type { LeaseAnswer, LeaseAsk, RateLimitStore } from '../../ports/ports.js';

/**
 * Token buckets in this process's memory: the rate limits of a local run (a take per call), and
 * the shards a simulated fleet leases from in tests.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly buckets = new Map<string, BucketState>();
  /** The shards of the buckets leased by a fleet, by `<key>#<shard>`, and how long their lessees waited. */
  private readonly shards = new Map<string, BucketState>();
  private readonly crowds = new Map<string, number>();
  /** Limits vendors reported, by bucket: every take and lease is held to them too. */
  private readonly learnedBy = new Map<string, RateLimit>();

  constructor(private readonly now: () => number = Date.now) {}

  async take(key: string, limit: RateLimit, need: RateNeed): Promise<number> {
    return this.takeNow(key, limit, need);
  }

  /** {@link take} without the promise (tests with a fake clock read it directly). */
  takeNow(key: string, given: RateLimit, need: RateNeed): number {
    const now = this.now();
    const limit = this.limitOf(key, given);
    const state = refill(this.buckets.get(key) ?? fullBucket(limit, now), limit, now);
    const wait = shortfallMs(state, limit, need);
    this.buckets.set(key, wait > 0 ? state : taken(state, limit, need));
    return wait;
  }

  async lease(key: string, limit: RateLimit, ask: LeaseAsk): Promise<LeaseAnswer> {
    return this.leaseNow(key, limit, ask);
  }

  /** {@link lease} without the promise. */
  leaseNow(key: string, given: RateLimit, { shard, want, waitedMs }: LeaseAsk): LeaseAnswer {
    const id = `${key}#${shard}`;
    const limit = shardLimit(this.limitOf(key, given), shardsFor(given));
    const outcome = leaseFrom(this.shards.get(id), limit, want, this.now(), shard);
    if ('waitMs' in outcome) return { waitMs: outcome.waitMs, crowdMs: this.crowds.get(id) ?? 0 };
    this.shards.set(id, outcome.state);
    this.crowds.set(id, crowdAfter(this.crowds.get(id), waitedMs));
    return { lease: outcome.lease };
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
    // A fleet's shards share the debt equally.
    const shards = shardsFor(limit);
    const part = shardLimit(limit, shards);
    const share = { requests: debt.requests / shards, tokens: debt.tokens / shards };
    for (let shard = 0; shard < shards; shard++) {
      const id = `${key}#${shard}`;
      const current = refill(this.shards.get(id) ?? fullBucket(part, now), part, now);
      this.shards.set(id, inDebt(current, part, share));
    }
  }

  async learned(key: string): Promise<RateLimit | undefined> {
    return this.learnedBy.get(key);
  }

  private limitOf(key: string, given: RateLimit): RateLimit {
    const learned = this.learnedBy.get(key);
    return learned === undefined ? given : stricter(given, learned)!;
  }
}
