import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { BlobStore } from '../../ports/ports.js';
import { type ByteSource, type DatasetSpec, datasetReading, type RawRow, readRows } from './read.js';

/** A local file read by position (each read opens it, so nothing is left open). */
export function fileSource(path: string, size: number): ByteSource {
  return {
    size,
    async read(start, end) {
      const bytes = new Uint8Array(Math.max(0, Math.min(end, size) - start));
      const handle = await open(path, 'r');
      try {
        let filled = 0;
        while (filled < bytes.length) {
          const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, start + filled);
          if (bytesRead === 0) break;
          filled += bytesRead;
        }
        return filled === bytes.length ? bytes : bytes.subarray(0, filled);
      } finally {
        await handle.close();
      }
    },
  };
}

/**
 * An object in a blob store read by position, with ranged reads of the version first read (a
 * replaced object fails the read rather than mixing two uploads).
 */
export function blobSource(
  store: BlobStore,
  key: string,
  object: { size: number; version: string },
): ByteSource {
  return {
    size: object.size,
    async read(start, end) {
      const stop = Math.min(end, object.size);
      if (stop <= start) return new Uint8Array();
      const read = await store.read(key, { start, end: stop, version: object.version });
      if (!read) throw new Error(`${key} is gone (deleted while it was being read)`);
      const want = stop - start;
      const parts: Uint8Array[] = [];
      let got = 0;
      // A store may send more than the range asked for: what is past it is let go.
      for await (const chunk of read.body) {
        const part = chunk.length > want - got ? chunk.subarray(0, want - got) : chunk;
        parts.push(part);
        got += part.length;
        if (got >= want) break;
      }
      return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    },
  };
}

/**
 * The rows of a local dataset file, in the format and compression its suite's `dataset` keys
 * (or its extension) say: Parquet by position, the others streamed.
 */
export async function* readDatasetFile(path: string, dataset: DatasetSpec = {}): AsyncGenerator<RawRow> {
  const { format, options } = datasetReading(path, dataset);
  const input = format === 'parquet' ? fileSource(path, (await stat(path)).size) : createReadStream(path);
  yield* readRows(input, format, options);
}
