import { setTimeout as sleep } from 'node:timers/promises';
import {
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { spillKey } from '../../lib/layout/bucket.js';
import { mapLimit } from '../../lib/map-limit.js';
import { InputError, ServiceError } from '../../model/errors.js';
import type { ItemMessage } from '../../model/model.js';
import type { BlobStore, WorkQueue } from '../../ports/ports.js';

/** SQS limits for one SendMessageBatch call. */
const MAX_BATCH_ENTRIES = 10;
const MAX_BATCH_BYTES = 256 * 1024;

const itemSchema = z.object({
  id: z.string().min(1),
  row: z.number().int().nonnegative(),
  input: z.record(z.string(), z.string()),
  gold: z.string().optional(),
  // The output the dataset gives (scored as is, not solved): dropping it would re-solve the item.
  given: z
    .object({
      output: z.string().optional(),
      outputs: z.array(z.string()).optional(),
      explanation: z.string().optional(),
    })
    .optional(),
  // The row's other columns and its annotators' labels: the result keeps them.
  columns: z.record(z.string(), z.string()).optional(),
  annotations: z.array(z.string()).optional(),
});

/** An item that fits in a message travels inline (with its part of the run, when not part 0). */
export const inlineItemBodySchema = z.object({
  runId: z.string().min(1),
  item: itemSchema,
  part: z.number().int().positive().optional(),
});

/** An item too big for a message travels by reference to `spill/<runId>/<sha256(itemId)>.json`. */
export const spilledItemBodySchema = z.object({
  ref: z.string().min(1),
  runId: z.string().min(1),
  itemId: z.string().min(1),
});

/** The body of a message on the items queue. */
export const itemQueueBodySchema = z.union([spilledItemBodySchema, inlineItemBodySchema]);
export type ItemQueueBody = z.infer<typeof itemQueueBodySchema>;

/** A message body on the items queue that is not an item (or whose reference is gone). Never retryable. */
export class InvalidItemMessageError extends InputError {
  override readonly name = 'InvalidItemMessageError';
}

/** SendMessageBatch entries that still failed after the retries. */
export class QueueSendError extends ServiceError {
  override readonly name = 'QueueSendError';

  constructor(
    message: string,
    readonly failures: {
      runId: string;
      itemId: string;
      code: string;
      message?: string;
      senderFault: boolean;
    }[],
  ) {
    super(message);
  }
}

/**
 * Parses a message body from the items queue and restores a spilled item from the bucket.
 * This is the boundary that owns the message shape: callers receive a valid ItemMessage or an
 * {@link InvalidItemMessageError}.
 */
export async function decodeItemMessage(body: string, blobs: BlobStore): Promise<ItemMessage> {
  const parsed = itemQueueBodySchema.safeParse(parseJson(body, 'item message'));
  if (!parsed.success) {
    throw new InvalidItemMessageError(`invalid item message: ${z.prettifyError(parsed.error)}`, {
      cause: parsed.error,
    });
  }
  if (!('ref' in parsed.data)) return parsed.data;

  const { ref, runId, itemId } = parsed.data;
  const bytes = await blobs.get(ref);
  if (bytes === undefined) {
    throw new InvalidItemMessageError(`spilled item ${itemId} of run ${runId} is missing at ${ref}`);
  }
  const spilled = inlineItemBodySchema.safeParse(parseJson(new TextDecoder().decode(bytes), ref));
  if (!spilled.success) {
    throw new InvalidItemMessageError(`invalid spilled item at ${ref}: ${z.prettifyError(spilled.error)}`, {
      cause: spilled.error,
    });
  }
  if (spilled.data.runId !== runId || spilled.data.item.id !== itemId) {
    throw new InvalidItemMessageError(
      `spilled item at ${ref} is ${spilled.data.runId}/${spilled.data.item.id}, expected ${runId}/${itemId}`,
    );
  }
  return spilled.data;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new InvalidItemMessageError(`${what} is not JSON`, { cause: err });
  }
}

export interface SqsWorkQueueOptions {
  client: SQSClient;
  queueUrl: string;
  /** Where oversize items are spilled (the run's bucket). */
  blobs: BlobStore;
  /** A JSON body larger than this goes by reference. Default 200 000 bytes (SQS allows 256 KiB). */
  maxBodyBytes?: number;
  /** Attempts per entry that SQS reports in `Failed` without sender fault. Default 4. */
  maxAttempts?: number;
  /** SendMessageBatch calls in flight at once. Default 4. */
  concurrency?: number;
}

interface Entry {
  runId: string;
  itemId: string;
  id: string;
  body: string;
  bytes: number;
}

/**
 * The items queue. Each call to {@link sendItems} is at-least-once: a failed call may have sent
 * part of the items, and the caller re-sends them all (duplicates are absorbed by the run store).
 */
export class SqsWorkQueue implements WorkQueue {
  private readonly client: SQSClient;
  private readonly queueUrl: string;
  private readonly blobs: BlobStore;
  private readonly maxBodyBytes: number;
  private readonly maxAttempts: number;
  private readonly concurrency: number;

  constructor({
    client,
    queueUrl,
    blobs,
    maxBodyBytes = 200_000,
    maxAttempts = 4,
    concurrency = 4,
  }: SqsWorkQueueOptions) {
    if (maxBodyBytes > MAX_BATCH_BYTES) {
      throw new RangeError(
        `maxBodyBytes ${maxBodyBytes} exceeds the SQS message limit of ${MAX_BATCH_BYTES}`,
      );
    }
    this.client = client;
    this.queueUrl = queueUrl;
    this.blobs = blobs;
    this.maxBodyBytes = maxBodyBytes;
    this.maxAttempts = maxAttempts;
    this.concurrency = concurrency;
  }

  async sendItems(messages: ItemMessage[]): Promise<void> {
    const entries = await mapLimit(messages, this.concurrency * 4, (message, index) =>
      this.encode(message, index),
    );
    await mapLimit(chunkBatches(entries), this.concurrency, (batch) => this.sendBatch(batch));
  }

  private async encode(message: ItemMessage, index: number): Promise<Entry> {
    // Ids only need to be unique within one batch; item ids may hold any character, so use the index.
    const id = `m${index}`;
    const inline = JSON.stringify(message);
    const inlineBytes = Buffer.byteLength(inline);
    const names = { runId: message.runId, itemId: message.item.id, id };
    if (inlineBytes <= this.maxBodyBytes) return { ...names, body: inline, bytes: inlineBytes };

    const ref = spillKey(message.runId, message.item.id);
    await this.blobs.put(ref, inline, 'application/json');
    const body = JSON.stringify({
      ref,
      runId: message.runId,
      itemId: message.item.id,
    } satisfies ItemQueueBody);
    return { ...names, body, bytes: Buffer.byteLength(body) };
  }

  /**
   * Sends item messages again exactly as they were received (inline or by reference), e.g. the
   * items the batch lane woke up. `runId`/`itemId` name them in errors.
   */
  async resend(messages: readonly { runId: string; itemId: string; body: string }[]): Promise<void> {
    const entries = messages.map((m, index) => ({ ...m, id: `m${index}`, bytes: Buffer.byteLength(m.body) }));
    await mapLimit(chunkBatches(entries), this.concurrency, (batch) => this.sendBatch(batch));
  }

  private async sendBatch(batch: Entry[]): Promise<void> {
    let pending = batch;
    let lastFailures: QueueSendError['failures'] = [];
    for (let attempt = 1; attempt <= this.maxAttempts && pending.length > 0; attempt++) {
      if (attempt > 1) await sleep(50 * 2 ** (attempt - 2));
      const out = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: pending.map((e): SendMessageBatchRequestEntry => ({ Id: e.id, MessageBody: e.body })),
        }),
      );
      const byId = new Map(pending.map((e) => [e.id, e]));
      lastFailures = (out.Failed ?? []).map((f) => {
        const entry = byId.get(f.Id ?? '');
        return {
          runId: entry?.runId ?? '?',
          itemId: entry?.itemId ?? `? (entry ${f.Id})`,
          code: f.Code ?? 'Unknown',
          message: f.Message,
          senderFault: f.SenderFault ?? false,
        };
      });
      // A sender fault (bad body, too big) fails the same way every time: stop retrying.
      if (lastFailures.some((f) => f.senderFault)) break;
      const failedIds = new Set((out.Failed ?? []).map((f) => f.Id));
      pending = pending.filter((e) => failedIds.has(e.id));
    }
    if (lastFailures.length > 0) {
      const list = lastFailures.map((f) => `${f.itemId} (${f.code}${f.message ? `: ${f.message}` : ''})`);
      throw new QueueSendError(
        `SQS did not accept items of run ${lastFailures[0]?.runId}: ${list.join(', ')}`,
        lastFailures,
      );
    }
  }
}

/** Groups entries into batches of at most 10 entries and 256 KiB of bodies. */
function chunkBatches(entries: Entry[]): Entry[][] {
  const batches: Entry[][] = [];
  let current: Entry[] = [];
  let bytes = 0;
  for (const entry of entries) {
    if (
      current.length === MAX_BATCH_ENTRIES ||
      (current.length > 0 && bytes + entry.bytes > MAX_BATCH_BYTES)
    ) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += entry.bytes;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
