/**
 * The n on a scorer's headline (the CLI's end-of-run summary) is the n its figures ran over,
 * from each metric's own `n`: an agreement figure over the items with gold says so when fewer
 * items were scored, and a figure over other items than the rest is named with its own n.
 */
import { describe, expect, it } from 'vitest';
import type { MetricValue, ScorerSummary } from '../../../shared/model/report.js';
import { headline } from '../../../shared/reports/files.js';

const m = (value: number, n: number): MetricValue => ({ value, n });

describe('the headline n', () => {
  it('a label scorer with 10 items scored and gold on 9: n 9, of 10 scored', () => {
    const s: ScorerSummary = {
      kind: 'label',
      n: 10,
      unscored: {},
      metrics: { accuracy: m(8 / 9, 9), macroF1: m(0.8, 9), kappa: m(0.7, 9) },
    };
    expect(headline('label', s)).toBe(
      "label: accuracy 0.889  macro F1 0.800  Cohen's kappa 0.700  (n 9 of 10 scored)",
    );
  });

  it('every figure over the items scored: n alone, with the unscored beside it', () => {
    const s: ScorerSummary = {
      kind: 'label',
      n: 9,
      unscored: { parse: 1 },
      metrics: { accuracy: m(1, 9), macroF1: m(1, 9), kappa: m(1, 9) },
    };
    expect(headline('label', s)).toMatch(/\(n 9, unscored 1\)$/);
  });

  it('a figure over all the items scored beside agreement figures over the gold: each named', () => {
    const s: ScorerSummary = {
      kind: 'pass',
      n: 10,
      unscored: {},
      metrics: { passRate: m(0.5, 10), accuracy: m(0.75, 4), balancedAccuracy: m(0.7, 4) },
    };
    expect(headline('pass', s)).toBe(
      'pass: pass rate 0.500  accuracy 0.750  balanced accuracy 0.700  (n 4, pass rate on 10)',
    );
  });

  it('no figure: the items scored', () => {
    const s: ScorerSummary = { kind: 'number', n: 3, unscored: {}, metrics: {} };
    expect(headline('score', s)).toBe('score: no metrics  (n 3)');
  });
});
