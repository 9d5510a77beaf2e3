import { describe, expect, it, vi } from 'vitest';
import { OPENAI_REASONING_HEADROOM } from '../../../shared/lib/providers/openai.js';
import { costOf, EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import { ProviderError } from '../../../shared/model/errors.js';
import type { CompletionRequest, JsonSchemaSpec, LlmProvider } from '../../../shared/model/provider.js';
import { fakeClock, requestsSeen } from '../../fakes/fake-clock.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';
import { DEFAULT_FAKE_TEXT, sequence, startVendorFake } from '../../fakes/vendor-fake.js';

const VERDICT: JsonSchemaSpec = {
  name: 'verdict',
  schema: {
    type: 'object',
    properties: { label: { type: 'string', enum: ['TP', 'FP1', 'FP2', 'FP3'] }, reason: { type: 'string' } },
    required: ['label', 'reason'],
    additionalProperties: false,
  },
};

const BACKENDS = [
  { id: 'openai:gpt-4o-mini', vendor: 'openai' },
  { id: 'anthropic:claude-3-5-haiku-latest', vendor: 'anthropic' },
  { id: 'gemini:gemini-2.0-flash-lite', vendor: 'gemini' },
] as const;

const fake = useVendorFake();

function provider(id: string, timeoutMs = 5_000): LlmProvider {
  return createProvider(id, { env: fake.env, prices: EMBEDDED_PRICES, timeoutMs });
}

function request(id: string, extra: Partial<CompletionRequest> = {}): CompletionRequest {
  return {
    model: id.slice(id.indexOf(':') + 1),
    system: 'You judge edits.',
    prompt: 'src: a cat / tgt: the cat',
    ...extra,
  };
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

describe.each(BACKENDS)('$vendor adapter against the real SDK', ({ id, vendor }) => {
  it('returns normalised text, usage with cached tokens, and cost from the price table', async () => {
    fake.setHandler(() => ({ text: DEFAULT_FAKE_TEXT, usage: { input: 1_000, output: 200, cached: 400 } }));

    const completion = await provider(id).complete(request(id));

    expect(completion.text).toBe(DEFAULT_FAKE_TEXT);
    expect(completion.finishReason).toBe('stop');
    expect(completion.usage).toEqual({ input: 1_000, output: 200, cached: 400 });
    const price = EMBEDDED_PRICES.models[id];
    expect(price).toBeDefined();
    const expected = (600 * price!.input + 400 * price!.cachedInput! + 200 * price!.output) / 1e6;
    expect(completion.costUsd).toBeCloseTo(expected, 12);
    expect(completion.costUsd).toBeCloseTo(costOf(EMBEDDED_PRICES, id, completion.usage).usd, 12);
    expect(completion).toMatchObject({ providerId: id, cached: false, simulated: false });
    expect(completion.latencyMs).toBeGreaterThan(0);
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]?.vendor).toBe(vendor);
  });

  it('sends the system prompt, history and prompt in the vendor format', async () => {
    await provider(id).complete(
      request(id, {
        history: [
          { role: 'user', content: 'first try' },
          { role: 'assistant', content: 'not json' },
        ],
        prompt: 'answer in JSON',
      }),
    );

    const sent = fake.requests[0];
    expect(sent?.promptText).toBe('first try\n\nanswer in JSON');
    expect(JSON.stringify(sent?.body)).toContain('You judge edits.');
    expect(JSON.stringify(sent?.body)).toContain('not json');
  });

  it('maps a truncated answer to finishReason length', async () => {
    fake.setHandler(() => ({ text: '{"label":"T', finish: 'length' }));

    const completion = await provider(id).complete(request(id, { maxTokens: 5 }));

    expect(completion.finishReason).toBe('length');
  });

  it('maps 401 to a permanent auth error and 400 to a permanent bad_request error', async () => {
    fake.setHandler(sequence({ status: 401 }, { status: 400 }));
    const p = provider(id);

    const auth = await failure(p.complete(request(id)));
    const bad = await failure(p.complete(request(id)));

    expect(auth).toMatchObject({ kind: 'auth', status: 401, retryable: false, providerId: id });
    expect(bad).toMatchObject({ kind: 'bad_request', status: 400, retryable: false });
  });

  it('maps 429 with retry-after seconds to a retryable rate_limit error carrying the wait', async () => {
    fake.setHandler(sequence({ status: 429, headers: { 'retry-after': '2' } }));

    const error = await failure(provider(id).complete(request(id)));

    expect(error).toMatchObject({ kind: 'rate_limit', status: 429, retryable: true, retryAfterMs: 2_000 });
  });

  it('reads retry-after-ms in preference to retry-after', async () => {
    fake.setHandler(sequence({ status: 429, headers: { 'retry-after-ms': '250', 'retry-after': '9' } }));

    const error = await failure(provider(id).complete(request(id)));

    expect(error.retryAfterMs).toBe(250);
  });

  it('maps 500 and 529 (overloaded) to retryable server errors', async () => {
    fake.setHandler(sequence({ status: 500 }, { status: 529 }));
    const p = provider(id);

    expect(await failure(p.complete(request(id)))).toMatchObject({
      kind: 'server',
      status: 500,
      retryable: true,
    });
    expect(await failure(p.complete(request(id)))).toMatchObject({
      kind: 'server',
      status: 529,
      retryable: true,
    });
  });

  it('maps a hung request to a retryable timeout error', async () => {
    fakeClock();
    fake.setHandler(sequence({ hangMs: 60_000 }));

    const error = failure(provider(id, 150).complete(request(id)));
    await requestsSeen(fake, 1);
    await vi.advanceTimersByTimeAsync(150);

    expect(await error).toMatchObject({ kind: 'timeout', retryable: true });
  });

  it('maps a 200 with a malformed JSON body to a retryable server error', async () => {
    fake.setHandler(sequence({ rawBody: '{"id": "truncated' }));

    const error = await failure(provider(id).complete(request(id)));

    expect(error).toMatchObject({ kind: 'server', status: 200, retryable: true });
    expect(error.message).toContain('malformed response');
  });

  it('maps a refused connection to a retryable network error', async () => {
    const closed = await startVendorFake();
    const env = { ...closed.env };
    await closed.close();

    const p = createProvider(id, { env, prices: EMBEDDED_PRICES, timeoutMs: 2_000 });
    const error = await failure(p.complete(request(id)));

    expect(error).toMatchObject({ kind: 'network', retryable: true });
  });

  it('throws the caller abort reason, not a retryable error, when the caller aborts', async () => {
    fakeClock();
    fake.setHandler(sequence({ hangMs: 60_000 }));
    const controller = new AbortController();
    const reason = new Error('run cancelled');

    const error = provider(id)
      .complete(request(id), controller.signal)
      .catch((e: unknown) => e);
    await requestsSeen(fake, 1);
    controller.abort(reason);

    expect(await error).toBe(reason);
  });
});

describe('structured output request shapes', () => {
  it('openai sends response_format json_schema with strict true', async () => {
    const id = 'openai:gpt-4o-mini';

    const completion = await provider(id).complete(request(id, { jsonSchema: VERDICT }));

    expect(fake.requests[0]?.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'verdict', schema: VERDICT.schema, strict: true },
    });
    expect(JSON.parse(completion.text)).toEqual({ label: 'TP', reason: 'fake' });
  });

  it('an OpenAI-compatible endpoint can fall back to json_object mode', async () => {
    const p = createProvider('vllm:mistral-7b', {
      env: { VLLM_BASE_URL: `${fake.url}/v1`, VLLM_STRUCTURED_OUTPUT: 'json_object' },
      prices: EMBEDDED_PRICES,
    });

    const completion = await p.complete({ model: 'mistral-7b', prompt: 'hi', jsonSchema: VERDICT });

    expect(fake.requests[0]?.body.response_format).toEqual({ type: 'json_object' });
    expect(fake.requests[0]?.body.max_completion_tokens).toBeUndefined();
    expect(completion.providerId).toBe('vllm:mistral-7b');
    expect(completion.costUsd).toBe(0);
  });

  it('an OpenAI-compatible endpoint gets an instruction-formatted prompt as is, on /v1/completions', async () => {
    fake.setHandler(() => ({ text: ' B', usage: { input: 21, output: 1 } }));
    const p = createProvider('vllm:mistral-7b', {
      env: { VLLM_BASE_URL: `${fake.url}/v1` },
      prices: EMBEDDED_PRICES,
    });
    const prompt = '[INST] Question: 2 + 2? [/INST]';

    const completion = await p.complete({
      model: 'mistral-7b',
      prompt,
      maxTokens: 5,
      temperature: 0,
      rawCompletion: true,
    });

    expect(fake.requests[0]?.path).toBe('/v1/completions');
    expect(fake.requests[0]?.body).toEqual({ model: 'mistral-7b', prompt, temperature: 0, max_tokens: 5 });
    expect(completion).toMatchObject({
      text: ' B',
      finishReason: 'stop',
      usage: { input: 21, output: 1, cached: 0 },
    });
  });

  it('openai sends no temperature to reasoning models and uses max_completion_tokens', async () => {
    await provider('openai:o3').complete({ model: 'o3', prompt: 'hi', temperature: 0, maxTokens: 50 });
    await provider('openai:gpt-4o').complete({
      model: 'gpt-4o',
      prompt: 'hi',
      temperature: 0,
      maxTokens: 50,
    });

    expect(fake.requests[0]?.body).not.toHaveProperty('temperature');
    // The reasoning model's budget covers its reasoning and the asked answer budget.
    expect(fake.requests[0]?.body.max_completion_tokens).toBe(50 + OPENAI_REASONING_HEADROOM);
    expect(fake.requests[1]?.body.temperature).toBe(0);
  });

  it('openai maps a refusal message to finishReason refusal', async () => {
    fake.setHandler(() => ({ text: "I can't help with that.", finish: 'refusal' }));

    const completion = await provider('openai:gpt-4o-mini').complete(request('openai:gpt-4o-mini'));

    expect(completion).toMatchObject({ finishReason: 'refusal', text: "I can't help with that." });
  });

  it('anthropic forces a single tool whose input schema is the JSON schema and returns its input as JSON', async () => {
    const id = 'anthropic:claude-3-5-haiku-latest';

    const completion = await provider(id).complete(request(id, { jsonSchema: VERDICT }));

    const body = fake.requests[0]?.body;
    expect(body.tools).toHaveLength(1);
    expect(body.tools[0]).toMatchObject({ name: 'verdict', input_schema: VERDICT.schema });
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'verdict' });
    expect(JSON.parse(completion.text)).toEqual({ label: 'TP', reason: 'fake' });
    expect(completion.finishReason).toBe('stop');
  });

  it('anthropic counts cache reads and writes into the total input tokens, writes apart', async () => {
    fake.setHandler(() => ({
      text: 'ok',
      usage: { input: 1_000, cached: 300, cacheWrite: 200, output: 10 },
    }));
    const id = 'anthropic:claude-3-5-haiku-latest';

    const completion = await provider(id).complete(request(id));

    expect(completion.usage).toEqual({ input: 1_000, cached: 300, cacheWrite5m: 200, output: 10 });
  });

  it('anthropic maps stop_reason refusal to refusal', async () => {
    fake.setHandler(() => ({ text: 'no', finish: 'refusal' }));
    const id = 'anthropic:claude-3-5-haiku-latest';

    expect((await provider(id).complete(request(id))).finishReason).toBe('refusal');
  });

  it('gemini sends responseMimeType application/json with the schema as responseJsonSchema', async () => {
    const id = 'gemini:gemini-2.0-flash-lite';

    const completion = await provider(id).complete(request(id, { jsonSchema: VERDICT, temperature: 0 }));

    const sent = fake.requests[0];
    expect(sent?.path).toBe('/v1beta/models/gemini-2.0-flash-lite:generateContent');
    expect(sent?.body.generationConfig).toMatchObject({
      responseMimeType: 'application/json',
      responseJsonSchema: VERDICT.schema,
      temperature: 0,
    });
    expect(sent?.headers['x-goog-api-key']).toBe('test-gemini-key');
    expect(JSON.parse(completion.text)).toEqual({ label: 'TP', reason: 'fake' });
  });

  it('gemini maps SAFETY to content_filter', async () => {
    fake.setHandler(() => ({ text: '', finish: 'content_filter' }));
    const id = 'gemini:gemini-2.0-flash-lite';

    expect((await provider(id).complete(request(id))).finishReason).toBe('content_filter');
  });
});
