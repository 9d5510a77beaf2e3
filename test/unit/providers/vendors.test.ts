/**
 * The vendor table is the only place a vendor is declared: every row resolves as a provider id,
 * builds a provider through the registry (and, for the vendors the fake speaks, answers a real
 * SDK call at the base URL its own variable names), gets the endpoint and batch API its row
 * says, is classified by self-preference as its row says (a host or a maker) and is priced by
 * a wildcard under its price key. A new row passes these without touching another file.
 */
import { describe, expect, it } from 'vitest';
import { familyOf } from '../../../shared/lib/metrics/self-preference.js';
import { cacheKey } from '../../../shared/lib/providers/call.js';
import { costOf, EMBEDDED_PRICES, mergePrices } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import { MissingCredentialsError, UnknownProviderError } from '../../../shared/model/provider-errors.js';
import { resolveProviderId } from '../../../shared/model/provider-ids.js';
import {
  connectionOf,
  matchById,
  serviceEnvStem,
  VENDOR_TABLE,
  type Vendor,
  type VendorSpec,
} from '../../../shared/model/vendors.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';

const rows: readonly VendorSpec[] = VENDOR_TABLE;
/** A model id for a row: per-service vendors name a service first. */
const modelFor = (row: VendorSpec, model: string) => (row.perService ? `acme-box/${model}` : model);

/** The variables a row's provider is built from, pointed at `url` (keys given when it takes one). */
function envFor(row: VendorSpec, model: string, url: string): Record<string, string> {
  const how = connectionOf(row.id as Vendor, modelFor(row, model));
  const env: Record<string, string> = { AWS_REGION: 'us-east-1' };
  for (const name of how.keyEnv) env[name] = 'test-key';
  const base = how.adapter === 'openai' ? `${url}/v1` : url;
  for (const name of how.baseUrlEnv) env[name] = base;
  return env;
}

describe('every row of the vendor table', () => {
  const fake = useVendorFake();

  it.each(rows.map((row) => [row.id, row] as const))('%s: resolves, builds and answers', async (_, row) => {
    const model = modelFor(row, 'some-model');
    const id = `${row.id}:${model}`;
    expect(resolveProviderId(id)).toEqual({ vendor: row.id, model, id });

    const provider = createProvider(id, {
      env: envFor(row, 'some-model', fake.url),
      prices: EMBEDDED_PRICES,
    });
    expect(provider.id).toBe(id);
    expect(provider.simulated).toBe(row.adapter === 'sim');
    if (row.adapter === 'sim' || row.adapter === 'bedrock') return;
    expect(provider.batch !== undefined).toBe(row.batch);
    // Pointed elsewhere by its variable: the endpoint is part of its cache key.
    expect(provider.endpoint).toBeDefined();

    const completion = await provider.complete({ model, prompt: 'hello' });
    expect(completion.text).toBe('{"label":"TP","reason":"fake"}');
    expect(fake.requests).toHaveLength(1);
    // The server is sent the model as it knows it: without the service of a per-service id.
    expect(fake.requests[0]!.model).toBe('some-model');
  });

  it.each(rows.map((row) => [row.id, row] as const))(
    '%s: its default endpoint keeps cache keys bare',
    (_, row) => {
      if (row.defaultBaseUrl === undefined || row.adapter === 'sim') return;
      const env = Object.fromEntries(connectionOf(row.id as Vendor, 'm').keyEnv.map((k) => [k, 'k']));
      const provider = createProvider(`${row.id}:m`, { env, prices: EMBEDDED_PRICES });
      expect(provider.endpoint).toBeUndefined();
    },
  );

  it.each(rows.filter((row) => row.key === 'required').map((row) => [row.id, row] as const))(
    '%s: without its key, the error names the variable',
    (_, row) => {
      const how = connectionOf(row.id as Vendor, modelFor(row, 'm'));
      const make = () =>
        createProvider(`${row.id}:${modelFor(row, 'm')}`, { env: {}, prices: EMBEDDED_PRICES });
      expect(make).toThrow(MissingCredentialsError);
      expect(make).toThrow(how.keyEnv[0]!);
    },
  );

  it.each(rows.map((row) => [row.id, row] as const))(
    '%s: self-preference reads it as its row says',
    (_, row) => {
      const id = (model: string) => `${row.id}:${modelFor(row, model)}`;
      // A model name that gives its maker away decides, host or maker alike.
      expect(familyOf(id('llama-3-8b'))).toBe('meta');
      // One that does not: a maker's prefix is its maker; a host's is no maker at all.
      expect(familyOf(id('zzz-model'))).toBe(row.names === 'maker' ? (row.maker ?? row.id) : 'zzz');
    },
  );

  it.each(rows.filter((row) => row.priceKey !== undefined).map((row) => [row.id, row] as const))(
    '%s: a wildcard under its price key prices all of its models',
    (_, row) => {
      const table = mergePrices(EMBEDDED_PRICES, {
        models: { [`${row.priceKey}:*`]: { input: 1, output: 2 } },
      });
      const model = modelFor(row, 'never-priced-model');
      expect(costOf(table, `${row.id}:${model}`, { input: 1_000_000, output: 0, cached: 0 })).toEqual({
        usd: 1,
        priced: true,
      });
    },
  );
});

describe('openai-compatible:<service>/<model>', () => {
  const fake = useVendorFake();

  it('reads <SERVICE>_BASE_URL and sends the model as the server names it, keyless', async () => {
    const provider = createProvider('openai-compatible:local/llama-3', {
      env: { LOCAL_BASE_URL: `${fake.url}/v1` },
      prices: EMBEDDED_PRICES,
    });
    expect(provider.batch).toBeUndefined();
    await provider.complete({ model: 'local/llama-3', prompt: 'hello' });
    expect(fake.requests[0]!.path).toBe('/v1/chat/completions');
    expect(fake.requests[0]!.body.model).toBe('llama-3');
    // No key set: a placeholder the SDK accepts, which a keyless server ignores.
    expect(fake.requests[0]!.headers.authorization).toBe('Bearer unused');
  });

  it('sends <SERVICE>_API_KEY when it is set', async () => {
    const provider = createProvider('openai-compatible:my-box.v2/qwen2.5-7b', {
      env: { MY_BOX_V2_BASE_URL: `${fake.url}/v1`, MY_BOX_V2_API_KEY: 'box-key' },
      prices: EMBEDDED_PRICES,
    });
    await provider.complete({ model: 'my-box.v2/qwen2.5-7b', prompt: 'hello' });
    expect(fake.requests[0]!.headers.authorization).toBe('Bearer box-key');
    expect(fake.requests[0]!.body.model).toBe('qwen2.5-7b');
  });

  it('names the variable to set when the base URL is unset', () => {
    const make = () =>
      createProvider('openai-compatible:local/llama-3', { env: {}, prices: EMBEDDED_PRICES });
    expect(make).toThrow(MissingCredentialsError);
    expect(make).toThrow(/needs LOCAL_BASE_URL: set it to the server's OpenAI-compatible base URL/);
  });

  it('refuses an id without a service, saying how to write one', () => {
    expect(() => resolveProviderId('openai-compatible:llama-3')).toThrow(UnknownProviderError);
    expect(() => resolveProviderId('openai-compatible:llama-3')).toThrow(
      /openai-compatible:<service>\/<model>/,
    );
    expect(() => resolveProviderId('openai-compatible:/llama-3')).toThrow(UnknownProviderError);
  });

  it('derives the variables from the service: upper case, anything else than letters and digits as _', () => {
    expect(serviceEnvStem('local')).toBe('LOCAL');
    expect(serviceEnvStem('my-box.v2')).toBe('MY_BOX_V2');
    expect(connectionOf('openai-compatible', 'lm-studio/phi-4')).toMatchObject({
      wireModel: 'phi-4',
      baseUrlEnv: ['LM_STUDIO_BASE_URL'],
      keyEnv: ['LM_STUDIO_API_KEY'],
      structuredOutputEnv: 'LM_STUDIO_STRUCTURED_OUTPUT',
    });
  });

  it('keys the cache by service and base URL: two servers never share an answer', () => {
    const make = (id: string, env: Record<string, string>) =>
      createProvider(id, { env, prices: EMBEDDED_PRICES });
    const request = { model: 'a/llama-3', prompt: 'p' };
    const a = make('openai-compatible:a/llama-3', { A_BASE_URL: 'http://127.0.0.1:8080/v1' });
    const aElsewhere = make('openai-compatible:a/llama-3', { A_BASE_URL: 'http://127.0.0.1:9090/v1' });
    const b = make('openai-compatible:b/llama-3', { B_BASE_URL: 'http://127.0.0.1:8080/v1' });
    expect(a.endpoint).toBe('http://127.0.0.1:8080/v1');
    expect(cacheKey(a, request)).not.toBe(cacheKey(aElsewhere, request));
    expect(cacheKey(a, request)).not.toBe(cacheKey(b, { ...request, model: 'b/llama-3' }));
  });

  it('is a host: the model decides the family, never the service', () => {
    expect(familyOf('openai-compatible:local/llama-3')).toBe('meta');
    expect(familyOf('openai-compatible:openai-proxy/qwen2.5-7b')).toBe('qwen');
    expect(familyOf('openai-compatible:local/zzz-model')).toBe('zzz');
    // The simulator standing in for it: the id it stands in for decides, service dropped too.
    expect(familyOf('sim:openai-compatible:local/zzz-model')).toBe('zzz');
    expect(familyOf('sim:openai-compatible:local/llama-3')).toBe('meta');
  });
});

describe('matchById', () => {
  const entries = { 'llamacpp:*': 1, 'llamacpp:qwen*': 2, 'llamacpp:qwen2.5-7b': 3 };

  it('an exact key wins, then the narrowest wildcard', () => {
    expect(matchById(entries, 'llamacpp:qwen2.5-7b')).toEqual({ key: 'llamacpp:qwen2.5-7b', value: 3 });
    expect(matchById(entries, 'llamacpp:qwen3')).toEqual({ key: 'llamacpp:qwen*', value: 2 });
    expect(matchById(entries, 'llamacpp:gemma-3')).toEqual({ key: 'llamacpp:*', value: 1 });
    expect(matchById(entries, 'vllm:gemma-3')).toBeUndefined();
    expect(matchById(new Map(Object.entries(entries)), 'llamacpp:gemma-3')?.value).toBe(1);
  });
});
