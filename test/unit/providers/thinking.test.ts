import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseAnswer } from '../../../shared/family/answer.js';
import { ask } from '../../../shared/family/ask.js';
import type { TaskContext } from '../../../shared/family/types.js';
import { GEMINI_THINKING_BUDGET } from '../../../shared/lib/providers/gemini.js';
import { OPENAI_REASONING_HEADROOM } from '../../../shared/lib/providers/openai.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import type { LlmProvider } from '../../../shared/model/provider.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';

const fake = useVendorFake();
const provider = (id: string) => createProvider(id, { env: fake.env, prices: EMBEDDED_PRICES });

/** What gemini-2.5-pro answers when its thoughts used the whole output budget: no parts at all. */
const GEMINI_THOUGHT_OUT = JSON.stringify({
  candidates: [{ content: { role: 'model' }, finishReason: 'MAX_TOKENS', index: 0 }],
  usageMetadata: {
    promptTokenCount: 120,
    totalTokenCount: 1_344,
    thoughtsTokenCount: 1_224,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: 120 }],
  },
  modelVersion: 'gemini-2.5-pro',
  responseId: 'thought-out',
});

/** An OpenAI reasoning model cut off while reasoning: empty content, finish `length`. */
const OPENAI_THOUGHT_OUT = JSON.stringify({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'o3',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: '', refusal: null, annotations: [] },
      logprobs: null,
      finish_reason: 'length',
    },
  ],
  usage: {
    prompt_tokens: 50,
    completion_tokens: 4_146,
    total_tokens: 4_196,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 4_146 },
  },
});

describe('Gemini thinking settings', () => {
  it('2.5 Pro: a bounded thinking budget, and the output budget raised to cover it', async () => {
    await provider('gemini:gemini-2.5-pro').complete({
      model: 'gemini-2.5-pro',
      prompt: 'hi',
      maxTokens: 200,
    });

    expect(fake.requests[0]!.body.generationConfig).toMatchObject({
      thinkingConfig: { thinkingBudget: GEMINI_THINKING_BUDGET },
      maxOutputTokens: 200 + GEMINI_THINKING_BUDGET,
    });
  });

  it('models that do not think by default are left alone', async () => {
    for (const model of ['gemini-2.0-flash-lite', 'gemini-2.5-flash-lite']) {
      fake.reset();
      await provider(`gemini:${model}`).complete({ model, prompt: 'hi', maxTokens: 200 });
      const config = fake.requests[0]!.body.generationConfig;
      expect(config.thinkingConfig).toBeUndefined();
      expect(config.maxOutputTokens).toBe(200);
    }
  });

  it('batch requests get the same settings', async () => {
    await provider('gemini:gemini-2.5-flash').batch!.submit(
      [{ customId: 'c1', request: { model: '', prompt: 'hi', maxTokens: 100 } }],
      'test',
    );
    expect(fake.batches[0]!.entries[0]!.call.body.generationConfig).toMatchObject({
      thinkingConfig: { thinkingBudget: GEMINI_THINKING_BUDGET },
      maxOutputTokens: 100 + GEMINI_THINKING_BUDGET,
    });
  });

  it('a MAX_TOKENS answer with no parts after thinking is flagged as spent on thinking', async () => {
    fake.setHandler(() => ({ rawBody: GEMINI_THOUGHT_OUT }));

    const completion = await provider('gemini:gemini-2.5-pro').complete({
      model: 'gemini-2.5-pro',
      prompt: 'hi',
      maxTokens: 200,
    });

    expect(completion).toMatchObject({ text: '', finishReason: 'length', thinkingExhausted: true });
    expect(completion.usage).toEqual({ input: 120, output: 1_224, cached: 0, reasoning: 1_224 });
  });

  it('a MAX_TOKENS answer that has text is an ordinary truncation', async () => {
    fake.setHandler(() => ({ text: '{"label":', finish: 'length' }));

    const completion = await provider('gemini:gemini-2.5-pro').complete({
      model: 'gemini-2.5-pro',
      prompt: 'hi',
    });

    expect(completion.finishReason).toBe('length');
    expect(completion.thinkingExhausted).toBeUndefined();
  });
});

describe('OpenAI reasoning settings', () => {
  it('o3 and gpt-5: low effort, no temperature, and max_completion_tokens covering reasoning and answer', async () => {
    for (const model of ['o3', 'gpt-5-mini']) {
      fake.reset();
      await provider(`openai:${model}`).complete({ model, prompt: 'hi', temperature: 0, maxTokens: 50 });
      const body = fake.requests[0]!.body;
      expect(body.reasoning_effort).toBe('low');
      expect(body.max_completion_tokens).toBe(50 + OPENAI_REASONING_HEADROOM);
      expect(body).not.toHaveProperty('temperature');
      expect(body).not.toHaveProperty('max_tokens');
    }
  });

  it('chat models keep their temperature and budget, with no reasoning effort', async () => {
    for (const model of ['gpt-4o-mini', 'gpt-5-chat-latest']) {
      fake.reset();
      await provider(`openai:${model}`).complete({ model, prompt: 'hi', temperature: 0, maxTokens: 50 });
      const body = fake.requests[0]!.body;
      expect(body).not.toHaveProperty('reasoning_effort');
      expect(body.max_completion_tokens).toBe(50);
      expect(body.temperature).toBe(0);
    }
  });

  it('an empty answer cut off after reasoning is flagged as spent on thinking', async () => {
    fake.setHandler(() => ({ rawBody: OPENAI_THOUGHT_OUT }));

    const completion = await provider('openai:o3').complete({ model: 'o3', prompt: 'hi', maxTokens: 50 });

    expect(completion).toMatchObject({ text: '', finishReason: 'length', thinkingExhausted: true });
    expect(completion.usage.reasoning).toBe(4_146);
  });
});

describe('ask: an answer spent on thinking is truncated, with no repair call', () => {
  const ctx = {
    call: (_stage: string, p: LlmProvider, request: Parameters<LlmProvider['complete']>[0]) =>
      p.complete(request),
  } as unknown as TaskContext;
  const parse = (text: string) => parseAnswer(text, z.object({ label: z.string() }));

  it('fails the item as truncated, saying the budget went to thinking', async () => {
    fake.setHandler(() => ({ rawBody: GEMINI_THOUGHT_OUT }));
    const gemini = provider('gemini:gemini-2.5-pro');

    const asked = await ask(
      ctx,
      'judge',
      gemini,
      { model: 'gemini-2.5-pro', prompt: 'hi', maxTokens: 200 },
      parse,
      () => 'fix it',
    );

    expect(asked).toMatchObject({ ok: false, failure: { kind: 'truncated' } });
    expect(!asked.ok && asked.failure.message).toMatch(/output budget was spent on thinking/);
    expect(fake.requests).toHaveLength(1);
  });

  it('an unparseable answer that is not spent on thinking still gets its repair call', async () => {
    fake.setHandler(() => ({ text: 'no json here' }));

    await ask(
      ctx,
      'judge',
      provider('gemini:gemini-2.5-pro'),
      { model: 'gemini-2.5-pro', prompt: 'hi' },
      parse,
      () => 'fix it',
    );

    expect(fake.requests).toHaveLength(2);
  });
});
