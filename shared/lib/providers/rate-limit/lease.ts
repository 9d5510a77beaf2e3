/**
 * One bucket shared by a fleet (the AWS shell: up to a thousand worker containers calling the
 * same model). A bucket item that every call reads and writes serves a fleet poorly: DynamoDB
 * gives one item at most 1,000 writes a second, and containers racing for it lose most of their
 * conditional writes long before that. So a fleet leases instead:
 *
 * - The bucket is split into shards (`LIMIT#<vendor:model>#<i>` on DynamoDB), each an ordinary
 *   bucket with an equal part of the limit, about {@link SHARD_REQUESTS_PER_SECOND} requests a
 *   second each ({@link shardsFor}). A lease hands out at least one request, so no shard sees
 *   more writes a second than that, whatever the fleet's size.
 * - A container leases the next stretch of one shard's refill, long enough for the calls it has
 *   waiting on every axis (at most {@link LEASE_SPAN_MS}, unless one call needs more), with one
 *   read and one conditional write ({@link leaseFrom}). The stretch is the same stretch of time
 *   on every axis: the calls go at the pace of the axis they are short of, and the other axis's
 *   refill must not arrive ahead of them and be lost. The shard moves past the stretch, into
 *   the future if need be (its level goes below zero), until it is handed out
 *   {@link LEASE_AHEAD_MS} ahead: then it refuses, takes nothing, and says when it will not.
 * - The container sends each call when the refill covering it has arrived ({@link Holdings}).
 *   No unit of refill is used before it would have reached the bucket, none twice, and refill
 *   left unused beyond the shard's burst is lost as in any bucket, counted from when the lease
 *   reached the container and its calls could go: the refill that arrived while the lease was
 *   on its way (at most {@link MAX_LAG_MS} of it) and {@link LEASE_GRACE_MS} more were handed to
 *   this container and no other. In any interval the fleet sends at most what one bucket would
 *   let through (the limit at the bucket's pace, plus its burst, about one request per shard),
 *   plus per shard the refill of one round trip and that margin, as one bucket behind the
 *   network would. Counted from the shard's clock instead, a lease for one call from a full
 *   shard (a stretch that started a burst ago) would be lost on arrival after any round trip
 *   longer than a millisecond, and the calls would lease again forever.
 *
 * Why stretches of refill rather than "n calls, valid for a second": a container holding n
 * calls may send them at once, and vendors meter a per-minute limit by the second; a stretch
 * is paced as the bucket itself would pace it.
 */
import type { RateLimit, RateNeed } from '../../../model/limits.js';
import type { Lease, LeaseSpan } from '../../../ports/ports.js';
import { type BucketState, burstOf, fullBucket, PACE, refill, refillPerMs } from './bucket.js';

/** Requests a second one shard hands out at most (at the bucket's pace): the shard count follows the limit. */
export const SHARD_REQUESTS_PER_SECOND = 50;
/** The same for a limit on tokens alone (calls of a thousand tokens or more). */
export const SHARD_TOKENS_PER_SECOND = 50_000;
/** Shards of one bucket at most. */
export const MAX_SHARDS = 32;
/**
 * How far ahead (ms) a shard's refill may be handed out before it refuses. It covers the
 * containers' round trips and their waits after a refusal, so a busy shard never runs dry
 * between leases; it is also the most a container that dies holding leases takes with it.
 */
export const LEASE_AHEAD_MS = 2_000;
/** The most of a shard's refill (ms of its rate) a container asks for at once. */
export const LEASE_SPAN_MS = 1_000;
/** The weight of the latest lessee's wait in a shard's running average of them. */
export const CROWD_WEIGHT = 1 / 8;
/**
 * The most of a lease's round trip (ms) whose refill the holder keeps: beyond it, a slow store
 * would let a container send a long stretch at once.
 */
export const MAX_LAG_MS = 250;
/**
 * How long (ms) past its burst a holder keeps refill on top of the round trip: the time between
 * the lease's answer and the calls it covers going (the container's own work meanwhile). A lease
 * for one call from a full shard ends just as it arrives; without this margin any delay there
 * loses it, and the call leases again.
 */
export const LEASE_GRACE_MS = 50;

/**
 * A shard's running average of how long its lessees had been turned away, after one that
 * waited `waitedMs` (undefined before the first lease).
 */
export function crowdAfter(previous: number | undefined, waitedMs: number): number {
  return previous === undefined ? waitedMs : previous + (waitedMs - previous) * CROWD_WEIGHT;
}

/** The shards a bucket with `limit` is split into (every container computes the same). */
export function shardsFor(limit: RateLimit): number {
  const needed = (perMinute: number | undefined, perShard: number) =>
    perMinute === undefined ? 1 : Math.ceil((PACE * perMinute) / 60 / perShard);
  return Math.min(
    MAX_SHARDS,
    Math.max(1, needed(limit.rpm, SHARD_REQUESTS_PER_SECOND), needed(limit.tpm, SHARD_TOKENS_PER_SECOND)),
  );
}

/** One shard's part of `limit`. */
export function shardLimit(limit: RateLimit, shards: number): RateLimit {
  return {
    ...(limit.rpm === undefined ? {} : { rpm: limit.rpm / shards }),
    ...(limit.tpm === undefined ? {} : { tpm: limit.tpm / shards }),
  };
}

/**
 * What shard `shard` (its state, or undefined when new; `limit` is the shard's part) hands out
 * for `want` at `now`: the stretch of its refill long enough to cover `want` on every limited
 * axis, and the shard's state after it; or how long until it has room.
 */
export function leaseFrom(
  state: BucketState | undefined,
  limit: RateLimit,
  want: RateNeed,
  now: number,
  shard: number,
): { lease: Lease; state: BucketState } | { waitMs: number } {
  const levels = refill(state ?? fullBucket(limit, now), limit, now);
  // A level below zero is refill already handed out: −level / rate ms of it.
  const ahead = (level: number, perMinute: number | undefined) =>
    perMinute === undefined ? 0 : Math.ceil(-level / refillPerMs(perMinute) - LEASE_AHEAD_MS);
  const waitMs = Math.max(ahead(levels.requests, limit.rpm), ahead(levels.tokens, limit.tpm));
  if (waitMs > 0) return { waitMs };
  const lasting = (units: number, perMinute: number | undefined) =>
    perMinute === undefined || units <= 0 ? 0 : units / refillPerMs(perMinute);
  const durationMs = Math.max(lasting(want.requests, limit.rpm), lasting(want.tokens, limit.tpm));
  // Measured from the state's own time: a container whose clock is behind the shard's gets its
  // stretch late, never early.
  const span = (level: number, perMinute: number | undefined): LeaseSpan | undefined => {
    if (perMinute === undefined || durationMs <= 0) return undefined;
    const perMs = refillPerMs(perMinute);
    const from = levels.at - level / perMs;
    return { from, to: from + durationMs, perMs, burst: burstOf(perMinute) };
  };
  const requests = span(levels.requests, limit.rpm);
  const tokens = span(levels.tokens, limit.tpm);
  const used = (level: number, leased: LeaseSpan | undefined) =>
    leased ? level - durationMs * leased.perMs : level;
  return {
    lease: { shard, at: levels.at, ...(requests ? { requests } : {}), ...(tokens ? { tokens } : {}) },
    state: { requests: used(levels.requests, requests), tokens: used(levels.tokens, tokens), at: levels.at },
  };
}

/**
 * Below this many units a span or a need counts as spent: epoch milliseconds carry about 1e-4
 * ms of floating-point error, and a shard refills at most ~50 units a millisecond.
 */
export const DUST = 0.01;

/**
 * The stretches of refill one container holds, per axis, and the calls they cover: a call
 * goes once every unit it needs has arrived, as from a bucket (a need larger than a span's
 * burst goes when the span holds its burst, and runs it into debt).
 */
export class Holdings {
  private readonly requests: HeldSpan[] = [];
  private readonly tokens: HeldSpan[] = [];

  /**
   * Holds `lease`, received at `now`: its refill is lost beyond the burst counted from its
   * arrival (up to {@link MAX_LAG_MS} after the shard handed it out) and {@link LEASE_GRACE_MS}.
   */
  add(lease: Lease, now = lease.at ?? Number.NEGATIVE_INFINITY): void {
    const keepMs =
      lease.at === undefined ? 0 : Math.min(MAX_LAG_MS, Math.max(0, now - lease.at)) + LEASE_GRACE_MS;
    for (const [spans, span] of [
      [this.requests, lease.requests],
      [this.tokens, lease.tokens],
    ] as const) {
      // Spans lost unused go: a container leasing for one call at a time would pile them up.
      if (Number.isFinite(now)) prune(spans, now);
      if (span) spans.push({ ...span, keepMs });
    }
  }

  /**
   * When a call needing `need` under `limit` can go on what is held (at or before `now`: at
   * once), or undefined when what is held does not cover it.
   */
  goAt(need: RateNeed, limit: RateLimit, now: number): number | undefined {
    let at = now;
    for (const [spans, units] of this.needs(need, limit)) {
      const axisAt = walk(spans, units, now, false);
      if (axisAt === undefined) return undefined;
      at = Math.max(at, axisAt);
    }
    return at;
  }

  /** Spends what a call needing `need` uses (call when {@link goAt} is at or before `now`). */
  spend(need: RateNeed, limit: RateLimit, now: number): void {
    for (const [spans, units] of this.needs(need, limit)) walk(spans, units, now, true);
  }

  /** The units still to arrive (or arrived and not lost) per axis. */
  supply(now: number): RateNeed {
    return { requests: held(this.requests, now), tokens: held(this.tokens, now) };
  }

  /** When the last span held ends (epoch ms), or `now` if none is left. */
  endsAt(now: number): number {
    let end = now;
    for (const span of [...this.requests, ...this.tokens]) end = Math.max(end, span.to);
    return end;
  }

  /** How far what is held reaches on the axis that runs out first (epoch ms; `now` when an axis has none). */
  reach(limit: RateLimit, now: number): number {
    const end = (spans: HeldSpan[]) => spans.reduce((latest, span) => Math.max(latest, span.to), now);
    let reach = Number.POSITIVE_INFINITY;
    if (limit.rpm !== undefined) reach = Math.min(reach, end(this.requests));
    if (limit.tpm !== undefined) reach = Math.min(reach, end(this.tokens));
    return reach === Number.POSITIVE_INFINITY ? now : reach;
  }

  private needs(need: RateNeed, limit: RateLimit): [HeldSpan[], number][] {
    const out: [HeldSpan[], number][] = [];
    if (limit.rpm !== undefined && need.requests > 0) out.push([this.requests, need.requests]);
    if (limit.tpm !== undefined && need.tokens > 0) out.push([this.tokens, need.tokens]);
    return out;
  }
}

/**
 * A span held, and how long past its burst its refill is kept (ms): its lease's round trip (at
 * most {@link MAX_LAG_MS}) and {@link LEASE_GRACE_MS}.
 */
interface HeldSpan extends LeaseSpan {
  keepMs: number;
}

/**
 * Where a span's unused refill starts at `now`: refill older than its burst (plus a
 * millisecond, as in `refill`: waits are whole milliseconds, and a waiter arriving with a
 * fraction to spare must not lose it), counted from the lease's arrival, is lost.
 */
const cursorOf = (span: HeldSpan, now: number) =>
  Math.max(span.from, now - span.keepMs - span.burst / span.perMs - 1);

/** Units of `spans` still usable at `now`. */
function held(spans: HeldSpan[], now: number): number {
  let units = 0;
  for (const span of spans) units += Math.max(0, (span.to - cursorOf(span, now)) * span.perMs);
  return units;
}

/**
 * When `units` can be used from `spans` at `now` (the earliest refill first), or undefined if
 * they do not hold that many; with `spend`, uses them and drops the spans used up or lost.
 */
function walk(spans: HeldSpan[], units: number, now: number, spend: boolean): number | undefined {
  spans.sort((a, b) => cursorOf(a, now) - cursorOf(b, now));
  let remaining = units;
  let at = Number.NEGATIVE_INFINITY;
  for (const span of spans) {
    if (remaining <= DUST) break;
    const cursor = cursorOf(span, now);
    const available = (span.to - cursor) * span.perMs;
    if (available <= DUST) continue;
    const part = Math.min(available, remaining);
    at = Math.max(at, cursor + Math.min(part, span.burst) / span.perMs);
    remaining -= part;
    if (spend) span.from = cursor + part / span.perMs;
  }
  if (spend) prune(spans, now);
  return remaining > DUST ? undefined : at;
}

/** Drops the spans used up or lost at `now`. */
function prune(spans: HeldSpan[], now: number): void {
  for (let i = spans.length - 1; i >= 0; i--) {
    const span = spans[i]!;
    if ((span.to - cursorOf(span, now)) * span.perMs <= DUST) spans.splice(i, 1);
  }
}
