/**
 * A simulated clock for tests that must not depend on the wall clock or the machine's load:
 * timers fire in order of their due time, time jumps straight to the next one, and promise
 * chains run to the end before it does.
 *
 * ```ts
 * const clock = new SimClock();
 * const done = system(clock.sleep, clock.now);   // anything that waits through the clock
 * await clock.runUntil(done);                     // simulated ms in clock.now()
 * ```
 */
import type { Sleep } from '../../shared/lib/providers/retry.js';

interface Timer {
  at: number;
  seq: number;
  fire: () => void;
}

export class SimClock {
  private time = 0;
  private seq = 0;
  private readonly timers: Timer[] = [];

  constructor(start = 0) {
    this.time = start;
  }

  readonly now = (): number => this.time;

  readonly setTimeout = (fire: () => void, ms: number): unknown => {
    const timer = { at: this.time + Math.max(0, ms), seq: this.seq++, fire };
    // Kept sorted by (at, seq): insertion by binary search.
    let lo = 0;
    let hi = this.timers.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const t = this.timers[mid]!;
      if (t.at < timer.at || (t.at === timer.at && t.seq < timer.seq)) lo = mid + 1;
      else hi = mid;
    }
    this.timers.splice(lo, 0, timer);
    return timer;
  };

  readonly clearTimeout = (handle: unknown): void => {
    const i = this.timers.indexOf(handle as Timer);
    if (i >= 0) this.timers.splice(i, 1);
  };

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
    return this.timers.length;
  }

  /**
   * Fires timers in order until `done` settles (returns its value, or throws its error).
   * Throws if nothing is left to fire while `done` is still pending (a deadlock), or past
   * `limitMs` of simulated time.
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
      await drain();
      if (settled) return watched;
      const next = this.timers.shift();
      if (!next) throw new Error(`simulated deadlock at ${this.time} ms: nothing left to wait for`);
      if (next.at > limitMs) throw new Error(`still running after ${limitMs} simulated ms`);
      this.time = next.at;
      next.fire();
    }
  }

  /** Moves time forward by `ms`, firing what falls due on the way. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await drain();
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.time = next.at;
      next.fire();
    }
    this.time = end;
    await drain();
  }
}

/** Lets every queued promise reaction run (the microtask queue empties before an immediate). */
function drain(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
