import type { ItemMessage } from '../../model/model.js';
import type { WorkQueue } from '../../ports/ports.js';

/**
 * The local WorkQueue: a bounded buffer between ingest (which fills it while it reads the
 * dataset) and the worker pool (which drains it). When the buffer is full, `sendItems` waits
 * for room, so reading the dataset never runs ahead of scoring by more than `capacity`
 * messages: the queue never holds the dataset. Iterating it yields messages until it is closed
 * and empty; several workers may iterate it at once.
 */
export class LocalWorkQueue implements WorkQueue, AsyncIterable<ItemMessage> {
  private readonly buffer: ItemMessage[] = [];
  private closed = false;
  private failure?: { error: unknown };
  /** Producers waiting for room, consumers waiting for a message. */
  private readonly roomWaiters: (() => void)[] = [];
  private readonly itemWaiters: (() => void)[] = [];

  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new Error(`queue capacity must be at least 1, got ${capacity}`);
  }

  async sendItems(messages: ItemMessage[]): Promise<void> {
    for (const message of messages) {
      while (this.buffer.length >= this.capacity && !this.failure && !this.closed)
        await new Promise<void>((wake) => this.roomWaiters.push(wake));
      if (this.failure) throw this.failure.error;
      if (this.closed) throw new Error('the local work queue is closed: no more items can be sent');
      this.buffer.push(message);
      this.itemWaiters.shift()?.();
    }
  }

  /** No more messages will come: workers finish what is buffered, then stop. */
  close(): void {
    this.closed = true;
    this.wakeAll();
  }

  /** Stops both sides now: pending and later sends and takes throw `error`. */
  fail(error: unknown): void {
    this.failure ??= { error };
    this.wakeAll();
  }

  /** The next message; undefined once the queue is closed and drained. */
  async take(): Promise<ItemMessage | undefined> {
    for (;;) {
      if (this.failure) throw this.failure.error;
      const message = this.buffer.shift();
      if (message) {
        this.roomWaiters.shift()?.();
        return message;
      }
      if (this.closed) return undefined;
      await new Promise<void>((wake) => this.itemWaiters.push(wake));
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<ItemMessage> {
    return {
      next: async () => {
        const value = await this.take();
        return value === undefined ? { done: true, value: undefined } : { done: false, value };
      },
    };
  }

  private wakeAll(): void {
    for (const wake of this.roomWaiters.splice(0)) wake();
    for (const wake of this.itemWaiters.splice(0)) wake();
  }
}
