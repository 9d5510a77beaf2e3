/**
 * Cleanup as a user runs it: the example sweep of three models with `--simulate`, ranked and
 * gated by the family's default gate; and the same suite on an OpenAI-compatible endpoint
 * (`vllm:`) against a fake that answers both passes in the real wire format.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { datasetFileOf, runSuite } from '../../cli/local-run.js';
import type { CleanupFigures } from '../../shared/families/cleanup/report.js';
import type { Report } from '../../shared/model/report.js';
import { validateSuite } from '../../shared/registry/suite.js';
import type { SweepReport } from '../../shared/sweeps/sweep.js';
import { startVendorFake, type VendorFake, withoutTagNonces } from '../fakes/vendor-fake.js';
import { assayCli, REPO, tempDir } from '../helpers.js';

const EXAMPLES = join(REPO, 'examples');

describe('cleanup, end to end', { timeout: 120_000 }, () => {
  it('a sweep of three models: ranked, and each candidate gated by the study gate', async () => {
    const dir = await tempDir('assay-cleanup-');
    const runs = join(dir, 'runs');
    const { stdout } = await assayCli(
      ['run', 'examples/dictation-cleanup.suite.json', '--simulate', '--runs', runs, '--no-progress'],
      dir,
    );
    expect(stdout).toContain('Assay sweep — dictation-cleanup (cleanup), 3 variants');
    const sweepDir = (await readdir(runs)).find((d) => d.startsWith('dictation-cleanup-sweep-'))!;
    const sweep = JSON.parse(await readFile(join(runs, sweepDir, 'sweep.json'), 'utf8')) as SweepReport;
    expect(sweep.rankBy).toMatchObject({
      metric: 'mean',
      better: 'higher',
      over: expect.stringMatching(/own scored items/),
    });
    expect(sweep.variants.map((v) => v.rank)).toEqual(
      [...sweep.variants.map((v) => v.rank)].sort((a, b) => (a ?? 9) - (b ?? 9)),
    );
    expect(sweep.gate?.conditions).toEqual([
      'parse_valid.passRate >= 0.99',
      'hybrid.mean >= baseline - 0.08',
      'p50 latency where words(transcript) >= 150 < baseline',
    ]);
    for (const v of sweep.variants) {
      if (v.name === 'gpt-4o-mini') {
        expect(v.verdict).toBe('baseline');
        continue;
      }
      expect(['promoted', 'not promoted']).toContain(v.verdict);
      // The study gate's three conditions, then the coverage guard.
      expect(v.gate?.conditions).toHaveLength(4);
      expect(v.gate?.conditions[3]?.condition).toBe('coverage not below the baseline (implicit)');
      // The long-text slice has items: three dictations of 156 words.
      expect(v.gate?.conditions[2]?.value).toEqual(expect.any(Number));
    }

    const baseDir = (await readdir(runs)).find((d) => d.startsWith('dictation-cleanup.gpt-4o-mini-'))!;
    const report = JSON.parse(await readFile(join(runs, baseDir, 'report.json'), 'utf8')) as Report;
    expect(Object.keys(report.scores)).toEqual([
      'hybrid',
      'parse_valid',
      'exact_match',
      'similarity',
      'contract_compliance',
      'token_f1',
      'wer',
    ]);
    const cleanup = report.metrics.cleanup as CleanupFigures;
    expect(cleanup.heuristic.items).toBe(3);
    expect(cleanup.heuristicWeight).toBe(0.3);
    expect(cleanup.latencyMs.total.p50).toBeGreaterThan(0);
    expect(cleanup.iMean.literalFalsePositiveRate).not.toBeNull();
    expect(cleanup.spellingAccuracy).not.toBeNull();
  });

  describe('on an OpenAI-compatible endpoint', () => {
    let fake: VendorFake;
    beforeAll(async () => {
      // Both passes, answered by prompt: the draft's system contract, then the audit's.
      fake = await startVendorFake((call) => {
        const expected =
          /<transcript>\n([\s\S]*?)\n<\/transcript>/.exec(withoutTagNonces(call.promptText))?.[1] ?? '';
        const cleaned = expected.replace(/\b(um|uh)\b ?/g, '');
        return call.systemText.includes('You clean up dictated speech')
          ? { text: JSON.stringify({ candidate_text: cleaned, decision_spans: [] }) }
          : { text: JSON.stringify({ cleaned_text: cleaned }) };
      });
    });
    afterAll(() => fake.close());

    it('runs both passes over the wire of a vllm: backend', async () => {
      const dir = await tempDir('assay-cleanup-vllm-');
      const suite = validateSuite(
        {
          version: 1,
          name: 'cleanup-vllm',
          task: 'cleanup',
          dataset: { path: 'data/dictation.jsonl' },
          backends: ['vllm:mistral-7b-instruct'],
          run: { sample: { n: 5, seed: 1 } },
        },
        'vllm cleanup',
      );
      const { outcome } = await runSuite(suite, EXAMPLES, await datasetFileOf(suite, EXAMPLES), {
        outDir: join(dir, 'run'),
        cachePath: join(dir, 'cache.jsonl'),
        env: { VLLM_BASE_URL: `${fake.url}/v1` },
      });
      if (outcome.status !== 'written') throw new Error('not aggregated');
      expect(outcome.report).toMatchObject({ simulated: false, counts: { items: 5, scored: 5, failed: 0 } });
      expect(fake.requests).toHaveLength(10);
      expect(fake.requests.every((r) => r.path === '/v1/chat/completions')).toBe(true);
      expect(outcome.report.scores.parse_valid!.metrics.passRate!.value).toBe(1);
      expect(outcome.report.scores.contract_compliance!.metrics.passRate!.value).toBe(1);
    });
  });
});
