/**
 * A run answered from the LLM cache costs what the evaluation costs at list price per 10K items
 * (cached answers priced as if called), and says apart what it paid now. Through the CLI, the
 * real OpenAI SDK against the local HTTP fake of the API.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usd } from '../../shared/lib/format.js';
import type { Report } from '../../shared/model/report.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, suiteInput, tempDir } from '../helpers.js';

const GOLD_CSV = join(REPO, 'test', 'fixtures', 'pipeline', 'gold-12-plus-2-bad.csv');

let fake: VendorFake;
beforeAll(async () => {
  fake = await startVendorFake(() => undefined);
});
afterAll(() => fake.close());

describe('cost per 10K of a run served from the LLM cache', { timeout: 120_000 }, () => {
  it('is at list price, with what was paid now and the share from the cache shown apart', async () => {
    const dir = await tempDir('assay-cache-cost-');
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify(
        suiteInput({
          name: 'cache-cost',
          judge: 'edit',
          dataset: { path: GOLD_CSV },
          backends: ['openai:gpt-4o-mini'],
        }),
      ),
    );
    const env = { ...process.env, ...fake.env, ASSAY_CACHE_DIR: join(dir, 'cache') };
    const assay = (...args: string[]) =>
      promisify(execFile)(process.execPath, [join(REPO, 'bin', 'assay.mjs'), ...args, '--no-progress'], {
        cwd: dir,
        env,
      });
    const report = async (runDir: string) =>
      JSON.parse(await readFile(join(dir, 'runs', runDir, 'report.json'), 'utf8')) as Report;

    const first = await assay('run', 'suite.json');
    const [paidRun] = await readdir(join(dir, 'runs'));
    const paid = await report(paidRun!);
    expect(paid.cost.cachedCalls).toBe(0);
    expect(paid.cost.totalUsd).toBeGreaterThan(0);
    const per10k = paid.cost.per10kUsd!;
    expect(first.stdout).toContain(`per 10K ${usd(per10k)}`);

    const cached = await assay('run', 'suite.json', '--fresh');
    const cachedRun = (await readdir(join(dir, 'runs'))).find(
      (d) => d !== paidRun && d.startsWith('cache-cost'),
    )!;
    const again = await report(cachedRun);
    expect(again.cost.totalUsd).toBe(0);
    expect(again.cost.cachedCalls).toBe(paid.cost.calls);
    // The same evaluation costs the same per 10K, whoever paid for its answers.
    expect(again.cost.per10kUsd).toBeCloseTo(per10k, 10);
    expect(cached.stdout).toContain(
      `per 10K ${usd(per10k)} at list price; paid now ${usd(0)} (100% from cache)`,
    );
    const text = await readFile(join(dir, 'runs', cachedRun, 'report.txt'), 'utf8');
    expect(text).toContain(`per 10K ${usd(per10k)}`);
  });
});
