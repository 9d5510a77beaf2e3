import { describe, expect, it } from 'vitest';
import {
  evaluateCondition,
  type GateFigures,
  GateSyntaxError,
  parseCondition,
} from '../../../shared/lib/gate.js';
import type { PairedDelta } from '../../../shared/lib/metrics/stats.js';
import type { Report } from '../../../shared/model/report.js';

/** A variant's figures: scorer `label` with accuracy 0.8, and its noise floor when it had repeats. */
function figures(noiseFloor?: number): GateFigures {
  return {
    report: {
      primaryScorer: 'label',
      scores: {
        label: {
          kind: 'label',
          n: 100,
          unscored: {},
          metrics: { accuracy: { value: 0.8, n: 100 } },
          ...(noiseFloor === undefined
            ? {}
            : {
                reliability: {
                  repeats: 3,
                  n: 100,
                  flipRate: 0.1,
                  ties: 0,
                  alpha: { level: 'nominal', value: 0.8, n: 100 },
                  noiseFloor: { accuracy: noiseFloor },
                  perRepeat: {},
                },
              }),
        },
      },
      metrics: {},
      cost: { per10kUsd: 1 } as Report['cost'],
      latencyMs: { p50: null, p95: null, mean: null, max: null },
      counts: { items: 100, scored: 100, failed: 0, invalidRows: 0, errors: 0, byFailure: {} },
    },
    items: [],
  };
}

const delta = (d: number): PairedDelta => ({
  n: 100,
  base: 0.8,
  candidate: 0.8 + d,
  delta: d,
  ci: [d - 0.05, d + 0.05],
  pValue: 0.04,
});
const pairing = (d: number) => ({ label: { deltas: { accuracy: delta(d) } } });

describe('gate: delta against the noise floor', () => {
  it('reads noise and -noise as the right-hand side of a delta', () => {
    expect(parseCondition('delta accuracy > noise').rhs).toEqual({ kind: 'noise', sign: 1 });
    expect(parseCondition('delta label.accuracy >= - noise').rhs).toEqual({ kind: 'noise', sign: -1 });
    expect(() => parseCondition('accuracy > noise')).toThrow(GateSyntaxError);
    expect(() => parseCondition('delta p50 latency < noise')).toThrow(/scorer metric/);
  });

  it('holds the delta against the larger of the two runs’ floors', () => {
    // Variant floor 0.03, baseline floor 0.05: a delta of 0.04 is within the noise.
    const within = evaluateCondition(
      parseCondition('delta accuracy > noise'),
      figures(0.03),
      figures(0.05),
      pairing(0.04),
    );
    expect(within).toMatchObject({ passed: false, value: 0.04, against: 0.05 });
    expect(within.reason).toBe('delta accuracy 0.04 vs noise floor 0.05 fails > 0.05');
    const beyond = evaluateCondition(
      parseCondition('delta accuracy > noise'),
      figures(0.03),
      figures(),
      pairing(0.04),
    );
    expect(beyond).toMatchObject({ passed: true, against: 0.03 });
    // No worse than the noise: −0.04 against −0.05 passes.
    const noWorse = evaluateCondition(
      parseCondition('delta accuracy > -noise'),
      figures(0.05),
      figures(),
      pairing(-0.04),
    );
    expect(noWorse).toMatchObject({ passed: true, against: -0.05 });
  });

  it('fails and says why when neither run measured its noise', () => {
    const verdict = evaluateCondition(
      parseCondition('delta accuracy > noise'),
      figures(),
      figures(),
      pairing(0.2),
    );
    expect(verdict.passed).toBe(false);
    expect(verdict.reason).toContain('set run.repeats > 1');
  });
});
