/**
 * A simulated run's latency figures are the simulator's seeded draws, not the machine's clock:
 * the same suite run twice (different concurrency, so the calls interleave differently) reports
 * the same latency to the last digit, per item and per pass, and so does any gate on latency.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runLocal } from '../../cli/local-run.js';
import type { LatencySummary, Report } from '../../shared/model/report.js';
import { REPO, tempDir } from '../helpers.js';

describe('simulated latency', () => {
  it('is the same in every run of a simulated suite: per item, per cleanup pass, in the labeled rows', async () => {
    const dir = await tempDir('assay-sim-latency-');
    const suitePath = join(dir, 'suite.json');
    await writeFile(
      suitePath,
      JSON.stringify({
        version: 1,
        name: 'sim-latency',
        task: 'cleanup',
        dataset: { path: join(REPO, 'examples', 'data', 'dictation.jsonl') },
        backends: ['openai:gpt-4o-mini'],
        run: { sample: { n: 8, seed: 1 } },
        sim: { latencyMs: 30 },
      }),
    );
    const run = async (name: string, concurrency: number) => {
      const { outDir } = await runLocal({
        suitePath,
        simulate: true,
        concurrency,
        fresh: true,
        outDir: join(dir, name),
        cachePath: join(dir, `${name}.jsonl`),
      });
      return {
        report: JSON.parse(await readFile(join(outDir, 'report.json'), 'utf8')) as Report,
        results: (await readFile(join(outDir, 'results.jsonl'), 'utf8'))
          .trim()
          .split('\n')
          .map(
            (line) => JSON.parse(line) as { itemId: string; stages: Record<string, { latencyMs: number }> },
          )
          .map((r) => [r.itemId, Object.values(r.stages).map((s) => s.latencyMs)] as const)
          .sort(([a], [b]) => a.localeCompare(b)),
      };
    };

    const first = await run('first', 1);
    const second = await run('second', 8);

    expect(first.report.counts).toMatchObject({ items: 8, scored: 8 });
    // Drawn around the configured 30 ms (±50 %) per call: two passes, so 30–90 ms an item.
    expect(first.report.latencyMs.p50).toBeGreaterThanOrEqual(30);
    expect(first.report.latencyMs.p50).toBeLessThan(90);
    expect(second.report.latencyMs).toEqual(first.report.latencyMs);
    const passes = (r: Report) =>
      (r.metrics.cleanup as { latencyMs: Record<'draft' | 'audit' | 'total', LatencySummary> }).latencyMs;
    expect(passes(first.report).draft.p50).toBeGreaterThan(0);
    expect(passes(second.report)).toEqual(passes(first.report));
    expect(second.results).toEqual(first.results);
  });
});
