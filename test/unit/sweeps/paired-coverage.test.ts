/**
 * Paired means paired: a comparison's figures are over the items both sides scored, each side's
 * coverage is beside them with its paired difference, and a gate is not passed by leaving the
 * hard items unscored. Every figure below is worked by hand.
 */
import { describe, expect, it } from 'vitest';
import { evaluateGate, parseCondition } from '../../../shared/lib/gate.js';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import { type Suite, validateSuite, variantSuites } from '../../../shared/registry/suite.js';
import { compareRuns } from '../../../shared/reports/compare-runs.js';
import { renderComparisonText } from '../../../shared/reports/comparison.js';
import { buildSweepReport, prepareSweep, type VariantRun } from '../../../shared/sweeps/sweep.js';
import { suiteInput } from '../../helpers.js';

/** Twenty items, gold TP on the even ones and FP1 on the odd ones. */
const GOLD = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 'TP' : 'FP1'));

interface Spec {
  name: string;
  /** Items it gets wrong. */
  wrong: number[];
  /** Items it fails (refuses), unscored. */
  failed?: number[];
}

function sweepSuite(conditions: string[]): Suite {
  return validateSuite(
    {
      ...suiteInput({ name: 'pc', backends: ['sim:base'] }),
      variants: [
        { name: 'base', backends: ['sim:base'] },
        { name: 'refuser', backends: ['sim:refuser'] },
      ],
      baseline: 'base',
      gate: { conditions, required: false },
    },
    'sweep',
  );
}

function run(suite: Suite, spec: Spec): VariantRun {
  const runId = `run-${spec.name}`;
  const variantSuite = variantSuites(suite).find((v) => v.variant.name === spec.name)!.suite;
  const record: RunRecord = {
    schemaVersion: 2,
    runId,
    suiteName: variantSuite.name,
    suite: variantSuite,
    prompts: {},
    status: 'done',
    total: GOLD.length,
    invalidRows: 0,
    startedAt: '2025-01-01T00:00:00.000Z',
    finishedAt: '2025-01-01T00:01:00.000Z',
    reportPrefix: '',
    datasetKey: 'data.csv',
    simulated: false,
  };
  const results = GOLD.map((gold, i): ItemResult => {
    const base = {
      schemaVersion: 2 as const,
      runId,
      itemId: `i${String(i + 1).padStart(2, '0')}`,
      row: i + 1,
      gold,
      input: { src: `src ${i + 1}`, tgt: `tgt ${i + 1}` },
      finishedAt: '2025-01-01T00:00:30.000Z',
      simulated: false,
      stages: {
        classify: {
          calls: 1,
          cachedCalls: 0,
          costUsd: 0.001,
          latencyMs: 100,
          usage: { input: 10, output: 5, cached: 0 },
        },
      },
    };
    if (spec.failed?.includes(i))
      return {
        ...base,
        status: 'failed' as const,
        failure: { kind: 'refusal' as const, message: 'the model refused' },
        scores: {},
      };
    const label = spec.wrong.includes(i) ? (gold === 'TP' ? 'FP1' : 'TP') : gold;
    return {
      ...base,
      status: 'scored' as const,
      output: { label, reason: 'r' },
      scores: { label: { kind: 'label' as const, value: label } },
    };
  });
  return { variant: spec.name, run: record, results };
}

// The baseline gets items 0–5 wrong (14/20 = 0.70). The refuser refuses exactly those six and
// gets one more wrong (item 6): over its own 14 items 13/14 = 0.929, "better" by +0.229 —
// over the 14 items both scored, base 14/14 and refuser 13/14: Δ −1/14.
const BASE: Spec = { name: 'base', wrong: [0, 1, 2, 3, 4, 5] };
const REFUSER: Spec = { name: 'refuser', wrong: [6], failed: [0, 1, 2, 3, 4, 5] };

async function sweep(conditions: string[]) {
  const suite = sweepSuite(conditions);
  const runs = [run(suite, BASE), run(suite, REFUSER)];
  const record = prepareSweep(
    suite,
    runs.map((r) => ({ variant: r.variant, runId: r.run.runId })),
    {
      datasetKey: 'data.csv',
      reportPrefix: 'sweeps/{sweepId}/',
      now: () => new Date('2025-02-03T04:05:06Z'),
    },
  );
  return { runs, report: await buildSweepReport(record, runs, '2025-02-03T05:00:00.000Z') };
}

describe('a comparison over the items both sides scored', () => {
  it('gives the deltas on the intersection and each side’s coverage, by hand', async () => {
    const suite = sweepSuite(['accuracy >= 0']);
    const c = compareRuns(run(suite, BASE), run(suite, REFUSER));
    const label = c.scores.label!;
    expect(label.n).toBe(14);
    expect(label.deltas.accuracy).toMatchObject({ n: 14, base: 1, candidate: 13 / 14, interval: 'newcombe' });
    expect(label.deltas.accuracy!.delta).toBeCloseTo(-1 / 14, 12);
    // McNemar on the 14: b = 1 (base right only), c = 0; exact p = min(1, 2·0.5) = 1.
    expect(label.mcnemar).toMatchObject({ b: 1, c: 0, pValue: 1, method: 'exact' });
    expect(label.deltas.accuracy!.pValue).toBe(1);
    // Coverage over the 20 paired items: base 20/20, refuser 14/20; Δ = −0.3.
    expect(label.coverage).toMatchObject({
      n: 20,
      base: 1,
      candidate: 0.7,
      scored: { base: 20, candidate: 14 },
      interval: 'newcombe',
    });
    expect(label.coverage!.delta).toBeCloseTo(-0.3, 12);
    // McNemar of coverage: b = 6, c = 0: exact p = 2 · 0.5⁶ = 0.03125.
    expect(label.coverage!.pValue).toBeCloseTo(0.03125, 12);
    // Newcombe (method 10) by hand: p₁ = 0.7 (candidate), p₂ = 1; Wilson of 14/20 is
    // [0.4810, 0.8545] and of 20/20 [0.8389, 1]; φ = 0 (a margin is empty):
    // L = −0.3 − √((0.7 − 0.4810)² + (1 − 1)²) = −0.5190; U = −0.3 + √(0.1545² + 0.1611²) = −0.0768.
    expect(label.coverage!.ci[0]).toBeCloseTo(-0.519, 3);
    expect(label.coverage!.ci[1]).toBeCloseTo(-0.0768, 3);
  });
});

describe('a bootstrap delta on too few pairs', () => {
  it('says so in place of its interval and p, and a gate asking for its p fails', async () => {
    const suite = sweepSuite(['accuracy >= 0']);
    const c = compareRuns(run(suite, BASE), run(suite, REFUSER));
    // 14 pairs: below macro F1's and kappa's 200, the paired bootstrap is not relied on.
    expect(c.scores.label!.deltas.kappa!.reason).toBe('too few items for an interval (n 14 < 200)');
    expect(c.scores.label!.deltas.macroF1!.reason).toBe('too few items for an interval (n 14 < 200)');
    // A proportion's delta has Newcombe's interval at any n.
    expect(c.scores.label!.deltas.accuracy!.reason).toBeUndefined();
    const text = renderComparisonText(c);
    expect(text).toMatch(
      /Cohen's kappa +-?\d\.\d{3} +-?\d\.\d{3} +[+\-±]\d\.\d{3} {2}n\/a +n\/a {2}\(too few items for an interval \(n 14 < 200\)\)/,
    );
    const { report } = await sweep(['delta kappa > -1 with p < 0.5', 'delta coverage >= -1']);
    const refuser = report.variants.find((v) => v.name === 'refuser')!;
    const kappa = refuser.gate!.conditions.find((x) => x.condition.startsWith('delta kappa'))!;
    expect(kappa.passed).toBe(false);
    expect(kappa.reason).toMatch(/n\/a: no p for kappa: too few items for an interval \(n 14 < 200\)/);
  });
});

describe('a gate is not passed by leaving items unscored', () => {
  it('fails the refuser on the coverage guard, whatever its accuracy over its own items', async () => {
    const { report } = await sweep(['accuracy >= baseline']);
    const refuser = report.variants.find((v) => v.name === 'refuser')!;
    // Over its own items it is ranked first; it is not on the Pareto front.
    expect(refuser.rankValue!.value).toBeCloseTo(13 / 14, 12);
    expect(refuser.rank).toBe(1);
    expect(refuser.pareto).toBe(false);
    expect(refuser.coverage).toEqual({ value: 0.7, n: 20 });
    expect(refuser.verdict).toBe('not promoted');
    expect(refuser.gate!.failed).toEqual(['coverage not below the baseline (implicit)']);
    const guard = refuser.gate!.conditions.at(-1)!;
    expect(guard.reason).toMatch(/lower beyond chance/);
    expect(guard.value).toBeCloseTo(-0.3, 12);
  });

  it('a delta condition is over the items both scored: −1/14, not +0.229', async () => {
    const { report } = await sweep(['delta accuracy >= 0']);
    const refuser = report.variants.find((v) => v.name === 'refuser')!;
    const delta = refuser.gate!.conditions.find((c) => c.condition === 'delta accuracy >= 0')!;
    expect(delta.passed).toBe(false);
    expect(delta.value).toBeCloseTo(-1 / 14, 12);
  });

  it('a condition on coverage says what is acceptable, and replaces the guard', async () => {
    const lenient = await sweep(['delta coverage >= -0.5', 'coverage >= 0.6']);
    const refuser = lenient.report.variants.find((v) => v.name === 'refuser')!;
    expect(refuser.gate!.conditions.map((c) => [c.condition, c.passed])).toEqual([
      ['delta coverage >= -0.5', true],
      ['coverage >= 0.6', true],
    ]);
    expect(refuser.gate!.conditions[0]!.value).toBeCloseTo(-0.3, 12);
    expect(refuser.gate!.conditions[1]!.value).toBeCloseTo(0.7, 12);
    expect(refuser.verdict).toBe('promoted');
    const strict = await sweep(['delta coverage >= -0.1']);
    expect(strict.report.variants.find((v) => v.name === 'refuser')!.verdict).toBe('not promoted');
  });

  it('passes a variant whose coverage is not lower beyond chance', () => {
    const figures = {
      report: {
        primaryScorer: 'label',
        scores: { label: { kind: 'label' as const, n: 19, unscored: { refusal: 1 }, metrics: {} } },
        metrics: {},
        cost: { totalUsd: 0, perItemUsd: 0, per10kUsd: 0 },
        latencyMs: { p50: null, p95: null },
        counts: { items: 20, scored: 19, failed: 1, errors: 1, invalidRows: 0, byFailure: {} },
      },
      items: [],
    } as unknown as Parameters<typeof evaluateGate>[1];
    // One refusal in 20: Δ −0.05, Newcombe's interval reaches above 0.
    const coverage = {
      n: 20,
      base: 1,
      candidate: 0.95,
      delta: -0.05,
      ci: [-0.236, 0.113] as [number, number],
      pValue: 1,
    };
    const verdict = evaluateGate([parseCondition('scored_rate >= 0.5')], figures, figures, {
      label: { deltas: {}, coverage },
    });
    expect(verdict.promoted).toBe(true);
    expect(verdict.conditions.at(-1)).toMatchObject({
      condition: 'coverage not below the baseline (implicit)',
      passed: true,
    });
  });
});
