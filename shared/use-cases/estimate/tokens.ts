/**
 * Input tokens of a request, counted locally with js-tiktoken before anything is sent. OpenAI
 * models are counted with their own encoding (o200k_base: gpt-4o, gpt-4.1, gpt-5, o-series) and
 * chat framing; every other vendor's tokenizer is not available offline, so the same count
 * stands in for it as an approximation, and the estimate says so.
 */
import type { Tiktoken } from 'js-tiktoken/lite';
import { withTagNonce } from '../../lib/providers/tag-nonce.js';
import type { CompletionRequest } from '../../model/provider.js';
import { resolveProviderId } from '../../model/provider-ids.js';

/** Tokens OpenAI's chat format adds per message, and once to prime the reply. */
export const CHAT_TOKENS_PER_MESSAGE = 3;
export const CHAT_REPLY_PRIMING = 3;

export interface TokenCounter {
  /** Tokens of a text. */
  count(text: string): number;
  /** Input tokens of a request as the chat (or text-completion) endpoint sees it. */
  request(request: CompletionRequest): number;
}

/**
 * A request's input as Assay's own rough count sees it: a token per four characters of the
 * messages as sent (each data section's tag with its 8-character word), the count a simulated
 * run books and the budget reserves by. Other vendors' tokenizers differ from o200k_base, so the
 * estimate's cost range spans both counts.
 */
export function roughRequestTokens(request: CompletionRequest): number {
  const sent = withTagNonce(request, '00000000');
  const length =
    (sent.system ?? '').length +
    (sent.history ?? []).reduce((n, turn) => n + turn.content.length, 0) +
    sent.prompt.length;
  return Math.ceil(length / 4);
}

/** A text's tokens by the same rough count: a token per four characters. */
export const roughTokens = (text: string): number => Math.ceil(text.length / 4);

/**
 * Loads o200k_base (about a second: the ranks are large, so only `assay estimate` loads them).
 * Texts seen again (a system prompt, an agent's history) are counted once.
 */
export async function loadTokenCounter(): Promise<TokenCounter> {
  const [{ Tiktoken: Encoder }, { default: o200k }] = await Promise.all([
    import('js-tiktoken/lite'),
    import('js-tiktoken/ranks/o200k_base'),
  ]);
  const encoder: Tiktoken = new Encoder(o200k);
  const seen = new Map<string, number>();
  const count = (text: string): number => {
    if (text.length === 0) return 0;
    let n = seen.get(text);
    if (n === undefined) {
      n = encoder.encode(text).length;
      if (seen.size < 10_000) seen.set(text, n);
    }
    return n;
  };
  return {
    count,
    request(request) {
      if (request.rawCompletion) return count(request.prompt);
      const messages = [
        ...(request.system ? [request.system] : []),
        ...(request.history ?? []).map((turn) => turn.content),
        request.prompt,
      ];
      let total = CHAT_REPLY_PRIMING;
      for (const text of messages) total += count(text) + CHAT_TOKENS_PER_MESSAGE;
      return total;
    },
  };
}

/**
 * Whether o200k_base is the backend's own tokenizer: OpenAI's models (and a simulator named
 * after one). Everything else is counted with it as an approximation.
 */
export function exactTokenizer(backend: string): boolean {
  const { vendor, model } = resolveProviderId(backend);
  if (vendor === 'openai') return true;
  if (vendor !== 'sim') return false;
  try {
    return resolveProviderId(model).vendor === 'openai';
  } catch {
    return false;
  }
}
