/**
 * The active-inference estimate (labels chosen with known probabilities, a gold file's `p`):
 * a case worked by hand in fractions, the complement of a share, the sums against the rows,
 * parts merged, a mixed design, and the design-weighted share with its Wilson interval.
 */
import { describe, expect, it } from 'vitest';
import {
  activeMean,
  PpiLabelShares,
  type PpiMeanResult,
  PpiSums,
  ppiMeanOfSums,
  weightedShare,
} from '../../../shared/lib/metrics/ppi.js';
import { type ScoreRow, scorerFigures } from '../../../shared/lib/metrics/scores.js';
import { mulberry32 } from '../../../shared/lib/metrics/stats.js';

const Z95 = 1.959963984540054;

// Four labelled rows (two chosen with p = 1/2, two certain) and four without gold: M = 8.
const hand = {
  gold: [1, 0, 1, 0],
  judge: [1, 0, 1, 1],
  judgeUnlabelled: [1, 0, 0, 1],
  probabilities: [0.5, 0.5, 1, 1],
};

function expectSame(a: PpiMeanResult, b: PpiMeanResult, digits = 12): void {
  const close = (x: number | null | undefined, y: number | null | undefined) => {
    if (x === null || y === null || x === undefined || y === undefined) expect(x).toBe(y);
    else expect(x).toBeCloseTo(y, digits);
  };
  expect(a.estimator).toBe(b.estimator);
  close(a.estimate, b.estimate);
  close(a.lambda, b.lambda);
  close(a.ci?.[0], b.ci?.[0]);
  close(a.ci?.[1], b.ci?.[1]);
  close(a.classical.estimate, b.classical.estimate);
  close(a.classical.ci?.[0], b.classical.ci?.[0]);
  close(a.classical.ci?.[1], b.classical.ci?.[1]);
  close(a.judgeOnly.estimate, b.judgeOnly.estimate);
  expect([a.nLabelled, a.nUnlabelled]).toEqual([b.nLabelled, b.nUnlabelled]);
}

describe('activeMean: a case worked by hand', () => {
  it('centres at the judge mean, power-tunes λ and gives Var(Z)/M', () => {
    // F̄ = (3 + 2)/8 = 5/8; w = 1/p = [2, 2, 1, 1].
    // A = w(Y − F̄) = [3/4, −5/4, 3/8, −5/8, 0, 0, 0, 0], mean −3/32.
    // B = (1 − w)(f − F̄) = [−3/8, 5/8, 0, 0] and f − F̄ = [3/8, −5/8, −5/8, 3/8], mean −1/32.
    // Population moments over the 8 rows: Cov(A, B) = −139/1024, Var(B) = 203/1024,
    // Var(A) = 331/1024, so λ = 139/203 (inside [0, 1]).
    // estimate = F̄ + mean(A) + λ·mean(B) = 5/8 − 3/32 − (139/203)(1/32) = 207/406.
    // σ̂² = (Var(A) + 2λ·Cov + λ²·Var(B)) / 8 = 187/6496.
    const r = activeMean(hand);
    expect(r.estimator).toBe('active');
    expect(r.lambda).toBeCloseTo(139 / 203, 14);
    expect(r.estimate).toBeCloseTo(207 / 406, 14);
    expect(r.ci![0]).toBeCloseTo(207 / 406 - Z95 * Math.sqrt(187 / 6496), 14);
    expect(r.ci![1]).toBeCloseTo(207 / 406 + Z95 * Math.sqrt(187 / 6496), 14);
    // Classical, the Hájek mean: Σ wY / Σ w = 3/6 = 1/2; variance Σ w²(Y − 1/2)² / 6² =
    // (4 + 4 + 1 + 1)/4 / 36 = 5/72.
    expect(r.classical.estimate).toBeCloseTo(1 / 2, 15);
    expect(r.classical.ci![1]).toBeCloseTo(1 / 2 + Z95 * Math.sqrt(5 / 72), 14);
    expect(r.judgeOnly.estimate).toBe(5 / 8);
    expect(r).toMatchObject({ nLabelled: 4, nUnlabelled: 4 });
  });

  it('at λ = 1 and λ = 0', () => {
    // λ = 1: 5/8 − 3/32 − 1/32 = 1/2; (331 − 278 + 203)/1024/8 = 1/32.
    const one = activeMean({ ...hand, lambda: 1 });
    expect(one.estimate).toBeCloseTo(1 / 2, 15);
    expect(one.ci![1]).toBeCloseTo(1 / 2 + Z95 * Math.sqrt(1 / 32), 14);
    // λ = 0: F̄ + mean(A) = 17/32, σ̂² = (331/1024)/8.
    const zero = activeMean({ ...hand, lambda: 0 });
    expect(zero.estimate).toBeCloseTo(17 / 32, 15);
    expect(zero.ci![1]).toBeCloseTo(17 / 32 + Z95 * Math.sqrt(331 / 8192), 14);
  });

  it('gives the complement of a share the complementary estimate and an interval of the same width', () => {
    const flip = (v: readonly number[]) => v.map((x) => 1 - x);
    const r = activeMean(hand);
    const c = activeMean({
      ...hand,
      gold: flip(hand.gold),
      judge: flip(hand.judge),
      judgeUnlabelled: flip(hand.judgeUnlabelled),
    });
    // 1 − 207/406 = 199/406, the same λ and the same σ̂² = 187/6496.
    expect(c.estimate).toBeCloseTo(199 / 406, 14);
    expect(c.lambda).toBeCloseTo(r.lambda!, 14);
    expect(c.ci![1] - c.ci![0]).toBeCloseTo(r.ci![1] - r.ci![0], 14);
    expect(c.classical.estimate).toBeCloseTo(1 - r.classical.estimate!, 15);
    expect(c.classical.ci![1] - c.classical.ci![0]).toBeCloseTo(r.classical.ci![1] - r.classical.ci![0], 14);
  });

  it('estimates as Zrnic & Candès’s (1/M) Σ [λf + (Y − λf)ξ/π] when Σ 1/π over the labels is M', () => {
    // Equal probabilities 1/2 on 4 labels of 8 rows: Σ 1/π = 8 = M, so the centring cancels.
    const gold = [1, 0, 1, 1];
    const judge = [1, 0, 0, 1];
    const judgeUnlabelled = [1, 1, 0, 1];
    const lambda = 0.4;
    const r = activeMean({ gold, judge, judgeUnlabelled, probabilities: [0.5, 0.5, 0.5, 0.5], lambda });
    // Z on the labelled rows: λf + 2(Y − λf); on the others λf.
    const z = [
      ...gold.map((y, i) => lambda * judge[i]! + 2 * (y - lambda * judge[i]!)),
      ...judgeUnlabelled.map((f) => lambda * f),
    ];
    const mean = z.reduce((s, v) => s + v, 0) / 8;
    expect(r.estimate).toBeCloseTo(mean, 14);
    // Its variance is not the uncentred one: Z differs from it by (1 − λ)·F̄·(1 − ξ/π), which
    // varies from row to row.
    const variance = z.reduce((s, v) => s + (v - mean) ** 2, 0) / 8 / 8;
    expect(Math.abs(r.ci![1] - (mean + Z95 * Math.sqrt(variance)))).toBeGreaterThan(0.01);
  });

  it('gives λ = 0 for a judge with one value everywhere, and nulls with fewer than 2 labels', () => {
    const flat = activeMean({
      gold: [0.2, 0.9, 0.5],
      judge: [0.7, 0.7, 0.7],
      judgeUnlabelled: [0.7, 0.7],
      probabilities: [0.3, 0.6, 1],
    });
    expect(flat.lambda).toBe(0);
    const few = activeMean({ gold: [1], judge: [1], judgeUnlabelled: [0, 1], probabilities: [0.5] });
    expect(few).toMatchObject({ estimate: null, ci: null, lambda: null, estimator: 'active' });
    expect(() => activeMean({ ...hand, probabilities: [0.5, 0, 1, 1] })).toThrow(/probabilities\[1\]/);
    expect(() => activeMean({ ...hand, probabilities: [0.5] })).toThrow(/1 entries for 4/);
  });
});

function sumsOf(
  gold: readonly number[],
  judge: readonly number[],
  unlabelled: readonly number[],
  p: readonly number[],
): PpiSums {
  const sums = new PpiSums();
  gold.forEach((y, i) => {
    if (p[i] === 1) sums.addLabelled(y, judge[i]!);
    else sums.addChosen(y, judge[i]!, p[i]!);
  });
  for (const f of unlabelled) sums.addUnlabelled(f);
  return sums;
}

describe('PpiSums with chosen rows: the active estimator, mergeable', () => {
  it('equals activeMean on the case by hand and on random shares and scores', () => {
    expectSame(
      ppiMeanOfSums(sumsOf(hand.gold, hand.judge, hand.judgeUnlabelled, hand.probabilities)),
      activeMean(hand),
      14,
    );
    const random = mulberry32(17);
    for (let t = 0; t < 40; t += 1) {
      const n = 2 + Math.floor(random() * 40);
      const N = 1 + Math.floor(random() * 200);
      const numeric = t % 2 === 1;
      const draw = () => (numeric ? 1 + Math.round(random() * 40) / 10 : random() < 0.6 ? 1 : 0);
      const gold = Array.from({ length: n }, draw);
      const judge = gold.map((y) => (random() < 0.8 ? y : draw()));
      const judgeUnlabelled = Array.from({ length: N }, draw);
      // Some labels certain (p = 1), the rest chosen, at least one.
      const probabilities = gold.map((_, i) => (i > 0 && random() < 0.3 ? 1 : 0.02 + random() * 0.9));
      for (const lambda of [undefined, 0.5])
        expectSame(
          ppiMeanOfSums(sumsOf(gold, judge, judgeUnlabelled, probabilities), { lambda }),
          activeMean({ gold, judge, judgeUnlabelled, probabilities, lambda }),
          10,
        );
    }
  });

  it('merges parts, saved and loaded back, to one pass', () => {
    const random = mulberry32(23);
    const rows = Array.from({ length: 40 }, (_, i) => ({
      labelled: i % 3 === 0,
      p: random() < 0.5 ? 1 : 0.1 + random() * 0.8,
      y: random() < 0.5 ? 1 : 0,
      f: random() < 0.5 ? 1 : 0,
    }));
    const tally = (part: typeof rows) => {
      const sums = new PpiSums();
      for (const r of part) {
        if (!r.labelled) sums.addUnlabelled(r.f);
        else if (r.p === 1) sums.addLabelled(r.y, r.f);
        else sums.addChosen(r.y, r.f, r.p);
      }
      return sums;
    };
    const whole = ppiMeanOfSums(tally(rows));
    expect(whole.estimator).toBe('active');
    for (const cut of [0, 7, 20, 33, 40]) {
      const merged = PpiSums.fromState(structuredClone(tally(rows.slice(0, cut)).toState()));
      merged.merge(PpiSums.fromState(structuredClone(tally(rows.slice(cut)).toState())));
      expect(merged.nChosen).toBe(rows.filter((r) => r.labelled && r.p !== 1).length);
      expectSame(ppiMeanOfSums(merged), whole, 13);
    }
  });

  it('reads a state saved before the active sums existed as PPI++ sums', () => {
    const sums = sumsOf(hand.gold, hand.judge, hand.judgeUnlabelled, [1, 1, 1, 1]);
    const state = sums.toState();
    const old = { ...state, l: state.l.slice(0, 10), u: state.u.slice(0, 6) };
    expect(ppiMeanOfSums(PpiSums.fromState(old))).toEqual(ppiMeanOfSums(sums));
    expect(ppiMeanOfSums(sums).estimator).toBe('ppi++');
  });
});

describe('PpiLabelShares with chosen rows', () => {
  const gold = ['yes', 'no', 'yes', 'no'];
  const judge = ['yes', 'no', 'yes', 'yes'];
  const unlabelled = ['yes', 'no', 'no', 'yes'];
  const shares = () => {
    const s = new PpiLabelShares();
    gold.forEach((g, i) => {
      if (hand.probabilities[i] === 1) s.addLabelled(g, judge[i]);
      else s.addChosen(g, judge[i], hand.probabilities[i]!);
    });
    for (const f of unlabelled) s.addUnlabelled(f);
    return s;
  };

  it('gives the share of "yes" of the case by hand and of "no" its complement, equally wide', () => {
    const yes = shares().share(['yes']);
    expect(yes.estimate).toBeCloseTo(207 / 406, 14);
    const no = shares().share(['no']);
    expect(no.estimate).toBeCloseTo(199 / 406, 14);
    expect(no.ci![1] - no.ci![0]).toBeCloseTo(yes.ci![1] - yes.ci![0], 14);
  });

  it('merges parts (the chosen count too) and keeps them through its state', () => {
    const first = new PpiLabelShares();
    first.addChosen('yes', 'yes', 0.5);
    first.addChosen('no', 'no', 0.5);
    const second = new PpiLabelShares();
    second.addLabelled('yes', 'yes');
    second.addLabelled('no', 'yes');
    for (const f of unlabelled) second.addUnlabelled(f);
    const merged = PpiLabelShares.fromState(structuredClone(first.toState()));
    merged.merge(PpiLabelShares.fromState(structuredClone(second.toState())));
    expect(merged.nChosen).toBe(2);
    expectSame(merged.share(['yes']), shares().share(['yes']), 14);
  });

  it("weighs the judge's agreement by 1/p (Hájek), over the rows it labelled", () => {
    // Agreement on rows 1–3 (weights 2, 2, 1), not on row 4 (weight 1): Â = 5/6.
    const a = shares().agreement();
    expect(a.estimate).toBeCloseTo(5 / 6, 15);
    expect(a.n).toBe(4);
  });
});

describe('weightedShare: Hájek with a Wilson interval at the effective size', () => {
  it('is the plain Wilson interval under equal weights (8 of 10: [0.4902, 0.9433])', () => {
    // Wilson (1927) for 8/10 at 95 %, as tabulated by Newcombe (1998) and any Wilson calculator.
    const r = weightedShare({ n: 10, w: 10, w2: 10, wA: 8, w2A: 8 });
    expect(r.estimate).toBe(0.8);
    expect(r.ci![0]).toBeCloseTo(0.4902, 4);
    expect(r.ci![1]).toBeCloseTo(0.9433, 4);
  });

  it('takes its effective size from the linearised variance', () => {
    // Weights 2, 2, 1, 1 with A = 1, 1, 1, 0: Â = 5/6; Σ w²(A − Â)² = 9·(1/36)·... worked:
    // (4 + 4 + 1)(1/6)² + 1·(5/6)² = 9/36 + 25/36 = 34/36; v̂ = (34/36)/36; n* = Â(1 − Â)/v̂
    // = (5/36)·36·36/34 = 180/34.
    const r = weightedShare({ n: 4, w: 6, w2: 10, wA: 5, w2A: 9 });
    expect(r.estimate).toBeCloseTo(5 / 6, 15);
    const n = 180 / 34;
    const p = 5 / 6;
    const z2 = Z95 * Z95;
    const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
    const half = (Z95 / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
    expect(r.ci![0]).toBeCloseTo(centre - half, 14);
    expect(r.ci![1]).toBeCloseTo(centre + half, 14);
  });

  it('is null without rows; at Â = 1 uses Kish’s size (Σw)²/Σw²', () => {
    expect(weightedShare({ n: 0, w: 0, w2: 0, wA: 0, w2A: 0 })).toEqual({ estimate: null, ci: null, n: 0 });
    const all = weightedShare({ n: 3, w: 4, w2: 6, wA: 4, w2A: 6 });
    expect(all.estimate).toBe(1);
    // n* = 16/6; Wilson's lower bound at p = 1 is n/(n + z²).
    expect(all.ci![0]).toBeCloseTo(16 / 6 / (16 / 6 + Z95 * Z95), 14);
    expect(all.ci![1]).toBe(1);
  });
});

describe('scorerFigures: labels chosen by `assay label`', () => {
  const rowsOf = (): ScoreRow[] => [
    // Two labels chosen with p = 1/2 (weight 2), two from the dataset (certain), four without gold.
    { value: 'yes', target: 'yes', weight: 2 },
    { value: 'no', target: 'no', weight: 2 },
    { value: 'yes', target: 'yes' },
    { value: 'yes', target: 'no' },
    ...['yes', 'no', 'no', 'yes'].map((value) => ({ value })),
  ];

  it('gives the share of each label by the active estimator, complements equally wide', () => {
    const ppi = scorerFigures('label', rowsOf(), { ppi: true, labelOrder: ['yes', 'no'] }).summary.ppi!;
    expect(ppi.estimator).toBe('active');
    expect(ppi.estimate).toBeCloseTo(207 / 406, 14);
    const { yes, no } = ppi.byLabel!;
    expect(yes!.estimate! + no!.estimate!).toBeCloseTo(1, 14);
    expect(yes!.ci![1] - yes!.ci![0]).toBeCloseTo(no!.ci![1] - no!.ci![0], 14);
  });

  it('says the labels are a non-random sample and gives the design-weighted accuracy', () => {
    const { summary } = scorerFigures('label', rowsOf(), { ppi: true, bootstrap: false });
    // The unweighted accuracy over the four labels, 3/4, describes the sample; weighted, 5/6.
    expect(summary.metrics.accuracy!.value).toBe(0.75);
    expect(summary.ppi!.design).toMatchObject({
      sample: 'non-random',
      chosen: 2,
      certain: 2,
      accuracy: { n: 4 },
    });
    expect(summary.ppi!.design!.accuracy!.estimate).toBeCloseTo(5 / 6, 15);
  });

  it('a pass scorer: the agreement of 0/1 values from the sums', () => {
    const rows: ScoreRow[] = rowsOf().map((r) => ({
      ...r,
      value: r.value === 'yes',
      ...(r.target === undefined ? {} : { target: r.target === 'yes' }),
    }));
    const ppi = scorerFigures('pass', rows, { ppi: true, bootstrap: false }).summary.ppi!;
    expect(ppi.estimate).toBeCloseTo(207 / 406, 14);
    expect(ppi.design!.accuracy!.estimate).toBeCloseTo(5 / 6, 15);
  });

  it('has no design block when no label carries a p (PPI++ as before)', () => {
    const rows = rowsOf().map(({ weight: _, ...r }) => r);
    const ppi = scorerFigures('label', rows, { ppi: true }).summary.ppi!;
    expect(ppi.estimator).toBe('ppi++');
    expect(ppi.design).toBeUndefined();
  });
});

describe('report.txt: the design of chosen labels', () => {
  it('names the estimator, says the sample is non-random and gives the weighted accuracy', async () => {
    const { ppiLines } = await import('../../../shared/reports/ppi-text.js');
    const rows: ScoreRow[] = [
      { value: 'yes', target: 'yes', weight: 2 },
      { value: 'no', target: 'no', weight: 2 },
      { value: 'yes', target: 'yes' },
      { value: 'yes', target: 'no' },
      ...['yes', 'no', 'no', 'yes'].map((value) => ({ value })),
    ];
    const ppi = scorerFigures('label', rows, { ppi: true, positive: ['yes'] }).summary.ppi!;
    const text = ppiLines(ppi).join('\n');
    expect(text).toContain('(2 with a p, 2 certain): active inference (Zrnic & Candès 2024)');
    expect(text).toContain('NON-RANDOM SAMPLE: the accuracy, F1 and kappa above');
    expect(text).toMatch(
      /accuracy +0\.833 +\[[0-9.]+, [0-9.]+\] +over every item: each of the 4 labels weighted 1\/p/,
    );
    // Without a p there is no such line.
    const plain = scorerFigures(
      'label',
      rows.map(({ weight: _, ...r }) => r),
      { ppi: true, positive: ['yes'] },
    ).summary.ppi!;
    expect(ppiLines(plain).join('\n')).not.toContain('NON-RANDOM');
  });
});
