/**
 * One model's bucket as one container of a fleet sees it (see `lease.ts` for the design): the
 * calls wait in order, each goes when the stretches of refill this container leased cover it,
 * and a lease is asked for (one at a time) when what is held falls short of what waits.
 *
 * A refused lease is tried again once the shard said it has room, plus a random wait, on
 * another shard when there is one. The random wait's range doubles with each refusal in a row
 * (up to {@link MAX_REFUSED_JITTER_MS}) and is at least twice the shard's running average of how
 * long its lessees were turned away over {@link CROWD_POLLS}: however many containers a busy
 * bucket turns away, they ask about that many times per lease between them, not each every few
 * seconds. A fresh container asks first at a random point of {@link FIRST_LEASE_SPREAD_MS}, so
 * a fleet that starts together does not write to an empty bucket all at once.
 *
 * When the store cannot answer, the calls the leases do not cover keep to the container's
 * share of the limit ({@link StoreFallback}) until it answers again.
 */
import type { RateLimit, RateNeed } from '../../../model/limits.js';
import type { RateLimitStore } from '../../../ports/ports.js';
import type { Sleep } from '../retry.js';
import { refillPerMs } from './bucket.js';
import type { StoreFallback } from './fallback.js';
import { DUST, Holdings, LEASE_AHEAD_MS, LEASE_SPAN_MS, shardLimit, shardsFor } from './lease.js';

/** A fresh container's first lease waits a random part of this (ms). */
export const FIRST_LEASE_SPREAD_MS = 1_000;
/** After a refused lease, a random wait of up to this (ms) on top of the shard's own, doubled for each refusal in a row… */
export const REFUSED_JITTER_MS = 1_000;
/** …up to this (ms). */
export const MAX_REFUSED_JITTER_MS = 60_000;
/** About how many times the containers a shard turns away ask it per lease it hands out. */
export const CROWD_POLLS = 4;
/** What is left of a longer round trip than the latest, lease by lease. */
const ROUND_TRIP_FADE = 0.9;

interface Waiter {
  need: RateNeed;
  resolve: () => void;
  signal?: AbortSignal;
  onAbort?: () => void;
  /** Admitted, or given up (its signal aborted). */
  gone: boolean;
}

export interface FleetBucketOptions {
  key: string;
  store: RateLimitStore;
  now: () => number;
  sleep: Sleep;
  random: () => number;
  fallback: StoreFallback;
}

/** One model's share of a fleet's bucket, in one container. */
export class FleetBucket {
  /** Leases granted and refused, and store failures (for reports and tests). */
  readonly counts = { leases: 0, refused: 0, failed: 0 };
  private readonly holdings = new Holdings();
  private readonly queue: Waiter[] = [];
  /** What the waiting calls need between them. */
  private readonly queued: RateNeed = { requests: 0, tokens: 0 };
  private limit: RateLimit = {};
  private pumping = false;
  private leasing: Promise<void> | undefined;
  private started = false;
  /** No lease before this (epoch ms): a refusal's wait, or a blip's. */
  private nextLeaseAt = 0;
  /** Refused leases in a row, and since when (epoch ms). */
  private refusedInRow = 0;
  private refusedSince = 0;
  /** When each shard that refused said it will have room. */
  private readonly roomAt = new Map<number, number>();
  /** How long a lease takes to come back (ms): the latest, or a slowly fading longer one. */
  private roundTripMs = 0;

  constructor(private readonly o: FleetBucketOptions) {}

  /** Resolves when a call needing `need` under `limit` may go. */
  admit(limit: RateLimit, need: RateNeed, signal?: AbortSignal): Promise<void> {
    this.limit = limit;
    if (this.queue.length === 0) {
      const now = this.o.now();
      const at = this.holdings.goAt(need, limit, now);
      if (at !== undefined && at <= now) {
        this.holdings.spend(need, limit, now);
        return Promise.resolve();
      }
    }
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const waiter: Waiter = { need, resolve, signal, gone: false };
      if (signal) {
        waiter.onAbort = () => {
          this.drop(waiter);
          reject(signal.reason);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.queue.push(waiter);
      this.queued.requests += need.requests;
      this.queued.tokens += need.tokens;
      if (!this.pumping) void this.pump();
    });
  }

  /** Hands out what the leases (or, while the store is down, the local share) allow, in order. */
  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      for (;;) {
        while (this.queue[0]?.gone) this.queue.shift();
        const head = this.queue[0];
        if (!head) return;
        const now = this.o.now();
        const limit = this.limit;
        const at = this.holdings.goAt(head.need, limit, now);
        if (at !== undefined && at <= now) {
          this.holdings.spend(head.need, limit, now);
          this.release(head);
          continue;
        }
        const { fallback } = this.o;
        if (at === undefined && fallback.share) {
          // Closed from the fleet's retry moment until this container's try is answered.
          const open = fallback.shareOpen(now);
          const wait = open ? fallback.share.wait(limit, head.need, now) : undefined;
          if (wait === 0) {
            this.release(head);
            continue;
          }
          this.maybeLease(now, false);
          if (this.leasing) await this.leasing;
          else
            await this.pause(
              open ? Math.min(wait!, fallback.shareClosesAt - now) : fallback.nextRetryAt - now,
            );
          continue;
        }
        this.maybeLease(now, at !== undefined);
        if (at !== undefined) await this.pause(at - now);
        else if (this.leasing) await this.leasing;
        else await this.pause(this.leaseGate() - now);
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Sleeps `ms` (at least 1), or until the lease out comes back. */
  private pause(ms: number): Promise<void> {
    const sleep = this.o.sleep(Math.max(1, Math.ceil(ms)));
    return this.leasing ? Promise.race([sleep, this.leasing]) : sleep;
  }

  /** When the next lease may be asked for. */
  private leaseGate(): number {
    return this.o.fallback.share ? this.o.fallback.nextRetryAt : this.nextLeaseAt;
  }

  /**
   * Asks for a lease when what is held falls short of what waits, and the store may be asked.
   * While the first call is covered, only once what is held reaches less than a lease's span
   * short of {@link LEASE_AHEAD_MS}: a shard would refuse before that, the calls have enough to go on,
   * and leases come about a second's worth at a time.
   */
  private maybeLease(now: number, headCovered: boolean): void {
    if (this.leasing) return;
    if (headCovered && this.holdings.reach(this.limit, now) - now >= LEASE_AHEAD_MS - LEASE_SPAN_MS) return;
    if (this.want(now) === undefined) return;
    const fallback = this.o.fallback;
    if (fallback.share ? !fallback.claimRetry(now) : now < this.nextLeaseAt) return;
    this.leasing = this.lease().finally(() => {
      this.leasing = undefined;
    });
  }

  /**
   * What to lease: per axis, what the waiting calls need beyond what is held (in whole units),
   * at most {@link LEASE_SPAN_MS} of a shard's rate unless the first call alone needs more. The
   * shard hands out a stretch long enough for the axis that needs the longest.
   *
   * What is held counts as it will be when the lease comes back: refill lost during the round
   * trip cannot help. Counted as it is now, a call needing more than a short stretch holds (a
   * call of 1,000 tokens on a lease sized for its request) would lease the rest, lose the first
   * part while the second was on its way, lease that again, and so on forever.
   */
  private want(now: number): RateNeed | undefined {
    const head = this.queue.find((waiter) => !waiter.gone);
    if (!head) return undefined;
    const limit = this.limit;
    const shard = shardLimit(limit, shardsFor(limit));
    const held = this.holdings.supply(now + this.roundTripMs);
    const axis = (queued: number, have: number, first: number, perMinute: number | undefined) => {
      if (perMinute === undefined || queued - have <= DUST) return 0;
      const most = Math.max(1, Math.floor(refillPerMs(perMinute) * LEASE_SPAN_MS));
      return Math.ceil(Math.min(queued - have, Math.max(most, first - have)));
    };
    const want = {
      requests: axis(this.queued.requests, held.requests, head.need.requests, shard.rpm),
      tokens: axis(this.queued.tokens, held.tokens, head.need.tokens, shard.tpm),
    };
    return want.requests > 0 || want.tokens > 0 ? want : undefined;
  }

  private async lease(): Promise<void> {
    const { now, random, fallback } = this.o;
    if (!this.started) {
      this.started = true;
      await this.o.sleep(Math.floor(random() * FIRST_LEASE_SPREAD_MS));
    }
    const want = this.want(now());
    if (!want) return;
    const limit = this.limit;
    const shards = shardsFor(limit);
    const asked = now();
    const shard = this.pickShard(shards, asked);
    const waitedMs = this.refusedInRow === 0 ? 0 : asked - this.refusedSince;
    try {
      const answer = await this.o.store.lease(this.o.key, limit, { shard, want, waitedMs });
      const at = now();
      fallback.answered(at);
      this.roundTripMs = Math.max(at - asked, this.roundTripMs * ROUND_TRIP_FADE);
      if ('lease' in answer) {
        this.holdings.add(answer.lease, at);
        this.counts.leases += 1;
        this.refusedInRow = 0;
        this.nextLeaseAt = 0;
        return;
      }
      this.counts.refused += 1;
      if (this.refusedInRow === 0) this.refusedSince = asked;
      this.refusedInRow += 1;
      this.roomAt.set(shard, at + answer.waitMs);
      const jitter = Math.max(
        Math.min(MAX_REFUSED_JITTER_MS, REFUSED_JITTER_MS * 2 ** (this.refusedInRow - 1)),
        (2 * answer.crowdMs) / CROWD_POLLS,
      );
      this.nextLeaseAt = this.earliestRoom(shards, at) + random() * jitter;
    } catch (error) {
      this.counts.failed += 1;
      const at = now();
      // Other containers may hold leases as far ahead as a shard hands them out (this one, a
      // longer one for a large call): the share starts after them, or the two would add up.
      const leasesEnd = Math.max(at + LEASE_AHEAD_MS + LEASE_SPAN_MS, this.holdings.endsAt(at));
      this.nextLeaseAt = fallback.failed(error, limit, at, leasesEnd);
    }
  }

  /** A random shard among those that did not say they are full until later (any, if all did). */
  private pickShard(shards: number, now: number): number {
    const open: number[] = [];
    for (let shard = 0; shard < shards; shard++) if ((this.roomAt.get(shard) ?? 0) <= now) open.push(shard);
    const from = open.length > 0 ? open : Array.from({ length: shards }, (_, shard) => shard);
    return from[Math.min(from.length - 1, Math.floor(this.o.random() * from.length))]!;
  }

  /** The earliest time some shard has room, as far as this container knows (`now` for one it has not asked). */
  private earliestRoom(shards: number, now: number): number {
    let earliest = Number.POSITIVE_INFINITY;
    for (let shard = 0; shard < shards; shard++) earliest = Math.min(earliest, this.roomAt.get(shard) ?? now);
    return Math.max(now, earliest);
  }

  private release(waiter: Waiter): void {
    this.queue.shift();
    this.unqueue(waiter);
    if (waiter.onAbort) waiter.signal?.removeEventListener('abort', waiter.onAbort);
    waiter.resolve();
  }

  private drop(waiter: Waiter): void {
    if (!waiter.gone) this.unqueue(waiter);
  }

  private unqueue(waiter: Waiter): void {
    waiter.gone = true;
    this.queued.requests -= waiter.need.requests;
    this.queued.tokens -= waiter.need.tokens;
  }
}
