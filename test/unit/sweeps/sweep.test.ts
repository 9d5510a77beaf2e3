import { describe, expect, it } from 'vitest';
import type { ItemResult, RunRecord } from '../../../shared/model/model.js';
import { allVariants, expandMatrix, variantOverlay } from '../../../shared/model/variants.js';
import { type Suite, SuiteError, validateSuite, variantSuites } from '../../../shared/registry/suite.js';
import { SIMULATED_NOTICE } from '../../../shared/reports/report.js';
import {
  buildSweepReport,
  MIXED_NOTICE,
  prepareSweep,
  RANK_OVER,
  type VariantRun,
} from '../../../shared/sweeps/sweep.js';
import { promptChangeLines, renderSweepText } from '../../../shared/sweeps/sweep-files.js';
import { suiteInput } from '../../helpers.js';

describe('expandMatrix', () => {
  it('is the product of backends and params, backends outermost, named after the choices', async () => {
    const variants = expandMatrix({
      backends: [['openai:gpt-4o-mini'], ['gemini:gemini-2.5-flash']],
      params: { temperature: [0, 0.7] },
    });
    expect(variants).toEqual([
      {
        name: 'gpt-4o-mini_temperature-0',
        backends: ['openai:gpt-4o-mini'],
        params: { temperature: 0 },
      },
      {
        name: 'gpt-4o-mini_temperature-0.7',
        backends: ['openai:gpt-4o-mini'],
        params: { temperature: 0.7 },
      },
      {
        name: 'gemini-2.5-flash_temperature-0',
        backends: ['gemini:gemini-2.5-flash'],
        params: { temperature: 0 },
      },
      {
        name: 'gemini-2.5-flash_temperature-0.7',
        backends: ['gemini:gemini-2.5-flash'],
        params: { temperature: 0.7 },
      },
    ]);
  });

  it('names several backends (joined, then made a valid name), prompt files and options', async () => {
    const variants = expandMatrix({
      backends: [['openai:a', 'gemini:b']],
      prompts: { judge: ['prompts/gec/strict.md', 'prompts/gec/lenient.md'] },
      options: { method: ['baseline', 'modular'] },
    });
    expect(variants.map((v) => v.name)).toEqual([
      'a-b_judge-strict_method-baseline',
      'a-b_judge-strict_method-modular',
      'a-b_judge-lenient_method-baseline',
      'a-b_judge-lenient_method-modular',
    ]);
    expect(variants[1]).toEqual({
      name: 'a-b_judge-strict_method-modular',
      backends: ['openai:a', 'gemini:b'],
      prompts: { judge: 'prompts/gec/strict.md' },
      options: { method: 'modular' },
    });
  });

  it('has no variants without a matrix or with an empty one', async () => {
    expect(expandMatrix(undefined)).toEqual([]);
    expect(expandMatrix({})).toEqual([]);
  });

  it('lists the named variants before the matrix ones', async () => {
    const names = allVariants({
      variants: [{ name: 'first' }],
      matrix: { params: { temperature: [1] } },
    }).map((v) => v.name);
    expect(names).toEqual(['first', 'temperature-1']);
  });
});

describe('variantOverlay', () => {
  it('applies the overlay and drops the sweep keys', async () => {
    const overlay = variantOverlay(
      {
        name: 's',
        backends: ['sim:a'],
        params: { maxTokens: 100 },
        prompts: { judge: 'x.md' },
        method: 'baseline',
        variants: [],
        baseline: 'v',
        gate: { conditions: ['accuracy >= 0'] },
        rankBy: 'accuracy',
      },
      { name: 'v', params: { temperature: 0.5 }, options: { method: 'modular' } },
    );
    expect(overlay).toEqual({
      name: 's.v',
      backends: ['sim:a'],
      params: { maxTokens: 100, temperature: 0.5 },
      prompts: { judge: 'x.md' },
      method: 'modular',
    });
  });

  it("merges a variant's options into the suite's, key by key: objects merged, arrays and scalars replaced", async () => {
    const suite = {
      name: 's',
      backends: ['sim:a'],
      judge: { prompt: 'v1.md', labels: ['good', 'bad'], scale: { low: 1, high: 5 } },
      method: 'baseline',
    };
    const overlay = variantOverlay(suite, {
      name: 'v',
      options: { judge: { labels: ['ok'], scale: { high: 3 } }, method: 'modular' },
    });
    expect(overlay).toMatchObject({
      judge: { prompt: 'v1.md', labels: ['ok'], scale: { low: 1, high: 3 } },
      method: 'modular',
    });
    // The suite itself is left as it was.
    expect(suite.judge).toEqual({ prompt: 'v1.md', labels: ['good', 'bad'], scale: { low: 1, high: 5 } });
  });

  it("a variant that changes only the judge's prompt keeps the suite's labels", async () => {
    const sweep = validateSuite(
      {
        version: 1,
        name: 'tone',
        task: 'judge',
        dataset: { path: 'replies.csv', columns: { gold: 'human' } },
        judge: { prompt: 'v1.md', labels: ['polite', 'neutral', 'rude'] },
        backends: ['sim:a'],
        variants: [{ name: 'v1' }, { name: 'v2', options: { judge: { prompt: 'v2.md' } } }],
      },
      'tone.suite.json',
    );
    const suites = variantSuites(sweep).map((v) => v.suite as Suite & { judge: unknown });
    expect(suites.map((s) => s.judge)).toMatchObject([
      { prompt: 'v1.md', labels: ['polite', 'neutral', 'rude'] },
      { prompt: 'v2.md', labels: ['polite', 'neutral', 'rude'] },
    ]);
  });
});

/** A GEC sweep on the simulator, like examples/gec-backends.suite.json. */
function sweepInput(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...suiteInput({ name: 'gec-backends-en', backends: ['sim:a'] }),
    matrix: { backends: [['sim:a'], ['sim:b'], ['sim:c']] },
    baseline: 'a',
    gate: {
      conditions: ['parse_valid_rate >= 0.99', 'accuracy >= baseline - 0.03', 'cost per 10k <= 10'],
      required: true,
    },
    ...overrides,
  };
}

function invalid(raw: Record<string, unknown>): string {
  try {
    validateSuite(raw, 'sweep.json');
  } catch (error) {
    expect(error).toBeInstanceOf(SuiteError);
    return (error as Error).message;
  }
  throw new Error('the suite validated');
}

describe('validateSuite on a sweep', () => {
  it('accepts a GEC sweep, and variantSuites gives each variant its suite', async () => {
    const suite = validateSuite(sweepInput(), 'sweep.json');
    expect(suite.gate).toEqual({
      conditions: ['parse_valid_rate >= 0.99', 'accuracy >= baseline - 0.03', 'cost per 10k <= 10'],
      required: true,
    });
    const variants = variantSuites(suite);
    expect(variants.map((v) => v.variant.name)).toEqual(['a', 'b', 'c']);
    expect(variants.map((v) => v.suite.name)).toEqual([
      'gec-backends-en.a',
      'gec-backends-en.b',
      'gec-backends-en.c',
    ]);
    expect(variants.map((v) => v.suite.backends)).toEqual([['sim:a'], ['sim:b'], ['sim:c']]);
    for (const { suite: s } of variants) {
      expect(s.task).toBe('gec');
      for (const key of ['matrix', 'variants', 'baseline', 'gate', 'rankBy'])
        expect(s).not.toHaveProperty(key);
    }
    expect(variantSuites(validateSuite(suiteInput(), 'plain'))).toEqual([]);
  });

  it('rejects a sweep with one variant', async () => {
    expect(invalid(sweepInput({ matrix: { backends: [['sim:a']] } }))).toContain(
      'variants: a sweep needs at least two variants',
    );
  });

  it('rejects two variants with the same name', async () => {
    const message = invalid(
      sweepInput({
        matrix: undefined,
        variants: [
          { name: 'a', backends: ['sim:a'] },
          { name: 'a', backends: ['sim:b'] },
        ],
      }),
    );
    expect(message).toContain('two variants are named a');
  });

  it('rejects a baseline that is not a variant', async () => {
    expect(invalid(sweepInput({ baseline: 'gpt-4o-mini' }))).toContain(
      'baseline: no variant is named gpt-4o-mini (variants: a, b, c)',
    );
  });

  it('rejects a required variant that is the baseline, or none', async () => {
    const gate = (required: string[]) => ({ conditions: ['accuracy >= 0'], required });
    expect(invalid(sweepInput({ gate: gate(['b', 'a']) }))).toContain(
      'gate.required: a is the baseline: the gate promotes the others over it',
    );
    // Without a baseline the first variant is.
    expect(invalid(sweepInput({ baseline: undefined, gate: gate(['a']) }))).toContain('a is the baseline');
    expect(invalid(sweepInput({ gate: gate(['z']) }))).toContain('gate.required: no variant is named z');
    expect(() => validateSuite(sweepInput({ gate: gate(['b', 'c']) }), 'ok')).not.toThrow();
  });

  it('rejects a gate with a typo before anything runs', async () => {
    const message = invalid(
      sweepInput({ gate: { conditions: ['accuracy >= 0.5', 'acuracy >> 0.8'], required: false } }),
    );
    expect(message).toMatch(/gate\.conditions\.1: gate condition "acuracy >> 0\.8" is not/);
    expect(message).not.toContain('gate.conditions.0');
  });

  it('rejects a rankBy that is not a metric', async () => {
    expect(invalid(sweepInput({ rankBy: 'the best one!' }))).toMatch(
      /rankBy: "the best one!" is not a metric/,
    );
    expect(() => validateSuite(sweepInput({ rankBy: 'p95 latency' }), 'ok')).not.toThrow();
  });

  it('rejects sweep keys without variants', async () => {
    expect(invalid({ ...suiteInput(), baseline: 'a' })).toContain('baseline: needs variants');
  });

  it('rejects a variant whose own suite is invalid, under its name', async () => {
    const message = invalid(
      sweepInput({
        matrix: undefined,
        variants: [{ name: 'a' }, { name: 'b', options: { method: 'nope' } }],
      }),
    );
    expect(message).toMatch(/variants\.b\.method:/);
    expect(message).not.toMatch(/variants\.a\./);
  });
});

// ---------------------------------------------------------------------------------------------
// buildSweepReport on hand-made runs of four variants over the same four items.

const GOLD = ['TP', 'FP1', 'FP2', 'FP3'] as const;

interface VariantSpec {
  name: string;
  /** Items (by index) the variant gets wrong. */
  wrong: number[];
  /** Spend per item, USD. */
  costUsd: number;
  latencyMs: number;
  simulated?: boolean;
  /** A model the variant called that had no price (its calls then cost "0", unknown). */
  unpriced?: string;
}

// Accuracy and cost per 10K (= costUsd × 10,000), by hand:
//   base         3/4 = 0.75   $10     baseline
//   good         4/4 = 1.00   $20
//   good-pricey  4/4 = 1.00   $30     tied with good, dearer: not on the front
//   weak         2/4 = 0.50   $15     worse and dearer than base: not on the front
const SPECS: VariantSpec[] = [
  { name: 'base', wrong: [3], costUsd: 0.001, latencyMs: 100 },
  { name: 'good', wrong: [], costUsd: 0.002, latencyMs: 300 },
  { name: 'good-pricey', wrong: [], costUsd: 0.003, latencyMs: 200 },
  { name: 'weak', wrong: [0, 2], costUsd: 0.0015, latencyMs: 50 },
];

function sweepSuite(gate: unknown, extra: Record<string, unknown> = {}): Suite {
  return validateSuite(
    {
      ...suiteInput({ name: 'sw', backends: ['sim:base'] }),
      variants: SPECS.map((s) => ({ name: s.name, backends: [`sim:${s.name}`] })),
      baseline: 'base',
      ...(gate ? { gate } : {}),
      ...extra,
    },
    'sweep',
  );
}

function variantRun(suite: Suite, spec: VariantSpec, simulatedAll: boolean): VariantRun {
  const runId = `run-${spec.name}`;
  const variantSuite = variantSuites(suite).find((v) => v.variant.name === spec.name)!.suite;
  const simulated = spec.simulated ?? simulatedAll;
  const run: RunRecord = {
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
    simulated,
  };
  const results: ItemResult[] = GOLD.map((gold, i) => {
    const label = spec.wrong.includes(i) ? (gold === 'TP' ? 'FP1' : 'TP') : gold;
    return {
      schemaVersion: 2,
      runId,
      itemId: `i${i + 1}`,
      row: i + 1,
      status: 'scored',
      gold,
      input: { src: `src ${i + 1}`, tgt: `tgt ${i + 1}` },
      output: { label, reason: `${spec.name} says ${label}` },
      scores: { label: { kind: 'label', value: label, explanation: `${spec.name} says ${label}` } },
      stages: {
        classify: {
          calls: 1,
          cachedCalls: 0,
          costUsd: spec.costUsd,
          latencyMs: spec.latencyMs,
          usage: { input: 10, output: 5, cached: 0 },
          ...(spec.unpriced ? { unpriced: [spec.unpriced] } : {}),
        },
      },
      simulated,
      finishedAt: '2025-01-01T00:00:30.000Z',
    };
  });
  return { variant: spec.name, run, results };
}

async function sweep(
  options: {
    gate?: unknown;
    extra?: Record<string, unknown>;
    specs?: VariantSpec[];
    simulated?: boolean;
  } = {},
) {
  const suite = sweepSuite(options.gate, options.extra);
  const runs = (options.specs ?? SPECS).map((s) => variantRun(suite, s, options.simulated ?? false));
  const record = prepareSweep(
    suite,
    runs.map((r) => ({ variant: r.variant, runId: r.run.runId })),
    {
      datasetKey: 'data.csv',
      reportPrefix: 'sweeps/{sweepId}/',
      now: () => new Date('2025-02-03T04:05:06Z'),
    },
  );
  return { suite, runs, record, report: await buildSweepReport(record, runs, '2025-02-03T05:00:00.000Z') };
}

const GATE = {
  conditions: ['accuracy >= baseline', 'cost per 10k <= 25'],
  required: ['good-pricey', 'weak'],
};

describe('prepareSweep', () => {
  it('makes a record whose id derives from the runs and what is asked of them', async () => {
    const { record, runs, suite } = await sweep({ gate: GATE });
    expect(record).toMatchObject({
      schemaVersion: 1,
      suiteName: 'sw',
      task: 'gec',
      datasetKey: 'data.csv',
      variants: SPECS.map((s) => ({ name: s.name, runId: `run-${s.name}` })),
      baseline: 'base',
      gate: GATE,
      status: 'running',
      createdAt: '2025-02-03T04:05:06.000Z',
    });
    expect(record.sweepId).toMatch(/^sw-sweep-[0-9a-f]{12}$/);
    expect(record.reportPrefix).toBe(`sweeps/${record.sweepId}/`);
    expect(record).not.toHaveProperty('rankBy');
    const refs = runs.map((r) => ({ variant: r.variant, runId: r.run.runId }));
    const again = prepareSweep(suite, refs, { datasetKey: 'data.csv', reportPrefix: 'x' });
    expect(again.sweepId).toBe(record.sweepId);
    const otherGate = sweepSuite({ ...GATE, conditions: ['accuracy >= 0'] });
    expect(prepareSweep(otherGate, refs, { datasetKey: 'data.csv', reportPrefix: 'x' }).sweepId).not.toBe(
      record.sweepId,
    );
    // Without a baseline in the suite, the first variant is.
    const noBaseline = { ...suite, baseline: undefined } as Suite;
    expect(prepareSweep(noBaseline, refs.slice(1), { datasetKey: 'd', reportPrefix: 'x' }).baseline).toBe(
      'good',
    );
  });
});

const gatedSweep = await sweep({ gate: GATE });

describe('buildSweepReport', () => {
  const { report } = gatedSweep;
  const byName = (name: string) => report.variants.find((v) => v.name === name)!;

  it('describes the sweep', async () => {
    expect(report).toMatchObject({
      schemaVersion: 1,
      suite: 'sw',
      task: 'gec',
      dataset: 'data.csv',
      baseline: 'base',
      primaryScorer: 'label',
      rankBy: { metric: 'accuracy', better: 'higher' },
      simulated: 'none',
      createdAt: '2025-02-03T04:05:06.000Z',
      finishedAt: '2025-02-03T05:00:00.000Z',
    });
    expect(report).not.toHaveProperty('notice');
  });

  it('ranks by accuracy, tied variants sharing a rank (1, 1, 3, 4), cheaper first', async () => {
    expect(report.variants.map((v) => [v.name, v.rank, v.tied])).toEqual([
      ['good', 1, true],
      ['good-pricey', 1, true],
      ['base', 3, false],
      ['weak', 4, false],
    ]);
    expect(report.variants.map((v) => v.rankValue?.value)).toEqual([1, 1, 0.75, 0.5]);
    expect(byName('weak').metrics.accuracy!.value).toBe(0.5);
  });

  it('gives each variant its run, backends, cost and latency', async () => {
    const good = byName('good');
    expect(good).toMatchObject({ runId: 'run-good', backends: ['sim:good'], simulated: false });
    expect(good.costUsd).toBeCloseTo(0.008, 12);
    expect(good.per10kUsd).toBeCloseTo(20, 9);
    expect(good.latencyMs).toEqual({ p50: 300, p95: 300 });
    expect(good.counts).toEqual({ items: 4, scored: 4, failed: 0, invalidRows: 0, errors: 0, byFailure: {} });
    expect(report.variants.map((v) => v.per10kUsd)).toEqual([
      expect.closeTo(20, 9),
      expect.closeTo(30, 9),
      expect.closeTo(10, 9),
      expect.closeTo(15, 9),
    ]);
  });

  it('puts on the Pareto front exactly the variants nobody beats on both accuracy and cost', async () => {
    // good: best accuracy at its cost; base: cheapest. good-pricey: as good as good, dearer.
    // weak: worse than base and dearer.
    expect(report.variants.filter((v) => v.pareto).map((v) => v.name)).toEqual(['good', 'base']);
  });

  it('gives the baseline its verdict and no comparison, the others their comparison with it', async () => {
    const base = byName('base');
    expect(base.verdict).toBe('baseline');
    expect(base).not.toHaveProperty('comparison');
    expect(base).not.toHaveProperty('gate');
    const weak = byName('weak');
    expect(weak.comparison!.paired).toBe(4);
    // 4 × (0.0015 − 0.001)
    expect(weak.comparison!.costDeltaUsd).toBeCloseTo(0.002, 12);
    expect(Object.keys(weak.comparison!.scores.label!.deltas.accuracy!).sort()).toEqual([
      'ci',
      'delta',
      'interval',
      'pValue',
    ]);
    // Every variant scored the 4 items: coverage 1 on both sides, no difference.
    expect(weak.comparison!.scores.label!.coverage).toMatchObject({
      n: 4,
      base: 1,
      candidate: 1,
      delta: 0,
      pValue: 1,
      scored: { base: 4, candidate: 4 },
    });
    expect(weak.coverage).toEqual({ value: 1, n: 4 });
    expect(weak.comparison!.scores.label!.deltas.accuracy!.delta).toBeCloseTo(-0.25, 12);
    expect(byName('good').comparison!.scores.label!.deltas.accuracy!.delta).toBeCloseTo(0.25, 12);
  });

  it('passes each variant through the gate and lists the required ones that failed', async () => {
    expect(report.variants.map((v) => [v.name, v.verdict, v.gate?.required])).toEqual([
      ['good', 'promoted', false],
      ['good-pricey', 'not promoted', true],
      ['base', 'baseline', undefined],
      ['weak', 'not promoted', true],
    ]);
    expect(byName('good-pricey').gate!.failed).toEqual(['cost per 10k <= 25']);
    expect(byName('weak').gate!.failed).toEqual(['accuracy >= baseline']);
    expect(byName('weak').gate!.conditions[0]).toMatchObject({
      passed: false,
      value: 0.5,
      against: 0.75,
      reason: 'accuracy 0.5 vs baseline 0.75 fails >= 0.75',
    });
    expect(report.gate).toEqual({
      conditions: GATE.conditions,
      required: ['good-pricey', 'weak'],
      failedRequired: ['good-pricey', 'weak'],
    });
  });

  it("feeds the gate the run's pairing with the baseline and its items' latencies", async () => {
    // Paired accuracy deltas: good and good-pricey 1 − 0.75 = +0.25, weak 0.5 − 0.75 = −0.25.
    // Every src has 2 words; p50 latency: base 100 (+ 150 = 250), good 300, good-pricey 200, weak 50.
    const { report: r } = await sweep({
      gate: {
        conditions: ['delta accuracy >= 0.25', 'p50 latency where words(src) >= 2 <= baseline + 150'],
        required: true,
      },
    });
    const gate = (name: string) => r.variants.find((v) => v.name === name)!.gate!;
    expect(gate('good').failed).toEqual(['p50 latency where words(src) >= 2 <= baseline + 150']);
    expect(gate('good').conditions[1]).toMatchObject({ value: 300, against: 250 });
    expect(gate('good-pricey')).toMatchObject({ promoted: true, failed: [] });
    expect(gate('good-pricey').conditions[0]!.value).toBeCloseTo(0.25, 12);
    expect(gate('weak').failed).toEqual(['delta accuracy >= 0.25']);
    expect(gate('weak').conditions[0]!.value).toBeCloseTo(-0.25, 12);
    expect(r.gate!.failedRequired).toEqual(['good', 'weak']);
  });

  it('requires every variant but the baseline with required: true', async () => {
    const { report: all } = await sweep({ gate: { ...GATE, required: true } });
    expect(all.gate!.required).toEqual(['good', 'good-pricey', 'weak']);
    expect(all.gate!.failedRequired).toEqual(['good-pricey', 'weak']);
    const { report: none } = await sweep({ gate: { ...GATE, required: false } });
    expect(none.gate!.required).toEqual([]);
    expect(none.gate!.failedRequired).toEqual([]);
    expect(none.variants.find((v) => v.name === 'weak')!.verdict).toBe('not promoted');
  });

  it('has no gate verdicts without a gate', async () => {
    const { report: plain } = await sweep();
    expect(plain).not.toHaveProperty('gate');
    expect(plain.variants.map((v) => v.verdict)).toEqual(['no gate', 'no gate', 'baseline', 'no gate']);
  });

  it('ranks lower-is-better figures ascending', async () => {
    const { report: byCost } = await sweep({ extra: { rankBy: 'cost per 10k' } });
    expect(byCost.rankBy).toEqual({ metric: 'cost per 10k', better: 'lower', over: RANK_OVER });
    expect(byCost.variants.map((v) => [v.name, v.rank])).toEqual([
      ['base', 1],
      ['weak', 2],
      ['good', 3],
      ['good-pricey', 4],
    ]);
    const { report: byLatency } = await sweep({ extra: { rankBy: 'p50 latency' } });
    expect(byLatency.rankBy.better).toBe('lower');
    expect(byLatency.variants.map((v) => [v.name, v.rank, v.rankValue?.value])).toEqual([
      ['weak', 1, 50],
      ['base', 2, 100],
      ['good-pricey', 3, 200],
      ['good', 4, 300],
    ]);
    // Quality is latency here: weak (fastest) and base (cheapest) are on the front.
    expect(byLatency.variants.filter((v) => v.pareto).map((v) => v.name)).toEqual(['weak', 'base']);
  });

  it("ranks by run figures and family figures by the gate's lookup rules", async () => {
    // Every item scored by every variant: scored_rate 1 everywhere, one rank shared by all.
    const { report: byScored } = await sweep({ extra: { rankBy: 'scored_rate' } });
    expect(byScored.variants.map((v) => [v.rank, v.tied, v.rankValue?.value])).toEqual([
      [1, true, 1],
      [1, true, 1],
      [1, true, 1],
      [1, true, 1],
    ]);
    // GEC's binary view (TP against the FP labels), from report.metrics: perfect for the two good ones.
    const { report: byBinary } = await sweep({ extra: { rankBy: 'binary.f1' } });
    expect(byBinary.rankBy).toEqual({ metric: 'binary.f1', better: 'higher', over: RANK_OVER });
    expect(byBinary.variants.slice(0, 2).map((v) => [v.name, v.rank, v.rankValue?.value])).toEqual([
      ['good', 1, 1],
      ['good-pricey', 1, 1],
    ]);
    expect(byBinary.variants.every((v) => v.rankValue?.value !== null)).toBe(true);
    // A name that is nothing ranks nothing (rather than another scorer's figure).
    const { report: byNothing } = await sweep({ extra: { rankBy: 'nosuch.accuracy' } });
    expect(byNothing.variants.map((v) => v.rank)).toEqual([null, null, null, null]);
  });

  it('says when some variants are simulated and some are real', async () => {
    const specs = SPECS.map((s) => (s.name === 'weak' ? { ...s, simulated: true } : s));
    const { report: mixed } = await sweep({ specs });
    expect(mixed.simulated).toBe('mixed');
    expect(mixed.notice).toBe(MIXED_NOTICE);
    expect(mixed.variants.filter((v) => v.simulated).map((v) => v.name)).toEqual(['weak']);
    const { report: all } = await sweep({ simulated: true });
    expect(all.simulated).toBe('all');
    expect(all.notice).toBe(SIMULATED_NOTICE);
  });

  it('refuses runs without the baseline', async () => {
    const { runs, record } = await sweep();
    await expect(buildSweepReport(record, runs.slice(1), '2025-02-03T05:00:00.000Z')).rejects.toThrow(
      /no run for the baseline variant base/,
    );
  });
});

describe('promptChangeLines', () => {
  it('gives one line per change: a file used in place of another, one edited, one only added or dropped', () => {
    expect(
      promptChangeLines([
        { path: 'tone-v2.md', candidate: 'h2' },
        { path: 'tone.md', base: 'h1' },
      ]),
    ).toEqual(['prompt changed: tone.md → tone-v2.md']);
    expect(
      promptChangeLines([
        { path: 'a.md', base: 'h1', candidate: 'h2' },
        { path: 'b.md', candidate: 'h3' },
      ]),
    ).toEqual(['prompt changed: a.md (edited)', 'prompt added: b.md']);
    expect(promptChangeLines([{ path: 'c.md', base: 'h4' }])).toEqual(['prompt dropped: c.md']);
  });
});

describe('a variant that called a model without a price', () => {
  // good is the best; its model has no price, so its cost reads $0 and is unknown.
  const specs = SPECS.map((s) =>
    s.name === 'good' ? { ...s, costUsd: 0, unpriced: 'openai:my-finetune-unpriced' } : s,
  );

  it('is left off the Pareto front instead of sitting on it at $0, and pushes nobody off it', async () => {
    const { report } = await sweep({ specs });
    const good = report.variants.find((v) => v.name === 'good')!;
    expect(good).toMatchObject({ priced: false, unpriced: ['openai:my-finetune-unpriced'], pareto: false });
    // At $0 good would have beaten base (cheaper and better); without a price, base stays on.
    expect(report.variants.filter((v) => v.pareto).map((v) => v.name)).toEqual(['good-pricey', 'base']);
    expect(report.variants.find((v) => v.name === 'base')!.priced).toBe(true);
  });

  it('shows as unpriced in the sweep table, with a note of why it is off the front', async () => {
    const { report } = await sweep({ specs });
    const text = renderSweepText(report);
    const row = text.split('\n').find((line) => /\bgood\b/.test(line) && !line.includes('good-pricey'))!;
    expect(row).toContain('unpriced');
    expect(row).not.toContain('$0.00');
    expect(text).toContain('unpriced: good called openai:my-finetune-unpriced without a price');
    expect(text).toContain('good: 4 paired items, cost unpriced');
  });

  it('has no cost to rank by', async () => {
    const { report } = await sweep({ specs, extra: { rankBy: 'cost per 10k' } });
    const good = report.variants.find((v) => v.name === 'good')!;
    expect(good.rank).toBeNull();
    expect(good.rankValue?.value).toBeNull();
  });
});
