import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Completion } from '../../model/provider.js';
import type { LlmCache } from '../../ports/ports.js';
import { JsonLinesWriter, readJsonLines } from './jsonl.js';

/**
 * The LLM cache shared by all local runs: an append-only JSONL file of key → completion,
 * loaded once. A completion is written here before its item's result, so a run killed in
 * between pays nothing for that call when it resumes.
 */
export class FileLlmCache implements LlmCache {
  /** The file's entries, read once: every call made while it is being read waits for that read. */
  private entries?: Promise<Map<string, Completion>>;
  private readonly writer: JsonLinesWriter;

  constructor(readonly path: string) {
    this.writer = new JsonLinesWriter(path, () => mkdir(dirname(path), { recursive: true }));
  }

  private load(): Promise<Map<string, Completion>> {
    this.entries ??= readJsonLines<{ key: string; completion: Completion }>(this.path).then(
      (lines) => new Map(lines.map(({ key, completion }) => [key, completion])),
    );
    // A failed read is not kept: the next call reads again.
    this.entries.catch(() => {
      this.entries = undefined;
    });
    return this.entries;
  }

  async get(key: string): Promise<Completion | undefined> {
    return (await this.load()).get(key);
  }

  async put(key: string, completion: Completion): Promise<void> {
    const entries = await this.load();
    entries.set(key, completion);
    await this.writer.append({ key, completion });
  }
}
