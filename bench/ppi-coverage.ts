/**
 * Coverage of the prediction-powered (PPI++) interval for a share of a label
 * (`npx tsx bench/ppi-coverage.ts`; also a part of `npm run bench`).
 *
 * A simulated dataset of 20,000 items, each truly positive with probability 0.6, judged by a
 * biased judge (sensitivity 0.85, specificity 0.90, so the judge's share is about
 * 0.6·0.85 + 0.4·0.10 = 0.55, off by −0.05), with gold on 300 items drawn at random. Repeated
 * 200 times from seeded generators (mulberry32, seed + repetition), it reports how often the
 * PPI interval covers the true share (target ≥ 0.93 at a 95 % level), its mean width beside the
 * classical interval's (gold only) and plain PPI's (λ = 1), the judge-only bias, and the
 * effective number of labels. The true share is the generating probability (0.6); coverage of
 * each dataset's realised share of positives is reported beside it.
 *
 * Results go to bench/results/ppi-coverage.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ppiMean } from '../shared/lib/metrics/ppi.js';
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
  };
  const f = figures;
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
  ];
  return { figures, checks };
}

const pct = (share: number) => `${(share * 100).toFixed(1)} %`;

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
    '',
  ].join('\n');
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
