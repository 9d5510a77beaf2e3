import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { LlmCache } from '../../ports.js';
import type { Completion } from '../../providers/types.js';

/**
 * The LLM cache shared by all local runs: an append-only JSONL file of key → completion,
 * loaded once. A completion is written here before its item's result, so a run killed in
 * between pays nothing for that call when it resumes.
 */
export class FileLlmCache implements LlmCache {
  private entries?: Map<string, Completion>;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(readonly path: string) {}

  private async load(): Promise<Map<string, Completion>> {
    if (this.entries) return this.entries;
    const entries = new Map<string, Completion>();
    const text = await readFile(this.path, 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      try {
        const { key, completion } = JSON.parse(line) as { key: string; completion: Completion };
        entries.set(key, completion);
      } catch {
        // torn last line of a killed process
      }
    }
    this.entries = entries;
    return entries;
  }

  async get(key: string): Promise<Completion | undefined> {
    return (await this.load()).get(key);
  }

  async put(key: string, completion: Completion): Promise<void> {
    const entries = await this.load();
    entries.set(key, completion);
    const write = this.tail.then(async () => {
      await mkdir(dirname(this.path), { recursive: true });
      await appendFile(this.path, `${JSON.stringify({ key, completion })}\n`);
    });
    this.tail = write.catch(() => undefined);
    await write;
  }
}
