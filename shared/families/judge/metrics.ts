/**
 * The judge family's own metric, declared in the metric table beside the core ones: for a judge
 * that scores on an ordinal scale (1 to 5), the share of its scores within one point of the
 * gold score — the "agreement within one" that rating studies report beside exact agreement,
 * since on a five-point scale a judge one point off is a near miss, not a failure. It is a share
 * of the items, so its interval is a proportion's and its delta in a comparison the bootstrap's.
 */
import type { ExtraMetric } from '../../lib/metrics/index.js';
import { defineMetric } from '../../model/metrics.js';

defineMetric('withinOne', {
  name: 'within ±1',
  range: 'unit',
  better: 'higher',
  kinds: ['number'],
  interval: 'wilson',
  merge: 'rows',
  delta: 'bootstrap',
});

/** The share of items whose score is within one point of the gold score; null with no item. */
export const WITHIN_ONE: ExtraMetric = {
  value(values, targets) {
    if (values.length === 0) return null;
    let near = 0;
    for (let i = 0; i < values.length; i += 1) if (Math.abs(values[i]! - targets[i]!) <= 1) near += 1;
    return near / values.length;
  },
};
