/**
 * Builds providers from ids or aliases. Credentials come from the environment, checked here
 * when the provider is created, so a missing key fails at suite load and names the variable.
 */

import { ConfigError } from '../../model/errors.js';
import type { LlmProvider, Simulator } from '../../model/provider.js';
import { MissingCredentialsError } from '../../model/provider-errors.js';
import { resolveProviderId } from '../../model/provider-ids.js';
import { rememberSecret } from '../../model/secrets.js';
import { type Connection, connectionOf, type Vendor, vendorSpec } from '../../model/vendors.js';
import { AnthropicProvider } from './anthropic.js';
import { BedrockProvider, type BedrockStructuredMode } from './bedrock.js';
import { GeminiProvider } from './gemini.js';
import { OpenAiProvider, type OpenAiStructuredMode } from './openai.js';
import type { PriceTable } from './pricing.js';
import { type SimOptions, SimProvider } from './sim.js';

export interface CreateProviderOptions {
  /** Where keys and base URLs are read from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  prices: PriceTable;
  /** Only for `sim:` backends. */
  sim?: Partial<SimOptions>;
  /** Only for `sim:` backends: answers the task families' hints (the registry's `simulateAnswer`). */
  simulator?: Simulator;
  /** Per request, every vendor. Default 60 s. */
  timeoutMs?: number;
  /** Replaces `fetch` in every SDK (tests, proxies). */
  fetch?: typeof fetch;
  /**
   * How OpenAI and compatible endpoints receive `jsonSchema`; default `json_schema`, else env
   * `<VENDOR>_STRUCTURED_OUTPUT` (e.g. `VLLM_STRUCTURED_OUTPUT=json_object`;
   * `<SERVICE>_STRUCTURED_OUTPUT` for `openai-compatible:<service>/…`).
   */
  structuredOutput?: OpenAiStructuredMode;
}

const STRUCTURED_MODES: readonly OpenAiStructuredMode[] = ['json_schema', 'json_object', 'none'];

/** The value of the first variable that is set and non-empty. */
export function firstSet(env: NodeJS.ProcessEnv, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = env[name]?.trim();
    if (value) return value;
  }
  return undefined;
}

export function requireVar(env: NodeJS.ProcessEnv, providerId: string, names: readonly string[]): string {
  const value = firstSet(env, names);
  if (value === undefined) throw new MissingCredentialsError(providerId, names);
  // A key this process holds: no message carrying it leaves the process (model/secrets.ts).
  rememberSecret(value);
  return value;
}

/**
 * The base URL a variable sets (the first of `names` set), refused when it carries a user name or
 * password (`https://user:secret@host/v1`): fetch will not send such a URL, and its error quotes
 * it whole, password included, on every one of a run's retries. The refusal comes when the
 * provider is built, before any call, names the variable and shows the URL without its
 * credentials; the password is remembered as a secret, so no later message carries it either.
 */
export function baseUrlVar(env: NodeJS.ProcessEnv, names: readonly string[]): string | undefined {
  const name = names.find((n) => env[n]?.trim());
  const value = name === undefined ? undefined : env[name]!.trim();
  if (name === undefined || value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // Not an absolute URL: the SDK says so when it is used, and there is no password to hide.
    return value;
  }
  if (url.username === '' && url.password === '') return value;
  // As written in the variable (percent-encoded) and as decoded: either may reach a message.
  rememberSecret(url.password);
  rememberSecret(decodedOrNot(url.password));
  url.username = '';
  url.password = '';
  throw new ConfigError(
    `${name} holds a user name or password (${url.href.replace('//', '//…@')}): a base URL cannot carry credentials. Set ${name} to the URL without the \`user:password@\` part, and give the key in the vendor's key variable instead`,
  );
}

/** A percent-encoded URL part decoded, or as it is when it is not valid percent-encoding. */
function decodedOrNot(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/**
 * A provider for an id or alias (`openai:gpt-4o-mini`, `gas_gemini20_flash_lite`, `sim:gold`,
 * `vllm:mistralai/Mistral-7B-Instruct-v0.3`…). Builds one SDK client; call it once per backend
 * and reuse the provider. Throws `UnknownProviderError` for an unknown vendor and
 * `MissingCredentialsError` naming the variable to set when a key or base URL is missing.
 */
export function createProvider(idOrAlias: string, options: CreateProviderOptions): LlmProvider {
  const env = options.env ?? process.env;
  const { vendor, model, id } = resolveProviderId(idOrAlias);
  const common = { id, prices: options.prices, timeoutMs: options.timeoutMs, fetch: options.fetch };
  const how = connectionOf(vendor, model);

  switch (how.adapter) {
    case 'sim':
      return new SimProvider(model, options.sim, { simulator: options.simulator, prices: options.prices });
    case 'anthropic':
      return new AnthropicProvider({
        ...common,
        apiKey: requireVar(env, id, how.keyEnv),
        baseURL: baseUrlVar(env, how.baseUrlEnv),
      });
    case 'gemini':
      return new GeminiProvider({
        ...common,
        apiKey: requireVar(env, id, how.keyEnv),
        baseUrl: baseUrlVar(env, how.baseUrlEnv),
      });
    case 'bedrock': {
      // No key to read: the AWS SDK's credential chain signs each request.
      const region = bedrockRegion(env, id);
      return new BedrockProvider({
        ...common,
        region,
        endpoint: bedrockEndpoint(env, region, how.baseUrlEnv),
        structuredOutput: bedrockStructuredFromEnv(env),
      });
    }
    case 'openai': {
      const baseURL =
        baseUrlVar(env, how.baseUrlEnv) ?? how.defaultBaseUrl ?? requireBaseUrl(env, id, how.baseUrlEnv);
      return new OpenAiProvider({
        ...common,
        apiKey: compatibleApiKey(how, env, id),
        baseURL,
        structuredOutput:
          options.structuredOutput ??
          (how.structuredOutputEnv === undefined
            ? undefined
            : structuredFromEnv(env, how.structuredOutputEnv)),
      });
    }
  }
}

/** A base URL the backend cannot do without: unset, the run stops naming the variable to set. */
function requireBaseUrl(env: NodeJS.ProcessEnv, providerId: string, names: readonly string[]): string {
  const value = baseUrlVar(env, names);
  if (value !== undefined) return value;
  throw new MissingCredentialsError(
    providerId,
    names,
    `${providerId} needs ${names.join(' or ')}: set it to the server's OpenAI-compatible base URL (e.g. http://localhost:8080/v1), or use a sim: backend`,
  );
}

function compatibleApiKey(how: Connection, env: NodeJS.ProcessEnv, providerId: string): string {
  // The SDK insists on a key; keyless servers (Ollama, llama-server, an open vLLM) ignore whatever is sent.
  if (how.key === 'none') return 'unused';
  if (how.key === 'optional') {
    const key = firstSet(env, how.keyEnv);
    rememberSecret(key);
    return key ?? 'unused';
  }
  return requireVar(env, providerId, how.keyEnv);
}

/** Where AWS SDKs look for the region; no region, no Bedrock (models differ by region). */
export const AWS_REGION_VARS = ['AWS_REGION', 'AWS_DEFAULT_REGION'] as const;

/**
 * The region Bedrock is called in. Bedrock needs no key (the AWS SDK's credential chain signs
 * each request), but it does need a region.
 */
function bedrockRegion(env: NodeJS.ProcessEnv, providerId: string): string {
  const region = firstSet(env, AWS_REGION_VARS);
  if (region === undefined) {
    throw new MissingCredentialsError(
      providerId,
      AWS_REGION_VARS,
      `${providerId} needs an AWS region: set AWS_REGION (e.g. us-east-1) to one where the model is enabled (or use a sim: backend)`,
    );
  }
  return region;
}

/**
 * The Bedrock Runtime endpoint: the service's own override variable (which the AWS SDK also
 * reads) or BEDROCK_ENDPOINT_URL, for tests and VPC endpoints. A general AWS_ENDPOINT_URL alone
 * points at an emulator of S3, SQS and DynamoDB (the local cloud's moto_server), which serves no
 * Bedrock: the public regional endpoint is named then, so the SDK does not follow it there.
 */
function bedrockEndpoint(
  env: NodeJS.ProcessEnv,
  region: string,
  names: readonly string[],
): string | undefined {
  const own = baseUrlVar(env, names);
  if (own !== undefined) return own;
  if (firstSet(env, ['AWS_ENDPOINT_URL']) === undefined) return undefined;
  return `https://bedrock-runtime.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}`;
}

function bedrockStructuredFromEnv(env: NodeJS.ProcessEnv): BedrockStructuredMode | undefined {
  const value = firstSet(env, ['BEDROCK_STRUCTURED_OUTPUT']);
  if (value === undefined) return undefined;
  if (value !== 'tool' && value !== 'none') {
    throw new Error(`BEDROCK_STRUCTURED_OUTPUT must be tool or none, got "${value}"`);
  }
  return value;
}

function structuredFromEnv(env: NodeJS.ProcessEnv, name: string): OpenAiStructuredMode | undefined {
  const value = firstSet(env, [name]);
  if (value === undefined) return undefined;
  if (!(STRUCTURED_MODES as readonly string[]).includes(value)) {
    throw new Error(`${name} must be one of ${STRUCTURED_MODES.join(', ')}, got "${value}"`);
  }
  return value as OpenAiStructuredMode;
}

/**
 * The backend to use when the user named none: the first vendor with a key in `env`
 * (OpenAI, then Anthropic, then Gemini), else, with `bedrock`, Amazon Bedrock when AWS
 * credentials and a region are set, else the simulator. `bedrock` is for runs on this machine:
 * the local cloud swaps the machine's AWS credentials for its emulator's, which Bedrock refuses.
 */
export function detectDefaultBackend(
  env: NodeJS.ProcessEnv = process.env,
  options: { bedrock?: boolean } = {},
): string {
  const keyed = (vendor: Vendor) => firstSet(env, vendorSpec(vendor)!.keyEnv) !== undefined;
  if (keyed('openai')) return 'openai:gpt-4o-mini';
  if (keyed('anthropic')) return 'anthropic:claude-3-5-haiku-latest';
  if (keyed('gemini')) return 'gemini:gemini-2.0-flash-lite';
  const bedrock = options.bedrock ? defaultBedrockModel(env) : undefined;
  if (bedrock !== undefined) return bedrock;
  return 'sim:gold';
}

/**
 * The Bedrock model the quickstart uses when AWS credentials (a profile or an access key) and a
 * region are set: Amazon Nova Lite, which needs no vendor use-case form to enable and answers
 * with a forced tool call. Called through the cross-region inference profile of the region's
 * geography (`us.`, `eu.`, `apac.`), which Nova needs in most regions; elsewhere by its own id.
 */
export function defaultBedrockModel(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const region = firstSet(env, AWS_REGION_VARS);
  if (region === undefined || !firstSet(env, ['AWS_PROFILE', 'AWS_ACCESS_KEY_ID'])) return undefined;
  const geography = region.startsWith('us-')
    ? 'us.'
    : region.startsWith('eu-')
      ? 'eu.'
      : region.startsWith('ap-')
        ? 'apac.'
        : '';
  return `bedrock:${geography}amazon.nova-lite-v1:0`;
}

/**
 * Providers built once per backend and reused (one SDK client each; a simulator once per sim
 * settings). Each shell's composition root keeps one for the life of its process.
 */
export class ProviderPool {
  private readonly built = new Map<string, LlmProvider>();

  constructor(private readonly options: Omit<CreateProviderOptions, 'sim'>) {}

  /** `timeoutMs`: per request, instead of the pool's (a run's `run.timeoutMs`); one client per value. */
  get(backend: string, sim?: Partial<SimOptions>, timeoutMs?: number): LlmProvider {
    const base =
      resolveProviderId(backend).vendor === 'sim' ? `${backend}#${JSON.stringify(sim ?? {})}` : backend;
    const key = timeoutMs === undefined ? base : `${base}#timeout=${timeoutMs}`;
    let provider = this.built.get(key);
    if (!provider) {
      provider = createProvider(backend, {
        ...this.options,
        sim,
        timeoutMs: timeoutMs ?? this.options.timeoutMs,
      });
      this.built.set(key, provider);
    }
    return provider;
  }

  /** Builds every backend now, so a missing key or an unknown vendor fails before the first item. */
  require(backends: readonly string[], sim?: Partial<SimOptions>): void {
    for (const backend of backends) this.get(backend, sim);
  }
}
