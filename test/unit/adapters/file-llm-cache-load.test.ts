/**
 * The local LLM cache file is read once, however many calls arrive while it is being read: a
 * run at concurrency 256 used to read (and parse) the whole file 256 times before its first
 * request, which with a cache grown over many runs held the run up for minutes. And it is only
 * indexed: each line's key is read, its answer is parsed when that key is asked for.
 */
import { writeFile } from 'node:fs/promises';
import { describe, expect, it, vi } from 'vitest';
import { tempDir } from '../../helpers.js';

const reads = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../../shared/adapters/local/jsonl.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../shared/adapters/local/jsonl.js')>();
  return {
    ...real,
    readJsonLinesBytes: (...args: Parameters<typeof real.readJsonLinesBytes>) => {
      reads.count += 1;
      return real.readJsonLinesBytes(...args);
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

  it('parses an answer when its key is asked for: a corrupt one fails that key alone, naming its line', async () => {
    const dir = await tempDir();
    const path = `${dir}/cache.jsonl`;
    const completion = { text: 'ok', finishReason: 'stop', usage: { input: 1, output: 1, cached: 0 } };
    await writeFile(
      path,
      [
        JSON.stringify({ key: 'good', completion }),
        '{"key":"broken","completion":{"text":"cut',
        // Written by hand in another order: parsed whole while indexing.
        JSON.stringify({ completion: { ...completion, text: 'reordered' }, key: 'other' }),
        JSON.stringify({ key: 'quo\\"te', completion: { ...completion, text: 'escaped' } }),
        '',
      ].join('\n'),
    );
    const cache = new FileLlmCache(path);
    expect((await cache.get('good'))?.text).toBe('ok');
    expect((await cache.get('other'))?.text).toBe('reordered');
    expect((await cache.get('quo\\"te'))?.text).toBe('escaped');
    await expect(cache.get('broken')).rejects.toThrow(/cache\.jsonl line 2: not a JSON line/);
    expect(await cache.get('missing')).toBeUndefined();
  });

  it('refuses a line in another shape that is not JSON while indexing, naming its line', async () => {
    const dir = await tempDir();
    const path = `${dir}/cache.jsonl`;
    await writeFile(path, '{"completion": oops\n{"key":"a","completion":{}}\n');
    await expect(new FileLlmCache(path).get('a')).rejects.toThrow(/cache\.jsonl line 1: not a JSON line/);
  });
});
