/**
 * Who is running: every Lambda invocation of the capacity model runs inside an async context
 * of its own (an AsyncLocalStorage store naming the function, its container and the
 * invocation), which follows its promises, timers and SDK calls. Two things are counted by it,
 * while everything runs interleaved in one process:
 *
 * - **CPU time.** Each synchronous stretch of JavaScript (a callback, a promise continuation)
 *   is timed with the real high-resolution clock and charged to the context it ran in
 *   (async_hooks `before`/`after`). The stand-ins' own work (serving a request) runs in a
 *   context of its own ({@link AWS_SIDE}) and the event source mappings' polling in another
 *   ({@link LAMBDA_SERVICE}), so a function is charged only what its own code and its SDK
 *   clients spent. A stretch is its time on the clock, less the time the process was not
 *   running when that shows (see {@link CpuMeter}: another process had the core). The CPU an
 *   invocation spends becomes simulated time before its next wait ({@link takeCpuDebt}).
 * - **Log bytes.** What a function writes to stdout or stderr (Powertools' JSON logs and EMF
 *   metrics) is counted against it and dropped, as CloudWatch Logs would ingest it; writes
 *   outside any invocation go through.
 */
import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import type { FunctionName } from '../../../shared/lib/layout/queues.js';

/** One invocation in progress: what is charged to it. */
export interface InvocationTally {
  /** Real ms of JavaScript run in the invocation's context (its code and its SDK clients). */
  cpuMs: number;
  /** Bytes the invocation wrote to stdout and stderr. */
  logBytes: number;
}

/** The async context an invocation runs in. */
export interface RunningInvocation {
  fn: FunctionName;
  tally: InvocationTally;
  /** The container's own Powertools logger and metrics (see logging.ts). */
  container: unknown;
  /** The share of a vCPU the function gets (fleet.ts): CPU ms on Lambda = CPU ms here / share. */
  share: number;
  /** CPU ms (here) already turned into simulated time. */
  charged: number;
  /** Ended by Lambda at its timeout: its runtime is gone, and nothing it asks of AWS is answered. */
  ended?: boolean;
}

/**
 * The simulated ms the running invocation still owes for CPU it spent since it last waited:
 * its next wait (a request, a timer) starts that much later, as its one vCPU is busy first.
 * Zero outside an invocation. Taking it settles it.
 */
export function takeCpuDebt(): number {
  const invocation = currentInvocation();
  if (!invocation) return 0;
  const owed = invocation.tally.cpuMs - invocation.charged;
  if (owed <= 0) return 0;
  invocation.charged = invocation.tally.cpuMs;
  return owed / invocation.share;
}

/** Work that is not a function's: the stand-ins serving requests. */
export const AWS_SIDE = 'aws' as const;
/** Lambda's event source mappings and schedules: receiving, deleting, starting invocations. */
export const LAMBDA_SERVICE = 'lambda' as const;

type Owner = RunningInvocation | typeof AWS_SIDE | typeof LAMBDA_SERVICE;

export const context = new AsyncLocalStorage<Owner>();

/** Runs `fn` as the work of `owner` (an invocation, the stand-ins, or Lambda's own machinery). */
export function runAs<T>(owner: Owner, fn: () => T): T {
  return context.run(owner, fn);
}

/** The invocation running now, if any. */
export function currentInvocation(): RunningInvocation | undefined {
  const owner = context.getStore();
  return typeof owner === 'object' ? owner : undefined;
}

/** CPU time by owner: invocations get theirs in their tally, the rest is summed here. */
export class CpuMeter {
  /** Real ms charged to the stand-ins, to Lambda's machinery, and to no context (the simulation's loop). */
  readonly totals = { aws: 0, lambda: 0, none: 0, invocations: 0 };
  /** Stretches from which time the process was not running was taken off, and how much, ms. */
  preempted = 0;
  preemptedMs = 0;
  /** Called at every switch (calibration samples the heap there); unset in a run. */
  onSwitch: (() => void) | undefined;
  private last = 0;
  /** The process's CPU time and the clock when they were last read together. */
  private read = { at: 0, cpu: 0 };
  private owner: Owner | undefined;
  private readonly hook = createHook({
    before: () => this.switchTo(context.getStore()),
    after: () => this.switchTo(undefined),
  });

  start(): void {
    this.last = now();
    this.read = { at: this.last, cpu: processCpuMs() };
    this.owner = context.getStore();
    this.hook.enable();
  }

  stop(): void {
    this.switchTo(undefined);
    this.hook.disable();
  }

  /**
   * Charges the stretch since the last switch to whoever ran it, and starts the next. A stretch
   * is timed by the clock (cheap); one longer than a millisecond may hold time the process was
   * not running (another process had the core): the process's CPU time is read then, and what
   * the clock counted beyond it since the last reading is taken off this stretch.
   */
  private switchTo(next: Owner | undefined): void {
    const at = now();
    let ms = at - this.last;
    if (ms > 1) {
      const cpu = processCpuMs();
      const lost = at - this.read.at - (cpu - this.read.cpu);
      this.read = { at, cpu };
      if (lost > 0) {
        const cut = Math.min(ms, lost);
        ms -= cut;
        this.preempted += 1;
        this.preemptedMs += cut;
      }
    }
    const owner = this.owner;
    if (owner === undefined) this.totals.none += ms;
    else if (owner === AWS_SIDE) this.totals.aws += ms;
    else if (owner === LAMBDA_SERVICE) this.totals.lambda += ms;
    else {
      owner.tally.cpuMs += ms;
      this.totals.invocations += ms;
    }
    this.owner = next;
    // The sampling's own time is nobody's.
    this.onSwitch?.();
    this.last = now();
  }
}

/** The process's CPU time (every thread: user and system), ms. */
function processCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

function now(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * Counts what invocations write to stdout and stderr (and drops it); anything written outside
 * an invocation is written as usual. Returns what puts the streams back.
 */
export function captureOutput(onBytes: (fn: FunctionName, bytes: number) => void): () => void {
  const streams = [process.stdout, process.stderr];
  const originals = streams.map((stream) => stream.write);
  streams.forEach((stream, i) => {
    const original = originals[i]!;
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const invocation = currentInvocation();
      if (!invocation) return (original as (...a: unknown[]) => boolean).call(stream, chunk, ...rest);
      const bytes = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
      invocation.tally.logBytes += bytes;
      onBytes(invocation.fn, bytes);
      const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    }) as typeof stream.write;
  });
  return () => {
    streams.forEach((stream, i) => {
      stream.write = originals[i]!;
    });
  };
}
