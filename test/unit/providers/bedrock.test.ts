/**
 * The Bedrock adapter: the Converse request it builds, the answer it reads back (text, stop
 * reason, usage and price), and the errors it maps, with the real AWS SDK against the local
 * Converse fake.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { completionOf, converseInput, mapStopReason } from '../../../shared/lib/providers/bedrock.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import {
  createProvider,
  defaultBedrockModel,
  detectDefaultBackend,
} from '../../../shared/lib/providers/registry.js';
import { ProviderError } from '../../../shared/model/errors.js';
import type { CompletionRequest } from '../../../shared/model/provider.js';
import { MissingCredentialsError } from '../../../shared/model/provider-errors.js';
import {
  type BedrockFake,
  bedrockError,
  bedrockSequence,
  startBedrockFake,
} from '../../fakes/bedrock-fake.js';
import { snapshotEnv } from '../../helpers.js';

const SCHEMA = {
  name: 'verdict',
  schema: { type: 'object', properties: { label: { type: 'string' } }, required: ['label'] },
};

const request = (overrides: Partial<CompletionRequest> = {}): CompletionRequest => ({
  model: 'us.amazon.nova-lite-v1:0',
  prompt: 'Is this a cat?',
  ...overrides,
});

describe('the Converse request', () => {
  it('carries the system prompt, the turns, maxTokens, temperature and the forced tool', () => {
    const input = converseInput(
      request({
        system: 'You judge.',
        history: [
          { role: 'user', content: 'first' },
          { role: 'assistant', content: 'not JSON' },
        ],
        temperature: 0,
        maxTokens: 300,
        jsonSchema: SCHEMA,
      }),
    );
    expect(input).toEqual({
      modelId: 'us.amazon.nova-lite-v1:0',
      system: [{ text: 'You judge.' }],
      messages: [
        { role: 'user', content: [{ text: 'first' }] },
        { role: 'assistant', content: [{ text: 'not JSON' }] },
        { role: 'user', content: [{ text: 'Is this a cat?' }] },
      ],
      inferenceConfig: { maxTokens: 300, temperature: 0 },
      toolConfig: {
        tools: [
          {
            toolSpec: {
              name: 'verdict',
              description: expect.any(String),
              inputSchema: { json: SCHEMA.schema },
            },
          },
        ],
        toolChoice: { tool: { name: 'verdict' } },
      },
    });
  });

  it('sends a default maxTokens, no temperature unless asked, and no tool in `none` mode', () => {
    const input = converseInput(request({ jsonSchema: SCHEMA }), 'none');
    expect(input.inferenceConfig).toEqual({ maxTokens: 4096 });
    expect(input.toolConfig).toBeUndefined();
    expect(input.system).toBeUndefined();
  });
});

describe('the Converse answer', () => {
  const prices = EMBEDDED_PRICES;

  it('reads the forced tool input as the answer, with all input tokens counted and priced', () => {
    const completion = completionOf(
      {
        $metadata: {},
        output: {
          message: {
            role: 'assistant',
            content: [
              { text: 'Thinking aloud.' },
              { toolUse: { toolUseId: 't1', name: 'verdict', input: { label: 'TP' } } },
            ],
          },
        },
        stopReason: 'tool_use',
        usage: {
          inputTokens: 1000,
          outputTokens: 200,
          totalTokens: 1000 + 200 + 4000 + 500,
          cacheReadInputTokens: 4000,
          cacheWriteInputTokens: 500,
        },
        metrics: { latencyMs: 10 },
      },
      request({ jsonSchema: SCHEMA }),
      'bedrock:us.amazon.nova-lite-v1:0',
      12,
      prices,
    );
    expect(completion.text).toBe('{"label":"TP"}');
    expect(completion.finishReason).toBe('stop');
    // inputTokens leaves out cache reads and writes; ours counts every input token.
    expect(completion.usage).toEqual({ input: 5500, output: 200, cached: 4000, cacheWrite5m: 500 });
    // Nova Lite: $0.06 per 1M fresh input (and cache writes, which it prices no higher), $0.015 cached, $0.24 output.
    expect(completion.costUsd).toBeCloseTo((1500 * 0.06 + 4000 * 0.015 + 200 * 0.24) / 1e6, 12);
    expect(completion.priced).toBeUndefined();
  });

  it('splits cache writes by lifetime when cacheDetails says, and prices them as writes', () => {
    const completion = completionOf(
      {
        $metadata: {},
        output: { message: { role: 'assistant', content: [{ text: 'ok' }] } },
        stopReason: 'end_turn',
        usage: {
          inputTokens: 100,
          outputTokens: 10,
          totalTokens: 1110,
          cacheWriteInputTokens: 1000,
          cacheDetails: [{ ttl: '1h', inputTokens: 400 }],
        },
        metrics: { latencyMs: 1 },
      },
      request(),
      'bedrock:anthropic.claude-3-5-haiku-20241022-v1:0',
      1,
      prices,
    );
    expect(completion.usage).toEqual({
      input: 1100,
      output: 10,
      cached: 0,
      cacheWrite5m: 600,
      cacheWrite1h: 400,
    });
    // Claude 3.5 Haiku on Bedrock: $0.80 input, $1.00 per 1M five-minute cache writes, $4 output;
    // no one-hour write price in the table, so those bill at the input price.
    expect(completion.costUsd).toBeCloseTo((100 * 0.8 + 600 * 1 + 400 * 0.8 + 10 * 4) / 1e6, 12);
  });

  it('joins the text blocks of a plain answer', () => {
    const completion = completionOf(
      {
        $metadata: {},
        output: { message: { role: 'assistant', content: [{ text: 'Yes, ' }, { text: 'a cat.' }] } },
        stopReason: 'max_tokens',
        usage: { inputTokens: 10, outputTokens: 3, totalTokens: 13 },
        metrics: { latencyMs: 1 },
      },
      request(),
      'bedrock:unknown-model',
      1,
      prices,
    );
    expect(completion.text).toBe('Yes, a cat.');
    expect(completion.finishReason).toBe('length');
    expect(completion.costUsd).toBe(0);
    expect(completion.priced).toBe(false);
  });

  it('fails a response without a message as malformed (retryable)', () => {
    const malformed = () =>
      completionOf({ $metadata: {}, output: undefined } as never, request(), 'bedrock:x', 1, prices);
    expect(malformed).toThrow(ProviderError);
    expect(malformed).toThrow(/malformed response/);
  });

  it.each([
    ['end_turn', false, 'stop'],
    ['stop_sequence', false, 'stop'],
    ['tool_use', true, 'stop'],
    ['tool_use', false, 'other'],
    ['max_tokens', false, 'length'],
    ['model_context_window_exceeded', false, 'length'],
    ['guardrail_intervened', false, 'refusal'],
    ['content_filtered', false, 'refusal'],
    [undefined, false, 'other'],
  ] as const)('maps stopReason %s (tool answered: %s) to %s', (reason, tool, expected) => {
    expect(mapStopReason(reason, tool)).toBe(expected);
  });
});

describe('createProvider("bedrock:…") against the Converse fake', () => {
  let fake: BedrockFake;
  let restore: () => void;
  beforeAll(async () => {
    fake = await startBedrockFake();
    restore = snapshotEnv();
    // The SDK's credential chain reads these; the fake checks no signature.
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_SESSION_TOKEN: 'test',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    });
    delete process.env.AWS_PROFILE;
  });
  afterAll(async () => {
    restore();
    await fake.close();
  });
  beforeEach(() => {
    fake.reset();
    fake.setHandler();
  });

  const provider = (id = 'bedrock:us.amazon.nova-lite-v1:0', env: NodeJS.ProcessEnv = fake.env) =>
    createProvider(id, { env, prices: EMBEDDED_PRICES });

  it('POSTs to /model/{id}/converse, signed, and reads the tool answer back, priced', async () => {
    const completion = await provider().complete(request({ model: '', system: 'judge', jsonSchema: SCHEMA }));
    expect(fake.requests).toHaveLength(1);
    const [sent] = fake.requests;
    expect(sent?.path).toBe('/model/us.amazon.nova-lite-v1%3A0/converse');
    expect(sent?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=test\/\d{8}\/us-east-1\/bedrock\//,
    );
    expect(sent?.body.toolConfig.toolChoice).toEqual({ tool: { name: 'verdict' } });
    expect(sent?.body.system).toEqual([{ text: 'judge' }]);
    expect(completion).toMatchObject({
      text: '{"label":"TP","reason":"fake"}',
      finishReason: 'stop',
      providerId: 'bedrock:us.amazon.nova-lite-v1:0',
      simulated: false,
    });
    expect(completion.costUsd).toBeGreaterThan(0);
  });

  it.each([
    ['ThrottlingException', 'rate_limit'],
    ['ServiceUnavailableException', 'server'],
    ['ModelNotReadyException', 'server'],
    ['InternalServerException', 'server'],
  ])('%s is transient (%s, retryable)', async (name, kind) => {
    fake.setHandler(bedrockSequence(bedrockError(name)));
    const failed = await provider()
      .complete(request())
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ProviderError);
    expect(failed).toMatchObject({ kind, retryable: true, permanent: false });
    expect((failed as Error).message).toContain(name);
  });

  it.each([
    [
      'AccessDeniedException',
      'auth',
      /enable model access for us\.amazon\.nova-lite-v1:0 in the Bedrock console/i,
    ],
    ['ValidationException', 'bad_request', /ValidationException \(HTTP 400\)/],
    ['ResourceNotFoundException', 'bad_request', /check the model id/i],
  ])('%s is permanent (%s) and says what to do', async (name, kind, says) => {
    fake.setHandler(bedrockSequence(bedrockError(name, `fake ${name} message`)));
    const failed = await provider()
      .complete(request())
      .catch((e: unknown) => e);
    expect(failed).toMatchObject({ kind, retryable: false, permanent: true });
    expect((failed as Error).message).toMatch(says);
    expect((failed as Error).message).toContain(`fake ${name} message`);
  });

  it('suggests an inference profile when the model has no on-demand throughput', async () => {
    fake.setHandler(
      bedrockSequence(
        bedrockError(
          'ValidationException',
          "Invocation of model ID anthropic.claude-sonnet-4-20250514-v1:0 with on-demand throughput isn't supported.",
        ),
      ),
    );
    const failed = await provider('bedrock:anthropic.claude-sonnet-4-20250514-v1:0')
      .complete(request({ model: '' }))
      .catch((e: unknown) => e);
    expect((failed as Error).message).toContain('bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0');
  });

  it("gives the caller's abort reason back when the caller stops waiting, as it is", async () => {
    fake.setHandler(() => ({ hang: true }));
    const controller = new AbortController();
    const pending = provider().complete(request(), controller.signal);
    await vi.waitFor(() => expect(fake.requests).toHaveLength(1));
    const reason = new Error('run stopped');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('refuses every batch with the reason, so the batch lane sends its calls synchronously', async () => {
    const api = provider().batch;
    await expect(api?.submit([{ customId: 'a', request: request() }], 'label')).rejects.toThrow(
      /Bedrock batch inference is not supported.*made synchronously/,
    );
    expect(fake.requests).toHaveLength(0);
  });
});

describe('the bedrock vendor in the registry', () => {
  it('needs a region, and says how to set it', () => {
    const make = () => createProvider('bedrock:amazon.nova-lite-v1:0', { env: {}, prices: EMBEDDED_PRICES });
    expect(make).toThrow(MissingCredentialsError);
    expect(make).toThrow(/needs an AWS region: set AWS_REGION/);
  });

  it('takes AWS_DEFAULT_REGION too, and needs no key', () => {
    const made = createProvider('bedrock:amazon.nova-lite-v1:0', {
      env: { AWS_DEFAULT_REGION: 'eu-west-1' },
      prices: EMBEDDED_PRICES,
    });
    expect(made.id).toBe('bedrock:amazon.nova-lite-v1:0');
  });

  it('rejects an unknown BEDROCK_STRUCTURED_OUTPUT', () => {
    expect(() =>
      createProvider('bedrock:x', {
        env: { AWS_REGION: 'us-east-1', BEDROCK_STRUCTURED_OUTPUT: 'json' },
        prices: EMBEDDED_PRICES,
      }),
    ).toThrow(/BEDROCK_STRUCTURED_OUTPUT must be tool or none/);
  });

  it.each([
    [{ AWS_ACCESS_KEY_ID: 'a', AWS_REGION: 'us-west-2' }, 'bedrock:us.amazon.nova-lite-v1:0'],
    [{ AWS_PROFILE: 'work', AWS_DEFAULT_REGION: 'eu-central-1' }, 'bedrock:eu.amazon.nova-lite-v1:0'],
    [{ AWS_PROFILE: 'work', AWS_REGION: 'ap-northeast-1' }, 'bedrock:apac.amazon.nova-lite-v1:0'],
    [{ AWS_PROFILE: 'work', AWS_REGION: 'ca-central-1' }, 'bedrock:amazon.nova-lite-v1:0'],
    [{ AWS_ACCESS_KEY_ID: 'a' }, 'sim:gold'],
    [{ AWS_REGION: 'us-east-1' }, 'sim:gold'],
    [
      { AWS_ACCESS_KEY_ID: 'a', AWS_REGION: 'us-east-1', GEMINI_API_KEY: 'z' },
      'gemini:gemini-2.0-flash-lite',
    ],
  ])('detectDefaultBackend(%o) → %s', (env, expected) => {
    expect(detectDefaultBackend(env, { bedrock: true })).toBe(expected);
  });

  it('leaves Bedrock out unless asked (the local cloud replaces the AWS credentials)', () => {
    expect(detectDefaultBackend({ AWS_ACCESS_KEY_ID: 'a', AWS_REGION: 'us-east-1' })).toBe('sim:gold');
  });

  it('prices the quickstart default', () => {
    const model = defaultBedrockModel({ AWS_PROFILE: 'p', AWS_REGION: 'us-east-1' });
    expect(model && EMBEDDED_PRICES.models[model]).toBeDefined();
  });
});
