/**
 * The BatchLedger contract: the batches a run of the in-process batch lane submitted, listed in
 * the order they were added and whole (their calls' requests intact), also when read by a new
 * ledger on the same run (a killed run resumes and polls the same batches). The local shell
 * alone runs that lane: on AWS the lane spans processes and keeps its state in a BatchStore,
 * so the run folder's `batches.jsonl` is the one adapter.
 */
import { describe, expect, it } from 'vitest';
import { LocalBatchLedger } from '../../../shared/adapters/local/local-batch-ledger.js';
import type { BatchLedger, LedgerBatch } from '../../../shared/ports/ports.js';
import { tempDir } from '../../helpers.js';

/** A ledger, and another one opened on the same run later (a resumed run). */
type Make = () => Promise<{ ledger: BatchLedger; reopen(): BatchLedger }>;

const adapters: [string, Make][] = [
  [
    'local',
    async () => {
      const dir = await tempDir('assay-contract-ledger-');
      return { ledger: new LocalBatchLedger(dir), reopen: () => new LocalBatchLedger(dir) };
    },
  ],
];

const batch = (batchId: string, round: number, prompt: string): LedgerBatch => ({
  batchId,
  backend: 'openai:gpt-4o-mini',
  round,
  submittedAt: '2026-01-01T00:00:00.000Z',
  entries: [
    {
      key: `key-${batchId}`,
      backend: 'openai:gpt-4o-mini',
      customId: `r1-classify-${batchId}`,
      request: { model: 'gpt-4o-mini', system: 'Judge.', prompt, maxTokens: 50 },
    },
  ],
});

describe.each(adapters)('BatchLedger contract: %s', { timeout: 60_000 }, (_name, make) => {
  it('is empty before the first batch', async () => {
    const { ledger } = await make();
    expect(await ledger.list()).toEqual([]);
  });

  it('lists every batch in the order added, whole, also to a ledger reopened on the run', async () => {
    const { ledger, reopen } = await make();
    const added = [
      batch('b2', 1, 'first — “quoted” é'),
      batch('b1', 1, 'line\nbreak \u2028'),
      batch('b0', 2, 'later'),
    ];
    for (const b of added) await ledger.add(b);
    expect(await ledger.list()).toEqual(added);
    const again = reopen();
    expect(await again.list()).toEqual(added);
    const more = batch('b3', 3, 'after the resume');
    await again.add(more);
    expect(await reopen().list()).toEqual([...added, more]);
  });
});
