/**
 * The simulated world the capacity model runs in: a {@link SimClock} that real async code waits
 * on. While a simulation runs, the process's clocks and timers are the simulated clock's:
 * `setTimeout`/`setInterval` and their `clear…` (global and from `node:timers`), `setTimeout`
 * and `scheduler.wait` of `node:timers/promises`, `Date` (`Date.now()`, `new Date()`),
 * `performance.now()` and `AbortSignal.timeout()`. So the SDK's retry backoff, the product's
 * own backoffs and rate limiters, the simulator provider's drawn latency and the stand-ins'
 * service latency all wait in simulated time, and the simulation runs as fast as the CPU allows.
 *
 * Time moves only when nothing else can run: every promise reaction, immediate and real I/O
 * callback (reports spill to /tmp) runs first; then the clock jumps to the earliest timer.
 *
 * ```ts
 * const world = new SimWorld();
 * const answer = await world.run(async () => {
 *   await new Promise((r) => setTimeout(r, 600_000));   // ten simulated minutes, no real wait
 *   return Date.now();                                   // ten minutes after world.epoch
 * });
 * ```
 *
 * Not simulated: `setImmediate`, `process.nextTick`, `process.hrtime`, `node:timers/promises`'
 * `setInterval` (an async iterator), timers created before the simulation started (they run on
 * the wall clock) and timer functions a module copied before it started. Real network I/O is
 * not waited for.
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { SimClock, SimDeadlockError, SimTimer } from '../../shared/lib/sim-clock.js';

export { SimDeadlockError, SimTimeLimitError } from '../../shared/lib/sim-clock.js';

const require = createRequire(import.meta.url);
const timersModule = require('node:timers') as typeof import('node:timers');
const timersPromises = require('node:timers/promises') as typeof import('node:timers/promises');

// The real ones, captured before anything is patched: the world's own loop runs on them.
const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate,
  Date: globalThis.Date,
  performanceNow: performance.now.bind(performance),
  abortTimeout: AbortSignal.timeout.bind(AbortSignal),
  random: Math.random,
  timers: {
    setTimeout: timersModule.setTimeout,
    clearTimeout: timersModule.clearTimeout,
    setInterval: timersModule.setInterval,
    clearInterval: timersModule.clearInterval,
  },
  promises: { setTimeout: timersPromises.setTimeout, wait: timersPromises.scheduler?.wait },
};

/** Resources whose completion a simulation waits for before moving time: pending requests to the thread pool or the resolver. */
const AWAITED_RESOURCES =
  /^(FSReqCallback|FSReqPromise|FileHandleCloseReq|GetAddrInfoReqWrap|GetNameInfoReqWrap|QueryReqWrap|Immediate)$/;

/** Rounds of immediates alone a drain lets run before time may move on. */
const IMMEDIATE_ROUNDS = 10_000;

/** The largest delay Node accepts; a larger (or invalid, or below 1 ms) one is 1 ms, as in Node. */
const TIMEOUT_MAX = 2 ** 31 - 1;

export interface SimWorldOptions {
  /** The simulated wall clock at the start, epoch ms. Default 2025-01-01T00:00:00Z (reproducible runs). */
  epochMs?: number;
  /** Makes `Math.random` a seeded generator while the simulation runs (reproducible jitter), when set. */
  seed?: number;
  /** Real ms to wait for pending real I/O, with no work running meanwhile, before calling it stuck. Default 60,000. */
  ioWaitLimitMs?: number;
  /**
   * Real ms to keep waiting, when no timer is left, for work outside the event loop's view (a
   * zlib or crypto job on the thread pool) before calling it a deadlock. Default 50.
   */
  deadlockGraceMs?: number;
}

export interface RunOptions {
  /** Stop with a SimTimeLimitError past this much simulated time from now, ms. Default: no limit. */
  limitMs?: number;
  /** Named in the deadlock error. */
  label?: string;
}

export interface WorldStats {
  /** Simulated ms since the world began. */
  simulatedMs: number;
  /** Real ms spent inside `run`. */
  realMs: number;
  timersFired: number;
  timersPending: number;
}

/**
 * A simulated clock installed in place of the process's clocks while it runs. One world may be
 * installed at a time; `run` installs it for its duration unless `start` already did.
 */
export class SimWorld {
  readonly clock: SimClock;
  /** The simulated epoch ms at which the world began. */
  readonly epoch: number;
  /**
   * Extra simulated ms added to each `setTimeout`/`setInterval` set while installed, asked at
   * the moment the timer is set (the capacity model delays a Lambda invocation's next wait by
   * the CPU time it has just spent). Unset: none.
   */
  timerDelay: (() => number) | undefined;
  private installed = false;
  private running = false;
  private readonly tracked = new Map<number, string>();
  private trackSeq = 0;
  private readonly seed: number | undefined;
  private readonly ioWaitLimitMs: number;
  private readonly deadlockGraceMs: number;
  private realMs = 0;
  /** Set once the promise `run` drives has settled: nothing more to wait for. */
  private settled = false;
  private restore: (() => void) | undefined;

  constructor({
    epochMs = Date.UTC(2025, 0, 1),
    seed,
    ioWaitLimitMs = 60_000,
    deadlockGraceMs = 50,
  }: SimWorldOptions = {}) {
    this.epoch = epochMs;
    this.seed = seed;
    this.ioWaitLimitMs = ioWaitLimitMs;
    this.deadlockGraceMs = deadlockGraceMs;
    this.clock = new SimClock({
      start: epochMs,
      drain: () => this.drain(),
      describe: () => this.describePending(),
    });
  }

  /** Simulated time, epoch ms. */
  readonly now = (): number => this.clock.now();

  /** Waits `ms` of simulated time. */
  readonly sleep = (ms: number, signal?: AbortSignal): Promise<void> => this.clock.sleep(ms, signal);

  /** Simulated ms since the world began. */
  elapsed(): number {
    return this.clock.now() - this.epoch;
  }

  /** True while the world's clocks replace the process's. */
  get active(): boolean {
    return this.installed;
  }

  /**
   * Puts the simulated clock in place of the process's timers and clocks (see the module's
   * comment). Timers set from now on wait in simulated time; `stop()` puts the real ones back.
   */
  start(): this {
    if (this.installed) return this;
    if (activeWorld) throw new Error('another SimWorld is installed: stop it first');
    activeWorld = this;
    this.installed = true;
    this.restore = install(this);
    return this;
  }

  /** Puts the process's own timers and clocks back. Timers still set stay in the simulated clock. */
  stop(): void {
    if (!this.installed) return;
    this.restore?.();
    this.restore = undefined;
    this.installed = false;
    activeWorld = undefined;
  }

  /**
   * Drives the simulation until `work` settles and returns its value (or throws its error).
   * A function is called once the world is installed, so everything it starts is simulated.
   * Throws SimDeadlockError when `work` is pending with nothing left to wait for, or
   * SimTimeLimitError past `limitMs`.
   */
  async run<T>(
    work: Promise<T> | (() => Promise<T>),
    { limitMs, label = 'run' }: RunOptions = {},
  ): Promise<T> {
    if (this.running) throw new Error('SimWorld.run is already driving this world');
    const installedHere = !this.installed;
    this.start();
    this.running = true;
    const startedReal = real.performanceNow();
    try {
      const promise = typeof work === 'function' ? Promise.resolve().then(work) : work;
      this.settled = false;
      const settle = () => {
        this.settled = true;
      };
      promise.then(settle, settle);
      const limit = limitMs === undefined ? Number.POSITIVE_INFINITY : this.clock.now() + limitMs;
      return await this.clock.runUntil(this.track(label, promise), limit);
    } finally {
      this.realMs += real.performanceNow() - startedReal;
      this.running = false;
      if (installedHere) this.stop();
    }
  }

  /** Names a promise in the deadlock error while it is pending. */
  track<T>(label: string, promise: Promise<T>): Promise<T> {
    const id = this.trackSeq++;
    this.tracked.set(id, label);
    const forget = () => this.tracked.delete(id);
    promise.then(forget, forget);
    return promise;
  }

  stats(): WorldStats {
    return {
      simulatedMs: this.elapsed(),
      realMs: this.realMs,
      timersFired: this.clock.fired,
      timersPending: this.clock.pending,
    };
  }

  /** The seed of `Math.random` while installed, if any. */
  get randomSeed(): number | undefined {
    return this.seed;
  }

  /**
   * Lets everything runnable run: promise reactions, immediates, and callbacks of real I/O in
   * flight (file writes of a report spilling to /tmp). While I/O is pending it spins on
   * immediates, then backs off to real 1 ms waits so the thread pool gets the CPU. Immediates
   * alone are CPU work going on: after many rounds of them (a loop yielding with
   * `setImmediate`, or one polling with it) time may move on, as it would while the CPU works.
   */
  private async drain(): Promise<void> {
    let ioSince: number | undefined;
    let idleSince: number | undefined;
    for (let spins = 0; ; spins++) {
      const round = real.performanceNow();
      await new Promise<void>((resolve) => real.setImmediate(resolve));
      // A round that took long ran work (callbacks, a replay's forced collections): the I/O in
      // flight is then not stalled, however long the stretch of work around it (a file written
      // a chunk at a time keeps a request in flight all along).
      if (real.performanceNow() - round > WORKING_ROUND_MS) ioSince = undefined;
      const busy = awaitedResources();
      if (busy.length === 0) {
        if (this.settled || this.clock.nextAt !== undefined || this.deadlockGraceMs <= 0) return;
        // No timer left: before the clock calls it a deadlock, give work the event loop does
        // not show (a zlib or crypto job on the thread pool) a moment to finish.
        idleSince ??= real.performanceNow();
        if (real.performanceNow() - idleSince >= this.deadlockGraceMs) return;
        await new Promise<void>((resolve) => real.setTimeout(resolve, 1));
        continue;
      }
      if (busy.every((name) => name === 'Immediate')) {
        if (spins >= IMMEDIATE_ROUNDS && this.clock.nextAt !== undefined) return;
        continue;
      }
      ioSince ??= real.performanceNow();
      if (real.performanceNow() - ioSince > this.ioWaitLimitMs) {
        throw new SimDeadlockError(this.clock.now(), [
          `real I/O unfinished after ${this.ioWaitLimitMs} real ms: ${summarise(busy)}`,
          ...this.describePending(),
        ]);
      }
      if (spins > 64) await new Promise<void>((resolve) => real.setTimeout(resolve, 1));
    }
  }

  private describePending(): string[] {
    const labels = [...this.tracked.values()];
    const io = awaitedResources();
    return [
      `${labels.length} tracked promise(s) pending${labels.length > 0 ? `: ${summarise(labels)}` : ''}`,
      `${this.clock.pending} simulated timer(s)`,
      `real I/O in flight: ${io.length > 0 ? summarise(io) : 'none'}`,
    ];
  }
}

/** A drain round longer than this, real ms, ran work: real I/O waited on meanwhile is not stalled. */
const WORKING_ROUND_MS = 20;

let activeWorld: SimWorld | undefined;

function awaitedResources(): string[] {
  return process.getActiveResourcesInfo().filter((name) => AWAITED_RESOURCES.test(name));
}

/** `a ×3, b` from a list with repeats. */
function summarise(names: string[]): string {
  const counts = new Map<string, number>();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  return [...counts].map(([name, n]) => (n > 1 ? `${name} ×${n}` : name)).join(', ');
}

/** Node's rule for a timer's delay: below 1 ms, above the maximum or not a number → 1 ms. */
function nodeDelay(ms: unknown): number {
  const n = Number(ms);
  return n >= 1 && n <= TIMEOUT_MAX ? n : 1;
}

/** Patches the process's clocks and timers with the world's; returns what puts them back. */
function install(world: SimWorld): () => void {
  const clock = world.clock;
  const extra = () => world.timerDelay?.() ?? 0;
  const setTimeoutSim = (fire: (...args: unknown[]) => void, ms?: unknown, ...args: unknown[]) =>
    clock.setTimeout(() => fire(...args), nodeDelay(ms) + extra());
  const setIntervalSim = (fire: (...args: unknown[]) => void, ms?: unknown, ...args: unknown[]) =>
    clock.setInterval(() => fire(...args), nodeDelay(ms) + extra());
  // A handle from before the simulation is a real timer: hand it to the real clear.
  const clearTimeoutSim = (handle: unknown) => {
    if (handle === undefined || handle === null) return;
    if (handle instanceof SimTimer || (typeof handle === 'number' && clock.clearTimeout(handle))) {
      clock.clearTimeout(handle);
    } else {
      real.clearTimeout(handle as Parameters<typeof clearTimeout>[0]);
    }
  };
  const clearIntervalSim = (handle: unknown) => {
    if (handle instanceof SimTimer || typeof handle === 'number') clearTimeoutSim(handle);
    else real.clearInterval(handle as Parameters<typeof clearInterval>[0]);
  };
  const promisesSetTimeout = <T = void>(ms?: number, value?: T, options?: { signal?: AbortSignal }) =>
    clock.sleep(nodeDelay(ms) + extra(), options?.signal).then(() => value as T);

  const RealDate = real.Date;
  const SimDate = function (this: unknown, ...args: unknown[]) {
    if (!new.target) return new RealDate(Math.floor(clock.now())).toString();
    return args.length === 0
      ? new RealDate(Math.floor(clock.now()))
      : new (RealDate as unknown as new (...a: unknown[]) => Date)(...args);
  } as unknown as DateConstructor;
  // Whole milliseconds, as the real clock gives (service latencies are drawn in fractions).
  Object.defineProperties(SimDate, {
    now: { value: () => Math.floor(clock.now()), writable: true, configurable: true },
    parse: { value: RealDate.parse, writable: true, configurable: true },
    UTC: { value: RealDate.UTC, writable: true, configurable: true },
    prototype: { value: RealDate.prototype },
  });

  const g = globalThis as unknown as Record<string, unknown>;
  const saved = {
    setTimeout: g.setTimeout,
    clearTimeout: g.clearTimeout,
    setInterval: g.setInterval,
    clearInterval: g.clearInterval,
    Date: g.Date,
    random: Math.random,
  };
  const perf = performance as unknown as { now: () => number };
  const ownNow = Object.getOwnPropertyDescriptor(perf, 'now');
  const ownTimeout = Object.getOwnPropertyDescriptor(AbortSignal, 'timeout');
  const epoch = world.epoch;
  const timers = timersModule as unknown as Record<string, unknown>;
  const promises = timersPromises as unknown as Record<string, unknown>;
  const scheduler = timersPromises.scheduler as unknown as Record<string, unknown> | undefined;

  g.setTimeout = setTimeoutSim;
  g.clearTimeout = clearTimeoutSim;
  g.setInterval = setIntervalSim;
  g.clearInterval = clearIntervalSim;
  g.Date = SimDate;
  perf.now = () => clock.now() - epoch;
  Object.defineProperty(AbortSignal, 'timeout', {
    value: (ms: number) => {
      const controller = new AbortController();
      clock.setTimeout(
        () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
        nodeDelay(ms),
      );
      return controller.signal;
    },
    writable: true,
    configurable: true,
  });
  timers.setTimeout = setTimeoutSim;
  timers.clearTimeout = clearTimeoutSim;
  timers.setInterval = setIntervalSim;
  timers.clearInterval = clearIntervalSim;
  promises.setTimeout = promisesSetTimeout;
  if (scheduler)
    scheduler.wait = (ms: number, options?: { signal?: AbortSignal }) =>
      promisesSetTimeout(ms, undefined, options);
  const seed = world.randomSeed;
  if (seed !== undefined) Math.random = mulberry32(seed);
  // ES modules that imported from node:timers or node:timers/promises see the patched functions.
  syncBuiltinESMExports();

  return () => {
    g.setTimeout = saved.setTimeout;
    g.clearTimeout = saved.clearTimeout;
    g.setInterval = saved.setInterval;
    g.clearInterval = saved.clearInterval;
    g.Date = saved.Date;
    Math.random = saved.random;
    if (ownNow) Object.defineProperty(perf, 'now', ownNow);
    else delete (perf as { now?: unknown }).now;
    if (ownTimeout) Object.defineProperty(AbortSignal, 'timeout', ownTimeout);
    timers.setTimeout = real.timers.setTimeout;
    timers.clearTimeout = real.timers.clearTimeout;
    timers.setInterval = real.timers.setInterval;
    timers.clearInterval = real.timers.clearInterval;
    promises.setTimeout = real.promises.setTimeout;
    if (scheduler && real.promises.wait) scheduler.wait = real.promises.wait;
    syncBuiltinESMExports();
  };
}

/** A small seeded generator of uniform numbers in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
