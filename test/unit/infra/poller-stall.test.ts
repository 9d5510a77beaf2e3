/**
 * The local cloud's poller waits for a pipeline as long as it makes progress, and gives up on
 * one that stopped after the stall timeout: on a simulated clock, against an in-memory SQS
 * (receive, visibility timeout, delete, queue depths), with handlers that take simulated time.
 */
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_IDLE_CHECKS,
  PollStalledError,
  PollTimeoutError,
  QueuePoller,
  type SqsFunctionHandler,
} from '../../../cli/cloud/poller.js';
import { SimClock } from '../../fakes/sim-clock.js';

/** One SQS queue in memory, on the simulated clock: a received message is hidden for the visibility timeout. */
class MemorySqs {
  private readonly messages: { id: string; body: string; visibleAt: number; receipt?: string }[] = [];
  private receipts = 0;
  /** ReceiveMessage calls, empty or not. */
  receives = 0;

  constructor(
    private readonly clock: SimClock,
    private readonly visibilityMs = 60_000,
    /** How long each call takes, ms (a loaded machine). */
    private readonly callMs = 0,
  ) {}

  add(count: number): void {
    for (let i = 0; i < count; i++)
      this.messages.push({ id: `m${this.messages.length}`, body: `${i}`, visibleAt: 0 });
  }

  get left(): number {
    return this.messages.length;
  }

  readonly client = {
    send: async (command: unknown): Promise<unknown> => {
      if (this.callMs > 0) await this.clock.sleep(this.callMs);
      const now = this.clock.now();
      if (command instanceof ReceiveMessageCommand) {
        this.receives += 1;
        const max = command.input.MaxNumberOfMessages ?? 1;
        const out: Message[] = [];
        for (const m of this.messages) {
          if (out.length >= max) break;
          if (m.visibleAt > now) continue;
          m.visibleAt = now + this.visibilityMs;
          m.receipt = `r${this.receipts++}`;
          out.push({ MessageId: m.id, ReceiptHandle: m.receipt, Body: m.body });
        }
        return { Messages: out };
      }
      if (command instanceof DeleteMessageBatchCommand) {
        for (const entry of command.input.Entries ?? []) {
          const i = this.messages.findIndex((m) => m.receipt === entry.ReceiptHandle);
          if (i >= 0) this.messages.splice(i, 1);
        }
        return {};
      }
      if (command instanceof GetQueueAttributesCommand) {
        const visible = this.messages.filter((m) => m.visibleAt <= now).length;
        return {
          Attributes: {
            ApproximateNumberOfMessages: String(visible),
            ApproximateNumberOfMessagesNotVisible: String(this.messages.length - visible),
            ApproximateNumberOfMessagesDelayed: '0',
          },
        };
      }
      throw new Error(`unexpected command ${String(command)}`);
    },
  } as unknown as SQSClient;
}

function setUp(
  handler: (clock: SimClock) => SqsFunctionHandler,
  messages: number,
  { visibilityMs, callMs }: { visibilityMs?: number; callMs?: number } = {},
) {
  const clock = new SimClock();
  const sqs = new MemorySqs(clock, visibilityMs, callMs);
  sqs.add(messages);
  const handled: string[] = [];
  const poller = new QueuePoller({
    sqs: sqs.client,
    region: 'us-east-1',
    now: clock.now,
    sleep: (ms) => clock.sleep(ms),
    sources: [
      {
        functionName: 'worker',
        queueUrl: 'http://sqs/worker',
        queueArn: 'arn:aws:sqs:us-east-1:000000000000:worker',
        handler: async (event: SQSEvent, context) => {
          const out = await handler(clock)(event, context);
          handled.push(...event.Records.map((r) => r.body));
          return out;
        },
        batchSize: 10,
      },
    ],
  });
  return { clock, sqs, poller, handled };
}

describe('QueuePoller stall timeout (simulated clock)', () => {
  it('waits for a pipeline that keeps going, however long it takes (over 10 minutes here)', async () => {
    // 300 items at 3 s each, ten per invocation, one invocation at a time: 15 minutes of work.
    const { clock, sqs, poller, handled } = setUp(
      (clock) => async (event) => {
        await clock.sleep(3_000 * event.Records.length);
        return undefined;
      },
      300,
    );
    await clock.runUntil(poller.runUntil(() => sqs.left === 0, { stallTimeoutMs: 120_000 }));

    expect(handled).toHaveLength(300);
    expect(clock.now()).toBeGreaterThan(900_000);
  });

  it('gives up on a pipeline that stopped, after the stall timeout, saying what is left', async () => {
    // Every invocation fails its records: they come back after the visibility timeout, forever.
    const { clock, poller } = setUp(
      (clock) => async (event) => {
        await clock.sleep(1_000);
        return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) };
      },
      25,
    );
    const error = await clock
      .runUntil(poller.runUntil(() => false, { stallTimeoutMs: 300_000 }))
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PollStalledError);
    expect((error as Error).message).toMatch(
      /^no progress for 30\d{4} ms \(the stall timeout is 300000 ms\): worker queue: \d+ visible, \d+ in flight, 0 delayed$/,
    );
    expect((error as PollStalledError).stalledMs).toBeLessThan(300_000 + 1_000);
    expect(clock.now()).toBeLessThan(300_000 + 1_000);
  });

  it('gives up on a hung invocation after the stall timeout, without waiting for it', async () => {
    const { clock, poller } = setUp(
      (clock) => async () => {
        await clock.sleep(3_600_000);
        return undefined;
      },
      5,
    );
    const error = await clock
      .runUntil(poller.runUntil(() => poller.idle(), { stallTimeoutMs: 60_000 }))
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PollStalledError);
    expect((error as Error).message).toMatch(/: worker queue: \d+ visible, \d+ in flight, 0 delayed$/);
    expect(clock.now()).toBeLessThan(61_000);
  });

  it('counts progress made elsewhere (a vendor batch moving) as progress', async () => {
    const { clock, poller } = setUp(() => async () => undefined, 0);
    let checks = 0;
    const until = () => {
      checks += 1;
      // Something outside the queues moves every 10 s for 20 minutes, then the run is done.
      if (checks % 50 === 0) poller.progressed();
      return clock.now() >= 1_200_000;
    };
    await clock.runUntil(poller.runUntil(until, { stallTimeoutMs: 60_000 }));
    expect(clock.now()).toBeGreaterThanOrEqual(1_200_000);
  });

  it('keeps a hard limit when asked for one (timeoutMs)', async () => {
    const { clock, poller } = setUp(() => async () => undefined, 0);
    const error = await clock
      .runUntil(poller.runUntil(() => false, { timeoutMs: 5_000 }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PollTimeoutError);
    expect(error).not.toBeInstanceOf(PollStalledError);
    expect((error as Error).message).toMatch(/^queues not done after 5000 ms/);
  });

  it('backs off on a queue that stays empty, and picks up a message within a second of its arrival', async () => {
    const { clock, sqs, poller, handled } = setUp(() => async () => undefined, 0);
    let arrivedAt: number | undefined;
    const until = () => {
      // Nothing for a minute; then one message.
      if (arrivedAt === undefined && clock.now() >= 60_000) {
        sqs.add(1);
        arrivedAt = clock.now();
      }
      return handled.length === 1;
    };
    await clock.runUntil(poller.runUntil(until, { stallTimeoutMs: 600_000 }));

    // 100 ms, 200, 400, 800, then every second: about 64 receives in the idle minute (600 without backing off).
    expect(sqs.receives).toBeLessThan(70);
    expect(clock.now() - arrivedAt!).toBeLessThanOrEqual(1_000 + 200);
  });

  it('goes back to short pauses once a queue delivers', async () => {
    const { clock, sqs, poller, handled } = setUp(() => async () => undefined, 0);
    // A message every 3 s for a minute: each is picked up within a second.
    const arrivals: number[] = [];
    const until = () => {
      if (clock.now() >= (arrivals.length + 1) * 3_000 && arrivals.length < 20) {
        sqs.add(1);
        arrivals.push(clock.now());
      }
      return handled.length === 20;
    };
    await clock.runUntil(poller.runUntil(until, { stallTimeoutMs: 600_000 }));
    expect(handled).toHaveLength(20);
    expect(clock.now() - arrivals.at(-1)!).toBeLessThanOrEqual(1_000 + 200);
  });
});

describe('QueuePoller without a stall timeout: bounded by checks with nothing to run, not by time', () => {
  it('waits for a pipeline as slow as a loaded machine makes it (every SQS call 2 s, every item 30 s)', async () => {
    // 16 items, ten per invocation, one at a time: 8 minutes of invocations, no options given.
    const { clock, sqs, poller, handled } = setUp(
      (clock) => async (event) => {
        await clock.sleep(30_000 * event.Records.length);
        return undefined;
      },
      16,
      { callMs: 2_000 },
    );
    await clock.runUntil(poller.runUntil(() => sqs.left === 0));

    expect(handled).toHaveLength(16);
    expect(clock.now()).toBeGreaterThan(480_000);
  });

  it('waits through a redelivery: checks while a failed record is invisible are counted, and it comes back before the bound', async () => {
    // The first delivery fails; the record comes back after the 60 s visibility timeout.
    let deliveries = 0;
    const { clock, sqs, poller } = setUp(
      () => async (event) => {
        deliveries += 1;
        return deliveries === 1
          ? { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) }
          : undefined;
      },
      1,
      { visibilityMs: 60_000 },
    );
    await clock.runUntil(poller.runUntil(() => sqs.left === 0));

    expect(deliveries).toBe(2);
    expect(clock.now()).toBeGreaterThanOrEqual(60_000);
  });

  it('gives up once nothing ran for its checks in a row, saying what is left', async () => {
    const { clock, poller } = setUp(() => async () => undefined, 0);
    const error = await clock.runUntil(poller.runUntil(() => false)).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PollStalledError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^nothing ran for ${DEFAULT_IDLE_CHECKS} checks in a row \\(\\d+ ms\\): worker queue: 0 visible, 0 in flight, 0 delayed$`,
      ),
    );
    // Checks every 200 ms by default: the bound in time is at least that many periods.
    expect(clock.now()).toBeGreaterThanOrEqual(DEFAULT_IDLE_CHECKS * 200);
  });

  it('counts no check while an invocation runs, however long it takes', async () => {
    // One invocation of an hour with a bound of five checks: it is waited for.
    const { clock, sqs, poller, handled } = setUp(
      (clock) => async () => {
        await clock.sleep(3_600_000);
        return undefined;
      },
      1,
      { visibilityMs: 7_200_000 },
    );
    await clock.runUntil(poller.runUntil(() => sqs.left === 0, { idleChecks: 5, timeoutMs: 7_200_000 }));

    expect(handled).toHaveLength(1);
    expect(clock.now()).toBeGreaterThanOrEqual(3_600_000);
  });

  it('gives up on a hung pipeline at the hang guard (timeoutMs) when its checks never go idle', async () => {
    const { clock, poller } = setUp(
      (clock) => async () => {
        await clock.sleep(86_400_000);
        return undefined;
      },
      1,
      { visibilityMs: 86_400_000 },
    );
    const error = await clock
      .runUntil(poller.runUntil(() => false, { timeoutMs: 600_000 }))
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PollTimeoutError);
    expect(error).not.toBeInstanceOf(PollStalledError);
    expect((error as Error).message).toMatch(
      /^queues not done after 600000 ms: worker queue: 0 visible, 1 in flight/,
    );
  });
});
