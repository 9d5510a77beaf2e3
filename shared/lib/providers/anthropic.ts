/**
 * Anthropic Messages API through the official SDK. Structured output is one forced tool whose
 * input schema is the requested JSON Schema; the tool input comes back as JSON text.
 * No Anthropic type leaves this file.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { MessageBatch } from '@anthropic-ai/sdk/resources/messages/batches';
import type {
  Message,
  MessageCreateParamsNonStreaming,
  MessageParam,
} from '@anthropic-ai/sdk/resources/messages/messages';
import type {
  BatchApi,
  BatchOutcome,
  Completion,
  CompletionRequest,
  FinishReason,
  LlmProvider,
} from '../../model/provider.js';
import { vendorSpec } from '../../model/vendors.js';
import { ANTHROPIC_BATCH_MAX_BYTES, answeredOutcome } from './batch.js';
import {
  buildCompletion,
  claudeFinishReason,
  DEFAULT_TIMEOUT_MS,
  malformedResponseError,
  stainlessProviderError,
  tokens,
  type VendorProviderOptions,
} from './normalise.js';
import { anthropicLearnedLimits } from './rate-limit/learned-limits.js';
import { withTagNonce } from './tag-nonce.js';

export interface AnthropicProviderOptions extends VendorProviderOptions {
  apiKey: string;
  /** Default `https://api.anthropic.com`. */
  baseURL?: string;
  /** `max_tokens` is required by the API; used when the request sets none. Default 4096. */
  defaultMaxTokens?: number;
  /** Most bytes one Message Batches submission may carry; default the API's 256 MB (tests set less). */
  batchMaxBytes?: number;
  fetch?: typeof fetch;
}

const DEFAULT_BASE_URL = vendorSpec('anthropic')!.defaultBaseUrl!;

/** Request params as sent: the SDK's type, plus `temperature`, which the API takes but this SDK's type dropped. */
type SentParams = MessageCreateParamsNonStreaming & { temperature?: number };

type AnthropicSdk = typeof import('@anthropic-ai/sdk');
let loadingSdk: Promise<AnthropicSdk> | undefined;
/**
 * The SDK, loaded on the first call: loading it takes a good part of a second, which a run
 * that never calls Anthropic (and every command start) should not pay.
 */
const anthropicSdk = (): Promise<AnthropicSdk> => (loadingSdk ??= import('@anthropic-ai/sdk'));

/** The client and the SDK's error classes (to map its failures). */
interface Loaded {
  Anthropic: AnthropicSdk['default'];
  client: Anthropic;
}

export class AnthropicProvider implements LlmProvider {
  readonly id: string;
  readonly simulated = false;
  /** The base URL, unless it is Anthropic's own (see `LlmProvider.endpoint`). */
  readonly endpoint?: string;
  private readonly model: string;
  private loaded?: Promise<Loaded>;
  readonly batch: BatchApi;

  constructor(private readonly options: AnthropicProviderOptions) {
    this.id = options.id;
    this.model = options.id.slice(options.id.indexOf(':') + 1);
    const endpoint = options.baseURL?.trim().replace(/\/+$/, '');
    if (endpoint && endpoint !== DEFAULT_BASE_URL) this.endpoint = endpoint;
    this.batch = this.batchApi();
  }

  /** The SDK client, built on first use. */
  private sdk(): Promise<Loaded> {
    this.loaded ??= anthropicSdk().then(({ default: Anthropic }) => ({
      Anthropic,
      client: new Anthropic({
        apiKey: this.options.apiKey,
        // Explicit, so the SDK never falls back to ANTHROPIC_BASE_URL from another environment.
        baseURL: this.options.baseURL ?? DEFAULT_BASE_URL,
        // Retries happen in one place: retry.ts.
        maxRetries: 0,
        timeout: this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        fetch: this.options.fetch,
      }),
    }));
    return this.loaded;
  }

  async complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const model = request.model || this.model;
    const providerId = `anthropic:${model}`;
    const params = this.params({ ...request, model });
    const { Anthropic, client } = await this.sdk();
    const started = performance.now();
    let message: Message;
    let headers: Headers;
    try {
      // The raw response comes with the parsed body (no second request): its rate-limit headers.
      ({
        data: message,
        response: { headers },
      } = await client.messages.create(params, { signal }).withResponse());
    } catch (error) {
      throw stainlessProviderError(Anthropic, providerId, error, signal);
    }
    const completion = this.completionOf(message, request, providerId, performance.now() - started);
    const learned = anthropicLearnedLimits((name) => headers.get(name));
    if (learned) completion.learnedLimits = learned;
    return completion;
  }

  /** The normalised completion of a Message (a synchronous answer or a batch result's). */
  private completionOf(
    message: Message,
    request: CompletionRequest,
    providerId: string,
    latencyMs: number,
  ): Completion {
    if (!isMessage(message)) {
      throw malformedResponseError(providerId, 'expected a message with a content array');
    }
    const toolName = request.jsonSchema?.name;
    const toolUse = toolName
      ? message.content.find((block) => block.type === 'tool_use' && block.name === toolName)
      : undefined;
    const text =
      toolUse?.type === 'tool_use'
        ? JSON.stringify(toolUse.input)
        : message.content
            .filter((block) => block.type === 'text')
            .map((block) => (block.type === 'text' ? block.text : ''))
            .join('');

    // input_tokens excludes cache reads and writes; our `input` is every input token.
    const usage = message.usage;
    const cacheRead = tokens(usage?.cache_read_input_tokens);
    const writes = cacheWrites(usage);
    const finishReason = mapStopReason(message.stop_reason, toolUse !== undefined);
    const completion = buildCompletion({
      providerId,
      text,
      finishReason,
      usage: {
        input: tokens(usage?.input_tokens) + cacheRead + writes.total,
        output: tokens(usage?.output_tokens),
        cached: cacheRead,
        ...(writes.fiveMinutes > 0 ? { cacheWrite5m: writes.fiveMinutes } : {}),
        ...(writes.oneHour > 0 ? { cacheWrite1h: writes.oneHour } : {}),
      },
      latencyMs,
      prices: this.options.prices,
    });
    // Extended thinking cut off before any answer: the budget went to the thinking blocks.
    const thought = message.content.some(
      (block) => block.type === 'thinking' || block.type === 'redacted_thinking',
    );
    if (finishReason === 'length' && thought && text.trim() === '') completion.thinkingExhausted = true;
    return completion;
  }

  /**
   * Message Batches: `messages.batches.create` with each request's params under its custom id,
   * `retrieve` to poll, `results` (the JSONL at the batch's results URL) to collect.
   */
  private batchApi(): BatchApi {
    const sdk = async () => {
      const { Anthropic, client } = await this.sdk();
      return {
        batches: client.messages.batches,
        vendorError: (error: unknown) => stainlessProviderError(Anthropic, this.id, error, undefined),
      };
    };
    const modelOf = (request: CompletionRequest) => request.model || this.model;
    const maxBytes = this.options.batchMaxBytes ?? ANTHROPIC_BATCH_MAX_BYTES;
    return {
      maxRequests: 100_000,
      maxBytes,
      // One request as it sits in the `requests` array of the submission body.
      bytesOf: (entry) =>
        Buffer.byteLength(
          JSON.stringify({
            custom_id: entry.customId,
            params: this.params({ ...entry.request, model: modelOf(entry.request) }),
          }),
        ),
      accepts: () => true,
      submit: async (entries) => {
        const { batches, vendorError } = await sdk();
        try {
          const batch = await batches.create({
            requests: entries.map((entry) => ({
              custom_id: entry.customId,
              params: this.params({ ...entry.request, model: modelOf(entry.request) }),
            })),
          });
          return batch.id;
        } catch (error) {
          throw vendorError(error);
        }
      },
      status: async (batchId) => {
        const { batches, vendorError } = await sdk();
        let batch: MessageBatch;
        try {
          batch = await batches.retrieve(batchId);
        } catch (error) {
          throw vendorError(error);
        }
        const c = batch.request_counts;
        const finished = c.succeeded + c.errored + c.canceled + c.expired;
        return {
          status: batch.processing_status,
          done: batch.processing_status === 'ended',
          finished,
          total: finished + c.processing,
        };
      },
      results: async (batchId, entries) => {
        const { batches, vendorError } = await sdk();
        const byId = new Map(entries.map((entry) => [entry.customId, entry.request]));
        const outcomes: BatchOutcome[] = [];
        try {
          for await (const line of await batches.results(batchId)) {
            const customId = line.custom_id;
            const request = byId.get(customId);
            const result = line.result;
            if (!request) continue;
            if (result.type !== 'succeeded') {
              const why = result.type === 'errored' ? `errored: ${result.error.error.message}` : result.type;
              outcomes.push({ customId, ok: false, error: why });
              continue;
            }
            const providerId = `anthropic:${modelOf(request)}`;
            outcomes.push(
              answeredOutcome(customId, () => this.completionOf(result.message, request, providerId, 0)),
            );
          }
        } catch (error) {
          throw vendorError(error);
        }
        return outcomes;
      },
    };
  }

  /** The request as sent: instructions as `system`, data sections tagged with this call's nonce. */
  private params(canonical: CompletionRequest): SentParams {
    const request = withTagNonce(canonical);
    const messages: MessageParam[] = (request.history ?? []).map((turn) => ({
      role: turn.role,
      content: turn.content,
    }));
    messages.push({ role: 'user', content: request.prompt });
    const params: SentParams = {
      model: request.model,
      max_tokens: request.maxTokens ?? this.options.defaultMaxTokens ?? 4096,
      messages,
    };
    if (request.system) params.system = request.system;
    // The Messages API takes `temperature` (0 to 1) though this SDK's request type no longer
    // lists it; the SDK sends the body as given. Extended thinking refuses any temperature but
    // the default, so none is sent when thinking is on.
    if (request.temperature !== undefined && !thinkingOn(params)) params.temperature = request.temperature;
    if (request.jsonSchema) {
      const { name, schema } = request.jsonSchema;
      params.tools = [
        {
          name,
          description: 'Record the answer. Call this tool exactly once with the complete answer.',
          input_schema: { ...schema, type: 'object' },
        },
      ];
      params.tool_choice = { type: 'tool', name };
    }
    return params;
  }
}

/** Extended thinking is on (this adapter does not turn it on today; a caller's params might). */
function thinkingOn(params: SentParams): boolean {
  const type = params.thinking?.type;
  return type !== undefined && type !== 'disabled';
}

/**
 * Cache-write tokens by lifetime. `cache_creation` splits them into five-minute and one-hour
 * entries; without the split (older API versions, a gateway) every write is a five-minute one,
 * the API's default lifetime, and so is any part of the total the split does not cover.
 */
function cacheWrites(usage: Message['usage'] | undefined): {
  total: number;
  fiveMinutes: number;
  oneHour: number;
} {
  const split = usage?.cache_creation;
  const oneHour = tokens(split?.ephemeral_1h_input_tokens);
  const total = Math.max(
    tokens(usage?.cache_creation_input_tokens),
    oneHour + tokens(split?.ephemeral_5m_input_tokens),
  );
  return { total, fiveMinutes: total - oneHour, oneHour };
}

function isMessage(value: unknown): value is Message {
  return typeof value === 'object' && value !== null && Array.isArray((value as Message).content);
}

/** The Messages API's stop reason for a declined answer. */
const REFUSALS: ReadonlySet<string> = new Set(['refusal']);

function mapStopReason(reason: string | null | undefined, answeredWithTool: boolean): FinishReason {
  return claudeFinishReason(reason, answeredWithTool, REFUSALS);
}
