import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout } from 'node:timers/promises';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRows } from '../../shared/lib/datasets/read.js';
import { type FakeCall, startVendorFake, type VendorFake, withoutTagNonces } from '../fakes/vendor-fake.js';
import { exited, REPO, spawnAssay, tempDir } from '../helpers.js';

/**
 * Kills a real `assay run` (the CLI, the OpenAI SDK, a local HTTP fake of the OpenAI API)
 * midway with SIGKILL, runs it again, and checks that the run completes with the same report
 * as an uninterrupted one and that nothing answered before the kill is paid for twice.
 */

const ITEMS = 40;
const CONCURRENCY = 4;
/**
 * The fake answers this many requests of the first run and holds every later one until the
 * kill: the first run cannot finish before it is killed, however slow or fast the machine.
 */
const ANSWERED_BEFORE_KILL = 16;

async function goldRows(): Promise<{ header: string; lines: string[] }> {
  const text = await readFile(join(REPO, 'examples', 'data', 'gold_tp_fp3_fp2_fp1_en.csv'), 'utf8');
  // The first rows of this file have no multi-line fields, so line slicing is safe here.
  const [header, ...lines] = text.split('\n');
  return { header: header!, lines: lines.slice(0, ITEMS) };
}

async function resultIds(runDir: string): Promise<string[]> {
  const text = await readFile(join(runDir, 'results.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.endsWith('}'))
    .map((l) => JSON.parse(l).itemId as string);
}

describe('a killed run resumes', () => {
  let fake: VendorFake;
  let dir: string;
  let suitePath: string;
  let uniquePairs = 0;
  /** Until the kill: answer ANSWERED_BEFORE_KILL requests, hold the others (never answered). */
  let holding = true;
  let answered = 0;
  // The judged pair identifies the item (some sentences repeat with different edits).
  const itemOf = (call: { promptText: string }) =>
    /<original>\n(.*)\n<\/original>\n\n<suggested>\n(.*)\n<\/suggested>/
      .exec(withoutTagNonces(call.promptText))
      ?.slice(1, 3)
      .join(' => ');

  beforeAll(async () => {
    dir = await tempDir('assay-resume-');
    const { header, lines } = await goldRows();
    await writeFile(join(dir, 'gold.csv'), `${[header, ...lines].join('\n')}\n`);
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify({
        version: 1,
        name: 'resume-e2e',
        dataset: { path: 'gold.csv' },
        task: 'gec',
        judge: 'feedback',
        method: 'baseline',
        backends: ['openai:gpt-4o-mini'],
        run: { concurrency: CONCURRENCY, maxAttempts: 2 },
      }),
    );
    suitePath = join(dir, 'suite.json');
    const pairs = new Set<string>();
    for await (const row of readRows(createReadStream(join(dir, 'gold.csv')), 'csv')) {
      pairs.add(`${row.record?.src} => ${row.record?.tgt}`);
    }
    uniquePairs = pairs.size;
    // A deterministic "model": the answer depends only on the pair judged.
    fake = await startVendorFake((call: FakeCall) => {
      const digest = createHash('sha256')
        .update(itemOf(call) ?? '')
        .digest();
      const label = ['TP', 'FP3', 'TP', 'FP2', 'TP', 'FP1'][digest[0]! % 6];
      if (holding && answered >= ANSWERED_BEFORE_KILL) return { hangMs: 600_000 };
      answered += 1;
      return { text: JSON.stringify({ label, reason: 'fake model' }) };
    });
  });

  afterAll(async () => {
    await fake?.close();
  });

  it('continues without calling the provider again for finished items, and reports the same', async () => {
    const runDir = join(dir, 'run');
    const env = { ...fake.env, ASSAY_CACHE_DIR: join(dir, 'cache') };
    const args = ['run', suitePath, '--out', runDir, '--no-progress'];

    // 1. Start, and kill -9 once a quarter of the items have results (the fake holds the
    // requests past its first answers, so the run is still going when it is killed).
    const first = spawnAssay(args, env);
    const firstExit = exited(first);
    let doneAtKill: string[] = [];
    while (doneAtKill.length < ITEMS / 4) {
      await setTimeout(25);
      doneAtKill = await resultIds(runDir);
    }
    first.kill('SIGKILL');
    const { code } = await firstExit;
    expect(code).not.toBe(0);
    doneAtKill = await resultIds(runDir);
    expect(doneAtKill.length).toBeGreaterThan(0);
    expect(doneAtKill.length).toBeLessThan(ITEMS);
    // Every request the killed run sent has reached the fake once its connections are closed.
    await fake.disconnected();
    const requestsBefore = fake.requests.length;
    holding = false;

    // 2. The same command again finishes the run.
    const second = await exited(spawnAssay(args, env));
    expect(second.code, second.output).toBe(0);
    expect(second.output).toContain(`${ITEMS} scored, 0 failed`);

    const resentAfter = fake.requests.slice(requestsBefore).map((r) => itemOf(r));
    const answeredBeforeKill = new Set(fake.requests.slice(0, requestsBefore).map((r) => itemOf(r)));
    // Every item was asked; only those in flight at the kill (at most the concurrency) twice.
    const perItem = new Map<string, number>();
    for (const r of fake.requests) perItem.set(itemOf(r)!, (perItem.get(itemOf(r)!) ?? 0) + 1);
    // Identical pairs are one request: the second is answered by the LLM cache.
    expect(perItem.size).toBe(uniquePairs);
    const twice = [...perItem].filter(([, n]) => n > 1).map(([src]) => src);
    expect(twice.length).toBeLessThanOrEqual(CONCURRENCY);
    for (const src of twice) expect(answeredBeforeKill.has(src)).toBe(true);
    expect(resentAfter.length).toBe(uniquePairs - requestsBefore + twice.length);
    const logged = await resultIds(runDir);
    expect(new Set(logged).size).toBe(ITEMS);
    expect(logged).toHaveLength(ITEMS);

    // 3. The same report as an uninterrupted run (fresh cache, fresh folder).
    const cleanDir = join(dir, 'clean');
    const clean = await exited(
      spawnAssay(['run', suitePath, '--out', cleanDir, '--no-progress'], {
        ...fake.env,
        ASSAY_CACHE_DIR: join(dir, 'cache2'),
      }),
    );
    expect(clean.code, clean.output).toBe(0);
    const resumed = JSON.parse(await readFile(join(runDir, 'report.json'), 'utf8'));
    const uninterrupted = JSON.parse(await readFile(join(cleanDir, 'report.json'), 'utf8'));
    // Quality metrics exactly; money to the last few digits (the same amounts, possibly summed
    // in another order: which of two identical rows paid and which hit the cache can differ).
    const { method, ...quality } = resumed.metrics;
    const { method: cleanMethod, ...cleanQuality } = uninterrupted.metrics;
    expect(quality).toEqual(cleanQuality);
    expect(method.accuracyVsCost[0].accuracy).toBe(cleanMethod.accuracyVsCost[0].accuracy);
    expect(resumed.counts).toEqual(uninterrupted.counts);
    expect(resumed.cost.calls).toEqual(uninterrupted.cost.calls);
    // An answer paid for before the kill but logged after it is the same item's cache hit on
    // resume: its cost counts (nothing paid is lost from the report, nothing counted twice).
    expect(resumed.cost.totalUsd).toBeCloseTo(uninterrupted.cost.totalUsd, 12);
    expect(method.accuracyVsCost[0].costUsd).toBeCloseTo(cleanMethod.accuracyVsCost[0].costUsd, 12);
    // Cost and latency columns aside (per item, which of two identical rows paid may differ).
    const withoutSpend = (csv: string) =>
      (parse(csv, { columns: true, bom: true }) as Record<string, string>[]).map(
        ({ cost_usd: _cost, latency_ms: _latency, ...rest }) => rest,
      );
    expect(withoutSpend(await readFile(join(runDir, 'labeled.csv'), 'utf8'))).toEqual(
      withoutSpend(await readFile(join(cleanDir, 'labeled.csv'), 'utf8')),
    );
  }, 120_000);
});
