/**
 * Every vendor Assay calls, in one table: the prefix of its provider ids, the adapter that
 * speaks its wire format, where it answers, the variables its key and base URL are read from,
 * whether the prefix names a host (a service serving other makers' models) or a maker, whether
 * it has a batch API, and where its prices sit in the price table. Provider-id parsing, the
 * provider registry, the cache key's default endpoints and self-preference's makers and hosts
 * all read it: a server that speaks one of the known wire formats needs one row here and
 * nothing else, and any OpenAI-compatible server needs not even that
 * (`openai-compatible:<service>/<model>`, its variables named after the service).
 */

/** The adapter (the SDK) a vendor's calls go through. */
export type AdapterKind = 'openai' | 'anthropic' | 'gemini' | 'bedrock' | 'sim';

export interface VendorSpec {
  /** The prefix of its provider ids: `openai` in `openai:gpt-4o-mini`. */
  readonly id: string;
  readonly adapter: AdapterKind;
  /**
   * Where it answers unless its base URL variable says otherwise. Undefined: the variable is
   * required (a server that runs wherever it is put), or the adapter finds its own (Bedrock's
   * regional endpoint, the simulator).
   */
  readonly defaultBaseUrl?: string;
  /** The variables a base URL is read from, the first set one winning. */
  readonly baseUrlEnv: readonly string[];
  /** The variables its key is read from, the first set one winning; none: it takes no key. */
  readonly keyEnv: readonly string[];
  /** `required`: no key, no run. `optional`: sent when set (a server that may or may not check one). */
  readonly key: 'required' | 'optional' | 'none';
  /**
   * `maker`: the prefix names the maker of the models it serves (`openai:`, `anthropic:`), so a
   * model name that gives no maker away is still theirs. `host`: the prefix names a service
   * that serves other makers' models (`openrouter:`, `bedrock:`, a local server): the model
   * name alone tells whose model it is.
   */
  readonly names: 'maker' | 'host';
  /** The maker's family name in self-preference figures (`gemini:` models are `google`'s). */
  readonly maker?: string;
  /** Whether the batch lane can send its calls through the vendor's batch API. */
  readonly batch: boolean;
  /**
   * The prefix of its entries in the price table (`<prefix>:<model>`, or `<prefix>:*` for all
   * of its models). Undefined: priced otherwise (the simulator, as the model it stands in for).
   */
  readonly priceKey?: string;
  /** OpenAI-compatible servers: the variable that picks how structured output is asked for. */
  readonly structuredOutputEnv?: string;
  /**
   * The model part is `<service>/<model>`: the service names the variables
   * (`<SERVICE>_BASE_URL`, `<SERVICE>_API_KEY`, `<SERVICE>_STRUCTURED_OUTPUT`) and the model
   * is sent as the server knows it.
   */
  readonly perService?: boolean;
  /** Bare model names (no `vendor:`) that this vendor serves. */
  readonly bareNames?: RegExp;
}

const openAiCompatible = (
  id: string,
  defaultBaseUrl: string | undefined,
  key: 'required' | 'optional' | 'none',
): VendorSpec => {
  const env = id.toUpperCase();
  return {
    id,
    adapter: 'openai',
    ...(defaultBaseUrl === undefined ? {} : { defaultBaseUrl }),
    baseUrlEnv: [`${env}_BASE_URL`],
    keyEnv: key === 'none' ? [] : [`${env}_API_KEY`],
    key,
    names: 'host',
    batch: false,
    priceKey: id,
    structuredOutputEnv: `${env}_STRUCTURED_OUTPUT`,
  };
};

/** The vendors, in the order an error lists them. */
export const VENDOR_TABLE = [
  {
    id: 'openai',
    adapter: 'openai',
    defaultBaseUrl: 'https://api.openai.com/v1',
    baseUrlEnv: ['OPENAI_BASE_URL'],
    keyEnv: ['OPENAI_API_KEY'],
    key: 'required',
    names: 'maker',
    maker: 'openai',
    batch: true,
    priceKey: 'openai',
    structuredOutputEnv: 'OPENAI_STRUCTURED_OUTPUT',
    bareNames: /^(gpt-|chatgpt-|o1($|-)|o3($|-)|o4-)/,
  },
  {
    id: 'anthropic',
    adapter: 'anthropic',
    defaultBaseUrl: 'https://api.anthropic.com',
    baseUrlEnv: ['ANTHROPIC_BASE_URL'],
    keyEnv: ['ANTHROPIC_API_KEY'],
    key: 'required',
    names: 'maker',
    maker: 'anthropic',
    batch: true,
    priceKey: 'anthropic',
    bareNames: /^claude-/,
  },
  {
    id: 'gemini',
    adapter: 'gemini',
    defaultBaseUrl: 'https://generativelanguage.googleapis.com',
    baseUrlEnv: ['GEMINI_BASE_URL'],
    keyEnv: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
    key: 'required',
    names: 'maker',
    maker: 'google',
    batch: true,
    priceKey: 'gemini',
    bareNames: /^gemini-/,
  },
  {
    // Signed by the AWS credential chain: no key. The region picks the endpoint.
    id: 'bedrock',
    adapter: 'bedrock',
    baseUrlEnv: ['AWS_ENDPOINT_URL_BEDROCK_RUNTIME', 'BEDROCK_ENDPOINT_URL'],
    keyEnv: [],
    key: 'none',
    names: 'host',
    batch: false,
    priceKey: 'bedrock',
  },
  {
    // The simulator: its model names the real model it stands in for, or none (`sim:gold`).
    id: 'sim',
    adapter: 'sim',
    baseUrlEnv: [],
    keyEnv: [],
    key: 'none',
    names: 'host',
    batch: false,
  },
  openAiCompatible('openrouter', 'https://openrouter.ai/api/v1', 'required'),
  openAiCompatible('together', 'https://api.together.xyz/v1', 'required'),
  openAiCompatible('groq', 'https://api.groq.com/openai/v1', 'required'),
  openAiCompatible('fireworks', 'https://api.fireworks.ai/inference/v1', 'required'),
  openAiCompatible('deepinfra', 'https://api.deepinfra.com/v1/openai', 'required'),
  openAiCompatible('ollama', 'http://localhost:11434/v1', 'none'),
  openAiCompatible('vllm', undefined, 'optional'),
  // llama.cpp's llama-server: port 8080 unless started with another; a key only with --api-key.
  openAiCompatible('llamacpp', 'http://localhost:8080/v1', 'optional'),
  {
    // Any OpenAI-compatible server, named by the user: its variables come from the service name.
    id: 'openai-compatible',
    adapter: 'openai',
    baseUrlEnv: [],
    keyEnv: [],
    key: 'optional',
    names: 'host',
    batch: false,
    priceKey: 'openai-compatible',
    perService: true,
  },
] as const satisfies readonly VendorSpec[];

export type Vendor = (typeof VENDOR_TABLE)[number]['id'];

/** Every vendor prefix, in the table's order. */
export const VENDORS: readonly Vendor[] = VENDOR_TABLE.map((row) => row.id);

const BY_ID: ReadonlyMap<string, VendorSpec> = new Map(VENDOR_TABLE.map((row) => [row.id, row]));

/**
 * Services that appear in producer ids (a dataset saying who wrote an output) and serve other
 * makers' models, but that Assay does not call: self-preference reads their ids as hosts too.
 */
export const OTHER_HOSTS: readonly string[] = ['azure', 'vertex'];

export function isVendor(value: string): value is Vendor {
  return BY_ID.has(value);
}

/** The table's row of a vendor prefix; undefined when it names none. */
export function vendorSpec(vendor: string): VendorSpec | undefined {
  return BY_ID.get(vendor);
}

/** Whether a prefix names a service that serves other makers' models (a vendor row, or one of {@link OTHER_HOSTS}). */
export function isHostPrefix(prefix: string): boolean {
  const spec = BY_ID.get(prefix);
  return spec === undefined ? OTHER_HOSTS.includes(prefix) : spec.names === 'host';
}

/**
 * The service of an `openai-compatible:` model part (`local/llama-3` → `local`, model `llama-3`);
 * undefined when it is not `<service>/<model>`.
 */
export function serviceOf(model: string): { service: string; model: string } | undefined {
  const slash = model.indexOf('/');
  if (slash <= 0 || slash === model.length - 1) return undefined;
  const service = model.slice(0, slash);
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(service)) return undefined;
  return { service, model: model.slice(slash + 1) };
}

/** The stem of a service's variables: upper case, every other character than a letter or digit `_`. */
export function serviceEnvStem(service: string): string {
  return service.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/** What a provider is built from: the adapter, its variables and its default endpoint. */
export interface Connection {
  adapter: AdapterKind;
  /** The model as the server knows it (without an `openai-compatible:` service). */
  wireModel: string;
  defaultBaseUrl?: string;
  baseUrlEnv: readonly string[];
  keyEnv: readonly string[];
  key: VendorSpec['key'];
  structuredOutputEnv?: string;
}

/**
 * How to reach `vendor:model`: the row's facts, or for a per-service vendor the variables its
 * service names (`openai-compatible:local/llama-3` → `LOCAL_BASE_URL`, `LOCAL_API_KEY`). The
 * model must already be valid for the vendor (see `resolveProviderId`).
 */
export function connectionOf(vendor: Vendor, model: string): Connection {
  const spec = BY_ID.get(vendor)!;
  const base = {
    adapter: spec.adapter,
    key: spec.key,
    ...(spec.defaultBaseUrl === undefined ? {} : { defaultBaseUrl: spec.defaultBaseUrl }),
  };
  if (!spec.perService) {
    return {
      ...base,
      wireModel: model,
      baseUrlEnv: spec.baseUrlEnv,
      keyEnv: spec.keyEnv,
      ...(spec.structuredOutputEnv === undefined ? {} : { structuredOutputEnv: spec.structuredOutputEnv }),
    };
  }
  const parts = serviceOf(model);
  if (parts === undefined) throw new RangeError(`${vendor}:${model} names no <service>/<model>`);
  const stem = serviceEnvStem(parts.service);
  return {
    ...base,
    wireModel: parts.model,
    baseUrlEnv: [`${stem}_BASE_URL`],
    keyEnv: [`${stem}_API_KEY`],
    structuredOutputEnv: `${stem}_STRUCTURED_OUTPUT`,
  };
}

/**
 * The entry of `entries` that holds for `id`: its own, else the wildcard (`llamacpp:*`,
 * `openai-compatible:local/*`: a key ending in `*` holds every id it is the start of) with the
 * longest start, so an exact entry wins over any wildcard and a narrower wildcard over a wider.
 * Returns the key that matched with the value.
 */
export function matchById<T>(
  entries: ReadonlyMap<string, T> | Readonly<Record<string, T>>,
  id: string,
): { key: string; value: T } | undefined {
  const map = entries instanceof Map ? entries : undefined;
  const record = map ? undefined : (entries as Readonly<Record<string, T>>);
  const get = (key: string): T | undefined =>
    map ? map.get(key) : Object.hasOwn(record!, key) ? record![key] : undefined;
  const own = get(id);
  if (own !== undefined) return { key: id, value: own };
  let best: { key: string; value: T } | undefined;
  for (const key of map ? map.keys() : Object.keys(record!)) {
    if (!key.endsWith('*')) continue;
    const start = key.slice(0, -1);
    if (!id.startsWith(start) || (best !== undefined && best.key.length >= key.length)) continue;
    best = { key, value: get(key)! };
  }
  return best;
}
