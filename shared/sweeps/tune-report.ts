import { num, pValue, signed, usd } from '../lib/format.js';
import type { HeldOutComparison } from './tune.js';

/** A candidate's figures on the tuning set: agreement with the gold of the tuning items. */
export interface TuningFigures {
  n: number;
  correct: number;
  accuracy: number;
  /** Its accuracy minus the original judge's on the same items: what candidates are ranked by. */
  vsOriginal: number;
  costUsd: number;
}

export interface TuneCandidate {
  name: string;
  /** The round it was scored in: 1, the suite's own variants; 2, the demonstrations. */
  round: number;
  kind: string;
  /** The variant as the tuning suites declare it (not written to the report). */
  variant: Record<string, unknown> & { name: string };
  /** The candidate's own judge prompt file, when it has one (path under prompts/ in the output folder). */
  prompt?: { path: string; hash: string; diff: string[] };
  /** Ids of the tuning items shown as demonstrations. */
  demonstrations?: string[];
  tuning: TuningFigures;
}

/** `report.json` of `assay tune`. */
export interface TuneReport {
  suite: string;
  simulated: boolean;
  seed: number;
  alpha: number;
  /** What "correct" means for an item: the judge's primary scorer agreeing with the gold. */
  metric: string;
  labelled: number;
  tuningN: number;
  /** sha256 of the held-out ids (sorted, one a line): no run of the search read any of them. */
  heldOutDigest: string;
  /** True only when the held-out comparison shows the winner better at alpha (Holm over the finalists). */
  improved: boolean;
  winner: string;
  /** The winner against the original judge on the held-out items. */
  heldOut: Omit<HeldOutComparison, 'name' | 'improved'>;
  finalists: HeldOutComparison[];
  original: { name: string; prompt: { path: string; hash: string }; tuning: TuningFigures };
  candidates: Omit<TuneCandidate, 'variant'>[];
  /** The tuned prompt written beside the original, when the held-out comparison shows the improvement. */
  tunedPrompt: { path: string; hash: string } | null;
  /** A suite (in the output folder) that runs the tuned prompt on every row of the dataset, when the winner is the few-shot prompt. */
  tunedSuite: string | null;
  sweeps: { tuning: string[]; heldOut: string };
  costUsd: number;
}

/** The winner's prompt against the original's, line by line (nothing when it has no prompt of its own or the same). */
function winnerDiff(r: TuneReport): string[] {
  const prompt = r.candidates.find((c) => c.name === r.winner)?.prompt;
  if (!prompt || prompt.diff.length === 0) return [];
  return [
    `Prompt of ${r.winner} (${prompt.path}) against ${r.original.prompt.path}:`,
    ...prompt.diff.map((l) => `  ${l}`),
    '',
  ];
}

/** `report.txt`: the held-out verdict first, then what the search tried. */
export function renderTuneText(r: TuneReport): string {
  const h = r.heldOut;
  const ci = h.delta.ci ? `[${signed(h.delta.ci[0])}, ${signed(h.delta.ci[1])}]` : 'n/a';
  const lines = [
    ...(r.simulated
      ? [
          'SIMULATED: every answer came from the simulator (the gold with noise, whatever the prompt says);',
          'these figures show the procedure, not whether a prompt is better.',
          '',
        ]
      : []),
    `Assay tune — ${r.suite}`,
    `${r.labelled} labelled items: ${r.tuningN} to tune on, ${h.n} held out (seed ${r.seed})`,
    `held-out ids digest ${r.heldOutDigest}: no candidate, demonstration or tuning run read these items`,
    '',
    `Held out (${r.metric}, scored once): ${r.winner} against the original judge`,
    `  before ${num(h.before)}   after ${num(h.after)}   Δ ${signed(h.delta.value)}  95% CI ${ci}   McNemar p ${pValue(h.pValue)}${
      r.finalists.length > 1
        ? `   Holm-adjusted p ${pValue(h.adjustedP)} over ${r.finalists.length} finalists`
        : ''
    }`,
    r.improved
      ? `  IMPROVED on held-out at alpha ${r.alpha}: the tuned prompt is ${r.tunedPrompt?.path ?? `variant ${r.winner}`}${
          r.tunedSuite ? `; assay run ${r.tunedSuite} runs it on every row` : ''
        }`
      : `  no improvement on held-out at alpha ${r.alpha}: keep the original judge`,
    '',
    ...winnerDiff(r),
    `Tuning set (${r.tuningN} items; the figures the search chose by, optimistic for the winner):`,
    `  ${'candidate'.padEnd(20)} ${'round'.padStart(5)} ${'n'.padStart(4)} ${r.metric.padStart(16)} ${'vs original'.padStart(11)}  kind`,
    `  ${(r.original.name === 'original' ? 'original' : `${r.original.name} (original)`).padEnd(20)} ${'1'.padStart(5)} ${String(r.original.tuning.n).padStart(4)} ${num(r.original.tuning.accuracy).padStart(16)} ${''.padStart(11)}  ${r.original.prompt.path}`,
    ...r.candidates.map(
      (c) =>
        `  ${c.name.padEnd(20)} ${String(c.round).padStart(5)} ${String(c.tuning.n).padStart(4)} ${num(c.tuning.accuracy).padStart(16)} ${signed(c.tuning.vsOriginal).padStart(11)}  ${c.kind}${
          c.prompt ? ` (${c.prompt.path})` : ''
        }`,
    ),
    '',
    `cost ${usd(r.costUsd)} (cached calls cost nothing)`,
    '',
  ];
  return lines.join('\n');
}
