import { describe, expect, it } from 'vitest';
import {
  conditionState,
  gateSequenceAlpha,
  MeanConfidenceSequence,
  type SequenceFigures,
  settle,
  stitchedBoundary,
} from '../../../shared/lib/metrics/sequential.js';
import { mulberry32 } from '../../../shared/lib/metrics/stats.js';

/** The CS's figures after each of `xs`. */
function run(cs: MeanConfidenceSequence, xs: readonly number[]): SequenceFigures[] {
  return xs.map((x) => cs.update(x));
}

const bernoulli = (p: number, n: number, seed: number): number[] => {
  const random = mulberry32(seed);
  return Array.from({ length: n }, () => (random() < p ? 1 : 0));
};

describe('stitchedBoundary: the polynomial stitched boundary', () => {
  it("matches the authors' implementation (confseq poly_stitching_bound(100, 0.05, 10, 3))", () => {
    expect(stitchedBoundary(100, 0.05, { minIntrinsicTime: 10, scale: 3 })).toBeCloseTo(64.48755, 4);
  });

  it('gives the hand-computed values at v = m and above it', () => {
    // η = 2, s = 1.4: k₁ = (2^¼ + 2^−¼)/√2 = 1.435500, k₂ = (√2 + 1)/2 = 1.207107,
    // log(ζ(1.4) / (log 2)^1.4) = log(3.105547 / 0.598846) = 1.646308.
    // v = m = 1, α′ = 0.05: ℓ = 1.4·log log 2 + 1.646308 + log 20
    //   = −0.513118 + 1.646308 + 2.995732 = 4.128922;
    //   k₁²·v·ℓ = 8.508306, k₂·ℓ = 4.984050, B = √(8.508306 + 4.984050²) + 4.984050 = 10.758915.
    expect(stitchedBoundary(1, 0.05, { minIntrinsicTime: 1 })).toBeCloseTo(10.758915, 5);
    // v = 9: ℓ = 1.4·log log 18 + 1.646308 + 2.995732 = 1.4·1.061385 + 4.642040 = 6.127980;
    //   k₁²·9·ℓ = 113.649150, k₂·ℓ = 7.397126, B = √(113.649150 + 54.717) + 7.397126 = 20.372742.
    expect(stitchedBoundary(9, 0.05, { minIntrinsicTime: 1 })).toBeCloseTo(20.372742, 5);
  });

  it('is held at B(m) below m, grows with v, and shrinks as α grows', () => {
    const at = (v: number, alpha = 0.05) => stitchedBoundary(v, alpha, { minIntrinsicTime: 10 });
    expect(at(0)).toBe(at(10));
    expect(at(3)).toBe(at(10));
    expect(at(20)).toBeGreaterThan(at(10));
    expect(at(1000)).toBeGreaterThan(at(100));
    expect(at(100, 0.1)).toBeLessThan(at(100, 0.05));
    // √(v log log v) growth: B(v)/√v falls as v grows, B(v) / √v·… stays within a factor of 2.
    expect(at(10_000) / 100).toBeLessThan(at(100) / 10);
    expect(at(10_000) / 100).toBeGreaterThan(at(100) / 10 / 2);
  });

  it('refuses a level, an intrinsic time or a scale that is not one', () => {
    expect(() => stitchedBoundary(1, 0)).toThrow(/alpha must be in \(0, 1\)/);
    expect(() => stitchedBoundary(1, 1)).toThrow(/alpha/);
    expect(() => stitchedBoundary(-1, 0.05)).toThrow(/≥ 0/);
    expect(() => stitchedBoundary(1, 0.05, { minIntrinsicTime: 0 })).toThrow(/positive/);
    expect(() => stitchedBoundary(1, 0.05, { scale: -1 })).toThrow(/scale/);
  });
});

describe('MeanConfidenceSequence: hand-computed intervals', () => {
  it('has null figures before the first observation', () => {
    const cs = new MeanConfidenceSequence({ alpha: 0.05 });
    expect(cs.current()).toEqual({ n: 0, mean: null, lo: null, hi: null });
  });

  it('is the whole range for the first few items', () => {
    // α = 0.1 (0.05 a side), m = 1. Items 1, 0, 1: predictions ŷ = 0.5, 0.75, 0.5, so
    // V = 0.25, 0.8125, 1.0625; B = B(1) = 10.7589 for the first two, n = 3: B(1.0625) = 11.0898,
    // so lo = (2 − 11.09)/3 < 0 and hi > 1: the CS is [0, 1], clipped to the range.
    const figures = run(new MeanConfidenceSequence({ alpha: 0.1, minIntrinsicTime: 1 }), [1, 0, 1]);
    expect(figures.map((f) => [f.n, f.mean, f.lo, f.hi])).toEqual([
      [1, 1, 0, 1],
      [2, 0.5, 0, 1],
      [3, 2 / 3, 0, 1],
    ]);
  });

  it('gives mean − B/n on a stream of ones', () => {
    // All ones: ŷᵢ = (0.5 + i − 1)/i = 1 − 0.5/i, so yᵢ − ŷᵢ = 0.5/i and V = 0.25·Σ1/i² < 0.25·π²/6
    // = 0.411 < m = 1: B stays B(1; 0.05) = 10.758915 (above).
    // n = 50: lo = (50 − 10.758915)/50 = 0.784822; n = 100: lo = (100 − 10.758915)/100 = 0.892411.
    const figures = run(new MeanConfidenceSequence({ alpha: 0.1, minIntrinsicTime: 1 }), Array(100).fill(1));
    expect(figures[49]!.lo).toBeCloseTo(0.784822, 6);
    expect(figures[99]!.lo).toBeCloseTo(0.892411, 6);
    expect(figures[99]!.hi).toBe(1);
    expect(figures[99]!.mean).toBe(1);
  });

  it('rescales observations from their range (a paired difference in [−1, 1])', () => {
    // Differences of +1 are ones on the [0, 1] scale: lo = −1 + 2·0.892411 = 0.784822 at n = 100.
    const cs = new MeanConfidenceSequence({ alpha: 0.1, minIntrinsicTime: 1, range: [-1, 1] });
    const last = run(cs, Array(100).fill(1)).at(-1)!;
    expect(last.lo).toBeCloseTo(0.784822, 6);
    expect(last.hi).toBe(1);
    const worse = run(new MeanConfidenceSequence({ alpha: 0.1, range: [-1, 1] }), Array(100).fill(-1)).at(
      -1,
    )!;
    expect(worse.mean).toBe(-1);
    expect(worse.lo).toBe(-1);
    expect(worse.hi).toBeLessThan(-0.5);
  });

  it('is narrower without replacement, and exact once every item is scored', () => {
    // N = 100, all ones. At n = 50: A = Σᵢ₌₁⁵⁰ 1/(101 − i) = H₁₀₀ − H₅₀ = 0.688172; the centre
    // is 1 (a constant stream), so lo = 1 − B/(N·A) = 1 − 10.758915/68.8172 = 0.843660,
    // against 0.784822 for independent draws.
    const figures = run(
      new MeanConfidenceSequence({ alpha: 0.1, minIntrinsicTime: 1, population: 100 }),
      Array(100).fill(1),
    );
    expect(figures[49]!.lo).toBeCloseTo(0.84366, 5);
    expect(figures[99]).toEqual({ n: 100, mean: 1, lo: 1, hi: 1 });
    const mixed = new MeanConfidenceSequence({ alpha: 0.05, population: 4 });
    const last = run(mixed, [1, 0, 0, 1]).at(-1)!;
    expect(last).toEqual({ n: 4, mean: 0.5, lo: 0.5, hi: 0.5 });
  });

  it('refuses bad options and observations', () => {
    expect(() => new MeanConfidenceSequence({ alpha: 1.5 })).toThrow(/alpha must be in \(0, 1\)/);
    expect(() => new MeanConfidenceSequence({ alpha: 0.05, range: [1, 1] })).toThrow(/low < high/);
    expect(() => new MeanConfidenceSequence({ alpha: 0.05, population: 2.5 })).toThrow(/whole number/);
    const cs = new MeanConfidenceSequence({ alpha: 0.05 });
    expect(() => cs.update(1.2)).toThrow(/in \[0, 1\], got 1.2/);
    expect(() => cs.update(Number.NaN)).toThrow(/got NaN/);
    expect(cs.current().n).toBe(0);
    const small = new MeanConfidenceSequence({ alpha: 0.05, population: 1 });
    small.update(1);
    expect(() => small.update(1)).toThrow(/all 1 items .* at most once/);
  });
});

describe('MeanConfidenceSequence: properties', () => {
  it('shrinks roughly as √(log n / n)', () => {
    const cs = new MeanConfidenceSequence({ alpha: 0.05 });
    const figures = run(cs, bernoulli(0.8, 64_000, 7));
    const ns = [250, 1000, 4000, 16_000, 64_000];
    const widths = ns.map((n) => figures[n - 1]!.hi! - figures[n - 1]!.lo!);
    // Measured: 0.2567, 0.1131, 0.0524, 0.0260, 0.0131.
    for (let i = 1; i < widths.length; i += 1) expect(widths[i]).toBeLessThan(widths[i - 1]!);
    // width·√n: 4.06, 3.58, 3.31, 3.29, 3.32: the boundary's constant term fades, then the
    // √(log log n) factor makes it grow again, slowly: never faster than 1/√n for long.
    const rootN = ns.map((n, i) => widths[i]! * Math.sqrt(n));
    expect(rootN[4]).toBeGreaterThanOrEqual(rootN[3]! * 0.99);
    for (const r of rootN) expect(r / rootN[2]!).toBeLessThan(1.3);
    // width / √(log n / n): 1.73, 1.36, 1.15, 1.06, 1.00: within a factor of 2 throughout.
    const ratio = ns.map((n, i) => widths[i]! / Math.sqrt(Math.log(n) / n));
    for (const r of ratio) expect(Math.max(r / ratio[0]!, ratio[0]! / r)).toBeLessThan(2);
  });

  it('is narrower where the observations vary less (empirical Bernstein)', () => {
    const width = (p: number) => {
      const last = run(new MeanConfidenceSequence({ alpha: 0.05 }), bernoulli(p, 2000, 11)).at(-1)!;
      return last.hi! - last.lo!;
    };
    // Bernoulli variance 0.0475 at 0.95 against 0.25 at 0.5: the width scales with √variance.
    expect(width(0.95)).toBeLessThan(0.6 * width(0.5));
  });

  it('always contains the running mean, in any order, with or without a population', () => {
    const streams = [
      bernoulli(0.7, 1000, 3),
      [...Array(500).fill(1), ...Array(500).fill(0)],
      [...Array(980).fill(1), ...Array(20).fill(0)],
      Array.from({ length: 1000 }, (_, i) => (i % 3 === 0 ? 0.25 : 1)),
    ];
    for (const xs of streams)
      for (const population of [undefined, xs.length]) {
        const cs = new MeanConfidenceSequence({ alpha: 0.05, population });
        let sum = 0;
        const outside = xs.flatMap((x, i) => {
          const f = cs.update(x);
          sum += x;
          const off = Math.abs(f.mean! - sum / (i + 1)) > 1e-12 || f.lo! > f.mean! || f.hi! < f.mean!;
          return off ? [f] : [];
        });
        expect(outside).toEqual([]);
      }
  });

  it('misses the true mean at any time in at most α of simulated streams (200 × 500, seeded)', () => {
    const alpha = 0.1;
    const streams = 200;
    const steps = 500;
    let missed = 0;
    let missedNaive = 0;
    for (let s = 0; s < streams; s += 1) {
      const p = [0.5, 0.8, 0.95][s % 3]!;
      const cs = new MeanConfidenceSequence({ alpha });
      let ever = false;
      let everNaive = false;
      let sum = 0;
      for (const [i, x] of bernoulli(p, steps, 1000 + s).entries()) {
        const f = cs.update(x);
        if (f.lo! > p || f.hi! < p) ever = true;
        // The fixed-n normal interval, looked at after every item: not a CS.
        sum += x;
        const n = i + 1;
        const mean = sum / n;
        const half = 1.6449 * Math.sqrt(Math.max(mean * (1 - mean), 1e-9) / n);
        if (n >= 10 && Math.abs(mean - p) > half) everNaive = true;
      }
      missed += ever ? 1 : 0;
      missedNaive += everNaive ? 1 : 0;
    }
    // Slack: two binomial standard errors of a share α over 200 streams (0.042).
    const slack = 2 * Math.sqrt((alpha * (1 - alpha)) / streams);
    expect(missed / streams).toBeLessThanOrEqual(alpha + slack);
    // The check has teeth: peeking at a fixed-n 90 % interval after every item misses far more.
    expect(missedNaive / streams).toBeGreaterThan(alpha + slack);
  });

  it('covers the dataset mean when its items are drawn in a random order (200 × 500, seeded)', () => {
    const alpha = 0.1;
    const N = 500;
    let missed = 0;
    for (let s = 0; s < 200; s += 1) {
      const items = bernoulli(0.85, N, 5000 + s);
      const truth = items.reduce((a, b) => a + b, 0) / N;
      const random = mulberry32(9000 + s);
      for (let i = N - 1; i > 0; i -= 1) {
        const j = Math.floor(random() * (i + 1));
        [items[i], items[j]] = [items[j]!, items[i]!];
      }
      const cs = new MeanConfidenceSequence({ alpha, population: N });
      if (items.some((x) => (({ lo, hi }) => lo! > truth || hi! < truth)(cs.update(x)))) missed += 1;
    }
    expect(missed / 200).toBeLessThanOrEqual(alpha + 2 * Math.sqrt((alpha * (1 - alpha)) / 200));
  });
});

describe('settle: a gate read off confidence sequences', () => {
  const interval = (lo: number, hi: number): SequenceFigures => ({ n: 10, mean: (lo + hi) / 2, lo, hi });

  it('reads each operator on the interval', () => {
    expect(conditionState(interval(0.8, 0.9), '>=', 0.8)).toBe('met');
    expect(conditionState(interval(0.8, 0.9), '>', 0.8)).toBe('undecided');
    expect(conditionState(interval(0.7, 0.8), '>', 0.8)).toBe('failed');
    expect(conditionState(interval(0.7, 0.8), '>=', 0.8)).toBe('undecided');
    expect(conditionState(interval(0.7, 0.79), '>=', 0.8)).toBe('failed');
    expect(conditionState(interval(0.1, 0.2), '<=', 0.2)).toBe('met');
    expect(conditionState(interval(0.1, 0.2), '<', 0.2)).toBe('undecided');
    expect(conditionState(interval(0.2, 0.3), '<', 0.2)).toBe('failed');
    expect(conditionState(interval(0.21, 0.3), '<=', 0.2)).toBe('failed');
    expect(conditionState({ lo: null, hi: null }, '>=', 0.2)).toBe('undecided');
    expect(() => conditionState(interval(0, 1), '==' as '>=', 0.5)).toThrow(/cannot be settled/);
  });

  it('promotes a strong variant, rejects a weak one, and waits on one near the threshold', () => {
    const verdictAfter = (xs: number[]) => {
      const cs = new MeanConfidenceSequence({ alpha: gateSequenceAlpha(0.05, 1) });
      let at: { verdict: string; n: number } = { verdict: 'undecided', n: 0 };
      for (const x of xs) {
        const figures = cs.update(x);
        const { verdict } = settle([{ kind: 'threshold', figures, op: '>=', value: 0.8 }]);
        at = { verdict, n: figures.n };
        if (verdict !== 'undecided') break;
      }
      return at;
    };
    const strong = verdictAfter(Array(1000).fill(1));
    expect(strong.verdict).toBe('promote');
    expect(strong.n).toBeLessThan(150);
    const weak = verdictAfter(Array(1000).fill(0));
    expect(weak.verdict).toBe('reject');
    expect(weak.n).toBeLessThan(40);
    // Exactly 0.8 (four ones, a zero, repeated): neither side of the threshold, ever.
    const edge = verdictAfter(Array.from({ length: 1000 }, (_, i) => (i % 5 === 4 ? 0 : 1)));
    expect(edge).toEqual({ verdict: 'undecided', n: 1000 });
  });

  it('compares with the baseline on the paired difference, with a margin', () => {
    // "no worse than the baseline by more than 0.02": variant ≥ baseline − 0.02.
    const diff = new MeanConfidenceSequence({ alpha: gateSequenceAlpha(0.05, 1), range: [-1, 1] });
    const before = diff.current();
    expect(settle([{ kind: 'baseline', figures: before, op: '>=', margin: -0.02 }]).verdict).toBe(
      'undecided',
    );
    // The variant is right where the baseline is right, and on 1 item in 10 where it is not.
    let figures = before;
    for (
      let i = 0;
      i < 3000 && settle([{ kind: 'baseline', figures, op: '>=', margin: -0.02 }]).verdict === 'undecided';
      i += 1
    )
      figures = diff.update(i % 10 === 0 ? 1 : 0);
    const settled = settle([
      { kind: 'baseline', figures, op: '>=', margin: -0.02, label: 'accuracy >= baseline - 0.02' },
    ]);
    expect(settled).toEqual({
      verdict: 'promote',
      conditions: [{ label: 'accuracy >= baseline - 0.02', state: 'met' }],
    });
    expect(figures.lo).toBeGreaterThanOrEqual(-0.02);
  });

  it('rejects on one failed condition, promotes only when all are met', () => {
    const met = interval(0.85, 0.9);
    const open = interval(0.75, 0.9);
    const failed = interval(0.5, 0.7);
    const gate = (a: SequenceFigures, b: SequenceFigures) =>
      settle([
        { kind: 'threshold', figures: a, op: '>=', value: 0.8 },
        { kind: 'baseline', figures: b, op: '>=', margin: 0.8 },
      ]);
    expect(gate(met, met).verdict).toBe('promote');
    expect(gate(met, open).verdict).toBe('undecided');
    expect(gate(open, failed)).toEqual({
      verdict: 'reject',
      conditions: [
        { label: 'mean >= 0.8', state: 'undecided' },
        { label: 'variant >= baseline + 0.8', state: 'failed' },
      ],
    });
    expect(() => settle([])).toThrow(/at least one condition/);
  });

  it('builds each condition at 2α/k so a gate of k conditions errs at most α', () => {
    expect(gateSequenceAlpha(0.05, 1)).toBeCloseTo(0.1, 15);
    expect(gateSequenceAlpha(0.05, 4)).toBeCloseTo(0.025, 15);
    expect(() => gateSequenceAlpha(0.6, 1)).toThrow(/no room/);
    expect(() => gateSequenceAlpha(0.05, 0)).toThrow(/at least one condition/);
  });
});
