/**
 * The checks family's own metric: Cohen's kappa of a check's passes against the grades another
 * tool gave (`gold` of a check), beside the agreement (accuracy) every pass scorer reports. It
 * says how far the agreement exceeds what two graders passing at the same rates would reach by
 * chance; an import's parity check reports both.
 */
import type { ExtraMetric } from '../../lib/metrics/index.js';
import { defineMetric } from '../../model/metrics.js';

defineMetric('passKappa', {
  name: "Cohen's kappa",
  undefinedReason: 'undefined: one verdict everywhere (chance agreement 1, the formula is 0/0)',
  minItemsForInterval: 200,
  range: 'signed',
  better: 'higher',
  kinds: ['pass'],
  interval: 'bootstrap',
  merge: 'rows',
  delta: 'bootstrap',
});

/** Cohen's kappa of two 0/1 columns; null with no item or when chance agreement is 1. */
export const PASS_KAPPA: ExtraMetric = {
  value(values, targets) {
    const n = values.length;
    if (n === 0) return null;
    let agree = 0;
    let v1 = 0;
    let t1 = 0;
    for (let i = 0; i < n; i += 1) {
      if (values[i] === targets[i]) agree += 1;
      v1 += values[i]!;
      t1 += targets[i]!;
    }
    const [pv, pt] = [v1 / n, t1 / n];
    const chance = pv * pt + (1 - pv) * (1 - pt);
    return chance === 1 ? null : (agree / n - chance) / (1 - chance);
  },
};
