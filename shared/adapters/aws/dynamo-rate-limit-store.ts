import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { LIMIT_SK, limitPk } from '../../lib/layout/table.js';
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
 * The token buckets of a fleet, in the run store's table: one item per provider+model
 * (pk `LIMIT#<vendor:model>`, sk `LIMIT`) holding the request and token levels, when they were
 * last refilled (`at`, epoch ms) and a version. A take reads the item, refills it for the time
 * since `at`, and writes the new levels with a condition on the version it read: of workers
 * racing for the same tokens exactly one wins, the others read again (after a few lost races
 * in a row, the take says to wait a few jittered milliseconds). Nothing is written when the
 * bucket cannot give what is asked.
 *
 * A limit a vendor reported (its response headers) is recorded on the same item
 * (`learnedRpm`, `learnedTpm`): every take is then held to the stricter of the limit it is
 * given and the recorded one, so a worker that has not heard from the vendor yet (a fresh
 * container) paces by what another one learned.
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
    const outcome = await this.update(key, (item, now) => {
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

  /**
   * Records a learned limit on the bucket item (only when it differs from what this store last
   * recorded or read), and with `debt` lowers the bucket (see `inDebt`). A conditional write on
   * the version, retried a few times; a bucket others keep winning is left as it is (the next
   * answer reports the limit again).
   */
  async learn(key: string, learned: RateLimit, given: RateLimit, debt?: RateNeed): Promise<void> {
    const known = this.recorded.get(key);
    if (!debt && known?.rpm === learned.rpm && known?.tpm === learned.tpm) return;
    const written = await this.update(key, (item, now) => {
      const limit = stricter(given, learned)!;
      let state = refill(levelsOf(item) ?? fullBucket(limit, now), limit, now);
      if (debt) state = inDebt(state, limit, debt);
      const { learnedRpm: _r, learnedTpm: _t, ...rest } = item ?? {};
      return {
        ...rest,
        requests: state.requests,
        tokens: state.tokens,
        at: state.at,
        ...(learned.rpm === undefined ? {} : { learnedRpm: learned.rpm }),
        ...(learned.tpm === undefined ? {} : { learnedTpm: learned.tpm }),
      };
    });
    if (written === 0) this.recorded.set(key, learned);
  }

  /**
   * Reads the bucket item and writes what `change` makes of it, on the condition that its
   * version is still the one read; a write lost to another worker reads again, up to
   * `maxConflicts` times. `change` gives the attributes to write, or a number: nothing is
   * written and that number is the answer. Answers 0 once written, undefined when every write
   * was lost.
   */
  private async update(
    key: string,
    change: (item: Record<string, unknown> | undefined, now: number) => Record<string, unknown> | number,
  ): Promise<number | undefined> {
    const Key = { pk: limitPk(key), sk: LIMIT_SK };
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
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: limitPk(key), sk: LIMIT_SK },
        ConsistentRead: true,
      }),
    );
    const learned = learnedOf(out.Item);
    if (learned) this.recorded.set(key, learned);
    return learned;
  }
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
