import { describe, expect, it } from 'vitest';
import { classificationMetrics, type LabelPair } from '../../../shared/lib/metrics/index.js';
import { MIN_ITEMS_FOR_INTERVAL } from '../../../shared/lib/metrics/intervals.js';

const rows = (spec: string): LabelPair[] =>
  spec
    .trim()
    .split(/\s*,\s*/)
    .map((pair) => {
      const [gold, pred] = pair.split('>');
      return { gold: gold!, pred: pred! };
    });

/** Every number in a value tree, to prove "no NaN anywhere". */
function numbers(value: unknown): number[] {
  if (typeof value === 'number') return [value];
  if (Array.isArray(value)) return value.flatMap(numbers);
  if (value && typeof value === 'object') return Object.values(value).flatMap(numbers);
  return [];
}

/*
 * The 10-row hand example (gold > pred). TN is never gold: a predicted-only label.
 *
 *   #  gold  pred   correct  binary gold/pred (TP,TN → P)
 *   1  TP    TP     ✓        P P
 *   2  TP    TP     ✓        P P
 *   3  TP    TP     ✓        P P
 *   4  TP    FP3    ✗        P N
 *   5  FP3   FP3    ✓        N N
 *   6  FP3   TP     ✗        N P
 *   7  FP2   FP2    ✓        N N
 *   8  FP2   FP1    ✗        N N
 *   9  FP1   FP1    ✓        N N
 *  10  FP1   TN     ✗        N P
 *
 * gold counts:  TP 4, FP3 2, FP2 2, FP1 2, TN 0
 * pred counts:  TP 4, FP3 2, FP2 1, FP1 2, TN 1
 * accuracy = 6/10 = 0.6
 *
 * per class      tp  P        R        F1 = 2tp/(2tp+fp+fn)
 *   TP           3   3/4      3/4      6/8  = 0.75
 *   FP3          1   1/2      1/2      2/4  = 0.5
 *   FP2          1   1/1      1/2      2/3
 *   FP1          1   1/2      1/2      2/4  = 0.5
 *   TN           0   0/1 = 0  no gold→0 0
 * macro F1 over the union (5 labels) = (3/4 + 1/2 + 2/3 + 1/2 + 0) / 5 = (29/12) / 5 = 29/60
 *   (over gold labels only it would have been (29/12)/4 = 29/48 — the seed's definition is the union)
 *
 * binary: PP = 3 (#1-3), PN = 1 (#4), NP = 2 (#6, #10), NN = 4 (#5, #7, #8, #9)
 *   positive: P = 3/5, R = 3/4, F1 = 6/(6+2+1) = 2/3, support 4
 *   negative: P = 4/5, R = 4/6, F1 = 8/(8+1+2) = 8/11, support 6
 *   binary accuracy = (3+4)/10 = 0.7
 *   binary macro F1 = (2/3 + 8/11) / 2 = (22/33 + 24/33) / 2 = 23/33
 *
 * kappa: pₒ = 0.6; pₑ = Σ gold·pred / n² = (4·4 + 2·2 + 2·1 + 2·2 + 0·1) / 100 = 26/100
 *   κ = (0.6 − 0.26) / (1 − 0.26) = 0.34 / 0.74 = 17/37
 */
const HAND = rows('TP>TP, TP>TP, TP>TP, TP>FP3, FP3>FP3, FP3>TP, FP2>FP2, FP2>FP1, FP1>FP1, FP1>TN');

describe('classificationMetrics: 10-row hand-computed 4-class example', () => {
  const m = classificationMetrics(HAND, { bootstrap: false });

  it('counts rows and computes 4-class accuracy', () => {
    expect(m.n).toBe(10);
    expect(m.errors).toBe(0);
    expect(m.accuracy).toBeCloseTo(0.6, 12);
  });

  it('computes per-class precision/recall/F1/support for every label of the union', () => {
    expect(Object.keys(m.perClass).sort()).toEqual(['FP1', 'FP2', 'FP3', 'TN', 'TP']);
    expect(m.perClass.TP).toEqual({ precision: 0.75, recall: 0.75, f1: 0.75, support: 4 });
    expect(m.perClass.FP3).toEqual({ precision: 0.5, recall: 0.5, f1: 0.5, support: 2 });
    expect(m.perClass.FP2!.precision).toBe(1);
    expect(m.perClass.FP2!.recall).toBe(0.5);
    expect(m.perClass.FP2!.f1).toBeCloseTo(2 / 3, 12);
    expect(m.perClass.FP2!.support).toBe(2);
    expect(m.perClass.FP1).toEqual({ precision: 0.5, recall: 0.5, f1: 0.5, support: 2 });
    expect(m.perClass.TN).toEqual({ precision: 0, recall: 0, f1: 0, support: 0 });
  });

  it('averages macro F1 over the union of gold and predicted labels (predicted-only TN counts as 0)', () => {
    expect(m.macroF1).toBeCloseTo(29 / 60, 12);
  });

  it('maps TP/TN to positive and takes the binary macro F1 as the macro of positive and negative F1', () => {
    expect(m.binary!.accuracy).toBeCloseTo(0.7, 12);
    expect(m.binary!.positive.precision).toBeCloseTo(3 / 5, 12);
    expect(m.binary!.positive.recall).toBeCloseTo(3 / 4, 12);
    expect(m.binary!.positive.f1).toBeCloseTo(2 / 3, 12);
    expect(m.binary!.positive.support).toBe(4);
    expect(m.binary!.negative.precision).toBeCloseTo(4 / 5, 12);
    expect(m.binary!.negative.recall).toBeCloseTo(4 / 6, 12);
    expect(m.binary!.negative.f1).toBeCloseTo(8 / 11, 12);
    expect(m.binary!.negative.support).toBe(6);
    expect(m.binary!.f1).toBeCloseTo(23 / 33, 12);
  });

  it("computes Cohen's kappa from the confusion matrix", () => {
    expect(m.kappa).toBeCloseTo(17 / 37, 12);
  });

  it('builds a gold × union confusion matrix with zeros included', () => {
    expect(m.confusion).toEqual({
      FP1: { FP1: 1, FP2: 0, FP3: 0, TN: 1, TP: 0 },
      FP2: { FP1: 1, FP2: 1, FP3: 0, TN: 0, TP: 0 },
      FP3: { FP1: 0, FP2: 0, FP3: 1, TN: 0, TP: 1 },
      TP: { FP1: 0, FP2: 0, FP3: 1, TN: 0, TP: 3 },
    });
    expect(m.confusion.TN).toBeUndefined();
  });

  it('orders labels by labelOrder, then the rest in code-unit order, without changing values', () => {
    const ordered = classificationMetrics(HAND, {
      bootstrap: false,
      labelOrder: ['TP', 'FP3', 'FP2', 'FP1', 'XX'],
    });
    expect(ordered.labels).toEqual(['TP', 'FP3', 'FP2', 'FP1', 'TN']);
    expect(Object.keys(ordered.perClass)).toEqual(['TP', 'FP3', 'FP2', 'FP1', 'TN']);
    expect(Object.keys(ordered.confusion.TP!)).toEqual(['TP', 'FP3', 'FP2', 'FP1', 'TN']);
    expect({ ...ordered, labels: [] }).toEqual({ ...m, labels: [] });
    expect(m.labels).toEqual(['FP1', 'FP2', 'FP3', 'TN', 'TP']);
  });

  it('honours a custom positive set', () => {
    // positive = {TP, FP3}: #1–6 are P→P; #7–10 are N→N (TN is not positive any more), so binary is perfect.
    const custom = classificationMetrics(HAND, { bootstrap: false, positive: ['TP', 'FP3'] });
    expect(custom.binary!.accuracy).toBe(1);
    expect(custom.binary!.f1).toBe(1);
  });
});

describe('classificationMetrics: Error rows', () => {
  it('excludes Error predictions from every metric and counts them', () => {
    const withErrors = [
      ...HAND.slice(0, 4),
      { gold: 'FP2', pred: 'Error' },
      ...HAND.slice(4),
      { gold: 'TP', pred: 'Error' },
    ];
    const m = classificationMetrics(withErrors, { bootstrap: false });
    const clean = classificationMetrics(HAND, { bootstrap: false });
    expect(m.errors).toBe(2);
    expect(m.n).toBe(10);
    expect({ ...m, errors: 0 }).toEqual(clean);
    expect(m.perClass.Error).toBeUndefined();
  });

  it('uses a custom error label, compared exactly (case-sensitive)', () => {
    const m = classificationMetrics(rows('TP>TP, TP>ERR, TP>error'), { errorLabel: 'ERR', bootstrap: false });
    expect(m.errors).toBe(1);
    expect(m.n).toBe(2);
    expect(m.labels).toEqual(['TP', 'error']);
    expect(m.accuracy).toBe(0.5);
  });
});

describe('classificationMetrics: degenerate inputs', () => {
  it('says n/a (null), not 0, with empty tables and no CI when n = 0 — no NaN anywhere', () => {
    for (const input of [[], rows('TP>Error, FP1>Error')]) {
      const m = classificationMetrics(input);
      expect(m.n).toBe(0);
      expect(m.accuracy).toBeNull();
      expect(m.macroF1).toBeNull();
      expect(m.kappa).toBeNull();
      expect(m.binary).toEqual({
        accuracy: null,
        f1: null,
        positive: { label: 'TP/TN', precision: null, recall: null, f1: null, support: 0 },
        negative: { precision: 0, recall: 0, f1: 0, support: 0 },
      });
      expect(m.perClass).toEqual({});
      expect(m.confusion).toEqual({});
      expect(m.ci).toBeUndefined();
      expect(numbers(m).every(Number.isFinite)).toBe(true);
      expect(JSON.parse(JSON.stringify(m))).toEqual({ ...m, ci: undefined });
    }
    expect(classificationMetrics(rows('TP>Error, FP1>Error')).errors).toBe(2);
  });

  it('has no binary view when asked for none (labels with no positive class)', () => {
    const m = classificationMetrics(rows('polite>polite, rude>neutral'), { positive: false });
    expect(m.binary).toBeUndefined();
    // Two rows: accuracy has its Wilson interval; macro F1 and kappa, bootstrap intervals, are
    // withheld below their minimum number of rows.
    expect(Object.keys(m.ci!).sort()).toEqual(['accuracy']);
  });

  it('scores perfect agreement as 1 everywhere', () => {
    const m = classificationMetrics(rows('TP>TP, FP1>FP1, FP2>FP2, FP3>FP3, TP>TP, FP3>FP3'));
    expect(m.accuracy).toBe(1);
    expect(m.macroF1).toBe(1);
    expect(m.kappa).toBe(1);
    expect(m.binary!.accuracy).toBe(1);
    expect(m.binary!.f1).toBe(1);
    // 6 of 6 right is not certainty: Wilson's interval with a continuity correction, where the
    // bootstrap said [1, 1]. By hand: (2·6 + z² − 1 − z·√(z² − 2 − 1/6 + 4)) / (2(6 + z²))
    // = (14.8415 − 1.96·2.3822) / 19.683 = 0.5168. The bootstrap figures have no interval on 6 rows.
    expect(Object.keys(m.ci!).sort()).toEqual(['accuracy', 'binaryAccuracy']);
    expect(m.ci!.accuracy[0]).toBeCloseTo(0.516817051213657, 12);
    expect(m.ci!.accuracy[1]).toBe(1);
    expect(m.ci!.binaryAccuracy).toEqual(m.ci!.accuracy);
  });

  it('AQUA relation: when every pred equals gold, binary macro F1 = 1 and accuracy = 1 (even with one binary class)', () => {
    // All positive: the negative class never occurs, so it is not averaged in as a 0.
    const m = classificationMetrics(rows('TP>TP, TP>TP, TN>TN'), { bootstrap: false });
    expect(m.accuracy).toBe(1);
    expect(m.binary!.accuracy).toBe(1);
    expect(m.binary!.f1).toBe(1);
    expect(m.binary!.negative).toEqual({ precision: 0, recall: 0, f1: 0, support: 0 });
  });

  it('has no kappa when one single label is used everywhere (expected agreement 1: 0/0)', () => {
    const m = classificationMetrics(rows('FP3>FP3, FP3>FP3, FP3>FP3'), { bootstrap: false });
    expect(m.kappa).toBeNull();
    expect(m.macroF1).toBe(1);
  });

  it('gives kappa 0 when predictions are one constant label and gold varies', () => {
    // pₒ = 2/4, pₑ = (2·4)/16 = 0.5 → κ = 0
    const m = classificationMetrics(rows('TP>TP, TP>TP, FP1>TP, FP2>TP'), { bootstrap: false });
    expect(m.kappa).toBe(0);
  });

  it('gives negative kappa for systematic disagreement', () => {
    // pₒ = 0, pₑ = (2·2 + 2·2)/16 = 0.5 → κ = −1
    const m = classificationMetrics(rows('TP>FP1, TP>FP1, FP1>TP, FP1>TP'), { bootstrap: false });
    expect(m.kappa).toBe(-1);
    expect(m.accuracy).toBe(0);
  });
});

describe('classificationMetrics: a label present only in predictions', () => {
  it('lists it with precision/recall/F1 0 and support 0, includes it in macro F1, adds a column but no row', () => {
    // gold all TP; preds TP, TP, FP1.
    // TP: P = 2/2, R = 2/3, F1 = 4/(4+0+1) = 0.8;  FP1: P = 0/1, R = 0 (no gold), F1 = 0
    // macro F1 = (0.8 + 0) / 2 = 0.4
    const m = classificationMetrics(rows('TP>TP, TP>TP, TP>FP1'), { bootstrap: false });
    expect(m.perClass.FP1).toEqual({ precision: 0, recall: 0, f1: 0, support: 0 });
    expect(m.perClass.TP!.f1).toBeCloseTo(0.8, 12);
    expect(m.macroF1).toBeCloseTo(0.4, 12);
    expect(m.confusion).toEqual({ TP: { FP1: 1, TP: 2 } });
  });
});

describe('classificationMetrics: bootstrap CIs', () => {
  // 200 rows: the hand example twenty times over (enough for every bootstrap interval but the
  // binary F1s', see MIN_ITEMS_FOR_INTERVAL).
  const big = Array.from({ length: 20 }, () => HAND).flat();

  it('is deterministic for a given seed', () => {
    const a = classificationMetrics(big, { bootstrap: { iterations: 300, seed: 7 } });
    const b = classificationMetrics(big, { bootstrap: { iterations: 300, seed: 7 } });
    const c = classificationMetrics(big, { bootstrap: { iterations: 300, seed: 8 } });
    expect(a.ci).toEqual(b.ci);
    expect(a.ci).not.toEqual(c.ci);
  });

  it('brackets the point estimates with ordered, in-range bounds', () => {
    const m = classificationMetrics(big);
    const ci = m.ci!;
    const points = { accuracy: m.accuracy, macroF1: m.macroF1, kappa: m.kappa };
    for (const key of ['accuracy', 'macroF1', 'kappa'] as const) {
      const [lo, hi] = ci[key]!;
      expect(lo).toBeLessThanOrEqual(points[key]!);
      expect(hi).toBeGreaterThanOrEqual(points[key]!);
      expect(lo).toBeLessThan(hi);
      expect(lo).toBeGreaterThanOrEqual(key === 'kappa' ? -1 : 0);
      expect(hi).toBeLessThanOrEqual(1);
    }
    // Accuracy 0.6 at n = 200: Wilson's interval with a continuity correction [0.5283, 0.6678]
    // (plain Wilson, scipy's binomtest(120, 200).proportion_ci(method="wilson"): [0.5308, 0.6654];
    // the correction widens each end by about 1/(2n)).
    expect(ci.accuracy[0]).toBeCloseTo(0.5283, 4);
    expect(ci.accuracy[1]).toBeCloseTo(0.6678, 4);
  });

  it('is skipped when bootstrap is false', () => {
    expect(classificationMetrics(HAND, { bootstrap: false }).ci).toBeUndefined();
  });
});

/*
 * A declared judge's binary view, by hand: labels helpful / partly / unhelpful, positive
 * [helpful], 10 rows (gold > pred):
 *   helpful>helpful ×4, helpful>partly ×1, partly>helpful ×2, partly>partly ×1, unhelpful>unhelpful ×2
 *
 * binary 2×2 (helpful = P, the rest = N): PP = 4, PN = 1, NP = 2, NN = 3
 *   positive (helpful): P = 4/6 = 2/3, R = 4/5, F1 = 2·4 / (2·4 + 2 + 1) = 8/11 ≈ 0.727
 *   negative (rest):    P = 3/4,       R = 3/5, F1 = 2·3 / (2·3 + 1 + 2) = 6/9 = 2/3
 *   binary macro F1 = (8/11 + 2/3) / 2 = (24/33 + 22/33) / 2 = 23/33 ≈ 0.697 — not the F1 of helpful
 *   binary accuracy = (4 + 3) / 10 = 0.7
 */
const HELPFUL = rows(
  'helpful>helpful, helpful>helpful, helpful>helpful, helpful>helpful, helpful>partly, partly>helpful, partly>helpful, partly>partly, unhelpful>unhelpful, unhelpful>unhelpful',
);

describe('classificationMetrics: the positive class of the binary view', () => {
  it('reports the positive class by name, its F1 apart from the binary macro F1', () => {
    const m = classificationMetrics(HELPFUL, { positive: ['helpful'], bootstrap: false });
    expect(m.binary!.f1).toBeCloseTo(23 / 33, 12);
    expect(m.binary!.accuracy).toBeCloseTo(0.7, 12);
    expect(m.binary!.positive.label).toBe('helpful');
    expect(m.binary!.positive.precision).toBeCloseTo(2 / 3, 12);
    expect(m.binary!.positive.recall).toBeCloseTo(4 / 5, 12);
    expect(m.binary!.positive.f1).toBeCloseTo(8 / 11, 12);
    expect(m.binary!.positive.support).toBe(5);
    expect(m.binary!.negative.f1).toBeCloseTo(2 / 3, 12);
  });

  it('names a class of several labels by all of them, and GEC by TP/TN', () => {
    const m = classificationMetrics(HELPFUL, { positive: ['helpful', 'partly'], bootstrap: false });
    expect(m.binary!.positive.label).toBe('helpful/partly');
    expect(classificationMetrics(HAND, { bootstrap: false }).binary!.positive.label).toBe('TP/TN');
  });

  it('gives the F1 of the positive class a CI on the same resamples as the other figures', () => {
    const big = Array.from(
      { length: Math.ceil(MIN_ITEMS_FOR_INTERVAL.positiveF1! / HELPFUL.length) },
      () => HELPFUL,
    ).flat();
    const m = classificationMetrics(big, { positive: ['helpful'] });
    const [lo, hi] = m.ci!.positiveF1!;
    expect(lo).toBeLessThanOrEqual(8 / 11);
    expect(hi).toBeGreaterThanOrEqual(8 / 11);
    expect(lo).toBeLessThan(hi);
    // The same resamples: the intervals of the figures without a binary view are unchanged.
    const plain = classificationMetrics(big, { positive: false });
    expect({ accuracy: m.ci!.accuracy, macroF1: m.ci!.macroF1, kappa: m.ci!.kappa }).toEqual(plain.ci);
  });

  it('has no F1 of a positive class that never occurs (null, not 0)', () => {
    const m = classificationMetrics(rows('partly>partly, unhelpful>partly'), { positive: ['helpful'] });
    expect(m.binary!.positive).toEqual({
      label: 'helpful',
      precision: null,
      recall: null,
      f1: null,
      support: 0,
    });
    expect(m.ci!.positiveF1).toBeUndefined();
  });
});

/*
 * Quadratic weighted kappa, by hand, on a 3-level scale bad < ok < good (places 0, 1, 2),
 * 6 rows (gold > pred): bad>bad, bad>ok, ok>ok, ok>good, good>good, good>ok
 *
 *   squared misses O = Σ (gold − pred)² = 0 + 1 + 0 + 1 + 0 + 1 = 3
 *   gold totals bad 2, ok 2, good 2; pred totals bad 1, ok 3, good 2
 *   E = Σ_g Σ_p gold_g · pred_p · (g − p)²; each gold total is 2, so E = 2 · Σ_p pred_p · Σ_g (g − p)²
 *     Σ_g (g − p)²: p = bad 0+1+4 = 5, p = ok 1+0+1 = 2, p = good 4+1+0 = 5
 *     E = 2 · (1·5 + 3·2 + 2·5) = 42
 *   κw = 1 − n·O / E = 1 − 6·3 / 42 = 1 − 3/7 = 4/7 ≈ 0.571
 *   (sklearn's form: 1 − Σ w·C / Σ w·(outer(gold, pred) / n) = 1 − 3 / (42/6) = 4/7.)
 * Unweighted kappa on the same rows: pₒ = 3/6, pₑ = (2·1 + 2·3 + 2·2)/36 = 1/3 → κ = 1/4: the
 * weights forgive the three near misses.
 */
const SCALE = ['bad', 'ok', 'good'];
const NEAR = rows('bad>bad, bad>ok, ok>ok, ok>good, good>good, good>ok');

describe('classificationMetrics: quadratic weighted kappa of an ordinal scale', () => {
  it('computes the hand example', () => {
    const m = classificationMetrics(NEAR, { labelOrder: SCALE, ordinal: true, bootstrap: false });
    expect(m.weightedKappa).toBeCloseTo(4 / 7, 12);
    expect(m.kappa).toBeCloseTo(1 / 4, 12);
  });

  it('reads places from the declared order, not from the labels present', () => {
    // "ok" is on the scale but the rows skip it: bad and good stay two places apart.
    // bad>good, good>bad, bad>bad, good>good: O = 4 + 4 = 8; totals 2/2 on both sides;
    // E = 2·2·4 + 2·2·4 = 32; κw = 1 − 4·8/32 = 0 (and κ = 0 too).
    const m = classificationMetrics(rows('bad>good, good>bad, bad>bad, good>good'), {
      labelOrder: SCALE,
      ordinal: true,
      bootstrap: false,
    });
    expect(m.weightedKappa).toBeCloseTo(0, 12);
  });

  it('has a CI on the same resamples as the other figures, which it leaves as they were', () => {
    const big = Array.from(
      { length: Math.ceil(MIN_ITEMS_FOR_INTERVAL.weightedKappa! / NEAR.length) },
      () => NEAR,
    ).flat();
    const m = classificationMetrics(big, { labelOrder: SCALE, ordinal: true });
    const plain = classificationMetrics(big, { labelOrder: SCALE });
    const [lo, hi] = m.ci!.weightedKappa!;
    expect(lo).toBeLessThanOrEqual(4 / 7);
    expect(hi).toBeGreaterThanOrEqual(4 / 7);
    expect({ ...m.ci, weightedKappa: undefined }).toEqual({ ...plain.ci, weightedKappa: undefined });
    expect(plain.weightedKappa).toBeUndefined();
  });

  it('is null, never 0, without data or with a label off the scale', () => {
    const empty = classificationMetrics(rows('bad>Error, ok>Error'), { labelOrder: SCALE, ordinal: true });
    expect(empty.weightedKappa).toBeNull();
    expect(empty.ci).toBeUndefined();
    const off = classificationMetrics(rows('bad>bad, ok>awful'), {
      labelOrder: SCALE,
      ordinal: true,
      bootstrap: false,
    });
    expect(off.weightedKappa).toBeNull();
  });
});
