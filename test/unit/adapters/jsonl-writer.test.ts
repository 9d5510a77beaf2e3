/**
 * The JSON-lines writer behind results.jsonl, the LLM cache and the batch ledger: lines in call
 * order, each acknowledged only once it is in the file, and a failed write loses nothing that
 * was acknowledged and does not stop later appends.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JsonLinesWriter } from '../../../shared/adapters/local/jsonl.js';
import { tempDir } from '../../helpers.js';

const lines = async (path: string) =>
  (await readFile(path, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { n: number });

describe('JsonLinesWriter', () => {
  it('writes lines in call order, those made while the file opens included, each in the file when acknowledged', async () => {
    const path = join(await tempDir(), 'log.jsonl');
    const writer = new JsonLinesWriter(path);
    // Made before the file is open: they wait for it, and go out together, in order.
    const first = Array.from({ length: 5 }, (_, n) => writer.append({ n }));
    await Promise.all(first);
    expect((await lines(path)).map((l) => l.n)).toEqual([0, 1, 2, 3, 4]);
    for (let n = 5; n < 10; n += 1) {
      await writer.append({ n });
      // Acknowledged means written: the line is there before anything else happens.
      expect((await lines(path)).at(-1)).toEqual({ n });
    }
  });

  it('a failed open rejects the appends that waited for it; the next append tries again', async () => {
    const dir = await tempDir();
    const path = join(dir, 'later', 'log.jsonl');
    const writer = new JsonLinesWriter(path);
    await expect(writer.append({ n: 1 })).rejects.toThrow(/ENOENT/);
    await mkdir(join(dir, 'later'));
    await writer.append({ n: 2 });
    expect(await lines(path)).toEqual([{ n: 2 }]);
  });
});
