import { appendFile, readFile, truncate } from 'node:fs/promises';

/** A line of a JSON-lines file that is not JSON, and is not the torn last line of a killed write. */
export class CorruptLineError extends Error {
  override readonly name = 'CorruptLineError';

  constructor(
    readonly path: string,
    readonly line: number,
    detail: string,
  ) {
    super(`${path} line ${line}: not a JSON line (${detail}); the file is corrupt there`);
  }
}

/**
 * Reads an append-only JSON-lines file; `decode` checks each value (with its line number).
 * A process killed mid-write leaves a torn last line (no newline after it): it is cut off the
 * file, so the next append starts a line of its own, and the item it held simply runs again.
 * A last line that is whole JSON but lacks its newline gets the newline. Any other line that
 * is not JSON is corruption: a {@link CorruptLineError} with its line number, never skipped.
 */
export async function readJsonLines<T>(
  path: string,
  decode: (value: unknown, line: number) => T = (value) => value as T,
): Promise<T[]> {
  const bytes = await readFile(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return Buffer.alloc(0);
    throw error;
  });
  const text = bytes.toString('utf8');
  const lines = text.split('\n');
  const unterminated = lines.pop() ?? '';
  const out: T[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new CorruptLineError(path, i + 1, (error as Error).message);
    }
    out.push(decode(value, i + 1));
  });
  if (unterminated.trim() !== '') {
    let value: unknown;
    try {
      value = JSON.parse(unterminated);
    } catch {
      // The torn line of a killed process: cut it off.
      await truncate(path, bytes.lastIndexOf(0x0a) + 1);
      return out;
    }
    await appendFile(path, '\n');
    out.push(decode(value, lines.length + 1));
  }
  return out;
}

/** Appends one JSON line per call, in call order, never interleaved. */
export class JsonLinesWriter {
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly path: string,
    private readonly before?: () => Promise<unknown>,
  ) {}

  append(value: unknown): Promise<void> {
    const write = this.tail.then(async () => {
      await this.before?.();
      await appendFile(this.path, `${JSON.stringify(value)}\n`);
    });
    this.tail = write.catch(() => undefined);
    return write;
  }
}
