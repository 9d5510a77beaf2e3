/**
 * `run.repeats`: each item's calls are made k times as samples 1…k (sample 1 is the call a run
 * without repeats makes, same cache key), and the item's value is their majority, a tie going
 * to the earliest repeat's value; each repeat's value is kept, and every repeat is paid for.
 */
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { readRows } from '../../../shared/lib/datasets/read.js';
import { cacheKey } from '../../../shared/lib/providers/call.js';
import { SimProvider } from '../../../shared/lib/providers/sim.js';
import type { ItemMessage } from '../../../shared/model/model.js';
import type { Completion, CompletionRequest } from '../../../shared/model/provider.js';
import type { LlmCache } from '../../../shared/ports/ports.js';
import { simulateAnswer } from '../../../shared/registry/registry.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { scoreItem } from '../../../shared/use-cases/score-item.js';
import { startRun } from '../../../shared/use-cases/start-run.js';
import { ScriptedProvider } from '../../fakes/scripted-provider.js';
import { chunksOf, REPO, suite, tempDir } from '../../helpers.js';

const CSV = ['idx,src,tgt,label', '1,I has a cat.,I have a cat.,TP'].join('\n');

class MemoryCache implements LlmCache {
  readonly entries = new Map<string, Completion>();
  async get(key: string) {
    return this.entries.get(key);
  }
  async put(key: string, completion: Completion) {
    this.entries.set(key, completion);
  }
}

/** Scores the one item under `run.repeats` (none when undefined), answering each sample as `bySample` says. */
async function scoreWith(
  repeats: number | undefined,
  bySample: (sample: number) => string,
  cache?: LlmCache,
) {
  const dir = await tempDir();
  const runStore = new LocalRunStore(dir);
  const run = await prepareRun({
    suite: suite({ backends: ['openai:gpt-4o-mini'], ...(repeats ? { run: { repeats } } : {}) }),
    prompts: new FolderBlobStore(REPO),
    datasetKey: 'data.csv',
    datasetVersion: 'v1',
    reportPrefix: 'reports/{runId}/',
  });
  const sent: ItemMessage[] = [];
  const trigger = { trigger: async () => {}, triggerSweep: async () => {} };
  await startRun(
    { runStore, queue: { sendItems: async (m: ItemMessage[]) => void sent.push(...m) }, trigger },
    { run, rows: readRows(chunksOf(CSV), 'csv') },
  );
  const provider = new ScriptedProvider('openai:gpt-4o-mini', (request) => bySample(request.sample ?? 1));
  const deps = {
    runStore,
    trigger,
    cache,
    providerFor: () => provider,
    onTransientError: 'fail' as const,
    maxAttempts: 1,
  };
  const { result } = await scoreItem(deps, sent[0]!);
  return { result, provider };
}

const answer = (label: string) => `{"label":"${label}","reason":"because ${label}"}`;
const votes = ['TP', 'FP2', 'TP'];

describe('run.repeats in score-item', () => {
  it('makes every call k times as samples 1…k and takes the majority, keeping each repeat', async () => {
    const { result, provider } = await scoreWith(3, (sample) => answer(votes[sample - 1]!));
    expect(provider.requests.map((r) => r.sample)).toEqual([undefined, 2, 3]);
    expect(result.status).toBe('scored');
    expect(result.scores.label).toMatchObject({
      kind: 'label',
      value: 'TP',
      repeats: ['TP', 'FP2', 'TP'],
      explanation: 'because TP',
    });
    expect(result.scores.label).not.toHaveProperty('tie');
    // Every repeat is a call, and is paid for.
    const stage = Object.values(result.stages)[0]!;
    expect(stage.calls).toBe(3);
    expect(stage.costUsd).toBeCloseTo(0.003, 12);
  });

  it('resolves a tie to the earliest repeat and says so', async () => {
    const { result } = await scoreWith(2, (sample) => answer(sample === 1 ? 'FP2' : 'TP'));
    expect(result.scores.label).toMatchObject({ value: 'FP2', repeats: ['FP2', 'TP'], tie: true });
  });

  it('a repeat that gives no value is null among the repeats; the others decide', async () => {
    const { result } = await scoreWith(3, (sample) => (sample === 1 ? 'no json here' : answer('FP1')));
    expect(result.status).toBe('scored');
    expect(result.scores.label).toMatchObject({ value: 'FP1', repeats: [null, 'FP1', 'FP1'] });
    expect(result.output).toMatchObject({ label: 'FP1' });
  });

  it('an item no repeat could solve fails as its first repeat did', async () => {
    const { result } = await scoreWith(2, () => 'no json here');
    expect(result.status).toBe('failed');
    expect(result.failure?.kind).toBe('parse');
  });

  it('without repeats nothing changes: no sample, no repeat values', async () => {
    const { result, provider } = await scoreWith(undefined, () => answer('TP'));
    expect(provider.requests).toHaveLength(1);
    expect(provider.requests[0]).not.toHaveProperty('sample');
    expect(result.scores.label).not.toHaveProperty('repeats');
  });

  it('sample 1 keeps the cache key of a run without repeats: its answers are reused, the others are bought', async () => {
    const cache = new MemoryCache();
    await scoreWith(undefined, () => answer('TP'), cache);
    const { result, provider } = await scoreWith(3, (sample) => answer(votes[sample - 1]!), cache);
    expect(provider.requests.map((r) => r.sample)).toEqual([2, 3]);
    expect(Object.values(result.stages)[0]).toMatchObject({ calls: 3, cachedCalls: 1 });
    expect(result.scores.label).toMatchObject({ repeats: ['TP', 'FP2', 'TP'] });
  });
});

describe('samples of a call', () => {
  const request: CompletionRequest = { model: 'gpt-4o-mini', prompt: 'judge this', temperature: 0 };
  const provider = new ScriptedProvider('openai:gpt-4o-mini', () => '');

  it('sample 1 is the plain call; later samples have keys of their own', () => {
    const plain = cacheKey(provider, request);
    expect(cacheKey(provider, { ...request, sample: 1 })).toBe(plain);
    const two = cacheKey(provider, { ...request, sample: 2 });
    expect(two).not.toBe(plain);
    expect(cacheKey(provider, { ...request, sample: 3 })).not.toBe(two);
  });

  it('the simulator draws each sample’s noise apart, and sample 1 as the plain call', async () => {
    const sim = new SimProvider('gpt-4o-mini', { latencyMs: 0 }, { simulator: simulateAnswer });
    let differ = 0;
    for (let i = 0; i < 40; i++) {
      const hinted: CompletionRequest = {
        ...request,
        simulation: { family: 'judge', labels: ['a', 'b', 'c'], gold: 'a', item: String(i), fields: {} },
      };
      const plain = await sim.complete(hinted);
      expect((await sim.complete({ ...hinted, sample: 1 })).text).toBe(plain.text);
      if ((await sim.complete({ ...hinted, sample: 2 })).text !== plain.text) differ += 1;
    }
    expect(differ).toBeGreaterThan(0);
    expect(differ).toBeLessThan(40);
  });
});
