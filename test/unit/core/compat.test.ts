/**
 * Runs written before task families (results without a schema version, one `prediction` per
 * item) still read: their reports rebuild with the same figures, and they compare with runs
 * written now. The fixtures are sampled runs of the GEC examples (24 items each, simulated),
 * with the report.json the earlier Assay wrote for each.
 */
import { cp, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runLocal } from '../../../cli/local-run.js';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { LocalRunStore } from '../../../shared/adapters/local/local-run-store.js';
import { proportionInterval } from '../../../shared/lib/metrics/intervals.js';
import { compareRuns, type RunSide } from '../../../shared/reports/compare-runs.js';
import { writeRunReport } from '../../../shared/use-cases/aggregate-run.js';
import { REPO, tempDir } from '../../helpers.js';

const V1 = join(REPO, 'test', 'fixtures', 'v1-runs');

async function v1Run(name: string): Promise<{ dir: string; side: RunSide }> {
  const dir = join(await tempDir(), name);
  await cp(join(V1, name), dir, { recursive: true });
  const store = new LocalRunStore(dir);
  const { runId } = JSON.parse(await readFile(join(dir, 'run.json'), 'utf8')) as { runId: string };
  const run = (await store.getRun(runId))!;
  const results = [];
  for await (const r of store.results(runId)) results.push(r);
  return { dir, side: { run, results } };
}

/**
 * The metrics written then, with what reports changed since: the positive class's name (its
 * precision, recall and F1 were there already, and unchanged), and the intervals — a proportion's
 * is Wilson's with a continuity correction (binary accuracy has one now), and a bootstrap
 * interval is withheld on fewer items than its minimum (24 items: below every F1's and κ's).
 */
function withPositiveClass(metrics: {
  n: number;
  accuracy: number;
  binary: { accuracy: number; positive: Record<string, unknown> };
  ci: Record<string, unknown>;
}): unknown {
  const n = metrics.n - ((metrics as { errors?: number }).errors ?? 0);
  const { ci: _before, ...figures } = metrics;
  return {
    ...figures,
    binary: { ...metrics.binary, positive: { label: 'TP/TN', ...metrics.binary.positive } },
    ci: {
      accuracy: proportionInterval(Math.round(metrics.accuracy * n), n),
      binaryAccuracy: proportionInterval(Math.round(metrics.binary.accuracy * n), n),
    },
  };
}

describe('runs written before task families', async () => {
  const names = (await readdir(V1)).sort();

  it('are kept as fixtures for every GEC method example that has one', () => {
    expect(names).toEqual([
      'gec-edit-de',
      'gec-ensemble-de',
      'gec-escalation-en',
      'gec-modular-en',
      'quickstart',
    ]);
  });

  it.each(names)(
    '%s: the rebuilt report has the same metrics, counts and cost as the one written then',
    async (name) => {
      const before = JSON.parse(await readFile(join(V1, name, 'report.json'), 'utf8'));
      const { dir, side } = await v1Run(name);
      const { report } = await writeRunReport(
        { runStore: new LocalRunStore(dir), reports: new FolderBlobStore(dir) },
        side.run.runId,
      );
      expect(report.metrics).toEqual(withPositiveClass(before.metrics));
      expect(report.counts).toEqual(before.counts);
      expect(report.cost.totalUsd).toBe(before.cost.totalUsd);
      expect(report.scores.label!.metrics.accuracy!.value).toBe(before.metrics.accuracy);
      expect(side.results.every((r) => r.schemaVersion === 2)).toBe(true);
    },
  );

  it('compare with a run written now, item by item', async () => {
    const { side: old } = await v1Run('quickstart');
    const out = await tempDir();
    const { outDir, run } = await runLocal({
      suitePath: join(REPO, 'examples', 'quickstart.suite.json'),
      backends: old.run.suite.backends,
      sample: old.run.suite.run.sample,
      outDir: join(out, 'now'),
      cachePath: join(out, 'cache.jsonl'),
      env: {},
    });
    const store = new LocalRunStore(outDir);
    const results = [];
    for await (const r of store.results(run.runId)) results.push(r);
    const comparison = compareRuns(old, { run, results });
    expect(comparison.items.paired).toBe(24);
    expect(comparison.scores.label!.deltas.accuracy!.n).toBe(24);
    expect(comparison.promptChanges.map((p) => p.path)).toEqual(
      expect.arrayContaining(['gec/feedback/baseline.md', 'gec/common/repair.md']),
    );
  });
});
