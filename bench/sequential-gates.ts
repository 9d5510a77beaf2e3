/**
 * Sequential gates on simulated sweeps (`npx tsx bench/sequential-gates.ts`): how often a gate
 * settled early by an anytime-valid confidence sequence (shared/lib/metrics/sequential.ts)
 * gives the wrong verdict, and how many items it scores before it stops.
 *
 * A sweep of four variants with true accuracies 0.90, 0.85, 0.78 and 0.60 against the gate
 * `accuracy >= 0.8` at α = 0.05, on a dataset of 2,000 items. In each of 500 repetitions, per
 * variant, the dataset's outcomes are drawn (each item right with the variant's probability),
 * the items are scored in a random order, and the variant stops as soon as the CS (at
 * 2α/k = 0.1 for the k = 1 condition, without replacement from the 2,000 items) settles the
 * gate; a variant it never settles scores every item, and is judged on the full figure, as a
 * gate judges today. A verdict is wrong when it differs from the verdict the full run gives
 * (the dataset's realised accuracy against 0.8: the figure the gate is about); wrong against
 * the generating accuracy is reported beside it. Seeded (mulberry32, seed + repetition), so
 * the figures are the same on every machine.
 *
 * Beside it, a paired gate: `delta accuracy >= -0.02` (no worse than the baseline by more than
 * two points), on per-item differences in [−1, 1]; and the same sweep with the CS for
 * independent draws (no population) and with other values of the boundary's m.
 *
 * Results go to bench/results/sequential-gates.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DEFAULT_MIN_INTRINSIC_TIME,
  gateSequenceAlpha,
  MeanConfidenceSequence,
  type SequenceFigures,
  type SequentialCondition,
  settle,
} from '../shared/lib/metrics/sequential.js';
import { mulberry32 } from '../shared/lib/metrics/stats.js';
import { ROOT } from './parts/data.js';
import type { Check } from './parts/table.js';

export const SEQUENTIAL_GATES = {
  items: 2000,
  accuracies: [0.9, 0.85, 0.78, 0.6],
  threshold: 0.8,
  alpha: 0.05,
  repetitions: 500,
  seed: 60_221,
  /** The paired gate: variant ≥ baseline + margin, the baseline at `baselineAccuracy`. */
  paired: {
    baselineAccuracy: 0.85,
    accuracies: [0.88, 0.85, 0.8],
    margin: -0.02,
    /** Share of items where the variant's outcome follows the baseline's (the rest drawn afresh). */
    agreement: 0.8,
  },
  /** Values of the boundary's m compared (the default among them). */
  minIntrinsicTimes: [1, 5, DEFAULT_MIN_INTRINSIC_TIME, 50],
} as const;

type Setup = typeof SEQUENTIAL_GATES;

export interface VariantFigures {
  accuracy: number;
  /** Share of repetitions whose verdict differs from the full run's. */
  wrongVerdicts: number;
  /** Share whose verdict differs from the generating accuracy's (accuracy ≥ threshold). */
  wrongAgainstGeneratingAccuracy: number;
  promoted: number;
  /** Share of repetitions settled before every item was scored. */
  settledEarly: number;
  meanItems: number;
  medianItems: number;
  p90Items: number;
  /** 1 − mean items / items: the share of model calls a sequential gate saves. */
  callsSaved: number;
}

export interface SequentialGatesFigures {
  setup: Setup;
  /** The level each condition's CS is built at (2α/k, k = 1). */
  sequenceAlpha: number;
  minIntrinsicTime: number;
  variants: VariantFigures[];
  paired: VariantFigures[];
  /** Mean items per variant with the CS for independent draws (the population left out). */
  independentDrawsMeanItems: number[];
  /** Mean items per variant, by the boundary's m. */
  meanItemsByMinIntrinsicTime: Record<string, number[]>;
  /** Monte Carlo standard error of an error share at α: √(α(1 − α) / repetitions). */
  errorStandardError: number;
  ms: number;
}

interface Stream {
  /** The per-item observations in the order they are scored. */
  values: Float64Array;
  range: readonly [number, number];
  condition: (figures: SequenceFigures) => SequentialCondition;
  /** The full run's verdict, and the verdict of the generating parameters. */
  fullRun: boolean;
  generating: boolean;
}

interface Options {
  population: boolean;
  minIntrinsicTime: number;
}

/** Scores the stream until the gate settles; the items used and the verdict. */
function runStream(stream: Stream, alpha: number, options: Options): { items: number; promoted: boolean } {
  const cs = new MeanConfidenceSequence({
    alpha,
    range: stream.range,
    population: options.population ? stream.values.length : undefined,
    minIntrinsicTime: options.minIntrinsicTime,
  });
  for (let i = 0; i < stream.values.length; i += 1) {
    const { verdict } = settle([stream.condition(cs.update(stream.values[i]!))]);
    if (verdict !== 'undecided') return { items: i + 1, promoted: verdict === 'promote' };
  }
  // Never settled (possible only for independent draws): judged on the full figure.
  return { items: stream.values.length, promoted: stream.fullRun };
}

function shuffle(values: Float64Array, random: () => number): void {
  for (let i = values.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [values[i], values[j]] = [values[j]!, values[i]!];
  }
}

/** The threshold gate's stream for one variant in one repetition. */
function thresholdStream(setup: Setup, accuracy: number, random: () => number): Stream {
  const values = new Float64Array(setup.items);
  let right = 0;
  for (let i = 0; i < setup.items; i += 1) {
    values[i] = random() < accuracy ? 1 : 0;
    right += values[i]!;
  }
  shuffle(values, random);
  return {
    values,
    range: [0, 1],
    condition: (figures) => ({ kind: 'threshold', figures, op: '>=', value: setup.threshold }),
    fullRun: right / setup.items >= setup.threshold,
    generating: accuracy >= setup.threshold,
  };
}

/** The paired gate's stream: per item, the variant's 0/1 outcome minus the baseline's. */
function pairedStream(setup: Setup, accuracy: number, random: () => number): Stream {
  const { baselineAccuracy, margin, agreement } = setup.paired;
  const values = new Float64Array(setup.items);
  let total = 0;
  for (let i = 0; i < setup.items; i += 1) {
    // A shared difficulty: the variant reuses the baseline's draw on `agreement` of the items.
    const u = random();
    const baseline = u < baselineAccuracy ? 1 : 0;
    const v = random() < agreement ? u : random();
    values[i] = (v < accuracy ? 1 : 0) - baseline;
    total += values[i]!;
  }
  shuffle(values, random);
  return {
    values,
    range: [-1, 1],
    condition: (figures) => ({ kind: 'baseline', figures, op: '>=', margin }),
    fullRun: total / setup.items >= margin,
    generating: accuracy - baselineAccuracy >= margin,
  };
}

function summarise(
  accuracy: number,
  runs: { items: number; promoted: boolean; fullRun: boolean; generating: boolean }[],
  items: number,
): VariantFigures {
  const share = (pred: (r: (typeof runs)[number]) => boolean) => runs.filter(pred).length / runs.length;
  const used = runs.map((r) => r.items).sort((a, b) => a - b);
  const meanItems = used.reduce((a, b) => a + b, 0) / used.length;
  return {
    accuracy,
    wrongVerdicts: share((r) => r.promoted !== r.fullRun),
    wrongAgainstGeneratingAccuracy: share((r) => r.promoted !== r.generating),
    promoted: share((r) => r.promoted),
    settledEarly: share((r) => r.items < items),
    meanItems,
    medianItems: used[Math.floor(used.length / 2)]!,
    p90Items: used[Math.floor(used.length * 0.9)]!,
    callsSaved: 1 - meanItems / items,
  };
}

function simulate(
  setup: Setup,
  accuracies: readonly number[],
  make: (setup: Setup, accuracy: number, random: () => number) => Stream,
  seedOffset: number,
  options: Options,
): VariantFigures[] {
  const alpha = gateSequenceAlpha(setup.alpha, 1);
  return accuracies.map((accuracy, v) => {
    const runs = [];
    for (let rep = 0; rep < setup.repetitions; rep += 1) {
      const stream = make(setup, accuracy, mulberry32(setup.seed + seedOffset + 100_000 * v + rep));
      runs.push({
        ...runStream(stream, alpha, options),
        fullRun: stream.fullRun,
        generating: stream.generating,
      });
    }
    return summarise(accuracy, runs, setup.items);
  });
}

/** Runs the simulations; the figures, and the bench's rows with their targets. */
export function sequentialGates(setup: Setup = SEQUENTIAL_GATES): {
  figures: SequentialGatesFigures;
  checks: Check[];
} {
  const started = performance.now();
  const standard = { population: true, minIntrinsicTime: DEFAULT_MIN_INTRINSIC_TIME };
  const variants = simulate(setup, setup.accuracies, thresholdStream, 0, standard);
  const paired = simulate(setup, setup.paired.accuracies, pairedStream, 1_000_000, standard);
  const independent = simulate(setup, setup.accuracies, thresholdStream, 0, {
    ...standard,
    population: false,
  });
  const meanItemsByMinIntrinsicTime: Record<string, number[]> = {};
  for (const m of setup.minIntrinsicTimes)
    meanItemsByMinIntrinsicTime[String(m)] =
      m === DEFAULT_MIN_INTRINSIC_TIME
        ? variants.map((v) => v.meanItems)
        : simulate(setup, setup.accuracies, thresholdStream, 0, {
            population: true,
            minIntrinsicTime: m,
          }).map((v) => v.meanItems);
  const figures: SequentialGatesFigures = {
    setup,
    sequenceAlpha: gateSequenceAlpha(setup.alpha, 1),
    minIntrinsicTime: DEFAULT_MIN_INTRINSIC_TIME,
    variants,
    paired,
    independentDrawsMeanItems: independent.map((v) => v.meanItems),
    meanItemsByMinIntrinsicTime,
    errorStandardError: Math.sqrt((setup.alpha * (1 - setup.alpha)) / setup.repetitions),
    ms: Math.round(performance.now() - started),
  };
  const worst = Math.max(...variants.map((v) => v.wrongVerdicts), ...paired.map((v) => v.wrongVerdicts));
  const used = variants.reduce((a, v) => a + v.meanItems, 0);
  const checks: Check[] = [
    {
      figure: `sequential gate accuracy >= ${setup.threshold}: wrong verdicts, ${setup.repetitions} sweeps of ${setup.accuracies.length} variants (${setup.items} items)`,
      measured: `worst ${pct(worst)} (${variants.map((v) => `${v.accuracy}: ${pct(v.wrongVerdicts)}`).join(', ')})`,
      bound: `paired delta >= ${setup.paired.margin}: ${paired.map((v) => pct(v.wrongVerdicts)).join(', ')}`,
      target: `≤ α = ${pct(setup.alpha)}`,
      pass: worst <= setup.alpha,
    },
    {
      figure: '  sequential gate: model calls saved vs scoring every item',
      measured: `${pct(1 - used / (setup.items * variants.length))} (${variants.map((v) => `${v.accuracy}: ${v.meanItems.toFixed(0)} items`).join(', ')})`,
      bound: `independent-draws CS: ${figures.independentDrawsMeanItems.map((n) => n.toFixed(0)).join(', ')} items`,
    },
  ];
  return { figures, checks };
}

const pct = (share: number) => `${(share * 100).toFixed(1)} %`;

function table(rows: VariantFigures[], label: (v: VariantFigures) => string): string[] {
  const head = `  ${'variant'.padEnd(22)}${'wrong'.padStart(8)}${'wrong*'.padStart(8)}${'promoted'.padStart(10)}${'early'.padStart(8)}${'mean n'.padStart(8)}${'median'.padStart(8)}${'p90'.padStart(7)}${'saved'.padStart(8)}`;
  return [
    head,
    ...rows.map(
      (v) =>
        `  ${label(v).padEnd(22)}${pct(v.wrongVerdicts).padStart(8)}${pct(v.wrongAgainstGeneratingAccuracy).padStart(8)}${pct(v.promoted).padStart(10)}${pct(v.settledEarly).padStart(8)}${v.meanItems.toFixed(0).padStart(8)}${String(v.medianItems).padStart(8)}${String(v.p90Items).padStart(7)}${pct(v.callsSaved).padStart(8)}`,
    ),
  ];
}

export function renderSequentialGates(f: SequentialGatesFigures): string {
  const s = f.setup;
  const total = f.variants.reduce((a, v) => a + v.meanItems, 0);
  return [
    `Sequential gates: ${s.repetitions} sweeps, ${s.items} items, α = ${s.alpha} (each CS at ${f.sequenceAlpha}), m = ${f.minIntrinsicTime} (${f.ms} ms)`,
    `gate accuracy >= ${s.threshold}`,
    ...table(f.variants, (v) => `accuracy ${v.accuracy}`),
    `  whole sweep: ${total.toFixed(0)} of ${s.items * f.variants.length} calls (${pct(1 - total / (s.items * f.variants.length))} saved)`,
    `gate delta accuracy >= ${s.paired.margin} (baseline ${s.paired.baselineAccuracy}, outcomes shared on ${pct(s.paired.agreement)} of items)`,
    ...table(f.paired, (v) => `accuracy ${v.accuracy}`),
    "  wrong: vs the full run's verdict (the target); wrong*: vs the generating accuracy; early: settled before the last item",
    `mean items, CS for independent draws (no finite-population correction): ${f.independentDrawsMeanItems.map((n) => n.toFixed(0)).join(', ')}`,
    ...Object.entries(f.meanItemsByMinIntrinsicTime).map(
      ([m, items]) =>
        `mean items, m = ${m.padEnd(3)}: ${items.map((n) => n.toFixed(0).padStart(5)).join(' ')}  (sum ${items.reduce((a, b) => a + b, 0).toFixed(0)})`,
    ),
    `Monte Carlo standard error of an error share near α: ${pct(f.errorStandardError)}`,
    '',
  ].join('\n');
}

async function main() {
  const { figures } = sequentialGates();
  const dir = join(ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'sequential-gates.json'),
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, ...figures }, null, 2)}\n`,
  );
  process.stdout.write(`${renderSequentialGates(figures)}written to bench/results/sequential-gates.json\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main();
}
