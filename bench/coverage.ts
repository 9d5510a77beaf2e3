/**
 * Coverage of every interval the product reports (`npm run bench -- coverage`; also a part of
 * `npm run bench`): how often a nominal 95% interval contains the true value, over
 * n ∈ {3, 5, 10, 20, 50, 200, 1000} and three true values per interval. The goal: at least 93%
 * in every cell where the product gives an interval; below an interval's minimum number of items
 * (`MIN_ITEMS_FOR_INTERVAL`, shared/lib/metrics/intervals.ts) the product withholds it and says
 * "too few items for an interval", and the bench checks exactly that rule, since it runs the
 * product's own functions (classificationMetrics, scorerFigures, krippendorffAlpha) with their
 * default settings (1,000 resamples, seed 1).
 *
 * The designs (each true value is the population figure, computed exactly from the design):
 * - proportion (accuracy, binary accuracy, pass rate, a pass scorer's accuracy: Wilson with a continuity correction): k
 *   successes of n with probability p = 0.5 / 0.8 / 0.95; exact, by summing the binomial
 *   probabilities of the k whose interval covers p.
 * - paired difference of two proportions (Newcombe's method 10, and beside it the paired
 *   bootstrap the comparisons used before): two sides right with the same probability
 *   p = 0.5 / 0.8 / 0.95 on each item (true difference 0), their outcomes correlated (φ = 0.5:
 *   two judges tend to fail the same items); exact by enumerating every 2×2 table up to n = 50,
 *   simulated above.
 * - label figures (macro F1, Cohen's kappa, quadratic weighted kappa, binary macro F1, F1 of
 *   the positive class): 4 ordered labels with gold shares 0.4 / 0.3 / 0.2 / 0.1, a judge right
 *   with probability a and otherwise one place off (either way, the only way at an end), a
 *   chosen so that Cohen's kappa is 0.5 / 0.8 / 0.95; positive class: the top two labels.
 * - correlations (Pearson, Spearman, Kendall's τ-b), MAE and a mean: score and gold standard
 *   bivariate normal with correlation ρ = 0.5 / 0.8 / 0.95 (Spearman's true value
 *   (6/π)·asin(ρ/2), Kendall's (2/π)·asin(ρ), MAE's √(4(1 − ρ)/π), the mean's 0).
 * - a skewed mean: scores Beta(4μ, 4(1 − μ)) in [0, 1] with mean μ = 0.5 / 0.8 / 0.95.
 * - ROC-AUC and balanced accuracy at a threshold: 40% positives, scores N(d, 1) for positives
 *   and N(0, 1) for negatives, d = √2·Φ⁻¹(AUC) for AUC = 0.5 / 0.8 / 0.95; threshold d/2, so
 *   the true balanced accuracy is Φ(d/2).
 * - Krippendorff's alpha (nominal, two ratings a unit, as across two repeats): 3 categories
 *   with shares 0.5 / 0.3 / 0.2, each rating the unit's category with probability q and
 *   otherwise one of the other two at random, q chosen so that alpha is 0.5 / 0.8 / 0.95.
 *
 * Coverage is over the repetitions where the product gives an interval (`reported` says how
 * many do: a figure that is null, a κ on one label, has none). Simulated cells report their
 * Monte Carlo standard error √(c(1 − c)/repetitions). Seeded (mulberry32), so the figures are
 * the same on every machine. Results go to bench/results/coverage.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { classificationMetrics } from '../shared/lib/metrics/classification.js';
import {
  MIN_ITEMS_FOR_INTERVAL,
  newcombePaired,
  proportionInterval,
} from '../shared/lib/metrics/intervals.js';

import { krippendorffAlpha } from '../shared/lib/metrics/reliability.js';
import { type ScoreRow, scorerFigures } from '../shared/lib/metrics/scores.js';
import { erfc, mulberry32, normalQuantile, pairedBootstrapsAt } from '../shared/lib/metrics/stats.js';
import type { Interval } from '../shared/model/report.js';
import { ROOT } from './parts/data.js';
import type { Check } from './parts/table.js';

export const COVERAGE_SETUP = {
  ns: [3, 5, 10, 20, 50, 200, 1000],
  truths: [0.5, 0.8, 0.95],
  nominal: 0.95,
  goal: 0.93,
  /** The goal holds from this n on for every interval (below it: ≥ goal, or withheld). */
  goalFromN: 10,
  /** Repetitions of a simulated cell, by n (the bootstrap's cost grows with n). */
  repetitions: { small: 1000, 200: 300, 1000: 60 } as Record<string, number>,
  /** Fewer for the number designs (four bootstrap figures a resample), by n. */
  numberRepetitions: { small: 400, 200: 100, 1000: 25 } as Record<string, number>,
  /** The paired table is enumerated exactly up to this n, simulated above. */
  exactPairedUpTo: 50,
  seed: 37,
} as const;

export interface CoverageCell {
  interval: string;
  /** The design's true value (the setting), and the figure's own true value in it. */
  setting: number;
  truth: number;
  n: number;
  method: 'exact' | 'simulated';
  /** Repetitions (simulated), or 0 for an exact cell. */
  repetitions: number;
  /** Share of repetitions with an interval (for an exact cell: probability). */
  reported: number;
  /** Share of those intervals that contain the truth; null when none was reported. */
  coverage: number | null;
  /** Monte Carlo standard error of `coverage` (0 for an exact cell). */
  standardError: number;
  /** The product withholds this interval at this n (below its minimum number of items). */
  withheld: boolean;
}

export interface CoverageFigures {
  setup: typeof COVERAGE_SETUP;
  minItems: Record<string, number>;
  cells: CoverageCell[];
  /** Per interval: its worst cell among those the product reports an interval in. */
  worst: Record<string, CoverageCell | null>;
  /** Per interval: whether every reported cell meets the goal (simulated: within 2 standard errors). */
  pass: Record<string, boolean>;
  ms: number;
}

const within = (ci: Interval | undefined | null, value: number) =>
  ci !== undefined && ci !== null && ci[0] - 1e-12 <= value && value <= ci[1] + 1e-12;

/** Counts of one interval's repetitions in one cell. */
class Tally {
  reported = 0;
  covered = 0;
  total = 0;
  add(ci: Interval | undefined | null, truth: number): void {
    this.total += 1;
    if (!ci) return;
    this.reported += 1;
    if (within(ci, truth)) this.covered += 1;
  }
}

function cell(
  interval: string,
  setting: number,
  truth: number,
  n: number,
  tally: Tally,
  withheld: boolean,
): CoverageCell {
  const coverage = tally.reported === 0 ? null : tally.covered / tally.reported;
  return {
    interval,
    setting,
    truth,
    n,
    method: 'simulated',
    repetitions: tally.total,
    reported: tally.reported / tally.total,
    coverage,
    standardError: coverage === null ? 0 : Math.sqrt((coverage * (1 - coverage)) / tally.reported),
    withheld,
  };
}

/** A cell whose coverage is exact (a sum of probabilities), of an interval given at every n. */
function exactCell(
  interval: string,
  setting: number,
  truth: number,
  n: number,
  coverage: number,
): CoverageCell {
  return {
    interval,
    setting,
    truth,
    n,
    method: 'exact',
    repetitions: 0,
    reported: 1,
    coverage,
    standardError: 0,
    withheld: false,
  };
}

const withheldAt = (figure: keyof typeof MIN_ITEMS_FOR_INTERVAL, n: number) =>
  n < MIN_ITEMS_FOR_INTERVAL[figure]!;

function repetitionsAt(n: number, table: Record<string, number>): number {
  return table[String(n)] ?? table.small!;
}

/** log n! for the binomial and multinomial probabilities. */
const logFactorials = (() => {
  const out = new Float64Array(1001);
  for (let i = 1; i <= 1000; i += 1) out[i] = out[i - 1]! + Math.log(i);
  return out;
})();

/** The product's proportion interval (Wilson, continuity-corrected): exact coverage of p over k ~ Binomial(n, p). */
export function proportionCells(setup = COVERAGE_SETUP): CoverageCell[] {
  const cells: CoverageCell[] = [];
  for (const p of setup.truths) {
    for (const n of setup.ns) {
      let covered = 0;
      for (let k = 0; k <= n; k += 1) {
        const logP =
          logFactorials[n]! -
          logFactorials[k]! -
          logFactorials[n - k]! +
          k * Math.log(p) +
          (n - k) * Math.log1p(-p);
        if (within(proportionInterval(k, n), p)) covered += Math.exp(logP);
      }
      cells.push(exactCell('proportion (Wilson, continuity-corrected)', p, p, n, covered));
    }
  }
  return cells;
}

/** The paired design's cell probabilities: both right, base only, candidate only, neither. */
function pairedCells(p: number, phi = 0.5): [number, number, number, number] {
  const both = p * p + phi * p * (1 - p);
  return [both, p - both, p - both, 1 - 2 * p + both];
}

/** Newcombe's interval (exact up to `exactPairedUpTo`) and the paired bootstrap (simulated). */
export function pairedCoverage(setup = COVERAGE_SETUP): CoverageCell[] {
  const cells: CoverageCell[] = [];
  for (const p of setup.truths) {
    const probs = pairedCells(p);
    const logs = probs.map((q) => Math.log(q));
    for (const n of setup.ns) {
      if (n <= setup.exactPairedUpTo) {
        let covered = 0;
        for (let a = 0; a <= n; a += 1)
          for (let b = 0; a + b <= n; b += 1)
            for (let c = 0; a + b + c <= n; c += 1) {
              const d = n - a - b - c;
              const logP =
                logFactorials[n]! -
                logFactorials[a]! -
                logFactorials[b]! -
                logFactorials[c]! -
                logFactorials[d]! +
                a * logs[0]! +
                b * logs[1]! +
                c * logs[2]! +
                d * logs[3]!;
              const ci = newcombePaired({ both: a, baseOnly: b, candidateOnly: c, neither: d });
              if (within(ci, 0)) covered += Math.exp(logP);
            }
        cells.push(exactCell('paired difference (Newcombe)', p, 0, n, covered));
      }
      const reps = repetitionsAt(n, setup.repetitions);
      const newcombe = new Tally();
      const boot = new Tally();
      const random = mulberry32(setup.seed * 1000 + n + Math.round(p * 100) * 7919);
      const base = new Uint8Array(n);
      const candidate = new Uint8Array(n);
      for (let rep = 0; rep < reps; rep += 1) {
        const counts = { both: 0, baseOnly: 0, candidateOnly: 0, neither: 0 };
        for (let i = 0; i < n; i += 1) {
          const u = random();
          const k = u < probs[0]! ? 0 : u < probs[0]! + probs[1]! ? 1 : u < 1 - probs[3]! ? 2 : 3;
          base[i] = k === 0 || k === 1 ? 1 : 0;
          candidate[i] = k === 0 || k === 2 ? 1 : 0;
          if (k === 0) counts.both += 1;
          else if (k === 1) counts.baseOnly += 1;
          else if (k === 2) counts.candidateOnly += 1;
          else counts.neither += 1;
        }
        if (n > setup.exactPairedUpTo) newcombe.add(newcombePaired(counts), 0);
        const deltas = pairedBootstrapsAt(n, (side, indices) => {
          const rows = side === 'base' ? base : candidate;
          let right = 0;
          if (indices === undefined) for (let i = 0; i < n; i += 1) right += rows[i]!;
          else for (const i of indices) right += rows[i]!;
          return { accuracy: right / n };
        });
        boot.add(deltas.accuracy?.ci, 0);
      }
      if (n > setup.exactPairedUpTo)
        cells.push(cell('paired difference (Newcombe)', p, 0, n, newcombe, false));
      cells.push(cell('paired difference (paired bootstrap, before)', p, 0, n, boot, false));
    }
  }
  return cells;
}

/** The label design's joint probabilities (gold × judged, 4 labels) for a judge right with probability a. */
function labelJoint(a: number): number[] {
  const gold = [0.4, 0.3, 0.2, 0.1];
  const joint = new Array<number>(16).fill(0);
  for (let g = 0; g < 4; g += 1) {
    joint[g * 4 + g] = gold[g]! * a;
    const neighbours = [g - 1, g + 1].filter((k) => k >= 0 && k < 4);
    for (const k of neighbours) joint[g * 4 + k]! += (gold[g]! * (1 - a)) / neighbours.length;
  }
  return joint;
}

/** Population figures of a joint distribution of gold × judged labels (positive: the top two). */
function labelTruths(joint: readonly number[]): Record<string, number> {
  const rows = [0, 1, 2, 3].map((g) => joint.slice(g * 4, g * 4 + 4).reduce((s, x) => s + x, 0));
  const cols = [0, 1, 2, 3].map((p) => [0, 1, 2, 3].reduce((s, g) => s + joint[g * 4 + p]!, 0));
  const agree = [0, 1, 2, 3].reduce((s, k) => s + joint[k * 4 + k]!, 0);
  const chance = [0, 1, 2, 3].reduce((s, k) => s + rows[k]! * cols[k]!, 0);
  let observed = 0;
  let expected = 0;
  for (let g = 0; g < 4; g += 1)
    for (let p = 0; p < 4; p += 1) {
      observed += joint[g * 4 + p]! * (g - p) ** 2;
      expected += rows[g]! * cols[p]! * (g - p) ** 2;
    }
  const f1 = (tp: number, predicted: number, actual: number) => (2 * tp) / (predicted + actual);
  const macroF1 = [0, 1, 2, 3].reduce((s, k) => s + f1(joint[k * 4 + k]!, cols[k]!, rows[k]!), 0) / 4;
  const positive = (k: number) => k >= 2;
  let pp = 0;
  let nn = 0;
  for (let g = 0; g < 4; g += 1)
    for (let p = 0; p < 4; p += 1) {
      if (positive(g) && positive(p)) pp += joint[g * 4 + p]!;
      if (!positive(g) && !positive(p)) nn += joint[g * 4 + p]!;
    }
  const goldPositive = rows[2]! + rows[3]!;
  const predPositive = cols[2]! + cols[3]!;
  const positiveF1 = f1(pp, predPositive, goldPositive);
  const negativeF1 = f1(nn, 1 - predPositive, 1 - goldPositive);
  return {
    kappa: (agree - chance) / (1 - chance),
    weightedKappa: 1 - observed / expected,
    macroF1,
    positiveF1,
    binaryF1: (positiveF1 + negativeF1) / 2,
  };
}

/** The judge's accuracy that gives the label design a Cohen's kappa of `kappa` (bisection). */
function accuracyForKappa(kappa: number): number {
  let lo = 0.3;
  let hi = 1;
  for (let i = 0; i < 60; i += 1) {
    const mid = (lo + hi) / 2;
    if (labelTruths(labelJoint(mid)).kappa! < kappa) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

const LABEL_FIGURES = ['macroF1', 'kappa', 'weightedKappa', 'binaryF1', 'positiveF1'] as const;
const LABELS = ['L1', 'L2', 'L3', 'L4'];

export function labelCoverage(setup = COVERAGE_SETUP): CoverageCell[] {
  const cells: CoverageCell[] = [];
  for (const target of setup.truths) {
    const joint = labelJoint(accuracyForKappa(target));
    const truths = labelTruths(joint);
    const cumulative = joint.map((_, i) => joint.slice(0, i + 1).reduce((s, x) => s + x, 0));
    for (const n of setup.ns) {
      const tallies = Object.fromEntries(LABEL_FIGURES.map((f) => [f, new Tally()])) as Record<
        (typeof LABEL_FIGURES)[number],
        Tally
      >;
      const random = mulberry32(setup.seed * 2000 + n + Math.round(target * 100) * 7919);
      const reps = repetitionsAt(n, setup.repetitions);
      for (let rep = 0; rep < reps; rep += 1) {
        const pairs = Array.from({ length: n }, () => {
          const u = random();
          let k = cumulative.findIndex((c) => u < c);
          if (k < 0) k = 15;
          return { gold: LABELS[Math.floor(k / 4)]!, pred: LABELS[k % 4]! };
        });
        const m = classificationMetrics(pairs, { positive: ['L3', 'L4'], labelOrder: LABELS, ordinal: true });
        for (const figure of LABEL_FIGURES) tallies[figure].add(m.ci?.[figure], truths[figure]!);
      }
      for (const figure of LABEL_FIGURES)
        cells.push(cell(figure, target, truths[figure]!, n, tallies[figure], withheldAt(figure, n)));
    }
  }
  return cells;
}

/** A standard normal draw (Box–Muller). */
function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

/** A Gamma(shape, 1) draw (Marsaglia & Tsang, with the shape < 1 boost). */
function gamma(shape: number, random: () => number): number {
  if (shape < 1) return gamma(shape + 1, random) * (1 - random()) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = gaussian(random);
    const v = (1 + c * x) ** 3;
    if (v <= 0) continue;
    const u = 1 - random();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** Φ, the standard normal distribution function: erfc(−x/√2)/2 (to 1.2e-7). */
function normalCdf(x: number): number {
  return erfc(-x / Math.SQRT2) / 2;
}

/** Runs `scorerFigures` on simulated number rows and tallies the named figures' intervals. */
function numberCells(
  name: (figure: string) => string,
  figures: readonly (keyof typeof MIN_ITEMS_FOR_INTERVAL)[],
  truths: (setting: number) => Record<string, number>,
  draw: (setting: number, n: number, random: () => number) => ScoreRow[],
  options: { threshold?: number | ((setting: number) => number) },
  salt: number,
  setup = COVERAGE_SETUP,
): CoverageCell[] {
  const cells: CoverageCell[] = [];
  for (const setting of setup.truths) {
    const truth = truths(setting);
    const threshold =
      typeof options.threshold === 'function' ? options.threshold(setting) : options.threshold;
    for (const n of setup.ns) {
      const tallies = new Map(figures.map((f) => [f, new Tally()]));
      const random = mulberry32(setup.seed * salt + n + Math.round(setting * 100) * 7919);
      const reps = repetitionsAt(n, setup.numberRepetitions);
      for (let rep = 0; rep < reps; rep += 1) {
        const { metrics } = scorerFigures('number', draw(setting, n, random), { threshold }).summary;
        for (const f of figures) tallies.get(f)!.add(metrics[f]?.ci, truth[f]!);
      }
      for (const f of figures)
        cells.push(cell(name(f), setting, truth[f]!, n, tallies.get(f)!, withheldAt(f, n)));
    }
  }
  return cells;
}

export function correlationCoverage(setup = COVERAGE_SETUP): CoverageCell[] {
  return numberCells(
    (f) => (f === 'mean' ? 'mean (normal)' : f),
    ['pearson', 'spearman', 'kendallTau', 'mae', 'mean'],
    (rho) => ({
      pearson: rho,
      spearman: (6 / Math.PI) * Math.asin(rho / 2),
      kendallTau: (2 / Math.PI) * Math.asin(rho),
      mae: Math.sqrt((4 * (1 - rho)) / Math.PI),
      mean: 0,
    }),
    (rho, n, random) =>
      Array.from({ length: n }, () => {
        const x = gaussian(random);
        const y = rho * x + Math.sqrt(1 - rho * rho) * gaussian(random);
        return { value: x, target: y };
      }),
    {},
    3000,
    setup,
  );
}

export function skewedMeanCoverage(setup = COVERAGE_SETUP): CoverageCell[] {
  return numberCells(
    () => 'mean (skewed, Beta)',
    ['mean'],
    (mu) => ({ mean: mu }),
    (mu, n, random) =>
      Array.from({ length: n }, () => {
        const a = gamma(4 * mu, random);
        const b = gamma(4 * (1 - mu), random);
        return { value: a / (a + b) };
      }),
    {},
    4000,
    setup,
  );
}

export function aucCoverage(setup = COVERAGE_SETUP): CoverageCell[] {
  const shift = (auc: number) => Math.SQRT2 * (auc === 0.5 ? 0 : normalQuantile(auc));
  return numberCells(
    (f) => f,
    ['rocAuc', 'balancedAccuracy'],
    (auc) => ({ rocAuc: auc, balancedAccuracy: normalCdf(shift(auc) / 2) }),
    (auc, n, random) =>
      Array.from({ length: n }, () => {
        const positive = random() < 0.4;
        return { value: gaussian(random) + (positive ? shift(auc) : 0), target: positive ? 1 : 0 };
      }),
    { threshold: (auc) => shift(auc) / 2 },
    5000,
    setup,
  );
}

/** P(two ratings agree) and chance agreement of the alpha design for a rating right with probability q. */
function alphaTruth(q: number): number {
  const shares = [0.5, 0.3, 0.2];
  // A rating's distribution given the unit's category c: q on c, (1 − q)/2 on each other.
  const given = (c: number, k: number) => (k === c ? q : (1 - q) / 2);
  let agree = 0;
  const marginal = [0, 0, 0];
  for (let c = 0; c < 3; c += 1)
    for (let k = 0; k < 3; k += 1) {
      agree += shares[c]! * given(c, k) ** 2;
      marginal[k]! += shares[c]! * given(c, k);
    }
  const chance = marginal.reduce((s, m) => s + m * m, 0);
  return (agree - chance) / (1 - chance);
}

export function alphaCoverage(setup = COVERAGE_SETUP): CoverageCell[] {
  const cells: CoverageCell[] = [];
  for (const target of setup.truths) {
    let lo = 1 / 3;
    let hi = 1;
    for (let i = 0; i < 60; i += 1) {
      const mid = (lo + hi) / 2;
      if (alphaTruth(mid) < target) lo = mid;
      else hi = mid;
    }
    const q = (lo + hi) / 2;
    const shares = [0.5, 0.8, 1];
    for (const n of setup.ns) {
      const tally = new Tally();
      const random = mulberry32(setup.seed * 6000 + n + Math.round(target * 100) * 7919);
      const reps = repetitionsAt(n, setup.numberRepetitions);
      for (let rep = 0; rep < reps; rep += 1) {
        const units = Array.from({ length: n }, () => {
          const u = random();
          const c = shares.findIndex((s) => u < s);
          const rate = () => (random() < q ? c : (c + 1 + Math.floor(random() * 2)) % 3);
          return [String(rate()), String(rate())];
        });
        tally.add(krippendorffAlpha(units, 'nominal').ci, target);
      }
      cells.push(cell("Krippendorff's alpha (bootstrap)", target, target, n, tally, false));
    }
  }
  return cells;
}

/** Runs every design; the figures, and the bench's rows with their targets. */
export function coverage(setup = COVERAGE_SETUP): { figures: CoverageFigures; checks: Check[] } {
  const started = performance.now();
  const cells = [
    ...proportionCells(setup),
    ...pairedCoverage(setup),
    ...labelCoverage(setup),
    ...correlationCoverage(setup),
    ...skewedMeanCoverage(setup),
    ...aucCoverage(setup),
    ...alphaCoverage(setup),
  ];
  const worst: Record<string, CoverageCell | null> = {};
  const pass: Record<string, boolean> = {};
  for (const c of cells) {
    if (!(c.interval in worst)) {
      worst[c.interval] = null;
      pass[c.interval] = true;
    }
    // A cell the product gives no interval in (withheld, or a figure null on every repetition)
    // has nothing to cover; every other cell is held to the goal from `goalFromN` on, and below
    // it too unless withheld.
    if (c.withheld || c.coverage === null) continue;
    const current = worst[c.interval];
    if (!current || c.coverage < current.coverage!) worst[c.interval] = c;
    // A simulated cell within two Monte Carlo standard errors of the goal is not told from it.
    if (c.coverage + 2 * c.standardError < setup.goal) pass[c.interval] = false;
  }
  const figures: CoverageFigures = {
    setup,
    minItems: { ...MIN_ITEMS_FOR_INTERVAL },
    cells,
    worst,
    pass,
    ms: Math.round(performance.now() - started),
  };
  const checks: Check[] = Object.entries(worst).map(([interval, w]) => ({
    figure: `CI coverage: ${interval}`,
    measured: w
      ? `worst ${pct(w.coverage!)}${w.method === 'simulated' ? ` ± ${pct(w.standardError)}` : ''} (n ${w.n}, true ${w.setting})`
      : 'never reported',
    bound: `nominal ${pct(setup.nominal)}${minFor(interval)}`,
    target: `≥ ${pct(setup.goal)} or withheld`,
    pass: pass[interval]!,
  }));
  return { figures, checks };
}

/** The metric table's name of the figure an interval row is of (`Krippendorff's alpha …` is `alpha`). */
const figureOf = (interval: string) =>
  interval.startsWith("Krippendorff's alpha") ? 'alpha' : interval.split(' ')[0]!;

function minFor(interval: string): string {
  const min = (MIN_ITEMS_FOR_INTERVAL as Record<string, number>)[figureOf(interval)];
  return min === undefined ? '' : `; withheld below n ${min}`;
}

const pct = (share: number) => `${(share * 100).toFixed(1)} %`;

/** The table of docs/performance.md: coverage per interval and n, the worst over the settings. */
export function renderCoverage(f: CoverageFigures): string {
  const { ns } = f.setup;
  const lines = [
    `| interval | ${ns.map((n) => `n ${n}`).join(' | ')} | worst cell (n, true value) | goal |`,
    `|---|${ns.map(() => '---:').join('|')}|---|---|`,
  ];
  for (const interval of Object.keys(f.worst)) {
    const mine = f.cells.filter((c) => c.interval === interval);
    const perN = ns.map((n) => {
      const at = mine.filter((c) => c.n === n);
      if (at.length > 0 && at.every((c) => c.withheld)) return 'withheld';
      const covered = at.filter((c) => c.coverage !== null).map((c) => c.coverage!);
      return covered.length === 0 ? '—' : pct(Math.min(...covered));
    });
    const w = f.worst[interval];
    const worstText = w
      ? `${pct(w.coverage!)}${w.method === 'simulated' ? ` ± ${pct(w.standardError)}` : ''} (n ${w.n}, ${w.setting})`
      : '—';
    lines.push(
      `| ${interval}${minFor(interval)} | ${perN.join(' | ')} | ${worstText} | ${f.pass[interval] ? 'PASS' : 'FAIL'} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Writes bench/results/coverage.json. */
export async function writeCoverage(figures: CoverageFigures): Promise<void> {
  const dir = join(ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'coverage.json'),
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, ...figures }, null, 2)}\n`,
  );
}

async function main() {
  const { figures } = coverage();
  await writeCoverage(figures);
  process.stdout.write(
    `${renderCoverage(figures)}\n(${figures.ms} ms) written to bench/results/coverage.json\n`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main();
}
