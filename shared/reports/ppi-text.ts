/**
 * report.txt lines for a scorer's prediction-powered estimate (report.json `scores.<scorer>.ppi`):
 * the PPI estimate, the classical one from the labelled items alone and the judge-only figure
 * side by side, with what the PPI interval is worth in labels; when labels were chosen with known
 * probabilities (`ppi.design`), which estimator that takes and that the agreement metrics above
 * are over a non-random sample, with the design-weighted accuracy.
 */
import { interval, num } from '../lib/format.js';
import type { PpiEstimate, PpiFigures } from '../model/report.js';

/** How many labels, whole, or `n/a`. */
const labels = (v: number | null) => (v === null ? 'n/a' : `${Math.round(v)}`);

/** The three figures of one estimate, one line each. */
function estimateLines(e: PpiEstimate, indent: string): string[] {
  const figure = (value: number | null, ci: readonly [number, number] | null) =>
    `${num(value).padStart(6)}  ${interval(ci ?? undefined).padEnd(17)}`;
  return [
    `${indent}${'PPI'.padEnd(12)} ${figure(e.estimate, e.ci)} worth ${labels(e.effectiveLabels)} labels${e.lambda === null ? '' : ` (λ ${num(e.lambda)})`}`,
    `${indent}${'classical'.padEnd(12)} ${figure(e.classical.estimate, e.classical.ci)} the ${e.nLabelled} labels alone`,
    `${indent}${'judge only'.padEnd(12)} ${figure(e.judgeOnly.estimate, null)} BIASED: the judge's values uncorrected by gold`,
  ];
}

/**
 * A scorer's PPI section: the top-level quantity's three figures; for a label scorer with more
 * than two labels, each label's share on a line of its own (with two, one share is the other's
 * complement).
 */
export function ppiLines(ppi: PpiFigures, indent = '    '): string[] {
  const lines = [
    `${indent}prediction-powered estimate of the ${ppi.quantity} over all ${ppi.nLabelled + ppi.nUnlabelled} items (gold on ${ppi.nLabelled}; 95% CI):`,
    ...estimateLines(ppi, `${indent}  `),
    ...designLines(ppi, `${indent}  `),
  ];
  const byLabel = Object.entries(ppi.byLabel ?? {});
  if (byLabel.length > 2) {
    const width = Math.min(24, Math.max(5, ...byLabel.map(([label]) => [...label].length)));
    lines.push(
      `${indent}  share of each label: ${'label'.padEnd(width)}  PPI, classical, judge only (biased)`,
    );
    for (const [label, e] of byLabel)
      lines.push(
        `${indent}  ${''.padEnd(20)}${label.padEnd(width)}  ${num(e.estimate)} ${interval(e.ci ?? undefined)}   ${num(e.classical.estimate)} ${interval(e.classical.ci ?? undefined)}   ${num(e.judgeOnly.estimate)}`.trimEnd(),
      );
  }
  return lines;
}

/** What `ppi.design` says: the labels' design and, beside the unweighted metrics, the weighted accuracy. */
function designLines(ppi: PpiFigures, indent: string): string[] {
  const d = ppi.design;
  if (!d) return [];
  const lines = [
    `${indent}labels chosen with known probabilities (${d.chosen} with a p, ${d.certain} certain): active inference (Zrnic & Candès 2024), each weighted 1/p`,
    `${indent}NON-RANDOM SAMPLE: the accuracy, F1 and kappa above are over these labels as they are, not over the items`,
  ];
  if (d.accuracy)
    lines.push(
      `${indent}${'accuracy'.padEnd(12)} ${num(d.accuracy.estimate).padStart(6)}  ${interval(d.accuracy.ci ?? undefined).padEnd(17)} over every item: each of the ${d.accuracy.n} labels weighted 1/p`,
    );
  return lines;
}
