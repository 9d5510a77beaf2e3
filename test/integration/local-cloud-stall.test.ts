/**
 * `assay cloud` on a pipeline that stops making progress (the model never answers one item):
 * it gives up after the stall timeout, writes a report of the items that have results, and
 * says what was left and how to finish.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CloudStalledError, runLocalCloud } from '../../cli/cloud/local-cloud.js';
import { startVendorFake, type VendorFake } from '../fakes/vendor-fake.js';
import { REPO, snapshotEnv, tempDir } from '../helpers.js';

afterAll(snapshotEnv());

const ITEMS = 12;

describe('runLocalCloud on a stalled pipeline', () => {
  let fake: VendorFake | undefined;
  afterAll(async () => {
    await fake?.close();
  });

  it('gives up after the stall timeout, with a report of what it has and how to finish', {
    timeout: 180_000,
  }, async () => {
    process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
    const dir = await tempDir('assay-cloud-stall-');
    const text = await readFile(join(REPO, 'examples', 'data', 'gold_tp_fp3_fp2_fp1_en.csv'), 'utf8');
    const [header, ...lines] = text.split('\n');
    const rows = lines.slice(0, ITEMS);
    // The fourth row's source sentence (no quoted fields) is in no other row.
    const stuck = rows[3]!.split(',')[1]!;
    await writeFile(join(dir, 'gold.csv'), `${[header, ...rows].join('\n')}\n`);
    const suitePath = join(dir, 'stall.suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'stall',
        dataset: { path: 'gold.csv' },
        task: 'gec',
        judge: 'feedback',
        method: 'baseline',
        backends: ['openai:gpt-4o-mini'],
        run: { concurrency: 4, maxAttempts: 1 },
      }),
    );
    // Every item is answered but one, which never is (its connection is dropped at the end).
    fake = await startVendorFake((call) =>
      call.promptText.includes(stuck)
        ? { hangMs: 600_000 }
        : { text: JSON.stringify({ label: 'TP', reason: 'fake model' }) },
    );
    Object.assign(process.env, fake.env);
    const log: string[] = [];

    const error = await runLocalCloud({
      suitePath,
      outDir: join(dir, 'out'),
      stallTimeoutMs: 15_000,
      onLog: (line) => log.push(line),
    }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(CloudStalledError);
    const stalled = error as CloudStalledError;
    const message = stalled.message;
    const recorded = Number(/(\d+) of 12 items have results/.exec(message)?.[1]);
    expect(message).toMatch(
      /^assay cloud gave up on run stall-[0-9a-f]{12}: no progress for \d+ ms \(the stall timeout is 15000 ms\): ingest queue: .*worker queue: \d+ visible, \d+ in flight/,
    );
    expect(recorded).toBeGreaterThan(0);
    expect(recorded).toBeLessThan(ITEMS);
    expect(message).toContain(`assay cloud ${suitePath} --stall-timeout <ms>`);
    expect(message).toContain(`assay run ${suitePath}`);
    // The report of the items that have results, downloaded.
    expect(stalled.outDir).toBe(join(dir, 'out'));
    const report = JSON.parse(await readFile(join(dir, 'out', 'report.json'), 'utf8'));
    expect(report.counts.scored + report.counts.failed).toBe(recorded);
    expect(log.at(-1)).toBe('stopping moto_server');
  });
});
