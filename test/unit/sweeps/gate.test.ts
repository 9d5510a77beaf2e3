import { describe, expect, it } from 'vitest';
import {
  type Condition,
  evaluateCondition,
  evaluateGate,
  type GateFigures,
  type GatePairing,
  GateSyntaxError,
  parseCondition,
  parseMetric,
} from '../../../shared/lib/gate.js';
import type { PairedDelta } from '../../../shared/lib/metrics/stats.js';
import type { Report } from '../../../shared/model/report.js';

/** `n` words of text. */
const wordsOf = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

interface FigureSpec {
  accuracy?: number | null;
  kappa?: number | null;
  per10kUsd?: number | null;
  counts?: Partial<Report['counts']>;
  metrics?: Record<string, unknown>;
  items?: GateFigures['items'];
}

/** A variant's figures as the gate reads them: the primary scorer `label`, 100 items by default. */
function figures(spec: FigureSpec = {}): GateFigures {
  const metric = (value: number | null) => ({ value, n: 100 });
  const or = <T>(value: T | undefined, fallback: T) => (value === undefined ? fallback : value);
  return {
    report: {
      primaryScorer: 'label',
      scores: {
        label: {
          kind: 'label',
          n: 100,
          unscored: {},
          metrics: { accuracy: metric(or(spec.accuracy, 0.8)), kappa: metric(or(spec.kappa, 0.6)) },
        },
      },
      metrics: spec.metrics ?? {},
      cost: { per10kUsd: or(spec.per10kUsd, 1) } as Report['cost'],
      latencyMs: { p50: null, p95: null, mean: null, max: null },
      counts: {
        items: 100,
        scored: 100,
        failed: 0,
        invalidRows: 0,
        errors: 0,
        byFailure: {},
        ...spec.counts,
      },
    },
    items: spec.items ?? [],
  };
}

function paired(delta: number, pValue: number, base = 0.8): PairedDelta {
  return { n: 100, base, candidate: base + delta, delta, ci: [delta - 0.05, delta + 0.05], pValue };
}

const pairing = (deltas: Record<string, PairedDelta>): GatePairing => ({ label: { deltas } });

const check = (text: string, variant: GateFigures, baseline: GateFigures, pairs: GatePairing = {}) =>
  evaluateCondition(parseCondition(text), variant, baseline, pairs);

describe('parseCondition', () => {
  it('reads an absolute condition', () => {
    expect(parseCondition('parse_valid_rate >= 0.99')).toEqual({
      text: 'parse_valid_rate >= 0.99',
      delta: false,
      metric: { kind: 'named', name: 'parse_valid_rate' },
      op: '>=',
      rhs: { kind: 'number', value: 0.99 },
    } satisfies Condition);
  });

  it('reads a baseline-relative condition with its signed offset', () => {
    const c = parseCondition('kappa >= baseline - 0.05');
    expect(c.rhs).toEqual({ kind: 'baseline', offset: -0.05 });
    expect(c.metric).toEqual({ kind: 'named', name: 'kappa' });
    expect(c.delta).toBe(false);
    expect(parseCondition('label.kappa > baseline + 0.1').rhs).toEqual({ kind: 'baseline', offset: 0.1 });
    expect(parseCondition('accuracy >= baseline').rhs).toEqual({ kind: 'baseline', offset: 0 });
  });

  it('reads a delta with a significance level', () => {
    const c = parseCondition('delta accuracy > 0 with p < 0.05');
    expect(c).toEqual({
      text: 'delta accuracy > 0 with p < 0.05',
      delta: true,
      metric: { kind: 'named', name: 'accuracy' },
      op: '>',
      rhs: { kind: 'number', value: 0 },
      alpha: 0.05,
    } satisfies Condition);
  });

  it('reads a latency percentile over a slice of one column', () => {
    const c = parseCondition('p50 latency where words(transcript) >= 150 < baseline');
    expect(c.metric).toEqual({
      kind: 'latency',
      percentile: 50,
      slice: { measure: 'words', column: 'transcript', op: '>=', value: 150 },
    });
    expect(c.op).toBe('<');
    expect(c.rhs).toEqual({ kind: 'baseline', offset: 0 });
    expect(c.delta).toBe(false);
    expect(c.alpha).toBeUndefined();
  });

  it('reads a latency slice over every column', () => {
    const c = parseCondition('p95 latency where words >= 20 <= 300');
    expect(c.metric).toEqual({
      kind: 'latency',
      percentile: 95,
      slice: { measure: 'words', op: '>=', value: 20 },
    });
    expect(c.op).toBe('<=');
    expect(c.rhs).toEqual({ kind: 'number', value: 300 });
  });

  it('reads cost per 10k', () => {
    const c = parseCondition('cost per 10k <= 2');
    expect(c.metric).toEqual({ kind: 'cost' });
    expect(c.op).toBe('<=');
    expect(c.rhs).toEqual({ kind: 'number', value: 2 });
  });

  it.each([
    ['garbage', 'accuracy is good'],
    ['an empty condition', ''],
    ['a delta against the baseline', 'delta accuracy > baseline'],
    ['p without the baseline', 'accuracy > 0.5 with p < 0.05'],
    ['a slice on cost', 'cost per 10k where words >= 3 < 1'],
    ['p on latency', 'p50 latency < baseline with p < 0.05'],
    ['p = 0', 'delta accuracy > 0 with p < 0'],
    ['a 0th percentile', 'p0 latency < 100'],
  ])('rejects %s with a GateSyntaxError', (_, text) => {
    expect(() => parseCondition(text)).toThrow(GateSyntaxError);
  });

  it('says what is wrong', () => {
    expect(() => parseCondition('delta accuracy > baseline')).toThrow(/delta is already relative/);
    expect(() => parseCondition('accuracy > 0.5 with p < 0.05')).toThrow(
      /needs a comparison with the baseline/,
    );
    expect(() => parseCondition('cost per 10k where words >= 3 < 1')).toThrow(/latency percentiles only/);
    expect(() => parseCondition('p50 latency < baseline with p < 0.05')).toThrow(/needs a scorer metric/);
    expect(() => parseCondition('accuracy is good')).toThrow(/"accuracy is good" is not/);
  });
});

describe('parseMetric', () => {
  it('names latency, cost and scorer metrics', () => {
    expect(parseMetric('p95  Latency')).toEqual({ kind: 'latency', percentile: 95 });
    expect(parseMetric('cost per 10k')).toEqual({ kind: 'cost' });
    expect(parseMetric('label.kappa')).toEqual({ kind: 'named', name: 'label.kappa' });
    expect(() => parseMetric('accuracy!')).toThrow(GateSyntaxError);
  });
});

describe('evaluateGate', () => {
  const baseline = figures({ accuracy: 0.8, per10kUsd: 2 });

  it('promotes a variant that meets every condition', () => {
    const variant = figures({ accuracy: 0.82, per10kUsd: 1.5 });
    const conditions = [
      'parse_valid_rate >= 0.99',
      'accuracy >= baseline - 0.05',
      'cost per 10k <= 2',
      'delta accuracy > 0 with p < 0.05',
    ].map(parseCondition);
    const gate = evaluateGate(conditions, variant, baseline, pairing({ accuracy: paired(0.02, 0.01) }));
    expect(gate.promoted).toBe(true);
    expect(gate.failed).toEqual([]);
    expect(gate.conditions.map((c) => c.passed)).toEqual([true, true, true, true]);
    const [parse, relative, cost, delta] = gate.conditions;
    expect(parse).toMatchObject({ condition: 'parse_valid_rate >= 0.99', value: 1, against: 0.99 });
    expect(parse!.reason).toBe('parse_valid_rate 1 meets >= 0.99');
    expect(relative!.value).toBe(0.82);
    expect(relative!.against).toBeCloseTo(0.75, 12);
    expect(relative!.reason).toBe('accuracy 0.82 vs baseline 0.8 − 0.05 = 0.75 meets >= 0.75');
    expect(cost).toMatchObject({ value: 1.5, against: 2, reason: 'cost per 10k 1.5 meets <= 2' });
    expect(delta).toMatchObject({ value: 0.02, against: 0, pValue: 0.01 });
    expect(delta!.reason).toBe('delta accuracy 0.02 meets > 0; p = 0.01 < 0.05');
  });

  it('fails an absolute condition: 2 parse failures in 100 items is 0.98', () => {
    const variant = figures({ counts: { scored: 98, failed: 2, errors: 2, byFailure: { parse: 2 } } });
    const gate = evaluateGate(
      ['parse_valid_rate >= 0.99', 'accuracy >= 0.5'].map(parseCondition),
      variant,
      baseline,
    );
    expect(gate.promoted).toBe(false);
    expect(gate.failed).toEqual(['parse_valid_rate >= 0.99']);
    expect(gate.conditions[0]).toEqual({
      condition: 'parse_valid_rate >= 0.99',
      passed: false,
      value: 0.98,
      against: 0.99,
      reason: 'parse_valid_rate 0.98 fails >= 0.99',
    });
    expect(gate.conditions[1]!.passed).toBe(true);
  });

  it('leaves invalid rows out of the run rates', () => {
    // 100 rows, 10 invalid, 1 parse failure, 3 errors in all: over the 90 that reached a model.
    const variant = figures({
      counts: {
        scored: 87,
        failed: 13,
        invalidRows: 10,
        errors: 3,
        byFailure: { invalid_row: 10, parse: 1 },
      },
    });
    expect(check('parse_valid_rate >= 0.99', variant, baseline).value).toBeCloseTo(89 / 90, 12);
    expect(check('scored_rate >= 0.9', variant, baseline).value).toBeCloseTo(87 / 90, 12);
    expect(check('error_rate <= 0.03', variant, baseline)).toMatchObject({ passed: false });
    expect(check('error_rate <= 0.034', variant, baseline).value).toBeCloseTo(3 / 90, 12);
    expect(check('error_rate <= 0.034', variant, baseline).passed).toBe(true);
    // No item reached a model: the rate is n/a.
    const none = figures({ counts: { items: 5, scored: 0, failed: 5, invalidRows: 5, errors: 0 } });
    expect(check('scored_rate >= 0', none, baseline)).toMatchObject({
      passed: false,
      value: null,
      reason: 'n/a: scored_rate has no data',
    });
  });

  it('fails the baseline-relative condition: 0.70 against 0.80 − 0.05', () => {
    const v = check('accuracy >= baseline - 0.05', figures({ accuracy: 0.7 }), baseline);
    expect(v.passed).toBe(false);
    expect(v.value).toBe(0.7);
    expect(v.against).toBeCloseTo(0.75, 12);
    expect(v.reason).toBe('accuracy 0.7 vs baseline 0.8 − 0.05 = 0.75 fails >= 0.75');
    const plus = check('accuracy >= baseline + 0.1', figures({ accuracy: 0.85 }), baseline);
    expect(plus.passed).toBe(false);
    expect(plus.against).toBeCloseTo(0.9, 12);
    expect(plus.reason).toBe('accuracy 0.85 vs baseline 0.8 + 0.1 = 0.9 fails >= 0.9');
  });

  it('holds a tie as >= but not as >, and a zero delta is not > 0', () => {
    const variant = figures({ accuracy: 0.8 });
    expect(check('accuracy >= baseline', variant, baseline)).toEqual({
      condition: 'accuracy >= baseline',
      passed: true,
      value: 0.8,
      against: 0.8,
      reason: 'accuracy 0.8 vs baseline 0.8 meets >= 0.8',
    });
    expect(check('accuracy > baseline', variant, baseline)).toMatchObject({
      passed: false,
      value: 0.8,
      against: 0.8,
      reason: 'accuracy 0.8 vs baseline 0.8 fails > 0.8',
    });
    expect(check('accuracy == 0.8', variant, baseline).passed).toBe(true);
    const zero = check('delta accuracy > 0', variant, baseline, pairing({ accuracy: paired(0, 1) }));
    expect(zero).toEqual({
      condition: 'delta accuracy > 0',
      passed: false,
      value: 0,
      against: 0,
      reason: 'delta accuracy 0 fails > 0',
    });
  });

  it('asks a significant difference with p: 0.2 is not, 0.01 is', () => {
    const variant = figures({ accuracy: 0.84 });
    const text = 'delta accuracy > 0 with p < 0.05';
    const weak = check(text, variant, baseline, pairing({ accuracy: paired(0.04, 0.2) }));
    expect(weak).toEqual({
      condition: text,
      passed: false,
      value: 0.04,
      against: 0,
      pValue: 0.2,
      reason: 'delta accuracy 0.04 meets > 0; p = 0.2 ≥ 0.05 (not significant)',
    });
    const strong = check(text, variant, baseline, pairing({ accuracy: paired(0.04, 0.01) }));
    expect(strong).toMatchObject({ passed: true, value: 0.04, pValue: 0.01 });
    expect(strong.reason).toBe('delta accuracy 0.04 meets > 0; p = 0.01 < 0.05');
    // A p too small to show is shown as such, never as 0.
    const tiny = check(text, variant, baseline, pairing({ accuracy: paired(0.04, 0) }));
    expect(tiny.reason).toBe('delta accuracy 0.04 meets > 0; p < 0.0001 < 0.05');
    // Significant but the wrong way: still fails.
    const worse = check(text, variant, baseline, pairing({ accuracy: paired(-0.04, 0.01) }));
    expect(worse).toMatchObject({ passed: false, value: -0.04, pValue: 0.01 });
    // p with the baseline on the right reads the same pairing.
    const relative = check(
      'accuracy >= baseline with p < 0.05',
      variant,
      baseline,
      pairing({ accuracy: paired(0.04, 0.2) }),
    );
    expect(relative).toMatchObject({ passed: false, value: 0.84, against: 0.8, pValue: 0.2 });
    expect(relative.reason).toContain('(not significant)');
  });

  it('fails a delta or a p it has no pairing for', () => {
    const variant = figures({ accuracy: 0.9 });
    expect(check('delta accuracy > 0', variant, baseline)).toMatchObject({
      passed: false,
      value: null,
      reason: 'n/a: no paired accuracy with the baseline (no items scored on both)',
    });
    const p = check('accuracy >= baseline with p < 0.05', variant, baseline);
    expect(p.passed).toBe(false);
    expect(p.pValue).toBeUndefined();
    expect(p.reason).toBe('accuracy 0.9 vs baseline 0.8 meets >= 0.8; n/a: no paired accuracy for p');
  });

  it('computes a delta of figures that are not paired from both sides', () => {
    const v = check('delta cost per 10k < 0', figures({ per10kUsd: 1.5 }), baseline);
    expect(v).toMatchObject({
      passed: true,
      value: -0.5,
      against: 0,
      reason: 'delta cost per 10k -0.5 meets < 0',
    });
    expect(check('delta cost per 10k < -0.5', figures({ per10kUsd: 1.5 }), baseline).passed).toBe(false);
  });

  describe('latency percentiles over a slice', () => {
    // Transcript words 10, 149, 150, 200; the first item also has 500 words of notes.
    const inputs = [
      { transcript: wordsOf(10), notes: wordsOf(500) },
      { transcript: wordsOf(149), notes: '' },
      { transcript: wordsOf(150), notes: '' },
      { transcript: wordsOf(200), notes: '' },
    ];
    const withLatencies = (ms: number[]) =>
      figures({ items: ms.map((latencyMs, i) => ({ latencyMs, input: inputs[i]! })) });
    const variant = withLatencies([100, 200, 300, 400]);
    const base = withLatencies([500, 600, 700, 800]);

    it('keeps the items of the slice: words(transcript) >= 150 are the 300 and 400 ms ones', () => {
      // p50 of [300, 400] by linear interpolation: 350; the baseline's of [700, 800]: 750.
      const at = check('p50 latency where words(transcript) >= 150 <= baseline - 400', variant, base);
      expect(at).toEqual({
        condition: 'p50 latency where words(transcript) >= 150 <= baseline - 400',
        passed: true,
        value: 350,
        against: 350,
        reason: 'p50 latency where words(transcript) >= 150 350 vs baseline 750 − 400 = 350 meets <= 350',
      });
      const below = check('p50 latency where words(transcript) >= 150 < baseline - 400', variant, base);
      expect(below).toMatchObject({ passed: false, value: 350, against: 350 });
      expect(check('p50 latency where words(transcript) >= 150 < baseline', variant, base)).toMatchObject({
        passed: true,
        value: 350,
        against: 750,
      });
      // p95 of [300, 400]: 300 + 0.95 × 100.
      expect(check('p95 latency where words(transcript) >= 150 <= 395', variant, base)).toMatchObject({
        passed: true,
        value: 395,
      });
      expect(check('p95 latency where words(transcript) >= 150 < 395', variant, base).passed).toBe(false);
    });

    it('counts every column without one: 510, 149, 150, 200 words keep 100, 300 and 400 ms', () => {
      expect(check('p50 latency where words >= 150 <= 300', variant, base)).toMatchObject({
        passed: true,
        value: 300,
        against: 300,
      });
      // chars: 'w0 … w9' is 29 characters, the others far more.
      expect(check('p50 latency where chars(transcript) < 30 <= 100', variant, base)).toMatchObject({
        passed: true,
        value: 100,
      });
    });

    it('is over every item with a model call without a slice', () => {
      // p50 of [100, 200, 300, 400] = 250; baseline 650.
      expect(check('p50 latency < baseline - 399', variant, base)).toMatchObject({
        passed: true,
        value: 250,
        against: 251,
        reason: 'p50 latency 250 vs baseline 650 − 399 = 251 meets < 251',
      });
    });

    it('fails a slice with no items, saying n/a', () => {
      const v = check('p50 latency where words(transcript) >= 1000 < baseline', variant, base);
      expect(v).toEqual({
        condition: 'p50 latency where words(transcript) >= 1000 < baseline',
        passed: false,
        value: null,
        against: null,
        reason: 'n/a: no items where words(transcript) >= 1000',
      });
      expect(v.reason.startsWith('n/a')).toBe(true);
      // Even an absolute bound everything would meet.
      expect(check('p50 latency where words(transcript) >= 1000 < 1000000', variant, base).passed).toBe(
        false,
      );
      expect(check('p50 latency < 1000000', figures(), base)).toMatchObject({
        passed: false,
        reason: 'n/a: no items with model calls',
      });
    });

    it('fails against a baseline with no items in the slice, but not against a number', () => {
      const shortBase = figures({
        items: [{ latencyMs: 10, input: { transcript: wordsOf(5), notes: '' } }],
      });
      const v = check('p50 latency where words(transcript) >= 150 < baseline', variant, shortBase);
      expect(v).toMatchObject({
        passed: false,
        value: 350,
        against: null,
        reason: 'n/a: the baseline has no items where words(transcript) >= 150',
      });
      expect(check('p50 latency where words(transcript) >= 150 < 400', variant, shortBase).passed).toBe(true);
    });
  });

  it('never passes on a metric that is n/a', () => {
    const na = figures({ accuracy: null, per10kUsd: null });
    for (const text of ['accuracy >= 0', 'accuracy <= 1', 'accuracy >= baseline - 1']) {
      const v = check(text, na, baseline);
      expect(v).toMatchObject({ passed: false, value: null, reason: 'n/a: accuracy has no data' });
    }
    expect(check('cost per 10k <= 1000', na, baseline)).toMatchObject({
      passed: false,
      reason: 'n/a: cost per 10k has no data',
    });
    // The variant has a figure, the baseline none.
    expect(check('accuracy >= baseline - 0.05', figures({ accuracy: 0.9 }), na)).toMatchObject({
      passed: false,
      value: 0.9,
      against: null,
      reason: "n/a: the baseline's accuracy has no data",
    });
    const gate = evaluateGate([parseCondition('accuracy >= 0')], na, baseline);
    expect(gate).toMatchObject({ promoted: false, failed: ['accuracy >= 0'] });
  });

  it('fails an unknown metric, naming it', () => {
    const v = check('acuracy >= 0.5', figures(), baseline);
    expect(v.passed).toBe(false);
    expect(v.value).toBeNull();
    expect(v.reason).toMatch(/^no metric acuracy \(/);
    expect(v.reason).toContain('label: accuracy, kappa');
    const scorer = check('label.precision >= 0.5', figures(), baseline);
    expect(scorer).toMatchObject({
      passed: false,
      reason: 'scorer label has no metric precision (it has: accuracy, kappa)',
    });
  });

  it('reads scorer.metric from that scorer, paired on it', () => {
    const variant = figures({ kappa: 0.6 });
    const base = figures({ kappa: 0.62 });
    const v = check('label.kappa >= baseline - 0.05', variant, base);
    expect(v.passed).toBe(true);
    expect(v.value).toBe(0.6);
    expect(v.against).toBeCloseTo(0.57, 12);
    expect(v.reason).toBe('label.kappa 0.6 vs baseline 0.62 − 0.05 = 0.57 meets >= 0.57');
    expect(check('label.kappa >= baseline', variant, base).passed).toBe(false);
    // The pairing is looked up under the scorer and metric, not the accuracy's.
    const pairs = pairing({ accuracy: paired(0.5, 0.001), kappa: paired(-0.02, 0.4) });
    expect(check('delta label.kappa > 0', variant, base, pairs)).toMatchObject({
      passed: false,
      value: -0.02,
    });
    expect(check('delta kappa >= -0.02', variant, base, pairs)).toMatchObject({ passed: true, value: -0.02 });
  });

  it('reads a family figure by its dotted path in report.metrics', () => {
    const base = figures();
    const v = check('binary.f1 >= 0.9', figures({ metrics: { binary: { f1: 0.91 } } }), base);
    expect(v).toMatchObject({
      passed: true,
      value: 0.91,
      against: 0.9,
      reason: 'binary.f1 0.91 meets >= 0.9',
    });
    expect(check('binary.f1 >= 0.9', figures({ metrics: { binary: { f1: 0.89 } } }), base)).toMatchObject({
      passed: false,
      value: 0.89,
    });
    expect(check('binary.f1 >= 0', figures({ metrics: { binary: { f1: null } } }), base)).toMatchObject({
      passed: false,
      reason: 'n/a: binary.f1 has no data',
    });
    // A figure that is not a number is not a metric.
    expect(check('binary >= 0', figures({ metrics: { binary: { f1: 0.9 } } }), base).reason).toMatch(
      /^no metric binary /,
    );
    // Not a scorer metric: a delta is the difference of the two sides, and there is no p.
    const delta = check(
      'delta binary.f1 > 0',
      figures({ metrics: { binary: { f1: 0.91 } } }),
      figures({ metrics: { binary: { f1: 0.9 } } }),
    );
    expect(delta.passed).toBe(true);
    expect(delta.value).toBeCloseTo(0.01, 12);
  });
});
