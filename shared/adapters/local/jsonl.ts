import { appendFile, readFile } from 'node:fs/promises';

/**
 * Reads an append-only JSON-lines file. A process killed mid-write leaves a torn last line:
 * it is skipped, and the file is given its missing newline so the next append starts a line
 * of its own instead of gluing itself to the torn one (and being lost at the next read).
 */
export async function readJsonLines<T>(path: string): Promise<T[]> {
  const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  if (text !== '' && !text.endsWith('\n')) await appendFile(path, '\n');
  const out: T[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      // the torn line of a killed process
    }
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
