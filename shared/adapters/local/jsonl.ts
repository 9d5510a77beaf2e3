import { constants, writeSync } from 'node:fs';
import { appendFile, type FileHandle, open, truncate } from 'node:fs/promises';
import { InputError } from '../../model/errors.js';

/**
 * A log file that is a symbolic link: refused, never read or written through. A link planted in
 * an output folder (`results.jsonl` → another file) would otherwise have every result appended,
 * and a torn last line cut off, in whatever file it points at.
 */
export class LinkedFileError extends InputError {
  override readonly name = 'LinkedFileError';

  constructor(readonly path: string) {
    super(
      `${path} is a symbolic link: Assay reads and appends its own files only, never through a link. Remove the link (or choose another --out folder) and run again`,
    );
  }
}

/** Opened without following a symbolic link at the path (where the system offers O_NOFOLLOW). */
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;
const READ = constants.O_RDONLY | NO_FOLLOW;
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | NO_FOLLOW;

/** Opens a log file for reading or appending; a symbolic link at `path` is a {@link LinkedFileError}. */
async function openOwn(path: string, flags: number): Promise<FileHandle> {
  try {
    return await open(path, flags, 0o666);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new LinkedFileError(path);
    throw error;
  }
}

/** A line of a JSON-lines file that is not JSON, and is not the torn last line of a killed write. */
export class CorruptLineError extends InputError {
  override readonly name = 'CorruptLineError';

  constructor(
    readonly path: string,
    readonly line: number,
    detail: string,
  ) {
    super(`${path} line ${line}: not a JSON line (${detail}); the file is corrupt there`);
  }
}

/** Bytes read from the file at a time: the reader's memory is this plus one line, whatever the file's size. */
const CHUNK_BYTES = 1 << 20;

/**
 * Streams an append-only JSON-lines file, one decoded value at a time (with its 1-based line
 * number); `decode` checks each value. A process killed mid-write leaves a torn last line (no
 * newline after it): it is cut off the file, so the next append starts a line of its own, and
 * the item it held simply runs again. A last line that is whole JSON but lacks its newline
 * gets the newline. Any other line that is not JSON is corruption: a {@link CorruptLineError}
 * with its line number, never skipped. A missing file is an empty one.
 */
export async function* jsonLines<T>(
  path: string,
  decode: (value: unknown, line: number) => T = (value) => value as T,
  /** Filled once the file is read: how many lines it has (blank ones included). */
  tally: { lines: number } = { lines: 0 },
): AsyncGenerator<{ value: T; line: number }> {
  tally.lines = 0;
  const file = await openOwn(path, READ).catch(missingIsEmpty);
  if (!file) return;
  let line = 0;
  /** Bytes of the file up to and including the last newline seen. */
  let terminatedBytes = 0;
  let carry = Buffer.alloc(0);
  try {
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    for (;;) {
      const { bytesRead } = await file.read(chunk, 0, CHUNK_BYTES, null);
      if (bytesRead === 0) break;
      let bytes = chunk.subarray(0, bytesRead);
      if (carry.length > 0) bytes = Buffer.concat([carry, bytes]);
      let start = 0;
      for (let nl = bytes.indexOf(0x0a, start); nl !== -1; nl = bytes.indexOf(0x0a, start)) {
        line += 1;
        const text = bytes.toString('utf8', start, nl);
        start = nl + 1;
        if (text.trim() === '') continue;
        yield { value: decode(parseJsonLine(path, text, line), line), line };
      }
      terminatedBytes += start;
      carry = Buffer.from(bytes.subarray(start));
    }
  } finally {
    await file.close();
  }
  tally.lines = line;
  const last = await settleLastLine(path, carry, terminatedBytes);
  if (last === undefined) return;
  tally.lines = line + 1;
  yield { value: decode(JSON.parse(last), line + 1), line: line + 1 };
}

/** A line's JSON value, or a {@link CorruptLineError} naming the file and line. */
export function parseJsonLine(path: string, text: string, line: number): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CorruptLineError(path, line, (error as Error).message);
  }
}

/**
 * A JSON-lines file's bytes, read whole, every line ending in a newline: the last line
 * settled as {@link jsonLines} does (a torn one cut off the file, a whole one given its
 * newline). Lines are not parsed: for a reader that indexes lines and parses few of them.
 * A missing file is an empty one.
 */
export async function readJsonLinesBytes(path: string): Promise<Buffer> {
  const bytes = await readWhole(path);
  if (!bytes) return Buffer.alloc(0);
  const terminated = bytes.lastIndexOf(0x0a) + 1;
  const last = await settleLastLine(path, bytes.subarray(terminated), terminated);
  return last === undefined ? bytes.subarray(0, terminated) : Buffer.concat([bytes, Buffer.from('\n')]);
}

/**
 * The text after a file's last newline: blank → nothing; not JSON → the torn line of a killed
 * process, cut off the file; JSON → given its newline and returned.
 */
async function settleLastLine(
  path: string,
  rest: Buffer,
  terminatedBytes: number,
): Promise<string | undefined> {
  const text = rest.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    JSON.parse(text);
  } catch {
    await truncate(path, terminatedBytes);
    return undefined;
  }
  await appendFile(path, '\n');
  return text;
}

/**
 * A file's bytes in as few reads as the system allows (one, from the page cache), not in
 * `readFile`'s half-megabyte steps: each step is a trip through the thread pool, and on a busy
 * machine twenty of them held a run's first request for half a second. Undefined when missing.
 */
async function readWhole(path: string): Promise<Buffer | undefined> {
  const file = await openOwn(path, READ).catch(missingIsEmpty);
  if (!file) return undefined;
  try {
    // What is appended after this read began is not read: it was written after the snapshot.
    const bytes = Buffer.allocUnsafe((await file.stat()).size);
    let filled = 0;
    while (filled < bytes.length) {
      const { bytesRead } = await file.read(bytes, filled, bytes.length - filled, null);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return bytes.subarray(0, filled);
  } finally {
    await file.close();
  }
}

function missingIsEmpty(error: NodeJS.ErrnoException): undefined {
  if (error.code === 'ENOENT') return undefined;
  throw error;
}

/** Every value of a JSON-lines file (see {@link jsonLines}), for files small enough to hold. */
export async function readJsonLines<T>(
  path: string,
  decode: (value: unknown, line: number) => T = (value) => value as T,
): Promise<T[]> {
  const out: T[] = [];
  for await (const { value } of jsonLines(path, decode)) out.push(value);
  return out;
}

/** How long an idle writer keeps its file open before closing it. */
const IDLE_CLOSE_MS = 1_000;

/**
 * Appends one JSON line per call, in call order, never interleaved; each call resolves once
 * its own line is written (handed to the operating system: a killed process loses nothing that
 * was acknowledged). The lines appended in one turn of the event loop go out together, at the
 * end of that turn, in one synchronous append: a small append to the page cache takes
 * microseconds, where a write through the thread pool kept each caller (a worker slot, waiting
 * to take its next item) for milliseconds, and writing each line on its own cost a busy run
 * (hundreds of results a second) a system call per line. The file stays open while lines keep
 * coming and is closed after a second without lines.
 */
export class JsonLinesWriter {
  private tail: Promise<unknown> = Promise.resolve();
  private pending: string[] = [];
  private next?: Promise<void>;
  private file?: FileHandle;
  private idle?: NodeJS.Timeout;

  constructor(
    private readonly path: string,
    private readonly before?: () => Promise<unknown>,
  ) {}

  append(value: unknown): Promise<void> {
    this.pending.push(`${JSON.stringify(value)}\n`);
    if (!this.next) {
      const write = Promise.all([this.tail, endOfTurn()]).then(() => this.flush());
      this.next = write;
      this.tail = write.catch(() => undefined);
    }
    return this.next;
  }

  private async flush(): Promise<void> {
    this.next = undefined;
    const lines = this.pending;
    this.pending = [];
    if (!this.file) {
      await this.before?.();
      this.file = await openOwn(this.path, APPEND);
    }
    const file = this.file;
    const bytes = Buffer.from(lines.join(''));
    try {
      for (let at = 0; at < bytes.length; ) at += writeSync(file.fd, bytes, at, bytes.length - at);
    } catch (error) {
      this.close();
      throw error;
    }
    if (this.idle) this.idle.refresh();
    else this.idle = setTimeout(() => this.close(), IDLE_CLOSE_MS).unref();
  }

  private close(): void {
    const file = this.file;
    this.file = undefined;
    clearTimeout(this.idle);
    this.idle = undefined;
    file?.close().catch(() => undefined);
  }
}

/** Resolves once the current turn of the event loop has run its callbacks. */
function endOfTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
