/**
 * The batch lane's worker (`scoreOrWait`) and poller (`advanceBatches`) in one process, on the
 * memory BatchStore and the vendor fake: the items wait, one batch is submitted, its answers
 * wake them, a request the batch failed is made synchronously, and every item ends scored
 * once. The same flow as on AWS (test/integration/batch-lane.test.ts), without a table.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { MemoryBatchStore } from '../../../shared/adapters/local/memory-batch-store.js';
import { readRows } from '../../../shared/lib/datasets/read.js';
import { EMBEDDED_PRICES } from '../../../shared/lib/providers/pricing.js';
import { createProvider } from '../../../shared/lib/providers/registry.js';
import type { ItemMessage } from '../../../shared/model/model.js';
import type { LlmProvider } from '../../../shared/model/provider.js';
import { advanceBatches, scoreOrWait } from '../../../shared/use-cases/batch-lane.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { startRun } from '../../../shared/use-cases/start-run.js';
import { startVendorFake, type VendorFake } from '../../fakes/vendor-fake.js';
import { chunksOf, REPO, suite, tempDir } from '../../helpers.js';

let fake: VendorFake;

beforeAll(async () => {
  fake = await startVendorFake((call) => {
    // The second request of the batch fails inside it; synchronous calls always answer.
    if (call.batch && call.index === 1) return { status: 500 };
    return { text: JSON.stringify({ label: 'TP', reason: 'fake' }) };
  });
  fake.setBatchOptions({ pollsBeforeDone: 1 });
});

afterAll(async () => {
  await fake?.close();
});

const CSV = [
  'idx,src,tgt,label',
  '1,I has a cat.,I have a cat.,TP',
  '2,He go home.,He goes home.,TP',
  '3,She like tea.,She likes tea.,TP',
].join('\n');

it('waits, batches, wakes and scores every item once, on the memory store', async () => {
  const runStore = new LocalRunStore(await tempDir('assay-lane-'));
  const run = await prepareRun({
    suite: suite({ backends: ['openai:gpt-4o-mini'], run: { lane: 'batch' } }),
    prompts: new FolderBlobStore(REPO),
    datasetKey: 'data.csv',
    datasetVersion: 'v1',
    reportPrefix: '',
  });
  let queued: ItemMessage[] = [];
  const trigger = { trigger: async () => {}, triggerSweep: async () => {} };
  await startRun(
    { runStore, queue: { sendItems: async (m) => void queued.push(...m) }, trigger },
    { run, rows: readRows(chunksOf(CSV), 'csv') },
  );
  const provider: LlmProvider = createProvider('openai:gpt-4o-mini', {
    env: fake.env,
    prices: EMBEDDED_PRICES,
  });
  const store = new MemoryBatchStore();
  const deps = { runStore, trigger, providerFor: () => provider, onTransientError: 'throw' as const };

  /** The worker: each queued message scored, or left waiting. */
  const work = async () => {
    const messages = queued;
    queued = [];
    let waiting = 0;
    for (const message of messages) {
      const outcome = await scoreOrWait(deps, store, message, JSON.stringify(message));
      if ('waiting' in outcome) waiting += 1;
    }
    return waiting;
  };
  const poll = () =>
    advanceBatches({
      store,
      runStore,
      providerFor: () => provider,
      resend: async (bodies) => void queued.push(...bodies.map((b) => JSON.parse(b) as ItemMessage)),
    });

  expect(await work()).toBe(3);
  expect(fake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(0);
  expect(await store.waitingCalls(run.runId)).toHaveLength(3);
  expect(await poll()).toMatchObject({ submitted: 1, closed: 0, woken: 0 });
  expect(await poll()).toMatchObject({ submitted: 0, closed: 1, woken: 3 });
  expect(await store.openBatches()).toEqual([]);

  expect(await work()).toBe(0);
  expect(queued).toEqual([]);
  expect(await runStore.counters(run.runId)).toMatchObject({ done: 3, failed: 0, total: 3 });
  // The one request the batch failed was asked synchronously, the others were not.
  expect(fake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1);
  expect(await poll()).toMatchObject({ submitted: 0, closed: 0, woken: 0 });
});
