/**
 * Amazon Bedrock through the official `@aws-sdk/client-bedrock-runtime`, Converse API. No key:
 * the SDK's default credential chain (environment, profile, SSO, an attached IAM role) signs
 * each request, in the region the registry hands over. Structured output is one forced tool
 * whose input schema is the requested JSON Schema, as with Anthropic's own API.
 * No AWS SDK type leaves this file.
 */
import type {
  BedrockRuntimeClient,
  ContentBlock,
  ConverseCommandInput,
  ConverseCommandOutput,
  Message,
} from '@aws-sdk/client-bedrock-runtime';
import { ProviderError, type ProviderErrorKind } from '../../model/errors.js';
import type {
  BatchApi,
  Completion,
  CompletionRequest,
  FinishReason,
  LlmProvider,
} from '../../model/provider.js';
import { kindFromStatus } from '../../model/provider-errors.js';
import {
  buildCompletion,
  callerAbortReason,
  claudeFinishReason,
  DEFAULT_TIMEOUT_MS,
  errorMessage,
  malformedResponseError,
  tokens,
  transportProviderError,
  type VendorProviderOptions,
} from './normalise.js';
import type { PriceTable } from './pricing.js';
import { headerGetter, parseRetryAfterMs } from './retry.js';
import { withTagNonce } from './tag-nonce.js';

/**
 * How a request's `jsonSchema` reaches the model: `tool` (a forced tool call, the default) or
 * `none` (no tool: the prompt alone asks for JSON), for models whose Converse support has no
 * forced tool choice (Meta Llama, among others).
 */
export type BedrockStructuredMode = 'tool' | 'none';

export interface BedrockProviderOptions extends VendorProviderOptions {
  /** `bedrock:<model id or inference profile id>` */
  id: string;
  /** The AWS region the model is called in (`us-east-1`). */
  region: string;
  /** Override of the regional Bedrock Runtime endpoint (tests, VPC endpoints, proxies). */
  endpoint?: string;
  /** Converse's `maxTokens` when the request sets none; default 4096 (some models default far lower). */
  defaultMaxTokens?: number;
  structuredOutput?: BedrockStructuredMode;
}

type BedrockSdk = typeof import('@aws-sdk/client-bedrock-runtime');
let loadingSdk: Promise<BedrockSdk> | undefined;
/**
 * The SDK, loaded on the first call: a run that never calls Bedrock (and every command start)
 * should not pay for loading it.
 */
const bedrockSdk = (): Promise<BedrockSdk> => (loadingSdk ??= import('@aws-sdk/client-bedrock-runtime'));

interface Loaded {
  sdk: BedrockSdk;
  client: BedrockRuntimeClient;
}

export class BedrockProvider implements LlmProvider {
  readonly id: string;
  readonly simulated = false;
  private readonly model: string;
  private loaded?: Promise<Loaded>;
  readonly batch: BatchApi;

  constructor(private readonly options: BedrockProviderOptions) {
    this.id = options.id;
    this.model = options.id.slice(options.id.indexOf(':') + 1);
    this.batch = noBatchApi(this.id);
  }

  private sdk(): Promise<Loaded> {
    this.loaded ??= bedrockSdk().then((sdk) => ({
      sdk,
      client: new sdk.BedrockRuntimeClient({
        region: this.options.region,
        ...(this.options.endpoint ? { endpoint: this.options.endpoint } : {}),
        // Retries happen in one place: retry.ts.
        maxAttempts: 1,
      }),
    }));
    return this.loaded;
  }

  async complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    const model = request.model || this.model;
    const providerId = `bedrock:${model}`;
    const input = converseInput({ ...request, model }, this.structured(), this.options.defaultMaxTokens);
    const { sdk, client } = await this.sdk();
    // The whole request is bounded (the SDK's own timeout only bounds an idle stream).
    const timeoutMs = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const abortSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const started = performance.now();
    let output: ConverseCommandOutput;
    try {
      output = await client.send(new sdk.ConverseCommand(input), { abortSignal });
    } catch (error) {
      const aborted = callerAbortReason(signal);
      if (aborted !== undefined) throw aborted;
      if (timeout.aborted) {
        throw transportProviderError(providerId, 'timeout', `no answer within ${timeoutMs} ms`, error);
      }
      throw bedrockProviderError(sdk, providerId, this.options.region, error);
    }
    return completionOf(output, request, providerId, performance.now() - started, this.options.prices);
  }

  private structured(): BedrockStructuredMode {
    return this.options.structuredOutput ?? 'tool';
  }
}

/** The Converse request of a completion request: instructions as `system`, data sections tagged with this call's nonce. */
export function converseInput(
  canonical: CompletionRequest,
  structured: BedrockStructuredMode = 'tool',
  defaultMaxTokens = 4096,
): ConverseCommandInput {
  const request = withTagNonce(canonical);
  const messages: Message[] = (request.history ?? []).map((turn) => ({
    role: turn.role,
    content: [{ text: turn.content }],
  }));
  messages.push({ role: 'user', content: [{ text: request.prompt }] });
  const input: ConverseCommandInput = {
    modelId: request.model,
    messages,
    inferenceConfig: {
      maxTokens: request.maxTokens ?? defaultMaxTokens,
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    },
  };
  if (request.system) input.system = [{ text: request.system }];
  if (request.jsonSchema && structured === 'tool') {
    const { name, schema } = request.jsonSchema;
    input.toolConfig = {
      tools: [
        {
          toolSpec: {
            name,
            description: 'Record the answer. Call this tool exactly once with the complete answer.',
            inputSchema: { json: { ...schema, type: 'object' } },
          },
        },
      ],
      toolChoice: { tool: { name } },
    };
  }
  return input;
}

/** The normalised completion of a Converse response. */
export function completionOf(
  output: ConverseCommandOutput,
  request: CompletionRequest,
  providerId: string,
  latencyMs: number,
  prices: PriceTable,
): Completion {
  const content: ContentBlock[] | undefined = output?.output?.message?.content;
  if (!Array.isArray(content)) {
    throw malformedResponseError(providerId, 'expected output.message.content to be an array');
  }
  const toolName = request.jsonSchema?.name;
  const toolUse = toolName ? content.find((block) => block.toolUse?.name === toolName)?.toolUse : undefined;
  const text =
    toolUse !== undefined
      ? JSON.stringify(toolUse.input ?? {})
      : content.map((block) => (typeof block.text === 'string' ? block.text : '')).join('');

  // inputTokens excludes cache reads and writes; our `input` is every input token.
  const usage = output.usage;
  const cacheRead = tokens(usage?.cacheReadInputTokens);
  const cacheWrite = tokens(usage?.cacheWriteInputTokens);
  // Writes are five-minute entries unless cacheDetails says which were kept for an hour.
  const oneHour = Math.min(
    cacheWrite,
    (usage?.cacheDetails ?? []).reduce((sum, d) => sum + (d.ttl === '1h' ? tokens(d.inputTokens) : 0), 0),
  );
  const fiveMinutes = cacheWrite - oneHour;
  return buildCompletion({
    providerId,
    text,
    finishReason: mapStopReason(output.stopReason, toolUse !== undefined),
    usage: {
      input: tokens(usage?.inputTokens) + cacheRead + cacheWrite,
      output: tokens(usage?.outputTokens),
      cached: cacheRead,
      ...(fiveMinutes > 0 ? { cacheWrite5m: fiveMinutes } : {}),
      ...(oneHour > 0 ? { cacheWrite1h: oneHour } : {}),
    },
    latencyMs,
    prices,
  });
}

/** Converse's stop reasons for an answer a guardrail or the model's content filter withheld. */
const REFUSALS: ReadonlySet<string> = new Set(['guardrail_intervened', 'content_filtered']);

export function mapStopReason(reason: string | undefined, answeredWithTool: boolean): FinishReason {
  return claudeFinishReason(reason, answeredWithTool, REFUSALS);
}

/** Bedrock's exceptions that the same call may survive later, and how to count them. */
const TRANSIENT: Readonly<Record<string, ProviderErrorKind>> = {
  ThrottlingException: 'rate_limit',
  ServiceUnavailableException: 'server',
  ModelNotReadyException: 'server',
  InternalServerException: 'server',
  ModelErrorException: 'server',
  ModelTimeoutException: 'timeout',
};

/** Node's codes for a connection that failed or dropped. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ERR_HTTP2_STREAM_ERROR',
  'ERR_HTTP2_SESSION_ERROR',
  'ERR_HTTP2_GOAWAY_SESSION',
]);

/**
 * Maps an SDK failure to a ProviderError that says what to do about it. Throttling and Bedrock's
 * own failures are retryable; a denied model, an invalid request or an unknown model is
 * permanent, with the fix in the message.
 */
export function bedrockProviderError(
  sdk: Pick<BedrockSdk, 'BedrockRuntimeServiceException'>,
  providerId: string,
  region: string,
  error: unknown,
): unknown {
  const model = providerId.slice(providerId.indexOf(':') + 1);
  if (error instanceof sdk.BedrockRuntimeServiceException) {
    const status = error.$metadata?.httpStatusCode;
    const headers = headerGetter(error.$response?.headers);
    const kind = TRANSIENT[error.name] ?? kindFromStatus(status);
    const message = `${providerId}: ${error.name}${status === undefined ? '' : ` (HTTP ${status})`}: ${error.message}${hintFor(error.name, error.message, model, region)}`;
    return new ProviderError(message, kind, providerId, status, parseRetryAfterMs(headers), { cause: error });
  }
  const name = error instanceof Error ? error.name : '';
  if (name === 'CredentialsProviderError') {
    return new ProviderError(
      `${providerId}: no AWS credentials found (${errorMessage(error)}): set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where an IAM role is attached`,
      'auth',
      providerId,
      undefined,
      undefined,
      { cause: error },
    );
  }
  if (name === 'TimeoutError')
    return transportProviderError(providerId, 'timeout', errorMessage(error), error);
  if (error instanceof SyntaxError) return malformedResponseError(providerId, error.message, error);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) {
    return transportProviderError(providerId, 'network', errorMessage(error), error);
  }
  return error;
}

/** What to do about a permanent Bedrock error, as a sentence to append. */
function hintFor(name: string, message: string, model: string, region: string): string {
  switch (name) {
    case 'AccessDeniedException':
      return `. Enable model access for ${model} in the Bedrock console (Model access, region ${region}) and allow bedrock:InvokeModel on it to these AWS credentials`;
    case 'ResourceNotFoundException':
      return `. Check the model id: ${model} must be a Bedrock model id or inference profile id available in ${region}`;
    case 'ValidationException':
      if (/on-demand throughput/i.test(message)) {
        return `. This model is called through an inference profile: prefix its id with the geography (e.g. bedrock:us.${model})`;
      }
      if (/tool ?choice|toolConfig|tool use/i.test(message)) {
        return '. This model has no forced tool call on Bedrock: set BEDROCK_STRUCTURED_OUTPUT=none to ask for JSON in the prompt alone';
      }
      return '';
    default:
      return '';
  }
}

/**
 * Bedrock's batch inference reads its input from S3 and writes to S3 under an IAM service role,
 * which this lane does not set up: every batch is refused with this reason, and its calls are
 * made synchronously (the batch lane reports the refusal and says they go synchronous).
 */
function noBatchApi(providerId: string): BatchApi {
  const refusal = () =>
    new ProviderError(
      `${providerId}: Bedrock batch inference is not supported (it needs an S3 bucket and a service role); the calls are made synchronously at the on-demand price`,
      'bad_request',
      providerId,
    );
  return {
    maxRequests: 50_000,
    accepts: () => true,
    submit: async () => {
      throw refusal();
    },
    status: async () => {
      throw refusal();
    },
    results: async () => {
      throw refusal();
    },
  };
}
