import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { LIMIT_SK, limitPk } from '../../lib/layout/table.js';
import { type BucketState, fullBucket, refill, shortfallMs, taken } from '../../lib/providers/rate-limit.js';
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
 */
export class DynamoRateLimitStore implements RateLimitStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly now: () => number;
  private readonly maxConflicts: number;
  private readonly random: () => number;

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

  async take(key: string, limit: RateLimit, need: RateNeed): Promise<number> {
    const Key = { pk: limitPk(key), sk: LIMIT_SK };
    for (let conflicts = 0; conflicts < this.maxConflicts; conflicts++) {
      const now = this.now();
      const out = await this.client.send(
        new GetCommand({ TableName: this.tableName, Key, ConsistentRead: true }),
      );
      const item = out.Item;
      const stored: BucketState | undefined = item
        ? { requests: Number(item.requests), tokens: Number(item.tokens), at: Number(item.at) }
        : undefined;
      const state = refill(stored ?? fullBucket(limit, now), limit, now);
      const wait = shortfallMs(state, limit, need);
      if (wait > 0) return wait;
      const next = taken(state, limit, need);
      const version = item ? Number(item.version) : 0;
      try {
        await this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: {
              ...Key,
              type: 'limit',
              requests: next.requests,
              tokens: next.tokens,
              at: next.at,
              version: version + 1,
            },
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
    // A crowd of workers on one bucket: step back a few milliseconds (jittered) and try again.
    return 1 + Math.floor(this.random() * 20);
  }
}
