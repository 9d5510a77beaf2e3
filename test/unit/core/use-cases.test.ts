import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { readRows } from '../../../shared/lib/datasets/read.js';
import { DeferredError, ProviderError } from '../../../shared/model/errors.js';
import type { ItemMessage } from '../../../shared/model/model.js';
import type { CompletionRequest } from '../../../shared/model/provider.js';
import { aggregateRun } from '../../../shared/use-cases/aggregate-run.js';
import { recordDeadLetter } from '../../../shared/use-cases/dead-letter.js';
import { prepareRun } from '../../../shared/use-cases/prepare-run.js';
import { DeferredCall, scoreItem } from '../../../shared/use-cases/score-item.js';
import { startRun } from '../../../shared/use-cases/start-run.js';
import { ScriptedProvider } from '../../fakes/scripted-provider.js';
import { chunksOf, REPO, suite, tempDir } from '../../helpers.js';

const CSV = [
  'idx,src,tgt,label',
  '1,I has a cat.,I have a cat.,TP',
  '2,He go home.,He goes home.,TP',
  '3,Fine text.,Fine texts.,FP2',
  '4,a,b,WRONG',
  '1,dup,dup2,TP',
  '5,only src',
].join('\n');

async function setUp(overrides: Record<string, unknown> = {}) {
  const dir = await tempDir();
  const runStore = new LocalRunStore(dir);
  const run = await prepareRun({
    suite: suite({ backends: ['openai:gpt-4o-mini'], ...overrides }),
    prompts: new FolderBlobStore(REPO),
    datasetKey: 'data.csv',
    datasetVersion: 'v1',
    reportPrefix: 'reports/{runId}/',
  });
  const sent: ItemMessage[] = [];
  const triggered: string[] = [];
  const queue = { sendItems: async (m: ItemMessage[]) => void sent.push(...m) };
  const trigger = {
    trigger: async (runId: string) => void triggered.push(runId),
    triggerSweep: async () => {},
  };
  return { dir, runStore, run, sent, triggered, queue, trigger };
}

describe('start-run', () => {
  it('records bad rows as failed results with row and reason, and queues the good ones', async () => {
    // Rows read once as they go by, or read twice (duplicates found in a pass of their own): the same outcome.
    for (const twice of [false, true]) {
      const { runStore, run, sent, queue, trigger } = await setUp();
      let reads = 0;
      const rows = () => {
        reads += 1;
        return readRows(chunksOf(CSV), 'csv');
      };
      const outcome = await startRun({ runStore, queue, trigger }, { run, rows: twice ? rows : rows() });
      expect(reads).toBe(twice ? 2 : 1);
      expect(outcome).toMatchObject({ status: 'started', total: 6, invalidRows: 3, queued: 3 });
      expect(sent.map((m) => m.item.id)).toEqual(['1', '2', '3']);
      const failed = [];
      for await (const r of runStore.results(run.runId)) failed.push(r.failure?.message);
      expect(failed).toEqual([
        expect.stringMatching(/^row 4: unknown gold label "WRONG"/),
        'row 5: duplicate item id "1" (first seen at row 1)',
        expect.stringMatching(/^row 6: missing column tgt/),
      ]);
    }
  });

  it('a second start of the same run does nothing unless asked to resume', async () => {
    const { runStore, run, sent, queue, trigger } = await setUp();
    await startRun({ runStore, queue, trigger }, { run, rows: readRows(chunksOf(CSV), 'csv') });
    const again = await startRun({ runStore, queue, trigger }, { run, rows: readRows(chunksOf(CSV), 'csv') });
    expect(again).toEqual({ status: 'duplicate', runId: run.runId });
    expect(sent).toHaveLength(3);
  });

  it('samples reproducibly with a seed', async () => {
    const rows = ['idx,src,tgt,label', ...Array.from({ length: 50 }, (_, i) => `${i},s${i},t${i},TP`)].join(
      '\n',
    );
    const pick = async (seed: number) => {
      const { runStore, run, sent, queue, trigger } = await setUp({ run: { sample: { n: 10, seed } } });
      await startRun({ runStore, queue, trigger }, { run, rows: readRows(chunksOf(rows, 64), 'csv') });
      return sent.map((m) => m.item.id);
    };
    const a = await pick(3);
    expect(a).toHaveLength(10);
    expect(await pick(3)).toEqual(a);
    expect(await pick(4)).not.toEqual(a);
  });

  it('triggers aggregation itself when every item finished before the total was known', async () => {
    const { runStore, run, triggered, trigger } = await setUp();
    // Workers are faster than ingest: score each item as soon as it is sent.
    const provider = new ScriptedProvider('openai:gpt-4o-mini', () => '{"label":"TP","reason":"ok"}');
    const deps = { runStore, trigger, providerFor: () => provider, onTransientError: 'throw' as const };
    const queue = {
      sendItems: async (m: ItemMessage[]) => void (await Promise.all(m.map((x) => scoreItem(deps, x)))),
    };
    await startRun({ runStore, queue, trigger }, { run, rows: readRows(chunksOf(CSV), 'csv'), batchSize: 1 });
    expect(triggered).toEqual([run.runId]);
  });
});

describe('score-item', () => {
  async function scoreOne(
    answer: (request: CompletionRequest, n: number) => string | Error,
    transient: 'throw' | 'fail' = 'fail',
  ) {
    const ctx = await setUp();
    const { runStore, run, sent, queue, trigger } = ctx;
    await startRun({ runStore, queue, trigger }, { run, rows: readRows(chunksOf(CSV), 'csv') });
    const provider = new ScriptedProvider('openai:gpt-4o-mini', answer);
    const deps = {
      runStore,
      trigger,
      providerFor: () => provider,
      onTransientError: transient,
      maxAttempts: 1,
    };
    return { ...ctx, provider, deps, message: sent[0]!, score: () => scoreItem(deps, sent[0]!) };
  }

  it('parses a fenced JSON answer and books the stage spend', async () => {
    const { score, provider } = await scoreOne(
      () => 'Sure!\n```json\n{"label": "tp", "reason": "fixes agreement"}\n```',
    );
    const { result } = await score();
    expect(result).toMatchObject({
      schemaVersion: 2,
      status: 'scored',
      output: { label: 'TP', reason: 'fixes agreement', decidedBy: 'openai:gpt-4o-mini' },
      scores: {
        label: {
          kind: 'label',
          value: 'TP',
          explanation: 'fixes agreement',
          decidedBy: 'openai:gpt-4o-mini',
        },
      },
      gold: 'TP',
    });
    expect(result.stages.classify).toMatchObject({
      calls: 1,
      costUsd: 0.001,
      usage: { input: 100, output: 10 },
    });
    expect(provider.requests[0]!.prompt).toContain('<original_nonce>\nI has a cat.\n</original_nonce>');
    expect(provider.requests[0]!.prompt).toContain('{has=>have}');
    expect(provider.requests[0]!.jsonSchema?.schema).toMatchObject({ required: ['label', 'reason'] });
  });

  it('repairs an unparseable answer once, showing the model its answer', async () => {
    const { score, provider } = await scoreOne((_, n) =>
      n === 1 ? 'I think TP' : '{"label":"FP3","reason":"r"}',
    );
    const { result } = await score();
    expect(result).toMatchObject({ status: 'scored', scores: { label: { value: 'FP3' } } });
    expect(provider.requests[1]!.history).toEqual([
      { role: 'user', content: provider.requests[0]!.prompt },
      { role: 'assistant', content: 'I think TP' },
    ]);
    expect(provider.requests[1]!.prompt).toContain('no JSON object found');
    expect(Object.keys(result.stages)).toEqual(['classify', 'repair']);
  });

  it('ends as an Error outcome with the raw text kept when the repair fails too', async () => {
    const { score, provider } = await scoreOne(() => '{"label":"MAYBE"}');
    const { result } = await score();
    expect(provider.requests).toHaveLength(2);
    expect(result).toMatchObject({ status: 'failed', scores: {}, failure: { kind: 'parse' } });
    expect(result.output).toBeUndefined();
    expect(result.failure!.message).toContain('label must be one of TP, FP1, FP2, FP3');
    expect(result.raw).toContain('MAYBE');
  });

  it('records a permanent provider error as a failed result, and hands transient ones back to the queue', async () => {
    const permanent = await scoreOne(
      () => new ProviderError('bad model', 'bad_request', 'openai:gpt-4o-mini', 400),
    );
    expect((await permanent.score()).result).toMatchObject({
      status: 'failed',
      failure: { kind: 'provider' },
    });
    const transient = await scoreOne(
      () => new ProviderError('slow down', 'rate_limit', 'openai:gpt-4o-mini', 429),
      'throw',
    );
    await expect(transient.score()).rejects.toThrow('slow down');
    expect((await transient.runStore.resultIds(transient.run.runId)).has('1')).toBe(false);
  });

  it('hands back an item whose call is deferred, in either shell: not retried, not failed, nothing recorded', async () => {
    // Another kind of deferred work, to show every DeferredError is handed back, not only batch calls.
    class WaitsForSomething extends DeferredError {}
    for (const deferred of [
      new DeferredCall('k'.repeat(64), { model: 'gpt-4o-mini', prompt: 'p' }, 'openai:gpt-4o-mini'),
      new WaitsForSomething('not yet'),
    ]) {
      for (const transient of ['fail', 'throw'] as const) {
        const { deps, message, provider, runStore, run } = await scoreOne(() => deferred, transient);
        const before = await runStore.counters(run.runId);
        await expect(scoreItem({ ...deps, maxAttempts: 3 }, message)).rejects.toBe(deferred);
        expect(provider.requests).toHaveLength(1);
        expect(await runStore.counters(run.runId)).toEqual(before);
        expect(await runStore.resultIds(run.runId)).not.toContain(message.item.id);
      }
    }
  });

  it('counts a redelivered message once', async () => {
    const { score, runStore, run } = await scoreOne(() => '{"label":"TP","reason":""}');
    const first = await score();
    const second = await score();
    expect(first.outcome.recorded).toBe(true);
    expect(second.outcome.recorded).toBe(false);
    expect(await runStore.counters(run.runId)).toEqual({ done: 1, failed: 3, total: 6, spentUsd: 0.001 });
    expect((await runStore.resultIds(run.runId)).size).toBe(4);
  });

  it('a dead letter becomes a failed result so the run completes, then aggregates once', async () => {
    const { runStore, run, sent, deps, trigger, triggered, dir } = await scoreOne(
      () => '{"label":"TP","reason":""}',
    );
    await scoreItem(deps, sent[0]!);
    await scoreItem(deps, sent[1]!);
    await recordDeadLetter({ runStore, trigger }, sent[2]!, 'exhausted 3 receives');
    expect(triggered).toEqual([run.runId]);
    const reports = new FolderBlobStore(dir);
    const first = await aggregateRun({ runStore, reports }, run.runId);
    const second = await aggregateRun({ runStore, reports }, run.runId);
    expect(first.status).toBe('written');
    expect(second.status).toBe('skipped');
    const report = JSON.parse(await readFile(join(dir, `reports/${run.runId}/report.json`), 'utf8'));
    expect(report.counts).toEqual({
      items: 6,
      scored: 2,
      failed: 4,
      invalidRows: 3,
      errors: 1,
      byFailure: { invalid_row: 3, dead_letter: 1 },
    });
    expect(report.metrics).toMatchObject({ n: 2, errors: 1, accuracy: 1 });
    expect(report.scores.label.unscored).toEqual({ invalid_row: 3, dead_letter: 1 });
  });

  it('stops calling once the run has spent its budget: the rest fail as budget, and a higher budget resumes them', async () => {
    const { runStore, run, sent, queue, trigger } = await setUp({ run: { budgetUsd: 0.0015 } });
    await startRun({ runStore, queue, trigger }, { run, rows: readRows(chunksOf(CSV), 'csv') });
    // Each answer costs $0.001: after the first item $0.001 is spent (< budget), after the second $0.002.
    const provider = new ScriptedProvider('openai:gpt-4o-mini', () => '{"label":"TP","reason":""}');
    const deps = { runStore, trigger, providerFor: () => provider, onTransientError: 'fail' as const };
    const items = [];
    for (const message of sent) items.push((await scoreItem(deps, message)).result);
    expect(items.map((r) => r.status)).toEqual(['scored', 'scored', 'failed']);
    expect(items[2]!.failure).toMatchObject({
      kind: 'budget',
      message: expect.stringContaining('raise run.budgetUsd'),
    });
    expect(provider.requests).toHaveLength(2);
    expect((await runStore.resultIds(run.runId)).has(items[2]!.itemId)).toBe(false);

    // The same run under a higher budget: only the stopped item is sent, and it replaces its failure.
    const richer = { ...run, suite: { ...run.suite, run: { ...run.suite.run, budgetUsd: 1 } } };
    const resent: ItemMessage[] = [];
    await startRun(
      { runStore, queue: { sendItems: async (m) => void resent.push(...m) }, trigger },
      { run: richer, rows: readRows(chunksOf(CSV), 'csv'), resume: true },
    );
    expect(resent.map((m) => m.item.id)).toEqual([items[2]!.itemId]);
    const { result, outcome } = await scoreItem({ ...deps, run: richer }, resent[0]!);
    expect(result.status).toBe('scored');
    expect(outcome).toEqual({ recorded: true, complete: true });
    const counters = await runStore.counters(run.runId);
    expect(counters).toMatchObject({ done: 3, failed: 3, total: 6 });
    expect(counters?.spentUsd).toBeCloseTo(0.003, 12);
  });

  it('scores an output the dataset gives, without calling a model', async () => {
    const { runStore, run, sent, queue, trigger } = await setUp({
      backends: [],
      dataset: { path: 'data.csv', columns: { output: 'pred' } },
    });
    const rows = [
      'idx,src,tgt,label,pred,reason',
      '1,a,b,TP,fp2,looks wrong',
      '2,c,d,FP1,',
      '3,e,f,FP2,maybe',
    ].join('\n');
    await startRun({ runStore, queue, trigger }, { run, rows: readRows(chunksOf(rows), 'csv') });
    const deps = {
      runStore,
      trigger,
      providerFor: () => {
        throw new Error('no provider may be built');
      },
      onTransientError: 'fail' as const,
    };
    const results = [];
    for (const message of sent) results.push((await scoreItem(deps, message)).result);
    expect(results.map((r) => [r.status, r.failure?.kind, r.scores.label])).toEqual([
      [
        'scored',
        undefined,
        { kind: 'label', value: 'FP2', explanation: 'looks wrong', decidedBy: 'given (pred)' },
      ],
      ['failed', 'no_output', undefined],
      ['failed', 'parse', undefined],
    ]);
    expect(results.every((r) => Object.keys(r.stages).length === 0)).toBe(true);
  });
});
