import { describe, expect, it } from 'vitest';
import { pool } from '../../../cli/local-run.js';
import { LocalWorkQueue } from '../../../shared/adapters/local/local-work-queue.js';
import type { ItemMessage } from '../../../shared/model/model.js';

const message = (i: number): ItemMessage =>
  ({ runId: 'r', item: { id: `i${i}`, row: i, input: {} } }) as unknown as ItemMessage;

describe('LocalWorkQueue', () => {
  it('makes the producer wait when full, so it never holds more than its capacity', async () => {
    const queue = new LocalWorkQueue(3);
    let sent = 0;
    const producer = (async () => {
      for (let i = 0; i < 10; i += 1) {
        await queue.sendItems([message(i)]);
        sent += 1;
      }
      queue.close();
    })();
    // Past every microtask the producer could run: it has filled the queue and waits.
    await new Promise((r) => setImmediate(r));
    expect(sent).toBe(3); // the fourth send waits for room
    const seen: string[] = [];
    let most = 0;
    await pool(queue, 2, async (m) => {
      most = Math.max(most, sent - seen.length);
      seen.push(m.item.id);
      await new Promise((r) => setImmediate(r));
    });
    await producer;
    expect(seen).toHaveLength(10);
    expect(new Set(seen).size).toBe(10);
    expect(most).toBeLessThanOrEqual(3 + 2);
  });

  it('stops both sides when one fails', async () => {
    const queue = new LocalWorkQueue(1);
    await queue.sendItems([message(0)]);
    const blocked = queue.sendItems([message(1)]);
    queue.fail(new Error('worker broke'));
    await expect(blocked).rejects.toThrow('worker broke');
    await expect(queue.take()).rejects.toThrow('worker broke');
  });

  it('refuses a capacity below one', () => {
    expect(() => new LocalWorkQueue(0)).toThrow(/at least 1/);
  });
});
