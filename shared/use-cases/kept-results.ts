/**
 * A part's results kept beside its tally, as JSON lines in report order: the part's files step
 * reads them back from the scratch store (a few large reads) instead of reading the part from
 * the table a second time (a read unit each 4 KB of results, at the aggregation's read pace).
 * The file is written whole or not at all (`putStream`), so a files step finds either all of a
 * part's results or none, and then reads the table as before.
 */
import { decodeResult, StoredDataError } from '../model/codec.js';
import type { ItemResult } from '../model/model.js';
import type { ResultSource } from '../model/report-order.js';
import type { BlobRead, BlobStore } from '../ports/ports.js';

/** Results a chunk of the kept file holds (a write of the stream). */
const LINES_PER_CHUNK = 256;

/** `results` as the kept file's text, each result handed to `each` as it passes. */
export async function* keptLines(
  results: AsyncIterable<ItemResult>,
  each: (result: ItemResult) => void,
): AsyncGenerator<string> {
  let chunk = '';
  let lines = 0;
  for await (const result of results) {
    each(result);
    chunk += `${JSON.stringify(result)}\n`;
    lines += 1;
    if (lines % LINES_PER_CHUNK === 0) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk !== '') yield chunk;
}

/**
 * The results the kept file `key` holds, in its order, each checked as a stored result (a line
 * that is not one is a `StoredDataError` naming it); undefined when there is no such file. Each
 * call of the source reads the version found first.
 */
export async function keptResults(store: BlobStore, key: string): Promise<ResultSource | undefined> {
  const found = await store.read(key);
  if (!found) return undefined;
  let open: BlobRead | undefined = found;
  return () =>
    (async function* () {
      const read = open ?? (await store.read(key, { version: found.version }));
      open = undefined;
      if (!read) throw new StoredDataError(`${key}: the part's kept results are gone`);
      let carry = Buffer.alloc(0);
      let line = 0;
      const decode = (text: string) => {
        line += 1;
        return decodeResult(parsed(text, key, line), `${key} line ${line}`);
      };
      for await (const bytes of read.body) {
        const buffer = carry.length > 0 ? Buffer.concat([carry, bytes]) : Buffer.from(bytes);
        let start = 0;
        for (let nl = buffer.indexOf(0x0a); nl !== -1; nl = buffer.indexOf(0x0a, start)) {
          yield decode(buffer.toString('utf8', start, nl));
          start = nl + 1;
        }
        carry = buffer.subarray(start);
      }
      if (carry.length > 0) throw new StoredDataError(`${key} line ${line + 1}: cut off (no newline)`);
    })();
}

function parsed(text: string, key: string, line: number): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new StoredDataError(`${key} line ${line}: not JSON (${(error as Error).message})`);
  }
}
