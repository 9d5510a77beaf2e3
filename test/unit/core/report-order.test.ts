import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '../../../shared/adapters/local/folder-blob-store.js';
import { classificationMetrics, LabelPairCounts } from '../../../shared/lib/metrics/index.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import { collectResults, inReportOrder, sourceOf } from '../../../shared/model/report-order.js';
import type { RunStore } from '../../../shared/ports/ports.js';
import { taskFor } from '../../../shared/registry/registry.js';
import { REPORT_FILES, renderLabeledCsv, resultView } from '../../../shared/reports/files.js';
import { reportOrder } from '../../../shared/reports/report.js';
import { writeRunReport } from '../../../shared/use-cases/aggregate-run.js';
import { suite, tempDir } from '../../helpers.js';

const LABELS = ['TP', 'FP1', 'FP2', 'FP3'];

/** Item i: a label judged right or wrong, every 13th failed, every 17th an invalid row; rows repeat in pairs. */
function result(i: number): ItemResult {
  const base: ItemResult = {
    schemaVersion: 2,
    runId: 'r1',
    itemId: `item-${String(i).padStart(4, '0')}`,
    row: Math.floor(i / 2) + 1,
    status: 'scored',
    // Not ASCII: a spill file is read back by byte offsets.
    input: { src: `src ${i}, "quoted" ü€😀`, tgt: `tgt ${i}` },
    gold: LABELS[i % 4],
    scores: {},
    stages: {
      classify: {
        calls: 1,
        cachedCalls: i % 3 === 0 ? 1 : 0,
        costUsd: 0.0001 * (i % 5) + 1e-9 * i,
        latencyMs: 50 + ((i * 37) % 200),
        usage: { input: 100 + i, output: 10, cached: i % 3 === 0 ? 100 : 0 },
      },
    },
    simulated: false,
    finishedAt: '2025-01-01T00:00:30.000Z',
  };
  if (i % 17 === 0)
    return { ...base, status: 'failed', failure: { kind: 'invalid_row', message: `row ${base.row}: bad` } };
  if (i % 13 === 0)
    return { ...base, status: 'failed', failure: { kind: 'parse', message: `could not parse ${i}` } };
  const label = LABELS[(i * 7 + Math.floor(i / 4)) % 4]!;
  return {
    ...base,
    output: { label, reason: `because ${i}` },
    scores: { label: { kind: 'label', value: label, explanation: `because ${i}` } },
  };
}

/** A deterministic shuffle (completion order differs from row order). */
function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  let state = 7;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const RESULTS = Array.from({ length: 300 }, (_, i) => result(i));

function runRecord(): RunRecord {
  return {
    schemaVersion: 2,
    runId: 'r1',
    suiteName: 'test-suite',
    suite: suite(),
    prompts: {},
    status: 'running',
    total: RESULTS.length,
    invalidRows: 0,
    startedAt: '2025-01-01T00:00:00.000Z',
    reportPrefix: 'reports/',
    datasetKey: 'data.csv',
    simulated: false,
  };
}

/** The read side of a run store over results in a given order. */
function storeOf(results: readonly ItemResult[]): RunStore {
  const run = runRecord();
  return {
    getRun: async () => run,
    results: () => sourceOf(results)(),
  } as unknown as RunStore;
}

describe('inReportOrder', () => {
  it('reads a shuffled stream back in report order, as often as asked, a spill file at a time', async () => {
    const ordered = await inReportOrder(sourceOf(shuffled(RESULTS)), { bucketSize: 7 });
    const expected = reportOrder(RESULTS).map((r) => r.itemId);
    try {
      expect(ordered.count).toBe(RESULTS.length);
      expect((await collectResults(ordered.results())).map((r) => r.itemId)).toEqual(expected);
      expect(await collectResults(ordered.results())).toEqual(reportOrder(RESULTS));
      // Ties on the row are broken by item id.
      expect(expected.slice(0, 2)).toEqual(['item-0000', 'item-0001']);
    } finally {
      await ordered.close();
    }
    await expect(collectResults(ordered.results())).rejects.toThrow(/ENOENT/);
  });

  it('re-reads a stream already in report order as it is, without spilling', async () => {
    const source = sourceOf(reportOrder(RESULTS));
    const ordered = await inReportOrder(source, { bucketSize: 7 });
    expect(ordered.results).toBe(source);
    expect((await inReportOrder(source)).results).not.toBe(source);
  });

  it('says so when the results change between its passes', async () => {
    let reads = 0;
    const source = () => sourceOf(shuffled(RESULTS).slice(0, reads++ === 0 ? 300 : 299))();
    await expect(inReportOrder(source, { bucketSize: 7 })).rejects.toThrow(/the results changed/);
  });

  it('sorts a run of at most one spill file in memory, reading the store once', async () => {
    let reads = 0;
    const results = shuffled(RESULTS);
    const source = () => {
      reads += 1;
      return sourceOf(results)();
    };
    const ordered = await inReportOrder(source, { bucketSize: RESULTS.length });
    const spilled = await inReportOrder(sourceOf(results), { bucketSize: 7 });
    try {
      const once = (await collectResults(ordered.results())).map((r) => r.itemId);
      expect(once).toEqual((await collectResults(spilled.results())).map((r) => r.itemId));
      expect(once).toEqual(reportOrder(RESULTS).map((r) => r.itemId));
      expect((await collectResults(ordered.results())).map((r) => r.itemId)).toEqual(once);
      expect(reads).toBe(1);
    } finally {
      await spilled.close();
    }
  });

  it('reads a source once when told to, past what it holds: shuffled (ties on rows) or in order', async () => {
    for (const given of [shuffled(RESULTS), reportOrder(RESULTS)]) {
      let reads = 0;
      const source = () => {
        reads += 1;
        return sourceOf(given)();
      };
      const ordered = await inReportOrder(source, { bucketSize: 7, readOnce: true });
      try {
        expect(ordered.count).toBe(RESULTS.length);
        expect(await collectResults(ordered.results())).toEqual(reportOrder(RESULTS));
        expect(await collectResults(ordered.results())).toEqual(reportOrder(RESULTS));
        expect(reads).toBe(1);
      } finally {
        await ordered.close();
      }
    }
  });
});

describe('writeRunReport, streaming', () => {
  const now = () => new Date('2025-01-01T00:02:00.000Z');

  async function written(results: readonly ItemResult[]) {
    const dir = await tempDir();
    const reports = new FolderBlobStore(dir);
    const { report, keys } = await writeRunReport({ runStore: storeOf(results), reports, now }, 'r1');
    const files = Object.fromEntries(
      await Promise.all(
        REPORT_FILES.map(async (name) => [name, await readFile(join(dir, 'reports', name), 'utf8')] as const),
      ),
    );
    return { dir, report, keys, files };
  }

  it('writes the same files, byte for byte, whatever order the store gives the results in', async () => {
    const straight = await written(reportOrder(RESULTS));
    const scrambled = await written(shuffled(RESULTS));
    expect(scrambled.files).toEqual(straight.files);
    expect(scrambled.keys).toEqual(REPORT_FILES.map((name) => `reports/${name}`));
    // No temporary file is left beside the reports.
    expect(await readdir(join(scrambled.dir, 'reports'))).toEqual([...REPORT_FILES].sort());
  });

  it("fails with the store's error when a report file cannot be written", async () => {
    // Its temporary section files are closed before their folder is removed: a file still being
    // opened then could make the clean-up fail (rarely) with ENOTEMPTY instead of this error.
    const reports = new (class extends FolderBlobStore {
      override async putStream(key: string, body: AsyncIterable<Uint8Array | string>) {
        if (key.endsWith('labeled.csv')) throw new Error('the bucket refused labeled.csv');
        return super.putStream(key, body);
      }
    })(await tempDir());
    await expect(writeRunReport({ runStore: storeOf(RESULTS), reports, now }, 'r1')).rejects.toThrow(
      'the bucket refused labeled.csv',
    );
  });

  it('streams the item files as the whole-array renderer writes them, sections counted and in report order', async () => {
    const { files, report } = await written(shuffled(RESULTS));
    const sorted = reportOrder(RESULTS);
    const family = taskFor(runRecord().suite);
    expect(files['labeled.csv']).toBe(
      renderLabeledCsv(sorted, resultView(family, runRecord().suite, sorted)),
    );
    const failed = sorted.filter((r) => r.status === 'failed').length;
    expect(report.counts.failed).toBe(failed);
    expect(files['errors.txt']).toMatch(
      new RegExp(`^# Failed items \\(${failed}\\)\\n\\n\\[item-0000\\] row 1 `),
    );
    const right = sorted.filter((r) => r.scores.label?.value === r.gold).length;
    expect(files['correct.txt']!.startsWith(`# Right by label (${right})\n\n`)).toBe(true);
    const blocks = files['correct.txt']!.match(/^\[item-\d+\]/gm)!;
    expect(blocks).toHaveLength(right);
    expect([...blocks].sort()).toEqual(blocks);
    expect(report.counts.items).toBe(RESULTS.length);
    // The family's own figures read the same pass (through the relay): judged = not invalid rows.
    const judged = RESULTS.filter((r) => r.failure?.kind !== 'invalid_row').length;
    const method = report.metrics.method as { accuracyVsCost: { n: number; costUsd: number }[] };
    const errors = RESULTS.filter((r) => r.failure?.kind === 'parse').length;
    expect(method.accuracyVsCost[0]!.n).toBe(judged - errors);
    expect(method.accuracyVsCost[0]!.costUsd).toBeCloseTo(
      sorted
        .filter((r) => r.failure?.kind !== 'invalid_row')
        .reduce((s, r) => s + r.stages.classify!.costUsd, 0),
      12,
    );
  });
});

describe('FolderBlobStore.putStream', () => {
  it('writes the chunks as one object, and leaves nothing when the body fails', async () => {
    const dir = await tempDir();
    const store = new FolderBlobStore(dir);
    await store.putStream(
      'a/b.txt',
      (async function* () {
        yield 'one ';
        yield new TextEncoder().encode('two');
      })(),
    );
    expect(await readFile(join(dir, 'a', 'b.txt'), 'utf8')).toBe('one two');
    await expect(
      store.putStream(
        'a/c.txt',
        (async function* () {
          yield 'half';
          throw new Error('the source broke');
        })(),
      ),
    ).rejects.toThrow('the source broke');
    expect(await readdir(join(dir, 'a'))).toEqual(['b.txt']);
  });
});

describe('classificationMetrics over counted pairs', () => {
  it('gives the figures of the pairs it counted, and refuses a bootstrap', () => {
    const pairs = RESULTS.map((r) => ({
      gold: r.gold!,
      pred: r.scores.label ? String(r.scores.label.value) : 'Error',
    }));
    const counted = new LabelPairCounts();
    for (const p of pairs) counted.add(p.gold, p.pred);
    const options = { bootstrap: false as const, labelOrder: ['TP', 'FP3', 'FP2', 'FP1'] };
    expect(classificationMetrics(counted, options)).toEqual(classificationMetrics(pairs, options));
    expect(() => classificationMetrics(counted)).toThrow(/bootstrap: false/);
  });
});
