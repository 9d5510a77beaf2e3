import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
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
  usage: z.object({ input: z.number(), output: z.number(), cached: z.number() }),
  costUsd: z.number(),
  latencyMs: z.number(),
  cached: z.boolean(),
  simulated: z.boolean(),
  providerId: z.string(),
  batchSavedUsd: z.number().optional(),
  // Who paid: without it a resumed item would take its own answer for someone else's, free.
  paidBy: z.string().optional(),
});

/**
 * The LLM cache in the run store's table: pk `CACHE#<key>`, sk `CACHE`, `value` (the Completion
 * as JSON) and `ttl` (epoch seconds). Returns the completion as it was stored; marking it
 * `cached` is the caller's business.
 */
export class DynamoLlmCache implements LlmCache {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly ttlSeconds: number;
  private readonly onError: NonNullable<DynamoLlmCacheOptions['onError']>;
  private readonly now: () => number;

  constructor({ client, tableName, ttlDays = 30, onError = warn, now = Date.now }: DynamoLlmCacheOptions) {
    this.client = client;
    this.tableName = tableName;
    this.ttlSeconds = Math.round(ttlDays * 86_400);
    this.onError = onError;
    this.now = now;
  }

  async get(key: string): Promise<Completion | undefined> {
    try {
      const out = await this.client.send(
        new GetCommand({ TableName: this.tableName, Key: { pk: cachePk(key), sk: CACHE_SK } }),
      );
      const item = out.Item;
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
