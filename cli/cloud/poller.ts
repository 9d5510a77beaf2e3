/**
 * Drives SQS-triggered handlers the way Lambda's event source mapping does: receive a batch,
 * build the real `SQSEvent`, invoke the handler with a Lambda `Context`, delete the records it
 * did not report in `batchItemFailures`, and leave the failed ones for SQS to deliver again
 * after the visibility timeout (and to move to the DLQ after `maxReceiveCount`). A handler runs
 * in this process (an in-process source, for the integration tests) or in the function's
 * containers, held to its timeout, memory and /tmp (containers.ts; the local cloud). Used
 * against moto.
 */

import { setTimeout as wallSleep } from 'node:timers/promises';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { ServiceError } from '../../shared/model/errors.js';
import { type ContainerConfig, type ContainerReport, Containers } from './containers.js';
import { lambdaContext } from './lambda-context.js';

export { lambdaContext };

/** A Lambda handler for SQS events (an undefined result means every record succeeded). */
export type SqsFunctionHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

/** What every queue → function mapping has. */
interface EventSourceBase {
  /** The function's name, in the Context and in invocation reports (e.g. `worker`). */
  functionName: string;
  queueUrl: string;
  queueArn: string;
  /** Records per invocation, 1–10 (the mapping's BatchSize). Default 10. */
  batchSize?: number;
  /** Invocations in flight at once (the mapping's maximum concurrency). Default 1. */
  concurrency?: number;
}

/** A mapping to a handler run in this process: nothing stops it or limits its memory. */
export interface HandlerEventSource extends EventSourceBase {
  handler: SqsFunctionHandler;
  /** The function timeout, as `context.getRemainingTimeInMillis()` counts it down. Default 60 s. */
  timeoutMs?: number;
}

/**
 * A mapping to a function run in containers (worker threads of its own, see containers.ts),
 * held to the function's timeout, memory and /tmp; at most `concurrency` containers at once.
 */
export interface ContainerEventSource extends EventSourceBase {
  container: ContainerConfig;
}

/** One queue → function mapping. */
export type EventSource = HandlerEventSource | ContainerEventSource;

/** What one invocation did. */
export interface Invocation {
  functionName: string;
  /** Records in the event. */
  records: number;
  /** Records left on the queue for redelivery (reported failures, or all when it threw). */
  failed: number;
  /**
   * Set when the handler threw, or its container was killed (a `ContainerKilledError`): the
   * whole batch goes back to the queue.
   */
  error?: unknown;
  durationMs: number;
  /** For a container source: the container that ran it, and why it was killed, if it was. */
  container?: ContainerReport;
}

export interface PollerOptions {
  sqs: SQSClient;
  /** The region put in each record's `awsRegion`. */
  region: string;
  sources: EventSource[];
  /**
   * Pause after a receive that returned nothing, ms; it doubles with each empty receive in a
   * row on the same lane, up to {@link maxIdleDelayMs}, and is back to this after a receive
   * that returned messages. Default 100.
   */
  idleDelayMs?: number;
  /**
   * The longest pause of a lane whose queue keeps coming back empty, ms. Default 1000. Lambda
   * long-polls (an empty queue costs it a call every 20 s); moto answers one request at a time
   * and cannot long-poll without holding every other request, so an idle lane backs off
   * instead of asking ten times a second while the other queues do the work.
   */
  maxIdleDelayMs?: number;
  onInvocation?: (invocation: Invocation) => void;
  /**
   * Where the container sources run. Default a set of the poller's own. The poller stops every
   * container when a run ({@link QueuePoller.runUntil}, {@link QueuePoller.drain}) ends, and
   * closes them in {@link QueuePoller.close}.
   */
  containers?: Containers;
  /** The clock the waits and the give-up points are measured on (tests simulate it). Default the real one. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface RunOptions {
  /**
   * Give up (PollTimeoutError) after this long, progress or not: a guard against a hang, not a
   * measure of a pipeline. Default {@link HANG_GUARD_MS} without `stallTimeoutMs`, else no limit.
   */
  timeoutMs?: number;
  /**
   * Give up (PollStalledError) once this long has passed without progress: no invocation
   * handled a record (took it off its queue) and nobody called {@link QueuePoller.progressed}.
   * A slow pipeline that keeps going is waited for, however long it takes.
   */
  stallTimeoutMs?: number;
  /**
   * Give up (PollStalledError) after this many checks in a row in which nothing ran: every
   * receive came back empty, no invocation was in progress and nobody called
   * {@link QueuePoller.progressed}. Counted in checks, not time: a loaded machine makes each
   * check take longer, never adds checks to a pipeline that is working. Default
   * {@link DEFAULT_IDLE_CHECKS} without `stallTimeoutMs`, else none.
   */
  idleChecks?: number;
  /** How often the stop condition is checked, ms. Default {@link CHECK_EVERY_MS}. */
  checkEveryMs?: number;
  /** Poll only these functions (by name). Default: every source. */
  only?: string[];
}

/** How often {@link QueuePoller.runUntil} checks its stop condition by default, ms. */
export const CHECK_EVERY_MS = 200;

/**
 * Checks in a row with nothing to run before {@link QueuePoller.runUntil} gives up, by default:
 * at the default check period at least two minutes with every queue empty or waiting, longer than
 * the local queues' visibility timeout (SQS's default, 30 s), so a failed record coming back
 * is waited for.
 */
export const DEFAULT_IDLE_CHECKS = 600;

/** The default hard limit of {@link QueuePoller.runUntil}: ten minutes, only against a hang. */
export const HANG_GUARD_MS = 600_000;

/** The stop condition was not met in time. The message lists what is left on each queue. */
export class PollTimeoutError extends ServiceError {
  override readonly name: string = 'PollTimeoutError';
}

/** Nothing progressed for the stall timeout. The message lists what is left on each queue. */
export class PollStalledError extends PollTimeoutError {
  override readonly name = 'PollStalledError';
  constructor(
    message: string,
    /** How long nothing progressed, ms. */
    readonly stalledMs: number,
  ) {
    super(message);
  }
}

export class QueuePoller {
  private readonly sqs: SQSClient;
  private readonly region: string;
  private readonly sources: EventSource[];
  private readonly idleDelayMs: number;
  private readonly maxIdleDelayMs: number;
  private readonly onInvocation: ((invocation: Invocation) => void) | undefined;
  private readonly containers: Containers;
  /** Receives and invocations in progress. */
  private busy = 0;
  /** Invocations in progress. */
  private invoking = 0;
  /** While > 0, lanes start no new receive (see {@link idle}). */
  private paused = 0;
  /** When something last progressed (see {@link progressed}). */
  private lastProgress: number;
  /** Receives that delivered messages, and progress marked from outside: what an idle check looks for. */
  private activity = 0;
  /** When {@link activity} last moved. */
  private lastActivity: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor({
    sqs,
    region,
    sources,
    idleDelayMs = 100,
    maxIdleDelayMs = 1000,
    onInvocation,
    containers = new Containers(),
    now = Date.now,
    sleep = (ms) => wallSleep(ms),
  }: PollerOptions) {
    for (const source of sources) {
      const batch = source.batchSize ?? 10;
      if (!Number.isInteger(batch) || batch < 1 || batch > 10) {
        throw new RangeError(
          `${source.functionName}: batchSize must be 1–10 (one ReceiveMessage), got ${batch}`,
        );
      }
    }
    this.sqs = sqs;
    this.region = region;
    this.sources = sources;
    this.idleDelayMs = idleDelayMs;
    this.maxIdleDelayMs = Math.max(idleDelayMs, maxIdleDelayMs);
    this.onInvocation = onInvocation;
    this.containers = containers;
    this.now = now;
    this.sleep = sleep;
    this.lastProgress = now();
    this.lastActivity = this.lastProgress;
  }

  /**
   * Marks progress made outside the queues (e.g. a batch poller pass that submitted or
   * collected a vendor batch), so {@link RunOptions.stallTimeoutMs} does not give up on it.
   * An invocation that handled at least one record marks it by itself.
   */
  progressed(): void {
    this.lastProgress = this.now();
    this.markActivity();
  }

  private markActivity(): void {
    this.activity += 1;
    this.lastActivity = this.now();
  }

  /**
   * One receive for `functionName`'s queue and, if it returned messages, one invocation.
   * Undefined when the queue had nothing to deliver.
   */
  async pollOnce(functionName: string): Promise<Invocation | undefined> {
    return this.poll(this.source(functionName));
  }

  /**
   * Polls the sources (each with `concurrency` lanes) until `until()` returns true. Throws
   * {@link PollStalledError} when nothing progressed for `stallTimeoutMs` or nothing ran for
   * `idleChecks` checks, {@link PollTimeoutError} when `timeoutMs` passes first, or the first
   * error a lane hit (SQS itself failing; handler errors are the handler's business and only
   * fail records). Returns after the invocations in
   * progress finished, and the containers are stopped (an invocation a stall left running in
   * one is killed with it).
   */
  async runUntil(until: () => boolean | Promise<boolean>, options: RunOptions = {}): Promise<void> {
    const { stallTimeoutMs, checkEveryMs = CHECK_EVERY_MS } = options;
    const timeoutMs = options.timeoutMs ?? (stallTimeoutMs === undefined ? HANG_GUARD_MS : undefined);
    const idleChecks = options.idleChecks ?? (stallTimeoutMs === undefined ? DEFAULT_IDLE_CHECKS : undefined);
    const sources = options.only ? options.only.map((name) => this.source(name)) : this.sources;
    const deadline = timeoutMs === undefined ? undefined : this.now() + timeoutMs;
    this.progressed();
    let quietChecks = 0;
    let activitySeen = this.activity;
    let stopped = false;
    let stalled = false;
    let laneError: { error: unknown } | undefined;
    const lane = async (source: EventSource) => {
      let pause = this.idleDelayMs;
      while (!stopped && !laneError) {
        if (this.paused > 0) {
          await this.sleep(this.idleDelayMs);
          continue;
        }
        if (await this.poll(source)) {
          pause = this.idleDelayMs;
          continue;
        }
        await this.sleep(pause);
        pause = Math.min(pause * 2, this.maxIdleDelayMs);
      }
    };
    const lanes = sources.flatMap((source) =>
      Array.from({ length: source.concurrency ?? 1 }, () =>
        lane(source).catch((error: unknown) => {
          laneError ??= { error };
        }),
      ),
    );
    try {
      while (true) {
        if (laneError) throw laneError.error;
        if (await until()) return;
        const stalledMs = this.now() - this.lastProgress;
        if (stallTimeoutMs !== undefined && stalledMs > stallTimeoutMs) {
          stalled = true;
          throw new PollStalledError(
            `no progress for ${stalledMs} ms (the stall timeout is ${stallTimeoutMs} ms): ${await this.describe(sources)}`,
            stalledMs,
          );
        }
        // A check with an invocation running, or after a receive delivered, is not idle.
        if (this.invoking > 0 || this.activity !== activitySeen) quietChecks = 0;
        else quietChecks += 1;
        activitySeen = this.activity;
        if (idleChecks !== undefined && quietChecks >= idleChecks) {
          const quietMs = this.now() - this.lastActivity;
          throw new PollStalledError(
            `nothing ran for ${quietChecks} checks in a row (${quietMs} ms): ${await this.describe(sources)}`,
            quietMs,
          );
        }
        if (deadline !== undefined && this.now() > deadline) {
          throw new PollTimeoutError(
            `queues not done after ${timeoutMs} ms: ${await this.describe(sources)}`,
          );
        }
        await this.sleep(checkEveryMs);
      }
    } finally {
      stopped = true;
      // Giving up on a stall does not wait for the invocations that stalled it; those in
      // containers end with them.
      if (!stalled) await Promise.all(lanes);
      await this.containers.stop();
    }
  }

  /** Terminates the containers of the sources; none starts after. */
  async close(): Promise<void> {
    await this.containers.close();
  }

  /** Polls until {@link idle}: every message of these sources handled, none waiting for redelivery. */
  async drain(options: RunOptions = {}): Promise<void> {
    await this.runUntil(() => this.idle(options.only), options);
  }

  /**
   * True when the queues of these sources (default: all) hold no message (visible, in flight
   * or delayed) and no invocation is running. Lanes are held while the queues are read, so a
   * message cannot move between two queues (a handler's send, a redrive) mid-check. A running
   * invocation answers false at once: the check never holds the lanes (nor the caller's stall
   * watch) for as long as a slow invocation takes.
   */
  async idle(only?: string[]): Promise<boolean> {
    const sources = only ? only.map((name) => this.source(name)) : this.sources;
    if (this.invoking > 0) return false;
    this.paused += 1;
    try {
      while (this.busy > 0) {
        if (this.invoking > 0) return false;
        await this.sleep(10);
      }
      const depths = await Promise.all(sources.map((source) => this.depth(source.queueUrl)));
      return depths.every((d) => d.visible + d.inFlight + d.delayed === 0);
    } finally {
      this.paused -= 1;
    }
  }

  private source(functionName: string): EventSource {
    const source = this.sources.find((s) => s.functionName === functionName);
    if (!source) throw new Error(`no event source for function ${functionName}`);
    return source;
  }

  private async poll(source: EventSource): Promise<Invocation | undefined> {
    this.busy += 1;
    try {
      const out = await this.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: source.queueUrl,
          MaxNumberOfMessages: source.batchSize ?? 10,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
      );
      const messages = out.Messages ?? [];
      if (messages.length === 0) return undefined;
      this.markActivity();
      this.invoking += 1;
      try {
        return await this.invoke(source, messages);
      } finally {
        this.invoking -= 1;
      }
    } finally {
      this.busy -= 1;
    }
  }

  private async invoke(source: EventSource, messages: Message[]): Promise<Invocation> {
    const event: SQSEvent = { Records: messages.map((m) => sqsRecord(m, source.queueArn, this.region)) };
    const started = this.now();
    let failedIds: Set<string>;
    let error: unknown;
    let container: ContainerReport | undefined;
    try {
      let response: SQSBatchResponse | undefined;
      if ('container' in source) {
        const outcome = await this.containers
          .pool(source.functionName, source.container, source.concurrency ?? 1)
          .invoke(event, { region: this.region, account: accountOf(source.queueArn) });
        container = outcome.container;
        if (!outcome.ok) throw outcome.error;
        response = outcome.response as SQSBatchResponse | undefined;
      } else {
        response = await source.handler(event, this.context(source, started));
      }
      failedIds = failuresOf(response, event);
    } catch (thrown) {
      // A function error (or its container killed): Lambda deletes nothing, every record comes back.
      error = thrown;
      failedIds = new Set(event.Records.map((r) => r.messageId));
    }
    const succeeded = event.Records.filter((r) => !failedIds.has(r.messageId));
    if (succeeded.length > 0) {
      this.progressed();
      // A delete that fails (receipt handle expired because the handler outran the visibility
      // timeout) only means a redelivery, which the handlers absorb: as on Lambda.
      await this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: source.queueUrl,
          Entries: succeeded.map((r, i) => ({ Id: `d${i}`, ReceiptHandle: r.receiptHandle })),
        }),
      );
    }
    const invocation: Invocation = {
      functionName: source.functionName,
      records: event.Records.length,
      failed: failedIds.size,
      durationMs: this.now() - started,
      ...(error === undefined ? {} : { error }),
      ...(container === undefined ? {} : { container }),
    };
    this.onInvocation?.(invocation);
    return invocation;
  }

  private context(source: HandlerEventSource, started: number): Context {
    return lambdaContext({
      functionName: source.functionName,
      region: this.region,
      account: accountOf(source.queueArn),
      deadline: started + (source.timeoutMs ?? 60_000),
    });
  }

  private async depth(queueUrl: string): Promise<{ visible: number; inFlight: number; delayed: number }> {
    const { Attributes = {} } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    return {
      visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
      delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0),
    };
  }

  private async describe(sources: EventSource[]): Promise<string> {
    const parts = await Promise.all(
      sources.map(async (source) => {
        const d = await this.depth(source.queueUrl);
        return `${source.functionName} queue: ${d.visible} visible, ${d.inFlight} in flight, ${d.delayed} delayed`;
      }),
    );
    return parts.join('; ');
  }
}

/** The account of a queue's ARN (`arn:aws:sqs:<region>:<account>:<name>`). */
function accountOf(queueArn: string): string | undefined {
  return queueArn.split(':')[4] || undefined;
}

/**
 * The records a response reports as failed. As on Lambda, a response that names a record not
 * in the batch (or an empty identifier) fails the whole batch.
 */
function failuresOf(response: SQSBatchResponse | undefined, event: SQSEvent): Set<string> {
  const all = new Set(event.Records.map((r) => r.messageId));
  const failures = response?.batchItemFailures ?? [];
  const ids = new Set(failures.map((f) => f.itemIdentifier));
  for (const id of ids) if (!id || !all.has(id)) return all;
  return ids;
}

/**
 * The record Lambda builds from a received message (the local cloud's poller and the capacity
 * model's both hand their handlers these); `now` stands in for a send time SQS did not give.
 */
export function sqsRecord(
  message: Message,
  queueArn: string,
  region: string,
  now: () => number = Date.now,
): SQSRecord {
  const attributes = (message.Attributes ?? {}) as Record<string, string>;
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = {
      dataType: value.DataType ?? 'String',
      stringListValues: value.StringListValues ?? [],
      binaryListValues: [],
      ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
      ...(value.BinaryValue === undefined
        ? {}
        : { binaryValue: Buffer.from(value.BinaryValue).toString('base64') }),
    };
  }
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ...attributes,
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? String(now()),
      SenderId: attributes.SenderId ?? '',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(now()),
    },
    messageAttributes,
    md5OfBody: message.MD5OfBody ?? '',
    ...(message.MD5OfMessageAttributes === undefined
      ? {}
      : { md5OfMessageAttributes: message.MD5OfMessageAttributes }),
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}
