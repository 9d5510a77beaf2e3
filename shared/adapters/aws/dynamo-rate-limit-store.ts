import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { LIMIT_SK, limitPk, limitShardPk, type TableKey } from '../../lib/layout/table.js';
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
import { isConditionalCheckFailed } from './dynamo-run-store.js';

export interface DynamoRateLimitStoreOptions {
  /** A document client built with `createDocumentClient` (see clients.ts). */
  client: DynamoDBDocumentClient;
  tableName: string;
  /** Clock in epoch milliseconds (tests). Lambda clocks are NTP-synced; a clock behind the item's never refills backwards. */
  now?: () => number;
  /** Conditional writes lost to other workers in a row before the take asks its caller to wait a little. Default 3. */
  maxConflicts?: number;
  /** Random source of the wait after lost races (tests). */
  random?: () => number;
}

/**
 * The token buckets of a fleet, in the run store's table. Every bucket item holds the request
 * and token levels, when they were last refilled (`at`, epoch ms) and a version; a change
 * reads the item, refills it for the time since `at`, and writes the new levels with a
 * condition on the version it read: of workers racing for the same item exactly one wins, the
 * others read again (after a few lost races in a row, they are told to wait a few jittered
 * milliseconds). Nothing is written when the bucket cannot give what is asked.
 *
 * - The fleet leases (see `lease.ts`): a bucket is split into shards, items of their own
 *   (pk `LIMIT#<vendor:model>#<shard>`, sk `LIMIT`), each holding its part of the limit. A lease
 *   is one consistent read and one conditional write of a shard, and hands out a stretch of its
 *   refill for several calls; a refused lease is the read alone.
 * - A take (one container that owns the bucket, a call at a time) reads and writes the item
 *   `LIMIT#<vendor:model>`.
 *
 * A limit a vendor reported (its response headers) is recorded on the bucket's item and on its
 * shards (`learnedRpm`, `learnedTpm`): every take and lease is then held to the stricter of the
 * limit it is given and the recorded one, and a fresh container starts from it (`learned`).
 */
export class DynamoRateLimitStore implements RateLimitStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly now: () => number;
  private readonly maxConflicts: number;
  private readonly random: () => number;
  /** What this store last recorded or read as learned, by key: an unchanged limit is not written again. */
  private readonly recorded = new Map<string, RateLimit>();

  constructor({
    client,
    tableName,
    now = Date.now,
    maxConflicts = 3,
    random = Math.random,
  }: DynamoRateLimitStoreOptions) {
    this.client = client;
    this.tableName = tableName;
    this.now = now;
    this.maxConflicts = maxConflicts;
    this.random = random;
  }

  async take(key: string, given: RateLimit, need: RateNeed): Promise<number> {
    const outcome = await this.update(bucketKey(key), (item, now) => {
      const limit = stricter(given, learnedOf(item)) ?? given;
      const state = refill(levelsOf(item) ?? fullBucket(limit, now), limit, now);
      const wait = shortfallMs(state, limit, need);
      if (wait > 0) return wait;
      const next = taken(state, limit, need);
      return { ...item, requests: next.requests, tokens: next.tokens, at: next.at };
    });
    // A crowd of workers on one bucket: step back a few milliseconds (jittered) and try again.
    return outcome ?? 1 + Math.floor(this.random() * 20);
  }

  async lease(key: string, given: RateLimit, { shard, want, waitedMs }: LeaseAsk): Promise<LeaseAnswer> {
    const shards = shardsFor(given);
    let answer: LeaseAnswer | undefined;
    let crowdMs = 0;
    const outcome = await this.update(shardKey(key, shard), (item, now) => {
      const limit = shardLimit(stricter(given, learnedOf(item)) ?? given, shards);
      const leased = leaseFrom(levelsOf(item), limit, want, now, shard);
      const crowd = item?.crowdMs === undefined ? undefined : Number(item.crowdMs);
      crowdMs = crowd ?? 0;
      if ('waitMs' in leased) return leased.waitMs;
      answer = { lease: leased.lease };
      const { requests, tokens, at } = leased.state;
      return { ...item, requests, tokens, at, crowdMs: Math.round(crowdAfter(crowd, waitedMs)) };
    });
    if (outcome === 0 && answer) return answer;
    // A shard handed out far enough ahead; or, without a wait, a crowd that kept winning the
    // races for the shard: a few jittered milliseconds.
    return { waitMs: outcome ?? 1 + Math.floor(this.random() * 20), crowdMs };
  }

  /**
   * Records a learned limit on the bucket item and on its shards (only when it differs from
   * what this store last recorded or read, and from what the item holds: in a fleet the first
   * container to hear it writes it, the others read it there), and with `debt` lowers the bucket
   * and each shard by its part (see `inDebt`: the vendor's count is the fleet's, so lowering
   * twice by it lowers once). Conditional writes on the version, retried a few times; an item
   * others keep winning is left as it is (the next answer reports the limit again).
   */
  async learn(key: string, learned: RateLimit, given: RateLimit, debt?: RateNeed): Promise<void> {
    const known = this.recorded.get(key);
    if (known?.rpm === learned.rpm && known?.tpm === learned.tpm) return;
    const limit = stricter(given, learned)!;
    let already = false;
    const written = await this.update(bucketKey(key), (item, now) => {
      if (sameLimit(learnedOf(item), learned)) {
        already = true;
        return 0;
      }
      let state = refill(levelsOf(item) ?? fullBucket(limit, now), limit, now);
      if (debt) state = inDebt(state, limit, debt);
      return { ...withLearned(item, learned), requests: state.requests, tokens: state.tokens, at: state.at };
    });
    if (written !== 0) return;
    this.recorded.set(key, learned);
    if (already) return;
    const shards = shardsFor(limit);
    const part = shardLimit(limit, shards);
    const share = debt && { requests: debt.requests / shards, tokens: debt.tokens / shards };
    for (let shard = 0; shard < shards; shard++) {
      await this.update(shardKey(key, shard), (item, now) => {
        let state = refill(levelsOf(item) ?? fullBucket(part, now), part, now);
        if (share) state = inDebt(state, part, share);
        return {
          ...withLearned(item, learned),
          requests: state.requests,
          tokens: state.tokens,
          at: state.at,
        };
      });
    }
  }

  /**
   * Reads the item `Key` and writes what `change` makes of it, on the condition that its
   * version is still the one read; a write lost to another worker reads again, up to
   * `maxConflicts` times. `change` gives the attributes to write, or a number: nothing is
   * written and that number is the answer. Answers 0 once written, undefined when every write
   * was lost.
   */
  private async update(
    Key: TableKey,
    change: (item: Record<string, unknown> | undefined, now: number) => Record<string, unknown> | number,
  ): Promise<number | undefined> {
    for (let conflicts = 0; conflicts < this.maxConflicts; conflicts++) {
      const now = this.now();
      const { Item: item } = await this.client.send(
        new GetCommand({ TableName: this.tableName, Key, ConsistentRead: true }),
      );
      const next = change(item, now);
      if (typeof next === 'number') return next;
      const version = item ? Number(item.version) : 0;
      try {
        await this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { ...next, ...Key, type: 'limit', version: version + 1 },
            ...(item
              ? {
                  ConditionExpression: 'version = :version',
                  ExpressionAttributeValues: { ':version': version },
                }
              : { ConditionExpression: 'attribute_not_exists(pk)' }),
          }),
        );
        return 0;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
    }
    return undefined;
  }

  /** The learned limit recorded on the bucket item, if any. */
  async learned(key: string): Promise<RateLimit | undefined> {
    const out = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: bucketKey(key), ConsistentRead: true }),
    );
    const learned = learnedOf(out.Item);
    if (learned) this.recorded.set(key, learned);
    return learned;
  }
}

const bucketKey = (key: string): TableKey => ({ pk: limitPk(key), sk: LIMIT_SK });
const shardKey = (key: string, shard: number): TableKey => ({ pk: limitShardPk(key, shard), sk: LIMIT_SK });

const sameLimit = (a: RateLimit | undefined, b: RateLimit) => a?.rpm === b.rpm && a?.tpm === b.tpm;

/** `item`'s attributes with `learned` recorded in place of what it held. */
function withLearned(item: Record<string, unknown> | undefined, learned: RateLimit): Record<string, unknown> {
  const { learnedRpm: _r, learnedTpm: _t, ...rest } = item ?? {};
  return {
    ...rest,
    ...(learned.rpm === undefined ? {} : { learnedRpm: learned.rpm }),
    ...(learned.tpm === undefined ? {} : { learnedTpm: learned.tpm }),
  };
}

/** The request and token levels a bucket item holds, if there is one. */
function levelsOf(item: Record<string, unknown> | undefined): BucketState | undefined {
  return item
    ? { requests: Number(item.requests), tokens: Number(item.tokens), at: Number(item.at) }
    : undefined;
}

/** The learned limit on a bucket item, if it holds one. */
function learnedOf(item: Record<string, unknown> | undefined): RateLimit | undefined {
  if (!item) return undefined;
  const axis = (value: unknown) => {
    const n = Number(value);
    return value !== undefined && Number.isFinite(n) && n > 0 ? n : undefined;
  };
  const rpm = axis(item.learnedRpm);
  const tpm = axis(item.learnedTpm);
  if (rpm === undefined && tpm === undefined) return undefined;
  return { ...(rpm === undefined ? {} : { rpm }), ...(tpm === undefined ? {} : { tpm }) };
}
