/**
 * Provider embedding APIs through the official SDKs: OpenAI (`embeddings.create`) and Gemini
 * (`models.embedContent`). Priced from the price table by input tokens; failures become
 * `ProviderError`s like LLM calls, so the same retries apply.
 */
import type { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { geminiClient, toError as geminiError } from '../providers/gemini.js';
import { malformedResponseError, stainlessProviderError } from '../providers/normalise.js';
import { openAiClient } from '../providers/openai.js';
import { costOf, type PriceTable } from '../providers/pricing.js';
import { withRetry } from '../providers/retry.js';
import type { Embedder, EncoderSpend } from './types.js';

/** Texts per request: both APIs take lists (OpenAI up to 2,048, Gemini up to 100). */
const OPENAI_BATCH = 512;
const GEMINI_BATCH = 100;

export interface ApiEmbedderOptions {
  id: string;
  apiKey: string;
  baseURL?: string;
  prices: PriceTable;
  timeoutMs?: number;
  fetch?: typeof fetch;
  maxAttempts?: number;
}

const modelOf = (id: string) => id.slice(id.indexOf(':') + 1);

/** Texts embedded `size` at a time, each request retried like a model call, priced by input tokens. */
async function inBatches(
  options: ApiEmbedderOptions,
  texts: readonly string[],
  size: number,
  request: (batch: string[]) => Promise<{ vectors: number[][]; tokens: number }>,
): Promise<{ vectors: number[][]; spend: EncoderSpend }> {
  const started = performance.now();
  const vectors: number[][] = [];
  let tokens = 0;
  for (let i = 0; i < texts.length; i += size) {
    const batch = texts.slice(i, i + size);
    const out = await withRetry(() => request(batch), { maxAttempts: options.maxAttempts ?? 5 });
    vectors.push(...out.vectors);
    tokens += out.tokens;
  }
  const cost = costOf(options.prices, options.id, { input: tokens, output: 0, cached: 0 });
  return {
    vectors,
    spend: {
      tokens,
      costUsd: cost.usd,
      ...(cost.priced ? {} : { priced: false as const }),
      latencyMs: performance.now() - started,
    },
  };
}

export class OpenAiEmbedder implements Embedder {
  readonly simulated = false;
  readonly id: string;
  private readonly client: OpenAI;

  constructor(private readonly options: ApiEmbedderOptions) {
    this.id = options.id;
    this.client = openAiClient(options);
  }

  embed(texts: readonly string[]) {
    return inBatches(this.options, texts, OPENAI_BATCH, async (input) => {
      let response: OpenAI.CreateEmbeddingResponse;
      try {
        response = await this.client.embeddings.create({
          model: modelOf(this.id),
          input,
          encoding_format: 'float',
        });
      } catch (error) {
        throw stainlessProviderError(OpenAI, this.id, error, undefined);
      }
      const data = [...(response?.data ?? [])].sort((a, b) => a.index - b.index);
      if (data.length !== input.length)
        throw malformedResponseError(this.id, `${data.length} embeddings for ${input.length} inputs`);
      return { vectors: data.map((d) => d.embedding), tokens: response.usage?.prompt_tokens ?? 0 };
    });
  }
}

export class GeminiEmbedder implements Embedder {
  readonly simulated = false;
  readonly id: string;
  private client?: Promise<GoogleGenAI>;

  constructor(private readonly options: ApiEmbedderOptions) {
    this.id = options.id;
  }

  /** The SDK client, built on first use (the SDK is loaded only when Gemini is called). */
  private sdk(): Promise<GoogleGenAI> {
    this.client ??= geminiClient({
      apiKey: this.options.apiKey,
      ...(this.options.baseURL ? { baseUrl: this.options.baseURL } : {}),
      ...(this.options.timeoutMs !== undefined ? { timeoutMs: this.options.timeoutMs } : {}),
    });
    return this.client;
  }

  embed(texts: readonly string[]) {
    const fetchFn = this.options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    return inBatches(this.options, texts, GEMINI_BATCH, async (contents) => {
      // The SDK's ApiError carries no headers: keep the response's, for retry-after.
      let headers: Headers | undefined;
      const capturing: typeof fetch = async (input, init) => {
        const response = await fetchFn(input, init);
        headers = response.headers;
        return response;
      };
      let response: Awaited<ReturnType<GoogleGenAI['models']['embedContent']>>;
      try {
        response = await (await this.sdk()).models.embedContent({
          model: modelOf(this.id),
          contents,
          config: { httpOptions: { fetch: capturing } },
        });
      } catch (error) {
        throw geminiError(this.id, error, undefined, headers);
      }
      const vectors = (response?.embeddings ?? []).map((e) => e.values ?? []);
      if (vectors.length !== contents.length || vectors.some((v) => v.length === 0))
        throw malformedResponseError(this.id, `${vectors.length} embeddings for ${contents.length} inputs`);
      // The embedding API reports no token count: about four characters a token, as Google documents.
      const tokens = contents.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0);
      return { vectors, tokens };
    });
  }
}
