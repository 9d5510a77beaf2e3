import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Suite, suiteSchema } from '../shared/core/suite.js';

export const REPO = resolve(import.meta.dirname, '..');
/** The external data shipped beside the repository (../shared/data/external). */
export const EXTERNAL = resolve(REPO, '..', 'shared', 'data', 'external');
export const AQUA_FILES = {
  'gold_tp_fp3_fp2_fp1_en.csv': 256,
  'gold_en.csv': 220,
  'gold_de.csv': 240,
  'gold_ua.csv': 252,
} as const;

export function tempDir(prefix = 'assay-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function* chunksOf(text: string, size = 7): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.slice(i, i + size);
}

export function suite(overrides: Record<string, unknown> = {}): Suite {
  return suiteSchema.parse({
    version: 1,
    name: 'test-suite',
    dataset: { path: 'data.csv' },
    task: 'gec',
    judge: 'feedback',
    method: 'baseline',
    backends: ['sim:gold'],
    ...overrides,
  });
}
