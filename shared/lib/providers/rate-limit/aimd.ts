/**
 * Additive increase, multiplicative decrease of the calls allowed in flight, never below a
 * floor: a window of one turns every slow call into a stall of the whole model, so the floor
 * keeps the pipe busy (the retry-after pause still holds everyone back while the server asks).
 */
export class Aimd {
  /** Calls allowed in flight now (fractional: it grows by 1/limit per success). */
  limit: number;
  /** Bumped by each cut: a 429 from a call admitted before the last cut does not cut again. */
  epoch = 0;

  constructor(
    readonly max: number,
    public min = 1,
  ) {
    this.limit = max;
  }

  /** The window's floor for a caller that runs `concurrency` calls at once: an eighth of them, at least 1. */
  static floorFor(concurrency: number): number {
    return Math.max(1, Math.floor(concurrency / 8));
  }

  /** A call admitted at `epoch` was refused with a 429 while `inFlight` calls were out (itself included). */
  throttled(epoch: number, inFlight: number): void {
    if (epoch < this.epoch) return;
    this.limit = Math.max(this.min, Math.floor(Math.min(this.limit, inFlight) / 2));
    this.epoch += 1;
  }

  /** A call succeeded: one more slot per `limit` successes, up to `max`. */
  succeeded(): void {
    if (this.limit < this.max) this.limit = Math.min(this.max, this.limit + 1 / this.limit);
  }

  /** Whole calls allowed in flight. */
  get allowed(): number {
    return Math.max(this.min, Math.floor(this.limit));
  }
}
