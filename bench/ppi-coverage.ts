/**
 * Coverage of the prediction-powered intervals for a share of a label
 * (`npx tsx bench/ppi-coverage.ts`; also a part of `npm run bench`).
 *
 * Two scenarios. First, PPI++ with gold on a random sample:
 * A simulated dataset of 20,000 items, each truly positive with probability 0.6, judged by a
 * biased judge (sensitivity 0.85, specificity 0.90, so the judge's share is about
 * 0.6·0.85 + 0.4·0.10 = 0.55, off by −0.05), with gold on 300 items drawn at random. Repeated
 * 200 times from seeded generators (mulberry32, seed + repetition), it reports how often the
 * PPI interval covers the true share (target ≥ 0.93 at a 95 % level), its mean width beside the
 * classical interval's (gold only) and plain PPI's (λ = 1), the judge-only bias, and the
 * effective number of labels. The true share is the generating probability (0.6); coverage of
 * each dataset's realised share of positives is reported beside it.
 *
 * Second, labels chosen as `assay label` chooses them (see {@link ACTIVE_SIMULATION}): 1,000
 * datasets of 1,000 items; the judge calls 60 % positive and states a calibrated confidence d
 * in its verdict (the chance it is right: d = 0.55 + 0.3·U on a positive verdict, 0.9 + 0.1·U
 * on a negative one, U uniform; the item's truth is then drawn to make it so, and the true
 * prevalence is 0.6·0.7 + 0.4·0.05 = 0.44); 200 labels drawn by `sampleForLabels` with the
 * probabilities the uncertainty
 * √(1 − d) gives (label-uncertainty.ts reads a stated confidence so). It reports the coverage,
 * bias and mean width of the active-inference interval (what a gold file with `p` gets), beside
 * PPI++ weighted by 1/p over the items left out (what such a gold file got before), PPI++ on 200
 * labels drawn uniformly, and a mixed design: 5 % of the items labelled at random in the
 * dataset, then 200 chosen by `sampleForLabels` among the rest (π = 1 for the first, p for the
 * others, as a run combines them).
 *
 * Results go to bench/results/ppi-coverage.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sampleForLabels } from '../shared/lib/metrics/label-selection.js';
import { activeMean, ppiMean } from '../shared/lib/metrics/ppi.js';
import { mulberry32 } from '../shared/lib/metrics/stats.js';
import { ROOT } from './parts/data.js';
import type { Check } from './parts/table.js';

export const PPI_SIMULATION = {
  items: 20_000,
  labelled: 300,
  prevalence: 0.6,
  sensitivity: 0.85,
  specificity: 0.9,
  repetitions: 200,
  alpha: 0.05,
  seed: 20_231,
  /** The coverage the interval must reach over the repetitions. */
  coverageTarget: 0.93,
} as const;

/** The second scenario: labels chosen by `assay label`'s own draw (see the module comment). */
export const ACTIVE_SIMULATION = {
  items: 1_000,
  labelled: 200,
  /** The share of items the judge calls positive; the prevalence is then 0.6·0.7 + 0.4·0.05 = 0.44. */
  judgedPositive: 0.6,
  judge: 'calibrated confidence d: 0.55 + 0.3·U on a positive verdict, 0.9 + 0.1·U on a negative one',
  /** The mixed design's share of items labelled at random in the dataset before the draw. */
  randomFirst: 0.05,
  repetitions: 1_000,
  alpha: 0.05,
  seed: 40_117,
  coverageTarget: 0.93,
} as const;

/** One estimator's figures over the second scenario's repetitions. */
export interface EstimatorCoverage {
  /** Share of repetitions whose interval contains the generating prevalence. */
  coverage: number;
  /** Share whose interval contains that dataset's realised share of positives. */
  coverageOfRealisedShare: number;
  /** Mean of (estimate − prevalence). */
  bias: number;
  meanCiWidth: number;
}

export interface ActiveCoverageFigures {
  setup: typeof ACTIVE_SIMULATION;
  /** The active-inference interval, on `sampleForLabels`'s draw. */
  active: EstimatorCoverage;
  /** PPI++ weighted by 1/p, the judge's mean over the items not chosen (the estimate before). */
  weightedPpi: EstimatorCoverage;
  /** PPI++ on as many labels drawn uniformly. */
  uniform: EstimatorCoverage;
  /** Random labels in the dataset, then `sampleForLabels` among the rest: active inference, π = 1 and p. */
  mixed: EstimatorCoverage;
  coverageStandardError: number;
  ms: number;
}

export interface PpiCoverageFigures {
  setup: typeof PPI_SIMULATION;
  /** Share of repetitions whose interval contains the generating prevalence. */
  coverage: { ppi: number; plainPpi: number; classical: number };
  /** Share of repetitions whose PPI interval contains that dataset's realised share. */
  coverageOfRealisedShare: number;
  /**
   * Monte Carlo standard error of a coverage near its nominal level, √(α(1 − α) / repetitions):
   * how far a coverage measured over these repetitions may stray from the true one by chance.
   */
  coverageStandardError: number;
  meanCiWidth: { ppi: number; plainPpi: number; classical: number; ppiOverClassical: number };
  /** Mean of (estimate − prevalence) over the repetitions. */
  bias: { ppi: number; classical: number; judgeOnly: number };
  meanLambda: number;
  meanEffectiveLabels: number;
  ms: number;
  /** The second scenario. */
  activeSelection: ActiveCoverageFigures;
}

/** Runs the simulation; the figures, and the bench's rows with their targets. */
export function ppiCoverage(setup = PPI_SIMULATION): { figures: PpiCoverageFigures; checks: Check[] } {
  const started = performance.now();
  const { items, labelled, prevalence, sensitivity, specificity, repetitions, alpha, seed } = setup;
  const covered = { ppi: 0, plainPpi: 0, classical: 0, realised: 0 };
  const widths = { ppi: 0, plainPpi: 0, classical: 0 };
  const bias = { ppi: 0, classical: 0, judgeOnly: 0 };
  let lambdas = 0;
  let effective = 0;
  const truth = new Uint8Array(items);
  const judged = new Uint8Array(items);
  const order = new Uint32Array(items);
  const within = ([lo, hi]: [number, number], value: number) => lo <= value && value <= hi;

  for (let rep = 0; rep < repetitions; rep += 1) {
    const random = mulberry32(seed + rep);
    let positives = 0;
    for (let i = 0; i < items; i += 1) {
      truth[i] = random() < prevalence ? 1 : 0;
      judged[i] = truth[i] ? (random() < sensitivity ? 1 : 0) : random() < specificity ? 0 : 1;
      positives += truth[i]!;
      order[i] = i;
    }
    // Gold on `labelled` items drawn without replacement (a partial Fisher–Yates shuffle).
    for (let i = 0; i < labelled; i += 1) {
      const j = i + Math.floor(random() * (items - i));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const isLabelled = new Uint8Array(items);
    const gold: number[] = [];
    const judge: number[] = [];
    for (let i = 0; i < labelled; i += 1) {
      const item = order[i]!;
      isLabelled[item] = 1;
      gold.push(truth[item]!);
      judge.push(judged[item]!);
    }
    const judgeUnlabelled: number[] = [];
    for (let i = 0; i < items; i += 1) if (!isLabelled[i]) judgeUnlabelled.push(judged[i]!);

    const tuned = ppiMean({ gold, judge, judgeUnlabelled, alpha });
    const plain = ppiMean({ gold, judge, judgeUnlabelled, alpha, lambda: 1 });
    if (!tuned.ci || !plain.ci || !tuned.classical.ci) throw new Error('the simulation has too few labels');
    covered.ppi += within(tuned.ci, prevalence) ? 1 : 0;
    covered.plainPpi += within(plain.ci, prevalence) ? 1 : 0;
    covered.classical += within(tuned.classical.ci, prevalence) ? 1 : 0;
    covered.realised += within(tuned.ci, positives / items) ? 1 : 0;
    widths.ppi += tuned.ci[1] - tuned.ci[0];
    widths.plainPpi += plain.ci[1] - plain.ci[0];
    widths.classical += tuned.classical.ci[1] - tuned.classical.ci[0];
    bias.ppi += tuned.estimate! - prevalence;
    bias.classical += tuned.classical.estimate! - prevalence;
    bias.judgeOnly += tuned.judgeOnly.estimate! - prevalence;
    lambdas += tuned.lambda!;
    effective += tuned.effectiveLabels!;
  }

  const per = (total: number) => total / repetitions;
  const figures: PpiCoverageFigures = {
    setup,
    coverage: { ppi: per(covered.ppi), plainPpi: per(covered.plainPpi), classical: per(covered.classical) },
    coverageOfRealisedShare: per(covered.realised),
    coverageStandardError: Math.sqrt((alpha * (1 - alpha)) / repetitions),
    meanCiWidth: {
      ppi: per(widths.ppi),
      plainPpi: per(widths.plainPpi),
      classical: per(widths.classical),
      ppiOverClassical: widths.ppi / widths.classical,
    },
    bias: { ppi: per(bias.ppi), classical: per(bias.classical), judgeOnly: per(bias.judgeOnly) },
    meanLambda: per(lambdas),
    meanEffectiveLabels: per(effective),
    ms: Math.round(performance.now() - started),
    activeSelection: activeCoverage(),
  };
  const f = figures;
  const a = f.activeSelection;
  const as = a.setup;
  const checks: Check[] = [
    {
      figure: `PPI++ 95 % CI coverage, ${repetitions} simulated datasets (${items} items, ${labelled} gold)`,
      measured: `${pct(f.coverage.ppi)} ± ${pct(f.coverageStandardError)} (of the realised share: ${pct(f.coverageOfRealisedShare)})`,
      bound: `classical ${pct(f.coverage.classical)}, plain PPI ${pct(f.coverage.plainPpi)}`,
      target: `≥ ${pct(setup.coverageTarget)}`,
      pass: f.coverage.ppi >= setup.coverageTarget,
    },
    {
      figure: '  PPI++ CI width vs classical (gold only)',
      measured: `${f.meanCiWidth.ppi.toFixed(4)} (${f.meanEffectiveLabels.toFixed(0)} effective labels, λ ${f.meanLambda.toFixed(2)})`,
      bound: `classical ${f.meanCiWidth.classical.toFixed(4)}; judge-only bias ${f.bias.judgeOnly.toFixed(4)}`,
      target: 'narrower than classical',
      pass: f.meanCiWidth.ppi < f.meanCiWidth.classical,
    },
    {
      figure: `PPI 95 % CI coverage, labels chosen by sampleForLabels, ${as.repetitions} datasets (${as.items} items, ${as.labelled} chosen)`,
      measured: `${pct(a.active.coverage)} ± ${pct(a.coverageStandardError)}, bias ${a.active.bias.toFixed(4)}, width ${a.active.meanCiWidth.toFixed(4)}`,
      bound: `PPI++ weighted 1/p ${pct(a.weightedPpi.coverage)} (bias ${a.weightedPpi.bias.toFixed(4)}); uniform labels ${pct(a.uniform.coverage)}`,
      target: `≥ ${pct(as.coverageTarget)}`,
      pass: a.active.coverage >= as.coverageTarget,
    },
    {
      figure: `  mixed design: ${pct(as.randomFirst)} random gold, then ${as.labelled} chosen among the rest`,
      measured: `${pct(a.mixed.coverage)}, bias ${a.mixed.bias.toFixed(4)}, width ${a.mixed.meanCiWidth.toFixed(4)}`,
      bound: 'π = 1 for the dataset’s labels, p for the chosen',
      target: `≥ ${pct(as.coverageTarget)}`,
      pass: a.mixed.coverage >= as.coverageTarget,
    },
  ];
  return { figures, checks };
}

const pct = (share: number) => `${(share * 100).toFixed(1)} %`;

/** The second scenario (see the module comment and {@link ACTIVE_SIMULATION}). */
export function activeCoverage(setup = ACTIVE_SIMULATION): ActiveCoverageFigures {
  const started = performance.now();
  const { items, labelled, judgedPositive, randomFirst, repetitions, alpha, seed } = setup;
  // P(Y = 1) = P(f = 1)·E[d | f = 1] + P(f = 0)·(1 − E[d | f = 0]).
  const prevalence = judgedPositive * 0.7 + (1 - judgedPositive) * 0.05;
  const kinds = ['active', 'weightedPpi', 'uniform', 'mixed'] as const;
  const totals = Object.fromEntries(
    kinds.map((k) => [k, { covered: 0, realised: 0, bias: 0, width: 0 }]),
  ) as Record<(typeof kinds)[number], { covered: number; realised: number; bias: number; width: number }>;
  const truth = new Uint8Array(items);
  const judged = new Uint8Array(items);
  const uncertainty = new Array<number>(items);
  const tally = (
    kind: (typeof kinds)[number],
    r: { estimate: number | null; ci: [number, number] | null },
    share: number,
  ) => {
    if (r.estimate === null || !r.ci) throw new Error('the simulation has too few labels');
    const t = totals[kind];
    t.covered += r.ci[0] <= prevalence && prevalence <= r.ci[1] ? 1 : 0;
    t.realised += r.ci[0] <= share && share <= r.ci[1] ? 1 : 0;
    t.bias += r.estimate - prevalence;
    t.width += r.ci[1] - r.ci[0];
  };
  /** Gold, judge and the unlabelled judge values of the items `chosen` (by index). */
  const split = (chosen: readonly number[]) => {
    const isChosen = new Uint8Array(items);
    for (const i of chosen) isChosen[i] = 1;
    const judgeUnlabelled: number[] = [];
    for (let i = 0; i < items; i += 1) if (!isChosen[i]) judgeUnlabelled.push(judged[i]!);
    return { gold: chosen.map((i) => truth[i]!), judge: chosen.map((i) => judged[i]!), judgeUnlabelled };
  };

  for (let rep = 0; rep < repetitions; rep += 1) {
    const random = mulberry32(seed + rep);
    let positives = 0;
    for (let i = 0; i < items; i += 1) {
      // The verdict first, then how sure the judge is of it, then the truth that makes it right
      // with that probability: a calibrated judge, unsure of its positives.
      judged[i] = random() < judgedPositive ? 1 : 0;
      const sure = judged[i] ? 0.55 + 0.3 * random() : 0.9 + 0.1 * random();
      truth[i] = random() < sure ? judged[i]! : 1 - judged[i]!;
      uncertainty[i] = Math.sqrt(1 - sure);
      positives += truth[i]!;
    }
    const share = positives / items;

    const draw = sampleForLabels(uncertainty, labelled, seed * 7 + rep);
    const p = draw.chosen.map((i) => draw.probabilities[i]!);
    const rows = split(draw.chosen);
    tally('active', activeMean({ ...rows, probabilities: p, alpha }), share);
    tally('weightedPpi', ppiMean({ ...rows, weights: p.map((x) => 1 / x), alpha }), share);

    const order = Array.from({ length: items }, (_, i) => i);
    for (let i = 0; i < labelled; i += 1) {
      const j = i + Math.floor(random() * (items - i));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    tally('uniform', ppiMean({ ...split(order.slice(0, labelled)), alpha }), share);

    const first: number[] = [];
    const rest: number[] = [];
    for (let i = 0; i < items; i += 1) (random() < randomFirst ? first : rest).push(i);
    const then = sampleForLabels(
      rest.map((i) => uncertainty[i]!),
      labelled,
      seed * 11 + rep,
    );
    const mixedChosen = [...first, ...then.chosen.map((k) => rest[k]!)];
    const mixedP = [...first.map(() => 1), ...then.chosen.map((k) => then.probabilities[k]!)];
    tally('mixed', activeMean({ ...split(mixedChosen), probabilities: mixedP, alpha }), share);
  }
  const of = (kind: (typeof kinds)[number]): EstimatorCoverage => {
    const t = totals[kind];
    return {
      coverage: t.covered / repetitions,
      coverageOfRealisedShare: t.realised / repetitions,
      bias: t.bias / repetitions,
      meanCiWidth: t.width / repetitions,
    };
  };
  return {
    setup,
    active: of('active'),
    weightedPpi: of('weightedPpi'),
    uniform: of('uniform'),
    mixed: of('mixed'),
    coverageStandardError: Math.sqrt((alpha * (1 - alpha)) / repetitions),
    ms: Math.round(performance.now() - started),
  };
}

export function renderPpiCoverage(f: PpiCoverageFigures): string {
  const s = f.setup;
  return [
    `PPI++ coverage: ${s.repetitions} datasets of ${s.items} items, gold on ${s.labelled}, prevalence ${s.prevalence},`,
    `judge sensitivity ${s.sensitivity} / specificity ${s.specificity}, ${pct(1 - s.alpha)} intervals (${f.ms} ms)`,
    `  coverage of the prevalence   PPI++ ${pct(f.coverage.ppi)} (target ≥ ${pct(s.coverageTarget)}: ${f.coverage.ppi >= s.coverageTarget ? 'PASS' : 'FAIL'}), plain PPI ${pct(f.coverage.plainPpi)}, classical ${pct(f.coverage.classical)}`,
    `  coverage of the realised share  PPI++ ${pct(f.coverageOfRealisedShare)} (Monte Carlo standard error of a coverage: ${pct(f.coverageStandardError)})`,
    `  mean CI width                PPI++ ${f.meanCiWidth.ppi.toFixed(4)}, plain PPI ${f.meanCiWidth.plainPpi.toFixed(4)}, classical ${f.meanCiWidth.classical.toFixed(4)} (PPI++ / classical ${f.meanCiWidth.ppiOverClassical.toFixed(3)})`,
    `  mean bias                    PPI++ ${f.bias.ppi.toFixed(4)}, classical ${f.bias.classical.toFixed(4)}, judge only ${f.bias.judgeOnly.toFixed(4)}`,
    `  mean λ ${f.meanLambda.toFixed(3)}; effective labels ${f.meanEffectiveLabels.toFixed(1)} (from ${s.labelled} gold)`,
    ...renderActive(f.activeSelection),
    '',
  ].join('\n');
}

function renderActive(a: ActiveCoverageFigures): string[] {
  const s = a.setup;
  const prevalence = s.judgedPositive * 0.7 + (1 - s.judgedPositive) * 0.05;
  const row = (name: string, e: EstimatorCoverage) =>
    `  ${name.padEnd(36)} ${pct(e.coverage).padStart(7)} ${pct(e.coverageOfRealisedShare).padStart(9)}  ${e.bias.toFixed(4).padStart(8)}  ${e.meanCiWidth.toFixed(4)}`;
  return [
    `Labels chosen by assay label's draw: ${s.repetitions} datasets of ${s.items} items, ${s.labelled} labels, prevalence ${prevalence.toFixed(2)},`,
    `judge with a ${s.judge} (${a.ms} ms; Monte Carlo standard error ${pct(a.coverageStandardError)})`,
    `  ${'estimator'.padEnd(36)} coverage  realised      bias  mean width`,
    row(`active inference (target ≥ ${pct(s.coverageTarget)})`, a.active),
    row('PPI++ weighted 1/p (before)', a.weightedPpi),
    row('PPI++, uniform labels', a.uniform),
    row(`mixed: ${pct(s.randomFirst)} random, then chosen`, a.mixed),
    `  active inference ${a.active.coverage >= s.coverageTarget ? 'PASS' : 'FAIL'}; mixed design ${a.mixed.coverage >= s.coverageTarget ? 'PASS' : 'FAIL'}`,
  ];
}

async function main() {
  const { figures } = ppiCoverage();
  const dir = join(ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'ppi-coverage.json'),
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, ...figures }, null, 2)}\n`,
  );
  process.stdout.write(`${renderPpiCoverage(figures)}written to bench/results/ppi-coverage.json\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main();
}
