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

/**
 * Escapes text for a tag section, as XML escapes character data: `&` and `<`, so no text can
 * open or close a tag. `>` alone opens nothing, so it stays (edit spans read `{old=>new}`).
 */
export function escapeData(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;');
}

/**
 * Fills `{name}` placeholders; a placeholder with no value is an error, never left in the
 * prompt. Values of data placeholders (`isData`: dataset text, model answers) are escaped with
 * {@link escapeData}: inside their tag section they stay data, whatever they say.
 */
export function renderPrompt(
  template: string,
  vars: Record<string, string>,
  path = 'prompt',
  isData: (name: string) => boolean = () => false,
): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    const value = vars[name];
    if (value === undefined) throw new PromptError(`${path}: no value for placeholder ${whole}`);
    return isData(name) ? escapeData(value) : value;
  });
}

/**
 * Checks that every data placeholder of a template sits alone in a tag section
 * (`<original>\n{src}\n</original>`), so the prompt can tell the model that whatever is inside
 * a section is data. Returns the section tag of each data placeholder occurrence.
 */
export function dataSections(template: string, isData: (name: string) => boolean, path = 'prompt'): string[] {
  const tags: string[] = [];
  for (const match of template.matchAll(PLACEHOLDER)) {
    const name = match[1]!;
    if (!isData(name)) continue;
    const before = /<([a-z][a-z0-9_-]*)>\s*$/.exec(template.slice(0, match.index));
    const tag = before?.[1];
    const after = template.slice(match.index + match[0].length);
    if (!tag || !new RegExp(`^\\s*</${tag}>`).test(after)) {
      throw new PromptError(
        `${path}: {${name}} carries dataset text and must sit alone in a tag section, e.g. <${name}>\n{${name}}\n</${name}>, so that text in the data cannot pass for instructions`,
      );
    }
    tags.push(tag);
  }
  return tags;
}
