/**
 * Undefined is null: a figure whose formula is 0/0 is n/a with its reason, never 1 or 0, and has
 * no interval; Kendall's τ-b pinned by hand and against scipy.
 */
import { describe, expect, it } from 'vitest';
import {
  kendallTauB,
  pearson,
  quadraticWeightedKappa,
  rocAuc,
  spearman,
} from '../../../shared/lib/metrics/agreement.js';
import { classificationMetrics } from '../../../shared/lib/metrics/classification.js';
import { scorerFigures } from '../../../shared/lib/metrics/scores.js';
import { metricDisplayName } from '../../../shared/model/metrics.js';

const pairs = (text: string) =>
  text.split(',').map((pair) => {
    const [gold, pred] = pair.trim().split('>');
    return { gold: gold!, pred: pred! };
  });

describe("Cohen's kappa and weighted kappa where the formula is 0/0", () => {
  it('one label everywhere: kappa and weighted kappa n/a, with no interval (were 1.000 [1, 1])', () => {
    // pₑ = 1 and pₒ = 1: κ = (1 − 1)/(1 − 1).
    const m = classificationMetrics(pairs(Array.from({ length: 30 }, () => 'ok>ok').join(',')), {
      labelOrder: ['bad', 'ok', 'good'],
      ordinal: true,
    });
    expect(m.kappa).toBeNull();
    expect(m.weightedKappa).toBeNull();
    expect(m.ci?.kappa).toBeUndefined();
    expect(m.ci?.weightedKappa).toBeUndefined();
    expect(m.accuracy).toBe(1);
  });

  it('one item: kappa n/a', () => {
    expect(classificationMetrics(pairs('TP>TP'), { bootstrap: false }).kappa).toBeNull();
  });

  it('the report says why', () => {
    const rows = Array.from({ length: 25 }, () => ({ value: 'ok', target: 'ok' }));
    const { metrics } = scorerFigures('label', rows, {
      labelOrder: ['bad', 'ok', 'good'],
      ordinal: true,
      bootstrap: { iterations: 50 },
    }).summary;
    expect(metrics.kappa).toMatchObject({ value: null, n: 25 });
    expect(metrics.kappa!.ci).toBeUndefined();
    expect(metrics.kappa!.reason).toMatch(/^undefined: one label everywhere/);
    expect(metrics.weightedKappa!.value).toBeNull();
    expect(metrics.weightedKappa!.reason).toMatch(/^undefined/);
    // Accuracy is defined: 25 of 25, the continuity-corrected Wilson interval [0.8342, 1]
    // (plain Wilson's 0.8668, scipy's, less about 1/(2n)).
    expect(metrics.accuracy!.value).toBe(1);
    expect(metrics.accuracy!.ci![0]).toBeCloseTo(0.8342, 4);
    expect(metrics.accuracy!.reason).toBeUndefined();
  });
});

describe('correlations and AUC where the formula is 0/0', () => {
  it('a constant side: Pearson, Spearman, Kendall null; one value everywhere: weighted kappa null', () => {
    expect(pearson([1, 2, 3], [4, 4, 4])).toBeNull();
    expect(spearman([1, 1, 1], [1, 2, 3])).toBeNull();
    expect(kendallTauB([1, 2, 3], [4, 4, 4])).toBeNull();
    expect(kendallTauB([1], [1])).toBeNull();
    expect(quadraticWeightedKappa([3, 3], [3, 3])).toBeNull();
  });

  it('one class only: ROC-AUC null', () => {
    expect(rocAuc([0.2, 0.9], [true, true])).toBeNull();
    expect(rocAuc([0.2, 0.9], [0, 0])).toBeNull();
  });

  it('the number scorer says why, and gives no interval', () => {
    const rows = Array.from({ length: 30 }, (_, i) => ({ value: i, target: 2 }));
    const { metrics } = scorerFigures('number', rows, { bootstrap: { iterations: 50 } }).summary;
    for (const key of ['pearson', 'spearman', 'kendallTau']) {
      expect(metrics[key]).toMatchObject({ value: null, n: 30 });
      expect(metrics[key]!.ci).toBeUndefined();
      expect(metrics[key]!.reason).toMatch(/constant side/);
    }
    expect(metrics.mae!.ci).toHaveLength(2);
  });
});

describe("Kendall's τ-b (Knight's O(n log n) algorithm)", () => {
  it('by hand, without ties: 5 concordant, 1 discordant of 6 pairs', () => {
    // x 1 2 3 4, y 1 3 2 4: the pair (2, 3) is discordant, the other five concordant → 4/6.
    expect(kendallTauB([1, 2, 3, 4], [1, 3, 2, 4])).toBeCloseTo(2 / 3, 15);
    expect(kendallTauB([1, 2, 3, 4], [4, 3, 2, 1])).toBe(-1);
  });

  it('by hand, with ties on both sides', () => {
    // x 1 1 2 3, y 1 2 2 3. Pairs: (1,2) tied on x; (1,3) C; (1,4) C; (2,3) tied on y; (2,4) C;
    // (3,4) C. C = 4, D = 0, n₀ = 6, n₁ = 1, n₂ = 1: 4/√(5·5) = 0.8.
    expect(kendallTauB([1, 1, 2, 3], [1, 2, 2, 3])).toBeCloseTo(0.8, 15);
  });

  it("scipy's documented example: x = [12, 2, 1, 12, 2], y = [1, 4, 7, 1, 0] gives −0.47140452079103173", () => {
    expect(kendallTauB([12, 2, 1, 12, 2], [1, 4, 7, 1, 0])).toBeCloseTo(-0.47140452079103173, 14);
  });

  it('by hand on a tied scale, as scipy.stats.kendalltau gives it (0.6667)', () => {
    // (x, y): (0,0) (0,1) (1,0) (1,1) (2,2) (2,2). Of the 15 pairs: concordant (1,4) (1,5) (1,6)
    // (2,5) (2,6) (3,5) (3,6) (4,5) (4,6) = 9; discordant (2,3) = 1; tied on x (1,2) (3,4) (5,6)
    // = 3; tied on y (1,3) (2,4) (5,6) = 3. τ-b = (9 − 1)/√((15 − 3)(15 − 3)) = 8/12.
    expect(kendallTauB([0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 2, 2])).toBeCloseTo(2 / 3, 15);
  });

  it('is named in the metric table', () => {
    expect(metricDisplayName('kendallTau')).toBe('Kendall τ-b');
  });
});
