/**
 * A simulated clock for code that must not depend on the wall clock or the machine's load
 * (tests, and the capacity model in bench/cloud/): timers fire in order of their due time, time
 * jumps straight to the next one, and everything runnable runs to the end before it does.
 *
 * ```ts
 * const clock = new SimClock();
 * const done = system(clock.sleep, clock.now);   // anything that waits through the clock
 * await clock.runUntil(done);                     // simulated ms in clock.now()
 * ```
 *
 * Timers live in a binary heap ordered by (due time, creation order), so thousands of them cost
 * a logarithm each; a cleared timer is dropped when it reaches the top.
 */
import type { Sleep } from './providers/retry.js';

/** One scheduling of a timer in the heap; a timer rescheduled or cleared leaves its old entry dead. */
interface Entry {
  at: number;
  seq: number;
  timer: SimTimer;
}

/**
 * A timer of the simulated clock. It has the methods of Node's `Timeout` that code calls on one
 * (`ref`, `unref`, `hasRef`, `refresh`, `close`, and a numeric id), so it can stand in for it.
 */
export class SimTimer {
  /** The heap entry that will fire it; undefined once fired (one-shot) or cleared. */
  entry: Entry | undefined;
  private referenced = true;

  constructor(
    private readonly clock: SimClock,
    readonly callback: () => void,
    readonly delay: number,
    readonly repeat: boolean,
    readonly id: number,
  ) {}

  ref(): this {
    this.referenced = true;
    return this;
  }

  /** Kept for Node's interface; a simulated timer fires whether or not it is referenced. */
  unref(): this {
    this.referenced = false;
    return this;
  }

  hasRef(): boolean {
    return this.referenced;
  }

  /** Starts the timer's delay again from now (Node's `timeout.refresh()`). */
  refresh(): this {
    this.clock.reschedule(this);
    return this;
  }

  close(): this {
    this.clock.clearTimeout(this);
    return this;
  }

  [Symbol.toPrimitive](): number {
    this.clock.remember(this);
    return this.id;
  }
}

/** `runUntil` found nothing left to fire while the awaited promise was still pending. */
export class SimDeadlockError extends Error {
  override readonly name = 'SimDeadlockError';

  constructor(
    /** Simulated time of the deadlock, ms. */
    readonly at: number,
    /** What the clock's owner reports as still waiting (see {@link SimClockOptions.describe}). */
    readonly pending: readonly string[] = [],
  ) {
    super(
      `simulated deadlock at ${at} ms: nothing left to wait for` +
        (pending.length > 0 ? `; still pending: ${pending.join('; ')}` : ''),
    );
  }
}

/** `runUntil` reached its limit of simulated time with the awaited promise still pending. */
export class SimTimeLimitError extends Error {
  override readonly name = 'SimTimeLimitError';

  constructor(
    readonly limitMs: number,
    readonly pending: readonly string[] = [],
  ) {
    super(
      `still running after ${limitMs} simulated ms` +
        (pending.length > 0 ? `; still pending: ${pending.join('; ')}` : ''),
    );
  }
}

export interface SimClockOptions {
  /** Simulated time at the start, ms. Default 0. */
  start?: number;
  /**
   * Lets everything runnable run before time moves on. Default: one turn of the event loop
   * (every queued promise reaction runs before an immediate does).
   */
  drain?: () => Promise<void>;
  /** Describes what is still waiting, for the deadlock and time-limit errors. */
  describe?: () => string[];
}

export class SimClock {
  private time: number;
  private seq = 0;
  private nextId = 1;
  private live = 0;
  private readonly heap: Entry[] = [];
  private readonly drain: () => Promise<void>;
  private readonly describe: () => string[];
  /** Timers whose numeric id escaped (`+timer`), so `clearTimeout(id)` finds them. */
  private readonly byId = new Map<number, SimTimer>();
  /** Timers fired since the clock was made. */
  fired = 0;

  constructor(options: number | SimClockOptions = 0) {
    const {
      start = 0,
      drain = turn,
      describe = () => [],
    } = typeof options === 'number' ? { start: options } : options;
    this.time = start;
    this.drain = drain;
    this.describe = describe;
  }

  readonly now = (): number => this.time;

  readonly setTimeout = (fire: () => void, ms: number): SimTimer => this.schedule(fire, ms, false);

  /** Fires every `ms` until cleared (Node's `setInterval`). */
  readonly setInterval = (fire: () => void, ms: number): SimTimer => this.schedule(fire, ms, true);

  /** Clears a timer of this clock (or its numeric id); answers whether it was one. */
  readonly clearTimeout = (handle: unknown): boolean => {
    const timer = typeof handle === 'number' ? this.byId.get(handle) : handle;
    if (!(timer instanceof SimTimer)) return false;
    if (timer.entry) {
      timer.entry = undefined;
      this.live -= 1;
    }
    this.byId.delete(timer.id);
    this.compactIfSparse();
    return true;
  };

  readonly clearInterval = this.clearTimeout;

  readonly sleep: Sleep = (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        this.clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = this.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });

  /** Timers not yet fired. */
  get pending(): number {
    return this.live;
  }

  /** When the next timer is due, or undefined when none is set. */
  get nextAt(): number | undefined {
    this.dropDead();
    return this.heap[0]?.at;
  }

  /**
   * Fires timers in order until `done` settles (returns its value, or throws its error).
   * Throws {@link SimDeadlockError} if nothing is left to fire while `done` is still pending,
   * or {@link SimTimeLimitError} past `limitMs` of simulated time.
   */
  async runUntil<T>(done: Promise<T>, limitMs = Number.POSITIVE_INFINITY): Promise<T> {
    let settled = false;
    const watched = done.then(
      (value) => {
        settled = true;
        return value;
      },
      (error: unknown) => {
        settled = true;
        throw error;
      },
    );
    watched.catch(() => {});
    for (;;) {
      await this.drain();
      if (settled) return watched;
      this.dropDead();
      const next = this.heap[0];
      if (!next) throw new SimDeadlockError(this.time, this.describe());
      if (next.at > limitMs) throw new SimTimeLimitError(limitMs, this.describe());
      this.fireTop();
    }
  }

  /** Moves time forward by `ms`, firing what falls due on the way. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await this.drain();
      this.dropDead();
      const next = this.heap[0];
      if (!next || next.at > end) break;
      this.fireTop();
    }
    this.time = end;
    await this.drain();
  }

  /** Starts a timer's delay again from now. */
  reschedule(timer: SimTimer): void {
    if (timer.entry) this.live -= 1;
    timer.entry = undefined;
    this.push(timer, this.time + timer.delay);
  }

  /** Keeps a timer findable by its numeric id. */
  remember(timer: SimTimer): void {
    if (timer.entry) this.byId.set(timer.id, timer);
  }

  private schedule(fire: () => void, ms: number, repeat: boolean): SimTimer {
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const timer = new SimTimer(this, fire, delay, repeat, this.nextId++);
    this.push(timer, this.time + delay);
    return timer;
  }

  private push(timer: SimTimer, at: number, seq = this.seq++): void {
    const entry: Entry = { at, seq, timer };
    timer.entry = entry;
    this.live += 1;
    const heap = this.heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(entry, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = entry;
  }

  private pop(): Entry | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right]!, heap[left]!) ? right : left;
      if (!before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
    return top;
  }

  /** Drops cleared or rescheduled entries from the top of the heap. */
  private dropDead(): void {
    while (this.heap.length > 0 && this.heap[0]!.timer.entry !== this.heap[0]) this.pop();
  }

  /** Fires the (live) entry at the top of the heap. */
  private fireTop(): void {
    const entry = this.pop()!;
    const timer = entry.timer;
    this.time = Math.max(this.time, entry.at);
    timer.entry = undefined;
    this.live -= 1;
    this.fired += 1;
    if (timer.repeat) this.push(timer, this.time + Math.max(timer.delay, 1));
    else this.byId.delete(timer.id);
    timer.callback();
  }

  /** Rebuilds the heap when cleared entries outnumber live ones (many cleared timeouts). */
  private compactIfSparse(): void {
    if (this.heap.length < 1024 || this.heap.length < 4 * this.live) return;
    const liveEntries = this.heap.filter((entry) => entry.timer.entry === entry);
    this.heap.length = 0;
    for (const entry of liveEntries) {
      this.live -= 1;
      this.push(entry.timer, entry.at, entry.seq);
    }
  }
}

function before(a: Entry, b: Entry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** Lets every queued promise reaction run (the microtask queue empties before an immediate). */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
