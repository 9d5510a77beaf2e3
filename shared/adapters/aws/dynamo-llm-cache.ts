import { setTimeout as sleep } from 'node:timers/promises';
import { BatchGetCommand, type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { CACHE_SK, cachePk } from '../../lib/layout/table.js';
import type { Completion } from '../../model/provider.js';
import type { LlmCache } from '../../ports/ports.js';

export interface DynamoLlmCacheOptions {
  /** A document client built with `marshallOptions.removeUndefinedValues: true` (see clients.ts). */
  client: DynamoDBDocumentClient;
  tableName: string;
  /** Entries expire this many days after they are written. Default 30. */
  ttlDays?: number;
  /**
   * Called when the cache cannot be read or written. The call it served goes on (a read error
   * is a miss): the cache saves money, it must never fail an item. Default: a JSON warning on stderr.
   */
  onError?: (err: unknown, op: 'get' | 'put', key: string) => void;
  /** Clock in epoch milliseconds, for tests. */
  now?: () => number;
}

const completionSchema = z.object({
  text: z.string(),
  finishReason: z.enum(['stop', 'length', 'refusal', 'content_filter', 'other']),
  usage: z.object({
    input: z.number(),
    output: z.number(),
    cached: z.number(),
    cacheWrite5m: z.number().optional(),
    cacheWrite1h: z.number().optional(),
    reasoning: z.number().optional(),
  }),
  costUsd: z.number(),
  // An answer from a model without a price: its cost is unknown, not 0.
  priced: z.literal(false).optional(),
  latencyMs: z.number(),
  cached: z.boolean(),
  simulated: z.boolean(),
  providerId: z.string(),
  batchSavedUsd: z.number().optional(),
  // A resumed item must not repair an answer that was spent on thinking.
  thinkingExhausted: z.boolean().optional(),
  // Who paid: without it a resumed item would take its own answer for someone else's, free.
  paidBy: z.string().optional(),
});

/** Keys per BatchGetItem (the DynamoDB limit). */
const MAX_BATCH_KEYS = 100;
/** BatchGetItem calls per batch while DynamoDB leaves keys unprocessed (throttling). */
const MAX_BATCH_ATTEMPTS = 5;

interface Lookup {
  key: string;
  resolve: (item: Record<string, unknown> | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * The LLM cache in the run store's table: pk `CACHE#<key>`, sk `CACHE`, `value` (the Completion
 * as JSON) and `ttl` (epoch seconds). Returns the completion as it was stored; marking it
 * `cached` is the caller's business.
 *
 * Lookups made in the same turn of the event loop go out as one BatchGetItem (eventually
 * consistent, like a plain GetItem, and the same read units): a worker scoring ten items
 * concurrently asks DynamoDB once for their ten keys, not ten times.
 */
export class DynamoLlmCache implements LlmCache {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly ttlSeconds: number;
  private readonly onError: NonNullable<DynamoLlmCacheOptions['onError']>;
  private readonly now: () => number;
  /** Lookups for the next BatchGetItem. */
  private waiting: Lookup[] = [];

  constructor({ client, tableName, ttlDays = 30, onError = warn, now = Date.now }: DynamoLlmCacheOptions) {
    this.client = client;
    this.tableName = tableName;
    this.ttlSeconds = Math.round(ttlDays * 86_400);
    this.onError = onError;
    this.now = now;
  }

  async get(key: string): Promise<Completion | undefined> {
    try {
      const item = await this.read(key);
      // DynamoDB deletes expired items lazily (up to days later): expiry is checked here.
      if (!item || (typeof item.ttl === 'number' && item.ttl * 1000 <= this.now())) return undefined;
      const parsed = completionSchema.safeParse(JSON.parse(String(item.value)));
      // An entry in an older shape is a miss, not an error: it is overwritten by the next put.
      return parsed.success ? parsed.data : undefined;
    } catch (err) {
      this.onError(err, 'get', key);
      return undefined;
    }
  }

  /** The stored item of `key`, read with the other lookups of this turn of the event loop. */
  private read(key: string): Promise<Record<string, unknown> | undefined> {
    return new Promise((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(() => void this.flush());
      this.waiting.push({ key, resolve, reject });
    });
  }

  private async flush(): Promise<void> {
    const lookups = this.waiting;
    this.waiting = [];
    // A key asked twice is read once: BatchGetItem refuses a key named twice.
    const byKey = new Map<string, Lookup[]>();
    for (const lookup of lookups) byKey.set(lookup.key, [...(byKey.get(lookup.key) ?? []), lookup]);
    const keys = [...byKey.keys()];
    const chunks = Array.from({ length: Math.ceil(keys.length / MAX_BATCH_KEYS) }, (_, i) =>
      keys.slice(i * MAX_BATCH_KEYS, (i + 1) * MAX_BATCH_KEYS),
    );
    await Promise.all(
      chunks.map(async (chunk) => {
        try {
          const items = await this.batchGet(chunk);
          for (const key of chunk)
            for (const lookup of byKey.get(key)!) lookup.resolve(items.get(cachePk(key)));
        } catch (err) {
          for (const key of chunk) for (const lookup of byKey.get(key)!) lookup.reject(err);
        }
      }),
    );
  }

  /** The items of these keys (at most 100), by pk; absent ones are missing from the map. */
  private async batchGet(keys: string[]): Promise<Map<string, Record<string, unknown>>> {
    const items = new Map<string, Record<string, unknown>>();
    let pending: Record<string, unknown>[] = keys.map((key) => ({ pk: cachePk(key), sk: CACHE_SK }));
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > MAX_BATCH_ATTEMPTS) {
        throw new Error(
          `DynamoDB left ${pending.length} of ${keys.length} cache keys unread after ${MAX_BATCH_ATTEMPTS} BatchGetItem calls`,
        );
      }
      if (attempt > 1) await sleep(50 * 2 ** (attempt - 2));
      const out = await this.client.send(
        new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: pending } } }),
      );
      for (const item of out.Responses?.[this.tableName] ?? []) items.set(String(item.pk), item);
      pending = out.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
    }
    return items;
  }

  async put(key: string, completion: Completion): Promise<void> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            pk: cachePk(key),
            sk: CACHE_SK,
            type: 'cache',
            value: JSON.stringify(completion),
            ttl: Math.floor(this.now() / 1000) + this.ttlSeconds,
          },
        }),
      );
    } catch (err) {
      this.onError(err, 'put', key);
    }
  }
}

function warn(err: unknown, op: 'get' | 'put', key: string): void {
  const error = err instanceof Error ? { name: err.name, message: err.message } : { message: String(err) };
  console.warn(JSON.stringify({ level: 'WARN', message: `llm cache ${op} failed`, key, error }));
}
