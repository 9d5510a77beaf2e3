import { once } from 'node:events';
import { createReadStream, createWriteStream, type Stats } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { BlobChangedError, InputError, NotFoundError } from '../../model/errors.js';
import { discard } from '../../model/streams.js';
import type { BlobPiece, BlobRead, BlobStore } from '../../ports/ports.js';

/** A key that would lead out of a folder store (`../x`, an absolute path): no retry can change it. */
export class KeyEscapesStoreError extends InputError {
  override readonly name = 'KeyEscapesStoreError';
}

/**
 * The file at `path` (the store's `key`, of the given `stat`) from `start` to `end`, streamed;
 * its version is its size and modification time, and a read of another version is refused.
 */
export function readFileRange(
  key: string,
  path: string,
  info: Stats,
  options: { start?: number; end?: number; version?: string },
): BlobRead {
  const version = `${info.size}-${info.mtimeMs}`;
  if (options.version !== undefined && options.version !== version) throw new BlobChangedError(key);
  const start = options.start ?? 0;
  const end = Math.min(options.end ?? info.size, info.size);
  const body =
    start >= end
      ? (async function* (): AsyncGenerator<Uint8Array> {})()
      : (createReadStream(path, { start, end: end - 1 }) as AsyncIterable<Uint8Array>);
  return { size: info.size, version, body };
}

/** A folder as a bucket: keys are paths under `root`. Writes are atomic (temp file + rename). */
export class FolderBlobStore implements BlobStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  private path(key: string): string {
    const path = resolve(this.root, key);
    if (path !== this.root && !path.startsWith(this.root + sep))
      throw new KeyEscapesStoreError(`${key} escapes the store: it leads out of ${this.root}`);
    return path;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(this.path(key));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** The file from `start` (to `end`), streamed; its version is its size and modification time. */
  async read(
    key: string,
    options: { start?: number; end?: number; version?: string } = {},
  ): Promise<BlobRead | undefined> {
    const path = this.path(key);
    let info: Stats;
    try {
      info = await stat(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    return readFileRange(key, path, info, options);
  }

  async put(key: string, body: Uint8Array | string): Promise<void> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    const temp = `${path}.${process.pid}.tmp`;
    await writeFile(temp, body);
    await rename(temp, path);
  }

  async putStream(key: string, body: AsyncIterable<Uint8Array | string>): Promise<void> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    const temp = `${path}.${process.pid}.tmp`;
    const file = createWriteStream(temp);
    const failed = new Promise<never>((_, reject) => file.once('error', reject));
    failed.catch(() => undefined);
    try {
      for await (const chunk of body) {
        if (!file.write(chunk)) await Promise.race([once(file, 'drain'), failed]);
      }
      file.end();
      await Promise.race([once(file, 'finish'), failed]);
    } catch (error) {
      await discard(file);
      await rm(temp, { force: true });
      throw error;
    }
    await rename(temp, path);
  }

  async compose(key: string, pieces: readonly BlobPiece[]): Promise<void> {
    // Every named object first: a missing one writes nothing.
    for (const piece of pieces) {
      if (typeof piece === 'object' && !(piece instanceof Uint8Array) && !(await this.read(piece.key)))
        throw new NotFoundError(`${piece.key} does not exist in ${this.root}`);
    }
    const self = this;
    await this.putStream(
      key,
      (async function* () {
        for (const piece of pieces) {
          if (typeof piece === 'string' || piece instanceof Uint8Array) yield piece;
          else {
            const path = self.path(piece.key);
            const end = piece.end === undefined ? undefined : piece.end - 1;
            if (end !== undefined && end < (piece.start ?? 0)) continue;
            yield* createReadStream(path, { start: piece.start ?? 0, ...(end === undefined ? {} : { end }) });
          }
        }
      })(),
    );
  }

  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    const walk = async (dir: string) => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      for (const entry of entries) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) await walk(path);
        else {
          const key = relative(this.root, path).split(sep).join('/');
          if (key.startsWith(prefix)) out.push(key);
        }
      }
    };
    await walk(this.root);
    return out.sort();
  }
}

/**
 * Several stores read as one, first hit wins: e.g. the suite's own `prompts/` folder in front
 * of the prompts that ship with Assay.
 */
export class LayeredBlobStore implements BlobStore {
  constructor(private readonly layers: BlobStore[]) {}

  async get(key: string): Promise<Uint8Array | undefined> {
    for (const layer of this.layers) {
      const body = await layer.get(key);
      if (body) return body;
    }
    return undefined;
  }

  async read(
    key: string,
    options?: { start?: number; end?: number; version?: string },
  ): Promise<BlobRead | undefined> {
    for (const layer of this.layers) {
      const read = await layer.read(key, options);
      if (read) return read;
    }
    return undefined;
  }

  async put(key: string, body: Uint8Array | string, contentType?: string): Promise<void> {
    await this.layers[0]!.put(key, body, contentType);
  }

  async putStream(
    key: string,
    body: AsyncIterable<Uint8Array | string>,
    contentType?: string,
  ): Promise<void> {
    await this.layers[0]!.putStream(key, body, contentType);
  }

  async compose(key: string, pieces: readonly BlobPiece[], contentType?: string): Promise<void> {
    await this.layers[0]!.compose(key, pieces, contentType);
  }

  async list(prefix: string): Promise<string[]> {
    const all = await Promise.all(this.layers.map((l) => l.list(prefix)));
    return [...new Set(all.flat())].sort();
  }
}
