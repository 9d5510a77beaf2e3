/**
 * The local LLM cache file is read once, however many calls arrive while it is being read: a
 * run at concurrency 256 used to read (and parse) the whole file 256 times before its first
 * request, which with a cache grown over many runs held the run up for minutes.
 */
import { writeFile } from 'node:fs/promises';
import { describe, expect, it, vi } from 'vitest';
import { tempDir } from '../../helpers.js';

const reads = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../../shared/adapters/local/jsonl.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../shared/adapters/local/jsonl.js')>();
  return {
    ...real,
    readJsonLines: (...args: Parameters<typeof real.readJsonLines>) => {
      reads.count += 1;
      return real.readJsonLines(...args);
    },
  };
});

// The fast project shares modules between files: load the cache anew so it sees the mock.
vi.resetModules();
const { FileLlmCache } = await import('../../../shared/adapters/local/file-llm-cache.js');

describe('FileLlmCache', () => {
  it('reads its file once for any number of concurrent first calls', async () => {
    const dir = await tempDir();
    const path = `${dir}/cache.jsonl`;
    const completion = { text: 'ok', finishReason: 'stop', usage: { input: 1, output: 1, cached: 0 } };
    await writeFile(
      path,
      `${Array.from({ length: 500 }, (_, i) => JSON.stringify({ key: `k${i}`, completion })).join('\n')}\n`,
    );
    const cache = new FileLlmCache(path);
    const hits = await Promise.all(Array.from({ length: 256 }, (_, i) => cache.get(`k${i}`)));
    expect(hits.every((hit) => hit?.text === 'ok')).toBe(true);
    expect(await cache.get('missing')).toBeUndefined();
    expect(reads.count).toBe(1);
  });
});
