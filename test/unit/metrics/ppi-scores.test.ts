/**
 * A scorer's prediction-powered figures (`scores.<scorer>.ppi`) from its rows: the case worked
 * by hand in ppi.test.ts (gold on 4 items, the judge on 4 + 6) as a label, a number and a pass
 * scorer; present only when asked for and some item lacks gold.
 */
import { describe, expect, it } from 'vitest';
import { ppiMean } from '../../../shared/lib/metrics/ppi.js';
import { type ScoreRow, scorerFigures } from '../../../shared/lib/metrics/scores.js';

const gold = [1, 0, 1, 1];
const judge = [1, 0, 0, 1];
const unlabelled = [1, 1, 0, 1, 0, 1];
const Z95 = 1.959963984540054;

/** λ = 9/32, estimate 51/64, σ̂ = √609/128 (worked in ppi.test.ts). */
function expectHand(ppi: { estimate: number | null; ci: [number, number] | null; lambda: number | null }) {
  expect(ppi.lambda).toBeCloseTo(9 / 32, 14);
  expect(ppi.estimate).toBeCloseTo(51 / 64, 14);
  expect(ppi.ci![0]).toBeCloseTo(51 / 64 - (Z95 * Math.sqrt(609)) / 128, 13);
}

const rowsAs = (value: (x: number) => ScoreRow['value']): ScoreRow[] => [
  ...gold.map((g, i) => ({ value: value(judge[i]!), target: value(g) })),
  ...unlabelled.map((f) => ({ value: value(f) })),
];

describe('scorerFigures: ppi', () => {
  it('a label scorer: the share of its positive class, and of each label', () => {
    const rows = rowsAs((x) => (x === 1 ? 'yes' : 'no'));
    const { summary } = scorerFigures('label', rows, {
      ppi: true,
      positive: ['yes'],
      labelOrder: ['yes', 'no'],
    });
    const ppi = summary.ppi!;
    expect(ppi.quantity).toBe('share of yes');
    expectHand(ppi);
    expect(ppi).toMatchObject({ nLabelled: 4, nUnlabelled: 6, judgeOnly: { estimate: 0.6 } });
    expect(Object.keys(ppi.byLabel!)).toEqual(['yes', 'no']);
    expect(ppi.byLabel!.no!.estimate).toBeCloseTo(13 / 64, 14);
    // The agreement metrics are over the labelled items alone.
    expect(summary.metrics.accuracy).toMatchObject({ value: 0.75, n: 4 });
  });

  it('a label scorer without a positive class: the share of its first label', () => {
    const rows = rowsAs((x) => (x === 1 ? 'yes' : 'no'));
    const ppi = scorerFigures('label', rows, { ppi: true, labelOrder: ['no', 'yes'] }).summary.ppi!;
    expect(ppi.quantity).toBe('share of no');
    expect(ppi.estimate).toBeCloseTo(13 / 64, 14);
  });

  it('a class of several labels is one indicator', () => {
    // yes → "a" or "b" alternately: the class {a, b} is the hand case's "yes".
    let k = 0;
    const rows = rowsAs((x) => (x === 1 ? (k++ % 2 === 0 ? 'a' : 'b') : 'c'));
    const ppi = scorerFigures('label', rows, { ppi: true, positive: ['a', 'b'] }).summary.ppi!;
    expect(ppi.quantity).toBe('share of a/b');
    const indicator = rows.map((r) => (r.value === 'c' ? 0 : 1));
    const targets = rows.slice(0, 4).map((r) => (r.target === 'c' ? 0 : 1));
    const again = ppiMean({
      gold: targets,
      judge: indicator.slice(0, 4),
      judgeUnlabelled: indicator.slice(4),
    });
    expect(ppi.estimate).toBeCloseTo(again.estimate!, 14);
    expect(ppi.ci![1]).toBeCloseTo(again.ci![1], 14);
  });

  it('a number scorer: the mean of the gold; a pass scorer: the share passing', () => {
    const number = scorerFigures(
      'number',
      rowsAs((x) => x),
      { ppi: true, bootstrap: false },
    ).summary.ppi!;
    expect(number.quantity).toBe('mean');
    expectHand(number);
    const pass = scorerFigures(
      'pass',
      rowsAs((x) => x === 1),
      { ppi: true, bootstrap: false },
    ).summary.ppi!;
    expect(pass.quantity).toBe('share passing');
    expectHand(pass);
  });

  it("weighs a labelled item by its row's weight 1/p: the active estimator, the others certain", () => {
    // Weights 2, 1, 4 on the first three labelled items (chosen with p = 1/2, 1, 1/4), none on
    // the fourth (a label there before the draw: certain, weight 1).
    // M = 10, F̄ = 6/10. A = w(Y − F̄) = [0.8, −0.6, 1.6, 0.4] (0 unlabelled), mean 0.22;
    // B = (1 − w)(f − F̄) = [−0.4, 0, 1.8, 0] and f − F̄ on the six unlabelled (sum 0.4), mean 0.18.
    // Cov(A, B) = 2.56/10 − 0.22·0.18 = 0.2164 > 0, so λ = −Cov/Var(B) < 0 clips to 0:
    // estimate F̄ + mean(A) = 0.82, σ̂² = Var(A)/M = (3.72/10 − 0.22²)/10 = 0.03236.
    const weights = [2, 1, 4, 1];
    const rows = rowsAs((x) => x).map((r, i) => (i < 2 || i === 2 ? { ...r, weight: weights[i] } : r));
    const ppi = scorerFigures('number', rows, { ppi: true, bootstrap: false }).summary.ppi!;
    expect(ppi.estimator).toBe('active');
    expect(ppi.lambda).toBe(0);
    expect(ppi.estimate).toBeCloseTo(0.82, 14);
    expect(ppi.ci![1]).toBeCloseTo(0.82 + Z95 * Math.sqrt(0.03236), 13);
    // Classical: the Hájek mean Σ wY / Σ w = 7/8.
    expect(ppi.classical.estimate).toBeCloseTo(7 / 8, 14);
    expect(ppi.design).toEqual({ sample: 'non-random', chosen: 3, certain: 1 });
  });

  it('leaves out number items the judge did not score; counts label items it did not label as none', () => {
    const extra: ScoreRow[] = [
      { unscored: 'parse', target: 1 },
      { unscored: 'parse' },
      { unscored: 'invalid_row' },
    ];
    const number = scorerFigures('number', [...rowsAs((x) => x), ...extra], { ppi: true, bootstrap: false })
      .summary.ppi!;
    expectHand(number);
    const labelRows: ScoreRow[] = [
      ...rowsAs((x) => (x === 1 ? 'yes' : 'no')),
      { unscored: 'parse', target: 'yes' },
      { unscored: 'parse' },
      { unscored: 'invalid_row', target: 'no' },
    ];
    const label = scorerFigures('label', labelRows, { ppi: true, positive: ['yes'] }).summary.ppi!;
    expect(label).toMatchObject({ nLabelled: 5, nUnlabelled: 7 });
    expect(label.classical.estimate).toBeCloseTo(4 / 5, 14);
    expect(label.judgeOnly.estimate).toBeCloseTo(6 / 12, 14);
  });

  it('is absent unless asked for, and when every item has gold', () => {
    expect(
      scorerFigures(
        'label',
        rowsAs((x) => String(x)),
        {},
      ).summary.ppi,
    ).toBeUndefined();
    const labelled = gold.map((g, i) => ({ value: judge[i], target: g }));
    expect(scorerFigures('number', labelled, { ppi: true, bootstrap: false }).summary.ppi).toBeUndefined();
  });
});
