/**
 * In-memory SQS standard queues behind the SDK's request handler, speaking the JSON protocol
 * this SDK uses (`x-amz-target: AmazonSQS.<Op>`, `application/x-amz-json-1.0`, errors with their
 * `x-amzn-query-error` code). Operations: CreateQueue, GetQueueUrl, ListQueues, DeleteQueue,
 * GetQueueAttributes, SetQueueAttributes, PurgeQueue (once a minute, as SQS allows),
 * SendMessage(Batch), ReceiveMessage, DeleteMessage(Batch), ChangeMessageVisibility(Batch).
 *
 * Semantics: at-least-once delivery; a received message is invisible for its visibility timeout
 * and comes back unless deleted; `ApproximateReceiveCount` counts receives; past the redrive
 * policy's `maxReceiveCount` a message moves to its dead-letter queue when next received; long
 * polling waits (in simulated time) up to `WaitTimeSeconds` for a message; delays and retention
 * are kept. Order is roughly first in, first out: each receive picks among the `reorderWindow`
 * oldest visible messages with a seeded generator (a standard queue promises no order).
 * Limits: 10 entries per batch, 256 KiB per message and per batch (configurable: SQS raised
 * its limit to 1 MiB in 2025, the product's adapters keep to 256 KiB), 1–10 messages per
 * receive, visibility up to 12 hours, the characters SQS accepts in a body. Not modelled: FIFO
 * queues (refused), short polls that sample a subset of servers and miss messages, queue
 * policies, tags, message-move tasks.
 *
 * Billing: one request per call and per 64 KiB chunk of the payload it carries.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  type Clock,
  jsonResponse,
  Latency,
  type LatencyOptions,
  type ServiceResponse,
  type SimRequest,
  type SimService,
} from './http.js';

const ACCOUNT = '123456789012';
const CHUNK_BYTES = 64 * 1024;
const MAX_BATCH = 10;
const MAX_VISIBILITY_SECONDS = 12 * 3600;
const PURGE_INTERVAL_MS = 60_000;

/** A request SQS refuses: the error's shape name, its legacy (query) code and message. */
export class SqsError extends Error {
  constructor(
    readonly code: string,
    readonly queryCode: string,
    message: string,
  ) {
    super(message);
  }
}

const errors = {
  noQueue: () =>
    new SqsError(
      'QueueDoesNotExist',
      'AWS.SimpleQueueService.NonExistentQueue',
      'The specified queue does not exist.',
    ),
  invalid: (message: string) => new SqsError('InvalidParameterValue', 'InvalidParameterValue', message),
  tooMany: () =>
    new SqsError(
      'TooManyEntriesInBatchRequest',
      'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
      `Maximum number of entries per request are ${MAX_BATCH}.`,
    ),
  empty: () =>
    new SqsError(
      'EmptyBatchRequest',
      'AWS.SimpleQueueService.EmptyBatchRequest',
      'There should be at least one entry in the request.',
    ),
  notDistinct: () =>
    new SqsError(
      'BatchEntryIdsNotDistinct',
      'AWS.SimpleQueueService.BatchEntryIdsNotDistinct',
      'Two or more batch entries in the request have the same Id.',
    ),
  badId: () =>
    new SqsError(
      'InvalidBatchEntryId',
      'AWS.SimpleQueueService.InvalidBatchEntryId',
      'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.',
    ),
  tooLong: (max: number) =>
    new SqsError(
      'BatchRequestTooLong',
      'AWS.SimpleQueueService.BatchRequestTooLong',
      `Batch requests cannot be longer than ${max} bytes.`,
    ),
  receipt: (handle: string) =>
    new SqsError(
      'ReceiptHandleIsInvalid',
      'ReceiptHandleIsInvalid',
      `The input receipt handle "${handle}" is not a valid receipt handle.`,
    ),
  notInFlight: () =>
    new SqsError(
      'MessageNotInflight',
      'AWS.SimpleQueueService.MessageNotInflight',
      'Message does not exist or is not available for visibility timeout change.',
    ),
  purging: (name: string) =>
    new SqsError(
      'PurgeQueueInProgress',
      'AWS.SimpleQueueService.PurgeQueueInProgress',
      `Only one PurgeQueue operation on ${name} is allowed every 60 seconds.`,
    ),
  exists: (name: string) =>
    new SqsError(
      'QueueNameExists',
      'QueueAlreadyExists',
      `A queue already exists with the same name and a different value for attribute(s): ${name}`,
    ),
  unsupported: (what: string) =>
    new SqsError(
      'UnsupportedOperation',
      'AWS.SimpleQueueService.UnsupportedOperation',
      `${what} is not modelled by the simulated SQS`,
    ),
};

export interface SimSqsOptions {
  region?: string;
  /** Latency of each request before it runs (a long poll then waits too). Default 10 ms + up to 5 ms. */
  latency?: LatencyOptions;
  /** How many of the oldest visible messages a receive picks among. Default 4; 1 is strictly oldest first. */
  reorderWindow?: number;
  /** Largest message body (plus attributes) and batch, bytes. Default 262,144. */
  maxMessageBytes?: number;
  /** USD per million billed requests. Default 0.40 (standard queues). */
  pricePerMillion?: number;
  seed?: number;
}

type MessageAttribute = { DataType: string; StringValue?: string; BinaryValue?: string };

interface Message {
  id: string;
  body: string;
  md5: string;
  /** Body plus attributes, as SQS counts a message's size. */
  bytes: number;
  attributes: Record<string, MessageAttribute> | undefined;
  md5Attributes: string | undefined;
  sentAt: number;
  firstReceivedAt: number | undefined;
  receiveCount: number;
  /** When it becomes visible (delayed or in flight); its version changes each time it is set. */
  visibleAt: number;
  version: number;
  state: 'available' | 'invisible' | 'gone';
  receipt: string | undefined;
}

interface Waiter {
  max: number;
  visibilitySeconds: number;
  deliver: (messages: Message[]) => void;
}

export interface QueueReport {
  sent: number;
  received: number;
  /** Receives that returned a message already received before (a redelivery). */
  redelivered: number;
  deleted: number;
  movedToDeadLetter: number;
  expired: number;
  emptyReceives: number;
  visible: number;
  inFlight: number;
  delayed: number;
  maxVisible: number;
  /** The oldest message's age when it was received, ms. */
  maxAgeAtReceiveMs: number;
}

export interface SqsReport {
  requests: Record<string, number>;
  /** Requests as billed: one per call and per 64 KiB of payload. */
  billedRequests: number;
  usd: number;
  bytesSent: number;
  bytesReceived: number;
  queues: Record<string, QueueReport>;
}

class Queue {
  readonly available: Message[] = [];
  /** Index of the oldest available message in `available` (the array is compacted now and then). */
  head = 0;
  /** Delayed and in-flight messages by when they become visible (entries go stale when re-set). */
  readonly invisible: { at: number; version: number; message: Message }[] = [];
  readonly waiters: Waiter[] = [];
  wakeAt: number | undefined;
  lastPurge = Number.NEGATIVE_INFINITY;
  inFlight = 0;
  delayed = 0;
  readonly stats = {
    sent: 0,
    received: 0,
    redelivered: 0,
    deleted: 0,
    movedToDeadLetter: 0,
    expired: 0,
    emptyReceives: 0,
    maxVisible: 0,
    maxAgeAtReceiveMs: 0,
  };

  constructor(
    readonly name: string,
    readonly url: string,
    readonly arn: string,
    readonly attributes: Record<string, string>,
    readonly createdAt: number,
  ) {}

  get visibleCount(): number {
    return this.available.length - this.head;
  }

  number(name: string, fallback: number): number {
    const value = this.attributes[name];
    return value === undefined ? fallback : Number(value);
  }

  redrive(): { deadLetterTargetArn: string; maxReceiveCount: number } | undefined {
    const policy = this.attributes.RedrivePolicy;
    return policy
      ? (JSON.parse(policy) as { deadLetterTargetArn: string; maxReceiveCount: number })
      : undefined;
  }

  push(message: Message): void {
    message.state = 'available';
    this.available.push(message);
    this.stats.maxVisible = Math.max(this.stats.maxVisible, this.visibleCount);
  }

  hide(message: Message, at: number): void {
    message.state = 'invisible';
    message.visibleAt = at;
    message.version += 1;
    const entry = { at, version: message.version, message };
    const heap = this.invisible;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.at <= at) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = entry;
  }

  /** The earliest entry of the invisible heap that is still current. */
  nextVisible(): number | undefined {
    this.dropStale();
    return this.invisible[0]?.at;
  }

  popVisible(now: number): Message | undefined {
    this.dropStale();
    const top = this.invisible[0];
    if (!top || top.at > now) return undefined;
    this.popHeap();
    return top.message;
  }

  private dropStale(): void {
    for (;;) {
      const top = this.invisible[0];
      if (!top || (top.version === top.message.version && top.message.state === 'invisible')) return;
      this.popHeap();
    }
  }

  private popHeap(): void {
    const heap = this.invisible;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && heap[right]!.at < heap[left]!.at ? right : left;
      if (heap[child]!.at >= last.at) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }

  /** Takes the available message at `offset` from the oldest. */
  take(offset: number): Message {
    const index = this.head + offset;
    const message = this.available[index]!;
    this.available[index] = this.available[this.head]!;
    this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.available.length) {
      this.available.splice(0, this.head);
      this.head = 0;
    }
    return message;
  }
}

export class SimSqs implements SimService {
  private readonly queues = new Map<string, Queue>();
  private readonly byArn = new Map<string, Queue>();
  /** Messages by id, while they exist (for receipt handles). */
  private readonly messages = new Map<string, Message>();
  private readonly latency: Latency;
  private readonly region: string;
  private readonly reorderWindow: number;
  private readonly maxBytes: number;
  private readonly pricePerMillion: number;
  private readonly requests = new Map<string, number>();
  private billed = 0;
  private bytesSent = 0;
  private bytesReceived = 0;
  private receipts = 0;

  constructor(
    private readonly clock: Clock,
    options: SimSqsOptions = {},
  ) {
    this.region = options.region ?? 'us-east-1';
    this.latency = new Latency(
      options.latency?.baseMs ?? 10,
      options.latency?.jitterMs ?? 5,
      options.seed ?? 2,
    );
    this.reorderWindow = Math.max(1, options.reorderWindow ?? 4);
    this.maxBytes = options.maxMessageBytes ?? 262_144;
    this.pricePerMillion = options.pricePerMillion ?? 0.4;
  }

  /** Creates a queue directly (what CreateQueue does) and returns its URL. */
  createQueue(name: string, attributes: Record<string, string> = {}): string {
    const existing = this.queues.get(name);
    if (existing) {
      for (const [key, value] of Object.entries(attributes))
        if (existing.attributes[key] !== value) throw errors.exists(name);
      return existing.url;
    }
    if (!/^[A-Za-z0-9_-]{1,80}$/.test(name)) {
      throw errors.invalid(
        'Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length',
      );
    }
    if (attributes.FifoQueue === 'true' || name.endsWith('.fifo')) throw errors.unsupported('A FIFO queue');
    const url = `https://sqs.${this.region}.amazonaws.com/${ACCOUNT}/${name}`;
    const arn = `arn:aws:sqs:${this.region}:${ACCOUNT}:${name}`;
    const queue = new Queue(name, url, arn, { ...checkAttributes(attributes) }, this.clock.now());
    this.queues.set(name, queue);
    this.byArn.set(arn, queue);
    return url;
  }

  /** Each queue's name and attributes (not its messages): what another SimSqs needs to create the same queues. */
  definitions(): { name: string; attributes: Record<string, string> }[] {
    return [...this.queues.values()].map((q) => ({ name: q.name, attributes: { ...q.attributes } }));
  }

  /** Sends a message from inside the simulation (S3's event notifications), unbilled. */
  deliver(queueArn: string, body: string): void {
    const queue = this.byArn.get(queueArn);
    if (!queue) return;
    this.enqueue(queue, body, undefined, 0);
  }

  /** The bytes of every message sent to it (what its queues came to hold, at most). */
  heldBytes(): number {
    return this.bytesSent;
  }

  report(): SqsReport {
    return {
      requests: Object.fromEntries(this.requests),
      billedRequests: this.billed,
      usd: (this.billed * this.pricePerMillion) / 1e6,
      bytesSent: this.bytesSent,
      bytesReceived: this.bytesReceived,
      queues: Object.fromEntries(
        [...this.queues.values()].map((q) => {
          this.reclaim(q);
          return [q.name, { ...q.stats, visible: q.visibleCount, inFlight: q.inFlight, delayed: q.delayed }];
        }),
      ),
    };
  }

  async serve(request: SimRequest): Promise<ServiceResponse> {
    const target = request.headers['x-amz-target'] ?? '';
    const operation = target.startsWith('AmazonSQS.') ? target.slice('AmazonSQS.'.length) : target;
    this.requests.set(operation, (this.requests.get(operation) ?? 0) + 1);
    try {
      const input =
        request.body.length > 0 ? (JSON.parse(request.body.toString('utf8')) as Record<string, unknown>) : {};
      await this.clock.sleep(this.latency.draw());
      const { output, payload } = await this.dispatch(operation, input);
      this.billed += Math.max(1, Math.ceil(payload / CHUNK_BYTES));
      return jsonResponse(200, output);
    } catch (err) {
      this.billed += 1;
      if (!(err instanceof SqsError)) {
        if (err instanceof SyntaxError) return this.error(errors.invalid('The request body is not JSON'));
        throw err;
      }
      return this.error(err);
    }
  }

  private error(err: SqsError): ServiceResponse {
    return jsonResponse(400, { __type: `com.amazonaws.sqs#${err.code}`, message: err.message }, '1.0', {
      'x-amzn-query-error': `${err.queryCode};Sender`,
    });
  }

  private async dispatch(
    operation: string,
    input: Record<string, unknown>,
  ): Promise<{ output: unknown; payload: number }> {
    const plain = (output: unknown) => ({ output, payload: 0 });
    switch (operation) {
      case 'CreateQueue':
        return plain({
          QueueUrl: this.createQueue(
            String(input.QueueName ?? ''),
            (input.Attributes ?? {}) as Record<string, string>,
          ),
        });
      case 'GetQueueUrl': {
        const queue = this.queues.get(String(input.QueueName));
        if (!queue) throw errors.noQueue();
        return plain({ QueueUrl: queue.url });
      }
      case 'ListQueues': {
        const prefix = String(input.QueueNamePrefix ?? '');
        return plain({
          QueueUrls: [...this.queues.values()].filter((q) => q.name.startsWith(prefix)).map((q) => q.url),
        });
      }
      case 'DeleteQueue': {
        const queue = this.queue(input.QueueUrl);
        this.queues.delete(queue.name);
        this.byArn.delete(queue.arn);
        return plain({});
      }
      case 'GetQueueAttributes':
        return plain({
          Attributes: this.attributesOf(this.queue(input.QueueUrl), (input.AttributeNames ?? []) as string[]),
        });
      case 'SetQueueAttributes': {
        const queue = this.queue(input.QueueUrl);
        Object.assign(queue.attributes, checkAttributes((input.Attributes ?? {}) as Record<string, string>));
        return plain({});
      }
      case 'PurgeQueue':
        return plain(this.purge(this.queue(input.QueueUrl)));
      case 'SendMessage':
        return this.send(this.queue(input.QueueUrl), input);
      case 'SendMessageBatch':
        return this.sendBatch(this.queue(input.QueueUrl), input);
      case 'ReceiveMessage':
        return this.receive(this.queue(input.QueueUrl), input);
      case 'DeleteMessage':
        this.deleteMessage(this.queue(input.QueueUrl), String(input.ReceiptHandle ?? ''));
        return plain({});
      case 'DeleteMessageBatch':
        return plain(
          this.batch(this.queue(input.QueueUrl), input, (queue, entry) =>
            this.deleteMessage(queue, String(entry.ReceiptHandle ?? '')),
          ),
        );
      case 'ChangeMessageVisibility':
        this.changeVisibility(
          this.queue(input.QueueUrl),
          String(input.ReceiptHandle ?? ''),
          input.VisibilityTimeout,
        );
        return plain({});
      case 'ChangeMessageVisibilityBatch':
        return plain(
          this.batch(this.queue(input.QueueUrl), input, (queue, entry) =>
            this.changeVisibility(queue, String(entry.ReceiptHandle ?? ''), entry.VisibilityTimeout),
          ),
        );
      default:
        throw errors.unsupported(operation || 'this operation');
    }
  }

  private queue(url: unknown): Queue {
    const name =
      String(url ?? '')
        .split('/')
        .pop() ?? '';
    const queue = this.queues.get(name);
    if (!queue) throw errors.noQueue();
    return queue;
  }

  private attributesOf(queue: Queue, names: string[]): Record<string, string> {
    this.reclaim(queue);
    const all: Record<string, string> = {
      VisibilityTimeout: '30',
      MaximumMessageSize: String(this.maxBytes),
      MessageRetentionPeriod: '345600',
      DelaySeconds: '0',
      ReceiveMessageWaitTimeSeconds: '0',
      ...queue.attributes,
      QueueArn: queue.arn,
      ApproximateNumberOfMessages: String(queue.visibleCount),
      ApproximateNumberOfMessagesNotVisible: String(queue.inFlight),
      ApproximateNumberOfMessagesDelayed: String(queue.delayed),
      CreatedTimestamp: String(Math.floor(queue.createdAt / 1000)),
      LastModifiedTimestamp: String(Math.floor(queue.createdAt / 1000)),
    };
    if (names.includes('All')) return all;
    return Object.fromEntries(names.filter((n) => all[n] !== undefined).map((n) => [n, all[n]!]));
  }

  private purge(queue: Queue): unknown {
    const now = this.clock.now();
    if (now - queue.lastPurge < PURGE_INTERVAL_MS) throw errors.purging(queue.name);
    queue.lastPurge = now;
    for (let i = queue.head; i < queue.available.length; i++) this.forget(queue.available[i]!);
    queue.available.length = 0;
    queue.head = 0;
    for (const entry of queue.invisible) if (entry.message.state === 'invisible') this.forget(entry.message);
    queue.invisible.length = 0;
    queue.inFlight = 0;
    queue.delayed = 0;
    return {};
  }

  private forget(message: Message): void {
    message.state = 'gone';
    this.messages.delete(message.id);
  }

  // --- Sending ---------------------------------------------------------------------------------

  private checkMessage(
    body: unknown,
    attributes: unknown,
  ): { body: string; attributes: Record<string, MessageAttribute> | undefined; bytes: number } {
    if (typeof body !== 'string' || body.length === 0)
      throw errors.invalid('The request must contain the parameter MessageBody.');
    // The characters SQS accepts: tab, newline, carriage return, and U+0020 and above but the
    // surrogates (unpaired) and U+FFFE/U+FFFF.
    if (
      /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\uD800-\uDFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(
        body,
      )
    ) {
      throw new SqsError(
        'InvalidMessageContents',
        'InvalidMessageContents',
        'Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF',
      );
    }
    const attrs = attributes as Record<string, MessageAttribute> | undefined;
    let bytes = Buffer.byteLength(body);
    for (const [name, value] of Object.entries(attrs ?? {})) {
      bytes +=
        Buffer.byteLength(name) +
        Buffer.byteLength(value.DataType) +
        (value.StringValue !== undefined
          ? Buffer.byteLength(value.StringValue)
          : Buffer.byteLength(value.BinaryValue ?? '', 'base64'));
    }
    if (bytes > this.maxBytes) {
      throw errors.invalid(
        `One or more parameters are invalid. Reason: Message must be shorter than ${this.maxBytes} bytes.`,
      );
    }
    return { body, attributes: attrs && Object.keys(attrs).length > 0 ? attrs : undefined, bytes };
  }

  private enqueue(
    queue: Queue,
    body: string,
    attributes: Record<string, MessageAttribute> | undefined,
    delaySeconds: number,
  ): Message {
    const now = this.clock.now();
    const message: Message = {
      id: randomUUID(),
      body,
      md5: createHash('md5').update(body, 'utf8').digest('hex'),
      bytes: Buffer.byteLength(body),
      attributes,
      md5Attributes: attributes ? md5OfAttributes(attributes) : undefined,
      sentAt: now,
      firstReceivedAt: undefined,
      receiveCount: 0,
      visibleAt: now,
      version: 0,
      state: 'available',
      receipt: undefined,
    };
    this.messages.set(message.id, message);
    queue.stats.sent += 1;
    if (delaySeconds > 0) {
      queue.delayed += 1;
      queue.hide(message, now + delaySeconds * 1000);
      this.scheduleWake(queue);
    } else {
      queue.push(message);
      this.wake(queue);
    }
    return message;
  }

  private delayOf(queue: Queue, given: unknown): number {
    const delay = given === undefined ? queue.number('DelaySeconds', 0) : Number(given);
    if (!(delay >= 0 && delay <= 900))
      throw errors.invalid(
        `Value ${String(given)} for parameter DelaySeconds is invalid. Reason: must be between 0 and 900.`,
      );
    return delay;
  }

  private send(queue: Queue, input: Record<string, unknown>): { output: unknown; payload: number } {
    const checked = this.checkMessage(input.MessageBody, input.MessageAttributes);
    const message = this.enqueue(
      queue,
      checked.body,
      checked.attributes,
      this.delayOf(queue, input.DelaySeconds),
    );
    this.bytesSent += checked.bytes;
    return {
      output: {
        MessageId: message.id,
        MD5OfMessageBody: message.md5,
        ...(message.md5Attributes ? { MD5OfMessageAttributes: message.md5Attributes } : {}),
      },
      payload: checked.bytes,
    };
  }

  private sendBatch(queue: Queue, input: Record<string, unknown>): { output: unknown; payload: number } {
    const entries = this.checkEntries(input.Entries);
    const total = entries.reduce((n, e) => n + Buffer.byteLength(String(e.MessageBody ?? '')), 0);
    if (total > this.maxBytes) throw errors.tooLong(this.maxBytes);
    const successful: unknown[] = [];
    const failed: unknown[] = [];
    let payload = 0;
    for (const entry of entries) {
      try {
        const checked = this.checkMessage(entry.MessageBody, entry.MessageAttributes);
        const message = this.enqueue(
          queue,
          checked.body,
          checked.attributes,
          this.delayOf(queue, entry.DelaySeconds),
        );
        payload += checked.bytes;
        successful.push({
          Id: entry.Id,
          MessageId: message.id,
          MD5OfMessageBody: message.md5,
          ...(message.md5Attributes ? { MD5OfMessageAttributes: message.md5Attributes } : {}),
        });
      } catch (err) {
        if (!(err instanceof SqsError)) throw err;
        failed.push({ Id: entry.Id, SenderFault: true, Code: err.queryCode, Message: err.message });
      }
    }
    this.bytesSent += payload;
    return { output: { Successful: successful, Failed: failed }, payload };
  }

  private checkEntries(given: unknown): Record<string, unknown>[] {
    const entries = (given ?? []) as Record<string, unknown>[];
    if (entries.length === 0) throw errors.empty();
    if (entries.length > MAX_BATCH) throw errors.tooMany();
    const ids = entries.map((e) => String(e.Id ?? ''));
    if (ids.some((id) => !/^[A-Za-z0-9_-]{1,80}$/.test(id))) throw errors.badId();
    if (new Set(ids).size !== ids.length) throw errors.notDistinct();
    return entries;
  }

  // --- Receiving -------------------------------------------------------------------------------

  private async receive(
    queue: Queue,
    input: Record<string, unknown>,
  ): Promise<{ output: unknown; payload: number }> {
    const max = input.MaxNumberOfMessages === undefined ? 1 : Number(input.MaxNumberOfMessages);
    if (!(max >= 1 && max <= MAX_BATCH)) {
      throw errors.invalid(
        `Value ${String(input.MaxNumberOfMessages)} for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.`,
      );
    }
    const visibilitySeconds =
      input.VisibilityTimeout === undefined
        ? queue.number('VisibilityTimeout', 30)
        : Number(input.VisibilityTimeout);
    if (!(visibilitySeconds >= 0 && visibilitySeconds <= MAX_VISIBILITY_SECONDS)) {
      throw errors.invalid(
        `Value ${String(input.VisibilityTimeout)} for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.`,
      );
    }
    const waitSeconds =
      input.WaitTimeSeconds === undefined
        ? queue.number('ReceiveMessageWaitTimeSeconds', 0)
        : Number(input.WaitTimeSeconds);
    if (!(waitSeconds >= 0 && waitSeconds <= 20)) {
      throw errors.invalid(
        `Value ${String(input.WaitTimeSeconds)} for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.`,
      );
    }
    let messages = this.takeMessages(queue, max, visibilitySeconds);
    if (messages.length === 0 && waitSeconds > 0)
      messages = await this.longPoll(queue, max, visibilitySeconds, waitSeconds);
    if (messages.length === 0) queue.stats.emptyReceives += 1;
    const systemNames = [
      ...((input.MessageSystemAttributeNames ?? []) as string[]),
      ...((input.AttributeNames ?? []) as string[]),
    ];
    const attributeNames = (input.MessageAttributeNames ?? []) as string[];
    let payload = 0;
    const out = messages.map((m) => {
      payload += m.bytes;
      const attributes = systemAttributes(m, systemNames);
      const messageAttributes = pickAttributes(m.attributes, attributeNames);
      return {
        MessageId: m.id,
        ReceiptHandle: m.receipt,
        MD5OfBody: m.md5,
        Body: m.body,
        ...(attributes ? { Attributes: attributes } : {}),
        ...(messageAttributes
          ? {
              MessageAttributes: messageAttributes,
              MD5OfMessageAttributes: md5OfAttributes(messageAttributes),
            }
          : {}),
      };
    });
    this.bytesReceived += payload;
    return { output: out.length > 0 ? { Messages: out } : {}, payload };
  }

  private longPoll(
    queue: Queue,
    max: number,
    visibilitySeconds: number,
    waitSeconds: number,
  ): Promise<Message[]> {
    return new Promise<Message[]>((resolve) => {
      const stop = new AbortController();
      const waiter: Waiter = {
        max,
        visibilitySeconds,
        deliver: (messages) => {
          stop.abort();
          resolve(messages);
        },
      };
      queue.waiters.push(waiter);
      this.scheduleWake(queue);
      this.clock.sleep(waitSeconds * 1000, stop.signal).then(
        () => {
          const i = queue.waiters.indexOf(waiter);
          if (i >= 0) queue.waiters.splice(i, 1);
          resolve([]);
        },
        () => {},
      );
    });
  }

  /** Moves messages whose delay or visibility timeout ran out back among the visible ones. */
  private reclaim(queue: Queue): void {
    const now = this.clock.now();
    for (let message = queue.popVisible(now); message; message = queue.popVisible(now)) {
      if (message.receipt === undefined) queue.delayed -= 1;
      else queue.inFlight -= 1;
      queue.push(message);
    }
  }

  /** Up to `max` visible messages, now in flight; those past their receives go to the dead-letter queue. */
  private takeMessages(queue: Queue, max: number, visibilitySeconds: number): Message[] {
    this.reclaim(queue);
    const now = this.clock.now();
    const retentionMs = queue.number('MessageRetentionPeriod', 345_600) * 1000;
    const redrive = queue.redrive();
    const taken: Message[] = [];
    while (taken.length < max && queue.visibleCount > 0) {
      const window = Math.min(this.reorderWindow, queue.visibleCount);
      const message = queue.take(window > 1 ? Math.floor(this.latency.random() * window) : 0);
      if (now - message.sentAt > retentionMs) {
        queue.stats.expired += 1;
        this.forget(message);
        continue;
      }
      if (redrive && message.receiveCount >= redrive.maxReceiveCount) {
        const deadLetter = this.byArn.get(redrive.deadLetterTargetArn);
        queue.stats.movedToDeadLetter += 1;
        if (deadLetter) {
          deadLetter.stats.sent += 1;
          message.receipt = undefined;
          deadLetter.push(message);
          this.wake(deadLetter);
        } else {
          this.forget(message);
        }
        continue;
      }
      message.receiveCount += 1;
      message.firstReceivedAt ??= now;
      message.receipt = this.receiptFor(queue, message);
      queue.stats.received += 1;
      if (message.receiveCount > 1) queue.stats.redelivered += 1;
      queue.stats.maxAgeAtReceiveMs = Math.max(queue.stats.maxAgeAtReceiveMs, now - message.sentAt);
      queue.inFlight += 1;
      queue.hide(message, now + visibilitySeconds * 1000);
      taken.push(message);
    }
    if (queue.waiters.length > 0 && taken.length > 0) this.scheduleWake(queue);
    return taken;
  }

  /** Hands visible messages to the long polls waiting on the queue, oldest poll first. */
  private wake(queue: Queue): void {
    while (queue.waiters.length > 0) {
      this.reclaim(queue);
      if (queue.visibleCount === 0) break;
      const waiter = queue.waiters.shift()!;
      const messages = this.takeMessages(queue, waiter.max, waiter.visibilitySeconds);
      if (messages.length === 0) {
        queue.waiters.unshift(waiter);
        break;
      }
      waiter.deliver(messages);
    }
    this.scheduleWake(queue);
  }

  /** While long polls wait, wakes them when the next delayed or in-flight message becomes visible. */
  private scheduleWake(queue: Queue): void {
    if (queue.waiters.length === 0) return;
    const at = queue.nextVisible();
    if (at === undefined || (queue.wakeAt !== undefined && queue.wakeAt <= at)) return;
    queue.wakeAt = at;
    void this.clock.sleep(Math.max(0, at - this.clock.now())).then(() => {
      if (queue.wakeAt === at) queue.wakeAt = undefined;
      this.wake(queue);
    });
  }

  private receiptFor(queue: Queue, message: Message): string {
    this.receipts += 1;
    return Buffer.from(JSON.stringify({ q: queue.name, m: message.id, n: this.receipts })).toString(
      'base64url',
    );
  }

  /** The message a receipt handle names, and whether the handle is its latest. */
  private byReceipt(queue: Queue, handle: string): { message: Message | undefined; current: boolean } {
    let decoded: { q?: string; m?: string };
    try {
      decoded = JSON.parse(Buffer.from(handle, 'base64url').toString('utf8')) as { q?: string; m?: string };
    } catch {
      throw errors.receipt(handle);
    }
    if (decoded.q !== queue.name || typeof decoded.m !== 'string') throw errors.receipt(handle);
    const message = this.messages.get(decoded.m);
    return { message, current: message?.receipt === handle };
  }

  /** Deletes by receipt handle; a handle of an earlier receive, or of a message gone, deletes nothing (as SQS may). */
  private deleteMessage(queue: Queue, handle: string): void {
    const { message, current } = this.byReceipt(queue, handle);
    if (!message || !current) return;
    if (message.state === 'invisible') queue.inFlight -= 1;
    else if (message.state === 'available') {
      const index = queue.available.indexOf(message, queue.head);
      if (index >= 0) {
        queue.available[index] = queue.available[queue.head]!;
        queue.head += 1;
      }
    }
    queue.stats.deleted += 1;
    this.forget(message);
  }

  private changeVisibility(queue: Queue, handle: string, seconds: unknown): void {
    const timeout = Number(seconds);
    if (!(timeout >= 0 && timeout <= MAX_VISIBILITY_SECONDS)) {
      throw errors.invalid(
        `Value ${String(seconds)} for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200.`,
      );
    }
    const { message, current } = this.byReceipt(queue, handle);
    if (!message || !current || message.state !== 'invisible') throw errors.notInFlight();
    if (timeout === 0) {
      queue.inFlight -= 1;
      message.version += 1;
      queue.push(message);
      this.wake(queue);
    } else {
      queue.hide(message, this.clock.now() + timeout * 1000);
      this.scheduleWake(queue);
    }
  }

  private batch(
    queue: Queue,
    input: Record<string, unknown>,
    run: (queue: Queue, entry: Record<string, unknown>) => void,
  ): unknown {
    const entries = this.checkEntries(input.Entries);
    const successful: unknown[] = [];
    const failed: unknown[] = [];
    for (const entry of entries) {
      try {
        run(queue, entry);
        successful.push({ Id: entry.Id });
      } catch (err) {
        if (!(err instanceof SqsError)) throw err;
        failed.push({ Id: entry.Id, SenderFault: true, Code: err.queryCode, Message: err.message });
      }
    }
    return { Successful: successful, Failed: failed };
  }
}

function checkAttributes(attributes: Record<string, string>): Record<string, string> {
  const known = new Set([
    'DelaySeconds',
    'MaximumMessageSize',
    'MessageRetentionPeriod',
    'Policy',
    'ReceiveMessageWaitTimeSeconds',
    'RedrivePolicy',
    'RedriveAllowPolicy',
    'VisibilityTimeout',
    'KmsMasterKeyId',
    'KmsDataKeyReusePeriodSeconds',
    'SqsManagedSseEnabled',
    'FifoQueue',
    'ContentBasedDeduplication',
  ]);
  for (const name of Object.keys(attributes)) {
    if (!known.has(name))
      throw new SqsError('InvalidAttributeName', 'InvalidAttributeName', `Unknown Attribute ${name}.`);
  }
  if (attributes.RedrivePolicy !== undefined) {
    const policy = JSON.parse(attributes.RedrivePolicy) as {
      deadLetterTargetArn?: string;
      maxReceiveCount?: unknown;
    };
    if (
      !policy.deadLetterTargetArn ||
      !(Number(policy.maxReceiveCount) >= 1 && Number(policy.maxReceiveCount) <= 1000)
    ) {
      throw new SqsError(
        'InvalidAttributeValue',
        'InvalidAttributeValue',
        `Value ${attributes.RedrivePolicy} for parameter RedrivePolicy is invalid.`,
      );
    }
  }
  const visibility = attributes.VisibilityTimeout;
  if (
    visibility !== undefined &&
    !(Number(visibility) >= 0 && Number(visibility) <= MAX_VISIBILITY_SECONDS)
  ) {
    throw new SqsError(
      'InvalidAttributeValue',
      'InvalidAttributeValue',
      `Invalid value for the parameter VisibilityTimeout.`,
    );
  }
  return attributes;
}

function systemAttributes(message: Message, names: string[]): Record<string, string> | undefined {
  if (names.length === 0) return undefined;
  const all: Record<string, string> = {
    SenderId: ACCOUNT,
    SentTimestamp: String(Math.floor(message.sentAt)),
    ApproximateReceiveCount: String(message.receiveCount),
    ApproximateFirstReceiveTimestamp: String(Math.floor(message.firstReceivedAt ?? message.sentAt)),
  };
  if (names.includes('All')) return all;
  const picked = Object.fromEntries(names.filter((n) => all[n] !== undefined).map((n) => [n, all[n]!]));
  return Object.keys(picked).length > 0 ? picked : undefined;
}

function pickAttributes(
  attributes: Record<string, MessageAttribute> | undefined,
  names: string[],
): Record<string, MessageAttribute> | undefined {
  if (!attributes || names.length === 0) return undefined;
  const picked = Object.fromEntries(
    Object.entries(attributes).filter(([name]) =>
      names.some(
        (n) =>
          n === 'All' || n === '.*' || n === name || (n.endsWith('.*') && name.startsWith(n.slice(0, -1))),
      ),
    ),
  );
  return Object.keys(picked).length > 0 ? picked : undefined;
}

/**
 * The MD5 SQS returns for message attributes: over the attributes sorted by name, each as its
 * name, data type, a transport byte (1 string, 2 binary) and value, every field but the byte
 * preceded by its length in four big-endian bytes.
 */
export function md5OfAttributes(attributes: Record<string, MessageAttribute>): string {
  const hash = createHash('md5');
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length);
    hash.update(bytes);
  };
  for (const name of Object.keys(attributes).sort()) {
    const value = attributes[name]!;
    field(Buffer.from(name, 'utf8'));
    field(Buffer.from(value.DataType, 'utf8'));
    if (value.BinaryValue !== undefined) {
      hash.update(Buffer.from([2]));
      field(Buffer.from(value.BinaryValue, 'base64'));
    } else {
      hash.update(Buffer.from([1]));
      field(Buffer.from(value.StringValue ?? '', 'utf8'));
    }
  }
  return hash.digest('hex');
}
