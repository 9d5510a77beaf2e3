import { describe, expect, it } from 'vitest';
import { BATCH_DISCOUNT } from '../../../shared/lib/providers/batch.js';
import { loadPriceTable } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import type { BatchEntry, CompletionRequest } from '../../../shared/model/provider.js';
import { useVendorFake } from '../../fakes/use-vendor-fake.js';

/**
 * Each vendor's batch API through its real SDK against the HTTP fake: the requests are packed
 * in the vendor's batch format under their custom ids, the batch is polled until done, the
 * answers are parsed as the synchronous ones are and priced at the batch discount, and a
 * request that failed inside the batch comes back as failed, not lost.
 */
const fake = useVendorFake();
const prices = loadPriceTable();

const schema = {
  name: 'verdict',
  schema: {
    type: 'object',
    properties: { label: { type: 'string' } },
    required: ['label'],
    additionalProperties: false,
  },
};

function request(prompt: string): CompletionRequest {
  return { model: '', system: 'You judge edits.', prompt, temperature: 0, maxTokens: 50, jsonSchema: schema };
}

const entries: BatchEntry[] = [
  { customId: 'r1-classify-aaaa', request: request('edit one: cat') },
  { customId: 'r2-classify-bbbb', request: request('edit two: dog') },
  { customId: 'r3-classify-cccc', request: request('edit three: FAIL') },
];

const backends = ['openai:gpt-4o-mini', 'anthropic:claude-haiku-4-5', 'gemini:gemini-2.5-flash'] as const;

describe.each(backends)('%s batch API', (backend) => {
  it('packs, submits, polls and collects through the SDK; a failed request comes back failed', async () => {
    fake.setHandler((call) => {
      if (call.promptText.includes('FAIL')) return { status: 500 };
      return { text: JSON.stringify({ label: call.promptText.includes('cat') ? 'TP' : 'FP1' }) };
    });
    fake.setBatchOptions({ pollsBeforeDone: 2 });
    const provider = createProvider(backend, { env: fake.env, prices });
    const api = provider.batch!;
    expect(api).toBeDefined();

    const batchId = await api.submit(entries, 'assay test round 1');
    expect(fake.batches).toHaveLength(1);
    const sent = fake.batches[0]!;
    expect(sent.entries.map((e) => e.customId)).toEqual(entries.map((e) => e.customId));
    // The batch carries the same request the synchronous call sends: system, prompt, structured output.
    expect(sent.entries.every((e) => e.call.structured && e.call.systemText === 'You judge edits.')).toBe(
      true,
    );
    expect(sent.entries[0]!.call.promptText).toBe('edit one: cat');

    const polls = [await api.status(batchId), await api.status(batchId), await api.status(batchId)];
    expect(polls.map((p) => p.done)).toEqual([false, false, true]);

    const outcomes = await api.results(batchId, entries);
    const byId = new Map(outcomes.map((o) => [o.customId, o]));
    const one = byId.get('r1-classify-aaaa');
    const two = byId.get('r2-classify-bbbb');
    const three = byId.get('r3-classify-cccc');
    expect(one).toMatchObject({ ok: true, completion: { text: '{"label":"TP"}', finishReason: 'stop' } });
    expect(two).toMatchObject({ ok: true, completion: { text: '{"label":"FP1"}' } });
    expect(three?.ok ?? false).toBe(false);

    // Priced at the batch discount: half of what the same call costs synchronously.
    const sync = await provider.complete(entries[0]!.request);
    if (!one?.ok) throw new Error('unreachable');
    expect(sync.costUsd).toBeGreaterThan(0);
    expect(one.completion.costUsd).toBeCloseTo(sync.costUsd * (1 - BATCH_DISCOUNT), 12);
    expect(one.completion.batchSavedUsd).toBeCloseTo(sync.costUsd * BATCH_DISCOUNT, 12);
    expect(one.completion.usage).toEqual(sync.usage);
  });

  it('an expired batch answers nothing: every request comes back unanswered', async () => {
    fake.setBatchOptions({ pollsBeforeDone: 0, end: 'expired' });
    const api = createProvider(backend, { env: fake.env, prices }).batch!;
    const batchId = await api.submit(entries.slice(0, 2), 'assay test');
    expect(await api.status(batchId)).toMatchObject({ done: true });
    const outcomes = await api.results(batchId, entries.slice(0, 2));
    expect(outcomes.filter((o) => o.ok)).toEqual([]);
  });
});

it('OpenAI-compatible servers other than OpenAI have no batch API; the simulator neither', () => {
  expect(createProvider('vllm:mistral', { env: { VLLM_BASE_URL: fake.url }, prices }).batch).toBeUndefined();
  expect(createProvider('sim:gold', { prices }).batch).toBeUndefined();
});
