/**
 * The PPI figures from sums (what a run's tally keeps) against the figures from the rows
 * themselves, the merge of two parts' sums against one pass, and the share of a label worked
 * by hand.
 */
import { describe, expect, it } from 'vitest';
import {
  PpiLabelShares,
  type PpiMeanResult,
  PpiSums,
  ppiMean,
  ppiMeanOfSums,
} from '../../../shared/lib/metrics/ppi.js';
import { mulberry32 } from '../../../shared/lib/metrics/stats.js';

const Z95 = 1.959963984540054;

function sumsOf(
  gold: readonly number[],
  judge: readonly number[],
  judgeUnlabelled: readonly number[],
  weights?: readonly number[],
  weightsUnlabelled?: readonly number[],
): PpiSums {
  const sums = new PpiSums();
  gold.forEach((y, i) => {
    sums.addLabelled(y, judge[i]!, weights?.[i] ?? 1);
  });
  judgeUnlabelled.forEach((f, j) => {
    sums.addUnlabelled(f, weightsUnlabelled?.[j] ?? 1);
  });
  return sums;
}

function expectSame(a: PpiMeanResult, b: PpiMeanResult, digits = 12): void {
  const close = (x: number | null, y: number | null) => {
    if (x === null || y === null) expect(x).toBe(y);
    else expect(x).toBeCloseTo(y, digits);
  };
  close(a.estimate, b.estimate);
  close(a.lambda, b.lambda);
  close(a.ci?.[0] ?? null, b.ci?.[0] ?? null);
  close(a.ci?.[1] ?? null, b.ci?.[1] ?? null);
  close(a.classical.estimate, b.classical.estimate);
  close(a.classical.ci?.[0] ?? null, b.classical.ci?.[0] ?? null);
  close(a.classical.ci?.[1] ?? null, b.classical.ci?.[1] ?? null);
  close(a.judgeOnly.estimate, b.judgeOnly.estimate);
  if (a.effectiveLabels === null || b.effectiveLabels === null)
    expect(a.effectiveLabels).toBe(b.effectiveLabels);
  else expect(a.effectiveLabels / b.effectiveLabels).toBeCloseTo(1, 10);
  expect([a.nLabelled, a.nUnlabelled]).toEqual([b.nLabelled, b.nUnlabelled]);
}

const hand = { gold: [1, 0, 1, 1], judge: [1, 0, 0, 1], judgeUnlabelled: [1, 1, 0, 1, 0, 1] };

describe('ppiMeanOfSums: the same figures as ppiMean', () => {
  it('on the case worked by hand (λ = 9/32, estimate 51/64, σ̂ = √609/128)', () => {
    const r = ppiMeanOfSums(sumsOf(hand.gold, hand.judge, hand.judgeUnlabelled));
    expect(r.lambda).toBeCloseTo(9 / 32, 15);
    expect(r.estimate).toBeCloseTo(51 / 64, 15);
    expect(r.ci![1]).toBeCloseTo(51 / 64 + (Z95 * Math.sqrt(609)) / 128, 14);
    expect(r.effectiveLabels).toBeCloseTo(1024 / 203, 12);
    expect(r.judgeOnly.estimate).toBe(0.6);
    expectSame(r, ppiMean(hand));
  });

  it('at a fixed λ, with alpha', () => {
    for (const lambda of [0, 1, 2, 0.4])
      expectSame(
        ppiMeanOfSums(sumsOf(hand.gold, hand.judge, hand.judgeUnlabelled), { lambda, alpha: 0.1 }),
        ppiMean({ ...hand, lambda, alpha: 0.1 }),
      );
  });

  it('on random shares and scores, with and without weights', () => {
    const random = mulberry32(3);
    for (let t = 0; t < 40; t += 1) {
      const n = 2 + Math.floor(random() * 40);
      const N = Math.floor(random() * 200);
      const numeric = t % 2 === 1;
      const draw = () => (numeric ? 1 + Math.round(random() * 40) / 10 : random() < 0.6 ? 1 : 0);
      const gold = Array.from({ length: n }, draw);
      const judge = gold.map((y) => (random() < 0.8 ? y : draw()));
      const judgeUnlabelled = Array.from({ length: N }, draw);
      const weighted = t % 4 >= 2;
      const weights = weighted ? gold.map(() => 1 / (0.05 + random() * 0.95)) : undefined;
      const weightsUnlabelled = weighted ? judgeUnlabelled.map(() => 0.5 + random()) : undefined;
      expectSame(
        ppiMeanOfSums(sumsOf(gold, judge, judgeUnlabelled, weights, weightsUnlabelled)),
        ppiMean({ gold, judge, judgeUnlabelled, weights, weightsUnlabelled }),
        10,
      );
    }
  });

  it('gives λ = 0, as ppiMean does, for a judge that gives one value everywhere', () => {
    const args = { gold: [0.3, 0.9, 0.4], judge: [0.7, 0.7, 0.7], judgeUnlabelled: [0.7, 0.7] };
    const r = ppiMeanOfSums(sumsOf(args.gold, args.judge, args.judgeUnlabelled));
    expect(r.lambda).toBe(0);
    expectSame(r, ppiMean(args));
  });

  it('is null with fewer than 2 labels, and classical alone without unlabelled rows', () => {
    expect(ppiMeanOfSums(sumsOf([1], [1], [0, 1])).estimate).toBeNull();
    expect(ppiMeanOfSums(sumsOf([], [], [])).judgeOnly.estimate).toBeNull();
    expectSame(
      ppiMeanOfSums(sumsOf([1, 0, 1], [1, 1, 1], [])),
      ppiMean({ gold: [1, 0, 1], judge: [1, 1, 1], judgeUnlabelled: [] }),
    );
  });

  it('rejects a weight that is not a positive number', () => {
    expect(() => new PpiSums().addLabelled(1, 1, 0)).toThrow(/weight/);
    expect(() => new PpiSums().addUnlabelled(Number.NaN)).toThrow(/judge/);
  });
});

describe('PpiSums: parts merge to one pass', () => {
  it('at every cut, saved and loaded back, to the last bit on 0/1 values', () => {
    const random = mulberry32(5);
    const rows = Array.from({ length: 30 }, () => ({
      labelled: random() < 0.3,
      y: random() < 0.5 ? 1 : 0,
      f: random() < 0.5 ? 1 : 0,
    }));
    const tally = (part: typeof rows) => {
      const sums = new PpiSums();
      for (const r of part) {
        if (r.labelled) sums.addLabelled(r.y, r.f);
        else sums.addUnlabelled(r.f);
      }
      return sums;
    };
    const whole = ppiMeanOfSums(tally(rows));
    for (let cut = 0; cut <= rows.length; cut += 1) {
      const merged = PpiSums.fromState(structuredClone(tally(rows.slice(0, cut)).toState()));
      merged.merge(PpiSums.fromState(structuredClone(tally(rows.slice(cut)).toState())));
      expect(ppiMeanOfSums(merged)).toEqual(whole);
    }
  });

  it('within rounding on fractional values and weights', () => {
    const random = mulberry32(9);
    const rows = Array.from({ length: 60 }, (_, i) => ({
      i,
      y: random() * 5,
      f: random() * 5,
      w: 1 + random(),
    }));
    const tally = (part: typeof rows) => {
      const sums = new PpiSums();
      for (const r of part) {
        if (r.i % 4 === 0) sums.addLabelled(r.y, r.f, r.w);
        else sums.addUnlabelled(r.f);
      }
      return sums;
    };
    const merged = tally(rows.slice(0, 23));
    merged.merge(tally(rows.slice(23)));
    expectSame(ppiMeanOfSums(merged), ppiMeanOfSums(tally(rows)), 13);
  });
});

describe('PpiLabelShares: the share of each label', () => {
  // The case worked by hand with labels: gold yes/no on 4 rows, the judge on 4 + 6.
  const gold = ['yes', 'no', 'yes', 'yes'];
  const judge = ['yes', 'no', 'no', 'yes'];
  const unlabelled = ['yes', 'yes', 'no', 'yes', 'no', 'yes'];
  const shares = () => {
    const s = new PpiLabelShares();
    gold.forEach((g, i) => {
      s.addLabelled(g, judge[i]);
    });
    for (const f of unlabelled) s.addUnlabelled(f);
    return s;
  };

  it('gives the share of "yes" of the case worked by hand, and of "no" its complement', () => {
    const yes = shares().share(['yes']);
    expect(yes.lambda).toBeCloseTo(9 / 32, 15);
    expect(yes.estimate).toBeCloseTo(51 / 64, 15);
    // The indicator of "no" is 1 − that of "yes": the same covariance and variances, so the same
    // λ, the complementary estimate (1 − 51/64 = 13/64) and an interval of the same width.
    const no = shares().share(['no']);
    expect(no.lambda).toBeCloseTo(9 / 32, 15);
    expect(no.estimate).toBeCloseTo(13 / 64, 15);
    expect(no.ci![1] - no.ci![0]).toBeCloseTo(yes.ci![1] - yes.ci![0], 14);
    expect(no.classical.estimate).toBe(1 / 4);
    expect(no.judgeOnly.estimate).toBe(0.4);
    expect(shares().labelsMet()).toEqual(['no', 'yes']);
  });

  it('counts a row the judge gave no label as judged none of the labels', () => {
    const s = new PpiLabelShares();
    s.addLabelled('yes', undefined);
    s.addLabelled('no', 'no');
    s.addLabelled('yes', 'yes');
    s.addUnlabelled(undefined);
    s.addUnlabelled('maybe');
    const maybe = s.share(['maybe']);
    expect(maybe).toMatchObject({ nLabelled: 3, nUnlabelled: 2 });
    expect(maybe.classical.estimate).toBe(0);
    expect(maybe.judgeOnly.estimate).toBe(1 / 5);
    // "yes": gold 2 of 3, judge 1 of 5 rows.
    expect(s.share(['yes']).classical.estimate).toBeCloseTo(2 / 3, 15);
    expect(s.share(['yes']).judgeOnly.estimate).toBe(1 / 5);
    // A label never met has share 0 with no spread: its intervals collapse, no effective labels.
    expect(s.share(['unknown'])).toMatchObject({ estimate: 0, lambda: 0, effectiveLabels: null });
  });

  it('merges parts to one pass, labels first met in the later part included', () => {
    const whole = shares();
    for (let cut = 0; cut <= 10; cut += 1) {
      const first = new PpiLabelShares();
      const second = new PpiLabelShares();
      const all = [
        ...gold.map((g, i) => [g, judge[i]] as const),
        ...unlabelled.map((f) => [undefined, f] as const),
      ];
      all.forEach(([g, f], i) => {
        const part = i < cut ? first : second;
        if (g === undefined) part.addUnlabelled(f);
        else part.addLabelled(g, f);
      });
      const merged = PpiLabelShares.fromState(structuredClone(first.toState()));
      merged.merge(PpiLabelShares.fromState(structuredClone(second.toState())));
      for (const label of ['yes', 'no']) expect(merged.share([label])).toEqual(whole.share([label]));
    }
  });
});

describe('PpiLabelShares: a class of several labels', () => {
  it('equals ppiMean on the class indicator, with weights, rows the judge missed included', () => {
    const random = mulberry32(21);
    const labels = ['A', 'B', 'C', 'D'];
    const pick = () => labels[Math.floor(random() * labels.length)]!;
    const inClass = (label: string | undefined) => (label === 'A' || label === 'B' ? 1 : 0);
    for (let t = 0; t < 10; t += 1) {
      const s = new PpiLabelShares();
      const gold: number[] = [];
      const judge: number[] = [];
      const weights: number[] = [];
      const judgeUnlabelled: number[] = [];
      for (let i = 0; i < 30; i += 1) {
        const g = pick();
        const f = random() < 0.1 ? undefined : random() < 0.7 ? g : pick();
        const w = 1 / (0.1 + random() * 0.9);
        s.addLabelled(g, f, w);
        gold.push(inClass(g));
        judge.push(inClass(f));
        weights.push(w);
      }
      for (let j = 0; j < 80; j += 1) {
        const f = random() < 0.1 ? undefined : pick();
        s.addUnlabelled(f);
        judgeUnlabelled.push(inClass(f));
      }
      expectSame(s.share(['A', 'B']), ppiMean({ gold, judge, judgeUnlabelled, weights }), 11);
    }
  });
});
