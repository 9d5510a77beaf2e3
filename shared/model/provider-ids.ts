/**
 * Provider ids are `vendor:model`. Aliases (the names the original studies used, bare model names) resolve to them
 * here, once, at suite load; everything downstream sees only resolved ids.
 */
import { UnknownProviderError } from './provider-errors.js';
import { isVendor, serviceOf, VENDOR_TABLE, VENDORS, type Vendor, vendorSpec } from './vendors.js';

export { isVendor, VENDORS, type Vendor } from './vendors.js';

/** A `vendor:model` id as a deployment lists it (`openai:gpt-4o-mini`): one id, no separator or space inside. */
export const MODEL_ID_PATTERN = /^[a-z0-9_-]+:[^,\s]+$/;

export interface ResolvedProviderId {
  vendor: Vendor;
  model: string;
  /** `vendor:model` */
  id: string;
}

/** Names used by the seed projects and common shorthands → real ids. */
export const ALIASES: Readonly<Record<string, string>> = {
  gas_gemini20_flash_lite: 'gemini:gemini-2.0-flash-lite',
  gas_gemini20_flash: 'gemini:gemini-2.0-flash',
  // The original studies write Anthropic versions with a dot; the API's ids use a dash.
  'claude-opus-4.5': 'anthropic:claude-opus-4-5',
  'claude-opus-4.1': 'anthropic:claude-opus-4-1',
  'claude-sonnet-4.5': 'anthropic:claude-sonnet-4-5',
  'claude-haiku-4.5': 'anthropic:claude-haiku-4-5',
  sim: 'sim:gold',
};

/** Bare model names whose vendor is obvious from the name (the table's `bareNames`). */
const BARE_NAME_VENDORS: ReadonlyArray<[RegExp, Vendor]> = VENDOR_TABLE.flatMap((row) =>
  'bareNames' in row ? [[row.bareNames, row.id] as [RegExp, Vendor]] : [],
);

/** Whether the vendor's calls go through the OpenAI adapter (OpenAI itself or a compatible server). */
export function isOpenAiCompatible(vendor: Vendor): boolean {
  return vendorSpec(vendor)?.adapter === 'openai';
}

/**
 * Resolves an id or alias to `{ vendor, model, id }`. `vendor:model` is split at the first
 * colon (so `ollama:llama3.1:8b` keeps its tag); a per-service vendor's model must name its
 * service (`openai-compatible:local/llama-3`). Throws {@link UnknownProviderError} naming the
 * valid vendors when the vendor is unknown or cannot be inferred from a bare name.
 */
export function resolveProviderId(idOrAlias: string): ResolvedProviderId {
  const input = idOrAlias.trim();
  const aliased = ALIASES[input] ?? input;
  const colon = aliased.indexOf(':');
  if (colon === -1) {
    const match = BARE_NAME_VENDORS.find(([pattern]) => pattern.test(aliased));
    if (!match) {
      throw new UnknownProviderError(
        `cannot tell which vendor serves "${idOrAlias}": write it as vendor:model, vendor one of ${VENDORS.join(', ')}`,
      );
    }
    return { vendor: match[1], model: aliased, id: `${match[1]}:${aliased}` };
  }
  const vendor = aliased.slice(0, colon);
  const model = aliased.slice(colon + 1);
  if (!isVendor(vendor)) {
    throw new UnknownProviderError(
      `unknown provider vendor "${vendor}" in "${idOrAlias}": valid vendors are ${VENDORS.join(', ')}`,
    );
  }
  if (!model) throw new UnknownProviderError(`"${idOrAlias}" names no model after "${vendor}:"`);
  if (vendorSpec(vendor)?.perService && serviceOf(model) === undefined) {
    throw new UnknownProviderError(
      `"${idOrAlias}" names no service: write ${vendor}:<service>/<model> (e.g. ${vendor}:local/llama-3, which reads LOCAL_BASE_URL and LOCAL_API_KEY)`,
    );
  }
  return { vendor, model, id: `${vendor}:${model}` };
}

/**
 * A key that declares something for backends (a limit, a price): an id or alias, resolved, or a
 * wildcard ending in `*` (`llamacpp:*`, `openai-compatible:local/*`, `openai-compatible:*`) kept
 * as written once its vendor is known. Throws {@link UnknownProviderError} as
 * {@link resolveProviderId} does.
 */
export function resolveKeyOrWildcard(key: string): string {
  const text = key.trim();
  if (!text.endsWith('*')) return resolveProviderId(text).id;
  const colon = text.indexOf(':');
  const vendor = colon === -1 ? text : text.slice(0, colon);
  if (colon === -1 || !isVendor(vendor)) {
    throw new UnknownProviderError(
      `"${key}" is a wildcard of no known vendor: write it as vendor:* or vendor:prefix*, vendor one of ${VENDORS.join(', ')}`,
    );
  }
  return text;
}

/**
 * The simulator standing in for a backend (`--simulate`): `openai:gpt-4o` → `sim:gpt-4o`, priced
 * as the model it is named after; a model whose vendor the bare name does not tell keeps it
 * (`vllm:mistral-7b` → `sim:vllm:mistral-7b`). A `sim:` backend stays as it is.
 */
export function simulatedId(idOrAlias: string): string {
  const { vendor, model, id } = resolveProviderId(idOrAlias);
  if (vendor === 'sim') return id;
  const bare = BARE_NAME_VENDORS.find(([pattern]) => pattern.test(model))?.[1];
  return bare === vendor ? `sim:${model}` : `sim:${id}`;
}
