/**
 * Google Gemini (Developer API) through `@google/genai` `models.generateContent`. Structured
 * output via `responseMimeType: application/json` + `responseJsonSchema` (standard JSON Schema).
 * No `@google/genai` type leaves this file.
 */
import type {
  BatchJob,
  Content,
  GenerateContentConfig,
  GenerateContentResponse,
  GoogleGenAI,
  InlinedRequest,
  ThinkingConfig,
  ThinkingLevel,
} from '@google/genai';
import type {
  BatchApi,
  BatchOutcome,
  Completion,
  CompletionRequest,
  FinishReason,
  LlmProvider,
} from '../../model/provider.js';
import { vendorSpec } from '../../model/vendors.js';
import { answeredOutcome } from './batch.js';
import {
  buildCompletion,
  callerAbortReason,
  DEFAULT_TIMEOUT_MS,
  errorMessage,
  httpProviderError,
  isAbortError,
  malformedResponseError,
  tokens,
  transportProviderError,
  type VendorProviderOptions,
} from './normalise.js';
import { learnedLimitsFromHeaders } from './rate-limit/learned-limits.js';
import { withTagNonce } from './tag-nonce.js';

export interface GeminiProviderOptions extends VendorProviderOptions {
  apiKey: string;
  /** Override of `https://generativelanguage.googleapis.com` (tests, proxies). */
  baseUrl?: string;
  fetch?: typeof fetch;
}

const DEFAULT_BASE_URL = vendorSpec('gemini')!.defaultBaseUrl!;

/**
 * Gemini 2.5 models think before they answer, and the thoughts come out of `maxOutputTokens`:
 * a budget sized for the answer alone is often spent before the answer starts (2.5 Pro cannot
 * turn thinking off). So their thinking is bounded to this many tokens and `maxOutputTokens`
 * raised by as much, leaving the asked budget to the answer. It is a ceiling: only the tokens
 * used are billed.
 */
export const GEMINI_THINKING_BUDGET = 1_024;

/**
 * Gemini 2.5 models that think by default (a thinking budget in tokens; 2.5 Flash-Lite does not
 * think unless asked, and is left so) and later ones (a thinking level).
 */
const THINKING_BUDGET_MODEL = /^gemini-2\.5-(?!flash-lite)/;
const THINKING_LEVEL_MODEL = /^gemini-([3-9]|\d{2,})/;

type GenAiSdk = typeof import('@google/genai');
/** The SDK once loaded (its error class maps failures, which only a loaded SDK can throw). */
let genAi: GenAiSdk | undefined;
let loadingGenAi: Promise<GenAiSdk> | undefined;

/**
 * `@google/genai`, loaded on first use: loading it takes a second or more, which a run that
 * never calls Gemini (and every command start) should not pay.
 */
export function geminiSdk(): Promise<GenAiSdk> {
  loadingGenAi ??= import('@google/genai').then((sdk) => {
    genAi = sdk;
    return sdk;
  });
  return loadingGenAi;
}

/**
 * A Gemini client (the SDK loaded on first use) for the provider and the embedder alike. Explicit
 * `vertexai: false`, so GOOGLE_GENAI_USE_VERTEXAI in the environment cannot switch backends; no
 * retryOptions, so the SDK makes exactly one attempt (retries happen in retry.ts).
 */
export function geminiClient(options: {
  apiKey?: string;
  baseUrl?: string;
  timeoutMs?: number;
}): Promise<GoogleGenAI> {
  return geminiSdk().then(
    ({ GoogleGenAI }) =>
      new GoogleGenAI({
        apiKey: options.apiKey,
        vertexai: false,
        httpOptions: {
          ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
          timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        },
      }),
  );
}

export class GeminiProvider implements LlmProvider {
  readonly id: string;
  readonly simulated = false;
  /** The base URL, unless it is Google's own (see `LlmProvider.endpoint`). */
  readonly endpoint?: string;
  private readonly model: string;
  private client?: Promise<GoogleGenAI>;
  private readonly fetchFn: typeof fetch;
  readonly batch: BatchApi;

  constructor(private readonly options: GeminiProviderOptions) {
    this.id = options.id;
    this.model = options.id.slice(options.id.indexOf(':') + 1);
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    const endpoint = options.baseUrl?.trim().replace(/\/+$/, '');
    if (endpoint && endpoint !== DEFAULT_BASE_URL) this.endpoint = endpoint;
    this.batch = this.batchApi();
  }

  /** The SDK client, built on first use. */
  private sdk(): Promise<GoogleGenAI> {
    this.client ??= geminiClient(this.options);
    return this.client;
  }

  async complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const model = request.model || this.model;
    const providerId = `gemini:${model}`;
    // The SDK's ApiError carries no headers; a per-call fetch keeps the last response's headers
    // so that retry-after can be honoured.
    let responseHeaders: Headers | undefined;
    const capturingFetch: typeof fetch = async (input, init) => {
      const response = await this.fetchFn(input, init);
      responseHeaders = response.headers;
      return response;
    };
    // Instructions as the system instruction, data sections tagged with this call's nonce.
    const sent = withTagNonce({ ...request, model });
    const config: GenerateContentConfig = {
      ...generationConfig(sent),
      httpOptions: { fetch: capturingFetch },
      abortSignal: signal,
      // One request per call: continuation hops would hide attempts from retry.ts and the cost.
      automaticContinuation: false,
    };

    const started = performance.now();
    let response: GenerateContentResponse;
    try {
      response = await (await this.sdk()).models.generateContent({
        model,
        contents: contentsOf(sent),
        config,
      });
    } catch (error) {
      throw toError(providerId, error, signal, responseHeaders);
    }
    const completion = this.completionOf(response, providerId, performance.now() - started);
    // Google rarely sends rate-limit headers; a metering proxy in front of it may.
    const headers = responseHeaders;
    const learned = headers && learnedLimitsFromHeaders((name) => headers.get(name));
    if (learned) completion.learnedLimits = learned;
    return completion;
  }

  /** The normalised completion of a GenerateContentResponse (a synchronous answer or a batch's). */
  private completionOf(response: GenerateContentResponse, providerId: string, latencyMs: number): Completion {
    const candidate = response?.candidates?.[0];
    if (!candidate && !response?.promptFeedback) {
      throw malformedResponseError(
        providerId,
        'a GenerateContentResponse with neither candidates nor promptFeedback',
      );
    }
    const text = (candidate?.content?.parts ?? [])
      .filter((part) => typeof part.text === 'string' && !part.thought)
      .map((part) => part.text)
      .join('');
    let finishReason = mapFinishReason(candidate?.finishReason);
    // No candidate at all: the prompt itself was blocked.
    if (!candidate && response.promptFeedback?.blockReason) finishReason = 'content_filter';

    const usage = response.usageMetadata;
    const thoughts = tokens(usage?.thoughtsTokenCount);
    const completion = buildCompletion({
      providerId,
      text,
      finishReason,
      usage: {
        input: tokens(usage?.promptTokenCount),
        // Thinking tokens are billed as output.
        output: tokens(usage?.candidatesTokenCount) + thoughts,
        cached: tokens(usage?.cachedContentTokenCount),
        ...(thoughts > 0 ? { reasoning: thoughts } : {}),
      },
      latencyMs,
      prices: this.options.prices,
    });
    // MAX_TOKENS with no answer part: the budget went to thoughts before the answer started.
    if (finishReason === 'length' && text.trim() === '' && thoughts > 0) completion.thinkingExhausted = true;
    return completion;
  }

  /**
   * Gemini batch mode with inlined requests: `batches.create` (each request's custom id in its
   * `metadata.key`), `batches.get` to poll; the answers come inlined in the finished job.
   */
  private batchApi(): BatchApi {
    const batchesOf = async () => (await this.sdk()).batches;
    const vendorError = (error: unknown) => toError(this.id, error, undefined, undefined);
    const modelOf = (request: CompletionRequest) => request.model || this.model;
    const getJob = async (name: string): Promise<BatchJob> => {
      try {
        return await (await batchesOf()).get({ name, config: { httpOptions: { fetch: this.fetchFn } } });
      } catch (error) {
        throw vendorError(error);
      }
    };
    return {
      // Inlined requests travel in one body (the API caps it at 20 MB): keep batches modest.
      maxRequests: 2_000,
      accepts: () => true,
      submit: async (entries, label) => {
        const model = modelOf(entries[0]!.request);
        const src: InlinedRequest[] = entries.map((entry) => {
          const sent = withTagNonce({ ...entry.request, model: modelOf(entry.request) });
          return {
            contents: contentsOf(sent),
            config: generationConfig(sent),
            metadata: { key: entry.customId },
          };
        });
        let job: BatchJob;
        try {
          job = await (await batchesOf()).create({
            model,
            src,
            config: { displayName: label.slice(0, 128), httpOptions: { fetch: this.fetchFn } },
          });
        } catch (error) {
          throw vendorError(error);
        }
        if (!job.name) throw malformedResponseError(this.id, 'a created batch without a name');
        return job.name;
      },
      status: async (batchId) => {
        const job = await getJob(batchId);
        const state = String(job.state ?? 'JOB_STATE_UNSPECIFIED');
        return { status: state, done: GEMINI_DONE_STATES.has(state) };
      },
      results: async (batchId, entries) => {
        const job = await getJob(batchId);
        const responses = job.dest?.inlinedResponses ?? [];
        const outcomes: BatchOutcome[] = [];
        responses.forEach((answer, index) => {
          // The answers keep the requests' order; the metadata key says it outright when echoed.
          const entry =
            entries.find((e) => e.customId === answer.metadata?.key) ??
            (answer.metadata?.key === undefined ? entries[index] : undefined);
          if (!entry) return;
          const customId = entry.customId;
          const response = answer.response;
          if (answer.error || !response) {
            outcomes.push({ customId, ok: false, error: answer.error?.message ?? 'no answer' });
            return;
          }
          const providerId = `gemini:${modelOf(entry.request)}`;
          outcomes.push(answeredOutcome(customId, () => this.completionOf(response, providerId, 0)));
        });
        return outcomes;
      },
    };
  }
}

const GEMINI_DONE_STATES = new Set([
  'JOB_STATE_SUCCEEDED',
  'JOB_STATE_FAILED',
  'JOB_STATE_CANCELLED',
  'JOB_STATE_EXPIRED',
]);

/**
 * The generation settings of a request (no transport options), for a call or a batch entry;
 * `request.model` is the model called.
 */
function generationConfig(request: CompletionRequest): GenerateContentConfig {
  const config: GenerateContentConfig = {};
  if (request.system) config.systemInstruction = request.system;
  if (request.temperature !== undefined) config.temperature = request.temperature;
  const thinking = thinkingConfig(request.model);
  if (thinking) config.thinkingConfig = thinking;
  if (request.maxTokens !== undefined) {
    // Thoughts come out of the same budget: the answer keeps the share the caller asked for.
    config.maxOutputTokens = request.maxTokens + (thinking ? GEMINI_THINKING_BUDGET : 0);
  }
  if (request.jsonSchema) {
    config.responseMimeType = 'application/json';
    config.responseJsonSchema = request.jsonSchema.schema;
  }
  return config;
}

/**
 * How a thinking model thinks: Gemini 2.5 within {@link GEMINI_THINKING_BUDGET} tokens; later
 * models (which take a level, not a budget) at the low level. Undefined for models that do not
 * think.
 */
function thinkingConfig(model: string): ThinkingConfig | undefined {
  if (THINKING_BUDGET_MODEL.test(model)) return { thinkingBudget: GEMINI_THINKING_BUDGET };
  // `ThinkingLevel` is an enum of the SDK, which is loaded lazily: its value is the wire string.
  if (THINKING_LEVEL_MODEL.test(model)) return { thinkingLevel: 'LOW' as ThinkingLevel };
  return undefined;
}

/** The conversation: earlier turns, then the prompt as the last user turn. */
function contentsOf(request: CompletionRequest): Content[] {
  const contents: Content[] = (request.history ?? []).map((turn) => ({
    role: turn.role === 'assistant' ? 'model' : 'user',
    parts: [{ text: turn.content }],
  }));
  contents.push({ role: 'user', parts: [{ text: request.prompt }] });
  return contents;
}

export function toError(
  providerId: string,
  error: unknown,
  signal: AbortSignal | undefined,
  headers: Headers | undefined,
): unknown {
  const aborted = callerAbortReason(signal);
  if (aborted !== undefined) return aborted;
  if (genAi && error instanceof genAi.ApiError) {
    return httpProviderError(
      providerId,
      error.status,
      (name) => headers?.get(name),
      error.message,
      error,
      retryDelayFromBody(error.message),
    );
  }
  // The SDK aborts its own per-attempt signal when `timeout` elapses.
  if (isAbortError(error)) return transportProviderError(providerId, 'timeout', errorMessage(error), error);
  if (error instanceof SyntaxError) return malformedResponseError(providerId, error.message, error);
  if (error instanceof TypeError) {
    return transportProviderError(providerId, 'network', errorMessage(error.cause ?? error), error);
  }
  return error;
}

/**
 * Google puts the advised wait in the error body (`google.rpc.RetryInfo`, `"retryDelay": "12s"`)
 * rather than a header. The SDK's ApiError message is that body as JSON text.
 */
function retryDelayFromBody(message: string): number | undefined {
  const match = /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(message);
  return match?.[1] === undefined ? undefined : Number(match[1]) * 1000;
}

function mapFinishReason(reason: string | undefined): FinishReason {
  switch (reason) {
    case 'STOP':
      return 'stop';
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'PROHIBITED_CONTENT':
    case 'BLOCKLIST':
    case 'SPII':
    case 'RECITATION':
    case 'IMAGE_SAFETY':
    case 'IMAGE_PROHIBITED_CONTENT':
      return 'content_filter';
    default:
      return 'other';
  }
}
