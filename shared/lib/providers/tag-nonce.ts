/**
 * Per-call tag names for data sections. A rendered prompt marks each data section's tag
 * (`<answer_nonce>`, see `renderPrompt` in lib/prompts); as a request is turned into a vendor's
 * message, the mark becomes a random word drawn for that call (`<answer_3f9a0c1b>`), the same
 * word in the system message, the earlier turns and the user message. A row's text cannot
 * close its section with a tag it cannot know (and its `<` is escaped anyway).
 *
 * Only the wire carries the word: the request a family builds, the LLM cache key
 * (`cacheKey` in call.ts), the batch lane's keys and the simulator's seed all see the marked,
 * canonical text, so the same item makes the same request on every call and keeps hitting
 * the cache, while no two calls send the same tags.
 */
import { randomBytes } from 'node:crypto';
import type { CompletionRequest } from '../../model/provider.js';

/** The mark `renderPrompt` gives a data section's tag (lib/prompts `TAG_NONCE_MARK`). */
const MARKED_TAG = /<(\/?[a-z][a-z0-9_-]*)_nonce>/g;

/**
 * Random bytes drawn ahead, a block at a time: one call to the system's generator serves many
 * calls' words, where drawing 4 bytes each time costs a buffer and a trip to it per call.
 */
const RANDOM_BLOCK_BYTES = 4096;
let randomBlock = Buffer.alloc(0);
let randomAt = 0;

/** A fresh word for one call's tags: 8 hex digits. */
export function tagNonce(): string {
  if (randomAt + 4 > randomBlock.length) {
    randomBlock = randomBytes(RANDOM_BLOCK_BYTES);
    randomAt = 0;
  }
  randomAt += 4;
  return randomBlock.toString('hex', randomAt - 4, randomAt);
}

/** The text with each marked tag's mark replaced by `nonce`. */
export function applyTagNonce(text: string, nonce: string): string {
  if (!text.includes('_nonce>')) return text;
  // A replacement string, not a function per match; a `$` in the word stays a `$`.
  return text.replace(MARKED_TAG, `<$1_${nonce.replaceAll('$', '$$$$')}>`);
}

/**
 * The request as one call sends it: every marked tag in its system message, earlier turns and
 * user message named with one fresh nonce. A request without marked tags comes back as it is.
 */
export function withTagNonce(request: CompletionRequest, nonce: string = tagNonce()): CompletionRequest {
  const texts = [request.system ?? '', request.prompt, ...(request.history ?? []).map((t) => t.content)];
  if (!texts.some((text) => text.includes('_nonce>'))) return request;
  return {
    ...request,
    ...(request.system !== undefined ? { system: applyTagNonce(request.system, nonce) } : {}),
    prompt: applyTagNonce(request.prompt, nonce),
    ...(request.history
      ? { history: request.history.map((turn) => ({ ...turn, content: applyTagNonce(turn.content, nonce) })) }
      : {}),
  };
}
