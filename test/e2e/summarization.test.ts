/**
 * Summarization as a user runs it: the SummEdits suite with `--simulate` (given summaries, each
 * score's agreement with the human labels), and a real run — a judge behind an HTTP fake of
 * OpenAI, NLI and embeddings from local ONNX models the test builds — with its spend booked.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runLocal } from '../../cli/local-run.js';
import type { SummarizationFigures } from '../../shared/families/summarization/report.js';
import type { ItemResult } from '../../shared/model/model.js';
import type { Report } from '../../shared/model/report.js';
import { writeTinyEmbedder, writeTinyNli } from '../fakes/tiny-onnx.js';
import { startVendorFake, withoutTagNonces } from '../fakes/vendor-fake.js';
import { assayCli, tempDir } from '../helpers.js';

const SCORERS = ['composite', 'nli', 'judge', 'coverage'];

describe('summarization, end to end', { timeout: 180_000 }, () => {
  it('SummEdits with --simulate: every score against the human labels, ROC-AUC and balanced accuracy with CIs', async () => {
    const dir = await tempDir('assay-summedits-');
    const out = join(dir, 'run');
    const { stdout } = await assayCli(
      ['run', 'examples/summedits.suite.json', '--simulate', '--out', out, '--no-progress'],
      dir,
    );
    expect(stdout).toMatch(/summedits-samsum: 664 scored, 0 failed/);
    const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as Report;
    expect(report).toMatchObject({ task: 'summarization', simulated: true, primaryScorer: 'composite' });
    expect(report.config).toMatchObject({ against: 'document', nli: 'llm', embedder: 'sim:embed' });
    expect(Object.keys(report.scores)).toEqual(SCORERS);
    for (const name of SCORERS) {
      const { rocAuc, balancedAccuracy } = report.scores[name]!.metrics;
      expect(rocAuc, name).toMatchObject({ n: 664, ci: [expect.any(Number), expect.any(Number)] });
      expect(balancedAccuracy, name).toMatchObject({ n: 664 });
      expect(rocAuc!.ci![0]).toBeLessThanOrEqual(rocAuc!.value!);
    }
    // The judge and the LLM-as-NLI simulators draw from the labels; the lexical coverage cannot.
    expect(report.scores.judge!.metrics.rocAuc!.value!).toBeGreaterThan(0.8);
    expect(report.scores.nli!.metrics.rocAuc!.value!).toBeGreaterThan(0.8);
    expect((report.metrics.summarization as SummarizationFigures).judged).toBe(664);
    const text = await readFile(join(out, 'report.txt'), 'utf8');
    expect(text).toMatch(/ROC-AUC\s+0\.\d{3}\s+\[0\.\d{3}, 0\.\d{3}\]\s+n 664/);
    expect(text).toContain('SummEdits: GPT-4 0.824 balanced accuracy, humans ~0.909');
    // A score that ranks well but sits on the wrong side of its declared threshold: the
    // threshold chosen by cross-validation recovers the balanced accuracy its ROC-AUC promises.
    for (const name of ['composite', 'judge', 'nli']) {
      const { cvBalancedAccuracy, calibratedThreshold } = report.scores[name]!.metrics;
      expect(cvBalancedAccuracy, name).toMatchObject({ n: 664 });
      expect(cvBalancedAccuracy!.value!, name).toBeGreaterThan(0.75);
      expect(calibratedThreshold!.value, name).toEqual(expect.any(Number));
    }
    expect(report.scores.judge!.bias!.length).toMatchObject({
      n: 664,
      byGold: { '0': { n: expect.any(Number) }, '1': { n: expect.any(Number) } },
    });
    expect(text).toMatch(/CV balanced acc\.\s+0\.\d{3}\s+n 664/);
    expect(text).toMatch(/fitted threshold\s+-?\d+\.\d{3}\s+n 664/);
    expect(text).toMatch(
      /length bias ρ\s+-?\d\.\d{3}\s+n 664 {3}by gold: 0 -?\d\.\d{3} \(n \d+\), 1 -?\d\.\d{3} \(n \d+\)/,
    );
  });

  it('for real: summaries written, judged over HTTP, NLI and coverage by local ONNX models', async () => {
    const dir = await tempDir('assay-summarize-');
    const nli = await writeTinyNli(join(dir, 'models', 'nli'));
    const embedder = await writeTinyEmbedder(join(dir, 'models', 'minilm'));
    const rows = [
      {
        id: 'a',
        document: 'The court ruled. Marbury sued Madison.',
        reference: 'The court ruled. Marbury sued Madison.',
      },
      { id: 'b', document: 'The court did not rule.', reference: 'The court did not rule.' },
    ];
    await writeFile(join(dir, 'docs.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n'));
    await writeFile(
      join(dir, 'suite.json'),
      JSON.stringify({
        version: 1,
        name: 'real-summaries',
        task: 'summarization',
        dataset: { path: 'docs.jsonl' },
        summarization: { nli: `onnx:${nli}`, embedder: `onnx:${embedder}` },
        backends: ['openai:gpt-4o-mini'],
      }),
    );
    const judged = {
      factual_accuracy: 5,
      completeness: 3,
      factual_errors: [],
      hedging_detected: false,
      hedging_examples: [],
      key_omissions: ['the holding'],
      overall_assessment: 'fine',
    };
    // The summarizer writes "The court ruled." for both: right for a, a contradiction for b.
    const fake = await startVendorFake(({ promptText }) => ({
      text: withoutTagNonces(promptText).includes('<case>') ? 'The court ruled.' : JSON.stringify(judged),
    }));
    try {
      const { outDir } = await runLocal({
        suitePath: join(dir, 'suite.json'),
        outDir: join(dir, 'run'),
        env: fake.env,
        cachePath: join(dir, 'cache.jsonl'),
      });
      const report = JSON.parse(await readFile(join(outDir, 'report.json'), 'utf8')) as Report;
      expect(report).toMatchObject({ simulated: false, counts: { items: 2, scored: 2 } });
      const results = (await readFile(join(outDir, 'results.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as ItemResult)
        .sort((x, y) => x.itemId.localeCompare(y.itemId));
      const [a, b] = results;
      expect(a!.output).toEqual({ summary: 'The court ruled.' });
      // a: nothing contradicted; b: its one reference sentence is ("not" vs "ruled").
      expect(a!.scores.nli).toMatchObject({ value: 1, decidedBy: `onnx:${nli}` });
      expect(b!.scores.nli).toMatchObject({
        value: 0,
        details: { contradicted: ['The court did not rule.'] },
      });
      // (5 + 3)/2 → 0.75
      expect(a!.scores.judge).toMatchObject({ value: 0.75, details: { keyOmissions: ['the holding'] } });
      expect(a!.scores.coverage).toMatchObject({ decidedBy: `onnx:${embedder}` });
      // Encoder calls are booked under their stages beside the LLM calls.
      expect(Object.keys(a!.stages).sort()).toEqual(['coverage', 'judge', 'nli', 'summarize']);
      expect(a!.stages.nli).toMatchObject({ calls: 1, costUsd: 0 });
      expect(a!.stages.coverage!.usage.input).toBeGreaterThan(0);
      expect(fake.requests).toHaveLength(4);
    } finally {
      await fake.close();
    }
  });
});
