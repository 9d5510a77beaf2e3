/**
 * Held-out tuning on simulated judges (`npm run bench -- tune`): how often `assay tune`'s
 * procedure finds a real improvement and confirms it on the held-out items, and how rarely it
 * claims one when there is none, beside what a naive "best on the tuning set" would claim.
 *
 * This measures the procedure's statistics (the split, the pick on the tuning set, the held-out
 * decision: shared/sweeps/tune.ts), on simulated per-item outcomes, not the CLI through a fake
 * vendor: each run draws, for every item, whether the original judge agrees with the gold, and
 * then whether each candidate does, given the original's outcome on that item. Candidates are
 * prompts of the same model, so their outcomes follow the original's: the `paired` model sets
 * P(candidate right | original right) and P(candidate right | original wrong) so that each has
 * the stated accuracy (an equal candidate flips 5% of the original's right answers and 15% of
 * its wrong ones; the better one keeps 98% of its right answers and fixes 66% of its errors).
 * The same runs with every outcome drawn independently (`independent`, no target) are printed
 * beside: McNemar has less power there, since many more items are discordant. The wire-level path (a fake vendor
 * whose answers depend on the demonstrations in the prompt) is tested once, end to end, in
 * test/e2e/tune-vendor.test.ts.
 *
 * - real: one of the candidates is truly better (0.90 against the original's 0.75), the others
 *   are as good as the original; tune must report an improvement on held-out in ≥ 90% of runs.
 * - null: every candidate is as good as the original (0.75); tune must report no improvement
 *   in ≥ 95% of runs, while a naive search that keeps the best on the tuning set and calls it
 *   better when it beats the original there claims one most of the time.
 *
 * Seeded (mulberry32), so the figures are the same on every machine. Results go to
 * bench/results/tune.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mulberry32 } from '../shared/lib/metrics/stats.js';
import { heldOutDecision, splitHeldOut } from '../shared/sweeps/tune.js';
import { ROOT } from './parts/data.js';
import { type Check, renderTable } from './parts/table.js';

export const TUNE_BENCH = {
  items: 300,
  labels: ['polite', 'neutral', 'rude'],
  heldOut: 0.3,
  candidates: 5,
  baseAccuracy: 0.75,
  betterAccuracy: 0.9,
  alpha: 0.05,
  runs: 1000,
  seed: 41_017,
  /** P(candidate right | original right), P(candidate right | original wrong), by the candidate's accuracy. */
  paired: { equal: [0.95, 0.15], better: [0.98, 0.66] },
} as const;

type Model = 'paired' | 'independent';

interface Rates {
  runs: number;
  /** Runs where tune reported `improved` (held-out, McNemar at alpha). */
  tuneImproved: number;
  /** Runs where the winner of the search was the truly better candidate (real setting). */
  pickedBetter: number;
  /** Runs where the best on the tuning set beat the original there: what a naive search would claim. */
  naiveImproved: number;
}

function simulate(setting: 'real' | 'null', model: Model): Rates {
  const s = TUNE_BENCH;
  const rates: Rates = { runs: s.runs, tuneImproved: 0, pickedBetter: 0, naiveImproved: 0 };
  for (let run = 0; run < s.runs; run += 1) {
    const random = mulberry32(s.seed + run * 7919 + (setting === 'real' ? 1 : 0));
    const ids = Array.from({ length: s.items }, (_, i) => `i${String(i).padStart(4, '0')}`);
    const gold = ids.map(() => s.labels[Math.floor(random() * s.labels.length)]!);
    const split = splitHeldOut(
      ids.map((id, i) => ({ id, stratum: gold[i]! })),
      { share: s.heldOut, seed: run + 1 },
    );
    const accuracies = Array.from({ length: s.candidates }, (_, k) =>
      setting === 'real' && k === s.candidates - 1 ? s.betterAccuracy : s.baseAccuracy,
    );
    const base = new Map(ids.map((id) => [id, random() < s.baseAccuracy]));
    const candidates = accuracies.map((p) => {
      const [ifRight, ifWrong] = p === s.betterAccuracy ? s.paired.better : s.paired.equal;
      return new Map(
        ids.map((id) => [id, random() < (model === 'independent' ? p : base.get(id) ? ifRight : ifWrong)]),
      );
    });
    const onTuning = (outcomes: Map<string, boolean>) =>
      split.tuning.filter((id) => outcomes.get(id)).length / split.tuning.length;
    const baseTuning = onTuning(base);
    const scores = candidates.map(onTuning);
    const best = scores.indexOf(Math.max(...scores));
    if (scores[best]! > baseTuning) rates.naiveImproved += 1;
    if (setting === 'real' && best === s.candidates - 1) rates.pickedBetter += 1;
    const [decision] = heldOutDecision(
      [
        {
          name: `c${best}`,
          pairs: split.heldOut.map((id) => ({ base: base.get(id)!, candidate: candidates[best]!.get(id)! })),
        },
      ],
      s.alpha,
    );
    if (decision!.improved) rates.tuneImproved += 1;
  }
  return rates;
}

export function tuneBench(): {
  figures: Record<string, Rates & { tuneRate: number; naiveRate: number }>;
  checks: Check[];
} {
  const share = (k: number, n: number) => +(k / n).toFixed(3);
  const figures: Record<string, Rates & { tuneRate: number; naiveRate: number }> = {};
  for (const model of ['paired', 'independent'] as const)
    for (const setting of ['real', 'null'] as const) {
      const r = simulate(setting, model);
      figures[`${setting}-${model}`] = {
        ...r,
        tuneRate: share(r.tuneImproved, r.runs),
        naiveRate: share(r.naiveImproved, r.runs),
      };
    }
  const s = TUNE_BENCH;
  const setup = `${s.items} items, ${s.heldOut * 100}% held out, ${s.candidates} candidates, ${s.runs} seeded runs`;
  const checks: Check[] = (['paired', 'independent'] as const).flatMap((model) => {
    const real = figures[`real-${model}`]!;
    const none = figures[`null-${model}`]!;
    const target = model === 'paired';
    return [
      {
        figure: `tune, ${model} outcomes: improvement found and confirmed on held-out (one candidate ${s.betterAccuracy} vs ${s.baseAccuracy}; ${setup})`,
        measured: String(real.tuneRate),
        bound: `naive best-on-tuning claims ${real.naiveRate}`,
        ...(target ? { target: '≥ 0.90', pass: real.tuneRate >= 0.9 } : {}),
      },
      {
        figure: `tune, ${model} outcomes: no false improvement (every candidate ${s.baseAccuracy}; ${setup})`,
        measured: String(share(none.runs - none.tuneImproved, none.runs)),
        bound: `naive best-on-tuning claims one in ${none.naiveRate}`,
        ...(target ? { target: '≥ 0.95', pass: 1 - none.tuneRate >= 0.95 } : {}),
      },
    ];
  });
  return { figures, checks };
}

export async function writeTuneBench(): Promise<string> {
  const { figures, checks } = tuneBench();
  const dir = join(ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'tune.json'),
    `${JSON.stringify({ setup: TUNE_BENCH, figures, checks }, null, 2)}\n`,
  );
  return `${renderTable(checks)}\n\nwritten to bench/results/tune.json\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(await writeTuneBench());
