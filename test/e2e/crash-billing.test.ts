import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeCall, type FakeReply, startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { exited, REPO, spawnAssay, tempDir } from '../helpers.js';

/**
 * A run killed (SIGKILL) while an item's repair call is out, after the model's first answer to
 * that item was cut short (`finish_reason: length`) and billed: the resumed run must not pay for
 * that answer again, and its report must count it once.
 */

const ITEMS = 6;
/** The item whose first answer is cut short (the fourth row: concurrency 1 takes rows in order). */
const TARGET_ROW = 3;

describe('a run killed during a repair call', () => {
  let fake: VendorFake;
  let dir: string;
  let suitePath: string;
  let target = '';
  /** Phase 1: the repair call of the target item never answers (the process is killed meanwhile). */
  let hangRepair = true;
  const isRepair = (call: { body: { messages?: { role: string }[] } }) =>
    (call.body.messages ?? []).some((m) => m.role === 'assistant');

  beforeAll(async () => {
    dir = await tempDir('assay-crash-billing-');
    const text = await readFile(join(REPO, 'examples', 'data', 'gold_tp_fp3_fp2_fp1_en.csv'), 'utf8');
    const [header, ...lines] = text.split('\n');
    const rows = lines.slice(0, ITEMS);
    // Its source sentence (this row has no quoted fields) appears in no other row's prompt.
    target = rows[TARGET_ROW]!.split(',')[1]!;
    expect(rows.filter((row) => row.includes(target))).toHaveLength(1);
    await writeFile(join(dir, 'gold.csv'), `${[header, ...rows].join('\n')}\n`);
    suitePath = join(dir, 'suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'crash-billing-e2e',
        dataset: { path: 'gold.csv' },
        task: 'gec',
        judge: 'feedback',
        method: 'baseline',
        backends: ['openai:gpt-4o-mini'],
        run: { concurrency: 1, maxAttempts: 1 },
      }),
    );
    fake = await startVendorFake((call: FakeCall): FakeReply => {
      const mine = call.promptText.includes(target);
      if (mine && !isRepair(call)) return { text: '{"label":"TP","reas', finish: 'length' };
      if (mine && hangRepair) return { hangMs: 600_000 };
      return { text: JSON.stringify({ label: 'TP', reason: 'fake model' }) };
    });
  });

  afterAll(async () => {
    await fake?.close();
  });

  it('does not pay for the cut-short answer again on resume, and reports it once', async () => {
    const runDir = join(dir, 'run');
    const env = { ...fake.env, ASSAY_CACHE_DIR: join(dir, 'cache') };
    const args = ['run', suitePath, '--out', runDir, '--no-progress'];
    const firstAsks = () => fake.requests.filter((r) => r.promptText.includes(target) && !isRepair(r));

    // 1. Kill the run once the target's repair call has reached the model.
    const first = spawnAssay(args, env);
    const firstExit = exited(first);
    for (let i = 0; i < 2_400; i += 1) {
      if (fake.requests.some((r) => r.promptText.includes(target) && isRepair(r))) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    first.kill('SIGKILL');
    expect((await firstExit).code).not.toBe(0);
    expect(firstAsks()).toHaveLength(1);
    const answeredBeforeKill = fake.requests.length - 1; // the hung repair call was never answered

    // 2. Resume: the repair is answered this time.
    hangRepair = false;
    const second = await exited(spawnAssay(args, env));
    expect(second.code, second.output).toBe(0);
    expect(second.output).toContain(`${ITEMS} scored, 0 failed`);
    // The cut-short answer was paid once, before the kill.
    expect(firstAsks()).toHaveLength(1);
    const answered = answeredBeforeKill + (fake.requests.length - answeredBeforeKill - 1);

    // 3. An uninterrupted run of the same answers (fresh cache) pays and reports the same.
    const before = fake.requests.length;
    const cleanDir = join(dir, 'clean');
    const clean = await exited(
      spawnAssay(['run', suitePath, '--out', cleanDir, '--no-progress'], {
        ...fake.env,
        ASSAY_CACHE_DIR: join(dir, 'cache2'),
      }),
    );
    expect(clean.code, clean.output).toBe(0);
    expect(answered).toBe(fake.requests.length - before);
    const resumed = JSON.parse(await readFile(join(runDir, 'report.json'), 'utf8'));
    const uninterrupted = JSON.parse(await readFile(join(cleanDir, 'report.json'), 'utf8'));
    expect(resumed.cost.calls).toEqual(uninterrupted.cost.calls);
    expect(resumed.cost.totalUsd).toBeGreaterThan(0);
    expect(resumed.cost.totalUsd).toBeCloseTo(uninterrupted.cost.totalUsd, 12);
  }, 120_000);
});
