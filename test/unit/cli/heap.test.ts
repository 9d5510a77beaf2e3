/**
 * The report's heap growth: set for the report's work, V8's default again after it, also when
 * the work fails or when reports nest.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { REPORT_HEAP_BOUND_FROM, withReportHeap } from '../../../cli/heap.js';

describe('withReportHeap', () => {
  it('sets the growth for the work and gives V8 its default back after, once the outermost work ends', async () => {
    const set: string[] = [];
    const flags = (f: string) => set.push(f);
    const value = await withReportHeap(
      REPORT_HEAP_BOUND_FROM,
      async () => {
        expect(set).toEqual(['--heap-growing-percent=50']);
        await withReportHeap(REPORT_HEAP_BOUND_FROM, async () => undefined, flags);
        expect(set).toHaveLength(1);
        return 7;
      },
      flags,
    );
    expect(value).toBe(7);
    expect(set).toEqual(['--heap-growing-percent=50', '--heap-growing-percent=0']);
    await expect(
      withReportHeap(
        REPORT_HEAP_BOUND_FROM,
        async () => {
          throw new Error('report failed');
        },
        flags,
      ),
    ).rejects.toThrow('report failed');
    expect(set.at(-1)).toBe('--heap-growing-percent=0');
    // A smaller run's report keeps V8's default.
    set.length = 0;
    expect(await withReportHeap(REPORT_HEAP_BOUND_FROM - 1, async () => 'small', flags)).toBe('small');
    expect(set).toEqual([]);
  });

  it('sets flags this V8 knows: an unknown one is not an error but a line on stderr', () => {
    const set: string[] = [];
    void withReportHeap(
      REPORT_HEAP_BOUND_FROM,
      async () => undefined,
      (f) => set.push(f),
    );
    for (const flags of [...set, '--no-such-flag']) {
      const child = spawnSync(
        process.execPath,
        ['-e', 'require("node:v8").setFlagsFromString(process.env.FLAGS)'],
        { encoding: 'utf8', env: { ...process.env, FLAGS: flags } },
      );
      expect(child.stderr === '', `${flags}: ${child.stderr}`).toBe(flags !== '--no-such-flag');
    }
  });
});
