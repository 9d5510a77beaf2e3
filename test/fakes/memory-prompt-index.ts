import type { PromptIndex } from '../../shared/ports/ports.js';

/** An in-memory prompt index for unit tests (the AWS shell's is DynamoPromptIndex). */
export class MemoryPromptIndex implements PromptIndex {
  readonly bySuite = new Map<string, string[]>();

  async setSuitePrompts(suiteName: string, paths: readonly string[]): Promise<void> {
    this.bySuite.set(suiteName, [...paths].sort());
  }

  async suitesUsing(path: string): Promise<string[]> {
    return [...this.bySuite]
      .filter(([, paths]) => paths.includes(path))
      .map(([name]) => name)
      .sort();
  }
}
