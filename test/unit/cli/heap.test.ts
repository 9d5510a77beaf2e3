/**
 * The report's heap growth: set for the report's work, V8's default again after it, also when
 * the work fails or when reports nest.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { withReportHeap } from '../../../cli/heap.js';

describe('withReportHeap', () => {
  it('sets the growth for the work and gives V8 its default back after, once the outermost work ends', async () => {
    const set: string[] = [];
    const flags = (f: string) => set.push(f);
    const value = await withReportHeap(async () => {
      expect(set).toEqual(['--heap-growing-percent=50']);
      await withReportHeap(async () => undefined, flags);
      expect(set).toHaveLength(1);
      return 7;
    }, flags);
    expect(value).toBe(7);
    expect(set).toEqual(['--heap-growing-percent=50', '--heap-growing-percent=0']);
    await expect(
      withReportHeap(async () => {
        throw new Error('report failed');
      }, flags),
    ).rejects.toThrow('report failed');
    expect(set.at(-1)).toBe('--heap-growing-percent=0');
  });

  it('sets flags this V8 knows: an unknown one is not an error but a line on stderr', () => {
    const set: string[] = [];
    void withReportHeap(
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
