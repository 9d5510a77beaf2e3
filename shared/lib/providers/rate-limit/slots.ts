/**
 * A fixed number of slots shared by every backend a declared `concurrency` names: a call takes
 * one before it is sent and gives it back when its attempt ends, answered or not, so no more
 * than `size` calls are ever out to those backends at once (a local server's slots). Waiters
 * are served in the order they came.
 */
export class Slots {
  private used = 0;
  private readonly waiting: (() => void)[] = [];
  /** The most slots ever taken at once (for tests and reports). */
  peak = 0;

  constructor(public size: number) {}

  /** Calls holding a slot now. */
  get inUse(): number {
    return this.used;
  }

  /** Resolves when the caller holds a slot (undefined: it took one at once, no promise). */
  take(): Promise<void> | undefined {
    if (this.waiting.length === 0 && this.used < this.size) {
      this.hold();
      return undefined;
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Gives a slot back, handing it to the next waiter. */
  give(): void {
    this.used -= 1;
    this.serve();
  }

  /** A new size (the suite changed it): more room serves waiters at once; less drains as calls end. */
  resize(size: number): void {
    this.size = size;
    this.serve();
  }

  private serve(): void {
    while (this.waiting.length > 0 && this.used < this.size) {
      this.hold();
      this.waiting.shift()!();
    }
  }

  private hold(): void {
    this.used += 1;
    if (this.used > this.peak) this.peak = this.used;
  }
}
