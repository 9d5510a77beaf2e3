import { createHash } from 'node:crypto';
import type { PromptSnapshot } from '../core/model.js';
import type { BlobStore } from '../ports.js';

/**
 * Prompts are files, identified at run time by path + content hash. A BlobStore whose keys
 * are `prompts/<path>` serves them: the repo folder locally, the bucket on AWS.
 */

export const PROMPT_PREFIX = 'prompts/';

export class PromptError extends Error {
  override readonly name = 'PromptError';
}

export function contentHash(text: string): string {
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16)}`;
}

/** Loads the prompt files a run needs, once, into the run's snapshot. */
export async function snapshotPrompts(
  store: BlobStore,
  paths: Iterable<string>,
): Promise<Record<string, PromptSnapshot>> {
  const out: Record<string, PromptSnapshot> = {};
  for (const path of new Set(paths)) {
    const body = await store.get(PROMPT_PREFIX + path);
    if (!body) throw new PromptError(`prompt file not found: ${PROMPT_PREFIX}${path}`);
    const text = new TextDecoder().decode(body);
    out[path] = { hash: contentHash(text), text };
  }
  return out;
}

const PLACEHOLDER = /\{([a-z][a-z0-9_]*)\}/g;

/** Names of the `{placeholder}`s a prompt uses (JSON braces like `{"label": …}` are not placeholders). */
export function placeholders(template: string): Set<string> {
  return new Set(Array.from(template.matchAll(PLACEHOLDER), (m) => m[1]!));
}

/** Fills `{name}` placeholders; a placeholder with no value is an error, never left in the prompt. */
export function renderPrompt(template: string, vars: Record<string, string>, path = 'prompt'): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    const value = vars[name];
    if (value === undefined) throw new PromptError(`${path}: no value for placeholder ${whole}`);
    return value;
  });
}
