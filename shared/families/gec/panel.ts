/**
 * The ensemble as a panel of judges: each backend's vote on an item is one judge's label
 * (report.json `panel`). A vote that failed (`Error`) is no label.
 */
import type { PanelLabel } from '../../lib/metrics/panel.js';
import type { ItemResult } from '../../model/model.js';
import type { Vote } from './ensemble.js';

/** Where the panel's judges come from, as report.json `panel.source` says. */
export const ENSEMBLE_PANEL = 'ensemble backends';

/**
 * Each backend's label of an ensemble item, by backend id (undefined: its vote failed), in the
 * backends' order; undefined when the result carries no votes (a row that never reached the
 * ensemble, or another method's result).
 */
export function ensembleLabels(result: ItemResult): Record<string, PanelLabel> | undefined {
  const votes = result.details?.votes;
  if (!Array.isArray(votes)) return undefined;
  const labels: Record<string, PanelLabel> = Object.create(null);
  for (const vote of votes as Partial<Vote>[]) {
    if (typeof vote?.backend !== 'string') continue;
    labels[vote.backend] = typeof vote.label === 'string' && vote.label !== 'Error' ? vote.label : undefined;
  }
  return labels;
}
