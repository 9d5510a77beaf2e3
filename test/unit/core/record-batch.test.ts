import { describe, expect, it } from 'vitest';
import type { ItemResult } from '../../../shared/model/model.js';
import type { RecordOutcome } from '../../../shared/ports/ports.js';
import { BatchRecorder } from '../../../shared/use-cases/record-batch.js';

const result = (itemId: string) => ({ itemId, runId: 'r', row: 0 }) as ItemResult;

/** A store that records what it is given, and answers when told to. */
function store(fail?: Error) {
  const calls: string[][] = [];
  return {
    calls,
    async recordResults(results: readonly ItemResult[]): Promise<RecordOutcome[]> {
      calls.push(results.map((r) => r.itemId));
      if (fail) throw fail;
      return results.map((r, i) => ({ recorded: r.itemId !== 'again', complete: i === 0 }));
    },
  };
}

/** Lets pending promise callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('BatchRecorder', () => {
  it("records the batch's results in one call once every message recorded or ended, each message its own outcome", async () => {
    const s = store();
    const recorder = new BatchRecorder(s, 4);
    const [a, b, c, d] = [recorder.message(), recorder.message(), recorder.message(), recorder.message()];
    const pa = a.record(result('a'));
    const pb = b.record(result('again'));
    c.end();
    await settle();
    // One message is still being scored: nothing is recorded yet.
    expect(s.calls).toEqual([]);
    a.end(); // after recording: changes nothing
    const pd = d.record(result('d'));
    d.end();
    expect(await Promise.all([pa, pb, pd])).toEqual([
      { recorded: true, complete: true },
      { recorded: false, complete: false },
      { recorded: true, complete: false },
    ]);
    expect(s.calls).toEqual([['a', 'again', 'd']]);
  });

  it('fails every message of a recording that fails (each is delivered again)', async () => {
    const s = store(new Error('throttled for good'));
    const recorder = new BatchRecorder(s, 2);
    const [a, b] = [recorder.message(), recorder.message()];
    const results = Promise.allSettled([a.record(result('a')), b.record(result('b'))]);
    expect((await results).map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });

  it('makes no call for a batch with no result, and refuses a handle past the batch or a record after the end', async () => {
    const s = store();
    const recorder = new BatchRecorder(s, 1);
    const only = recorder.message();
    expect(() => recorder.message()).toThrow(/no more handles/);
    only.end();
    expect(() => only.record(result('late'))).toThrow(/after it ended/);
    await settle();
    expect(s.calls).toEqual([]);
  });
});
