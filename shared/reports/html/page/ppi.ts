/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * A scorer's prediction-powered estimate (report.json `scores.<scorer>.ppi`) on the run page:
 * the PPI estimate, the classical one from the labelled items alone, and the judge-only figure
 * (marked biased), side by side on one scale, with what the PPI interval is worth in labels.
 */
import type { PpiEstimate, PpiFigures } from '../../../model/report.js';
import { ciBar, ciText, h, num, table } from './dom.js';

type Ci = [number, number] | null;

/** The scale the bars share: [0, 1] for a share, else the span of every figure shown. */
function scaleOf(ppi: PpiFigures): [number, number] {
  if (ppi.quantity !== 'mean') return [0, 1];
  const points = [
    ...(ppi.ci ?? []),
    ...(ppi.classical.ci ?? []),
    ppi.estimate,
    ppi.classical.estimate,
    ppi.judgeOnly.estimate,
  ].filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (points.length === 0) return [0, 1];
  const lo = Math.min(...points);
  const hi = Math.max(...points);
  const pad = (hi - lo) * 0.05 || 1;
  return [lo - pad, hi + pad];
}

export function ppiFigure(name: string, ppi: PpiFigures): HTMLElement {
  const [min, max] = scaleOf(ppi);
  const row = (label: string, key: string, value: number | null, ci: Ci, note: string): HTMLElement[] => [
    h('b', null, label),
    h('span', { class: 'figure-value', 'data-metric': `${name}.ppi.${key}` }, num(value)),
    h('span', null, ciText(ci)),
    ciBar(value, ci, min, max),
    h('span', { class: 'muted' }, note),
  ];
  const worth = ppi.effectiveLabels === null ? 'n/a' : `worth ${Math.round(ppi.effectiveLabels)} labels`;
  const figure = h(
    'figure',
    { class: 'figure', 'data-testid': 'ppi' },
    h(
      'figcaption',
      null,
      `Prediction-powered estimate of the ${ppi.quantity}: all ${ppi.nLabelled + ppi.nUnlabelled} items, gold on ${ppi.nLabelled}`,
    ),
    table(
      ['', 'estimate', '95% CI', '', ''],
      [
        row(
          'PPI',
          'estimate',
          ppi.estimate,
          ppi.ci,
          `${worth}${ppi.lambda === null ? '' : ` (λ ${num(ppi.lambda)})`}`,
        ),
        row(
          'classical',
          'classical',
          ppi.classical.estimate,
          ppi.classical.ci,
          `the ${ppi.nLabelled} labels alone`,
        ),
        row('judge only', 'judgeOnly', ppi.judgeOnly.estimate, null, 'biased: the judge uncorrected by gold'),
      ],
      'grid metrics',
    ),
  );
  const byLabel = Object.entries(ppi.byLabel ?? {});
  if (byLabel.length > 2) figure.append(labelTable(name, byLabel));
  return figure;
}

/** The share of each label: PPI, classical and judge-only (biased). */
function labelTable(name: string, byLabel: [string, PpiEstimate][]): HTMLElement {
  return table(
    ['label', 'PPI', '95% CI', 'classical', '95% CI', 'judge only (biased)'],
    byLabel.map(([label, e]) => [
      label,
      h('span', { 'data-metric': `${name}.ppi.byLabel.${label}` }, num(e.estimate)),
      ciText(e.ci),
      num(e.classical.estimate),
      ciText(e.classical.ci),
      num(e.judgeOnly.estimate),
    ]),
  );
}
