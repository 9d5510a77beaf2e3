/**
 * The simulated Lambda service: each function's containers, the event source mappings that
 * feed the queue-driven functions, and the schedules of the others.
 *
 * - A container is built once, on its first invocation (a cold start), from the function's
 *   factory with a composition root of its own (its own `ContainerOptions`: the function's
 *   environment as the stack sets it and SDK clients of its own), and reused while warm.
 * - An event source mapping scales its lanes (each a poller driving one invocation at a time)
 *   as Lambda documents it: in standard mode it starts with 5 and, while messages wait, adds up
 *   to 300 a minute up to its maximum concurrency; in provisioned mode it starts with its
 *   minimum pollers (10 invocations each) and adds up to 1,000 a minute up to its maximum
 *   pollers. A lane whose poll comes back empty leaves while the mapping has more than it
 *   started with. Each lane long-polls the function's queue (20 s), builds the SQS event from
 *   what it received, invokes the handler with a Lambda context counting down to the
 *   function's timeout, deletes the records that did not fail and leaves the rest to come back
 *   after the queue's visibility timeout (or when the handler made them visible sooner).
 * - Every invocation takes one of the account's concurrent executions: a function with reserved
 *   concurrency has its own (and no more), the others share what is left. An invocation that
 *   finds none waits for one (Lambda throttles it and its poller tries again), its records in
 *   flight meanwhile; each such wait is counted.
 * - A scheduled function runs on its rate, each pass in a free container of its own.
 *
 * An invocation's duration is its waits in simulated time (service latencies, the simulated LLM
 * calls, backoffs) plus the CPU time its own code spent (attribution.ts), scaled to the share
 * of a vCPU Lambda gives the function's memory: each stretch of CPU delays the invocation's
 * next request or timer by its time, and what it spends after its last wait keeps the
 * container busy before the records are deleted and the next poll. A cold start first waits
 * the bundle's measured init time. What AWS does on its side (serving requests) and Lambda's
 * own polling are not charged to any function. An invocation still running at its function's
 * timeout ends there, as Lambda ends it: its records fail (they come back after the queue's
 * visibility timeout) and its container is not used again.
 */
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { lambdaContext } from '../../../cli/cloud/lambda-context.js';
import { sqsRecord } from '../../../cli/cloud/poller.js';
import type { ContainerOptions } from '../../../functions/root.js';
import type { AwsClients } from '../../../shared/adapters/aws/clients.js';
import type { FunctionName } from '../../../shared/lib/layout/queues.js';
import type { SimWorld } from '../world.js';
import { LAMBDA_SERVICE, type RunningInvocation, runAs } from './attribution.js';
import type { DeployedFunction } from './deployment.js';
import { invocationKind } from './kinds.js';
import { type ContainerTelemetry, containerTelemetry } from './logging.js';

/** A handler as the function's factory builds it (scheduled ones ignore the event). */
export type Handler = (event: unknown, context: Context) => Promise<unknown>;

/** One function of the stack, as the model builds its containers. */
export interface FunctionDefinition {
  name: FunctionName;
  /** Its entry's name, as the stack names it (`dead-letter`): the service name of its logs. */
  entry: string;
  /** Builds a container's handler through the function's factory, with a root of its own. */
  build(options: ContainerOptions): Handler;
}

/** A queue → function mapping (Lambda's event source mapping). */
export interface Mapping {
  fn: FunctionName;
  queueUrl: string;
  queueArn: string;
  batchSize: number;
  /** The most invocations it drives at once. */
  concurrency: number;
  /** Invocations at once from the start (and what it scales back to). */
  initial: number;
  /** Invocations it may add a minute while messages wait in its queue. */
  perMinute: number;
  /** How long its pollers gather records for a batch larger than one receive, ms. */
  batchingWindowMs: number;
}

/** Lambda's documented scaling of an SQS event source mapping. */
export const MAPPING_SCALING = {
  standard: { initial: 5, perMinute: 300 },
  provisioned: { invocationsPerPoller: 10, perMinute: 1000 },
} as const;

/** The account's concurrent executions, shared by every function but those with reserved concurrency. */
export interface AccountConcurrency {
  limit: number;
  reserved: Partial<Record<FunctionName, number>>;
}

/** A function run on a rate (an EventBridge rule). */
export interface Schedule {
  fn: FunctionName;
  periodMs: number;
}

/** What one invocation did and took. */
export interface InvocationRecord {
  fn: FunctionName;
  /** What the event asked (kinds.ts). */
  kind: string;
  container: number;
  cold: boolean;
  /** Simulated ms since the world began, when the handler was called. */
  startMs: number;
  /**
   * Simulated ms from the handler's call to its end: the waits (service latencies, the LLM,
   * backoffs) and its CPU time on Lambda, each stretch of CPU taking its time before the next
   * wait and the last one after the handler returned.
   */
  durationMs: number;
  /** Real ms of CPU charged to the invocation (this machine, one thread). */
  cpuMs: number;
  /** What that CPU takes on Lambda at the function's memory, ms (see {@link cpuShare}): part of the duration. */
  lambdaCpuMs: number;
  /** The measured init time waited before a cold start's first invocation, ms. */
  initMs: number;
  records: number;
  /** Records handed back to the queue (reported failures, or all when the handler threw). */
  failed: number;
  error?: string;
  logBytes: number;
}

/** Lambda gives a function one vCPU at 1,769 MB, and a share of one in proportion below it. */
export const FULL_VCPU_MB = 1769;

/** The share of a vCPU a function with `memoryMb` gets (at most 1: our code runs on one thread). */
export function cpuShare(memoryMb: number): number {
  return Math.min(1, memoryMb / FULL_VCPU_MB);
}

/** Seconds a mapping's container long-polls (the most SQS allows; Lambda's pollers use it). */
const LONG_POLL_SECONDS = 20;
/** The most messages one ReceiveMessage returns (and one DeleteMessageBatch takes). */
const RECEIVE_MAX = 10;

interface Container {
  id: number;
  fn: FunctionName;
  /** Built on the first invocation (Lambda's init phase); undefined until then. */
  handler: Handler | undefined;
  telemetry: ContainerTelemetry;
  invocations: number;
  busy: boolean;
  /** Out of use: an invocation of it timed out. */
  retired: boolean;
}

export interface FleetOptions {
  world: SimWorld;
  definitions: Record<FunctionName, FunctionDefinition>;
  /** Each function's memory and timeout, as the stack declares them. */
  functions: Record<FunctionName, DeployedFunction>;
  /** Each function's environment, as the stack sets it. */
  env: Record<FunctionName, NodeJS.ProcessEnv>;
  /** A fresh set of SDK clients (one per container). */
  clients: () => AwsClients;
  /** The SQS client Lambda's pollers use (not a function's). */
  pollerSqs: SQSClient;
  region: string;
  account: string;
  mappings: Mapping[];
  schedules: Schedule[];
  /** Measured init time of each function's bundle, ms (0 when not measured). */
  initMs: Partial<Record<FunctionName, number>>;
  namespace: string;
  concurrency: AccountConcurrency;
  /** Messages visible in a queue now (what Lambda's scaling watches). */
  backlog: (queueUrl: string) => number;
  /** Hears each invocation as it ends. */
  onInvocation?: (record: InvocationRecord, event: unknown) => void;
  /** Hears each invocation just before its handler is called (to capture the state it starts from). */
  beforeInvoke?: (fn: FunctionName, event: unknown, container: { id: number; invocations: number }) => void;
}

/** What the fleet's concurrency reached, and the waits for a concurrent execution. */
export interface FleetPeaks {
  /** The most invocations running at once, all functions together. */
  concurrency: number;
  byFunction: Partial<Record<FunctionName, number>>;
  /** The most lanes each mapping had at once. */
  lanes: Partial<Record<FunctionName, number>>;
  /** Invocations that waited for a concurrent execution (throttled by the account or a reservation). */
  throttled: Partial<Record<FunctionName, number>>;
}

export class Fleet {
  readonly records: InvocationRecord[] = [];
  readonly peaks: FleetPeaks = { concurrency: 0, byFunction: {}, lanes: {}, throttled: {} };
  private readonly containers = new Map<FunctionName, Container[]>();
  private nextContainer = 1;
  private stopped = false;
  private running: Promise<void>[] = [];
  private inFlight = 0;
  private readonly scheduleTimers: { fn: FunctionName; next: number }[] = [];
  private readonly executions: Executions;

  constructor(private readonly options: FleetOptions) {
    this.executions = new Executions(options.concurrency, this.peaks);
  }

  /** Invocations running now. */
  get busy(): number {
    return this.inFlight;
  }

  /** Starts every mapping with its initial lanes and its scaling, and the schedules (first pass after `firstPassMs`). */
  start(firstPassMs: (schedule: Schedule) => number): void {
    for (const mapping of this.options.mappings) {
      const state = { lanes: 0 };
      const add = () => {
        state.lanes += 1;
        this.peaks.lanes[mapping.fn] = Math.max(this.peaks.lanes[mapping.fn] ?? 0, state.lanes);
        this.running.push(this.lane(mapping, state));
      };
      for (let i = 0; i < Math.min(mapping.initial, mapping.concurrency); i++) add();
      this.running.push(this.scale(mapping, state, add));
    }
    for (const schedule of this.options.schedules) this.running.push(this.scheduled(schedule, firstPassMs));
  }

  /** Once a simulated second, adds lanes at the mapping's rate while messages wait in its queue. */
  private async scale(mapping: Mapping, state: { lanes: number }, add: () => void): Promise<void> {
    const { world } = this.options;
    let credit = 0;
    await runAs(LAMBDA_SERVICE, async () => {
      while (!this.stopped) {
        await world.sleep(1000);
        if (this.stopped) break;
        if (this.options.backlog(mapping.queueUrl) === 0 || state.lanes >= mapping.concurrency) {
          credit = 0;
          continue;
        }
        credit += mapping.perMinute / 60;
        while (credit >= 1 && state.lanes < mapping.concurrency) {
          credit -= 1;
          add();
        }
      }
    });
  }

  /** Stops polling; resolves once every lane and schedule has ended (long polls run out). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.scheduleTimers) timer.next = 0;
    await Promise.all(this.running);
  }

  /**
   * Brings a scheduled function's next pass forward to now if it has had none since `sinceMs`
   * (simulated ms since the world began); its period runs on from there.
   */
  passIfNone(fn: FunctionName, sinceMs: number): void {
    if (this.records.some((r) => r.fn === fn && r.startMs >= sinceMs)) return;
    const timer = this.scheduleTimers.find((t) => t.fn === fn);
    if (timer) timer.next = this.options.world.now();
  }

  /** Runs one pass of a scheduled function now, in a free container (a new one when all are busy). */
  async pass(fn: FunctionName): Promise<InvocationRecord> {
    return runAs(LAMBDA_SERVICE, async () => {
      const container = this.containers.get(fn)?.find((c) => !c.busy) ?? this.build(fn);
      return (await this.invoke(container, fn, {})).record;
    });
  }

  private async lane(mapping: Mapping, state: { lanes: number }): Promise<void> {
    await runAs(LAMBDA_SERVICE, async () => {
      let container: Container | undefined;
      const sqs = this.options.pollerSqs;
      const receive = async (max: number, waitSeconds: number) =>
        (
          await sqs.send(
            new ReceiveMessageCommand({
              QueueUrl: mapping.queueUrl,
              MaxNumberOfMessages: max,
              WaitTimeSeconds: waitSeconds,
              MessageSystemAttributeNames: ['All'],
              MessageAttributeNames: ['All'],
            }),
          )
        ).Messages ?? [];
      while (!this.stopped) {
        const Messages = await receive(Math.min(RECEIVE_MAX, mapping.batchSize), LONG_POLL_SECONDS);
        // A batch larger than one receive gives is gathered from further receives: at once
        // while they come back full, and within the mapping's batching window while it lasts.
        const windowEnds = this.options.world.now() + mapping.batchingWindowMs;
        for (let last = Messages.length; Messages.length > 0 && Messages.length < mapping.batchSize; ) {
          const left = windowEnds - this.options.world.now();
          if (last < RECEIVE_MAX && left <= 0) break;
          const more = await receive(
            Math.min(RECEIVE_MAX, mapping.batchSize - Messages.length),
            last === RECEIVE_MAX ? 0 : Math.max(1, Math.ceil(left / 1000)),
          );
          Messages.push(...more);
          last = more.length;
          if (more.length === 0 && this.options.world.now() >= windowEnds) break;
        }
        if (Messages.length === 0) {
          if (state.lanes > mapping.initial) {
            state.lanes -= 1;
            return;
          }
          continue;
        }
        if (container?.retired) container = undefined;
        container ??= this.build(mapping.fn);
        const event: SQSEvent = {
          Records: Messages.map((m) => sqsRecord(m, mapping.queueArn, this.options.region, () => 0)),
        };
        const { failed } = await this.invoke(container, mapping.fn, event, event);
        const succeeded = event.Records.filter((r) => !failed.has(r.messageId));
        if (succeeded.length > 0) {
          // A delete that fails (the receipt expired: the handler outran the visibility timeout)
          // only means a redelivery, which the handlers absorb.
          for (let from = 0; from < succeeded.length; from += RECEIVE_MAX)
            await sqs.send(
              new DeleteMessageBatchCommand({
                QueueUrl: mapping.queueUrl,
                Entries: succeeded
                  .slice(from, from + RECEIVE_MAX)
                  .map((r, i) => ({ Id: `d${i}`, ReceiptHandle: r.receiptHandle })),
              }),
            );
        }
      }
    });
  }

  private async scheduled(schedule: Schedule, firstPassMs: (schedule: Schedule) => number): Promise<void> {
    const { world } = this.options;
    const timer = { fn: schedule.fn, next: world.now() + firstPassMs(schedule) };
    this.scheduleTimers.push(timer);
    const passes: Promise<unknown>[] = [];
    await runAs(LAMBDA_SERVICE, async () => {
      // Wakes at least once a second so that a stop is heard without waiting out the period.
      while (!this.stopped) {
        const wait = Math.min(1000, timer.next - world.now());
        if (wait > 0) {
          await world.sleep(wait);
          continue;
        }
        timer.next += schedule.periodMs;
        passes.push(this.pass(schedule.fn));
      }
    });
    await Promise.all(passes);
  }

  /** Takes a container out of use (its invocation timed out: Lambda restarts the runtime). */
  private retire(fn: FunctionName, container: Container): void {
    container.retired = true;
    const pool = this.containers.get(fn) ?? [];
    pool.splice(pool.indexOf(container), 1);
  }

  /** A new container of `fn`: its first invocation is a cold start. */
  private build(fn: FunctionName): Container {
    const pool = this.containers.get(fn) ?? [];
    this.containers.set(fn, pool);
    const definition = this.options.definitions[fn];
    const container: Container = {
      id: this.nextContainer++,
      fn,
      handler: undefined,
      telemetry: containerTelemetry(`assay-${definition.entry}`, this.options.namespace),
      invocations: 0,
      busy: false,
      retired: false,
    };
    pool.push(container);
    return container;
  }

  private async invoke(
    container: Container,
    fn: FunctionName,
    event: unknown,
    sqsEvent?: SQSEvent,
  ): Promise<{ record: InvocationRecord; failed: Set<string> }> {
    const { world } = this.options;
    const options = this.options;
    const records = sqsEvent?.Records.length ?? 0;
    container.busy = true;
    await this.executions.acquire(fn);
    this.inFlight += 1;
    this.peaks.concurrency = Math.max(this.peaks.concurrency, this.inFlight);
    const cold = container.invocations === 0;
    const initMs = cold ? (options.initMs[fn] ?? 0) : 0;
    try {
      if (initMs > 0) await world.sleep(initMs);
      options.beforeInvoke?.(fn, event, { id: container.id, invocations: container.invocations });
      container.invocations += 1;
      const { memoryMb, timeoutS } = options.functions[fn];
      const share = cpuShare(memoryMb);
      const invocation: RunningInvocation = {
        fn,
        tally: { cpuMs: 0, logBytes: 0 },
        container: container.telemetry,
        share,
        charged: 0,
      };
      const startMs = world.elapsed();
      const started = world.now();
      const context = lambdaContext({
        functionName: `assay-${options.definitions[fn].entry}`,
        region: options.region,
        account: options.account,
        deadline: started + timeoutS * 1000,
        memoryMb,
      });
      let response: unknown;
      let error: unknown;
      try {
        // The init phase: the composition root parses the environment and builds the clients.
        // Its failure fails the invocation, and the next one starts a new container.
        container.handler ??= runAs(LAMBDA_SERVICE, () =>
          options.definitions[fn].build({ env: options.env[fn], clients: options.clients() }),
        );
        const handler = container.handler;
        // Lambda ends an invocation at its timeout: the records go back to the queue, and the
        // next invocation starts a new runtime. The handler's promise cannot be stopped here:
        // nothing it asks of AWS is answered from then on (simulation.ts), and the container is
        // not used again.
        const timedOut = Symbol('timed out');
        const timer = new AbortController();
        const outcome = await Promise.race([
          runAs(invocation, () => handler(event, context)),
          world.sleep(timeoutS * 1000, timer.signal).then(
            () => timedOut,
            () => undefined,
          ),
        ]);
        timer.abort();
        if (outcome === timedOut) {
          invocation.ended = true;
          this.retire(fn, container);
          throw new Error(`Task timed out after ${timeoutS.toFixed(2)} seconds`);
        }
        response = outcome;
      } catch (thrown) {
        error = thrown;
        if (container.handler === undefined) container.invocations = 0;
      }
      const { cpuMs, logBytes } = invocation.tally;
      // The CPU spent after its last wait: the container is still busy for it before Lambda
      // deletes the records and polls again.
      const tailMs = Math.max(0, (cpuMs - invocation.charged) / share);
      if (tailMs > 0) await world.sleep(tailMs);
      const durationMs = world.now() - started;
      const failedIds = sqsEvent ? failedRecords(response, sqsEvent, error) : new Set<string>();
      const record: InvocationRecord = {
        fn,
        kind: invocationKind(fn, event),
        container: container.id,
        cold,
        startMs,
        durationMs,
        cpuMs,
        lambdaCpuMs: cpuMs / share,
        initMs,
        records,
        failed: failedIds.size,
        logBytes,
        ...(error === undefined ? {} : { error: errorText(error) }),
      };
      this.records.push(record);
      options.onInvocation?.(record, event);
      return { record, failed: failedIds };
    } finally {
      container.busy = false;
      this.inFlight -= 1;
      this.executions.release(fn);
    }
  }
}

/**
 * The account's concurrent executions: a function with reserved concurrency runs at most that
 * many at once, out of its own; the others share the rest. A request that does not fit waits,
 * first come first served within its pool.
 */
class Executions {
  private readonly running = new Map<FunctionName, number>();
  private unreserved = 0;
  private readonly unreservedLimit: number;
  private readonly waiting: { fn: FunctionName; resume: () => void }[] = [];

  constructor(
    private readonly account: AccountConcurrency,
    private readonly peaks: FleetPeaks,
  ) {
    const set = Object.values(account.reserved).reduce((n, r) => n + (r ?? 0), 0);
    this.unreservedLimit = account.limit - set;
    if (this.unreservedLimit < 1)
      throw new Error(
        `reserved concurrency (${set}) leaves none of the account's ${account.limit} for the other functions`,
      );
  }

  async acquire(fn: FunctionName): Promise<void> {
    if (this.fits(fn) && !this.waiting.some((w) => this.samePool(w.fn, fn))) return this.take(fn);
    this.peaks.throttled[fn] = (this.peaks.throttled[fn] ?? 0) + 1;
    await new Promise<void>((resume) => this.waiting.push({ fn, resume }));
  }

  release(fn: FunctionName): void {
    this.running.set(fn, (this.running.get(fn) ?? 0) - 1);
    if (this.account.reserved[fn] === undefined) this.unreserved -= 1;
    for (let i = 0; i < this.waiting.length; ) {
      const w = this.waiting[i]!;
      if (this.fits(w.fn)) {
        this.waiting.splice(i, 1);
        this.take(w.fn);
        w.resume();
      } else i += 1;
    }
  }

  private fits(fn: FunctionName): boolean {
    const reserved = this.account.reserved[fn];
    return reserved === undefined
      ? this.unreserved < this.unreservedLimit
      : (this.running.get(fn) ?? 0) < reserved;
  }

  private samePool(a: FunctionName, b: FunctionName): boolean {
    const reserved = this.account.reserved;
    return reserved[a] === undefined && reserved[b] === undefined ? true : a === b;
  }

  private take(fn: FunctionName): void {
    const now = (this.running.get(fn) ?? 0) + 1;
    this.running.set(fn, now);
    if (this.account.reserved[fn] === undefined) this.unreserved += 1;
    this.peaks.byFunction[fn] = Math.max(this.peaks.byFunction[fn] ?? 0, now);
  }
}

/**
 * The records Lambda leaves on the queue: all of them when the handler threw, else those it
 * reported in `batchItemFailures` (a response naming a record not in the batch fails all, as
 * on Lambda).
 */
function failedRecords(response: unknown, event: SQSEvent, error: unknown): Set<string> {
  const all = new Set(event.Records.map((r) => r.messageId));
  if (error !== undefined) return all;
  const reported = (response as { batchItemFailures?: { itemIdentifier?: string }[] } | undefined)
    ?.batchItemFailures;
  const ids = new Set((reported ?? []).map((f) => f.itemIdentifier ?? ''));
  for (const id of ids) if (!id || !all.has(id)) return all;
  return ids;
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
