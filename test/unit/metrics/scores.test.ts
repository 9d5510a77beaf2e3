import { describe, expect, it } from 'vitest';
import { type ScoreRow, scorerFigures, verdictOf } from '../../../shared/lib/metrics/index.js';
import { MIN_ITEMS_FOR_INTERVAL } from '../../../shared/lib/metrics/intervals.js';

const NO_CI = { bootstrap: { iterations: 200, seed: 1 } };

describe('label scores', () => {
  // gold → value: TP → TP (right), FP1 → FP2 (wrong), TP → unscored (parse), an invalid row.
  const rows: ScoreRow[] = [
    { value: 'TP', target: 'TP' },
    { value: 'FP2', target: 'FP1' },
    { unscored: 'parse', target: 'TP' },
    { unscored: 'invalid_row' },
  ];
  const { summary, flat } = scorerFigures('label', rows, NO_CI);

  it('skips and counts unscored items by kind, and counts scored ones in n', () => {
    expect(summary).toMatchObject({ kind: 'label', n: 2, unscored: { parse: 1, invalid_row: 1 } });
  });

  it('gives the AQUA metrics over the scored items with gold, each with its n (unscored = Error, excluded)', () => {
    // 1 of 2 right.
    expect(summary.metrics.accuracy).toMatchObject({ value: 0.5, n: 2 });
    expect(summary.metrics.kappa!.n).toBe(2);
    expect(summary.metrics.binaryF1).toBeUndefined(); // no positive labels declared
    expect(flat).toMatchObject({ n: 2, errors: 1, accuracy: 0.5 });
    expect(summary.tables).toMatchObject({ distribution: { TP: 1, FP2: 1 } });
  });

  it('without gold, only the distribution of the values', () => {
    const bare = scorerFigures('label', [{ value: 'rude' }, { value: 'polite' }, { value: 'rude' }]);
    expect(bare.summary).toEqual({
      kind: 'label',
      n: 3,
      unscored: {},
      metrics: {},
      tables: { distribution: { rude: 2, polite: 1 } },
    });
  });

  it('with positive labels, the binary view too', () => {
    const binary = scorerFigures('label', rows, { ...NO_CI, positive: ['TP'] });
    // positive/negative: TP→TP is P→P, FP1→FP2 is N→N: binary accuracy 1.
    expect(binary.summary.metrics.binaryAccuracy).toMatchObject({ value: 1, n: 2 });
  });

  it('names the binary macro F1 and the F1 of the positive class apart', () => {
    // helpful>helpful ×2, helpful>partly, partly>helpful, partly>partly, unhelpful>unhelpful.
    // PP 2, PN 1, NP 1, NN 2: helpful P 2/3, R 2/3, F1 4/6 = 2/3; rest P 2/3, R 2/3, F1 2/3 …
    // so a row more to tell them apart: unhelpful>unhelpful again (NN 3): rest P 3/4, R 3/4,
    // F1 6/8 = 3/4; binary macro F1 = (2/3 + 3/4) / 2 = 17/24 ≈ 0.708, F1 of helpful 2/3.
    const pairs = [
      ['helpful', 'helpful'],
      ['helpful', 'helpful'],
      ['helpful', 'partly'],
      ['partly', 'helpful'],
      ['partly', 'partly'],
      ['unhelpful', 'unhelpful'],
      ['unhelpful', 'unhelpful'],
    ];
    const { summary, flat } = scorerFigures(
      'label',
      pairs.map(([target, value]) => ({ value, target })),
      { ...NO_CI, positive: ['helpful'], labelOrder: ['helpful', 'partly', 'unhelpful'] },
    );
    expect(summary.metrics.binaryF1!.value).toBeCloseTo(17 / 24, 12);
    expect(summary.metrics.positiveF1).toMatchObject({ n: 7, name: 'F1 of helpful' });
    expect(summary.metrics.positiveF1!.value).toBeCloseTo(2 / 3, 12);
    // A bootstrap figure on 7 items: no interval, and it says why.
    expect(summary.metrics.positiveF1!.ci).toBeUndefined();
    expect(summary.metrics.positiveF1!.reason).toBe(
      `too few items for an interval (n 7 < ${MIN_ITEMS_FOR_INTERVAL.positiveF1!})`,
    );
    const times = (k: number) => Array.from({ length: Math.ceil(k / pairs.length) }, () => pairs).flat();
    const thrice = scorerFigures(
      'label',
      times(MIN_ITEMS_FOR_INTERVAL.positiveF1!).map(([target, value]) => ({ value, target })),
      { ...NO_CI, positive: ['helpful'], labelOrder: ['helpful', 'partly', 'unhelpful'] },
    );
    expect(thrice.summary.metrics.positiveF1!.ci).toHaveLength(2);
    expect(thrice.summary.metrics.positiveF1!.reason).toBeUndefined();
    expect(summary.metrics.weightedKappa).toBeUndefined(); // not declared a scale
    expect(flat.binary).toMatchObject({ positive: { label: 'helpful', support: 3 } });
  });

  it('on an ordinal scale, the quadratic weighted kappa with a CI (the by-hand example: 4/7)', () => {
    // bad>bad, bad>ok, ok>ok, ok>good, good>good, good>ok: see classification.test.ts.
    const pairs = [
      ['bad', 'bad'],
      ['bad', 'ok'],
      ['ok', 'ok'],
      ['ok', 'good'],
      ['good', 'good'],
      ['good', 'ok'],
    ];
    const { summary, flat } = scorerFigures(
      'label',
      pairs.map(([target, value]) => ({ value, target })),
      { ...NO_CI, labelOrder: ['bad', 'ok', 'good'], ordinal: true },
    );
    expect(summary.metrics.weightedKappa!.value).toBeCloseTo(4 / 7, 12);
    expect(summary.metrics.weightedKappa!.ci).toBeUndefined(); // 6 items: too few
    expect(flat.weightedKappa).toBeCloseTo(4 / 7, 12);
    const many = scorerFigures(
      'label',
      Array.from({ length: Math.ceil(MIN_ITEMS_FOR_INTERVAL.weightedKappa! / pairs.length) }, () => pairs)
        .flat()
        .map(([target, value]) => ({ value, target })),
      { ...NO_CI, labelOrder: ['bad', 'ok', 'good'], ordinal: true },
    );
    expect(many.summary.metrics.weightedKappa!.ci).toHaveLength(2);
    const failed = scorerFigures('label', [{ unscored: 'parse', target: 'ok' }], {
      labelOrder: ['bad', 'ok', 'good'],
      ordinal: true,
    });
    expect(failed.summary.metrics.weightedKappa).toEqual({ value: null, n: 0 });
  });
});

describe('number scores', () => {
  it('against a numeric gold: mean, MAE, Pearson, Spearman and Kendall, computed by hand', () => {
    // values 1 3 3 5, gold 2 3 4 5.
    // mean 12/4 = 3. MAE (1 + 0 + 1 + 0)/4 = 0.5.
    // Pearson: dx = −2 0 0 2, dy = −1.5 −0.5 0.5 1.5: Σdxdy 6, Σdx² 8, Σdy² 5 → 6/√40 = 0.948683.
    // Spearman: ranks 1 2.5 2.5 4 vs 1 2 3 4: Σ 4.5, 4.5, 5 → 4.5/√22.5 = 0.948683.
    // Kendall τ-b: of the 6 pairs, 5 concordant, none discordant, one tied on the values (3, 3):
    // 5 / √((6 − 1)(6 − 0)) = 5/√30.
    const values = [1, 3, 3, 5];
    const gold = [2, 3, 4, 5];
    const { summary, flat } = scorerFigures(
      'number',
      values.map((value, i) => ({ value, target: gold[i] })),
      NO_CI,
    );
    expect(summary.metrics.mean).toMatchObject({ value: 3, n: 4 });
    expect(summary.metrics.mae).toMatchObject({ value: 0.5, n: 4 });
    expect(summary.metrics.pearson!.value).toBeCloseTo(6 / Math.sqrt(40), 12);
    expect(summary.metrics.spearman!.value).toBeCloseTo(4.5 / Math.sqrt(22.5), 12);
    expect(summary.metrics.kendallTau!.value).toBeCloseTo(5 / Math.sqrt(30), 12);
    expect(summary.metrics.rocAuc).toBeUndefined();
    expect(flat).toMatchObject({ n: 4, mean: 3, mae: 0.5 });
    // Four items are too few for a bootstrap interval: none, each saying why.
    expect(flat.ci).toBeUndefined();
    expect(summary.metrics.mean!.reason).toBe(
      `too few items for an interval (n 4 < ${MIN_ITEMS_FOR_INTERVAL.mean!})`,
    );
    const many = scorerFigures(
      'number',
      Array.from({ length: Math.ceil(MIN_ITEMS_FOR_INTERVAL.mean! / 4) }, () =>
        values.map((value, i) => ({ value, target: gold[i] })),
      ).flat(),
      NO_CI,
    );
    expect(Object.keys(many.flat.ci as object)).toEqual(['mean', 'mae', 'pearson', 'spearman', 'kendallTau']);
    expect(many.summary.metrics.mean!.ci![0]).toBeLessThanOrEqual(3);
  });

  it('on an integer scale, the quadratic weighted kappa: the same 4/7 as the labels by hand', () => {
    // bad/ok/good as 1/2/3: gold 1 1 2 2 3 3, scores 1 2 2 3 3 2.
    //   squared misses Σ (x − y)² = 0 + 1 + 0 + 1 + 0 + 1 = 3
    //   scores: x̄ = 13/6, Σ (x − x̄)² = (7/6)² + 3·(1/6)² + 2·(5/6)² = 102/36 = 17/6
    //   gold:   ȳ = 2,    Σ (y − ȳ)² = 1 + 1 + 0 + 0 + 1 + 1 = 4;  n·(x̄ − ȳ)² = 6 · (1/6)² = 1/6
    //   expected (Σ_{i,j} (x_i − y_j)² / n) = 17/6 + 4 + 1/6 = 7 → κw = 1 − 3/7 = 4/7
    const values = [1, 2, 2, 3, 3, 2];
    const gold = [1, 1, 2, 2, 3, 3];
    const rows = values.map((value, i) => ({ value, target: gold[i] }));
    const { summary } = scorerFigures('number', rows, { ...NO_CI, ordinal: true });
    expect(summary.metrics.weightedKappa!.value).toBeCloseTo(4 / 7, 12);
    expect(summary.metrics.weightedKappa!.ci).toBeUndefined(); // 6 items: too few
    const many = scorerFigures(
      'number',
      Array.from({ length: Math.ceil(MIN_ITEMS_FOR_INTERVAL.weightedKappa! / 6) }, () => rows).flat(),
      { ...NO_CI, ordinal: true },
    );
    expect(many.summary.metrics.weightedKappa!.ci).toHaveLength(2);
    expect(scorerFigures('number', rows, NO_CI).summary.metrics.weightedKappa).toBeUndefined();
  });

  it('against a binary human label: ROC-AUC and balanced accuracy at the threshold, by hand', () => {
    // scores 0.9 0.7 0.6 0.4, labels 1 0 1 0. Positive > negative pairs: (0.9, 0.7) (0.9, 0.4)
    // (0.6, 0.4) of 4 → AUC 0.75. At 0.5: predicted 1 1 1 0 → recall 1 (positives), 1/2
    // (negatives) → balanced accuracy 0.75.
    const rows = [0.9, 0.7, 0.6, 0.4].map((value, i) => ({ value, target: [1, 0, 1, 0][i] }));
    const { summary } = scorerFigures('number', rows, { ...NO_CI, threshold: 0.5 });
    expect(summary.metrics.rocAuc).toMatchObject({ value: 0.75, n: 4 });
    expect(summary.metrics.balancedAccuracy).toMatchObject({ value: 0.75, n: 4 });
    expect(summary.metrics.mae).toBeUndefined();
  });

  it('compares only the items with gold, whichever item comes first', () => {
    // The first gold target comes third: MAE over (3, 2) and (5, 5) = (1 + 0)/2; the mean over all four.
    const rows: ScoreRow[] = [
      { value: 1 },
      { unscored: 'parse', target: 9 },
      { value: 3, target: 2 },
      { value: 7 },
    ];
    rows.push({ value: 5, target: 5 });
    const { summary } = scorerFigures('number', rows, NO_CI);
    expect(summary.metrics.mean).toMatchObject({ value: 4, n: 4 });
    expect(summary.metrics.mae).toMatchObject({ value: 0.5, n: 2 });
    const passes = scorerFigures(
      'pass',
      [{ value: true }, { value: false, target: false }, { value: true, target: false }],
      NO_CI,
    ).summary;
    expect(passes.metrics.passRate!.value).toBeCloseTo(2 / 3, 12);
    expect(passes.metrics.accuracy).toMatchObject({ value: 0.5, n: 2 });
  });

  it('with no scored item: the mean is n/a (null), not 0', () => {
    const { summary, flat } = scorerFigures('number', [{ unscored: 'provider' }, { unscored: 'parse' }]);
    expect(summary.metrics.mean).toEqual({ value: null, n: 0 });
    expect(summary.unscored).toEqual({ provider: 1, parse: 1 });
    expect(flat).toEqual({ n: 0, mean: null });
  });
});

describe('pass scores', () => {
  it('the pass rate, and against a pass/fail gold accuracy and balanced accuracy, by hand', () => {
    // pass T T F T, gold T F F T: rate 3/4; agree on 3 of 4; recall of T (items 1, 4) 2/2,
    // of F (items 2, 3) 1/2 → balanced 0.75.
    const rows = [true, true, false, true].map((value, i) => ({
      value,
      target: [true, false, false, true][i],
    }));
    const { summary } = scorerFigures('pass', rows, NO_CI);
    expect(summary.metrics.passRate).toMatchObject({ value: 0.75, n: 4 });
    expect(summary.metrics.accuracy).toMatchObject({ value: 0.75, n: 4 });
    expect(summary.metrics.balancedAccuracy).toMatchObject({ value: 0.75, n: 4 });
  });
});

describe('verdictOf (errors.txt vs correct.txt)', () => {
  it('a label is right when it equals gold; a number when it equals gold or sits on its side of the threshold', () => {
    expect(verdictOf('label', 'TP', 'TP')).toBe(true);
    expect(verdictOf('label', 'TP', undefined)).toBeUndefined();
    expect(verdictOf('number', 4, 4)).toBe(true);
    expect(verdictOf('number', 0.7, 0, { threshold: 0.5 }, true)).toBe(false);
    expect(verdictOf('number', 0.7, 1, { threshold: 0.5 }, true)).toBe(true);
    // A rating of 1 on a 1–5 scale is not a binary "yes": 4 is not right against it.
    expect(verdictOf('number', 4, 1, { threshold: 4 }, false)).toBe(false);
    expect(verdictOf('number', 3, undefined)).toBeUndefined();
    expect(verdictOf('pass', true, undefined)).toBe(true);
    expect(verdictOf('pass', true, false)).toBe(false);
  });
});
