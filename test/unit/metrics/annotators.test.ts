/**
 * The human ceiling: alpha among several annotators, their pairwise agreement, and the judge's
 * agreement with them, by hand, against Krippendorff's published example, in its null cases,
 * and merged from parts (each saved and loaded back) as one pass gives it.
 */
import { deserialize, serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { ceilingSentence } from '../../../shared/lib/format.js';
import {
  AnnotationRows,
  type AnnotationRowsState,
  humanAgreement,
  mulberry32,
} from '../../../shared/lib/metrics/index.js';
import type { ScoreValue } from '../../../shared/model/model.js';
import type { HumanAgreement, ScorerSummary } from '../../../shared/model/report.js';
import { humanAgreementLines, renderScorer } from '../../../shared/reports/files.js';

const _ = undefined;

/**
 * Five items, three annotators (a blank is `_`), and the judge's label:
 *
 *   item  w1 w2 w3  judge
 *   1     a  a  a   a
 *   2     a  a  b   a
 *   3     b  b  b   b
 *   4     a  b  _   b
 *   5     b  b  a   a
 */
const LABELS: (string | undefined)[][] = [
  ['a', 'a', 'a'],
  ['a', 'a', 'b'],
  ['b', 'b', 'b'],
  ['a', 'b', _],
  ['b', 'b', 'a'],
];
const JUDGE = ['a', 'a', 'b', 'b', 'a'];

describe('the human ceiling, by hand', () => {
  it('alpha, pairwise agreement and judge agreement of five items and three annotators', () => {
    const h = humanAgreement('label', LABELS, JUDGE);
    // Alpha by the coincidence matrix. Each item's ordered pairs of values count 1 / (m − 1):
    //   item 1 (a a a, m 3): a–a 6 pairs / 2          → o_aa += 3
    //   item 2 (a a b, m 3): a–a 2 / 2; a–b, b–a 2 / 2 → o_aa += 1, o_ab += 1, o_ba += 1
    //   item 3 (b b b, m 3):                          → o_bb += 3
    //   item 4 (a b,   m 2): a–b, b–a 1 / 1           → o_ab += 1, o_ba += 1
    //   item 5 (b b a, m 3): b–b 2 / 2; a–b, b–a 2 / 2 → o_bb += 1, o_ab += 1, o_ba += 1
    // o_aa 4, o_bb 4, o_ab = o_ba 3; n_a = 7, n_b = 7, n = 14.
    // α = 1 − (n − 1) · (o_ab + o_ba) / (n_a·n_b + n_b·n_a) = 1 − 13 · 6 / 98 = 20 / 98 = 10 / 49.
    expect(h.alpha.value).toBeCloseTo(10 / 49, 12);
    expect(h.alpha.n).toBe(5);
    // Pairwise: item 1 3/3 agree, item 2 1/3, item 3 3/3, item 4 0/1, item 5 1/3;
    // (1 + 1/3 + 1 + 0 + 1/3) / 5 = 8/15.
    expect(h.pairwiseAgreement.value).toBeCloseTo(8 / 15, 12);
    expect(h.pairwiseAgreement.n).toBe(5);
    // Judge: w1 agrees on items 1, 2, 3 of 5 (3/5); w2 on 1, 2, 3, 4 of 5 (4/5); w3 on 1, 3, 5 of
    // the 4 it labelled (3/4); the mean (0.6 + 0.8 + 0.75) / 3 = 2.15 / 3.
    expect(h.judgeAgreement.value).toBeCloseTo(2.15 / 3, 12);
    expect(h.judgeAgreement.n).toBe(5);
    expect(h).toMatchObject({ annotators: 3, items: 5, level: 'nominal' });
    // The judge's alpha against them: 7/16 by hand in human-ceiling.test.ts.
    expect(h.judgeAlpha!.value).toBeCloseTo(7 / 16, 12);
    expect(h.judgeAlpha!.n).toBe(5);
    expect(Object.keys(h)).toEqual([
      'annotators',
      'items',
      'alpha',
      'pairwiseAgreement',
      'judgeAgreement',
      'judgeAlpha',
      'level',
      'judgeVerdict',
    ]);
    expect(h.judgeVerdict).toBe('value');
    // Intervals: a seeded bootstrap over the items, the same every time, around each value;
    // alpha's only from 200 items on (its coverage below is poor): on 5, none, and why.
    for (const m of [h.alpha, h.judgeAlpha!]) {
      expect(m.ci).toBeUndefined();
      expect(m.reason).toBe('too few items for an interval (n 5 < 200)');
    }
    for (const m of [h.pairwiseAgreement, h.judgeAgreement]) {
      expect(m.ci).toBeDefined();
      expect(m.ci![0]).toBeLessThanOrEqual(m.value!);
      expect(m.ci![1]).toBeGreaterThanOrEqual(m.value!);
    }
    expect(humanAgreement('label', LABELS, JUDGE)).toEqual(h);
  });

  it('the tally gives the same figures from its columns', () => {
    const rows = new AnnotationRows('label');
    LABELS.forEach((labels, i) => {
      rows.add(labels, JUDGE[i]);
    });
    expect(rows.figures()).toEqual(humanAgreement('label', LABELS, JUDGE));
  });

  it('report.txt prints the block and compares the two alphas (judge–annotator, annotator–annotator)', () => {
    const h = humanAgreement('label', LABELS, JUDGE);
    const lines = humanAgreementLines(h, '    ');
    expect(lines[0]).toMatch(
      /^ {4}human agreement \(3 annotators, 5 items\): Krippendorff's alpha 0\.204 \(too few items for an interval \(n 5 < 200\)\) \(nominal, n 5\) {2}pairwise agreement 0\.533 \[.*\] \(n 5\) {2}judge agreement 0\.717 \[.*\] \(n 5\) {2}judge alpha 0\.438 \(too few items for an interval \(n 5 < 200\)\) \(n 5\)$/,
    );
    expect(lines[1]).toBe(
      "    the judge agrees with the annotators more than they agree with each other (Krippendorff's alpha 0.438 vs 0.204)",
    );
    expect(ceilingSentence(0.61, 0.74)).toBe(
      'the judge agrees with the annotators less than they agree with each other (0.610 vs 0.740)',
    );
    expect(ceilingSentence(0.74, 0.74)).toBe(
      'the judge agrees with the annotators as much as they agree with each other (0.740 vs 0.740)',
    );
    expect(ceilingSentence(null, 0.74)).toMatch(/cannot be compared \(n\/a vs 0\.740\)/);
    const summary: ScorerSummary = { kind: 'label', n: 5, unscored: {}, metrics: {}, humanAgreement: h };
    expect(renderScorer('label', summary, true)).toEqual(expect.arrayContaining(lines));
  });
});

// Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011): four observers, twelve
// units, missing values (the data the repeats' alpha is pinned on too). Each unit is an item,
// each observer an annotator.
const OBSERVERS: (number | undefined)[][] = [
  [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
  [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
  [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
  [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
];
const UNITS = OBSERVERS[0]!.map((_v, u) => OBSERVERS.map((row) => row[u]));

describe('against the published example', () => {
  it('gives the textbook nominal alpha (0.743) for labels, the interval one (0.849) for numbers', () => {
    const labels = UNITS.map((unit) => unit.map((v) => (v === undefined ? v : String(v))));
    const nominal = humanAgreement('label', labels, [], { bootstrap: false });
    expect(nominal.alpha.value).toBeCloseTo(0.743, 3);
    expect(nominal.level).toBe('nominal');
    // Unit 12 has one value: it is an item, not a pairable one.
    expect(nominal).toMatchObject({ annotators: 4, items: 12, alpha: { n: 11 } });
    const interval = humanAgreement('number', UNITS, [], { bootstrap: false });
    expect(interval.level).toBe('interval');
    expect(interval.alpha.value).toBeCloseTo(0.849, 3);
    // An integer scale is ordinal, as across repeats (0.815 in the same paper).
    const ordinal = humanAgreement('number', UNITS, [], { bootstrap: false, ordinal: true });
    expect(ordinal.level).toBe('ordinal');
    expect(ordinal.alpha.value).toBeCloseTo(0.815, 3);
  });

  it('ordinal labels take the declared scale', () => {
    const scale = ['bad', 'ok', 'good'];
    const h = humanAgreement(
      'label',
      [
        ['bad', 'ok'],
        ['good', 'good'],
        ['ok', 'good'],
      ],
      [],
      { ordinal: true, labelOrder: scale, bootstrap: false },
    );
    expect(h.level).toBe('ordinal');
    expect(h.alpha.value).not.toBeNull();
  });
});

describe('no data is null, never 0', () => {
  it('no annotated item: every figure null, no interval', () => {
    const h = humanAgreement('label', [[_, _, _], []], ['a', 'b']);
    expect(h).toEqual({
      annotators: 3,
      items: 0,
      alpha: { value: null, n: 0 },
      pairwiseAgreement: { value: null, n: 0 },
      judgeAgreement: { value: null, n: 0 },
      judgeAlpha: { value: null, n: 0 },
      level: 'nominal',
      judgeVerdict: 'value',
    });
  });

  it('items with one label each: no alpha, no pairwise agreement; the judge still compares', () => {
    const h = humanAgreement(
      'label',
      [
        ['a', _],
        [_, 'b'],
      ],
      ['a', 'a'],
    );
    expect(h.alpha).toEqual({ value: null, n: 0 });
    expect(h.pairwiseAgreement).toEqual({ value: null, n: 0 });
    // w1 1/1, w2 0/1.
    expect(h.judgeAgreement.value).toBe(0.5);
  });

  it('a judge that scored nothing has no agreement; labels that never vary have no alpha', () => {
    const h = humanAgreement(
      'pass',
      [
        [true, true],
        [true, true],
      ],
      [_, _],
    );
    expect(h.judgeAgreement).toEqual({ value: null, n: 0 });
    expect(h.alpha.value).toBeNull();
    expect(h.pairwiseAgreement.value).toBe(1);
  });

  it('the tally keeps nothing of an item no annotator labelled', () => {
    const rows = new AnnotationRows('label');
    rows.add([_, _], 'a');
    expect(rows.items).toBe(0);
    expect(rows.figures()).toMatchObject({ annotators: 2, items: 0, judgeAgreement: { value: null } });
  });
});

describe('merged from parts', () => {
  it('two parts, each saved and loaded back, merge to one pass: columns and figures', () => {
    const random = mulberry32(11);
    const pick = <T>(values: readonly T[]) => values[Math.floor(random() * values.length)]!;
    const items: { labels: (ScoreValue | undefined)[]; judge: ScoreValue | undefined }[] = [];
    for (let i = 0; i < 60; i += 1) {
      // Labels met late (`d` only in the second half) get new codes in the later part.
      const pool = i < 30 ? ['a', 'b', 'c', _] : ['d', 'a', _, 'c'];
      items.push({
        labels: Array.from({ length: 2 + Math.floor(random() * 2) }, () => pick(pool)),
        judge: pick([...pool, 'e']),
      });
    }
    const tallied = (slice: typeof items) => {
      const rows = new AnnotationRows('label');
      for (const item of slice) rows.add(item.labels, item.judge);
      return AnnotationRows.fromState(deserialize(serialize(rows.toState())) as AnnotationRowsState);
    };
    const whole = tallied(items);
    const expected: HumanAgreement = whole.figures();
    expect(expected.items).toBeGreaterThan(50);
    for (const cut of [0, 1, 17, 30, 45, 59, 60]) {
      const merged = tallied(items.slice(0, cut));
      merged.merge(tallied(items.slice(cut)));
      expect({ cut, state: merged.toState() }).toStrictEqual({ cut, state: whole.toState() });
      expect({ cut, figures: merged.figures() }).toStrictEqual({ cut, figures: expected });
    }
  });
});
