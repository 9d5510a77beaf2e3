import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Completion } from '../../model/provider.js';
import type { LlmCache } from '../../ports/ports.js';
import { CorruptLineError, JsonLinesWriter, parseJsonLine, readJsonLinesBytes } from './jsonl.js';

/** The cache file's bytes, and where the line of each key not yet asked for starts in them. */
interface Indexed {
  bytes: Buffer;
  lines: Map<string, number>;
}

/** How the cache writes a line: `{"key":"<key>","completion":{…}}`, the key first. */
const LINE_START = Buffer.from('{"key":"');
const KEY_END = Buffer.from('","completion":');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;

/**
 * The LLM cache shared by all local runs: an append-only JSONL file of key → completion,
 * indexed once. A completion is written here before its item's result, so a run killed in
 * between pays nothing for that call when it resumes.
 *
 * The file grows with every run, and every call waits for the index: so the file is read whole
 * as bytes, the index holds where each key's line starts (lines are written key first, so the
 * key is read without parsing), and an answer is parsed when its key is asked for. A line in
 * another shape is parsed whole.
 */
export class FileLlmCache implements LlmCache {
  /** The file, indexed once: every call made while it is being read waits for that read. */
  private indexed?: Promise<Indexed>;
  /** Answers parsed (asked for, or written by this process): they take precedence over the file's. */
  private readonly parsed = new Map<string, Completion>();
  private readonly writer: JsonLinesWriter;

  constructor(readonly path: string) {
    this.writer = new JsonLinesWriter(path, () => mkdir(dirname(path), { recursive: true }));
  }

  private load(): Promise<Indexed> {
    this.indexed ??= this.index();
    // A failed read is not kept: the next call reads again.
    this.indexed.catch(() => {
      this.indexed = undefined;
    });
    return this.indexed;
  }

  private async index(): Promise<Indexed> {
    const bytes = await readJsonLinesBytes(this.path);
    const lines = new Map<string, number>();
    for (let start = 0, line = 1; start < bytes.length; line += 1) {
      const end = bytes.indexOf(NEWLINE, start);
      const key = keyOf(bytes, start, end);
      if (key !== undefined) lines.set(key, start);
      else if (bytes.subarray(start, end).toString('latin1').trim() !== '') {
        // A line in another shape (written by hand?) is parsed whole, here.
        const entry = parseJsonLine(this.path, bytes.toString('utf8', start, end), line) as {
          key: string;
          completion: Completion;
        };
        lines.delete(entry.key);
        this.parsed.set(entry.key, entry.completion);
      }
      start = end + 1;
    }
    return { bytes, lines };
  }

  async get(key: string): Promise<Completion | undefined> {
    const { bytes, lines } = await this.load();
    const known = this.parsed.get(key);
    if (known) return known;
    const start = lines.get(key);
    if (start === undefined) return undefined;
    const end = bytes.indexOf(NEWLINE, start);
    let completion: Completion;
    try {
      ({ completion } = JSON.parse(bytes.toString('utf8', start, end)) as { completion: Completion });
    } catch (error) {
      // The line's number is counted only for the error: a hit must not scan the file.
      throw new CorruptLineError(this.path, countLines(bytes, start) + 1, (error as Error).message);
    }
    lines.delete(key);
    this.parsed.set(key, completion);
    return completion;
  }

  async put(key: string, completion: Completion): Promise<void> {
    const { lines } = await this.load();
    lines.delete(key);
    this.parsed.set(key, completion);
    await this.writer.append({ key, completion });
  }
}

/** The key of a line written the cache's way, read without parsing the line; else undefined. */
function keyOf(bytes: Buffer, start: number, end: number): string | undefined {
  // Byte by byte: the key is short, and each Buffer method call costs more than the scan.
  if (!startsWith(bytes, start, end, LINE_START)) return undefined;
  const keyStart = start + LINE_START.length;
  let keyEnd = keyStart;
  for (; keyEnd < end && bytes[keyEnd] !== QUOTE; keyEnd += 1) {
    // An escaped character: the key is not the bytes as they stand.
    if (bytes[keyEnd] === BACKSLASH) return undefined;
  }
  if (!startsWith(bytes, keyEnd, end, KEY_END)) return undefined;
  return bytes.toString('utf8', keyStart, keyEnd);
}

function startsWith(bytes: Buffer, at: number, end: number, prefix: Buffer): boolean {
  if (at + prefix.length > end) return false;
  for (let i = 0; i < prefix.length; i += 1) if (bytes[at + i] !== prefix[i]) return false;
  return true;
}

/** Newlines before `offset` (a corrupt line is reported by its number, counted only then). */
function countLines(bytes: Buffer, offset: number): number {
  let count = 0;
  for (let at = bytes.indexOf(NEWLINE); at !== -1 && at < offset; at = bytes.indexOf(NEWLINE, at + 1))
    count += 1;
  return count;
}
