/**
 * OpenAI chat completions through the official SDK. Also serves every OpenAI-compatible endpoint
 * (the compatible rows of the vendor table, and any `openai-compatible:<service>/…`) by base URL. No OpenAI type leaves this file.
 */
import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type {
  CompletionCreateParamsNonStreaming,
  Completion as TextCompletion,
} from 'openai/resources/completions';
import type {
  BatchApi,
  BatchOutcome,
  Completion,
  CompletionRequest,
  FinishReason,
  LlmProvider,
} from '../../model/provider.js';
import { serviceOf, vendorSpec } from '../../model/vendors.js';
import { answeredOutcome } from './batch.js';
import {
  buildCompletion,
  DEFAULT_TIMEOUT_MS,
  malformedResponseError,
  stainlessProviderError,
  tokens,
  type VendorProviderOptions,
} from './normalise.js';
import { openAiLearnedLimits } from './rate-limit/learned-limits.js';
import { dropOptionalNulls, strictSchema } from './strict-schema.js';
import { withTagNonce } from './tag-nonce.js';

/**
 * How `request.jsonSchema` is sent: `json_schema` (strict native structured output, OpenAI and
 * recent vLLM/Ollama/OpenRouter), `json_object` (JSON mode, schema only in the prompt), or
 * `none` for endpoints that reject `response_format`.
 */
export type OpenAiStructuredMode = 'json_schema' | 'json_object' | 'none';

export interface OpenAiProviderOptions extends VendorProviderOptions {
  /** `vendor:model`; the vendor part may be a compatible preset (`vllm`, `ollama`, …). */
  id: string;
  apiKey: string;
  /** e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1`. */
  baseURL: string;
  structuredOutput?: OpenAiStructuredMode;
  /**
   * Which token-limit field to send: OpenAI wants `max_completion_tokens` (reasoning models
   * reject `max_tokens`); many compatible servers only know `max_tokens`.
   */
  maxTokensField?: 'max_completion_tokens' | 'max_tokens';
  fetch?: typeof fetch;
  headers?: Record<string, string>;
}

/**
 * OpenAI reasoning models (the o-series, gpt-5 but its `-chat` variants): they reject any
 * `temperature` but the default, and think before they answer, out of the same output budget.
 */
const REASONING_MODEL = /^(o\d|gpt-5(?!.*-chat))/;

/**
 * What a reasoning model may think, on top of the answer budget the suite asks for
 * (`maxTokens`): `max_completion_tokens` covers reasoning and answer alike, so a budget sized
 * for the answer alone would often be spent before the answer starts. It is a ceiling: only the
 * tokens used are billed.
 */
export const OPENAI_REASONING_HEADROOM = 4_096;

/** How hard a reasoning model thinks unless told otherwise: low keeps a judge's answer cheap and quick. */
export const OPENAI_REASONING_EFFORT = 'low';

/** Where OpenAI itself answers: a provider at this base URL keeps the cache keys it always had. */
export const OPENAI_DEFAULT_BASE_URL = vendorSpec('openai')!.defaultBaseUrl!;

/** A base URL compared as an address: no trailing slashes, scheme and host in lower case. */
export function endpointOf(baseURL: string): string {
  const trimmed = baseURL.trim().replace(/\/+$/, '');
  try {
    const url = new URL(trimmed);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}${url.search}`;
  } catch {
    return trimmed;
  }
}

export class OpenAiProvider implements LlmProvider {
  readonly id: string;
  readonly simulated = false;
  /** The base URL, unless it is the vendor's default (see `LlmProvider.endpoint`). */
  readonly endpoint?: string;
  private readonly vendor: string;
  private readonly model: string;
  private readonly client: OpenAI;
  private readonly structured: OpenAiStructuredMode;
  private readonly maxTokensField: 'max_completion_tokens' | 'max_tokens';
  /** The model name sent on the wire for the model part of an id. */
  private readonly wireModel: (model: string) => string;

  /**
   * OpenAI Batch (only `openai:` itself; compatible servers have no batch endpoint): a JSONL
   * file of chat-completion requests uploaded with `files.create`, `batches.create` over it,
   * `batches.retrieve` to poll, and the output and error files read with `files.content`.
   */
  readonly batch?: BatchApi;

  constructor(private readonly options: OpenAiProviderOptions) {
    this.id = options.id;
    this.vendor = options.id.slice(0, options.id.indexOf(':'));
    this.model = options.id.slice(options.id.indexOf(':') + 1);
    this.structured = options.structuredOutput ?? 'json_schema';
    this.maxTokensField =
      options.maxTokensField ?? (this.vendor === 'openai' ? 'max_completion_tokens' : 'max_tokens');
    this.client = openAiClient(options);
    // What the vendor table says of it: its default endpoint, its batch API, how the server
    // names the model (an `openai-compatible:` model without its service).
    const spec = vendorSpec(this.vendor);
    this.wireModel = spec?.perService ? (model) => serviceOf(model)?.model ?? model : (model) => model;
    const endpoint = endpointOf(options.baseURL);
    const standard = spec?.defaultBaseUrl;
    if (standard === undefined || endpoint !== endpointOf(standard)) this.endpoint = endpoint;
    if (spec?.batch) this.batch = this.batchApi();
  }

  private batchApi(): BatchApi {
    const client = this.client;
    const vendorError = (error: unknown) => stainlessProviderError(OpenAI, this.id, error, undefined);
    return {
      maxRequests: 50_000,
      // One endpoint per batch: chat completions; raw text completions stay synchronous.
      accepts: (request) => !request.rawCompletion,
      submit: async (entries, label) => {
        const lines = entries.map((entry) =>
          JSON.stringify({
            custom_id: entry.customId,
            method: 'POST',
            url: '/v1/chat/completions',
            body: this.params({ ...entry.request, model: entry.request.model || this.model }),
          }),
        );
        try {
          const file = await client.files.create({
            file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'assay-batch.jsonl'),
            purpose: 'batch',
          });
          const batch = await client.batches.create({
            input_file_id: file.id,
            endpoint: '/v1/chat/completions',
            completion_window: '24h',
            metadata: { assay: label.slice(0, 512) },
          });
          return batch.id;
        } catch (error) {
          throw vendorError(error);
        }
      },
      status: async (batchId) => {
        let batch: Batch;
        try {
          batch = await client.batches.retrieve(batchId);
        } catch (error) {
          throw vendorError(error);
        }
        const counts = batch.request_counts;
        return {
          status: batch.status,
          done: ['completed', 'failed', 'expired', 'cancelled'].includes(batch.status),
          ...(counts ? { finished: counts.completed + counts.failed, total: counts.total } : {}),
        };
      },
      results: async (batchId, entries) => {
        const byId = new Map(entries.map((entry) => [entry.customId, entry.request]));
        const outcomes: BatchOutcome[] = [];
        try {
          const batch = await client.batches.retrieve(batchId);
          for (const fileId of [batch.output_file_id, batch.error_file_id]) {
            if (!fileId) continue;
            const text = await (await client.files.content(fileId)).text();
            for (const line of text.split('\n')) {
              if (line.trim()) outcomes.push(this.batchLineOutcome(JSON.parse(line), byId));
            }
          }
        } catch (error) {
          throw vendorError(error);
        }
        return outcomes;
      },
    };
  }

  /** One line of a batch output or error file: `{custom_id, response: {status_code, body}, error}`. */
  private batchLineOutcome(line: BatchLine, requests: Map<string, CompletionRequest>): BatchOutcome {
    const customId = String(line.custom_id);
    const request = requests.get(customId);
    const status = line.response?.status_code;
    if (!request) return { customId, ok: false, error: 'an answer to a request this batch did not hold' };
    if (status !== 200 || !line.response?.body) {
      const message = line.error?.message ?? line.response?.body?.error?.message ?? 'no answer';
      return { customId, ok: false, error: `HTTP ${status ?? '(none)'}: ${message}` };
    }
    const providerId = `${this.vendor}:${request.model || this.model}`;
    const body = line.response.body as unknown as ChatCompletion;
    return answeredOutcome(customId, () => this.chatCompletionOf(body, request, providerId, 0));
  }

  async complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const model = request.model || this.model;
    const providerId = `${this.vendor}:${model}`;
    if (request.rawCompletion) return this.textCompletion({ ...request, model }, providerId, signal);
    const params = this.params({ ...request, model });
    const started = performance.now();
    let response: ChatCompletion;
    let headers: Headers;
    try {
      // The raw response comes with the parsed body (no second request): its rate-limit headers.
      ({
        data: response,
        response: { headers },
      } = await this.client.chat.completions.create(params, { signal }).withResponse());
    } catch (error) {
      throw stainlessProviderError(OpenAI, providerId, error, signal);
    }
    return withLearned(
      this.chatCompletionOf(response, request, providerId, performance.now() - started),
      headers,
    );
  }

  /** The normalised completion of a chat.completion body (a synchronous answer or a batch line's). */
  private chatCompletionOf(
    response: ChatCompletion,
    request: CompletionRequest,
    providerId: string,
    latencyMs: number,
  ): Completion {
    const choice = isChatCompletion(response) ? response.choices[0] : undefined;
    if (!choice) {
      throw malformedResponseError(
        providerId,
        `expected a chat.completion with choices, got ${preview(response)}`,
      );
    }
    const message = choice.message;
    const refusal = message?.refusal ?? undefined;
    const finishReason: FinishReason = refusal ? 'refusal' : mapFinishReason(choice.finish_reason);
    const usage = response.usage;
    const reasoning = tokens(usage?.completion_tokens_details?.reasoning_tokens);
    const content = message?.content ?? '';
    const completion = buildCompletion({
      providerId,
      text: refusal ?? this.answerText(content, request),
      finishReason,
      usage: {
        input: tokens(usage?.prompt_tokens),
        output: tokens(usage?.completion_tokens),
        cached: tokens(usage?.prompt_tokens_details?.cached_tokens),
        ...(reasoning > 0 ? { reasoning } : {}),
      },
      latencyMs,
      prices: this.options.prices,
    });
    // Cut off while still reasoning: the budget went to thoughts, no answer was started.
    if (finishReason === 'length' && content.trim() === '' && reasoning > 0)
      completion.thinkingExhausted = true;
    return completion;
  }

  /**
   * The answer as the caller's schema declares it: under strict structured output a property the
   * schema made optional was sent as required-but-nullable, so its `null` means "absent".
   */
  private answerText(content: string, request: CompletionRequest): string {
    if (!request.jsonSchema || this.structured !== 'json_schema') return content;
    // An answer without a `null` anywhere has none to drop: it reads back as it is.
    if (!content.includes('null')) return content;
    let parsed: unknown;
    try {
      parsed = JSON.parse(content);
    } catch {
      // Not JSON (truncated, or a server that ignored the schema): the caller's parser says so.
      return content;
    }
    const declared = JSON.stringify(dropOptionalNulls(parsed, request.jsonSchema.schema));
    // Unchanged answers keep the model's own text.
    return declared === JSON.stringify(parsed) ? content : declared;
  }

  /** The prompt as is, on the text-completion endpoint (an instruction-formatted prompt for vLLM). */
  private async textCompletion(
    request: CompletionRequest,
    providerId: string,
    signal?: AbortSignal,
  ): Promise<Completion> {
    const params: CompletionCreateParamsNonStreaming = {
      model: this.wireModel(request.model),
      prompt: withTagNonce(request).prompt,
    };
    if (request.temperature !== undefined) params.temperature = request.temperature;
    if (request.maxTokens !== undefined) params.max_tokens = request.maxTokens;
    const started = performance.now();
    let response: TextCompletion;
    let headers: Headers;
    try {
      ({
        data: response,
        response: { headers },
      } = await this.client.completions.create(params, { signal }).withResponse());
    } catch (error) {
      throw stainlessProviderError(OpenAI, providerId, error, signal);
    }
    const latencyMs = performance.now() - started;
    const choice = Array.isArray(response?.choices) ? response.choices[0] : undefined;
    if (!choice || typeof choice.text !== 'string') {
      throw malformedResponseError(
        providerId,
        `expected a text_completion with choices, got ${preview(response)}`,
      );
    }
    return withLearned(
      buildCompletion({
        providerId,
        text: choice.text,
        finishReason: mapFinishReason(choice.finish_reason),
        usage: {
          input: tokens(response.usage?.prompt_tokens),
          output: tokens(response.usage?.completion_tokens),
          cached: 0,
        },
        latencyMs,
        prices: this.options.prices,
      }),
      headers,
    );
  }

  /** The chat request as sent: instructions as the system message, data sections tagged with this call's nonce. */
  private params(canonical: CompletionRequest): ChatCompletionCreateParamsNonStreaming {
    const request = withTagNonce(canonical);
    const messages: ChatCompletionMessageParam[] = [];
    if (request.system) messages.push({ role: 'system', content: request.system });
    for (const turn of request.history ?? []) messages.push({ role: turn.role, content: turn.content });
    messages.push({ role: 'user', content: request.prompt });

    const params: ChatCompletionCreateParamsNonStreaming = { model: this.wireModel(request.model), messages };
    const reasoning = this.vendor === 'openai' && REASONING_MODEL.test(request.model);
    if (request.temperature !== undefined && !reasoning) params.temperature = request.temperature;
    if (reasoning) {
      params.reasoning_effort = OPENAI_REASONING_EFFORT;
      // The budget covers the thinking and the answer: the answer's share stays what was asked.
      if (request.maxTokens !== undefined) {
        params.max_completion_tokens = request.maxTokens + OPENAI_REASONING_HEADROOM;
      }
    } else if (request.maxTokens !== undefined) {
      params[this.maxTokensField] = request.maxTokens;
    }
    if (request.jsonSchema && this.structured === 'json_schema') {
      params.response_format = {
        type: 'json_schema',
        json_schema: {
          name: request.jsonSchema.name,
          schema: strictSchema(request.jsonSchema.schema),
          strict: true,
        },
      };
    } else if (request.jsonSchema && this.structured === 'json_object') {
      params.response_format = { type: 'json_object' };
    }
    return params;
  }
}

/** A line of an OpenAI batch output or error file (the fields read here). */
interface BatchLine {
  custom_id?: unknown;
  response?: {
    status_code?: number;
    body?: { error?: { message?: string } } & Record<string, unknown>;
  } | null;
  error?: { code?: string; message?: string } | null;
}

/** The OpenAI SDK client every OpenAI-compatible call (and embedding) goes through. */
export function openAiClient(options: {
  apiKey: string;
  baseURL?: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
  headers?: Record<string, string>;
}): OpenAI {
  return new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    // Retries happen in one place: retry.ts.
    maxRetries: 0,
    timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    fetch: options.fetch,
    defaultHeaders: options.headers,
    // Keep the SDK from picking up OPENAI_ORG_ID / OPENAI_PROJECT_ID for compatible endpoints.
    organization: null,
    project: null,
  });
}

/** The completion with the rate limits its response's headers reported, when they reported any. */
function withLearned(completion: Completion, headers: Headers): Completion {
  const learned = openAiLearnedLimits((name) => headers.get(name));
  if (learned) completion.learnedLimits = learned;
  return completion;
}

function isChatCompletion(value: unknown): value is ChatCompletion {
  return typeof value === 'object' && value !== null && Array.isArray((value as ChatCompletion).choices);
}

function mapFinishReason(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case 'stop':
      return 'stop';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content_filter';
    default:
      return 'other';
  }
}

function preview(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return (text ?? String(value)).slice(0, 200);
}
