import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import {
  costOf,
  EMBEDDED_PRICES,
  loadPriceTable,
  PriceTableError,
} from '../../../shared/lib/providers/pricing.js';
import {
  createProvider,
  detectDefaultBackend,
  ProviderPool,
} from '../../../shared/lib/providers/registry.js';
import { MissingCredentialsError, UnknownProviderError } from '../../../shared/model/provider-errors.js';
import { resolveProviderId } from '../../../shared/model/provider-ids.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { startVendorFake } from '../../fakes/vendor-fake.js';
import { REPO, suite } from '../../helpers.js';

describe('resolveProviderId', () => {
  it.each([
    ['gas_gemini20_flash_lite', 'gemini', 'gemini-2.0-flash-lite'],
    ['gas_gemini20_flash', 'gemini', 'gemini-2.0-flash'],
    ['gemini-2.0-flash-lite', 'gemini', 'gemini-2.0-flash-lite'],
    ['gpt-4o-mini', 'openai', 'gpt-4o-mini'],
    ['gpt-4o', 'openai', 'gpt-4o'],
    ['gpt-4.1', 'openai', 'gpt-4.1'],
    ['gpt-4.1-nano', 'openai', 'gpt-4.1-nano'],
    ['o3', 'openai', 'o3'],
    ['o3-2025-04-16', 'openai', 'o3-2025-04-16'],
    ['claude-3-5-haiku-latest', 'anthropic', 'claude-3-5-haiku-latest'],
    ['claude-opus-4.5', 'anthropic', 'claude-opus-4-5'],
    ['openai:gpt-4o-mini', 'openai', 'gpt-4o-mini'],
    ['sim:gold', 'sim', 'gold'],
    ['ollama:llama3.1:8b', 'ollama', 'llama3.1:8b'],
    ['vllm:mistralai/Mistral-7B-Instruct-v0.3', 'vllm', 'mistralai/Mistral-7B-Instruct-v0.3'],
  ])('resolves %s to %s:%s', (input, vendor, model) => {
    expect(resolveProviderId(input)).toEqual({ vendor, model, id: `${vendor}:${model}` });
  });

  it('rejects an unknown vendor, naming the valid ones', () => {
    expect(() => resolveProviderId('mistral:large')).toThrow(UnknownProviderError);
    expect(() => resolveProviderId('mistral:large')).toThrow(
      /openai, anthropic, gemini, bedrock, sim, openrouter/,
    );
  });

  it('rejects a bare name whose vendor cannot be inferred', () => {
    expect(() => resolveProviderId('llama3')).toThrow(UnknownProviderError);
  });
});

describe('createProvider', () => {
  const prices = EMBEDDED_PRICES;

  it('names the variable to set when a key is missing', () => {
    const make = () => createProvider('openai:gpt-4o-mini', { env: {}, prices });

    expect(make).toThrow(MissingCredentialsError);
    expect(make).toThrow('openai:gpt-4o-mini needs OPENAI_API_KEY (or use a sim: backend)');
  });

  it('names both Gemini variables and vLLM base URL', () => {
    expect(() => createProvider('gas_gemini20_flash_lite', { env: {}, prices })).toThrow(
      'gemini:gemini-2.0-flash-lite needs GEMINI_API_KEY or GOOGLE_API_KEY',
    );
    expect(() => createProvider('vllm:mistral', { env: {}, prices })).toThrow(/VLLM_BASE_URL/);
    const error = (() => {
      try {
        createProvider('anthropic:claude-sonnet-4-0', { env: {}, prices });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toMatchObject({ name: 'MissingCredentialsError', variables: ['ANTHROPIC_API_KEY'] });
  });

  it('builds each vendor from env, with ids resolved from aliases', () => {
    const env = { OPENAI_API_KEY: 'a', ANTHROPIC_API_KEY: 'b', GOOGLE_API_KEY: 'c', TOGETHER_API_KEY: 'd' };

    expect(createProvider('gpt-4o-mini', { env, prices }).id).toBe('openai:gpt-4o-mini');
    expect(createProvider('claude-3-5-haiku-latest', { env, prices }).id).toBe(
      'anthropic:claude-3-5-haiku-latest',
    );
    expect(createProvider('gas_gemini20_flash', { env, prices }).id).toBe('gemini:gemini-2.0-flash');
    expect(createProvider('together:meta-llama/Llama-3-8b', { env, prices }).id).toBe(
      'together:meta-llama/Llama-3-8b',
    );
    expect(createProvider('ollama:llama3.1', { env: {}, prices }).id).toBe('ollama:llama3.1');
    expect(createProvider('sim:gold', { env: {}, prices }).simulated).toBe(true);
  });
});

describe('ProviderPool', () => {
  const pool = () => new ProviderPool({ env: { OPENAI_API_KEY: 'k' }, prices: EMBEDDED_PRICES });

  it('builds each backend once, and a simulator once per sim settings', () => {
    const providers = pool();
    expect(providers.get('openai:gpt-4o-mini')).toBe(providers.get('openai:gpt-4o-mini'));
    expect(providers.get('sim:gold', { noise: 0.1 })).toBe(providers.get('sim:gold', { noise: 0.1 }));
    expect(providers.get('sim:gold', { noise: 0.1 })).not.toBe(providers.get('sim:gold', { noise: 0.3 }));
  });

  it('require() fails at once on a backend without its key', () => {
    expect(() => pool().require(['openai:gpt-4o-mini', 'anthropic:claude-3-5-haiku-latest'])).toThrow(
      MissingCredentialsError,
    );
    expect(() => pool().require(['openai:gpt-4o-mini', 'sim:gold'])).not.toThrow();
  });

  it("builds a client per request timeout (a run's run.timeoutMs), and times requests out at it", async () => {
    const fake = await startVendorFake(() => ({ hangMs: 5_000 }));
    try {
      const providers = new ProviderPool({ env: fake.env, prices: EMBEDDED_PRICES });
      const short = providers.get('openai:gpt-4o-mini', undefined, 100);
      expect(providers.get('openai:gpt-4o-mini', undefined, 100)).toBe(short);
      expect(providers.get('openai:gpt-4o-mini')).not.toBe(short);

      const error = await short.complete({ model: 'gpt-4o-mini', prompt: 'x' }).catch((e: unknown) => e);
      expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    } finally {
      await fake.close();
    }
  });
});

describe('run.timeoutMs', () => {
  it('is a run setting: it does not change the run id (a run resumes under another timeout)', async () => {
    const prepare = (run: Record<string, unknown>) =>
      prepareRun({
        suite: suite({ run }),
        prompts: new FolderBlobStore(REPO),
        datasetKey: 'data.csv',
        datasetVersion: 'v1',
        reportPrefix: '',
      });
    const plain = await prepare({});
    const slow = await prepare({ timeoutMs: 180_000 });
    expect(slow.suite.run.timeoutMs).toBe(180_000);
    expect(slow.runId).toBe(plain.runId);
    expect(() => suite({ run: { timeoutMs: 0 } })).toThrow(/timeoutMs/);
  });
});

describe('detectDefaultBackend', () => {
  it.each([
    [{ OPENAI_API_KEY: 'x', ANTHROPIC_API_KEY: 'y' }, 'openai:gpt-4o-mini'],
    [{ ANTHROPIC_API_KEY: 'y', GEMINI_API_KEY: 'z' }, 'anthropic:claude-3-5-haiku-latest'],
    [{ GEMINI_API_KEY: 'z' }, 'gemini:gemini-2.0-flash-lite'],
    [{ GOOGLE_API_KEY: 'z' }, 'gemini:gemini-2.0-flash-lite'],
    [{ OPENAI_API_KEY: '' }, 'sim:gold'],
    [{}, 'sim:gold'],
  ])('picks from %o → %s', (env, expected) => {
    expect(detectDefaultBackend(env)).toBe(expected);
  });
});

describe('price table', () => {
  const writeJson = (value: unknown) => {
    const path = join(mkdtempSync(join(tmpdir(), 'assay-prices-')), 'prices.json');
    writeFileSync(path, JSON.stringify(value));
    return path;
  };

  it('embeds a dated USD table covering the seed models', () => {
    expect(EMBEDDED_PRICES).toMatchObject({ asOf: '2026-11-01', currency: 'USD', unit: 'per 1M tokens' });
    for (const id of [
      'openai:gpt-4o-mini',
      'openai:o3-2025-04-16',
      'openai:o4-mini',
      'anthropic:claude-opus-4-1',
      'gemini:gemini-2.0-flash-lite',
      'gemini:gemini-2.5-flash-lite',
    ]) {
      expect(EMBEDDED_PRICES.models[id], id).toBeDefined();
    }
    expect(EMBEDDED_PRICES.models['gemini:gemini-2.0-flash-lite']).toMatchObject({
      input: 0.075,
      output: 0.3,
    });
  });

  it('bills cached input at the cached price and the rest at the input price', () => {
    const cost = costOf(EMBEDDED_PRICES, 'openai:gpt-4o-mini', {
      input: 1_000_000,
      cached: 400_000,
      output: 100_000,
    });

    expect(cost.priced).toBe(true);
    expect(cost.usd).toBeCloseTo(0.6 * 0.15 + 0.4 * 0.075 + 0.1 * 0.6, 10);
  });

  it('reports an unknown model as unpriced at zero cost', () => {
    expect(costOf(EMBEDDED_PRICES, 'vllm:mistral', { input: 10, cached: 0, output: 10 })).toEqual({
      usd: 0,
      priced: false,
    });
  });

  it('merges an override file over the embedded table, field by field', () => {
    const path = writeJson({
      asOf: '2027-01-15',
      models: {
        'openai:gpt-4o-mini': { output: 0.5 },
        'vllm:mistral-7b': { input: 0.02, output: 0.04 },
      },
    });

    const table = loadPriceTable(path, {});

    expect(table.asOf).toBe('2027-01-15');
    expect(table.models['openai:gpt-4o-mini']).toEqual({ input: 0.15, cachedInput: 0.075, output: 0.5 });
    expect(table.models['vllm:mistral-7b']).toEqual({ input: 0.02, output: 0.04 });
    expect(table.models['openai:gpt-4o']).toEqual(EMBEDDED_PRICES.models['openai:gpt-4o']);
    expect(EMBEDDED_PRICES.models['openai:gpt-4o-mini']?.output).toBe(0.6);
  });

  it('reads the override path from ASSAY_PRICES when none is given', () => {
    const path = writeJson({ models: { 'ollama:llama3.1': { input: 0, output: 0 } } });

    expect(loadPriceTable(undefined, { ASSAY_PRICES: path }).models['ollama:llama3.1']).toBeDefined();
    expect(loadPriceTable(undefined, {})).toBe(EMBEDDED_PRICES);
  });

  it('rejects an override with the wrong shape, naming the file', () => {
    const path = writeJson({ models: { 'openai:gpt-4o': { input: 'cheap' } } });
    const newModelWithoutOutput = writeJson({ models: { 'openai:gpt-9': { input: 1 } } });

    expect(() => loadPriceTable(path, {})).toThrow(PriceTableError);
    expect(() => loadPriceTable(path, {})).toThrow(path);
    expect(() => loadPriceTable(newModelWithoutOutput, {})).toThrow(/needs both input and output/);
    expect(() => loadPriceTable('/nonexistent/prices.json', {})).toThrow(/cannot read price override/);
  });
});
