/**
 * The pairing of two runs as a streaming merge: both runs read at once in report order, items
 * at the same row and id paired at once, an item whose partner has not come waiting for it by id
 * in a window of at most `maxUnpaired` items, the oldest given up beyond it (and said so in the
 * comparison), results out of report order refused. Synthetic results: a label each.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../shared/lib/metrics/index.js';
import { type ItemResult, inputDigest, type RunRecord } from '../../../shared/model/model.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import {
  ComparisonTally,
  type ItemPair,
  type PairingStats,
  pairs,
  pairsOf,
  ReportOrderError,
} from '../../../shared/reports/compare-runs.js';
import { renderComparisonText } from '../../../shared/reports/comparison.js';
import { streamOf } from './compare-fixtures.js';

const AT = '2026-01-01T00:00:00.000Z';

function result(runId: string, itemId: string, row: number, label = 'a'): ItemResult {
  return {
    schemaVersion: 2,
    runId,
    itemId,
    row,
    status: 'scored',
    input: { text: `text of ${itemId}` },
    gold: 'a',
    scores: { label: { kind: 'label', value: label } },
    stages: {},
    simulated: false,
    finishedAt: AT,
  };
}

/** A run of the ids in order, at rows 1, 2, 3… */
const runOf = (runId: string, ids: readonly string[]) => ids.map((id, i) => result(runId, id, i + 1));

const ids = (n: number, prefix = 'i') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

const blank = (): PairingStats => ({ waiting: 0, mostWaiting: 0, outOfWindow: 0 });

/** Every pair as [base id, candidate id, given up], with the stats. */
async function paired(
  base: readonly ItemResult[],
  candidate: readonly ItemResult[],
  maxUnpaired?: number,
): Promise<{ pairs: ItemPair[]; stats: PairingStats }> {
  const stats = blank();
  const out: ItemPair[] = [];
  for await (const pair of pairs(streamOf(base), streamOf(candidate), {
    stats,
    ...(maxUnpaired !== undefined ? { maxUnpaired } : {}),
  }))
    out.push(pair);
  return { pairs: out, stats };
}

const counts = (out: readonly ItemPair[]) => ({
  paired: out.filter((p) => p.base && p.candidate).length,
  onlyBase: out.filter((p) => p.base && !p.candidate).length,
  onlyCandidate: out.filter((p) => !p.base && p.candidate).length,
  outOfWindow: out.filter((p) => p.outOfWindow).length,
});

/** Shuffles `items` within consecutive blocks of `size` (seeded). */
function shuffledInBlocks<T>(items: readonly T[], size: number, seed: number): T[] {
  const random = mulberry32(seed);
  const out = [...items];
  for (let start = 0; start < out.length; start += size) {
    const end = Math.min(start + size, out.length);
    for (let i = end - 1; i > start; i--) {
      const j = start + Math.floor(random() * (i - start + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
  }
  return out;
}

describe('pairs', () => {
  it('pairs identical runs item by item as they come, with nothing waiting', async () => {
    const all = ids(1000);
    const { pairs: out, stats } = await paired(runOf('a', all), runOf('b', all));
    expect(out.map((p) => [p.base?.itemId, p.candidate?.itemId])).toEqual(all.map((id) => [id, id]));
    expect(stats).toEqual({ waiting: 0, mostWaiting: 0, outOfWindow: 0 });
  });

  it('leaves out invalid rows on both sides', async () => {
    const base = runOf('a', ids(5));
    const candidate = runOf('b', ids(5));
    for (const run of [base, candidate])
      run[2] = { ...run[2]!, status: 'failed', failure: { kind: 'invalid_row', message: 'unreadable' } };
    const { pairs: out } = await paired(base, candidate);
    expect(out.map((p) => p.base?.itemId)).toEqual(['i0', 'i1', 'i3', 'i4']);
  });

  it('pairs by id across rows inserted, deleted and shuffled, within the window', async () => {
    const all = ids(2000);
    const deleted = new Set(all.filter((_, i) => i % 37 === 5));
    const edited: string[] = [];
    all.forEach((id, i) => {
      if (i % 50 === 0) edited.push(`new${i}`);
      if (!deleted.has(id)) edited.push(id);
    });
    const base = runOf('a', all);
    const candidate = runOf('b', shuffledInBlocks(edited, 8, 3));
    const expected = {
      paired: all.length - deleted.size,
      onlyBase: deleted.size,
      onlyCandidate: edited.length - (all.length - deleted.size),
    };
    const roomy = await paired(base, candidate, 200);
    expect(counts(roomy.pairs)).toEqual({ ...expected, outOfWindow: 0 });
    for (const p of roomy.pairs) if (p.base && p.candidate) expect(p.candidate.itemId).toBe(p.base.itemId);
    expect(roomy.stats.mostWaiting).toBeLessThanOrEqual(200);
    // Rows without a partner wait too, until the window is full: then the oldest of them are
    // given up first, and every item with a partner still pairs.
    const tight = await paired(base, candidate, 100);
    const c = counts(tight.pairs);
    expect({ ...c, outOfWindow: 0 }).toEqual({ ...expected, outOfWindow: 0 });
    expect(c.outOfWindow).toBeGreaterThan(0);
    expect(tight.stats.mostWaiting).toBe(100);
  });

  it('pairs a row moved far when few items wait meanwhile', async () => {
    // i3 moves from row 4 to the end: it waits for its partner the whole run, alone.
    const all = ids(500);
    const moved = [...all.filter((id) => id !== 'i3'), 'i3'];
    const { pairs: out, stats } = await paired(runOf('a', all), runOf('b', moved), 5);
    expect(counts(out)).toEqual({ paired: 500, onlyBase: 0, onlyCandidate: 0, outOfWindow: 0 });
    expect(stats.mostWaiting).toBeLessThanOrEqual(5);
  });

  it('gives up the oldest waiting items beyond the window, and the comparison says so', async () => {
    // Twenty rows move to the end: they wait the whole run, and every later row of the
    // candidate comes twenty rows early, so about forty items wait at once.
    const all = ids(300);
    const movedIds = new Set(all.slice(3, 23));
    const base = runOf('a', all);
    const candidate = runOf('b', [...all.filter((id) => !movedIds.has(id)), ...movedIds]);
    const roomy = await paired(base, candidate, 45);
    expect(counts(roomy.pairs)).toEqual({ paired: 300, onlyBase: 0, onlyCandidate: 0, outOfWindow: 0 });
    expect(roomy.stats.mostWaiting).toBeLessThanOrEqual(45);

    // With room for thirty, items are given up; the partner of one given up is unpaired too
    // (and, waiting in its turn, crowds the window: a window smaller than the rows moved pairs
    // little, and the comparison says so).
    const { pairs: out, stats } = await paired(base, candidate, 30);
    const c = counts(out);
    expect(c.outOfWindow).toBeGreaterThan(0);
    expect(stats.outOfWindow).toBe(c.outOfWindow);
    expect(stats.mostWaiting).toBe(30);
    expect(c.paired + c.onlyBase).toBe(300);
    expect(c.paired + c.onlyCandidate).toBe(300);
    expect(c.paired).toBeLessThan(300);

    const tally = new ComparisonTally(runRecord('a'), runRecord('b'));
    for (const pair of out) tally.add(pair.base, pair.candidate, pair.outOfWindow);
    const comparison = tally.comparison();
    expect(comparison.items).toEqual(c);
    expect(renderComparisonText(comparison)).toContain(
      `Note: ${c.outOfWindow} items could not be paired within the pairing window`,
    );
    const all300 = new ComparisonTally(runRecord('a'), runRecord('b'));
    for (const pair of roomy.pairs) all300.add(pair.base, pair.candidate, pair.outOfWindow);
    expect(all300.comparison().items).toEqual({ paired: 300, onlyBase: 0, onlyCandidate: 0 });
    expect(renderComparisonText(all300.comparison())).not.toContain('Note:');
  });

  it('marks an item whose input or gold changed between the runs, at its row or moved, and never pairs it', async () => {
    const all = ids(50);
    const candidate = runOf('b', [...all.filter((id) => id !== 'i9'), 'i9']);
    const edit = (id: string, change: Partial<ItemResult>) => {
      const at = candidate.findIndex((r) => r.itemId === id);
      candidate[at] = { ...candidate[at]!, ...change };
    };
    edit('i4', { input: { text: 'text of i4, edited' } });
    edit('i9', { gold: 'b' });
    const { pairs: out } = await paired(runOf('a', all), candidate);
    expect(out.filter((p) => p.changed).map((p) => [p.base?.itemId, p.candidate?.itemId])).toEqual([
      ['i4', 'i4'],
      ['i9', 'i9'],
    ]);
    const tally = new ComparisonTally(runRecord('a'), runRecord('b'));
    for (const pair of out) tally.add(pair.base, pair.candidate, pair.outOfWindow);
    expect(tally.comparison().items).toEqual({ paired: 48, onlyBase: 0, onlyCandidate: 0, changed: 2 });
    expect(tally.unpaired).toBe(2);
    // A result that carries its digest is read by it: the same content pairs.
    const digested = new ComparisonTally(runRecord('a'), runRecord('b'));
    const a = result('a', 'x', 1);
    digested.add({ ...a, inputDigest: inputDigest(a) }, result('b', 'x', 1));
    expect(digested.comparison().items).toEqual({ paired: 1, onlyBase: 0, onlyCandidate: 0 });
  });

  it('refuses results out of report order, saying which run and where', async () => {
    const sorted = runOf('a', ids(10));
    const broken = [...sorted];
    [broken[4], broken[6]] = [broken[6]!, broken[4]!];
    for (const [side, base, candidate] of [
      ['base', broken, sorted],
      ['candidate', sorted, broken],
    ] as const) {
      const run = paired(base, candidate);
      await expect(run).rejects.toThrow(ReportOrderError);
      await expect(run).rejects.toMatchObject({ side });
      await expect(run).rejects.toThrow(
        `the ${side} run's results are not in report order: row 6 (item i5) came after row 7 (item i6); sort them first (inReportOrder)`,
      );
      expect(() => [...pairsOf(base, candidate)]).toThrow(/not in report order/);
    }
  });

  it('keeps no more than maxUnpaired items waiting over 200,000 pairs', async () => {
    const n = 200_000;
    const all = ids(n);
    const edited: string[] = [];
    all.forEach((id, i) => {
      if (i % 700 === 0) edited.push(`new${i}`);
      if (i % 1000 !== 1) edited.push(id);
    });
    const candidate = runOf('b', shuffledInBlocks(edited, 500, 11));
    const base = runOf('a', all);
    for (const maxUnpaired of [2_000, 300]) {
      const stats = blank();
      let waitingSeen = 0;
      let paired = 0;
      for await (const pair of pairs(streamOf(base), streamOf(candidate), { maxUnpaired, stats })) {
        waitingSeen = Math.max(waitingSeen, stats.waiting);
        if (pair.base && pair.candidate) paired += 1;
      }
      expect(waitingSeen).toBeLessThanOrEqual(maxUnpaired);
      expect(stats.mostWaiting).toBeLessThanOrEqual(maxUnpaired);
      // Every item with a partner pairs; with the smaller window, rows without one (inserted,
      // deleted) fill it and are given up, the oldest first.
      expect(paired).toBe(n - n / 1000);
      if (maxUnpaired === 2_000) expect(stats.outOfWindow).toBe(0);
      else {
        expect(stats.mostWaiting).toBe(maxUnpaired);
        expect(stats.outOfWindow).toBeGreaterThan(0);
      }
    }
  }, 60_000);
});

function runRecord(runId: string): RunRecord {
  return {
    schemaVersion: 2,
    runId,
    suiteName: 'tone',
    suite: validateSuite(
      {
        version: 1,
        name: 'tone',
        task: 'judge',
        dataset: { path: 'x.csv' },
        judge: { prompt: 'tone.md', labels: ['a', 'b'] },
        backends: ['sim:x'],
      },
      'test',
    ),
    prompts: {},
    status: 'done',
    invalidRows: 0,
    startedAt: AT,
    reportPrefix: '',
    datasetKey: 'x.csv',
    simulated: true,
  };
}
