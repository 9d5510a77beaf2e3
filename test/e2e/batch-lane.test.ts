import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type RunEvent, runLocal } from '../../cli/local-run.js';
import { BATCH_DISCOUNT } from '../../shared/lib/providers/batch.js';
import type { ItemResult } from '../../shared/model/model.js';
import type { Report } from '../../shared/model/report.js';
import { useVendorFake } from '../fakes/use-vendor-fake.js';
import { type FakeCall, type FakeReply, withoutTagNonces } from '../fakes/vendor-fake.js';
import { REPO, tempDir } from '../helpers.js';

/**
 * The batch lane end to end: `runLocal` on the quickstart data (a sample) against the HTTP
 * fake of the vendors, once synchronously and once through the batch APIs, each with its own
 * cache and run folder. The fake answers from the prompt alone, so both lanes see the same
 * answers and must end with the same scores; the batch run pays half.
 */
const fake = useVendorFake();
const LABELS = ['TP', 'FP1', 'FP2', 'FP3'];
const SAMPLE = { n: 24, seed: 5 };

const digit = (text: string) => createHash('sha256').update(text).digest()[0]!;

/** A verdict drawn from the prompt (and model): the same call gets the same answer in either lane. */
function answer(call: FakeCall): FakeReply {
  // Read without the tag names' per-call nonces: the same call gets the same answer in either lane.
  const label = LABELS[digit(`${call.model}\n${withoutTagNonces(call.promptText)}`) % LABELS.length]!;
  return { text: JSON.stringify({ label, reason: `fake verdict ${label}` }) };
}

async function runLane(
  suite: string,
  lane: 'sync' | 'batch',
  backends?: string[],
  onEvent?: (event: RunEvent) => void,
  dirs?: { outDir: string; cachePath: string },
) {
  const root = await tempDir('assay-batch-');
  const outDir = dirs?.outDir ?? join(root, 'runs', 'run');
  const done = await runLocal({
    suitePath: join(REPO, 'examples', suite),
    outDir,
    runsDir: join(outDir, '..'),
    cachePath: dirs?.cachePath ?? join(root, 'cache', 'llm-cache.jsonl'),
    env: fake.env,
    sample: SAMPLE,
    backends,
    lane,
    batchPollMs: 1,
    onEvent,
  });
  const report = JSON.parse(await readFile(join(outDir, 'report.json'), 'utf8')) as Report;
  const results = (await readFile(join(outDir, 'results.jsonl'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as ItemResult);
  return { ...done, report, results, text: await readFile(join(outDir, 'report.txt'), 'utf8') };
}

const chatCalls = () =>
  fake.requests.filter((r) => /chat\/completions|\/messages$|:generateContent$/.test(r.path)).length;

/** A figure tree without its money fields. */
function withoutCost(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCost);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !/usd/i.test(key))
      .map(([key, v]) => [key, withoutCost(v)]),
  );
}

const outputs = (results: ItemResult[]) =>
  Object.fromEntries(
    results.map((r) => [r.itemId, { status: r.status, output: r.output, scores: r.scores }]),
  );

describe.each([['openai:gpt-4o-mini'], ['anthropic:claude-haiku-4-5'], ['gemini:gemini-2.5-flash']])(
  'the quickstart on %s',
  (backend) => {
    it('gives the same results and metrics in the batch lane as in the sync lane, at half the price', async () => {
      fake.setHandler(answer);
      const sync = await runLane('quickstart.suite.json', 'sync', [backend]);
      const syncCalls = chatCalls();
      expect(syncCalls).toBeGreaterThan(0);
      fake.reset();
      fake.setHandler(answer);

      const batch = await runLane('quickstart.suite.json', 'batch', [backend]);
      // Every call went through a batch: no synchronous call at all.
      expect(chatCalls()).toBe(0);
      expect(fake.batches.length).toBe(1);

      expect(batch.report.counts).toEqual(sync.report.counts);
      expect(batch.report.counts.scored).toBe(SAMPLE.n);
      expect(batch.report.scores).toEqual(sync.report.scores);
      // The family's own figures match too, but for what they say about cost (half, in the batch lane).
      expect(withoutCost(batch.report.metrics)).toEqual(withoutCost(sync.report.metrics));
      expect(outputs(batch.results)).toEqual(outputs(sync.results));

      // The discount, shown: half the synchronous price, the other half reported as saved.
      expect(sync.report.cost.totalUsd).toBeGreaterThan(0);
      expect(sync.report.cost.batch).toBeUndefined();
      expect(batch.report.cost.totalUsd).toBeCloseTo(sync.report.cost.totalUsd * (1 - BATCH_DISCOUNT), 10);
      expect(batch.report.cost.batch).toMatchObject({ discount: BATCH_DISCOUNT });
      expect(batch.report.cost.batch!.savedUsd).toBeCloseTo(sync.report.cost.totalUsd * BATCH_DISCOUNT, 10);
      expect(batch.report.cost.batch!.calls).toBe(sync.report.cost.calls - sync.report.cost.cachedCalls);
      expect(batch.text).toMatch(/batch lane: \d+ calls at 50% off, saving \$/);
    }, 60_000);
  },
);

it('sends requests that failed inside the batch to the sync lane, where they end scored', async () => {
  const failsInBatch = (call: FakeCall) => digit(call.promptText) % 3 === 0;
  const handler = (call: FakeCall): FakeReply =>
    call.batch && failsInBatch(call) ? { status: 500 } : answer(call);
  fake.setHandler(handler);
  const sync = await runLane('quickstart.suite.json', 'sync');
  fake.reset();
  fake.setHandler(handler);

  const events: RunEvent[] = [];
  const batch = await runLane('quickstart.suite.json', 'batch', undefined, (e) => events.push(e));
  const failed = fake.batches.flatMap((b) => b.entries).filter((e) => failsInBatch(e.call));
  expect(failed.length).toBeGreaterThan(0);
  // Exactly the failed requests were asked again, synchronously.
  expect(chatCalls()).toBe(failed.length);
  expect(batch.report.counts).toMatchObject({ items: SAMPLE.n, scored: SAMPLE.n, failed: 0 });
  expect(batch.report.scores).toEqual(sync.report.scores);
  expect(batch.report.cost.batch!.calls).toBe(fake.batches[0]!.entries.length - failed.length);
  const collected = events.find((e) => e.type === 'batch' && e.event.type === 'collected');
  expect(collected).toMatchObject({ event: { toSync: failed.length } });
}, 60_000);

it('runs a multi-stage family (escalation) round by round to the same results as the sync lane', async () => {
  fake.setHandler(answer);
  const sync = await runLane('gec-escalation-en.suite.json', 'sync');
  fake.reset();
  fake.setHandler(answer);
  const batch = await runLane('gec-escalation-en.suite.json', 'batch');
  expect(chatCalls()).toBe(0);
  // Later stages depend on earlier answers: more than one round of batches.
  expect(new Set(fake.batches.map((b) => b.entries[0]!.call.model)).size).toBeGreaterThan(1);
  expect(batch.report.counts).toEqual(sync.report.counts);
  expect(batch.report.scores).toEqual(sync.report.scores);
  expect(outputs(batch.results)).toEqual(outputs(sync.results));
}, 60_000);

it('batches the parallel calls of one stage (an ensemble voting across three vendors) in the same round', async () => {
  fake.setHandler(answer);
  const sync = await runLane('gec-ensemble-de.suite.json', 'sync');
  fake.reset();
  fake.setHandler(answer);
  const rounds: number[] = [];
  const batch = await runLane('gec-ensemble-de.suite.json', 'batch', undefined, (e) => {
    if (e.type === 'batch' && e.event.type === 'round') rounds.push(e.event.deferred);
  });
  // One round of batches (a batch per vendor, every vote in it), then the round that finishes.
  expect(rounds).toEqual([SAMPLE.n, 0]);
  expect(fake.batches.map((b) => b.vendor).sort()).toEqual(['anthropic', 'gemini', 'openai']);
  expect(fake.batches.every((b) => b.entries.length === SAMPLE.n)).toBe(true);
  expect(chatCalls()).toBe(0);
  expect(batch.report.scores).toEqual(sync.report.scores);
  expect(outputs(batch.results)).toEqual(outputs(sync.results));
}, 60_000);

it('runs a multi-stage family without the LLM cache (run.cache false) in as many rounds as it has stages', async () => {
  const suite = JSON.parse(await readFile(join(REPO, 'examples', 'gec-escalation-en.suite.json'), 'utf8'));
  const dir = await tempDir('assay-batch-nocache-');
  suite.dataset.path = join(REPO, 'examples', suite.dataset.path);
  suite.run = { ...suite.run, cache: false };
  delete suite.$schema;
  await writeFile(join(dir, 'nocache.suite.json'), JSON.stringify(suite));
  const rounds: number[] = [];
  fake.setHandler(answer);
  const done = await runLocal({
    suitePath: join(dir, 'nocache.suite.json'),
    outDir: join(dir, 'runs', 'run'),
    runsDir: join(dir, 'runs'),
    cachePath: join(dir, 'cache.jsonl'),
    env: fake.env,
    sample: SAMPLE,
    lane: 'batch',
    batchPollMs: 1,
    onEvent: (e) => {
      if (e.type === 'batch' && e.event.type === 'round') rounds.push(e.event.deferred);
    },
  });
  expect(done.outcome).toMatchObject({ report: { counts: { items: SAMPLE.n, scored: SAMPLE.n } } });
  expect(chatCalls()).toBe(0);
  // Escalation has at most three dependent stages: three rounds of batches, then the last round finishes everything.
  expect(rounds.length).toBeLessThanOrEqual(4);
  expect(rounds.at(-1)).toBe(0);
}, 60_000);

it('resumes a stopped run by polling the batches it had submitted, not submitting again', async () => {
  fake.setHandler(answer);
  fake.setBatchOptions({ pollsBeforeDone: 1 });
  const root = await tempDir('assay-batch-resume-');
  const dirs = { outDir: join(root, 'runs', 'run'), cachePath: join(root, 'cache.jsonl') };
  const stop = (event: RunEvent) => {
    if (event.type === 'batch' && event.event.type === 'polled') throw new Error('stopped while polling');
  };
  await expect(runLane('quickstart.suite.json', 'batch', undefined, stop, dirs)).rejects.toThrow(
    'stopped while polling',
  );
  expect(fake.batches).toHaveLength(1);
  const ledger = await readFile(join(dirs.outDir, 'batches.jsonl'), 'utf8');
  expect(ledger).toContain(fake.batches[0]!.id);

  const resumed = await runLane('quickstart.suite.json', 'batch', undefined, undefined, dirs);
  expect(fake.batches).toHaveLength(1);
  expect(chatCalls()).toBe(0);
  expect(resumed.report.counts).toMatchObject({ items: SAMPLE.n, scored: SAMPLE.n });
  expect(resumed.report.cost.batch!.calls).toBe(fake.batches[0]!.entries.length);
}, 60_000);
