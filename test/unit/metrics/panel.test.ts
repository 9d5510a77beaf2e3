/**
 * A panel of judges against gold: agreement and error correlation per pair, each judge's
 * accuracy, the majority against the best judge, and the effective number of judges, by hand.
 */
import { describe, expect, it } from 'vitest';
import { pearson } from '../../../shared/lib/metrics/agreement.js';
import { effectiveNumber, type PanelItem, panelAgreement, phi } from '../../../shared/lib/metrics/panel.js';

const _ = undefined;

/**
 * Three judges, six items, three labels (a blank is `_`). The error columns are 1 where the
 * judge differs from gold:
 *
 *   item gold   A  B  C    err A  B  C
 *   1    a      b  b  c        1  1  1
 *   2    b      b  a  b        0  1  0
 *   3    a      a  a  b        0  0  1
 *   4    c      a  c  c        1  0  0
 *   5    b      b  b  b        0  0  0
 *   6    a      a  _  c        0  _  1
 */
const ITEMS: PanelItem[] = [
  { gold: 'a', labels: { A: 'b', B: 'b', C: 'c' } },
  { gold: 'b', labels: { A: 'b', B: 'a', C: 'b' } },
  { gold: 'a', labels: { A: 'a', B: 'a', C: 'b' } },
  { gold: 'c', labels: { A: 'a', B: 'c', C: 'c' } },
  { gold: 'b', labels: { A: 'b', B: 'b', C: 'b' } },
  { gold: 'a', labels: { A: 'a', B: _, C: 'c' } },
];

describe('a panel of three judges, by hand', () => {
  const panel = panelAgreement(ITEMS);
  const pair = (a: string, b: string) => panel.pairs.find((p) => p.judges[0] === a && p.judges[1] === b)!;

  it("gives each judge's accuracy over the items it labelled", () => {
    expect(panel.judges).toEqual(['A', 'B', 'C']);
    expect(panel.items).toBe(6);
    // A wrong on 1 and 4: 4/6. B labelled 1–5, wrong on 1 and 2: 3/5. C wrong on 1, 3 and 6: 3/6.
    expect(panel.accuracy.A).toMatchObject({ value: 4 / 6, n: 6 });
    expect(panel.accuracy.B).toMatchObject({ value: 3 / 5, n: 5 });
    expect(panel.accuracy.C).toMatchObject({ value: 3 / 6, n: 6 });
  });

  it('gives each pair its agreement over the items both labelled', () => {
    // A–B on 1–5: same on 1 (b b), 3 (a a), 5 (b b): 3/5.
    expect(pair('A', 'B').agreement).toMatchObject({ value: 3 / 5, n: 5 });
    // A–C on 1–6: same on 2 (b b) and 5 (b b): 2/6. Item 1 is wrong for both but b ≠ c.
    expect(pair('A', 'C').agreement).toMatchObject({ value: 2 / 6, n: 6 });
    // B–C on 1–5: same on 4 (c c) and 5 (b b): 2/5.
    expect(pair('B', 'C').agreement).toMatchObject({ value: 2 / 5, n: 5 });
  });

  it('gives each pair the correlation of its error indicators', () => {
    // phi = (m·n11 − a·b) / √(a(m − a)·b(m − b)), a and b the errors of each, n11 the shared ones.
    // A–B on 1–5: errors A 1 0 0 1 0, B 1 1 0 0 0: m 5, a 2, b 2, n11 1 (item 1):
    //   (5 − 4) / √(2·3·2·3) = 1/6.
    expect(pair('A', 'B').errorCorrelation.value).toBeCloseTo(1 / 6, 12);
    // A–C on 1–6: A 1 0 0 1 0 0, C 1 0 1 0 0 1: m 6, a 2, c 3, n11 1: (6 − 6) / √(2·4·3·3) = 0.
    expect(pair('A', 'C').errorCorrelation.value).toBeCloseTo(0, 12);
    // B–C on 1–5: B 1 1 0 0 0, C 1 0 1 0 0: m 5, 2, 2, n11 1: (5 − 4) / √36 = 1/6.
    expect(pair('B', 'C').errorCorrelation.value).toBeCloseTo(1 / 6, 12);
    // The same as Pearson's r of the indicator columns.
    expect(pearson([1, 0, 0, 1, 0], [1, 1, 0, 0, 0])).toBeCloseTo(1 / 6, 12);
    expect(pair('A', 'B').errorCorrelation.n).toBe(5);
  });

  it('counts the effective number of judges with the design effect', () => {
    // ρ̄ = (1/6 + 0 + 1/6) / 3 = 1/9; n_eff = 3 / (1 + 2·1/9) = 27/11.
    expect(panel.effectiveJudges.meanErrorCorrelation).toBeCloseTo(1 / 9, 12);
    expect(panel.effectiveJudges.value).toBeCloseTo(27 / 11, 12);
    expect(panel.effectiveJudges).toMatchObject({ k: 3, pairs: 3, n: 6 });
  });

  it("breaks a tie with the most accurate judge's label and compares the majority with the best judge", () => {
    // Majority: item 1 b (A, B) against c → wrong; 2 b, 3 a, 4 c, 5 b right; item 6 is a tie
    // (A a, C c) settled by A, the more accurate (4/6 against 3/6) → a, right. 5/6.
    expect(panel.majority).toMatchObject({ value: 5 / 6, n: 6 });
    expect(panel.ties).toBe(1);
    expect(panel.tiesPolicy).toBe('best-judge');
    // The best judge is A (4/6), on the 6 items it labelled: 5/6 − 4/6 = 1/6.
    const versus = panel.majorityVsBest!;
    expect(versus).toMatchObject({ bestJudge: 'A', n: 6 });
    expect(versus.best).toBeCloseTo(4 / 6, 12);
    expect(versus.majority).toBeCloseTo(5 / 6, 12);
    expect(versus.delta).toBeCloseTo(1 / 6, 12);
    // The majority is never worse than A on an item here (it differs only on item 4), so no
    // resample gives a negative delta.
    expect(versus.ci![0]).toBeGreaterThanOrEqual(0);
    expect(versus.ci![1]).toBeGreaterThan(versus.ci![0]);
    expect(versus.pValue).toBeGreaterThan(0);
  });

  it('counts a tie as wrong when asked', () => {
    const strict = panelAgreement(ITEMS, { ties: 'wrong' });
    expect(strict.majority.value).toBeCloseTo(4 / 6, 12);
    expect(strict.majorityVsBest!.delta).toBeCloseTo(0, 12);
    expect(strict.tiesPolicy).toBe('wrong');
  });

  it('gives 95% bootstrap intervals, the same for the same seed', () => {
    const ci = panel.accuracy.A!.ci!;
    expect(ci[0]).toBeLessThanOrEqual(4 / 6);
    expect(ci[1]).toBeGreaterThanOrEqual(4 / 6);
    expect(panel.effectiveJudges.ci![0]).toBeGreaterThanOrEqual(1);
    expect(panel.effectiveJudges.ci![1]).toBeLessThanOrEqual(3);
    expect(panelAgreement(ITEMS)).toEqual(panel);
    expect(panelAgreement(ITEMS, { bootstrap: { seed: 7 } }).accuracy.A!.ci).not.toEqual(ci);
    const bare = panelAgreement(ITEMS, { bootstrap: false });
    expect(bare.accuracy.A!.ci).toBeUndefined();
    expect(bare.majorityVsBest!.ci).toBeUndefined();
    expect(bare.accuracy.A!.value).toBe(4 / 6);
  });
});

describe('panel edge cases', () => {
  it('gives null, never 0, where there is nothing to compute', () => {
    const empty = panelAgreement([], { judges: ['A', 'B'] });
    expect(empty.accuracy.A).toEqual({ value: null, n: 0 });
    expect(empty.pairs[0]!.agreement).toEqual({ value: null, n: 0 });
    expect(empty.pairs[0]!.errorCorrelation).toEqual({ value: null, n: 0 });
    expect(empty.majority).toEqual({ value: null, n: 0 });
    expect(empty.majorityVsBest).toBeNull();
    expect(empty.effectiveJudges.value).toBeNull();
  });

  it('has no error correlation for a judge that is never wrong, and no n_eff without one', () => {
    const items: PanelItem[] = [
      { gold: true, labels: { A: true, B: true } },
      { gold: false, labels: { A: false, B: true } },
      { gold: true, labels: { A: true, B: false } },
    ];
    const panel = panelAgreement(items);
    expect(panel.pairs[0]!.errorCorrelation).toMatchObject({ value: null, n: 3 });
    expect(panel.pairs[0]!.agreement.value).toBeCloseTo(1 / 3, 12);
    expect(panel.effectiveJudges).toMatchObject({ value: null, k: 2, pairs: 0, meanErrorCorrelation: null });
    // Two judges: every disagreement is a tie, settled by A (3/3): the majority is A.
    expect(panel.majority.value).toBe(1);
    expect(panel.majorityVsBest!.delta).toBe(0);
  });

  it('leaves one judge without pairs or n_eff', () => {
    const panel = panelAgreement([{ gold: 1, labels: { A: 1 } }]);
    expect(panel.pairs).toEqual([]);
    expect(panel.effectiveJudges.value).toBeNull();
    expect(panel.majority.value).toBe(1);
  });

  it('counts a judge that labelled nothing out of k', () => {
    const items: PanelItem[] = [
      { gold: 'x', labels: { A: 'x', B: 'y', C: null } },
      { gold: 'y', labels: { A: 'x', B: 'y' } },
      { gold: 'x', labels: { A: 'x', B: 'x' } },
    ];
    const panel = panelAgreement(items, { judges: ['A', 'B', 'C'] });
    expect(panel.accuracy.C).toEqual({ value: null, n: 0 });
    // A errs on item 2, B on item 1: phi = (3·0 − 1·1) / √(1·2·1·2) = −1/2; k 2 → 2 / (1 − 1/2) = 4, clipped to 2.
    expect(panel.effectiveJudges).toMatchObject({ k: 2, pairs: 1, meanErrorCorrelation: -0.5, value: 2 });
  });

  it('refuses a label from an unknown judge, a missing gold and a judge named twice', () => {
    expect(() => panelAgreement([{ gold: 'a', labels: { Z: 'a' } }], { judges: ['A'] })).toThrow(
      /label from "Z"/,
    );
    expect(() => panelAgreement([{ gold: undefined as unknown as string, labels: {} }])).toThrow(
      /item 0 has no usable gold/,
    );
    expect(() => panelAgreement([], { judges: ['A', 'A'] })).toThrow(/named twice/);
  });
});

describe('effectiveNumber and phi', () => {
  it('follows k / (1 + (k − 1)ρ̄), clipped to [1, k]', () => {
    expect(effectiveNumber(4, 0)).toBe(4);
    expect(effectiveNumber(4, 1)).toBe(1);
    expect(effectiveNumber(4, 0.5)).toBeCloseTo(4 / 2.5, 12);
    expect(effectiveNumber(3, -0.2)).toBe(3);
    expect(effectiveNumber(3, -0.9)).toBe(3);
    expect(effectiveNumber(1, 0.3)).toBeNull();
    expect(effectiveNumber(3, null)).toBeNull();
  });

  it('is Pearson r of two indicators, null when one is constant', () => {
    expect(phi(6, 2, 3, 1)).toBeCloseTo(pearson([1, 0, 0, 1, 0, 0], [1, 0, 1, 0, 0, 1])!, 12);
    expect(phi(4, 2, 2, 2)).toBe(1);
    expect(phi(4, 2, 2, 0)).toBe(-1);
    expect(phi(4, 0, 2, 0)).toBeNull();
    expect(phi(4, 4, 2, 2)).toBeNull();
  });
});
