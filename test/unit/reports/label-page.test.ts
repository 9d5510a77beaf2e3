import { describe, expect, it } from 'vitest';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import { validateSuite } from '../../../shared/registry/suite.js';
import { labelsCsv } from '../../../shared/reports/html/page/label.js';
import { keys, NotLabellableError, planLabels } from '../../../shared/reports/label-page.js';

function judgeRun(judge: Record<string, unknown>): RunRecord {
  const suite = validateSuite(
    {
      version: 1,
      name: 'tone',
      task: 'judge',
      dataset: { path: 'data.csv' },
      judge: { prompt: 'tone.md', ...judge },
      backends: ['sim:x'],
    },
    'test suite',
  );
  return {
    schemaVersion: 2,
    runId: 'tone-1',
    suiteName: 'tone',
    suite,
    prompts: {},
    status: 'done',
    total: 0,
    invalidRows: 0,
    startedAt: '2026-01-01T00:00:00.000Z',
    reportPrefix: '',
    datasetKey: 'data.csv',
    simulated: true,
  };
}

function item(id: string, value: string | number, extra: Partial<ItemResult> = {}): ItemResult {
  const kind = typeof value === 'number' ? 'number' : 'label';
  return {
    schemaVersion: 2,
    runId: 'tone-1',
    itemId: id,
    row: Number(id.slice(1)),
    status: 'scored',
    input: { message: `message ${id}`, reply: `reply ${id}` },
    scores: { [kind === 'label' ? 'label' : 'score']: { kind, value } as never },
    stages: {},
    simulated: true,
    finishedAt: '2026-01-01T00:00:00.000Z',
    ...extra,
  };
}

describe('the items put to a person', () => {
  const run = judgeRun({ labels: ['polite', 'neutral', 'rude'] });

  it('offers only items without gold and with a verdict, and records each chosen one’s probability', () => {
    const results = [
      item('r1', 'polite', { gold: 'polite' }),
      item('r2', 'rude', {
        scores: { label: { kind: 'label', value: 'rude', repeats: ['rude', 'polite'] } },
      }),
      item('r3', 'neutral', {
        scores: { label: { kind: 'label', value: 'neutral', repeats: ['neutral', 'neutral'] } },
      }),
      item('r4', 'polite', { status: 'failed', scores: {} }),
      item('r5', 'polite', {
        scores: { label: { kind: 'label', value: 'polite', repeats: ['polite', 'rude'] } },
      }),
    ];
    const plan = planLabels(run, results, { n: 2, seed: 3, floor: 0.2 });
    expect(plan.labelled).toBe(1);
    expect(plan.noVerdict).toBe(1);
    const { page } = plan;
    expect(page.selection.candidates).toBe(3);
    expect(page.items).toHaveLength(2);
    // u = √(1/2) for r2 and r5, 0 for r3: q = 0.8·(1/2, 0, 1/2) + 0.2/3; π = 2q (none reaches 1).
    const expected: Record<string, number> = {
      r2: 2 * (0.4 + 0.2 / 3),
      r3: 2 * (0.2 / 3),
      r5: 2 * (0.4 + 0.2 / 3),
    };
    for (const chosen of page.items) {
      expect(chosen.p).toBeCloseTo(expected[chosen.id]!, 12);
      expect(chosen.inputs.map(([name]) => name)).toEqual(['message', 'reply']);
    }
    expect(page.selection.signals).toEqual({ repeats: 3 });
    expect(page.selection.uniform).toBe(false);
    expect(page.labels.map((l) => l.value)).toEqual(['polite', 'neutral', 'rude']);
    expect(page.storageKey).toMatch(/^assay-label:tone-1:[0-9a-f]{16}$/);
    const r2 = page.items.find((i) => i.id === 'r2');
    if (r2) expect(r2.verdict.evidence).toEqual(['repeat 1: rude', 'repeat 2: polite']);
  });

  it('falls back to uniform sampling, and says so, when the run shows no uncertainty', () => {
    const results = ['r1', 'r2', 'r3', 'r4'].map((id) => item(id, 'polite'));
    const { page } = planLabels(run, results, { n: 2, seed: 1, floor: 0.2 });
    expect(page.selection.uniform).toBe(true);
    expect(page.selection.note).toMatch(/uniformly at random/);
    expect(page.items.map((i) => i.p)).toEqual([0.5, 0.5]);
    expect(page.items[0]!.uncertainty).toBeNull();
  });

  it('offers a whole-number scale as keys, with pass or fail beside each value', () => {
    const scaled = judgeRun({ range: [1, 5], threshold: 4 });
    const { page } = planLabels(scaled, [item('r1', 4), item('r2', 2)], { n: 1, seed: 1, floor: 0.2 });
    expect(page.labels.map((l) => [l.value, l.hint])).toEqual([
      ['1', 'fail'],
      ['2', 'fail'],
      ['3', 'fail'],
      ['4', 'pass'],
      ['5', 'pass'],
    ]);
    expect(page.selection.signals).toEqual({ threshold: 2 });
  });

  it('refuses answers a person cannot pick from a short list, and a run with nothing to label', () => {
    const wide = judgeRun({ range: [0, 100] });
    expect(() => planLabels(wide, [item('r1', 50)], { n: 1, seed: 1, floor: 0.2 })).toThrow(
      NotLabellableError,
    );
    expect(() =>
      planLabels(run, [item('r1', 'polite', { gold: 'polite' })], { n: 1, seed: 1, floor: 0.2 }),
    ).toThrow(/no item to label: 1 with gold already/);
  });
});

describe('label keys and the exported CSV', () => {
  it('gives digits to the first nine labels and letters only where they are unambiguous', () => {
    expect(keys(['polite', 'neutral', 'rude'])).toEqual([
      { value: 'polite', digit: '1', letter: 'p' },
      { value: 'neutral', digit: '2', letter: 'n' },
      { value: 'rude', digit: '3', letter: 'r' },
    ]);
    // u and s are undo and skip; two labels sharing a letter get none.
    expect(keys(['safe', 'unsafe', 'pass', 'poor', 'Good']).map((k) => k.letter ?? null)).toEqual([
      null,
      null,
      null,
      null,
      'g',
    ]);
    const many = keys(Array.from({ length: 11 }, (_, i) => `label${i}`));
    expect(many[8]!.digit).toBe('9');
    expect(many[9]!.digit).toBeUndefined();
  });

  it('writes id,label,p for the labelled items only, quoting where needed', () => {
    const items = [
      { id: 'a,1', p: 0.25 },
      { id: 'b', p: 0.5 },
      { id: 'c', p: 1 },
    ].map((x) => ({ ...x, row: 1, uncertainty: null, signal: null, inputs: [], verdict: { value: 'x' } }));
    const csv = labelsCsv(items, { 'a,1': { label: 'say "hi"' }, b: { skip: true }, c: { label: 'rude' } });
    // 2 of the 3 chosen items labelled: each label's chance of being labelled is p · 2/3.
    expect(csv).toBe('id,label,p\n"a,1","say ""hi""",0.166666666667\nc,rude,0.666666666667\n');
    const all = labelsCsv(items, { 'a,1': { label: 'x' }, b: { label: 'y' }, c: { label: 'z' } });
    expect(all).toBe('id,label,p\n"a,1",x,0.25\nb,y,0.5\nc,z,1\n');
  });
});
