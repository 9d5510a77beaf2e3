/**
 * The budget reservation of `scoreItem`: each call reserves the most it may cost before it is
 * sent (so items in flight together cannot all pass), settles to what it cost after, and gives
 * back what it reserved when it fails or is answered free.
 */
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { readRows } from '../../../shared/lib/datasets/read.js';
import { EMBEDDED_PRICES, maxCostOf } from '../../../shared/lib/providers/pricing.js';
import { ProviderError } from '../../../shared/model/errors.js';
import type { ItemMessage } from '../../../shared/model/model.js';
import type { Completion, CompletionRequest, LlmProvider } from '../../../shared/model/provider.js';
import type { BudgetHolder, LlmCache } from '../../../shared/ports/ports.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { scoreItem } from '../../../shared/use-cases/score-item.js';
import { startRun } from '../../../shared/use-cases/start-run.js';
import { chunksOf, REPO, suite, tempDir } from '../../helpers.js';

const MODEL = 'openai:gpt-4o-mini';
const ROWS = 8;
const CSV = [
  'idx,src,tgt,label',
  ...Array.from({ length: ROWS }, (_, i) => `${i + 1},He go home ${i}.,He goes home ${i}.,TP`),
].join('\n');

/** A local store that also notes each settlement. */
class NotingStore extends LocalRunStore {
  readonly settled: { itemId: string; reservedUsd: number; actualUsd: number }[] = [];
  override async settleReservation(
    runId: string,
    holder: BudgetHolder,
    reservedUsd: number,
    actualUsd: number,
  ) {
    this.settled.push({ itemId: holder.itemId, reservedUsd, actualUsd });
    await super.settleReservation(runId, holder, reservedUsd, actualUsd);
  }
}

/** Answers only once `open()` is called: until then every call sent is in flight. */
class GatedProvider implements LlmProvider {
  readonly simulated = false;
  readonly requests: CompletionRequest[] = [];
  private release!: () => void;
  private readonly gate = new Promise<void>((resolve) => {
    this.release = resolve;
  });
  constructor(
    readonly id: string,
    private readonly answer: () => Completion | Error,
  ) {}
  open() {
    this.release();
  }
  async complete(request: CompletionRequest): Promise<Completion> {
    this.requests.push(request);
    await this.gate;
    const answer = this.answer();
    if (answer instanceof Error) throw answer;
    return answer;
  }
}

const answer = (costUsd: number): Completion => ({
  text: '{"label":"TP","reason":""}',
  finishReason: 'stop',
  usage: { input: 100, output: 10, cached: 0 },
  costUsd,
  latencyMs: 1,
  cached: false,
  simulated: false,
  providerId: MODEL,
});

async function setUp(budgetUsd: number) {
  const dir = await tempDir();
  const runStore = new NotingStore(dir);
  const run = await prepareRun({
    suite: suite({ backends: [MODEL], run: { budgetUsd } }),
    prompts: new FolderBlobStore(REPO),
    datasetKey: 'data.csv',
    datasetVersion: 'v1',
    reportPrefix: 'reports/{runId}/',
    prices: EMBEDDED_PRICES,
  });
  const sent: ItemMessage[] = [];
  const trigger = { trigger: async () => {}, triggerSweep: async () => {} };
  await startRun(
    { runStore, queue: { sendItems: async (m) => void sent.push(...m) }, trigger },
    { run, rows: readRows(chunksOf(CSV), 'csv') },
  );
  return { runStore, run, sent, trigger };
}

describe('the budget reservation', () => {
  it('lets only the calls that fit the budget together be sent, however many items are in flight', async () => {
    const budgetUsd = 0.001;
    const { runStore, run, sent, trigger } = await setUp(budgetUsd);
    const provider = new GatedProvider(MODEL, () => answer(0.0002));
    const deps = { runStore, trigger, providerFor: () => provider, onTransientError: 'fail' as const };
    // Every item starts before any answer comes: a check of what was spent would let all eight through.
    let finished = 0;
    const scoring = Promise.all(
      sent.map((message) =>
        scoreItem(deps, message).then((outcome) => {
          finished += 1;
          return outcome;
        }),
      ),
    );
    // Until every item is either waiting on its answer or already finished.
    while (provider.requests.length + finished < ROWS) await new Promise((resolve) => setImmediate(resolve));
    provider.open();
    const results = (await scoring).map((r) => r.result);

    const sentCalls = provider.requests.length;
    expect(sentCalls).toBeGreaterThanOrEqual(1);
    expect(sentCalls).toBeLessThan(ROWS);
    // What was reserved for the calls sent fits the budget.
    const reservations = provider.requests.map((r) => maxCostOf(EMBEDDED_PRICES, MODEL, r).usd);
    expect(reservations.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(budgetUsd);
    expect(results.filter((r) => r.status === 'scored')).toHaveLength(sentCalls);
    expect(results.filter((r) => r.failure?.kind === 'budget')).toHaveLength(ROWS - sentCalls);
    // Each reservation became what its call cost; every hold was released with the results.
    expect(runStore.settled.map((s) => s.actualUsd)).toEqual(Array(sentCalls).fill(0.0002));
    expect(await runStore.reserved(run.runId)).toBe(0);
    expect(await runStore.spent(run.runId)).toBeCloseTo(sentCalls * 0.0002, 12);
  });

  it('gives back a failed call’s reservation at once', async () => {
    const { runStore, sent, trigger } = await setUp(1);
    const provider = new GatedProvider(MODEL, () => new ProviderError('finished', 'bad_request', MODEL, 400));
    provider.open();
    const deps = { runStore, trigger, providerFor: () => provider, onTransientError: 'fail' as const };
    const { result } = await scoreItem(deps, sent[0]!);
    expect(result.failure?.kind).toBe('provider');
    expect(runStore.settled).toEqual([
      { itemId: sent[0]!.item.id, reservedUsd: expect.any(Number), actualUsd: 0 },
    ]);
    expect(runStore.settled[0]!.reservedUsd).toBeGreaterThan(0);
  });

  it('settles a call answered from the cache with someone else’s answer to nothing', async () => {
    const { runStore, sent, trigger } = await setUp(1);
    const provider = new GatedProvider(MODEL, () => answer(0.0002));
    provider.open();
    const stored = new Map<string, Completion>();
    const cache: LlmCache = {
      get: async (key) => stored.get(key),
      put: async (key, completion) => void stored.set(key, completion),
    };
    const deps = { runStore, trigger, cache, providerFor: () => provider, onTransientError: 'fail' as const };
    // The same item's call under another payer: a hit on an answer this item did not pay for.
    await scoreItem(deps, sent[0]!);
    await scoreItem(deps, { ...sent[0]!, item: { ...sent[0]!.item, id: 'again', row: 99 } });
    expect(provider.requests).toHaveLength(1);
    expect(runStore.settled.map((s) => s.actualUsd)).toEqual([0.0002, 0]);
  });
});
