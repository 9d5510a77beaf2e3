import type { PromptIndex } from '../../ports/ports.js';

/**
 * The prompt index in memory. The local shell keeps none: `assay run --changed` compares each
 * suite's prompt files with the snapshot its latest run folder holds. This one serves the
 * ingest use-case where no table is at hand (its unit tests), under the same contract as the
 * DynamoDB index.
 */
export class MemoryPromptIndex implements PromptIndex {
  /** Each suite's prompt paths, sorted, each once. */
  readonly bySuite = new Map<string, readonly string[]>();

  async setSuitePrompts(suiteName: string, paths: readonly string[]): Promise<void> {
    if (paths.length === 0) this.bySuite.delete(suiteName);
    else this.bySuite.set(suiteName, [...new Set(paths)].sort());
  }

  async suitesUsing(path: string): Promise<string[]> {
    return [...this.bySuite]
      .filter(([, paths]) => paths.includes(path))
      .map(([name]) => name)
      .sort();
  }
}
