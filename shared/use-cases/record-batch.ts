import type { ItemResult } from '../model/model.js';
import type { RecordOutcome, RunStore } from '../ports/ports.js';

/** How one message's result is recorded (`ScoreItemDeps.record`, `EndItemDeps.record`). */
export type RecordResult = (result: ItemResult) => Promise<RecordOutcome>;

/** One message of a batch: it records its result at most once, and ends (whether it recorded or not). */
export interface BatchMessage {
  record: RecordResult;
  /** The message is done with the batch: call it in a `finally`, after `record` or without it. */
  end(): void;
}

/**
 * The results of one batch of item messages, recorded together: each message hands over its
 * result (or ends without one), and once every message of the batch has, the results go to the
 * store in one call ({@link RunStore.recordResults}), which counts results whose rows share a
 * counter in one write. A message waits for its result's outcome, so it is done (and leaves the
 * queue) only once its result is recorded and counted; a recording that fails fails every
 * message of it, and each is delivered again (the store's writes are idempotent).
 *
 * Nothing a message waits for before recording may wait on another message's recording: the
 * messages of a batch are scored side by side, each on its own.
 */
export class BatchRecorder {
  private readonly held: { result: ItemResult; settle: (outcome: Promise<RecordOutcome>) => void }[] = [];
  private open: number;
  private issued = 0;

  constructor(
    private readonly store: Pick<RunStore, 'recordResults'>,
    private readonly size: number,
  ) {
    this.open = size;
  }

  /** The next message's handle; the batch has `size` of them. */
  message(): BatchMessage {
    if (this.issued === this.size) throw new Error(`a batch of ${this.size} messages has no more handles`);
    this.issued += 1;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      this.open -= 1;
      if (this.open === 0) this.flush();
    };
    return {
      record: (result) => {
        if (ended) throw new Error(`the message of item ${result.itemId} recorded a result after it ended`);
        const outcome = new Promise<RecordOutcome>((resolve, reject) =>
          this.held.push({ result, settle: (p) => p.then(resolve, reject) }),
        );
        end();
        return outcome;
      },
      end,
    };
  }

  private flush(): void {
    const held = this.held.splice(0);
    if (held.length === 0) return;
    const outcomes = this.store.recordResults(held.map((h) => h.result));
    held.forEach((h, i) => {
      h.settle(
        outcomes.then((all) => {
          const outcome = all[i];
          if (!outcome) throw new Error(`the store gave ${all.length} outcomes for ${held.length} results`);
          return outcome;
        }),
      );
    });
  }
}
